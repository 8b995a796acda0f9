"""Media only for their own organization.

The service stores no uploaded files and proxies no media: a message's media is a link (``file.uri``)
and the provider's media id inside the message, and the desk attaches media by link. So media are read
only through the messages and conversations that carry them; this checks that another organization's
key, a key of the other environment, no key, and another organization's desk user never get them, and
that no route serving files exists that would escape these checks.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.fakes.fixtures import (  # noqa: F401  (fixtures)
    Channel,
    Deliver,
    app_config,
    connect,
    deliver,
    meta,
    meta_server,
    msg,
    wa,
)
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_media
from tests.support.desk_users import create_desk_user, sign_in

CUSTOMER = "5215512345678"
INBOUND_URL = "https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=acme-private-7731"
INBOUND_MEDIA_ID = "99887766554433"
OUTBOUND_URL = "https://files.acme.example/contracts/acme-private-contract.pdf"
# What would serve stored files if it existed. None does today; a new one must get its own cases here.
FILE_ROUTE = re.compile(r"media|upload|attachment|download|/files?\b", re.IGNORECASE)


@pytest.fixture
def media(client: FlaskClient, wa: Channel, deliver: Deliver) -> dict[str, Any]:  # noqa: F811
    """Organization A (``wa.org``) received an image and sent a document."""
    image = wa_media(CUSTOMER, "image", caption="mi INE", url=INBOUND_URL, media_id=INBOUND_MEDIA_ID)
    assert deliver(wa_delivery(wa_change(wa.address, messages=[image]))).status_code == 200
    sent = client.post(
        wa.path("/messages"),
        json={
            "organization_address": wa.address,
            "service": "whatsapp",
            "contact_address": CUSTOMER,
            "direction": "outgoing",
            "content": {"kind": "document", "file": {"uri": OUTBOUND_URL, "mime_type": "application/pdf"}},
        },
        headers=wa.org.headers(),
    )
    assert sent.status_code == 201, sent.get_json()
    listed = client.get(wa.path("/messages"), headers=wa.org.headers()).get_json()["data"]
    assert {m["content"]["file"]["uri"] for m in listed} == {INBOUND_URL, OUTBOUND_URL}
    return {"messages": listed, "conversation": listed[0]["conversation_id"]}


def _leaks(response: Any) -> bool:
    body = response.get_data(as_text=True)
    return any(secret in body for secret in (INBOUND_URL, OUTBOUND_URL, INBOUND_MEDIA_ID, "acme-private"))


def test_only_the_owner_reads_its_media_through_the_api(
    client: FlaskClient,
    wa: Channel,  # noqa: F811
    other_org: Org,
    media: dict[str, Any],
) -> None:
    owner = wa.org
    reads = [f"/messages/{m['id']}" for m in media["messages"]]
    reads += [f"/conversations/{media['conversation']}", "/messages", "/conversations"]
    for suffix in reads:
        own = client.get(msg(owner, suffix), headers=owner.headers())
        assert own.status_code == 200, suffix
        refused = {
            "other organization's key on the owner's path": (
                client.get(msg(owner, suffix), headers=other_org.headers()),
                403,
            ),
            "the owner's sandbox key": (
                client.get(msg(owner, suffix), headers=owner.headers("sandbox")),
                401,
            ),
            "no key": (client.get(msg(owner, suffix)), 401),
        }
        if "/" in suffix.strip("/"):  # an object id: asked for under the other organization's own path
            refused["other organization's path"] = (
                client.get(msg(other_org, suffix), headers=other_org.headers()),
                404,
            )
        for case, (response, status) in refused.items():
            assert response.status_code == status, (suffix, case, response.get_json())
            assert not _leaks(response), (suffix, case)
        if suffix in ("/messages", "/conversations"):  # the other organization's own lists
            theirs = client.get(msg(other_org, suffix), headers=other_org.headers())
            assert theirs.status_code == 200 and not _leaks(theirs)


def _desk(app: Flask, runner: FlaskCliRunner, org: Org) -> FlaskClient:
    email = f"sup.{org.id[:8]}@example.test"
    create_desk_user(runner, org.id, email, name="Sup", role="supervisor")
    return sign_in(app.test_client(), email)


def test_only_the_owners_desk_shows_its_media(
    app: Flask,
    client: FlaskClient,
    runner: FlaskCliRunner,
    wa: Channel,  # noqa: F811
    other_org: Org,
    media: dict[str, Any],
) -> None:
    conversation = media["conversation"]
    pages = [f"/inbox/c/{conversation}", f"/inbox/c/{conversation}/older", f"/inbox/c/{conversation}/panel"]
    pages += [f"/inbox/c/{conversation}/messages/{m['id']}" for m in media["messages"]]

    owner_desk = _desk(app, runner, wa.org)
    shown = owner_desk.get(f"/inbox/c/{conversation}")
    assert shown.status_code == 200 and INBOUND_URL.split("?")[0] in shown.get_data(as_text=True)

    other_desk = _desk(app, runner, other_org)
    for page in pages:
        response = other_desk.get(page)
        assert response.status_code == 404, (page, response.status_code)
        assert not _leaks(response), page
        signed_out = client.get(page)
        assert signed_out.status_code in (302, 401), page
        assert not _leaks(signed_out), page
    assert not _leaks(other_desk.get("/inbox"))


def test_no_route_serves_files_outside_these_checks(app: Flask) -> None:
    """Fails when a route that looks like it serves uploads or media appears: give it cases above."""
    rules = [rule.rule for rule in app.url_map.iter_rules() if FILE_ROUTE.search(rule.rule)]
    assert rules == []
