"""Broadcasts in a real browser: a supervisor opens Broadcasts from the rail, picks an approved template of
the simulator number, fills its parameter, uploads a CSV of 10 numbers (2 invalid, 1 duplicate) and
reads the report (7 recipients, each rejected row with its row, value and reason), sends, and watches the
progress page move live over Socket.IO as the simulator sends, delivers and reads every message; both
languages at 1440 px and on a phone, axe-core clean, no console error. Screenshots go to docs/screenshots."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from playwright.sync_api import expect

from blueprints.inbox.services import broadcasts
from core.environments import LIVE, in_environment
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in
from tests.conftest import Org

NUMBER = "5215550001"
# 10 numbers: row 3 and row 8 are not numbers, row 5 is row 1 again (the old Mexican mobile "1" folded);
# the last one ends in the simulator's 5550102: sent, then failed as undeliverable.
CSV = "\n".join(
    [
        "+52 55 1000 0001",
        "+525510000002",
        "no tengo",
        "+52 55 1000 0003",
        "+52 1 55 1000 0001",
        "+525510000004",
        "+525510000005",
        "12345",
        "+525510000006",
        "+52 55 5555 0102",  # the simulator accepts it, then reports it undeliverable
    ]
)


def _connect(runner: FlaskCliRunner, org: Org) -> None:
    result = runner.invoke(
        args=[
            *("channels", "connect", "--org", org.id, "--service", "whatsapp", "--address", NUMBER),
            *(
                "--provider",
                "simulator",
                "--phone-number",
                "+525555550001",
                "--verified-name",
                "Tienda Norte",
            ),
            *("--env", "live"),
        ]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_a_csv_broadcast_reports_seven_recipients_and_its_progress_moves_live(
    app: Flask,
    runner: FlaskCliRunner,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    locale: str,
) -> None:
    language = locale[:2]
    _connect(runner, org)
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    # The broadcast is created but not started by the page's request: the test starts it once the progress
    # page listens, so what the page shows next arrives live (the tests' queue would run it at once).
    monkeypatch.setattr(broadcasts.run_broadcast_job, "enqueue", lambda *args: None)
    page = new_context(locale=locale).new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    sign_in(page, boss)
    page.wait_for_url("**/desk")

    page.locator("nav a[href$='/broadcasts']").first.click()
    page.wait_for_url("**/broadcasts")
    page.locator("[data-empty]").wait_for()
    page.locator("a[href$='/broadcasts/new']").click()
    page.wait_for_url("**/broadcasts/new")

    page.locator("#broadcast-name").fill("Buen Fin: 20 % en refacciones")
    page.locator("#broadcast-template").select_option("sim_welcome")
    page.locator("#bparam-name").fill("cliente")
    expect(page.locator("[data-broadcast-preview]")).to_contain_text("cliente")
    page.locator("#broadcast-file").set_input_files(
        files=[{"name": "numeros.csv", "mimeType": "text/csv", "buffer": CSV.encode("utf-8")}]
    )
    page.locator("[data-recipient-count='7']").wait_for()
    assert page.locator("[data-rejected-count]").get_attribute("data-rejected-count") == "3"
    rejected = page.locator("[data-rejected-row]")
    assert [rejected.nth(i).get_attribute("data-rejected-row") for i in range(3)] == ["3", "5", "8"]
    duplicate = "Same number as row 1" if language == "en" else "Mismo número que la fila 1"
    expect(page.locator("[data-rejected-row='5']")).to_contain_text(duplicate)
    expect(page.locator("[data-rejected-row='3']")).to_contain_text("no tengo")
    expect(page.locator("#broadcast-numbers")).to_have_value(CSV)  # the file's rows, in the box
    assert axe_violations(page) == []
    screenshot(page, f"broadcast-new-{language}")

    page.locator("#broadcast-form button[name=when][value=now]").click()
    page.wait_for_url("**/broadcasts/*-*")
    broadcast_id = page.url.rsplit("/", 1)[1]
    expect(page.locator("[data-count='total'] [data-count-value]")).to_have_text("7")
    expect(page.locator("tr[data-state='queued']")).to_have_count(7)
    # the socket connects after the page loads; a loaded machine (a long session) may take a while
    page.wait_for_selector("body[data-live=on]", timeout=30000)

    with in_environment(app, LIVE):  # the queue's job, run now: sends through the simulator
        broadcasts.run_broadcast(uuid.UUID(org.id), broadcast_id)
    expect(page.locator("[data-count='read'] [data-count-value]")).to_have_text("6", timeout=30000)
    expect(page.locator("[data-count='failed'] [data-count-value]")).to_have_text("1")
    expect(page.locator("tr[data-state='read']")).to_have_count(6)
    expect(page.locator("tr[data-state='failed']")).to_contain_text("Undeliverable")
    expect(page.locator("[data-broadcast-status='completed']")).to_be_visible()
    assert page.locator("#broadcast-progress button", has_text="Cancel").count() == 0
    assert axe_violations(page) == []
    screenshot(page, f"broadcast-progress-{language}")

    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), "sideways scroll"
    screenshot(page, f"broadcast-progress-phone-{language}")

    page.goto("/broadcasts")
    expect(page.locator(f"tr[data-broadcast-id='{broadcast_id}']")).to_contain_text("Buen Fin")
    assert problems == []
