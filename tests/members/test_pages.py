"""The members area's desk pages without a browser: the availability dashboard (``/team``), people, teams
and unavailability reasons (``/settings/...``). Supervisors only (an agent gets the designed 403 on every
URL, read from the URL map); every change goes through the services the API calls, refusals come back
under their field in the page's language, and each change lands in the audit log with the desk user as
the actor. A person added on the page must change the password at first sign-in."""

from __future__ import annotations

import csv
import io
import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select

from blueprints.members.models import DeskSignIn, User
from blueprints.members.services import presence
from core.db import db, utcnow
from core.environments import LIVE, in_environment
from core.realtime import socketio
from tests.conftest import Org
from tests.members.conftest import mem
from tests.support.desk_users import DESK_PASSWORD, create_desk_user, post_sign_in, sign_in

HX = {"HX-Request": "true"}
PAGE_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
NEW_PASSWORD = "my very own secret"


class Desk:
    """A signed-in test client that posts forms as htmx does (the page's CSRF token in the header)."""

    def __init__(self, app: Flask, email: str, password: str = DESK_PASSWORD, language: str = "en") -> None:
        self.client = app.test_client()
        self.client.environ_base["HTTP_ACCEPT_LANGUAGE"] = language
        sign_in(self.client, email, password)
        self.token = ""

    def get(self, path: str, **kwargs: Any) -> Any:
        response = self.client.get(path, **kwargs)
        found = PAGE_TOKEN.search(response.get_data(as_text=True))
        if found:
            self.token = found.group(1)
        return response

    def post(self, path: str, data: dict[str, str] | None = None, htmx: bool = True) -> Any:
        if not self.token:
            self.get("/desk")
        headers = {"X-CSRFToken": self.token, **(HX if htmx else {})}
        return self.client.post(path, data=data or {}, headers=headers)


@pytest.fixture
def supervisor(app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    create_desk_user(runner, org.id, "laura@example.test", name="Laura Supervisora", role="supervisor")
    return Desk(app, "laura@example.test")


@pytest.fixture
def agent_login(runner: FlaskCliRunner, org: Org) -> dict[str, Any]:
    return create_desk_user(runner, org.id, "ana@example.test", name="Ana Agente")


def _audit(client: FlaskClient, org: Org, action: str = "") -> list[dict[str, Any]]:
    query = f"action={action}&take=50" if action else "take=50"
    response = client.get(mem(org, f"/audit-log?{query}"), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def _user(app: Flask, email: str) -> User:
    with in_environment(app, LIVE):
        user = db.session.scalar(select(User).where(User.email == email))
        assert user is not None
        db.session.expunge(user)
        return user


# ---- supervisors only -----------------------------------------------------------------------------------


def _member_page_routes(app: Flask) -> list[tuple[str, str]]:
    routes = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("members_pages."):
            path = re.sub(r"<[^>]+>", str(uuid.uuid4()), rule.rule)
            for method in sorted((rule.methods or set()) & {"GET", "POST"}):
                routes.append((method, path))
    return routes


def test_an_agent_gets_403_on_every_url_of_these_pages(
    app: Flask, supervisor: Desk, agent_login: dict[str, Any]
) -> None:
    agent = Desk(app, agent_login["email"])
    routes = _member_page_routes(app)
    assert len(routes) >= 15
    for method, path in routes:
        response = agent.get(path) if method == "GET" else agent.post(path, {"name": "x"}, htmx=False)
        assert response.status_code == 403, f"{method} {path}"
    # the rail never offers what the server refuses
    home = agent.get("/desk").get_data(as_text=True)
    assert 'href="/team"' not in home and 'href="/settings/people"' not in home


def test_the_rail_and_the_settings_navigation_for_a_supervisor(supervisor: Desk) -> None:
    home = supervisor.get("/desk").get_data(as_text=True)
    assert 'href="/team"' in home and 'href="/settings/people"' in home
    people = supervisor.get("/settings/people").get_data(as_text=True)
    nav = people[people.index('class="settings-nav') :]
    nav = nav[: nav.index("</nav>")]
    for path in ("/settings/people", "/settings/teams", "/settings/reasons"):
        assert f'href="{path}"' in nav
    assert 'aria-current="page" href="/settings/people"' in nav


@pytest.mark.parametrize(
    ("language", "words"), [("en", "Team availability"), ("es", "Disponibilidad del equipo")]
)
def test_every_page_renders_in_both_languages(
    app: Flask, runner: FlaskCliRunner, org: Org, language: str, words: str
) -> None:
    create_desk_user(runner, org.id, "laura@example.test", name="Laura Supervisora", role="supervisor")
    desk = Desk(app, "laura@example.test", language=language)
    team = desk.get("/team")
    assert team.status_code == 200 and words in team.get_data(as_text=True)
    assert f'lang="{language}"' in team.get_data(as_text=True)
    for path in ("/settings/people", "/settings/teams", "/settings/reasons", "/team/now"):
        assert desk.get(path).status_code == 200, path


# ---- people: add, first sign-in, reset, deactivate ---------------------------------------------------------


def test_a_person_added_on_the_page_changes_the_password_at_first_sign_in(
    app: Flask, client: FlaskClient, org: Org, supervisor: Desk
) -> None:
    short = supervisor.post(
        "/settings/people",
        {"name": "Beto", "email": "beto@example.test", "role": "agent", "password": "short"},
    )
    assert short.status_code == 422
    assert "Use at least 8 characters." in short.get_data(as_text=True)
    refused = supervisor.post(
        "/settings/people",
        {"name": "Beto", "email": "not-an-address", "role": "agent", "password": "temporal-123"},
    )
    assert refused.status_code == 422
    html = refused.get_data(as_text=True)
    assert 'data-error-for="email"' in html and "Write an e-mail address" in html
    assert 'value="Beto"' in html  # what was typed stays

    added = supervisor.post(
        "/settings/people",
        {"name": "Beto Nuevo", "email": "beto@example.test", "role": "agent", "password": "temporal-123"},
    )
    assert added.status_code == 200
    assert "beto@example.test" in added.get_data(as_text=True)
    user = _user(app, "beto@example.test")
    assert user.must_change_password and user.role == "agent"
    [entry] = _audit(client, org, "member.created")[:1]
    assert entry["actor"] == f"user:{_user(app, 'laura@example.test').id}"
    assert "must_change_password" in entry["summary"]["fields"]

    taken = supervisor.post(
        "/settings/people",
        {"name": "Otro", "email": "BETO@example.test", "role": "agent", "password": "temporal-123"},
    )
    assert taken.status_code == 422 and "Someone already signs in with this e-mail." in taken.get_data(
        as_text=True
    )

    # first sign-in: sent to change the password, and every other page sends them there too
    beto = app.test_client()
    first = post_sign_in(beto, "beto@example.test", "temporal-123")
    assert first.status_code == 302 and first.headers["Location"].startswith("/account/password")
    for path in ("/desk", "/inbox", "/tasks"):
        assert beto.get(path).headers.get("Location", "").startswith("/account/password"), path
    fragment = beto.get("/inbox/counts", headers=HX)
    assert fragment.status_code == 204 and fragment.headers["HX-Redirect"] == "/account/password"
    assert not socketio.test_client(app, auth={"desk": LIVE}, flask_test_client=beto).is_connected()
    form = beto.get("/account/password").get_data(as_text=True)
    token = PAGE_TOKEN.search(form)
    assert token is not None and "given to you by a supervisor" in form

    def change(current: str, new: str, confirm: str) -> Any:
        data = {
            "current_password": current,
            "password": new,
            "confirm": confirm,
            "csrf_token": token.group(1),
        }
        return beto.post("/account/password", data=data)

    wrong = change("not it", NEW_PASSWORD, NEW_PASSWORD)
    assert wrong.status_code == 422 and 'data-error-for="current_password"' in wrong.get_data(as_text=True)
    same = change("temporal-123", "temporal-123", "temporal-123")
    assert same.status_code == 422 and "different from the one you were given" in same.get_data(as_text=True)
    mismatch = change("temporal-123", NEW_PASSWORD, NEW_PASSWORD + "!")
    assert mismatch.status_code == 422 and 'data-error-for="confirm"' in mismatch.get_data(as_text=True)
    changed = change("temporal-123", NEW_PASSWORD, NEW_PASSWORD)
    assert changed.status_code == 302 and changed.headers["Location"] == "/desk"
    assert beto.get("/desk").status_code == 200  # the same browser goes on, with a new sign-in
    live = socketio.test_client(app, auth={"desk": LIVE}, flask_test_client=beto)
    assert live.is_connected()
    live.disconnect()
    assert not _user(app, "beto@example.test").must_change_password
    assert post_sign_in(app.test_client(), "beto@example.test", NEW_PASSWORD).headers["Location"] == "/desk"
    assert [e["target_id"] for e in _audit(client, org, "user.password_changed")] == [str(user.id)]


def test_a_reset_ends_the_sessions_and_asks_for_a_new_password(
    app: Flask, client: FlaskClient, org: Org, supervisor: Desk, agent_login: dict[str, Any]
) -> None:
    ana = Desk(app, agent_login["email"])
    assert ana.get("/desk").status_code == 200
    user_id = agent_login["user_id"]
    short = supervisor.post(f"/settings/people/{user_id}/password", {"password": "short"})
    assert short.status_code == 422
    assert f'data-error-for="password-{user_id}"' in short.get_data(as_text=True)
    done = supervisor.post(f"/settings/people/{user_id}/password", {"password": "reset-by-laura"})
    assert done.status_code == 200 and "password is reset" in done.get_data(as_text=True)
    assert ana.get("/desk").status_code == 302  # signed out: the sign-in page
    again = post_sign_in(app.test_client(), agent_login["email"], "reset-by-laura")
    assert again.headers["Location"].startswith("/account/password")
    [entry] = _audit(client, org, "user.password_reset")
    assert entry["target_id"] == user_id and set(entry["summary"]["fields"]) == {
        "password",
        "must_change_password",
    }


def test_deactivating_ends_the_sessions_as_the_command_does(
    app: Flask, client: FlaskClient, org: Org, supervisor: Desk, agent_login: dict[str, Any]
) -> None:
    ana = Desk(app, agent_login["email"])
    myself = _user(app, "laura@example.test")
    refused = supervisor.post(f"/settings/people/{myself.id}/deactivate")
    assert refused.status_code == 422 and "You cannot deactivate yourself." in refused.get_data(as_text=True)
    assert supervisor.post(f"/settings/people/{uuid.uuid4()}/deactivate").status_code == 404
    done = supervisor.post(f"/settings/people/{agent_login['user_id']}/deactivate")
    assert done.status_code == 200 and "Deactivated" in done.get_data(as_text=True)
    assert ana.get("/desk").status_code == 302
    assert post_sign_in(app.test_client(), agent_login["email"]).status_code == 401
    with in_environment(app, LIVE):
        open_sign_ins = db.session.scalars(
            select(DeskSignIn).where(
                DeskSignIn.user_id == uuid.UUID(agent_login["user_id"]), DeskSignIn.ended_at.is_(None)
            )
        ).all()
    assert open_sign_ins == []
    [entry] = _audit(client, org, "user.deactivated")
    assert entry["actor"] == f"user:{myself.id}"
    assert entry["summary"]["changes"] == {"active": {"before": True, "after": False}}


def test_another_organizations_user_is_not_found(
    app: Flask, runner: FlaskCliRunner, other_org: Org, supervisor: Desk
) -> None:
    stranger = create_desk_user(runner, other_org.id, "x@globex.test", name="Xavier")
    assert supervisor.post(f"/settings/people/{stranger['user_id']}/deactivate").status_code == 404
    assert (
        supervisor.post(
            f"/settings/people/{stranger['user_id']}/password", {"password": "12345678"}
        ).status_code
        == 404
    )
    assert "x@globex.test" not in supervisor.get("/settings/people").get_data(as_text=True)
    assert post_sign_in(app.test_client(), "x@globex.test").status_code == 302  # untouched


# ---- teams ----------------------------------------------------------------------------------------------


def test_teams_created_filled_emptied_and_deleted_on_the_page(
    app: Flask, client: FlaskClient, org: Org, supervisor: Desk, agent_login: dict[str, Any]
) -> None:
    assert supervisor.post("/settings/teams", {"name": "  "}).status_code == 422
    created = supervisor.post("/settings/teams", {"name": "Ventas", "description": "Norte"})
    assert created.status_code == 200 and "Ventas" in created.get_data(as_text=True)
    duplicate = supervisor.post("/settings/teams", {"name": "ventas"})
    assert duplicate.status_code == 422 and "already a team with this name" in duplicate.get_data(
        as_text=True
    )
    team_id = client.get(mem(org, "/teams"), headers=org.headers()).get_json()["data"][0]["id"]
    member_id = agent_login["member_id"]
    unknown = supervisor.post(f"/settings/teams/{team_id}/members", {"member_id": "nobody"})
    assert unknown.status_code == 422 and f'data-error-for="member-{team_id}"' in unknown.get_data(
        as_text=True
    )
    assert supervisor.post(f"/settings/teams/{team_id}/members", {"member_id": member_id}).status_code == 200
    team = client.get(mem(org, f"/teams/{team_id}"), headers=org.headers()).get_json()
    assert [m["id"] for m in team["members"]] == [member_id]
    people = supervisor.get("/settings/people").get_data(as_text=True)
    assert "Ventas" in people  # each person's teams
    removed = supervisor.post(f"/settings/teams/{team_id}/members/{member_id}/remove")
    assert removed.status_code == 200
    assert client.get(mem(org, f"/teams/{team_id}"), headers=org.headers()).get_json()["members"] == []
    assert supervisor.post(f"/settings/teams/{team_id}/members/{member_id}/remove").status_code == 404
    assert supervisor.post(f"/settings/teams/{team_id}/delete").status_code == 200
    assert client.get(mem(org, f"/teams/{team_id}"), headers=org.headers()).status_code == 404
    entries = {e["action"]: e for e in _audit(client, org) if e["target_id"] == team_id}
    assert sorted(entries) == ["team.created", "team.deleted", "team.members_added", "team.members_removed"]
    assert entries["team.members_added"]["summary"]["changes"] == {
        "members": {"before": None, "after": ["Ana Agente"]}
    }
    assert entries["team.members_removed"]["summary"]["changes"] == {
        "members": {"before": ["Ana Agente"], "after": None}
    }


# ---- reasons --------------------------------------------------------------------------------------------


def test_reasons_added_renamed_archived_and_restored(client: FlaskClient, org: Org, supervisor: Desk) -> None:
    assert supervisor.post("/settings/reasons", {"name": ""}).status_code == 422
    assert (
        supervisor.post("/settings/reasons", {"name": "Comida", "description": "Una hora"}).status_code == 200
    )
    duplicate = supervisor.post("/settings/reasons", {"name": "COMIDA"})
    assert duplicate.status_code == 422 and "already a reason with this name" in duplicate.get_data(
        as_text=True
    )
    [reason] = client.get(mem(org, "/members/unavailable-reasons"), headers=org.headers()).get_json()["data"]
    rid = reason["id"]
    too_long = supervisor.post(f"/settings/reasons/{rid}", {"name": "x" * 121, "description": ""})
    assert too_long.status_code == 422 and f'data-error-for="name-{rid}"' in too_long.get_data(as_text=True)
    assert (
        supervisor.post(f"/settings/reasons/{rid}", {"name": "Almuerzo", "description": ""}).status_code
        == 200
    )
    assert supervisor.post(f"/settings/reasons/{rid}/archive").status_code == 200
    reason = client.get(mem(org, "/members/unavailable-reasons"), headers=org.headers()).get_json()["data"][0]
    assert reason["name"] == "Almuerzo" and reason["active"] is False and reason["description"] is None
    page = supervisor.get("/settings/reasons").get_data(as_text=True)
    assert "data-archived" in page
    assert supervisor.post(f"/settings/reasons/{rid}/restore").status_code == 200
    entries = [e for e in _audit(client, org) if e["target_id"] == rid]  # newest first
    assert [e["action"] for e in entries] == ["unavailable_reason.updated"] * 3 + [
        "unavailable_reason.created"
    ]
    assert [e["summary"].get("changes") for e in entries] == [
        {"active": {"before": False, "after": True}},
        {"active": {"before": True, "after": False}},
        {
            "name": {"before": "Comida", "after": "Almuerzo"},
            "description": {"before": "Una hora", "after": None},
        },
        {"name": {"before": None, "after": "Comida"}, "description": {"before": None, "after": "Una hora"}},
    ]


def test_a_plain_form_post_without_htmx_redirects_back(supervisor: Desk) -> None:
    response = supervisor.post("/settings/reasons", {"name": "Formación"}, htmx=False)
    assert response.status_code == 303 and response.headers["Location"] == "/settings/reasons"
    refused = supervisor.post("/settings/reasons", {"name": "formación"}, htmx=False)
    assert refused.status_code == 422 and "<html" in refused.get_data(as_text=True)


# ---- the dashboard ---------------------------------------------------------------------------------------


@pytest.fixture
def history(
    app: Flask, client: FlaskClient, org: Org, agent_login: dict[str, Any], supervisor: Desk
) -> dict[str, Any]:
    """Ana online two hours ago, away (Comida) for the last hour; a team with Ana."""
    reason = client.post(
        mem(org, "/members/unavailable-reasons"), json={"name": "Comida"}, headers=org.headers()
    )
    team = client.post(
        mem(org, "/teams"),
        json={"name": "Soporte", "member_ids": [agent_login["member_id"]]},
        headers=org.headers(),
    ).get_json()
    now = utcnow()
    with in_environment(app, LIVE):
        organization_id = uuid.UUID(org.id)
        presence.change_status(
            organization_id,
            agent_login["member_id"],
            "online",
            changed_by="test",
            at=now - timedelta(hours=2),
        )
        presence.change_status(
            organization_id,
            agent_login["member_id"],
            "away",
            uuid.UUID(reason.get_json()["id"]),
            changed_by="test",
            at=now - timedelta(hours=1),
        )
    return {"team_id": team["id"], "member_id": agent_login["member_id"]}


def test_the_dashboard_shows_now_and_the_apis_statistics(
    client: FlaskClient, org: Org, supervisor: Desk, history: dict[str, Any]
) -> None:
    page = supervisor.get("/team").get_data(as_text=True)
    away = page[page.index('data-team-status="away"') :]
    away = away[: away.index("</section>") if "</section>" in away else None]
    assert "Ana Agente" in away[: away.index('data-team-status="offline"')] and "Comida" in away
    assert "data-team-charts=" in page and "Hours per day online, busy and away" in page
    # the table has the API's numbers for the same range
    today = page[page.index('id="to"') :].split('value="')[1][:10]
    first = page[page.index('id="from"') :].split('value="')[1][:10]
    api = client.get(
        mem(
            org,
            f"/stats/member-availability?from={first}&to={today}&timezone=UTC&member_id={history['member_id']}",
        ),
        headers=org.headers(),
    ).get_json()["members"][0]
    row = page[page.index(f'data-member-totals="{history["member_id"]}"') :]
    row = row[: row.index("</tr>")]
    cells = re.findall(r'data-status="(\w+)">([\d.,]+)<', row)
    assert {status: float(value) for status, value in cells} == {
        s: round(api[f"{s}_seconds"] / 3600, 1) for s in ("online", "busy", "away", "offline")
    }
    # filtered by a team the agent is not in: nobody
    empty_team = client.post(mem(org, "/teams"), json={"name": "Vacío"}, headers=org.headers()).get_json()[
        "id"
    ]
    filtered = supervisor.get(f"/team?team_id={empty_team}", headers={**HX, "HX-Target": "team-pane"})
    assert filtered.status_code == 200 and "<html" not in filtered.get_data(as_text=True)
    assert "Nobody to show for these filters." in filtered.get_data(as_text=True)
    now = supervisor.get(f"/team/now?team_id={history['team_id']}").get_data(as_text=True)
    assert now.startswith('<section id="team-now"') and "Ana Agente" in now


def test_a_refused_range_is_shown_under_its_field(supervisor: Desk) -> None:
    page = supervisor.get("/team?from=2026-03-10&to=2026-03-01").get_data(as_text=True)
    assert 'data-error-for="from"' in page and "The start is later than the end." in page
    page = supervisor.get("/team?from=2024-01-01&to=2026-03-01").get_data(as_text=True)
    assert 'data-error-for="to"' in page and "Choose at most a year." in page
    page = supervisor.get("/team?from=yesterday").get_data(as_text=True)
    assert 'data-error-for="from"' in page


def test_the_csv_links_serve_the_apis_exports(
    client: FlaskClient, org: Org, supervisor: Desk, history: dict[str, Any]
) -> None:
    page = supervisor.get(f"/team?team_id={history['team_id']}").get_data(as_text=True)
    links = dict(re.findall(r'href="([^"]+)" download data-export="([\w-]+)"', page))
    by_kind = {kind: href.replace("&amp;", "&") for href, kind in links.items()}
    assert set(by_kind) == {"availability", "status-events"}
    for kind, api_path in (("availability", "availability"), ("status-events", "status-events")):
        mine = supervisor.get(by_kind[kind])
        assert mine.status_code == 200 and mine.mimetype == "text/csv"
        assert "attachment" in mine.headers["Content-Disposition"]
        query = by_kind[kind].split("?", 1)[1]
        api = client.get(mem(org, f"/stats/export/{api_path}?{query}&timezone=UTC"), headers=org.headers())
        if kind == "status-events":  # the API's status export has no team filter either
            untouched = query.replace("team_id=" + history["team_id"], "")
            api = client.get(
                mem(org, f"/stats/export/{api_path}?{untouched}&timezone=UTC"), headers=org.headers()
            )
        assert mine.get_data() == api.get_data()
    rows = list(csv.reader(io.StringIO(supervisor.get(by_kind["availability"]).get_data(as_text=True))))
    assert rows[1][1] == "Ana Agente"


def test_hostile_names_are_text_on_every_page(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org, supervisor: Desk
) -> None:
    """A person, a team and a reason named like markup are shown as text, in the charts' data too."""
    hostile = "<img src=x onerror=alert(1)>'\""
    person = create_desk_user(runner, org.id, "mal@example.test", name=f"Mal {hostile}")
    key = {"headers": org.headers()}
    reason = client.post(mem(org, "/members/unavailable-reasons"), json={"name": f"R {hostile}"}, **key)
    client.post(mem(org, "/teams"), json={"name": f"T {hostile}", "member_ids": [person["member_id"]]}, **key)
    with in_environment(app, LIVE):
        organization_id = uuid.UUID(org.id)
        presence.change_status(
            organization_id, person["member_id"], "online", changed_by="t", at=utcnow() - timedelta(hours=2)
        )
        presence.change_status(
            organization_id,
            person["member_id"],
            "away",
            uuid.UUID(reason.get_json()["id"]),
            changed_by="t",
            at=utcnow() - timedelta(hours=1),
        )
    for path in ("/team", "/team/now", "/settings/people", "/settings/teams", "/settings/reasons"):
        html = supervisor.get(path).get_data(as_text=True)
        assert "<img src=x" not in html, path
        assert "&lt;img src=x onerror=alert(1)&gt;" in html or "\\u003cimg" in html, path
    charts = supervisor.get("/team").get_data(as_text=True)
    data = charts[charts.index("data-team-charts='") + len("data-team-charts='") :]
    assert "'" not in data[: data.index("'>")].replace("\\u0027", "")  # the attribute is not left early
