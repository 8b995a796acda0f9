"""``voice connect``: the auth token is encrypted at rest and never shown; Twilio needs credentials; a
token Twilio refuses makes a call 502 with Twilio's error code and stores nothing."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select

from blueprints.channels.crypto import decrypt_token
from blueprints.voice.models import VoiceNumber
from core.db import db
from tests.conftest import Org
from tests.voice.conftest import ACCOUNT_SID, AUTH_TOKEN, NUMBER, voice
from tests.voice.fake_twilio import FakeTwilio


def test_the_token_is_encrypted_at_rest_and_never_shown(
    app: Flask, runner: FlaskCliRunner, org: Org, twilio_number: dict[str, Any]
) -> None:
    assert AUTH_TOKEN not in str(twilio_number)
    assert twilio_number["account_sid"] == ACCOUNT_SID and twilio_number["env"] == "live"
    with app.app_context():
        stored = db.session.scalars(select(VoiceNumber).where(VoiceNumber.number == NUMBER)).one()
        assert stored.auth_token_encrypted and AUTH_TOKEN not in stored.auth_token_encrypted
        assert decrypt_token(stored.auth_token_encrypted) == AUTH_TOKEN
    listed = runner.invoke(
        args=["voice", "connect", "--org", org.id, "--number", NUMBER, "--provider", "twilio"]
    )
    assert listed.exit_code == 0 and AUTH_TOKEN not in listed.output  # reconnecting keeps the stored token


def test_twilio_needs_credentials_and_a_valid_number(runner: FlaskCliRunner, org: Org) -> None:
    missing = runner.invoke(
        args=["voice", "connect", "--org", org.id, "--number", NUMBER, "--provider", "twilio"]
    )
    assert missing.exit_code != 0 and "auth_token" in missing.output
    invalid = runner.invoke(
        args=["voice", "connect", "--org", org.id, "--number", "123", "--provider", "simulator"]
    )
    assert invalid.exit_code != 0 and "number" in invalid.output


def test_a_number_belongs_to_one_organization(runner: FlaskCliRunner, org: Org, other_org: Org) -> None:
    args = ["voice", "connect", "--number", NUMBER, "--provider", "simulator"]
    assert runner.invoke(args=[*args, "--org", org.id]).exit_code == 0
    taken = runner.invoke(args=[*args, "--org", other_org.id])
    assert taken.exit_code != 0 and "another organization" in taken.output


def test_a_token_twilio_refuses_is_a_502_with_its_code(
    client: FlaskClient, org: Org, twilio: FakeTwilio, twilio_number: dict[str, Any]
) -> None:
    twilio.accounts[ACCOUNT_SID] = "a-token-rotated-at-twilio"
    response = client.post(f"{voice(org)}/calls", json={"to": "+525512345678"}, headers=org.headers())
    assert response.status_code == 502
    assert "20003" in response.get_json()["message"]
    assert client.get(f"{voice(org)}/calls", headers=org.headers()).get_json()["total"] == 0
