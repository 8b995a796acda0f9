"""The desk's audit log page: supervisors see their organization's entries (newest first, filtered, with
"Show more"), agents are refused whatever the navigation shows, and another organization's entries never
appear."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from blueprints.audit import services as audit_log
from core.db import db
from core.environments import LIVE, environment_app
from tests.conftest import Org

SIGNIN_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
HX = {"HX-Request": "true"}


def _signed_in(app: Flask, login: dict[str, Any]) -> FlaskClient:
    client = app.test_client()
    token = SIGNIN_TOKEN.search(client.get("/signin").get_data(as_text=True))
    assert token is not None
    response = client.post(
        "/signin", data={"email": login["email"], "password": login["password"], "csrf_token": token.group(1)}
    )
    assert response.status_code == 302, response.get_data(as_text=True)
    return client


def _teams(client: FlaskClient, org: Org, names: list[str]) -> list[str]:
    ids = []
    for name in names:
        response = client.post(
            f"/v1/members/organizations/{org.id}/teams", json={"name": name}, headers=org.headers()
        )
        assert response.status_code == 201
        ids.append(response.get_json()["id"])
    return ids


def test_a_supervisor_reads_the_log_and_an_agent_is_refused(
    app: Flask, client: FlaskClient, org: Org, other_org: Org, make_desk_user: Callable[..., Any]
) -> None:
    supervisor = _signed_in(app, make_desk_user(org, "supervisor"))
    agent = _signed_in(app, make_desk_user(org, "agent", name="Ana Agente"))
    mine = _teams(client, org, ["Ventas"])
    theirs = _teams(client, other_org, ["Globex interno"])

    page = supervisor.get("/audit")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert mine[0] in html and "team.created" in html
    assert theirs[0] not in html
    assert 'href="/audit"' in html  # the supervisor's navigation links the page

    assert agent.get("/audit").status_code == 403
    assert agent.get("/audit/more?cursor=x").status_code == 403
    desk = agent.get("/desk")
    assert desk.status_code == 200 and 'href="/audit"' not in desk.get_data(as_text=True)
    assert app.test_client().get("/audit").status_code == 302  # signed out: to the sign-in page


def test_filter_and_show_more(
    app: Flask, client: FlaskClient, org: Org, make_desk_user: Callable[..., Any]
) -> None:
    supervisor = _signed_in(app, make_desk_user(org, "supervisor"))
    ids = _teams(client, org, [f"Equipo {n:02d}" for n in range(30)])

    pane = supervisor.get("/audit?action=team.created", headers={**HX, "HX-Target": "audit-pane"})
    html = pane.get_data(as_text=True)
    assert pane.status_code == 200 and "<html" not in html  # the pane only
    shown = re.findall(r'data-audit-id="([^"]+)"', html)
    assert len(shown) == 25 and ids[-1] in html and ids[0] not in html  # newest first
    more = re.search(r'hx-get="(/audit/more\?[^"]+)"', html)
    assert more is not None
    rest = supervisor.get(more.group(1).replace("&amp;", "&"), headers=HX).get_data(as_text=True)
    assert ids[0] in rest and "audit-more" not in rest  # the last page has no "Show more"
    assert not set(re.findall(r'data-audit-id="([^"]+)"', rest)) & set(shown)

    only_members = supervisor.get("/audit?action=member.deleted").get_data(as_text=True)
    assert "data-empty" in only_members and ids[0] not in only_members
    assert supervisor.get("/audit/more?cursor=nonsense").status_code == 400


def test_empty_state_and_long_values_truncated(
    app: Flask, org: Org, make_desk_user: Callable[..., Any]
) -> None:
    supervisor = _signed_in(app, make_desk_user(org, "supervisor"))
    html = supervisor.get("/audit?actor=nobody").get_data(as_text=True)
    assert "data-empty" in html
    long_actor = "system:" + "x" * 100  # longer than the 32 characters shown
    with environment_app(app, LIVE).app_context():
        audit_log.record(
            "team.deleted", "team", "t" * 120, ["name"], organization_id=org.id, actor=long_actor
        )
        db.session.commit()
    html = supervisor.get("/audit?action=team.deleted").get_data(as_text=True)
    assert f'title="{long_actor}"' in html and f">{long_actor}<" not in html  # shortened, whole in the title


def test_actions_read_as_words_in_the_page_language_with_their_code(
    app: Flask, client: FlaskClient, org: Org, make_desk_user: Callable[..., Any]
) -> None:
    supervisor = _signed_in(app, make_desk_user(org, "supervisor"))
    _teams(client, org, ["Soporte"])
    english = supervisor.get("/audit").get_data(as_text=True)
    assert "Team created" in english and "<code" in english and "team.created" in english
    supervisor.post("/language", data={"language": "es", "csrf_token": _token(supervisor)})
    spanish = supervisor.get("/audit").get_data(as_text=True)
    assert "Equipo creado" in spanish and "team.created" in spanish


def _token(client: FlaskClient) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/audit").get_data(as_text=True))
    assert found is not None
    return found.group(1)
