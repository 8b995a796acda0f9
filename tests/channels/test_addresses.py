"""Connecting organization addresses with the CLI and listing them with ``GET {msg}/addresses``."""

from __future__ import annotations

import json

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import text

from core.db import db
from core.environments import SANDBOX, environment_app
from tests.conftest import Org
from tests.fakes.fixtures import PAGE_ID, PHONE_NUMBER_ID, TOKEN, Connect, msg

NO_ACCESS = {"statusCode": 403, "message": "You do not have access to this organization"}


def test_connect_prints_the_address_and_lists_it_without_the_token(
    app: Flask, client: FlaskClient, org: Org, connect: Connect
) -> None:
    printed = connect(
        org,
        "whatsapp",
        PHONE_NUMBER_ID,
        "--phone-number",
        "+5215500000001",
        "--waba-id",
        "102290129340398",
        "--verified-name",
        "Acme MX",
    )
    assert printed["environments"] == ["live", "sandbox"]
    assert printed["has_access_token"] is True
    assert TOKEN not in json.dumps(printed)
    response = client.get(msg(org, "/addresses"), headers=org.headers())
    assert response.status_code == 200
    [address] = response.get_json()
    assert address["organization_id"] == org.id
    assert address["service"] == "whatsapp"
    assert address["address"] == PHONE_NUMBER_ID
    # the Mexican mobile "1" is folded: one number, one form
    assert address["extra"] == {
        "phone_number": "+525500000001",
        "verified_name": "Acme MX",
        "waba_id": "102290129340398",
    }
    assert address["status"] == "connected"
    assert TOKEN not in response.get_data(as_text=True)
    sandbox = client.get("/sandbox" + msg(org, "/addresses"), headers=org.headers("sandbox")).get_json()
    assert [a["address"] for a in sandbox] == [PHONE_NUMBER_ID]
    for environment_app_ in (app, environment_app(app, SANDBOX)):
        with environment_app_.app_context():
            stored = db.session.scalar(text("SELECT access_token_encrypted FROM organization_addresses"))
        assert stored and TOKEN not in stored  # encrypted at rest


def test_reconnecting_updates_the_address_and_another_organization_cannot_take_it(
    client: FlaskClient, runner: FlaskCliRunner, org: Org, other_org: Org, connect: Connect
) -> None:
    connect(org, "messenger", PAGE_ID, token=None)
    first = client.get(msg(org, "/addresses"), headers=org.headers()).get_json()
    assert first[0]["has_access_token"] is False
    connect(org, "messenger", PAGE_ID, "--verified-name", "Acme Page")
    [again] = client.get(msg(org, "/addresses"), headers=org.headers()).get_json()
    assert again["has_access_token"] is True
    assert again["extra"]["verified_name"] == "Acme Page"
    taken = runner.invoke(
        args=["channels", "connect", "--org", other_org.id, "--service", "messenger", "--address", PAGE_ID]
    )
    assert taken.exit_code != 0
    assert "connected to another organization" in taken.output
    assert client.get(msg(other_org, "/addresses"), headers=other_org.headers()).get_json() == []


def test_connect_validates_its_options(runner: FlaskCliRunner, org: Org) -> None:
    base = ["channels", "connect", "--org", org.id, "--address", "123"]
    bad_service = runner.invoke(args=[*base, "--service", "telegram"])
    assert bad_service.exit_code != 0 and "telegram" in bad_service.output
    bad_phone = runner.invoke(args=[*base, "--service", "whatsapp", "--phone-number", "12"])
    assert bad_phone.exit_code != 0 and "phone_number" in bad_phone.output
    bad_org = runner.invoke(
        args=["channels", "connect", "--org", "nope", "--service", "whatsapp", "--address", "1"]
    )
    assert bad_org.exit_code != 0 and "--org" in bad_org.output
    unknown_org = runner.invoke(
        args=[
            "channels",
            "connect",
            "--org",
            "00000000-0000-4000-8000-000000000000",
            "--service",
            "whatsapp",
            "--address",
            "1",
        ]
    )
    assert unknown_org.exit_code != 0 and "not found" in unknown_org.output


def test_access_token_can_come_from_standard_input(
    client: FlaskClient, runner: FlaskCliRunner, org: Org
) -> None:
    result = runner.invoke(
        args=[
            "channels",
            "connect",
            "--org",
            org.id,
            "--service",
            "instagram",
            "--address",
            "1784",
            "--access-token",
            "-",
            "--env",
            "live",
            "--json",
        ],
        input="EAAfromstdin\n",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["environments"] == ["live"]
    assert client.get(msg(org, "/addresses"), headers=org.headers()).get_json()[0]["has_access_token"]
    assert client.get("/sandbox" + msg(org, "/addresses"), headers=org.headers("sandbox")).get_json() == []


def test_addresses_need_a_key_and_the_callers_organization(
    client: FlaskClient, org: Org, other_org: Org
) -> None:
    assert client.get(msg(org, "/addresses")).get_json() == {
        "statusCode": 401,
        "message": "Invalid or expired token",
    }
    response = client.get(msg(other_org, "/addresses"), headers=org.headers())
    assert response.status_code == 403 and response.get_json() == NO_ACCESS


def test_channels_list_command(runner: FlaskCliRunner, org: Org, connect: Connect) -> None:
    connect(org, "whatsapp", PHONE_NUMBER_ID)
    listed = json.loads(runner.invoke(args=["channels", "list", "--org", org.id, "--json"]).stdout)
    assert [(a["service"], a["address"], a["status"]) for a in listed] == [
        ("whatsapp", PHONE_NUMBER_ID, "connected")
    ]
    assert TOKEN not in json.dumps(listed)


def test_token_key_rotation_keeps_old_tokens_readable(app: Flask, org: Org, connect: Connect) -> None:
    from cryptography.fernet import Fernet

    from blueprints.channels.crypto import decrypt_token, encrypt_token

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with app.app_context():
        app.config["CHANNEL_TOKEN_KEY"] = old
        sealed = encrypt_token("EAAsecret")
        app.config["CHANNEL_TOKEN_KEY"] = f"{new},{old}"
        assert decrypt_token(sealed) == "EAAsecret"
        assert decrypt_token(encrypt_token("EAAnext")) == "EAAnext"
