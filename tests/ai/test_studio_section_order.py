"""The prompt sections' order reaches the prompt: ``prompt.system_prompt`` follows the configuration's
``section_order`` (sections it does not name follow in the default order), the runtime and the playground
read it from the stored configuration or the unsaved one, and the studio shows the sections in that order,
posts it with hidden ``section_order`` inputs (one per card, moved with it), saves a reorder as a version,
previews it, diffs it and runs it in the test chat."""

from __future__ import annotations

import re
import uuid

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.ai import prompt
from blueprints.ai.conversation import agent_setup, chat_messages
from blueprints.ai.studio_form import config_from_form
from core.db import utcnow
from core.environments import LIVE, in_environment
from tests.ai.conftest import mem
from tests.ai.test_studio_knowledge_pages import Desk, desk_of, new_agent
from tests.ai.test_studio_pages import config, studio
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM

SECTIONS = {
    "identity": "You are Sofía.",
    "rules": "Be brief.",
    "faq": "Shipping takes 48 h.",
    "zeta": "Last words.",
    "tone": "   ",
}


def headings(system: str) -> list[str]:
    return re.findall(r"(?:^|>)## (.+)$", system, re.M)


@pytest.fixture
def boss(app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return desk_of(app, runner, org, name="Laura")


def test_the_prompt_follows_the_order_and_the_default_for_the_rest() -> None:
    assert headings(prompt.system_prompt(SECTIONS, [], [], None)) == ["Identity", "Rules", "Faq", "Zeta"]
    ordered = prompt.system_prompt(SECTIONS, ["create_ticket"], [], None, ["zeta", "faq"])
    # the named sections first, the others in the default order, a blank one left out, then the tools
    assert headings(ordered) == ["Zeta", "Faq", "Identity", "Rules", "Tools"]
    assert ordered.startswith("## Zeta\nLast words.\n\n## Faq\nShipping takes 48 h.")
    # a name that is not (or no longer) a section changes nothing
    assert headings(prompt.system_prompt(SECTIONS, [], [], None, ["gone", "rules"])) == [
        "Rules",
        "Identity",
        "Faq",
        "Zeta",
    ]


def test_the_runtime_reads_the_stored_order(app: Flask, client: FlaskClient, org: Org) -> None:
    agent_id = new_agent(client, org, config={"sections": SECTIONS, "section_order": ["faq", "rules"]})
    with in_environment(app, LIVE):
        setup = agent_setup(uuid.UUID(org.id), agent_id)
        assert setup is not None and setup.section_order == ["faq", "rules"]
        messages = chat_messages(setup, prompt.ConversationFacts("whatsapp", "Ana", utcnow()), [], [])
    assert headings(messages[0]["content"]) == ["Faq", "Rules", "Identity", "Zeta", "Conversation"]


def test_the_playground_sends_the_stored_and_the_unsaved_order(
    client: FlaskClient, org: Org, llm: FakeLLM
) -> None:
    agent_id = new_agent(client, org, config={"sections": SECTIONS, "section_order": ["zeta"]})
    sample = {"messages": [{"role": "customer", "text": "Hola"}]}
    llm.reply("Hola.")
    stored = client.post(
        mem(org, f"/members/{agent_id}/agent-config/test"), json=sample, headers=org.headers()
    )
    assert stored.status_code == 200, stored.get_json()
    assert headings(llm.system(-1))[:4] == ["Zeta", "Identity", "Rules", "Faq"]
    llm.reply("Hola.")
    unsaved = client.post(
        mem(org, f"/members/{agent_id}/agent-config/test"),
        json={**sample, "config": {"sections": SECTIONS, "section_order": ["rules", "identity"]}},
        headers=org.headers(),
    )
    assert unsaved.status_code == 200, unsaved.get_json()
    assert headings(llm.system(-1))[:4] == ["Rules", "Identity", "Faq", "Zeta"]
    refused = client.post(
        mem(org, f"/members/{agent_id}/agent-config/test"),
        json={**sample, "config": {"sections": SECTIONS, "section_order": ["closing"]}},
        headers=org.headers(),
    )
    assert refused.status_code == 400
    assert refused.get_json()["message"].startswith("section_order.0: no text section named 'closing'")


def test_config_from_form_reads_the_hidden_order() -> None:
    from werkzeug.datastructures import MultiDict

    form = MultiDict(
        [
            ("section_order", "rules"),
            ("sections.rules", "Be brief."),
            ("section_order", "identity"),
            ("sections.identity", "You are Sofía."),
            ("section_order", " "),
        ]
    )
    assert config_from_form(form)["section_order"] == ["rules", "identity"]
    assert "section_order" not in config_from_form(MultiDict([("sections.identity", "x")]))


def test_the_studio_shows_saves_previews_and_diffs_the_order(
    client: FlaskClient, org: Org, boss: Desk
) -> None:
    agent_id = new_agent(client, org, config={"sections": SECTIONS})
    html, form = studio(boss, agent_id)
    # the cards in the order the prompt gives them, each with its hidden order input
    assert form.getlist("section_order") == ["identity", "rules", "tone", "faq", "zeta"]
    assert re.findall(r'name="sections\.(\w+)"', html)[:5] == ["identity", "rules", "tone", "faq", "zeta"]

    # the page's order unchanged: nothing to save
    assert "Nothing changed since version 1" in boss.post(f"/agents/{agent_id}/config", form).get_data(
        as_text=True
    )

    # the preview follows the form's order (as the drag or Move up / down left it)
    form.setlist("section_order", ["zeta", "faq", "identity", "rules", "tone"])
    preview = boss.post(f"/agents/{agent_id}/preview", form).get_data(as_text=True)
    assert headings(preview.replace("&#39;", "'")) == ["Zeta", "Faq", "Identity", "Rules"]

    saved = boss.post(f"/agents/{agent_id}/config", form)
    assert saved.status_code == 200 and "Saved as version 2" in saved.get_data(as_text=True)
    body, etag = config(client, org, agent_id)
    assert etag == '"2"' and body["section_order"] == ["zeta", "faq", "identity", "rules", "tone"]
    assert body["sections"]["identity"] == "You are Sofía."  # only the order changed
    versions = client.get(
        mem(org, f"/members/{agent_id}/agent-config/versions"), headers=org.headers()
    ).get_json()
    assert list(versions["data"][0]["diff"]) == ["section_order"]

    # the page now shows the stored order; the versions' diff names it
    _html, form = studio(boss, agent_id)
    assert form.getlist("section_order") == ["zeta", "faq", "identity", "rules", "tone"]
    pane = boss.get(f"/agents/{agent_id}/versions").get_data(as_text=True)
    assert "Order of the sections" in pane
    assert re.search(
        r'diff-old-value">identity, rules, tone, faq, zeta</span>.*?'
        r'diff-new-value">zeta, faq, identity, rules, tone<',
        pane,
        re.S,
    )
    spanish = boss.client.get(f"/agents/{agent_id}/versions", headers={"Accept-Language": "es"})
    assert "Orden de las secciones" in spanish.get_data(as_text=True)

    # a section removed and one added in the same save: the order saved names the sections kept
    form = form.copy()
    form.pop("sections.faq")
    form.add("sections.extra", "More.")
    form.setlist("section_order", ["extra", "zeta", "faq", "identity", "rules", "tone"])
    assert boss.post(f"/agents/{agent_id}/config", form).status_code == 200
    body, _etag = config(client, org, agent_id)
    assert (
        body["section_order"] == ["extra", "zeta", "identity", "rules", "tone"]
        and "faq" not in body["sections"]
    )


def test_the_test_chat_sends_the_forms_order(client: FlaskClient, org: Org, boss: Desk, llm: FakeLLM) -> None:
    agent_id = new_agent(client, org, config={"sections": SECTIONS})
    _html, form = studio(boss, agent_id)
    form.setlist("section_order", ["rules", "zeta", "identity", "tone", "faq"])
    form["tc_message"] = "Hola"
    llm.reply("Hola.")
    turn = boss.post(f"/agents/{agent_id}/test-chat/turn", form)
    assert turn.status_code == 200, turn.get_data(as_text=True)
    assert headings(llm.system(-1))[:4] == ["Rules", "Zeta", "Identity", "Faq"]
    assert config(client, org, agent_id)[0]["section_order"] == []  # nothing saved


def test_the_test_chat_words_an_order_refusal_in_both_languages(
    client: FlaskClient, org: Org, boss: Desk, llm: FakeLLM
) -> None:
    agent_id = new_agent(client, org, config={"sections": SECTIONS})
    _html, form = studio(boss, agent_id)
    # two cards renamed to the same name: the order names it twice
    form.setlist("section_order", ["identity", "rules", "rules", "faq", "zeta"])
    form["tc_message"] = "Hola"
    english = boss.post(f"/agents/{agent_id}/test-chat/turn", form)
    assert english.status_code == 422
    html = english.get_data(as_text=True)
    assert 'data-field="section_order.2"' in html
    assert "Two sections have the same name: give each section its own name." in html
    spanish = boss.post(f"/agents/{agent_id}/test-chat/turn", form, **{"Accept-Language": "es"})
    assert "Dos secciones tienen el mismo nombre" in spanish.get_data(as_text=True)
    # the rules' range in the studio's words
    form.setlist("section_order", ["identity"])
    form["sections.chat.temperature"] = "1.5"
    ranged = boss.post(f"/agents/{agent_id}/test-chat/turn", form).get_data(as_text=True)
    assert "Out of range: between 0 and 1." in ranged
    assert llm.requests == []
