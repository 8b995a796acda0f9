"""Data for the inbox's browser tests, made the way production makes it: inbound messages through signed
webhooks (the fake Meta of ``tests/fakes``), everything else through the JSON API."""

from __future__ import annotations

import re
import time
from typing import Any

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.fakes.fixtures import PHONE_NUMBER_ID, Deliver, msg
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text

SIGNIN_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def incoming(deliver: Deliver, sender: str, text: str, name: str | None = None, **options: Any) -> None:
    """A customer writes (a signed WhatsApp webhook, as Meta sends it)."""
    names = {sender: name} if name else None
    response = deliver(
        wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[wa_text(sender, text, **options)], names=names))
    )
    assert response.status_code == 200, response.get_data(as_text=True)


def conversation_of(client: FlaskClient, org: Org, number: str) -> dict[str, Any]:
    """The conversation with this contact number, through the JSON API."""
    response = client.get(msg(org, f"/conversations?search={number[-8:]}"), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    found = response.get_json()["data"]
    assert len(found) == 1, found
    return found[0]


def api(client: FlaskClient, org: Org, method: str, suffix: str, **body: Any) -> Any:
    if method != "GET":
        body.setdefault("organization_id", org.id)
    response = client.open(msg(org, suffix), method=method, json=body or None, headers=org.headers())
    assert response.status_code < 300, response.get_json()
    return response.get_json()


def signed_in_client(client: FlaskClient, email: str, password: str) -> FlaskClient:
    page = client.get("/signin").get_data(as_text=True)
    token = SIGNIN_TOKEN.search(page)
    assert token is not None
    response = client.post(
        "/signin", data={"email": email, "password": password, "csrf_token": token.group(1)}
    )
    assert response.status_code == 302, response.get_data(as_text=True)
    return client


def mem(client: FlaskClient, org: Org, method: str, suffix: str, **body: Any) -> Any:
    """The members API (``/v1/members/organizations/<org>``)."""
    response = client.open(
        f"/v1/members/organizations/{org.id}{suffix}", method=method, json=body or None, headers=org.headers()
    )
    assert response.status_code < 300, response.get_json()
    return response.get_json()


def seed_inbox(
    client: FlaskClient, deliver: Deliver, org: Org, me_member_id: str, mate_member_id: str
) -> dict[str, str]:
    """A realistic morning: customers writing in two languages, a photo, a location, labels, an
    assignment, a note, a closed and an archived conversation. Returns conversation ids by contact."""
    from tests.fakes.meta_webhooks import wa_location, wa_media

    now = int(time.time())
    # (number, name, [(minutes ago, text)])
    people = [
        ("5215512340006", "Carlos Ruiz", [(60 * 30, "Buenas tardes")]),
        ("5215512340003", "Lucía Méndez", [(180, "Gracias, ya quedó resuelto 🙌")]),
        ("5215512340004", "Pedro Alvarado", [(55, "Quiero cambiar la talla de mis tenis")]),
        (
            "5215512340002",
            "John Carter",
            [(26, "Hi! Do you ship to Guadalajara?"), (25, "And how long does it take?")],
        ),
        ("5215512340005", "Sofía Torres", [(12, "¿Tienen factura electrónica?")]),
        (
            "5215512340001",
            "María Fernanda Rodríguez de la Garza y Villaseñor",
            [(6, "¿Me pueden ayudar con mi pedido #4521? No ha llegado.")],
        ),
    ]
    ids: dict[str, str] = {}
    for number, name, texts in people:
        for minutes, text in texts:
            incoming(deliver, number, text, name=name, timestamp=str(now - minutes * 60))
        ids[name] = conversation_of(client, org, number)["id"]
    maria = ids[people[-1][1]]
    change = wa_change(
        PHONE_NUMBER_ID,
        messages=[
            wa_media("5215512340001", "image", caption="Así llegó la caja", url="https://example.com/box.jpg")
        ],
        names={"5215512340001": people[0][1]},
    )
    assert deliver(wa_delivery(change)).status_code == 200
    change = wa_change(
        PHONE_NUMBER_ID, messages=[wa_location("5215512340004", 19.4326, -99.1332, "Sucursal Centro")]
    )
    assert deliver(wa_delivery(change)).status_code == 200
    api(
        client,
        org,
        "PATCH",
        f"/conversations/{maria}",
        extra={"labels": ["Urgente", "Envíos"], "member_id": me_member_id},
    )
    api(
        client,
        org,
        "POST",
        f"/conversations/{maria}/notes",
        content="Revisé con almacén: sale hoy en la tarde.",
    )
    john = ids["John Carter"]
    api(
        client, org, "PATCH", f"/conversations/{john}", extra={"labels": ["VIP"], "member_id": mate_member_id}
    )
    api(client, org, "PATCH", f"/conversations/{ids['Lucía Méndez']}", status="closed")
    api(
        client,
        org,
        "PATCH",
        f"/conversations/{ids['Carlos Ruiz']}",
        extra={"archived": "2026-11-20T10:00:00Z"},
    )
    return ids
