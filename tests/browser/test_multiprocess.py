"""Several app processes behind one Redis: a desk page served by one process sees what another process
stored, live. The webhook goes to process A, the agent's browser is connected to process B; the message
appears in B's open inbox without a reload, and the teammate's presence set through A changes B's dot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.fakes.fixtures import APP_SECRET, PHONE_NUMBER_ID
from tests.fakes.meta_webhooks import encode, sign, wa_change, wa_delivery, wa_text
from tests.support.servers import flask_servers, reachable_redis_url

pytestmark = pytest.mark.redis


def _user(servers: Any, name: str) -> dict[str, str]:
    org = servers.organization["organization_id"]
    email = f"{name.split()[0].lower()}@two.example"
    made = json.loads(
        servers.flask(
            "users",
            "create",
            "--org",
            org,
            "--email",
            email,
            "--password",
            "correct horse battery",
            "--name",
            name,
            "--role",
            "agent",
            "--json",
        )
    )
    return {"email": email, "password": "correct horse battery", "member_id": made["member_id"]}


def test_a_message_stored_by_one_process_appears_in_a_page_of_the_other(browser: Any, tmp_path: Path) -> None:
    with flask_servers(tmp_path, reachable_redis_url(), extra_env={"META_APP_SECRET": APP_SECRET}) as servers:
        server_a, server_b = servers.urls
        org = servers.organization["organization_id"]
        servers.flask(
            "channels",
            "connect",
            "--org",
            org,
            "--service",
            "whatsapp",
            "--address",
            PHONE_NUMBER_ID,
            "--provider",
            "simulator",
            "--phone-number",
            "+525500000009",
        )
        ana, ben = _user(servers, "Ana Agent"), _user(servers, "Ben Teammate")

        context = browser.new_context(
            base_url=server_b, locale="en-US", viewport={"width": 1280, "height": 800}
        )
        try:
            page = context.new_page()
            page.goto("/signin")
            page.locator("#email").fill(ana["email"])
            page.locator("#password").fill(ana["password"])
            page.locator("form button[type=submit]").click()
            page.wait_for_url("**/desk")
            page.goto("/inbox?tab=all")
            page.wait_for_selector("body[data-live=on]")

            body = encode(
                wa_delivery(
                    wa_change(
                        PHONE_NUMBER_ID,
                        messages=[wa_text("5215512340000", "Hola desde el proceso A")],
                        names={"5215512340000": "Rosa Proceso"},
                    )
                )
            )
            delivered = requests.post(
                f"{server_a}/webhooks/meta",
                data=body,
                headers={"Content-Type": "application/json", "X-Hub-Signature-256": sign(body, APP_SECRET)},
                timeout=10,
            )
            assert delivered.status_code == 200, delivered.text
            row = page.locator("#rows li.conv-row").first
            row.filter(has_text="Rosa Proceso").wait_for(timeout=2000)  # no reload: pushed through Redis
            assert "Hola desde el proceso A" in row.inner_text()

            # a teammate's presence changed through process A reaches process B's page
            key = {"X-API-Key": servers.organization["api_keys"]["live"]}
            changed = requests.patch(
                f"{server_a}/v1/members/organizations/{org}/members/{ben['member_id']}/status",
                json={"status": "busy"},
                headers=key,
                timeout=10,
            )
            assert changed.status_code == 200, changed.text
            page.wait_for_selector(
                f"[data-presence-member='{ben['member_id']}'][data-status=busy]",
                state="attached",
                timeout=3000,
            )
        finally:
            context.close()
