"""Pytest fixtures for the channel and messaging tests: the fake Graph server, connected addresses and
signed webhook deliveries. Imported by ``tests/channels/conftest.py`` and ``tests/messaging/conftest.py``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask.testing import FlaskClient, FlaskCliRunner

from tests.conftest import Org
from tests.fakes.meta_graph import FakeMetaGraph
from tests.fakes.meta_webhooks import encode, sign

APP_SECRET = "test-app-secret-0123456789"
VERIFY_TOKEN = "test-verify-token"
TOKEN = "EAAtestToken0123456789"
PHONE_NUMBER_ID = "106540352242922"
INSTAGRAM_ID = "17841400000000000"
PAGE_ID = "104000000000001"


@pytest.fixture(scope="session")
def meta_server() -> Iterator[FakeMetaGraph]:
    fake = FakeMetaGraph().start()
    yield fake
    fake.stop()


@pytest.fixture
def meta(meta_server: FakeMetaGraph) -> FakeMetaGraph:
    meta_server.reset()
    meta_server.tokens.add(TOKEN)
    return meta_server


@pytest.fixture
def app_config(app_config: dict[str, Any], meta: FakeMetaGraph) -> dict[str, Any]:
    return {
        **app_config,
        "META_GRAPH_URL": meta.graph_url,
        "META_APP_SECRET": APP_SECRET,
        "META_VERIFY_TOKEN": VERIFY_TOKEN,
        "META_HTTP_TIMEOUT": 5,
    }


def msg(org: Org, suffix: str) -> str:
    return f"/v2/messages/organizations/{org.id}{suffix}"


@dataclass(frozen=True)
class Channel:
    org: Org
    service: str
    address: str

    def path(self, suffix: str) -> str:
        return msg(self.org, suffix)


Connect = Callable[..., dict[str, Any]]


@pytest.fixture
def connect(runner: FlaskCliRunner) -> Connect:
    """``channels connect`` through the real CLI."""

    def _connect(
        org: Org, service: str, address: str, *options: str, token: str | None = TOKEN
    ) -> dict[str, Any]:
        args = ["channels", "connect", "--org", org.id, "--service", service, "--address", address, *options]
        if token:
            args += ["--access-token", token]
        result = runner.invoke(args=[*args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return _connect


@pytest.fixture
def wa(org: Org, connect: Connect) -> Channel:
    connect(
        org, "whatsapp", PHONE_NUMBER_ID, "--phone-number", "+525500000001", "--waba-id", "102290129340398"
    )
    return Channel(org, "whatsapp", PHONE_NUMBER_ID)


@pytest.fixture
def ig(org: Org, connect: Connect) -> Channel:
    connect(org, "instagram", INSTAGRAM_ID)
    return Channel(org, "instagram", INSTAGRAM_ID)


@pytest.fixture
def fb(org: Org, connect: Connect) -> Channel:
    connect(org, "messenger", PAGE_ID)
    return Channel(org, "messenger", PAGE_ID)


Deliver = Callable[..., Any]


@pytest.fixture
def deliver(client: FlaskClient) -> Deliver:
    """POST a delivery to ``/webhooks/meta`` signed with the app secret, as Meta does."""

    def _deliver(
        payload: dict[str, Any] | bytes,
        *,
        secret: str = APP_SECRET,
        signature: str | None = None,
        signed: bool = True,
        prefix: str = "",
    ) -> Any:
        body = payload if isinstance(payload, bytes) else encode(payload)
        headers = {"Content-Type": "application/json"}
        if signed:
            headers["X-Hub-Signature-256"] = signature or sign(body, secret)
        return client.post(f"{prefix}/webhooks/meta", data=body, headers=headers)

    return _deliver
