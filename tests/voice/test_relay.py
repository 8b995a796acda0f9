"""Inbound calls answered by an AI agent over ConversationRelay, end to end on loopback.

The whole product is served by werkzeug on a loopback port; a test client speaks ConversationRelay over a
real WebSocket (``simple_websocket.Client``) as Twilio would after reading our TwiML, and the agent's
model is the fake OpenAI-compatible server (``tests/support/fake_llm.py``). Twilio's webhooks (the
inbound call, the relay's action URL, the status callback) are signed with the number's auth token."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from html import unescape
from typing import Any
from urllib.parse import urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from simple_websocket import Client, ConnectionClosed
from werkzeug.serving import make_server

from core.environments import LIVE, environment_app
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM
from tests.support.smtp_server import SmtpServer, smtp_server
from tests.voice.conftest import ACCOUNT_SID, AUTH_TOKEN, NUMBER, PUBLIC_BASE_URL, sign, voice

CALLER = "+525511112222"
SALES = "+525512345678"
INCOMING = "/webhooks/twilio/voice/incoming"
RELAY_ENDED = "/webhooks/twilio/voice/relay-ended"
STATUS = "/webhooks/twilio/voice/status"
SUMMARY = "El cliente preguntó por los envíos y quiso comprar tres SIM; se le transfirió a ventas."
CONFIG = {
    "sections": {"identity": "Eres Sofía, de Acme."},
    "tools": {"transfer_to_human": {"enabled": True}},
    "voice": "Google.es-US-Neural2-A",
    "call_transfers": [
        {
            "name": "Ventas",
            "condition": "the caller wants to buy",
            "target": SALES,
            "announce_message": "Te comunico con ventas.",
        }
    ],
    "notifications": {"end_of_call": {"email": ["ops@example.test"]}},
}


@pytest.fixture(scope="module")
def llm_server() -> Iterator[FakeLLM]:
    fake = FakeLLM().start()
    yield fake
    fake.stop()


@pytest.fixture
def llm(app: Flask, llm_server: FakeLLM) -> FakeLLM:
    llm_server.reset()
    environment_app(app, LIVE).config.update(
        LLM_BASE_URL=llm_server.base_url,
        LLM_MODEL="fake-model-1",
        LLM_API_KEY="sk-test",
        LLM_TIMEOUT_SECONDS=5,
        LLM_MAX_RETRIES=0,
    )
    return llm_server


@pytest.fixture
def mailbox(app: Flask) -> Iterator[SmtpServer]:
    """A real SMTP server on loopback: where the end_of_call e-mail is delivered."""
    with smtp_server() as smtp:
        environment_app(app, LIVE).config.update(
            SMTP_HOST=smtp.host, SMTP_PORT=smtp.port, SMTP_STARTTLS=False, SMTP_TIMEOUT_SECONDS=2
        )
        yield smtp


@pytest.fixture
def server(app: Flask) -> Iterator[str]:
    """The whole product (both environments) on a loopback port, served in threads like ``serve``."""
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join(timeout=5)


def mem(org: Org, suffix: str) -> str:
    return f"/v1/members/organizations/{org.id}{suffix}"


def make_member(client: FlaskClient, org: Org, *, ai: bool, name: str, **fields: Any) -> str:
    created = client.post(
        f"/v2/messages/organizations/{org.id}/members",
        json={"name": name, "ai": ai, "organization_id": org.id, **fields},
        headers=org.headers(),
    )
    assert created.status_code == 201, created.get_json()
    return str(created.get_json()["id"])


def make_agent(client: FlaskClient, org: Org, config: dict[str, Any] = CONFIG) -> str:
    agent_id = make_member(client, org, ai=True, name="Sofía")
    saved = client.post(mem(org, f"/members/{agent_id}/agent-config"), json=config, headers=org.headers())
    assert saved.status_code == 201, saved.get_json()
    return agent_id


def route(client: FlaskClient, org: Org, number_id: str, **body: str) -> None:
    response = client.patch(voice(org) + f"/numbers/{number_id}", json=body, headers=org.headers())
    assert response.status_code == 200, response.get_json()


def twilio_post(client: FlaskClient, path: str, form: dict[str, str], token: str = AUTH_TOKEN) -> Any:
    """A webhook as Twilio sends it: form-encoded, signed over the public URL (with its query)."""
    return client.post(path, data=form, headers={"X-Twilio-Signature": sign(form, token, path)})


def incoming_form(call_sid: str) -> dict[str, str]:
    return {
        "CallSid": call_sid,
        "AccountSid": ACCOUNT_SID,
        "From": CALLER,
        "To": NUMBER,
        "CallStatus": "ringing",
        "Direction": "inbound",
        "ApiVersion": "2010-04-01",
    }


def attribute(twiml: str, tag: str, name: str) -> str:
    found = re.search(rf"<{tag}\b[^>]*\b{name}=\"([^\"]*)\"", twiml)
    assert found, twiml
    return unescape(found.group(1))


class RelayClient:
    """Twilio's side of ConversationRelay: JSON text frames over a real WebSocket."""

    def __init__(self, url: str) -> None:
        self.ws = Client.connect(url)

    def send(self, **frame: Any) -> None:
        self.ws.send(json.dumps(frame))

    def receive(self, timeout: float = 10) -> dict[str, Any] | None:
        raw = self.ws.receive(timeout=timeout)
        return None if raw is None else json.loads(raw)

    def answer(self) -> list[str]:
        """The tokens of one answer, up to its ``last: true``."""
        tokens: list[str] = []
        while True:
            frame = self.receive()
            assert frame is not None and frame["type"] == "text", frame
            if frame["last"]:
                return tokens
            tokens.append(frame["token"])

    def drain(self, quiet: float = 0.5) -> list[dict[str, Any]]:
        frames = []
        while (frame := self.receive(timeout=quiet)) is not None:
            frames.append(frame)
        return frames


def open_relay(twiml: str, server: str) -> RelayClient:
    url = urlsplit(attribute(twiml, "ConversationRelay", "url"))
    assert url.scheme == "wss" and url.netloc == urlsplit(PUBLIC_BASE_URL).netloc
    return RelayClient(f"ws://{server}{url.path}?{url.query}")


def setup_frame(call_sid: str, call_id: str) -> dict[str, Any]:
    return {
        "type": "setup",
        "sessionId": "VX" + uuid.uuid4().hex,
        "accountSid": ACCOUNT_SID,
        "parentCallSid": "",
        "callSid": call_sid,
        "from": CALLER,
        "to": NUMBER,
        "forwardedFrom": "",
        "callType": "PSTN",
        "callerName": "",
        "direction": "inbound",
        "callStatus": "RINGING",
        "customParameters": {"call_id": call_id},
    }


def wait_for(predicate: Any, timeout: float = 10) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def the_call(client: FlaskClient, org: Org, call_id: str) -> dict[str, Any]:
    response = client.get(voice(org) + f"/calls/{call_id}", headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def test_an_inbound_call_is_answered_by_the_agent_and_transferred_by_a_rule(
    client: FlaskClient,
    org: Org,
    other_org: Org,
    twilio_number: dict[str, Any],
    llm: FakeLLM,
    server: str,
    mailbox: SmtpServer,
) -> None:
    agent_id = make_agent(client, org)
    route(client, org, twilio_number["id"], agent_id=agent_id)
    llm.reply("Hola, soy Sofía. ¿En qué te ayudo?")
    # slow enough that the caller speaks over it while it streams (10 words, 0.3 s apart)
    llm.reply("Claro, los envíos tardan tres días y cuestan cien pesos.", word_delay=0.3)
    llm.call_tools(("transfer_to_human", {"note": "Quiere comprar 3 SIM", "rule": "Ventas"}))
    llm.reply(SUMMARY)

    answered = twilio_post(client, INCOMING, incoming_form("CA" + "1" * 32))
    assert answered.status_code == 200 and answered.mimetype == "text/xml"
    twiml = answered.get_data(as_text=True)
    [call] = client.get(voice(org) + "/calls", headers=org.headers()).get_json()["data"]
    assert call["direction"] == "inbound" and call["status"] == "ringing" and call["agent_id"] == agent_id
    assert (call["from"], call["to"], call["provider_call_id"]) == (CALLER, NUMBER, "CA" + "1" * 32)
    assert attribute(twiml, "Connect", "action") == f"{PUBLIC_BASE_URL}{RELAY_ENDED}?call={call['id']}"
    assert attribute(twiml, "ConversationRelay", "voice") == "Google.es-US-Neural2-A"
    assert attribute(twiml, "ConversationRelay", "language") == "es-MX"
    assert f'<Parameter name="call_id" value="{call["id"]}"/>' in twiml

    relay = open_relay(twiml, server)
    relay.send(**setup_frame("CA" + "1" * 32, call["id"]))
    relay.send(type="prompt", voicePrompt="Hola,", lang="es-MX", last=False)
    relay.send(type="prompt", voicePrompt="buenas tardes", lang="es-MX", last=True)
    greeting = relay.answer()
    assert len(greeting) > 1 and "".join(greeting) == "Hola, soy Sofía. ¿En qué te ayudo?"
    assert the_call(client, org, call["id"])["status"] == "in_progress"

    relay.send(type="prompt", voicePrompt="¿Cuánto tardan los envíos?", lang="es-MX", last=True)
    first, second = relay.receive(), relay.receive()
    assert first and second and first["type"] == second["type"] == "text"
    said = first["token"] + second["token"]  # the caller speaks over the agent here
    relay.send(type="interrupt", utteranceUntilInterrupt=said, durationUntilInterruptMs=900)
    late = relay.drain()  # at most the piece already on the wire when the interrupt was read
    assert len(late) <= 1 and all(not frame["last"] for frame in late)  # the answer stopped there
    relay.send(type="dtmf", digit="1")  # heard as a turn; the model's next answer is the transfer
    assert relay.answer() == ["Te comunico con ventas."]
    end = relay.receive()
    assert end is not None and end["type"] == "end"
    assert json.loads(end["handoffData"]) == {
        "call_id": call["id"],
        "target": SALES,
        "rule": "Ventas",
        "reason": "Quiere comprar 3 SIM",
    }
    with pytest.raises(ConnectionClosed):
        relay.receive(timeout=5)  # the relay is over: the server closed it

    # Twilio then asks the <Connect action> URL what to do: dial the rule's target.
    ended = twilio_post(
        client,
        f"{RELAY_ENDED}?call={call['id']}",
        {
            "CallSid": "CA" + "1" * 32,
            "AccountSid": ACCOUNT_SID,
            "CallStatus": "in-progress",
            "SessionStatus": "ended",
            "HandoffData": end["handoffData"],
        },
    )
    assert ended.status_code == 200
    assert f'<Dial callerId="{NUMBER}"><Number>{SALES}</Number></Dial>' in ended.get_data(as_text=True)

    stored = the_call(client, org, call["id"])
    assert [(line["speaker"], line["text"]) for line in stored["transcript"]] == [
        ("caller", "Hola, buenas tardes"),
        ("agent", "Hola, soy Sofía. ¿En qué te ayudo?"),
        ("caller", "¿Cuánto tardan los envíos?"),
        ("agent", said.strip()),
        ("caller", "[DTMF 1]"),
        ("agent", "Te comunico con ventas."),
    ]
    assert stored["summary"] == SUMMARY
    assert "¿Cuánto tardan los envíos?" in llm.requests[3]["messages"][1]["content"]
    transfer = stored["transfer"]
    assert {k: transfer[k] for k in ("target", "target_type", "rule", "reason", "dial")} == {
        "target": SALES,
        "target_type": "phone",
        "rule": "Ventas",
        "reason": "Quiere comprar 3 SIM",
        "dial": SALES,
    }
    # the person's leg ends the call: its reason is the transfer
    form = {"CallSid": "CA" + "1" * 32, "AccountSid": ACCOUNT_SID, "CallStatus": "completed"}
    form |= {"SequenceNumber": "0", "CallDuration": "95"}
    assert twilio_post(client, STATUS, form).status_code == 204
    finished = the_call(client, org, call["id"])
    assert (finished["status"], finished["ended_reason"], finished["duration_seconds"]) == (
        "completed",
        "transferred",
        95,
    )

    response = client.get(
        mem(org, f"/members/{agent_id}/notifications/deliveries"), headers=org.headers()
    ).get_json()
    [delivery] = response["data"]
    assert delivery["trigger"] == "end_of_call" and delivery["target"] == "ops@example.test"
    data = delivery["payload"]["data"]
    assert data["call_id"] == call["id"] and data["summary"] == SUMMARY and data["outcome"] == "handed_off"
    assert data["transfer"]["target"] == SALES and data["contact_address"] == CALLER
    [mail] = wait_for(lambda: mailbox.to("ops@example.test"))  # delivered by its job, through SMTP
    assert "call ended" in mail.subject and SUMMARY in mail.text

    # another organization's key never sees the call
    other = client.get(voice(other_org) + f"/calls/{call['id']}", headers=other_org.headers())
    assert other.status_code == 404


def test_a_caller_who_hangs_up_ends_the_call_with_an_offline_summary(
    client: FlaskClient, org: Org, twilio_number: dict[str, Any], server: str
) -> None:
    """No model configured: the agent answers from the knowledge base (or not at all), the call ends
    when Twilio closes the relay, and the summary is the offline one."""
    agent_id = make_agent(client, org, {**CONFIG, "call_transfers": []})
    route(client, org, twilio_number["id"], agent_id=agent_id)
    twiml = twilio_post(client, INCOMING, incoming_form("CA" + "2" * 32)).get_data(as_text=True)
    call_id = attribute(twiml, "Parameter", "value")
    relay = open_relay(twiml, server)
    relay.send(**setup_frame("CA" + "2" * 32, call_id))
    relay.send(type="prompt", voicePrompt="gracias", lang="es-MX", last=True)
    assert relay.drain() == []  # small talk: no answer, no hand-off
    second = open_relay(twiml, server)  # the same token again, while the call's relay is running
    second.send(**setup_frame("CA" + "2" * 32, call_id))
    with pytest.raises(ConnectionClosed):
        second.receive(timeout=5)  # refused: one agent session per call
    relay.ws.close()  # the caller hung up

    stored = wait_for(lambda: (c := the_call(client, org, call_id))["summary"] and c)
    assert stored["status"] == "completed" and stored["ended_reason"] == "completed"
    assert stored["transcript"][0]["speaker"] == "caller" and stored["transcript"][0]["text"] == "gracias"
    assert stored["summary"].startswith('The caller said: "gracias".') and stored["transfer"] is None
    # Twilio's action URL after a relay without hand-off: hang up
    ended = twilio_post(
        client, f"{RELAY_ENDED}?call={call_id}", {"CallSid": "CA" + "2" * 32, "AccountSid": ACCOUNT_SID}
    )
    assert "<Hangup/>" in ended.get_data(as_text=True)


def test_refused_signatures_and_tokens_change_nothing(
    app: Flask, client: FlaskClient, org: Org, twilio_number: dict[str, Any]
) -> None:
    agent_id = make_agent(client, org)
    route(client, org, twilio_number["id"], agent_id=agent_id)
    form = incoming_form("CA" + "3" * 32)
    bad = client.post(INCOMING, data=form, headers={"X-Twilio-Signature": "bm90IGEgc2lnbmF0dXJl"})
    assert bad.status_code == 403
    assert client.post(INCOMING, data=form).status_code == 403  # no signature at all
    assert twilio_post(client, INCOMING, form, token="not-the-token").status_code == 403
    unknown = {**form, "To": "+525550009999"}
    assert twilio_post(client, INCOMING, unknown).status_code == 403  # not our number
    assert client.get(voice(org) + "/calls", headers=org.headers()).get_json()["total"] == 0

    twiml = twilio_post(client, INCOMING, form).get_data(as_text=True)
    call_id = attribute(twiml, "Parameter", "value")
    token = urlsplit(attribute(twiml, "ConversationRelay", "url")).query.removeprefix("token=")
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade"}
    assert client.get("/voice/relay?token=forged", headers=upgrade).status_code == 403
    assert client.get(f"/voice/relay?token={token[:-2]}xx", headers=upgrade).status_code == 403
    # the action URL for a call that is not the one Twilio names, or unsigned: refused
    ended_form = {"CallSid": "CA" + "9" * 32, "AccountSid": ACCOUNT_SID}
    assert twilio_post(client, f"{RELAY_ENDED}?call={call_id}", ended_form).status_code == 403
    ended_form["CallSid"] = "CA" + "3" * 32
    assert client.post(f"{RELAY_ENDED}?call={call_id}", data=ended_form).status_code == 403
    assert twilio_post(client, f"{RELAY_ENDED}?call={uuid.uuid4()}", ended_form).status_code == 403
    assert the_call(client, org, call_id)["status"] == "ringing"


def test_a_person_without_a_phone_gets_an_apology_and_no_route_is_rejected(
    client: FlaskClient, org: Org, twilio_number: dict[str, Any]
) -> None:
    member_id = make_member(client, org, ai=False, name="Ana")
    route(client, org, twilio_number["id"], member_id=member_id)
    twiml = twilio_post(client, INCOMING, incoming_form("CA" + "4" * 32)).get_data(as_text=True)
    assert "<Say" in twiml and twiml.endswith("<Hangup/></Response>") and "<Dial" not in twiml
    [call] = client.get(voice(org) + "/calls", headers=org.headers()).get_json()["data"]
    assert call["member_id"] == member_id and call["agent_id"] is None
    assert (call["status"], call["ended_reason"]) == ("completed", "unavailable")

    route(client, org, twilio_number["id"], member_id=None)  # nobody: no AI agent with a voice either
    rejected = twilio_post(client, INCOMING, incoming_form("CA" + "5" * 32)).get_data(as_text=True)
    assert rejected.endswith("<Response><Reject/></Response>")
    calls = client.get(voice(org) + "/calls", headers=org.headers()).get_json()["data"]
    assert (calls[0]["status"], calls[0]["ended_reason"]) == ("failed", "no_route")


def test_the_simulator_plays_an_inbound_call_over_the_same_relay_offline(
    client: FlaskClient, runner: Any, org: Org
) -> None:
    """The sandbox: no carrier, no model. ``voice simulate-inbound`` records the call as the incoming
    webhook does and plays the caller over the relay; the agent answers from its knowledge and hands off
    what it cannot answer; the transcript, summary and notification follow as on a real call."""
    sandbox = "/sandbox/v1/members/organizations/" + org.id
    created = client.post(
        f"/sandbox/v2/messages/organizations/{org.id}/members",
        json={"name": "Sofía", "ai": True, "organization_id": org.id},
        headers=org.headers("sandbox"),
    )
    agent_id = created.get_json()["id"]
    config = {**CONFIG, "call_transfers": [], "tools": {"search_knowledge": {"enabled": True}}}
    saved = client.post(
        f"{sandbox}/members/{agent_id}/agent-config", json=config, headers=org.headers("sandbox")
    )
    assert saved.status_code == 201, saved.get_json()
    knowledge = {
        "title": "Horario",
        "body": "Abrimos de lunes a viernes de 9 a 18 horas.",
        "agent_id": agent_id,
    }
    assert (
        client.post(f"{sandbox}/knowledge", json=knowledge, headers=org.headers("sandbox")).status_code == 201
    )
    args = ["voice", "connect", "--org", org.id, "--number", NUMBER, "--provider", "twilio"]
    args += ["--account-sid", ACCOUNT_SID, "--auth-token", AUTH_TOKEN, "--agent-id", agent_id]
    assert runner.invoke(args=[*args, "--env", "sandbox"]).exit_code == 0  # twilio, but the sandbox simulates

    played = runner.invoke(
        args=[
            *("voice", "simulate-inbound", "--org", org.id, "--from", CALLER, "--env", "sandbox", "--json"),
            *("--say", "¿Cuál es su horario?", "--say", "¿Venden routers?"),
        ]
    )
    assert played.exit_code == 0, played.output
    result = json.loads(played.stdout)
    assert result["answers"] == ["Horario\nAbrimos de lunes a viernes de 9 a 18 horas."]
    assert result["handoff_data"]["target"] is None and "routers" in result["handoff_data"]["reason"]
    call = client.get(
        f"/sandbox/v2/voice/organizations/{org.id}/calls/{result['call']['id']}",
        headers=org.headers("sandbox"),
    ).get_json()
    assert (call["direction"], call["provider"], call["from"], call["agent_id"]) == (
        "inbound",
        "simulator",
        CALLER,
        agent_id,
    )
    assert [line["speaker"] for line in call["transcript"]] == ["caller", "agent", "caller"]
    # handed off with nobody to dial: the caller heard the apology and the call ended as transferred
    assert (call["status"], call["ended_reason"]) == ("completed", "transferred")
    assert call["transfer"]["dial"] is None and call["summary"].startswith('The caller said: "¿Cuál')
    deliveries = client.get(
        f"{sandbox}/members/{agent_id}/notifications/deliveries", headers=org.headers("sandbox")
    ).get_json()["data"]
    assert [d["trigger"] for d in deliveries] == ["end_of_call"]

    # an outbound call of the agent in the sandbox: the simulated person says metadata.script once
    # they answer, over the same relay
    script = {"script": ["¿Cuál es su horario?", "gracias"]}
    placed = client.post(
        f"/sandbox/v2/voice/organizations/{org.id}/calls",
        json={"to": "+525512340000", "agent_id": agent_id, "metadata": script},
        headers=org.headers("sandbox"),
    )
    assert placed.status_code == 201, placed.get_json()
    outbound = client.get(
        f"/sandbox/v2/voice/organizations/{org.id}/calls/{placed.get_json()['id']}",
        headers=org.headers("sandbox"),
    ).get_json()
    assert (outbound["direction"], outbound["status"], outbound["ended_reason"]) == (
        "outbound",
        "completed",
        "completed",
    )
    assert [(line["speaker"], line["text"]) for line in outbound["transcript"]] == [
        ("caller", "¿Cuál es su horario?"),
        ("agent", "Horario\nAbrimos de lunes a viernes de 9 a 18 horas."),
        ("caller", "gracias"),
    ]
    assert outbound["summary"].startswith('The caller said: "¿Cuál es su horario?"')
    # the live store saw nothing of it
    assert client.get(voice(org) + "/calls", headers=org.headers()).get_json()["total"] == 0


def test_an_outbound_call_of_an_ai_agent_talks_over_the_same_relay(
    client: FlaskClient, org: Org, twilio: Any, twilio_number: dict[str, Any], llm: FakeLLM, server: str
) -> None:
    agent_id = make_agent(client, org, {**CONFIG, "call_transfers": []})
    llm.reply("Hola, le llamo de Acme por su pedido.")
    llm.reply("Resumen de la llamada.")
    placed = client.post(
        voice(org) + "/calls", json={"to": "+525512340000", "agent_id": agent_id}, headers=org.headers()
    )
    assert placed.status_code == 201, placed.get_json()
    call = placed.get_json()
    [sent] = twilio.requests_to("/Calls.json")
    twiml = sent.form["Twiml"]
    assert attribute(twiml, "Connect", "action") == f"{PUBLIC_BASE_URL}{RELAY_ENDED}?call={call['id']}"
    relay = open_relay(twiml, server)
    relay.send(**{**setup_frame(call["provider_call_id"], call["id"]), "direction": "outbound-api"})
    relay.send(type="prompt", voicePrompt="¿Bueno?", lang="es-MX", last=True)
    assert "".join(relay.answer()) == "Hola, le llamo de Acme por su pedido."
    relay.ws.close()  # the person hung up
    stored = wait_for(lambda: (c := the_call(client, org, call["id"]))["summary"] and c)
    assert stored["summary"] == "Resumen de la llamada." and stored["status"] == "completed"
    assert [line["speaker"] for line in stored["transcript"]] == ["caller", "agent"]


def test_a_person_with_a_phone_is_dialled_and_a_rule_can_transfer_to_a_member(
    client: FlaskClient, runner: Any, org: Org, twilio_number: dict[str, Any], llm: FakeLLM
) -> None:
    """A member's phone (``extra.phone``) is what a number routed to them, or a transfer rule naming
    them, dials. The transfer is played by the simulator on a live simulator number, with the model."""
    ana = make_member(client, org, ai=False, name="Ana", extra={"phone": "+52 55 1234 9999"})
    route(client, org, twilio_number["id"], member_id=ana)
    twiml = twilio_post(client, INCOMING, incoming_form("CA" + "6" * 32)).get_data(as_text=True)
    assert twiml.endswith(
        f'<Response><Dial callerId="{NUMBER}"><Number>+525512349999</Number></Dial></Response>'
    )

    rules = [{"name": "Soporte", "condition": "the caller has a problem", "target": ana}]
    agent_id = make_agent(client, org, {**CONFIG, "call_transfers": rules})
    args = ["voice", "connect", "--org", org.id, "--number", "+525550002000", "--provider", "simulator"]
    assert runner.invoke(args=[*args, "--agent-id", agent_id]).exit_code == 0
    llm.call_tools(("transfer_to_human", {"note": "Su SIM no funciona", "rule": "Soporte"}))
    llm.reply("Falla de SIM, transferida a soporte.")
    played = runner.invoke(
        args=[
            *("voice", "simulate-inbound", "--org", org.id, "--number", "+525550002000", "--json"),
            *("--say", "Mi SIM no funciona"),
        ]
    )
    assert played.exit_code == 0, played.output
    result = json.loads(played.stdout)
    assert result["handoff_data"] == {
        "call_id": result["call"]["id"],
        "target": ana,
        "rule": "Soporte",
        "reason": "Su SIM no funciona",
    }
    call = the_call(client, org, result["call"]["id"])
    assert call["transfer"]["target_type"] == "member" and call["transfer"]["dial"] == "+525512349999"
    assert call["status"] == "in_progress"  # the person's leg is ringing: the simulator stops there
    assert call["summary"] == "Falla de SIM, transferida a soporte."
