"""The API cases of the isolation matrix: who calls, on which path, and what must come back.

Seven cases per route and method (``CASES``):

- ``own``: A's key on A's path and objects. Accepted: any answer that is not a refusal of the caller
  (401, 403, 404) nor a server error. Writes are sent with an empty JSON body, so a 400/409/422
  (validation or state) is a valid answer: it is reached only after authentication and tenancy passed.
- ``other_org_path``: B's key on A's organization path -> 403 in the area's format. Telecom routes carry
  no organization in the path (the key names it): there B's key goes to A's object ids -> 404.
- ``other_org_object``: B's key on B's organization path with A's object ids -> 404 in the area's format
  (a route without object ids answers B's own data, which must contain none of A's).
- ``other_environment``: A's key of the other environment -> 401.
- ``no_key``: no credentials -> 401.
- ``key_as_bearer``: A's API key sent as ``Authorization: Bearer`` -> 401.
- ``jwt``: a valid JWT of A (no key): the CRM accepts it (as ``own``); every other area -> 401.

Every refused answer is checked for A's ids and text (``evidence.leaked``), and the refused requests run
first, between two snapshots of both stores that must be equal.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from core.environments import ENVIRONMENTS
from tests.security.evidence import leaked, text_of
from tests.security.routes import JWT_AREAS, SHARED_PARAMS, Route
from tests.security.world import PREFIX, World

CASES = (
    "own",
    "other_org_path",
    "other_org_object",
    "other_environment",
    "no_key",
    "key_as_bearer",
    "jwt",
)
# Lines for the terminal summary (tests/security/conftest.py).
COVERAGE: list[str] = []

WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# Answers a write with an empty body may legitimately get once the caller is known and owns the path.
TOLERATED_FOR_OWNER = {400, 402, 409, 415, 422, 424}
# Some reads need a query parameter; the own case sends it so that it can succeed.
QUERIES: dict[str, str] = {
    "messaging_api.service_window": "organization_address={address}",
    "inbox_api.addresses_by_label": "label=vip&organization_id={organization_id}",
    "ai_members_api.search_knowledge": "q=horario",
}


Values = dict[str, str]
# Writes whose body is validated before the view looks the path's object up: they get a valid body, so
# that ownership is what decides the answer (404 for B, not a 400 about a missing field).
BODIES: dict[str, Callable[[Values, str], dict[str, Any]]] = {
    "crm_contacts.link_account_contact": lambda v, o: {"contact_id": v["crm:*/contacts/<id>"]},
    "crm_contacts.add_identity": lambda v, o: {"kind": "email", "value": "otra.quetzal@demo-company.mx"},
    "crm_contacts.merge_contact": lambda v, o: {"source_contact_id": v["body:other_crm_contact"]},
    "crm_deals.link_conversation": lambda v, o: {
        "conversation_id": v["messages:*/conversations/<conversation_id>"]
    },
    "crm_deals.add_line_item": lambda v, o: {"name": "Línea Quetzal", "quantity": 1, "unit_price": 10},
    "crm_deals.add_note": lambda v, o: {"body": "Nota Quetzal"},
    "crm_deals.move_deal": lambda v, o: {"stage_id": v["body:stage"]},
    "crm_pipelines.create_stage": lambda v, o: {"name": "Etapa Quetzal", "stage_order": 9},
    "crm_tickets.assign_ticket": lambda v, o: {"assignee_member_id": v["members:*/members/<member_id>"]},
    "crm_tickets.change_ticket_state": lambda v, o: {"state": "on_hold"},
    "members_api.replace_agent_config": lambda v, o: {"sections": {"identity": "Quetzal"}},
    "ai_members_api.test_agent": lambda v, o: {"messages": [{"role": "customer", "text": "Hola"}]},
    "members_api.change_status": lambda v, o: {"status": "online"},
    "members_api.add_team_members": lambda v, o: {"member_ids": [v["members:*/members/<member_id>"]]},
    "telecom_data_esims.create_topup": lambda v, o: {"offer": v["body:esim_offer"]},
    "telecom_subscriptions.plan_change": lambda v, o: {"plan": v["body:plan"]},
    "telecom_subscriptions.sim_change": lambda v, o: {"type": "ESIM", "reason": "lost"},
    "telecom_subscriptions.topup": lambda v, o: {"topup": v["body:topup"]},
    "telecom_users.create_address": lambda v, o: {
        "line1": "Calle Quetzal 8",
        "city": "Puebla",
        "state": "PUE",
        "postal_code": "72000",
        "country": "MX",
    },
    "telecom_users.create_kyc": lambda v, o: {
        "full_name": "Quetzal Pérez",
        "document": {"type": "ine", "number": "QTZ12345"},
    },
    "inbox_api.set_routing": lambda v, o: {"target": "team", "team_id": v["members:*/teams/<team_id>"]},
    "inbox_api.assign_team": lambda v, o: {"team_id": v["members:*/teams/<team_id>"]},
    "inbox_api.add_note": lambda v, o: {"content": "Nota Quetzal", "organization_id": o},
}


@dataclass
class Matrix:
    app: Flask
    world: World
    secrets: set[str]
    failures: list[str] = field(default_factory=list)
    checks: int = 0

    def client(self) -> FlaskClient:
        return self.app.test_client()

    # ---------------------------------------------------------------- requests

    def send(
        self, route: Route, env: str, org_id: str, values: dict[str, str], headers: dict[str, str]
    ) -> TestResponse:
        path = route.path(PREFIX[env], org_id, values)
        query = QUERIES.get(route.endpoint, "")
        if query:
            address = self.world.params[env]["messages:*/addresses/<address>"]
            path += "?" + query.format(address=address, organization_id=org_id)
        body = None
        if route.method in ("POST", "PUT", "PATCH"):
            make_body = BODIES.get(route.endpoint)
            body = make_body(self.world.params[env], org_id) if make_body else {}
        self.checks += 1
        return self.client().open(path, method=route.method, json=body, headers=headers)

    def key(self, tenant: str, env: str) -> dict[str, str]:
        chosen = self.world.a if tenant == "a" else self.world.b
        return {"X-API-Key": chosen.keys[env]}

    # ---------------------------------------------------------------- expectations

    def fail(self, route: Route, env: str, case: str, response: TestResponse, why: str) -> None:
        body = "".join(c if c.isprintable() else "?" for c in text_of(response)[:300])
        self.failures.append(f"[{env}] {route.label} {case}: {why} (got {response.status_code}: {body})")

    def expect_refused(self, route: Route, env: str, case: str, response: TestResponse, status: int) -> None:
        if response.status_code != status:
            self.fail(route, env, case, response, f"expected {status}")
            return
        self.expect_area_format(route, env, case, response)
        self.expect_no_leak(route, env, case, response)

    def expect_no_leak(self, route: Route, env: str, case: str, response: TestResponse) -> None:
        found = leaked(text_of(response), self.secrets)
        if found:
            self.fail(route, env, case, response, f"body carries A's data {found[:5]}")

    def expect_area_format(self, route: Route, env: str, case: str, response: TestResponse) -> None:
        body = response.get_json(silent=True)
        status = response.status_code
        ok = isinstance(body, dict)
        if ok and route.area == "crm":
            ok = body.get("statusCode") == status and isinstance(body.get("error"), dict)
            ok = ok and body["error"].get("statusCode") == status and "message" in body["error"]
        elif ok and route.area == "partner":
            error = body.get("error")
            ok = isinstance(error, dict) and {"type", "code", "message"} <= error.keys()
        elif ok:  # messaging, members, organizations
            ok = body.get("statusCode") == status and isinstance(body.get("message"), str)
        if not ok:
            self.fail(route, env, case, response, f"not in the {route.area} error format")

    def expect_owner_answer(self, route: Route, env: str, case: str, response: TestResponse) -> None:
        status = response.status_code
        if status >= 500 or status in (401, 403, 404, 405):
            self.fail(route, env, case, response, "the owner was refused")
        elif status >= 400 and status not in TOLERATED_FOR_OWNER:
            self.fail(route, env, case, response, "unexpected answer to the owner")

    def expect_own_data_only(self, route: Route, env: str, case: str, response: TestResponse) -> None:
        """B on a route without object ids: B's own answer (or a validation error), never A's data."""
        if response.status_code >= 500 or response.status_code in (401, 403, 404, 405):
            self.fail(route, env, case, response, "B was refused on its own organization")
        self.expect_no_leak(route, env, case, response)

    # ---------------------------------------------------------------- cases

    def refused_cases(self, route: Route, env: str) -> None:
        a, b = self.world.a, self.world.b
        values = self.world.params[env]
        other_env = next(e for e in ENVIRONMENTS if e != env)
        owned_params = [kind for _, kind in route.params if kind not in SHARED_PARAMS]

        # other_org_path
        response = self.send(route, env, a.id, values, self.key("b", env))
        if route.has_organization:
            self.expect_refused(route, env, "other_org_path", response, 403)
        elif owned_params:
            self.expect_refused(route, env, "other_org_path", response, 404)
        else:
            self.expect_own_data_only(route, env, "other_org_path", response)

        # other_org_object
        if route.has_organization:
            response = self.send(route, env, b.id, values, self.key("b", env))
            if owned_params:
                self.expect_refused(route, env, "other_org_object", response, 404)
            else:
                self.expect_own_data_only(route, env, "other_org_object", response)
        else:  # telecom: the key names the organization; B's key on A's ids in the other environment too
            other_values = self.world.params[other_env]
            response = self.send(route, other_env, a.id, other_values, self.key("b", other_env))
            if owned_params:
                self.expect_refused(route, other_env, "other_org_object", response, 404)
            else:
                self.expect_own_data_only(route, other_env, "other_org_object", response)

        response = self.send(route, env, a.id, values, self.key("a", other_env))
        self.expect_refused(route, env, "other_environment", response, 401)
        response = self.send(route, env, a.id, values, {})
        self.expect_refused(route, env, "no_key", response, 401)
        response = self.send(route, env, a.id, values, {"Authorization": f"Bearer {a.keys[env]}"})
        self.expect_refused(route, env, "key_as_bearer", response, 401)
        if route.area not in JWT_AREAS:
            response = self.send(route, env, a.id, values, {"Authorization": f"Bearer {a.jwts[env]}"})
            self.expect_refused(route, env, "jwt", response, 401)
            # B's JWT is refused too, and so is the other environment's JWT on a JWT area (below)
        else:
            response = self.send(route, env, a.id, values, {"Authorization": f"Bearer {a.jwts[other_env]}"})
            self.expect_refused(route, env, "jwt_other_environment", response, 401)
            response = self.send(route, env, a.id, values, {"Authorization": f"Bearer {b.jwts[env]}"})
            self.expect_refused(route, env, "jwt_other_org", response, 403)

    def owner_cases(self, route: Route, env: str) -> None:
        a = self.world.a
        values = self.world.params[env]
        if route.area in JWT_AREAS:
            jwt_values = values
            if route.method != "GET" and route.params:
                # A write through the JWT goes to an unknown object of A's path: 404 proves it was let
                # past authentication and tenancy, and the key's own case below still finds the object
                # (a merge or a deletion done twice would answer 404 the second time).
                jwt_values = {**values, route.params[-1][1]: str(uuid.uuid4())}
            response = self.send(route, env, a.id, jwt_values, {"Authorization": f"Bearer {a.jwts[env]}"})
            if jwt_values is values:
                self.expect_owner_answer(route, env, "jwt", response)
            else:
                self.expect_refused(route, env, "jwt", response, 404)
        response = self.send(route, env, a.id, values, self.key("a", env))
        self.expect_owner_answer(route, env, "own", response)


def owner_order(routes: list[Route]) -> list[Route]:
    """Reads, then writes, then deletions, innermost objects first (a note before its conversation)."""

    def rank(route: Route) -> tuple[int, int, str]:
        if route.method == "GET":
            return (0, 0, route.label)
        if route.method != "DELETE":
            return (1, 0, route.label)
        return (2, -len(route.params), route.label)

    return sorted(routes, key=rank)


TIMES = "\u00d7"  # the multiplication sign of the summary line


def summary(kind: str, per_environment: int, cases: int, checks: int) -> str:
    """``isolation matrix (API): 220 routes x 7 cases = 3,372 checks (live and sandbox)``: routes of one
    environment, cases per route, requests sent in both environments."""
    return (
        f"isolation matrix ({kind}): {per_environment} routes {TIMES} {cases} cases = {checks:,} checks"
        " (live and sandbox)"
    )
