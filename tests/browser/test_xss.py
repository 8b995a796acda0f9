"""Markup in data is shown as text on every desk page (issue 15, item 6).

Every kind of text an outsider or a colleague can put in front of an agent carries a script payload:
a customer's message, name and file name, a label, a note, a canned reply, CRM deal, ticket and contact
names, desk users' names, a team, an unavailability reason, an AI agent's name, a ``javascript:`` file
link, and the query strings the pages echo (search, label filter). Then every GET page of the page
blueprints (from the URL map, with this organization's ids) and the live updates over Socket.IO are
opened in Chromium, with the Content-Security-Policy BYPASSED: escaping is tested on its own, not hidden
behind the policy (tests/browser/test_page_security.py tests the policy). Nothing may run
(``window.__xss``), no injected element may exist, no link may be ``javascript:``, and each payload must
show up as text somewhere (otherwise the test would not be testing it).

The earlier, narrower checks stay where they are: tests/browser/test_signin.py (organization and user
names) and tests/browser/inbox/test_inbox.py (message, name, label and note in the inbox).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from blueprints.channels import services as channels
from blueprints.inbox.models import Label
from blueprints.inbox.services import broadcasts
from blueprints.messaging.models import Message
from blueprints.organizations import services as organizations
from core import uow
from core.db import db
from core.environments import LIVE, environment_app, in_environment
from tests.browser.conftest import DeskLogin, sign_in
from tests.browser.inbox.data import api, conversation_of, incoming, mem
from tests.browser.test_page_security import page_routes
from tests.conftest import Org
from tests.fakes import fixtures as fakes
from tests.fakes.fixtures import PHONE_NUMBER_ID, Deliver
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_media

# The fake Meta (Graph API and signed webhooks) and a connected WhatsApp number.
app_config = fakes.app_config
connect = fakes.connect
deliver = fakes.deliver
meta = fakes.meta
meta_server = fakes.meta_server
wa = fakes.wa

NUMBER = "5215577771234"
LATER_NUMBER = "5215577775678"
LIVE_WITHIN_MS = 5000


def payloads(where: str) -> list[str]:
    """Three ways to break out of text and attributes, each tagged with where it was put."""
    return [
        f"<script>window.__xss='{where}'</script>{where}",
        f"<img src=x onerror=\"window.__xss='{where}'\">{where}",
        f"\"'><svg onload=window.__xss='{where}'>{where}",
    ]


def hostile(where: str) -> str:
    return " ".join(payloads(where))[:120]


def crm(client: FlaskClient, org: Org, suffix: str, **body: Any) -> Any:
    response = client.post(f"/v1/crm/organizations/{org.id}{suffix}", json=body, headers=org.headers())
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _seed(
    app: Flask, client: FlaskClient, deliver: Deliver, org: Org, make_user: Callable[..., DeskLogin]
) -> dict[str, Any]:
    """Hostile text in every place the desk shows; returns what the pages need and what to look for."""
    shown: dict[str, str] = {}

    def put(where: str, text: str | None = None) -> str:
        shown[where] = text or hostile(where)
        return shown[where]

    supervisor = make_user(org, put("user-name"), role="supervisor", email="sup@example.test")
    mate = make_user(org, put("teammate-name"), email="mate@example.test")
    incoming(deliver, NUMBER, put("message-text"), name=put("contact-name"))
    document = wa_media(
        NUMBER, "document", url="javascript:window.__xss='file-link'", filename=put("file-name")
    )
    response = deliver(wa_delivery(wa_change(PHONE_NUMBER_ID, messages=[document])))
    assert response.status_code == 200
    conversation = conversation_of(client, org, NUMBER)["id"]
    api(client, org, "PATCH", f"/conversations/{conversation}", extra={"labels": [put("label")[:60]]})
    shown["label"] = shown["label"][:60]
    api(client, org, "POST", f"/conversations/{conversation}/notes", content=put("note"))
    canned = api(
        client, org, "POST", "/canned-responses", short_code="hola", content=put("canned"), title="t"
    )
    mem(client, org, "POST", "/teams", name=put("team")[:120], member_ids=[mate.member_id])
    shown["team"] = shown["team"][:120]
    mem(client, org, "POST", "/members/unavailable-reasons", name=put("reason")[:120])
    shown["reason"] = shown["reason"][:120]
    agent = api(client, org, "POST", "/members", name=put("ai-agent"), ai=True)
    knowledge = mem(
        client,
        org,
        "POST",
        "/knowledge",
        title=put("knowledge-title"),
        body=put("knowledge-body"),
        agent_id=agent["id"],
    )
    contact = crm(
        client,
        org,
        "/contacts",
        name=put("crm-contact"),
        identities=[{"kind": "phone", "value": "+" + NUMBER}],
    )
    pipeline = client.get(f"/v1/crm/organizations/{org.id}/pipelines", headers=org.headers()).get_json()
    stages = pipeline["data"][0]
    deal = crm(
        client,
        org,
        "/deals",
        name=put("deal"),
        pipeline_id=stages["id"],
        stage_id=stages["stages"][0]["id"],
        contacts=[{"contact_id": contact["id"], "is_primary": True}],
    )
    ticket = crm(client, org, "/tickets", title=put("ticket"), source="api", requester_id=contact["id"])
    account = crm(client, org, "/accounts", name=put("crm-account")[:200])
    shown["crm-account"] = shown["crm-account"][:200]
    task = crm(client, org, "/tasks", title=put("task")[:200], contact_id=contact["id"])
    shown["task"] = shown["task"][:200]
    with in_environment(app, LIVE):
        message = db.session.scalar(
            select(Message.id).where(Message.conversation_id == uuid.UUID(conversation))
        )
        organization = organizations.get_organization(uuid.UUID(org.id))
        assert organization is not None
        key = organizations.issue_api_key(organization, LIVE, name=put("key-name")[:120]).key.id
        label = db.session.scalar(select(Label.id).where(Label.organization_id == organization.id).limit(1))
        # a simulator number with a hostile display name, and a broadcast from it with a hostile name
        channels.connect_address(
            uuid.UUID(org.id),
            channels.Connection(
                service="whatsapp", address="5550777", provider="simulator", verified_name=put("channel-name")
            ),
        )
        broadcast = broadcasts.create_broadcast(
            uuid.UUID(org.id),
            broadcasts.BroadcastSpec(
                name=put("broadcast-name")[:200],
                organization_address="5550777",
                meta_template_id="sim_welcome",
                components=[
                    {"type": "body", "parameters": [{"type": "text", "parameter_name": "name", "text": "x"}]}
                ],
                recipients=[broadcasts.Recipient(to="+525510000001")],
            ),
        ).broadcast.id
        uow.commit()
    shown["broadcast-name"] = shown["broadcast-name"][:200]
    shown["key-name"] = shown["key-name"][:120]
    return {
        "login": supervisor,
        "shown": shown,
        "values": {
            "conversation_id": conversation,
            "message_id": str(message),
            "agent_id": agent["id"],
            "document_id": knowledge["id"],
            # the CRM pages (deal drawer, ticket drawer, contact and account pages, a task's drawer)
            "deal_id": deal["id"],
            "ticket_id": ticket["id"],
            "contact_id": contact["id"],
            "account_id": account["id"],
            "task_id": task["id"],
            "state": "new",
            "key_id": str(key),  # the settings pages: API keys, labels, canned replies
            "label_id": str(label),
            "canned_id": canned["id"],
            "broadcast_id": str(broadcast),  # a broadcast's progress
        },
    }


INJECTED = "img[src=x], svg[onload], script:not([src]), a[href^='javascript:' i], [onerror], [onload]"


def _check(page: Any, url: str, seen: list[str]) -> None:
    executed = page.evaluate("window.__xss")
    assert executed is None, f"{url}: a payload ran ({executed})"
    found = page.evaluate(
        "(s) => Array.from(document.querySelectorAll(s)).map((e) => e.outerHTML.slice(0, 120))", INJECTED
    )
    assert found == [], f"{url}: injected markup {found}"
    seen.append(page.locator("body").text_content() or "")


def test_no_payload_runs_on_any_page_and_each_shows_as_text(
    app: Flask,
    wa: Any,
    deliver: Deliver,
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    world = _seed(app, client, deliver, org, make_user)
    values: dict[str, str] = world["values"]
    page = new_context(bypass_csp=True).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in(page, world["login"])
    page.wait_for_url("**/desk")
    # every page but sign-in; an export is a download (its cells are checked by the deal pages' tests)
    routes = [
        r
        for r in page_routes(environment_app(app, LIVE), ("GET",))
        if r.endpoint != "desk.signin" and not r.endpoint.endswith("_csv")
    ]
    urls = [route.url(LIVE, values) for route in routes]
    # The query strings pages echo back into links and fields.
    echo = hostile("query")
    urls += [
        f"/inbox/canned?conversation={values['conversation_id']}&q=hola",
        f"/inbox?q={echo}",
        f"/inbox?label={echo}",
        f"/inbox/c/{values['conversation_id']}?q={echo}",
        f"/agents/{values['agent_id']}/runs?outcome={echo}",
        f"/telecom?tab={echo}",
    ]
    seen: list[str] = []
    for url in urls:
        page.goto(url)
        with contextlib.suppress(Exception):  # fragments loaded after the page (panel, CRM records)
            page.wait_for_load_state("networkidle", timeout=3000)
        _check(page, url, seen)

    # Live: the open conversation receives hostile messages over Socket.IO, and a new conversation from a
    # hostile name enters the list.
    page.goto(f"/inbox/c/{values['conversation_id']}")
    page.wait_for_selector("body[data-live=on]")
    incoming(deliver, NUMBER, hostile("live-message"))
    incoming(deliver, LATER_NUMBER, hostile("live-row-message"), name=hostile("live-row-name"))
    page.locator("#thread .msg-text", has_text="live-message").wait_for(timeout=LIVE_WITHIN_MS)
    page.locator("#rows .conv-name", has_text="live-row-name").wait_for(timeout=LIVE_WITHIN_MS)
    _check(page, "live updates", seen)
    world["shown"].update(
        {"live-message": hostile("live-message"), "live-row-name": hostile("live-row-name")}
    )

    everything = "\n".join(seen)
    never_shown = [where for where, text in world["shown"].items() if text not in everything]
    assert never_shown == [], f"payloads no page showed as text: {never_shown}"
    assert errors == []
    print(f"XSS: {len(world['shown'])} hostile fields on {len(urls) + 1} page loads (CSP bypassed), none ran")
