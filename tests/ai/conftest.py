"""Fixtures for the AI runtime tests: the fake OpenAI-compatible server, a WhatsApp number on the fake
Meta Graph server routed to an AI agent, and helpers to deliver a customer's messages."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from core.environments import LIVE, environment_app
from tests.conftest import Org
from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401
from tests.fakes.meta_webhooks import wa_change, wa_delivery, wa_text
from tests.support.fake_llm import FakeLLM

CUSTOMER = "5215512345678"


def msg(org: Org, suffix: str) -> str:
    return f"/v2/messages/organizations/{org.id}{suffix}"


def mem(org: Org, suffix: str) -> str:
    return f"/v1/members/organizations/{org.id}{suffix}"


@pytest.fixture(scope="session")
def llm_server() -> Iterator[FakeLLM]:
    fake = FakeLLM().start()
    yield fake
    fake.stop()


@pytest.fixture
def llm(app: Flask, llm_server: FakeLLM) -> FakeLLM:
    """The fake model, configured for this test (short timeout, one retry)."""
    llm_server.reset()
    config = environment_app(app, LIVE).config
    config.update(
        LLM_BASE_URL=llm_server.base_url,
        LLM_MODEL="fake-model-1",
        LLM_API_KEY="sk-test",
        LLM_TIMEOUT_SECONDS=2,
        LLM_MAX_RETRIES=1,
    )
    return llm_server


@pytest.fixture
def offline(app: Flask) -> None:
    """No model configured: the offline responder answers."""
    config = environment_app(app, LIVE).config
    config["LLM_BASE_URL"] = None
    config["LLM_MODEL"] = None


@dataclass
class Agent:
    org: Org
    id: str
    address: str

    def path(self, suffix: str) -> str:
        return mem(self.org, suffix)


MakeAgent = Callable[..., Agent]


@pytest.fixture
def make_agent(client: FlaskClient, org: Org, wa: Any) -> MakeAgent:  # noqa: F811
    """An AI member with a configuration, and the WhatsApp number's routing pointing at it."""

    def _make(config: dict[str, Any] | None = None, *, name: str = "Bot", route: bool = True) -> Agent:
        created = client.post(
            msg(org, "/members"),
            json={"name": name, "ai": True, "organization_id": org.id},
            headers=org.headers(),
        )
        assert created.status_code == 201, created.get_json()
        agent_id = created.get_json()["id"]
        body = config or {"sections": {"identity": "You are Bot."}}
        saved = client.post(mem(org, f"/members/{agent_id}/agent-config"), json=body, headers=org.headers())
        assert saved.status_code == 201, saved.get_json()
        if route:
            routed = client.put(
                msg(org, f"/addresses/{wa.address}/routing"),
                json={"target": "member", "member_id": agent_id},
                headers=org.headers(),
            )
            assert routed.status_code == 200, routed.get_json()
        return Agent(org, agent_id, wa.address)

    return _make


Say = Callable[..., Any]


@pytest.fixture
def say(deliver: Any, wa: Any) -> Say:  # noqa: F811
    """The customer writes (one webhook delivery; several texts arrive in one delivery)."""

    def _say(*texts: str, sender: str = CUSTOMER, timestamp: str | None = None) -> Any:
        messages = [wa_text(sender, text, timestamp=timestamp) for text in texts]
        response = deliver(wa_delivery(wa_change(wa.address, messages=messages)))
        assert response.status_code == 200
        return response

    return _say


def conversation_of(client: FlaskClient, org: Org, sender: str = CUSTOMER) -> dict[str, Any]:
    conversations = client.get(msg(org, "/conversations"), headers=org.headers()).get_json()["data"]
    # WhatsApp's Mexican 521 form is folded to +52 (core.phones): compare the last ten digits
    [found] = [c for c in conversations if c["contact_address"].endswith(sender[-10:])]
    return found


def messages_of(client: FlaskClient, org: Org, conversation_id: str) -> list[dict[str, Any]]:
    body = client.get(
        msg(org, f"/messages?conversation_id={conversation_id}&take=100"), headers=org.headers()
    ).get_json()
    return body["data"]


def sent_texts(meta: Any) -> list[str]:  # noqa: F811
    """Texts (and captions) the agent sent through the fake Meta server, in order."""
    texts = []
    for received in meta.sends():
        body = received.body or {}
        kind = body.get("type")
        if kind == "text":
            texts.append(body["text"]["body"])
        elif kind in ("image", "document", "video"):
            texts.append(body[kind].get("caption") or f"[{kind}]")
    return texts


def runs_of(client: FlaskClient, agent: Agent) -> list[dict[str, Any]]:
    response = client.get(agent.path(f"/members/{agent.id}/runs?limit=100"), headers=agent.org.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]


def new_id() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def make_human(client: FlaskClient, org: Org) -> Callable[..., str]:
    """A human member, online."""

    def _make(name: str, status: str = "online") -> str:
        created = client.post(
            msg(org, "/members"),
            json={"name": name, "ai": False, "organization_id": org.id},
            headers=org.headers(),
        )
        assert created.status_code == 201, created.get_json()
        member_id = created.get_json()["id"]
        changed = client.patch(
            mem(org, f"/members/{member_id}/status"), json={"status": status}, headers=org.headers()
        )
        assert changed.status_code == 200, changed.get_json()
        return str(member_id)

    return _make
