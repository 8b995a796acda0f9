"""The commands people and tests use to set up the product: setup, orgs, keys, demo seed."""

from __future__ import annotations

import json

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import text

from core.db import db
from core.demo import DEMO_ORGANIZATION_ID
from core.environments import LIVE, SANDBOX, environment_app


def test_orgs_create_prints_one_json_object_and_creates_both_stores(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner
) -> None:
    result = runner.invoke(
        args=["orgs", "create", "--name", "Initech", "--products", "SIM,TRAVEL_ESIM", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"organization_id", "name", "products", "api_keys"}
    assert data["name"] == "Initech"
    assert data["products"] == ["SIM", "TRAVEL_ESIM"]
    assert data["api_keys"]["live"].startswith("sk_live_")
    assert data["api_keys"]["sandbox"].startswith("sk_test_")
    live = client.get("/v1/organizations", headers={"X-API-Key": data["api_keys"]["live"]}).get_json()
    sandbox = client.get(
        "/sandbox/v1/organizations", headers={"X-API-Key": data["api_keys"]["sandbox"]}
    ).get_json()
    assert live[0]["id"] == sandbox[0]["id"] == data["organization_id"]
    assert live[0]["products"] == ["SIM", "TRAVEL_ESIM"]


def test_orgs_create_rejects_unknown_products(runner: FlaskCliRunner) -> None:
    result = runner.invoke(args=["orgs", "create", "--name", "X", "--products", "SIM,PHONE", "--json"])
    assert result.exit_code != 0
    assert "PHONE" in result.output


def test_keys_are_stored_hashed(app: Flask, org) -> None:
    with app.app_context():
        stored = " ".join(str(row) for row in db.session.execute(text("SELECT * FROM api_keys")))
    assert org.live_key not in stored
    assert org.live_key[:16] in stored  # the visible prefix only


def test_setup_is_idempotent(runner: FlaskCliRunner) -> None:
    for _ in range(2):
        result = runner.invoke(args=["setup"])
        assert result.exit_code == 0, result.output


def test_demo_seed_is_idempotent_and_prints_working_keys(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner
) -> None:
    first = runner.invoke(args=["demo", "seed"])
    second = runner.invoke(args=["demo", "seed"])
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    keys = dict(
        line.strip().split(" API key: ") for line in first.output.splitlines() if " API key: " in line
    )
    live = client.get("/v1/organizations", headers={"X-API-Key": keys["live"]}).get_json()
    assert live[0]["id"] == str(DEMO_ORGANIZATION_ID)
    assert client.get("/sandbox/v1/organizations", headers={"X-API-Key": keys["sandbox"]}).status_code == 200
    for environment in (LIVE, SANDBOX):
        with environment_app(app, environment).app_context():
            assert db.session.scalar(text("SELECT count(*) FROM organizations")) == 1
            assert db.session.scalar(text("SELECT count(*) FROM api_keys")) == 1
