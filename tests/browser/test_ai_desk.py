"""The AI agents in the desk: the open conversation's AI badge (answering, active, paused and why, handed
off and why), supervisors pausing and resuming the agent from the header (agents see no buttons and are
refused), the agents page and each agent's runs log (filters, "show more"), in both languages, with runs
made by the real runtime against the fake OpenAI-compatible server."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from blueprints.ai import pages as ai_pages
from blueprints.ai.models import AiConversationState, AiRun
from core.db import db, utcnow
from tests.ai.conftest import (  # noqa: F401  (fixtures)
    Agent,
    MakeAgent,
    Say,
    conversation_of,
    llm,
    llm_server,
    make_agent,
    runs_of,
    say,
)
from tests.browser.conftest import DeskLogin, axe_violations, screenshot, sign_in, wait_for_htmx
from tests.browser.inbox.data import signed_in_client
from tests.conftest import Org
from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401
from tests.support.fake_llm import FakeLLM

HX = {"HX-Request": "true"}
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
LIVE_WITHIN_MS = 2000
SEARCH = {"sections": {"identity": "Eres Bot."}, "tools": {"search_knowledge": {"enabled": True}}}


class Desk:
    """A signed-in desk user without a browser: GETs and htmx POSTs with the CSRF header."""

    def __init__(self, app: Flask, login: DeskLogin) -> None:
        self.client = signed_in_client(app.test_client(), login.email, login.password)
        found = CSRF.search(self.client.get("/desk").get_data(as_text=True))
        assert found is not None
        self.csrf = found.group(1)

    def get(self, path: str, **headers: str) -> Any:
        return self.client.get(path, headers={**HX, **headers})

    def post(self, path: str) -> Any:
        return self.client.post(path, headers={**HX, "X-CSRFToken": self.csrf})


def _api_state(client: FlaskClient, org: Org, cid: str) -> dict[str, Any]:
    response = client.get(
        f"/v2/messages/organizations/{org.id}/conversations/{cid}/ai", headers=org.headers()
    )
    assert response.status_code == 200
    return response.get_json()


@pytest.fixture
def answered(
    client: FlaskClient,
    org: Org,
    llm: FakeLLM,  # noqa: F811
    make_agent: MakeAgent,  # noqa: F811
    say: Say,  # noqa: F811
) -> tuple[Agent, str]:
    """An agent that answered a customer with a tool call: the conversation is the agent's."""
    agent = make_agent(SEARCH, name="Sofía IA")
    llm.call_tools(("search_knowledge", {"query": "horario de atención"})).reply("Abrimos de 9 a 18 h.")
    say("¿Cuál es su horario?")
    return agent, conversation_of(client, org)["id"]


# ---- fragments, without a browser ---------------------------------------------------------------------


def test_the_badge_and_the_buttons_by_role(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    answered: tuple[Agent, str],
) -> None:
    agent, cid = answered
    boss = Desk(app, make_user(org, "Laura Supervisora", role="supervisor"))
    ana = Desk(app, make_user(org, "Ana Agent"))

    page = boss.client.get(f"/inbox/c/{cid}").get_data(as_text=True)
    assert 'data-ai-state="active"' in page and 'data-ai-action="pause"' in page
    # the side panel names the AI assignee (it listed people only: the agent read "Nobody")
    assert f'<option value="{agent.id}" selected>Sofía IA</option>' in page
    seen_by_agent = ana.client.get(f"/inbox/c/{cid}").get_data(as_text=True)
    assert 'data-ai-state="active"' in seen_by_agent and "data-ai-action" not in seen_by_agent
    assert "/agents" not in seen_by_agent and "/agents" in page  # the navigation link, supervisors only

    refused = ana.post(f"/inbox/c/{cid}/ai/pause")
    assert refused.status_code == 403
    assert _api_state(client, org, cid)["paused"] is False
    assert ana.get("/agents").status_code == 403
    assert ana.get(f"/agents/{agent.id}/runs").status_code == 403

    paused = boss.post(f"/inbox/c/{cid}/ai/pause")
    assert paused.status_code == 200
    html = paused.get_data(as_text=True)
    assert 'data-ai-state="paused"' in html and "until resumed" in html and "by a supervisor" in html
    assert 'data-ai-action="resume"' in html
    state = _api_state(client, org, cid)
    assert state["paused"] is True and state["paused_until"] == "resumed"
    resumed = boss.post(f"/inbox/c/{cid}/ai/resume")
    assert 'data-ai-state="active"' in resumed.get_data(as_text=True)
    assert _api_state(client, org, cid)["paused"] is False

    # a run holding the conversation's lease: "answering"
    with app.app_context():
        db.session.execute(
            update(AiConversationState)
            .where(AiConversationState.conversation_id == uuid.UUID(cid))
            .values(lease_token="running", lease_until=utcnow() + timedelta(minutes=1))
        )
        db.session.commit()
    assert 'data-ai-state="answering"' in boss.get(f"/inbox/c/{cid}/ai").get_data(as_text=True)

    # without CSRF the POST is refused; another organization's or a malformed id is 404
    assert boss.client.post(f"/inbox/c/{cid}/ai/pause", headers=HX).status_code == 400
    assert boss.post(f"/inbox/c/{uuid.uuid4()}/ai/pause").status_code == 404
    assert boss.get("/inbox/c/nope/ai").status_code == 404


def test_a_person_reply_shows_the_pause_with_its_end_and_a_hand_off_its_reason(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    llm: FakeLLM,  # noqa: F811
    say: Say,  # noqa: F811
    answered: tuple[Agent, str],
) -> None:
    _, cid = answered
    boss_login = make_user(org, "Laura Supervisora", role="supervisor")
    boss = Desk(app, boss_login)
    sent = boss.client.post(  # a person replies from the desk
        f"/inbox/c/{cid}/messages",
        data={"text": "Hola, soy Laura."},
        headers={**HX, "X-CSRFToken": boss.csrf},
    )
    assert sent.status_code < 300, sent.get_data(as_text=True)
    badge = boss.get(f"/inbox/c/{cid}/ai").get_data(as_text=True)
    assert 'data-ai-state="paused"' in badge and "a person replied" in badge and "until " in badge
    assert "until resumed" not in badge  # AI_PAUSE_MINUTES (30): a time

    boss.post(f"/inbox/c/{cid}/ai/resume")
    llm.fail(500, times=2)  # LLM_MAX_RETRIES=1: the model fails, people take over
    say("¿Sigues ahí?")
    badge = boss.get(f"/inbox/c/{cid}/ai").get_data(as_text=True)
    assert 'data-ai-state="handed_off"' in badge and "the language model failed" in badge
    assert "data-ai-action" not in badge  # the agent is not on it any more: nothing to pause


def test_the_runs_log_filters_and_pages_by_keyset(
    app: Flask,
    org: Org,
    make_user: Callable[..., DeskLogin],
    answered: tuple[Agent, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent, cid = answered
    boss = Desk(app, make_user(org, "Laura Supervisora", role="supervisor"))
    index = boss.get("/agents").get_data(as_text=True)
    assert "Sofía IA" in index and f"/agents/{agent.id}/runs" in index and "Answered" in index

    page = boss.client.get(f"/agents/{agent.id}/runs").get_data(as_text=True)
    assert "fake-model-1" in page and "search_knowledge" in page and "horario de atención" in page
    assert f"/inbox/c/{cid}" in page and "Answered" in page and "Show more" not in page

    # five more runs, two of them at the same instant: the keyset (started_at, id) never repeats or skips
    now = utcnow()
    with app.app_context():
        for n, outcome in enumerate(
            ["window_closed", "no_answer", "no_answer", "window_closed", "no_answer"]
        ):
            db.session.add(
                AiRun(
                    organization_id=uuid.UUID(org.id),
                    agent_id=agent.id,
                    conversation_id=uuid.UUID(cid),
                    outcome=outcome,
                    model="fake-model-1",
                    error=f"error {n}",
                    started_at=now + timedelta(seconds=min(n, 3)),
                    finished_at=now,
                )
            )
        db.session.commit()
    monkeypatch.setattr(ai_pages, "PAGE_SIZE", 2)
    first = boss.get(f"/agents/{agent.id}/runs", **{"HX-Target": "runs-pane"}).get_data(as_text=True)
    assert "<html" not in first and "Show more" in first
    seen = re.findall(r'data-run-id="([^"]+)"', first)
    while "Show more" in first:
        after = re.search(r"after=([0-9a-f-]+)", first)
        assert after is not None
        first = boss.get(f"/agents/{agent.id}/runs/more?after={after.group(1)}").get_data(as_text=True)
        seen += re.findall(r'data-run-id="([^"]+)"', first)
    assert len(seen) == 6 and len(set(seen)) == 6
    assert seen[0] != seen[-1] and "error 4" in boss.get(f"/agents/{agent.id}/runs").get_data(as_text=True)

    filtered = boss.get(f"/agents/{agent.id}/runs?outcome=no_answer", **{"HX-Target": "runs-pane"})
    rows = re.findall(r'data-outcome="([^"]+)"', filtered.get_data(as_text=True).split("<tbody")[1])
    assert rows and set(rows) == {"no_answer"}
    empty = boss.get(f"/agents/{agent.id}/runs?outcome=send_failed", **{"HX-Target": "runs-pane"})
    assert "No runs with this outcome." in empty.get_data(as_text=True)
    assert boss.get(f"/agents/{uuid.uuid4()}/runs").status_code == 404
    assert boss.get(f"/agents/{agent.id}/runs/more").status_code == 400


# ---- in a real Chromium --------------------------------------------------------------------------------


def _open(new_context: Callable[..., Any], login: DeskLogin, path: str, **options: Any) -> Any:
    page = new_context(**options).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.goto(path)
    page.wait_for_selector("body[data-live=on]")
    return page


def test_a_supervisor_pauses_and_resumes_the_agent_from_the_header(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    answered: tuple[Agent, str],
) -> None:
    _, cid = answered
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = _open(new_context, boss, f"/inbox/c/{cid}")
    page.locator("#ai-state[data-ai-state=active]").wait_for()
    page.get_by_role("button", name="Pause").click()
    page.locator("#ai-state[data-ai-state=paused]", has_text="until resumed").wait_for()
    assert _api_state(client, org, cid)["paused"] is True
    page.get_by_role("button", name="Resume").click()
    page.locator("#ai-state[data-ai-state=active]").wait_for()
    assert _api_state(client, org, cid)["paused"] is False
    # live: a pause made elsewhere (the API) changes the open header without a reload
    paused = client.post(
        f"/v2/messages/organizations/{org.id}/conversations/{cid}/ai/pause", headers=org.headers()
    )
    assert paused.status_code == 200
    page.locator("#ai-state[data-ai-state=paused]").wait_for(timeout=LIVE_WITHIN_MS)
    # Contrast is checked on the settled header: the new Resume button appeared under the pointer that
    # clicked the old one, and its hover transition was measured half-way.
    page.mouse.move(0, 0)
    wait_for_htmx(page)
    assert axe_violations(page) == []
    assert page.errors == []

    agent = make_user(org, "Ana Agent")
    theirs = _open(new_context, agent, f"/inbox/c/{cid}")
    theirs.locator("#ai-state[data-ai-state=paused]").wait_for()
    assert theirs.locator("[data-ai-action]").count() == 0
    status = theirs.evaluate(
        """async (cid) => {
            const token = document.querySelector('meta[name=csrf-token]').content;
            const response = await fetch('/inbox/c/' + cid + '/ai/resume',
                {method: 'POST', headers: {'X-CSRFToken': token, 'HX-Request': 'true'}});
            return response.status;
        }""",
        cid,
    )
    assert status == 403
    assert _api_state(client, org, cid)["paused"] is True


@pytest.mark.parametrize("locale", ["en-US", "es-MX"])
def test_the_runs_log_in_a_browser(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
    llm: FakeLLM,  # noqa: F811
    say: Say,  # noqa: F811
    answered: tuple[Agent, str],
    locale: str,
) -> None:
    agent, _ = answered
    llm.fail(500, times=2)
    say("Necesito hablar con alguien de facturación", sender="5215512349999")
    boss = make_user(org, "Laura Supervisora", role="supervisor")
    page = _open(new_context, boss, "/inbox", locale=locale)
    page.locator("nav a[href$='/agents']").click()
    page.locator(f"tr[data-agent-id='{agent.id}']").wait_for()
    page.locator(f"tr[data-agent-id='{agent.id}'] a[href$='/runs']").click()
    page.wait_for_url(f"**/agents/{agent.id}/runs")
    rows = page.locator("#run-rows tr[data-run-id]")
    rows.first.wait_for()
    assert rows.count() == 2
    assert page.locator("#run-rows [data-outcome=failed_handed_off]").count() == 1
    assert page.locator("#run-rows code", has_text="search_knowledge").count() == 1
    assert axe_violations(page) == []
    screenshot(page, f"ai-runs-{locale[:2]}")
    page.locator("#runs-outcome").select_option("answered")
    page.wait_for_url("**outcome=answered")
    page.locator("#run-rows tr[data-run-id]").first.wait_for()
    assert page.locator("#run-rows tr[data-run-id]").count() == 1
    # a narrow window keeps every column readable (model and prompt size move under the outcome)
    page.set_viewport_size({"width": 800, "height": 800})
    page.locator("#run-rows .ai-col-narrow").first.wait_for()
    assert page.evaluate(
        "(() => { const t = document.querySelector('.ai-runs').parentElement;"
        " return t.scrollWidth <= t.clientWidth + 1; })()"
    ), "the runs table scrolls sideways in a narrow window"
    # the conversation link opens it in the inbox, with its badge
    page.locator("#run-rows a").first.click()
    page.locator("#ai-state").wait_for()
    assert page.errors == []
