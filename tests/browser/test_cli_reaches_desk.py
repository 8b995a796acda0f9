"""The README's way to try the desk, in the default set-up (no Redis, the embedded job queue): a message
made with ``flask --app app channels simulate-inbound`` in another process appears in an open inbox
without a reload. The CLI hands its events to the serving process through the job queue that process
consumes (core/realtime.py, "the embedded set-up's event relay")."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.fakes.fixtures import PHONE_NUMBER_ID
from tests.support.servers import flask_servers

PASSWORD = "correct horse battery"


def test_a_simulated_message_appears_in_the_open_inbox(browser: Any, tmp_path: Path) -> None:
    with flask_servers(tmp_path, None, count=1, extra_env={"JOBS_MODE": "embedded"}) as servers:
        (server,) = servers.urls
        org = servers.organization["organization_id"]
        servers.flask(
            *("channels", "connect", "--org", org, "--service", "whatsapp", "--address", PHONE_NUMBER_ID),
            *("--provider", "simulator", "--phone-number", "+525500000009"),
        )
        json.loads(
            servers.flask(
                *("users", "create", "--org", org, "--email", "ana@one.example", "--password", PASSWORD),
                *("--name", "Ana Agent", "--json"),
            )
        )
        context = browser.new_context(
            base_url=server, locale="en-US", viewport={"width": 1280, "height": 800}
        )
        try:
            page = context.new_page()
            page.goto("/signin")
            page.locator("#email").fill("ana@one.example")
            page.locator("#password").fill(PASSWORD)
            page.locator("form button[type=submit]").click()
            page.wait_for_url("**/desk")
            page.goto("/inbox?tab=all")
            page.wait_for_selector("body[data-live=on]")
            assert page.locator("#rows li.conv-row").count() == 0

            servers.flask(
                *("channels", "simulate-inbound", "--org", org, "--address", PHONE_NUMBER_ID),
                *("--from", "+5215512340000", "--text", "Hola desde la terminal", "--name", "Rosa Terminal"),
            )
            stored_at = time.monotonic()
            row = page.locator("#rows li.conv-row").filter(has_text="Rosa Terminal")
            row.wait_for(timeout=2000)  # no reload: relayed to the server's Socket.IO within 2 s
            assert "Hola desde la terminal" in row.inner_text()
            assert time.monotonic() - stored_at < 2.0
        finally:
            context.close()
