"""The agent studio's Test chat without a browser: a turn runs the editor's unsaved configuration through the
playground (the fake OpenAI-compatible server sees the unsaved identity), shows the answer, the tool calls
in dry run, the model, the latency and the outcome, carries the conversation in the page for the next
turn, and writes nothing (no message, no run, no commit, nothing sent); a refused configuration is named
by its field and the model is not asked; supervisors only; both languages."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from blueprints.ai.models import AiRun
from blueprints.messaging.models import Message
from core.db import db
from core.environments import LIVE, in_environment
from tests.ai.conftest import mem
from tests.ai.test_studio_knowledge_pages import Desk, desk_of, document, new_agent
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM

HIDDEN = re.compile(r'<input type="hidden" name="tc_(role|text)" value="([^"]*)">')


def studio_form(identity: str, temperature: str = "0.4", search: bool = True) -> dict[str, Any]:
    """The studio editor's fields, named by their configuration paths (blueprints/ai/studio_form.py)."""
    return {
        "sections.identity": identity,
        "sections.knowledge": "Horario: abrimos de 9 a 18 h.",
        "sections.chat.temperature": temperature,
        "sections.chat.context_messages": "10",
        "tools.search_knowledge.enabled": ["false", "true"] if search else ["false"],
    }


def carried(html: str) -> dict[str, list[str]]:
    """The hidden conversation a turn's answer adds to the page, as the next turn posts it."""
    pairs = HIDDEN.findall(html)
    return {
        "tc_role": [value for name, value in pairs if name == "role"],
        "tc_text": [value for name, value in pairs if name == "text"],
    }


def counts(app: Flask) -> tuple[int, int]:
    with in_environment(app, LIVE):
        return (
            db.session.scalar(select(func.count()).select_from(Message)) or 0,
            db.session.scalar(select(func.count()).select_from(AiRun)) or 0,
        )


@pytest.fixture
def sup(app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return desk_of(app, runner, org)


def test_a_turn_runs_the_unsaved_configuration_and_writes_nothing(
    app: Flask, client: FlaskClient, org: Org, sup: Desk, llm: FakeLLM, commits: Any
) -> None:
    bot = new_agent(client, org)
    pane = sup.get(f"/agents/{bot}/test-chat")
    assert pane.status_code == 200
    html = pane.get_data(as_text=True)
    assert 'id="test-chat-form"' in html and 'hx-include="#studio-form"' in html
    llm.call_tools(("search_knowledge", {"query": "horario"})).reply("Abrimos de 9 a 18 h.")
    before = counts(app)
    with commits() as counted:
        turn = sup.post(
            f"/agents/{bot}/test-chat/turn",
            {**studio_form("You are Max, unsaved."), "tc_message": "¿Cuál es su horario?"},
        )
    assert turn.status_code == 200, turn.get_data(as_text=True)
    html = turn.get_data(as_text=True)
    assert counted.count == 0 and counts(app) == before
    assert llm.system(0).startswith("## Identity\nYou are Max, unsaved.")
    assert llm.requests[0]["temperature"] == 0.4 and llm.tool_names(0) == ["search_knowledge"]
    assert "data-answer>Abrimos de 9 a 18 h.<" in html
    assert 'data-tool="search_knowledge"' in html and "Horario: abrimos de 9 a 18 h." in html
    assert "fake-model-1" in html and 'data-outcome="answered"' in html and " ms<" in html
    assert carried(html) == {
        "tc_role": ["customer", "agent"],
        "tc_text": ["¿Cuál es su horario?", "Abrimos de 9 a 18 h."],
    }
    saved = client.get(mem(org, f"/members/{bot}/agent-config"), headers=org.headers()).get_json()
    assert saved["sections"]["identity"] == "You are Bot."  # nothing saved

    # the second turn carries the first: the model gets the history
    llm.call_tools(("create_ticket", {"title": "Pedido roto"})).reply("Abrí un ticket.")
    second = sup.post(
        f"/agents/{bot}/test-chat/turn",
        {
            **studio_form("You are Max, unsaved.", search=False),
            "tools.create_ticket.enabled": ["false", "true"],
            **carried(html),
            "tc_message": "Mi pedido llegó roto",
        },
    )
    assert second.status_code == 200
    later = second.get_data(as_text=True)
    assert llm.conversation(2)[-3:] == [  # the second turn's first request
        ("user", "¿Cuál es su horario?"),
        ("assistant", "Abrimos de 9 a 18 h."),
        ("user", "Mi pedido llegó roto"),
    ]
    assert 'data-tool="create_ticket"' in later and "dry run: not done" in later
    assert counts(app) == before  # no ticket message, no run


def test_a_refused_configuration_is_named_by_its_field_and_the_model_is_not_asked(
    client: FlaskClient, org: Org, sup: Desk, llm: FakeLLM
) -> None:
    bot = new_agent(client, org)
    response = sup.post(
        f"/agents/{bot}/test-chat/turn",
        {**studio_form("You are Max.", temperature="1.5"), "tc_message": "hola"},
    )
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#test-chat-status"
    html = response.get_data(as_text=True)
    assert 'data-field="sections.chat.temperature"' in html
    assert "<code>sections.chat.temperature</code>" in html
    assert 'data-studio-field="sections.chat.temperature"' in html
    assert llm.requests == []
    empty = sup.post(f"/agents/{bot}/test-chat/turn", {**studio_form("You are Max."), "tc_message": "  "})
    assert empty.status_code == 422 and "Write the customer" in empty.get_data(as_text=True)


def test_without_a_model_the_offline_responder_answers_from_an_uploaded_document(
    client: FlaskClient, org: Org, sup: Desk, offline: None
) -> None:
    bot = new_agent(client, org)
    doc = document(client, org, "Envíos", "Enviamos a Puebla en 48 horas.")
    response = sup.post(
        f"/agents/{bot}/test-chat/turn", {**studio_form("Eres Bot."), "tc_message": "¿Envían a Puebla?"}
    )
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "Enviamos a Puebla en 48 horas." in html and f'data-found-document="{doc}"' in html
    assert "offline responder" in html


def test_the_pane_alone_answers_with_the_stored_configuration(
    client: FlaskClient, org: Org, sup: Desk, llm: FakeLLM
) -> None:
    bot = new_agent(client, org)
    llm.reply("Hola.")
    response = sup.post(f"/agents/{bot}/test-chat/turn", {"tc_message": "hola"})
    assert response.status_code == 200
    assert llm.system(0).startswith("## Identity\nYou are Bot.")


def test_supervisors_only_and_another_organizations_agent_is_not_found(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org, other_org: Org, sup: Desk, llm: FakeLLM
) -> None:
    bot = new_agent(client, org)
    foreign = new_agent(client, other_org, "Ajeno")
    agent = desk_of(app, runner, org, role="agent", name="Ana")
    assert agent.get(f"/agents/{bot}/test-chat").status_code == 403
    assert agent.post(f"/agents/{bot}/test-chat/turn", {"tc_message": "hola"}).status_code == 403
    assert sup.get(f"/agents/{foreign}/test-chat").status_code == 404
    assert sup.post(f"/agents/{foreign}/test-chat/turn", {"tc_message": "hola"}).status_code == 404
    assert llm.requests == []


def test_the_pane_speaks_spanish(client: FlaskClient, org: Org, sup: Desk) -> None:
    bot = new_agent(client, org)
    html = sup.get(f"/agents/{bot}/test-chat", language="es").get_data(as_text=True)
    assert "Chat de prueba" in html and "Reiniciar" in html and "Test chat" not in html
