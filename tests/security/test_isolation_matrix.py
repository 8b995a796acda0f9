"""Isolation matrix (issue 15, item 1): every route of both environments, generated from the URL map.

Organization A (the demo organization, with objects of every kind) and organization B (another partner).
For every API route and method, every desk page and the Socket.IO rooms, B's credentials never reach
A's data, the other environment's credentials and missing or misplaced ones are refused, A's own succeed,
and no refused answer contains any of A's ids or text. A route, page or path parameter the matrix does
not know fails it: see docs/security-isolation.md for how to add one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from werkzeug.test import TestResponse

from core.environments import ENVIRONMENTS, environment_app
from core.realtime import socketio
from tests.conftest import Org
from tests.security.evidence import changes, leaked, secrets_of, snapshot, text_of
from tests.security.matrix import CASES, COVERAGE, TIMES, Matrix, owner_order, summary
from tests.security.routes import Route, classify
from tests.security.world import PREFIX, World, build_world, csrf_token, sign_in


@pytest.fixture
def world(app: Flask, runner: FlaskCliRunner, make_org: Callable[..., Org]) -> World:
    return build_world(app, runner, make_org)


def _routes(app: Flask, env: str) -> list[Route]:
    return classify(environment_app(app, env))


def _unmapped(routes: list[Route], world: World, env: str) -> list[str]:
    problems = [
        f"{r.label} ({r.endpoint}): neither API, page nor listed public"
        for r in routes
        if r.kind == "unclassified"
    ]
    for route in routes:
        if route.kind == "public":
            continue
        problems += [
            f"{route.label}: no value for path parameter '{kind}' (add it to tests/security/world.py)"
            for _, kind in route.params
            if kind not in world.params[env]
        ]
    return problems


def _assert_every_route_has_a_case(app: Flask, world: World) -> None:
    """The guard against a new route escaping: every rule of both environments is classified, every
    path parameter has a value, and both environments have the same routes."""
    by_env = {env: _routes(app, env) for env in ENVIRONMENTS}
    assert [r.label for r in by_env["live"]] == [r.label for r in by_env["sandbox"]]
    for env, routes in by_env.items():
        assert _unmapped(routes, world, env) == []
    assert sum(r.kind == "api" for r in by_env["live"]) > 150  # the map really was read


def test_api_routes_refuse_other_organizations_environments_and_credentials(app: Flask, world: World) -> None:
    secrets = secrets_of(app, uuid.UUID(world.a.id), uuid.UUID(world.b.id))
    _assert_every_route_has_a_case(app, world)
    matrix = Matrix(app, world, secrets)
    api = {env: [r for r in _routes(app, env) if r.kind == "api"] for env in ENVIRONMENTS}

    before = snapshot(app, uuid.UUID(world.a.id))
    for env in ENVIRONMENTS:
        for route in api[env]:
            matrix.refused_cases(route, env)
    matrix.failures += [
        f"a refused request changed A's rows: {change[:300]}"
        for change in changes(before, snapshot(app, uuid.UUID(world.a.id)))
    ]

    for env in ENVIRONMENTS:
        for route in owner_order(api[env]):
            matrix.owner_cases(route, env)

    line = summary("API", len(api["live"]), len(CASES), matrix.checks)
    COVERAGE.append(line)
    print(line)
    assert matrix.failures == [], "\n".join(matrix.failures)


# ------------------------------------------------------------------------------------------ desk pages

HX = {"HX-Request": "true"}


def _page_request(
    client: object, route: Route, env: str, org_id: str, values: dict[str, str], token: str | None
) -> TestResponse:
    path = route.path(PREFIX[env], org_id, values)
    headers = {**HX, **({"X-CSRFToken": token} if token else {})}
    return client.open(path, method=route.method, data={}, headers=headers)  # type: ignore[attr-defined]


def test_desk_pages_and_rooms_show_nothing_of_another_organization(app: Flask, world: World) -> None:
    """Pages and Socket.IO share one world (building it is the slow part)."""
    secrets = secrets_of(app, uuid.UUID(world.a.id), uuid.UUID(world.b.id))
    _assert_every_route_has_a_case(app, world)
    _check_pages(app, world, secrets)
    _check_rooms(app, world, secrets)


def _check_pages(app: Flask, world: World, secrets: set[str]) -> None:
    failures: list[str] = []
    checks = 0
    pages = {env: [r for r in _routes(app, env) if r.kind == "page"] for env in ENVIRONMENTS}
    for env in ENVIRONMENTS:
        values = world.params[env]
        outsider = sign_in(app, env, world.b.desk_emails[env], world.b.desk_passwords[env])
        outsider_token = csrf_token(outsider, env)
        owner = sign_in(app, env, world.a.desk_emails[env], world.a.desk_passwords[env])
        # Signing out ends the session: it goes last.
        for route in sorted(pages[env], key=lambda r: r.endpoint == "desk.signout"):
            label = f"[{env}] {route.label}"
            # Signed out: sent to sign in (a full page) or 401 (an htmx fragment), with a valid CSRF token
            # so that the refusal is the sign-in's, not the token's.
            anonymous = app.test_client()
            anonymous.get(f"{PREFIX[env]}/signin")
            token = csrf_token(anonymous, env) if route.method != "GET" else None
            response = _page_request(anonymous, route, env, world.a.id, values, token)
            checks += 1
            location = response.headers.get("Location", "")
            # The front door sends everyone to the desk, which sends a signed-out visitor to sign in.
            target = "/desk" if route.endpoint == "index" else "/signin"
            if not (response.status_code == 401 or (response.status_code == 302 and target in location)):
                failures.append(f"{label} signed out: got {response.status_code} {location}")
            sent = route.path(PREFIX[env], world.a.id, values)
            if found := leaked(text_of(response), secrets, sent):
                failures.append(f"{label} signed out: A's data {found[:5]}")

            # B's desk user on A's objects: 404 (or 403 by role); on pages without ids, B's own page.
            response = _page_request(outsider, route, env, world.b.id, values, outsider_token)
            checks += 1
            if route.objects and response.status_code not in (403, 404):
                failures.append(f"{label} as B: expected 404, got {response.status_code}")
            elif not route.objects and (response.status_code >= 500 or response.status_code in (401, 404)):
                failures.append(f"{label} as B on its own page: got {response.status_code}")
            if found := leaked(text_of(response), secrets):
                failures.append(f"{label} as B: A's data {found[:5]}")

            # A's own desk user reads the page (writes are the areas' own page tests).
            if route.method == "GET":
                response = _page_request(owner, route, env, world.a.id, values, None)
                checks += 1
                # 400: a "more" fragment asked without its cursor (the page itself passed).
                if response.status_code >= 400 and response.status_code != 400:
                    failures.append(f"{label} as A: got {response.status_code}")
    line = summary("desk pages", len(pages["live"]), 3, checks)
    COVERAGE.append(line)
    print(line)
    assert failures == [], "\n".join(failures)


# ------------------------------------------------------------------------------------------ Socket.IO


def _check_rooms(app: Flask, world: World, secrets: set[str]) -> None:
    checks = 0
    for env in ENVIRONMENTS:
        conversation = world.params[env]["messages:*/conversations/<conversation_id>"]

        # Unauthenticated: no credentials, a desk claim without a session, an unknown key.
        for auth in (None, {"desk": env}, {"api_key": f"sk_live_{uuid.uuid4().hex}"}):
            assert not socketio.test_client(app, auth=auth).is_connected(), auth
            checks += 1

        outsider_desk = sign_in(app, env, world.b.desk_emails[env], world.b.desk_passwords[env])
        outsiders = [
            socketio.test_client(app, auth={"desk": env}, flask_test_client=outsider_desk),
            socketio.test_client(app, auth={"api_key": world.b.keys[env]}),
        ]
        listener = socketio.test_client(app, auth={"api_key": world.a.keys[env]})
        assert listener.is_connected()
        for outsider in outsiders:
            assert outsider.is_connected()
            refused = outsider.emit("join_conversation", {"conversation_id": conversation}, callback=True)
            assert refused == {"ok": False, "error": "Conversation not found"}
            checks += 1
            outsider.get_received()
        joined = listener.emit("join_conversation", {"conversation_id": conversation}, callback=True)
        assert joined["ok"] is True
        listener.get_received()

        # An event of A: a note on the conversation.
        note = f"Nota privada Quetzal {uuid.uuid4().hex[:8]}"
        response = app.test_client().post(
            f"{PREFIX[env]}/v2/messages/organizations/{world.a.id}/conversations/{conversation}/notes",
            json={"content": note, "organization_id": world.a.id},
            headers={"X-API-Key": world.a.keys[env]},
        )
        assert response.status_code == 201, response.get_json()
        assert note in repr(
            listener.get_received()
        )  # the event was emitted: the outsiders could have seen it
        for outsider in outsiders:
            received = repr(outsider.get_received())
            assert note not in received
            assert leaked(received, secrets | {conversation}) == []
            checks += 1
        for connection in [*outsiders, listener]:
            connection.disconnect()
    line = (
        f"isolation matrix (Socket.IO): 3 refused connections + 2 outsiders {TIMES} (join, events)"
        f" = {checks} checks (live and sandbox)"
    )
    COVERAGE.append(line)
    print(line)
