"""Answers cut into the messages a channel accepts (``split_long_messages``), unit and end to end."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from blueprints.ai.splitting import answer_parts, split_text
from tests.ai.conftest import MakeAgent, Say, runs_of, sent_texts
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM

LONG = " ".join(f"Sentence number {n} says something useful." for n in range(60))  # ~2,600 characters


def test_parts_end_at_sentence_boundaries_within_each_channels_limit() -> None:
    for service, limit, size in (
        ("whatsapp", 4096, len),
        ("messenger", 2000, len),
        ("instagram", 1000, lambda text: len(text.encode())),
    ):
        text = LONG * 2 if service == "whatsapp" else LONG
        parts = answer_parts(text, service, split_long_messages=True)
        assert len(parts) > 1, service
        assert all(size(part) <= limit for part in parts), service
        assert all(part.endswith(".") for part in parts), service  # cut between sentences
        assert " ".join(parts) == text.strip()  # nothing lost


def test_instagram_counts_bytes_not_characters() -> None:
    accented = "¿Cuánto cuesta el envío? " * 60  # 1,500 characters, more bytes
    parts = answer_parts(accented.strip(), "instagram", split_long_messages=False)
    assert all(len(part.encode()) <= 1000 for part in parts) and len(parts) == 2


def test_without_splitting_a_short_answer_is_one_message_and_a_too_long_one_is_cut_anyway() -> None:
    assert answer_parts("Hola.\n\nSegundo párrafo.", "whatsapp", split_long_messages=False) == [
        "Hola.\n\nSegundo párrafo."
    ]
    assert answer_parts("Hola.\n\nSegundo párrafo.", "whatsapp", split_long_messages=True) == [
        "Hola.",
        "Segundo párrafo.",
    ]
    assert len(answer_parts(LONG, "messenger", split_long_messages=False)) == 2
    # a sentence longer than the limit is cut at a space; a word longer than the limit at the limit
    assert split_text("aaaa bbbb cccc", 9) == ["aaaa bbbb", "cccc"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_split_long_messages_sends_one_message_per_paragraph(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, say: Say, meta: Any
) -> None:
    agent = make_agent({"sections": {"identity": "Bot", "chat": {"split_long_messages": True}}})
    llm.reply("Tenemos tres planes.\n\nEl de 20 GB cuesta $299.\n\n¿Cuál te interesa?")
    say("¿qué planes tienen?")
    assert sent_texts(meta) == ["Tenemos tres planes.", "El de 20 GB cuesta $299.", "¿Cuál te interesa?"]
    [run] = runs_of(client, agent)
    assert len(run["sent_message_ids"]) == 3 and len(run["answer"]) == 3
    client.patch(
        agent.path(f"/members/{agent.id}/agent-config"),
        json={"sections": {"chat": {"split_long_messages": False}}},
        headers=org.headers(),
    )
    llm.reply("Uno.\n\nDos.")
    say("¿y ahora?")
    assert sent_texts(meta)[-1] == "Uno.\n\nDos."
