"""The channels page without a browser: supervisors only (403 for agents on every URL), the addresses with
their routing, connecting one through the page (the function behind ``channels connect``: it appears in
``GET {msg}/addresses``, audited, and its token is in no answer), refusals under their field with the
token never sent back, routing saved and audited as through the API, both languages."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from tests.ai.test_studio_knowledge_pages import Desk, desk_of
from tests.conftest import Org

TOKEN = "EAAG-very-secret-token-1234567890"


def msg(org: Org, path: str) -> str:
    return f"/v2/messages/organizations/{org.id}{path}"


def audit(client: FlaskClient, org: Org) -> list[dict[str, Any]]:
    response = client.get(f"/v1/members/organizations/{org.id}/audit-log", headers=org.headers())
    assert response.status_code == 200
    return response.get_json()["data"]


def connect(desk: Desk, **fields: str) -> Any:
    data = {"service": "whatsapp", "provider": "simulator", "address": "5215550001", **fields}
    return desk.post("/settings/channels", data)


def test_agents_get_403_on_every_channels_url(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    desk = desk_of(app, runner, org, role="agent", name="Ana")
    assert desk.client.get("/settings/channels").status_code == 403
    assert connect(desk).status_code == 403
    assert desk.post("/settings/channels/123/routing", {"routing": "none"}).status_code == 403


def test_connect_on_the_page_appears_in_the_api_without_its_token(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org
) -> None:
    desk = desk_of(app, runner, org)
    empty = desk.client.get("/settings/channels").get_data(as_text=True)
    assert "data-empty" in empty and "data-settings-nav=" in empty

    response = connect(
        desk,
        phone_number="+52 1 55 1234 5678",
        verified_name="Tienda Norte",
        access_token=TOKEN,
    )
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    answer = response.get_data(as_text=True)
    assert TOKEN not in answer
    assert 'id="channels-list"' in answer and "+525512345678" in answer and "hx-swap-oob" in answer

    listed = client.get(msg(org, "/addresses"), headers=org.headers())
    assert TOKEN not in listed.get_data(as_text=True)
    [address] = [a for a in listed.get_json() if a["address"] == "5215550001"]
    assert address["has_access_token"] is True
    assert address["extra"]["phone_number"] == "+525512345678"
    assert address["provider"] == "simulator"

    page = desk.client.get("/settings/channels").get_data(as_text=True)
    assert TOKEN not in page and "Tienda Norte" in page
    entries = [e for e in audit(client, org) if e["action"] == "channel.connected"]
    assert entries and entries[0]["actor"].startswith("user:")
    assert TOKEN not in str(entries)


def test_a_refused_connect_names_its_field_and_forgets_the_token(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org
) -> None:
    desk = desk_of(app, runner, org)
    response = connect(desk, provider="meta", address="not-digits", access_token=TOKEN)
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#channel-connect"
    html = response.get_data(as_text=True)
    assert 'id="connect-address-error"' in html and "A Meta id is digits only." in html
    assert 'value="not-digits"' in html  # what was typed stays, except the token
    assert TOKEN not in html
    assert client.get(msg(org, "/addresses"), headers=org.headers()).get_json() == []

    spanish = desk.post(
        "/settings/channels",
        {"service": "whatsapp", "provider": "simulator", "address": "x1", "phone_number": "12"},
        **{"Accept-Language": "es"},
    )
    assert spanish.status_code == 422
    assert "No es un número de teléfono válido." in spanish.get_data(as_text=True)


def test_routing_is_saved_and_audited_as_through_the_api(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org
) -> None:
    desk = desk_of(app, runner, org)
    assert connect(desk).status_code == 200
    team = client.post(
        f"/v1/members/organizations/{org.id}/teams", json={"name": "Ventas"}, headers=org.headers()
    ).get_json()
    page = desk.client.get("/settings/channels").get_data(as_text=True)
    assert f'value="team:{team["id"]}"' in page

    saved = desk.post("/settings/channels/5215550001/routing", {"routing": f"team:{team['id']}"})
    assert saved.status_code == 200
    assert f'value="team:{team["id"]}" selected' in saved.get_data(as_text=True)
    routing = client.get(msg(org, "/addresses/5215550001/routing"), headers=org.headers()).get_json()
    assert routing["target"] == "team" and routing["team_id"] == team["id"]
    assert any(e["action"] == "routing.updated" for e in audit(client, org))

    assert desk.post("/settings/channels/5215550001/routing", {"routing": "team:nope"}).status_code == 422
    assert desk.post("/settings/channels/999/routing", {"routing": "none"}).status_code == 404
    assert desk.post("/settings/channels/5215550001/routing", {"routing": "bogus"}).status_code == 400


def test_another_organizations_address_is_not_listed_or_routable(
    app: Flask, runner: FlaskCliRunner, org: Org, make_org: Any
) -> None:
    other = make_org()
    theirs = desk_of(app, runner, other, name="Otra")
    assert connect(theirs, address="5215550999", verified_name="Ajena").status_code == 200
    desk = desk_of(app, runner, org)
    assert "Ajena" not in desk.client.get("/settings/channels").get_data(as_text=True)
    assert desk.post("/settings/channels/5215550999/routing", {"routing": "none"}).status_code == 404
    # connecting another organization's address is refused under the field
    refused = connect(desk, address="5215550999")
    assert refused.status_code == 422
    assert "connected to another organization" in refused.get_data(as_text=True)
