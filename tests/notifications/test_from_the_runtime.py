"""End to end: the fake model makes the AI agent call a tool, and the supervisor's mailbox (a real SMTP
server) receives the notification its configuration asks for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from core.environments import LIVE, environment_app
from tests.ai.conftest import (  # noqa: F401  (fixtures)
    MakeAgent,
    Say,
    conversation_of,
    llm,
    llm_server,
    make_agent,
    say,
)
from tests.conftest import Org
from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401
from tests.notifications.conftest import deliveries
from tests.support.fake_llm import FakeLLM
from tests.support.smtp_server import SmtpServer, smtp_server


@pytest.fixture
def mailbox(app: Flask) -> Iterator[SmtpServer]:
    with smtp_server() as server:
        environment_app(app, LIVE).config.update(
            SMTP_HOST=server.host, SMTP_PORT=server.port, SMTP_STARTTLS=False, SMTP_TIMEOUT_SECONDS=2
        )
        yield server


def test_a_tool_the_model_calls_notifies_the_supervisor(
    client: FlaskClient,
    org: Org,
    llm: FakeLLM,  # noqa: F811
    make_agent: MakeAgent,  # noqa: F811
    say: Say,  # noqa: F811
    mailbox: SmtpServer,
    meta: Any,  # noqa: F811
) -> None:
    agent = make_agent(
        {
            "sections": {"identity": "Bot"},
            "tools": {"transfer_to_human": {"enabled": True}, "search_knowledge": {"enabled": False}},
            "notifications": {"transfer_to_human": {"email": ["supervisor@example.test"]}},
        }
    )
    llm.call_tools(("transfer_to_human", {"note": "Quiere hablar con ventas"}))
    say("quiero hablar con una persona de ventas")

    [mail] = mailbox.to("supervisor@example.test")
    conversation = conversation_of(client, org)
    assert mail.subject.endswith(f"Bot: transferred to a human ({conversation['contact_address']})")
    assert "Quiere hablar con ventas" in mail.text
    assert conversation["id"] in mail.text
    [delivery] = deliveries(client, org, agent.id)
    assert (delivery["trigger"], delivery["status"]) == ("transfer_to_human", "sent")
    assert delivery["payload"]["data"]["tool"] == "transfer_to_human"
