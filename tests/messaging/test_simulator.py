"""The simulator provider: the sandbox and the demo organization send through it; statuses advance
through the job queue; magic recipient numbers fail the documented ways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from core.demo import DEMO_ORGANIZATION_ID
from tests.conftest import Org
from tests.fakes.fixtures import Connect
from tests.fakes.meta_graph import FakeMetaGraph

SIM_ADDRESS = "100000000000009"


def sandbox(org: Org, suffix: str) -> str:
    return f"/sandbox/v2/messages/organizations/{org.id}{suffix}"


@pytest.fixture
def sim(org: Org, connect: Connect, runner: FlaskCliRunner) -> Org:
    connect(org, "whatsapp", SIM_ADDRESS, "--provider", "simulator", token=None)
    return org


def inbound(runner: FlaskCliRunner, org: Org, sender: str, env: str = "sandbox") -> None:
    result = runner.invoke(
        args=[
            "channels",
            "simulate-inbound",
            "--org",
            org.id,
            "--address",
            SIM_ADDRESS,
            "--from",
            sender,
            "--text",
            "hola",
            "--name",
            "Tester",
            "--env",
            env,
        ]
    )
    assert result.exit_code == 0, result.output


def text(to: str, prefix: str = "/sandbox", org: Org | None = None) -> dict[str, Any]:
    return {
        "organization_address": SIM_ADDRESS,
        "service": "whatsapp",
        "contact_address": to,
        "direction": "outgoing",
        "content": {"kind": "text", "text": "Hi from the simulator"},
    }


def test_sandbox_send_is_accepted_and_advances_to_read(
    client: FlaskClient, runner: FlaskCliRunner, sim: Org, meta: FakeMetaGraph
) -> None:
    inbound(runner, sim, "525511112222")
    response = client.post(
        sandbox(sim, "/messages"), json=text("525511112222"), headers=sim.headers("sandbox")
    )
    assert response.status_code == 201, response.get_json()
    sent = response.get_json()
    assert set(sent["status"]) == {"pending", "accepted"}  # the response tells what happened so far
    stored = client.get(sandbox(sim, f"/messages/{sent['id']}"), headers=sim.headers("sandbox")).get_json()
    assert stored["current_status"] == "read"  # jobs run inline in tests
    assert set(stored["status"]) == {"pending", "accepted", "sent", "delivered", "read"}
    assert meta.received == []  # never reached Meta


def test_the_sandbox_uses_the_simulator_even_for_meta_addresses(
    client: FlaskClient, runner: FlaskCliRunner, org: Org, connect: Connect, meta: FakeMetaGraph
) -> None:
    connect(org, "whatsapp", SIM_ADDRESS)  # provider meta, with a token
    inbound(runner, org, "525511112222")
    response = client.post(
        sandbox(org, "/messages"), json=text("525511112222"), headers=org.headers("sandbox")
    )
    assert response.status_code == 201
    assert response.get_json()["external_id"].startswith("wamid.SIM")
    assert meta.received == []


@pytest.mark.parametrize(
    ("number", "status", "code"),
    [("16505550101", 400, 131047), ("16505550103", 429, 130429), ("16505550104", 400, 190)],
)
def test_magic_numbers_fail_at_send(
    client: FlaskClient, runner: FlaskCliRunner, sim: Org, number: str, status: int, code: int
) -> None:
    inbound(runner, sim, number)  # the desk sees an open window; the simulator refuses anyway
    response = client.post(sandbox(sim, "/messages"), json=text(number), headers=sim.headers("sandbox"))
    assert response.status_code == status
    assert response.get_json()["message"] == "Message failed to send"
    failed = client.get(
        sandbox(sim, f"/messages/{response.headers['X-Message-Id']}"), headers=sim.headers("sandbox")
    ).get_json()
    assert failed["status"]["error"]["code"] == code and failed["status"]["error"]["provider"] == "simulator"


def test_undeliverable_number_fails_after_acceptance(
    client: FlaskClient, runner: FlaskCliRunner, sim: Org
) -> None:
    inbound(runner, sim, "16505550102")
    response = client.post(
        sandbox(sim, "/messages"), json=text("16505550102"), headers=sim.headers("sandbox")
    )
    assert response.status_code == 201
    stored = client.get(
        sandbox(sim, f"/messages/{response.get_json()['id']}"), headers=sim.headers("sandbox")
    ).get_json()
    assert stored["current_status"] == "failed" and stored["status"]["error"]["code"] == 131026


def test_replying_number_answers_back(client: FlaskClient, runner: FlaskCliRunner, sim: Org) -> None:
    inbound(runner, sim, "16505550105")
    response = client.post(
        sandbox(sim, "/messages"), json=text("16505550105"), headers=sim.headers("sandbox")
    )
    conversation_id = response.get_json()["conversation_id"]
    listed = client.get(
        sandbox(sim, "/messages"),
        headers=sim.headers("sandbox"),
        query_string={"conversation_id": conversation_id},
    ).get_json()["data"]
    assert [(m["direction"], m["content"]["text"]) for m in listed][-1] == ("incoming", "Got it, thanks!")


def test_simulator_templates(client: FlaskClient, sim: Org) -> None:
    body = {
        "organization_address": SIM_ADDRESS,
        "to": "+525511112222",
        "meta_template_id": "sim_order_confirmation",
        "components": [
            {
                "type": "body",
                "parameters": [
                    {"type": "text", "parameter_name": "customer_name", "text": "Ana"},
                    {"type": "text", "parameter_name": "order_number", "text": "42"},
                ],
            }
        ],
    }
    ok = client.post(sandbox(sim, "/messages/send-template"), json=body, headers=sim.headers("sandbox"))
    assert ok.status_code == 201 and ok.get_json()["template"]["text"].startswith("Hi Ana, your order 42")
    paused = client.post(
        sandbox(sim, "/messages/send-template"),
        json={**body, "meta_template_id": "sim_paused_promo", "components": []},
        headers=sim.headers("sandbox"),
    )
    assert paused.status_code == 400
    missing = client.post(
        sandbox(sim, "/messages/send-template"),
        json={**body, "meta_template_id": "nope"},
        headers=sim.headers("sandbox"),
    )
    assert missing.get_json() == {"statusCode": 404, "message": "Failed to get template from Meta"}


def test_simulate_inbound_refuses_real_meta_addresses_in_production(
    runner: FlaskCliRunner, org: Org, connect: Connect
) -> None:
    connect(org, "whatsapp", SIM_ADDRESS)
    result = runner.invoke(
        args=[
            "channels",
            "simulate-inbound",
            "--org",
            org.id,
            "--address",
            SIM_ADDRESS,
            "--from",
            "525511112222",
            "--text",
            "x",
        ]
    )
    assert result.exit_code != 0 and "simulator" in result.output


def test_demo_seed_connects_a_simulator_number_with_conversations(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, meta: FakeMetaGraph
) -> None:
    first = runner.invoke(args=["demo", "seed"])
    assert first.exit_code == 0, first.output
    assert runner.invoke(args=["demo", "seed"]).output == first.output
    key = next(line.split(": ")[1] for line in first.output.splitlines() if "live API key" in line)
    base = f"/v2/messages/organizations/{DEMO_ORGANIZATION_ID}"
    addresses = client.get(f"{base}/addresses", headers={"X-API-Key": key}).get_json()
    assert {a["service"] for a in addresses} == {"whatsapp", "instagram", "messenger"}
    assert all(a["provider"] == "simulator" and a["status"] == "connected" for a in addresses)
    address = next(a for a in addresses if a["service"] == "whatsapp")
    messages = client.get(
        f"{base}/messages", headers={"X-API-Key": key}, query_string={"take": 200}
    ).get_json()
    # 23 messages on three channels and the template the inbox seeder sent; a second seed stored nothing new
    assert messages["total"] == 24
    kinds = {m["content"]["kind"] for m in messages["data"] if m.get("content")}
    assert {"text", "image", "document", "location"} <= kinds
    contacts = client.get(f"{base}/contacts", headers={"X-API-Key": key}).get_json()
    assert contacts["total"] == 10
    reply = client.post(
        f"{base}/messages",
        json={
            "organization_address": address["address"],
            "service": "whatsapp",
            "contact_address": "525512345678",
            "direction": "outgoing",
            "content": {"kind": "text", "text": "Te lo activo ahora"},
        },
        headers={"X-API-Key": key},
    )
    assert reply.status_code == 201, reply.get_json()
    assert meta.received == []  # the demo organization never reaches Meta
    assert json.dumps(address).count("token") == 1  # only has_access_token


class TestQueuedJobs:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
        # its own instance folder: the embedded queue file must not carry jobs between tests
        return {**app_config, "JOBS_MODE": "embedded", "INSTANCE_PATH": str(tmp_path)}

    def test_statuses_are_scheduled_seconds_apart(
        self, app: Flask, client: FlaskClient, runner: FlaskCliRunner, sim: Org
    ) -> None:
        from core.jobs import queue

        inbound(runner, sim, "525511112222")
        response = client.post(
            sandbox(sim, "/messages"), json=text("525511112222"), headers=sim.headers("sandbox")
        )
        assert response.status_code == 201
        # queued with an eta: the consumer holds each until its time (sent, delivered, read)
        waiting = [task for task in queue().pending() if task.eta is not None]
        assert len(waiting) == 3 and len({task.eta for task in waiting}) == 3
        stored = client.get(
            sandbox(sim, f"/messages/{response.get_json()['id']}"), headers=sim.headers("sandbox")
        ).get_json()
        assert stored["current_status"] == "accepted"  # nothing ran yet
        queue().flush()
