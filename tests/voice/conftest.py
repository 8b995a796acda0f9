"""Fixtures of the voice tests: the fake Twilio server, settings pointing at it, a connected number and
webhooks signed with the ``twilio`` package (Twilio's SDK, a test dependency), as Twilio signs them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient, FlaskCliRunner
from twilio.request_validator import RequestValidator

from tests.conftest import Org, _config
from tests.support.stores import Stores
from tests.voice.fake_twilio import FakeTwilio

PUBLIC_BASE_URL = "https://voice.agentdesk.test"
ACCOUNT_SID = "AC" + "0123456789abcdef" * 2
AUTH_TOKEN = "f0e1d2c3b4a5968778695a4b3c2d1e0f"
NUMBER = "+525550001000"
STATUS_PATH = "/webhooks/twilio/voice/status"


@pytest.fixture(scope="session")
def twilio_server() -> Iterator[FakeTwilio]:
    server = FakeTwilio().start()
    yield server
    server.stop()


@pytest.fixture
def twilio(twilio_server: FakeTwilio) -> Iterator[FakeTwilio]:
    twilio_server.reset()
    twilio_server.accounts[ACCOUNT_SID] = AUTH_TOKEN
    yield twilio_server


@pytest.fixture
def app_config(stores: Stores, shared_instance: Path, twilio_server: FakeTwilio) -> dict[str, Any]:
    return {
        **_config(stores, shared_instance),
        "TWILIO_API_BASE_URL": twilio_server.base_url,
        "PUBLIC_BASE_URL": PUBLIC_BASE_URL,
        "VOICE_SIMULATOR_STEP_SECONDS": 0,
    }


def connect(runner: FlaskCliRunner, org: Org, *args: str, token_stdin: str | None = None) -> dict[str, Any]:
    result = runner.invoke(args=["voice", "connect", "--org", org.id, *args, "--json"], input=token_stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def twilio_number(runner: FlaskCliRunner, org: Org, twilio: FakeTwilio) -> dict[str, Any]:
    return connect(
        runner,
        org,
        "--number",
        NUMBER,
        "--provider",
        "twilio",
        "--account-sid",
        ACCOUNT_SID,
        "--auth-token",
        "-",
        token_stdin=AUTH_TOKEN + "\n",
    )


def sign(form: dict[str, str], token: str = AUTH_TOKEN, path: str = STATUS_PATH) -> str:
    return str(RequestValidator(token).compute_signature(PUBLIC_BASE_URL + path, form))


@pytest.fixture
def callback(client: FlaskClient) -> Callable[..., Any]:
    """Send a status callback as Twilio would: form-encoded, signed over the public URL."""

    def _send(sid: str, status: str, sequence: int, token: str = AUTH_TOKEN, **extra: str) -> Any:
        form = {
            "CallSid": sid,
            "AccountSid": ACCOUNT_SID,
            "From": NUMBER,
            "To": "+525512345678",
            "CallStatus": status,
            "Direction": "outbound-api",
            "CallbackSource": "call-progress-events",
            "SequenceNumber": str(sequence),
            "Timestamp": "Thu, 26 Nov 2026 21:00:00 +0000",
            **extra,
        }
        return client.post(STATUS_PATH, data=form, headers={"X-Twilio-Signature": sign(form, token)})

    return _send


def voice(org: Org, env: str = "live") -> str:
    return f"{'/sandbox' if env == 'sandbox' else ''}/v2/voice/organizations/{org.id}"
