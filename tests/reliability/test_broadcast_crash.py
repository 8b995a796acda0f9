"""A broadcast whose server process is killed with SIGKILL in the middle of sending, then restarted and
resumed: the fake Graph API's record shows no recipient sent twice, every recipient the broadcast reports
``sent`` sent exactly once, and the broadcast completes with counts that match its recipients."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.fakes.fixtures import TOKEN
from tests.fakes.meta_graph import WABA_ID, FakeMetaGraph
from tests.reliability.stack import Server, Stack, record_figure
from tests.support.servers import wait_until

RECIPIENTS = 120
RATE = 30  # sends per second: the broadcast takes about four seconds, the kill lands in the middle
KILL_AFTER = 40  # sends the fake Graph API received before the SIGKILL
ADDRESS = "106540352242922"
TEMPLATE_ID = "900000000000001"


@pytest.fixture
def graph() -> Iterator[FakeMetaGraph]:
    fake = FakeMetaGraph().start()
    fake.tokens.add(TOKEN)
    fake.add_template(
        id=TEMPLATE_ID, name="promo", language="es_MX", components=[{"type": "BODY", "text": "Hola {{name}}"}]
    )
    yield fake
    fake.stop()


def _numbers() -> list[str]:
    return [f"5255{index:08d}" for index in range(RECIPIENTS)]


def _payload() -> dict[str, Any]:
    name = [{"type": "body", "parameters": [{"type": "text", "parameter_name": "name", "text": "cliente"}]}]
    return {
        "name": "Crash",
        "organization_address": ADDRESS,
        "meta_template_id": TEMPLATE_ID,
        "components": name,
        "recipients": [{"to": f"+{number}"} for number in _numbers()],
        "rate_per_second": RATE,
    }


def test_a_broadcast_killed_mid_send_resumes_and_sends_each_recipient_once(
    make_stack: Any, graph: FakeMetaGraph
) -> None:
    stack: Stack = make_stack(JOBS_MODE="embedded", META_GRAPH_URL=graph.graph_url, META_HTTP_TIMEOUT="10")
    organization = stack.prepare(
        "Broadcaster",
        ["channels", "connect", "--org", "{org}", "--service", "whatsapp", "--address", ADDRESS,
         "--provider", "meta", "--access-token", TOKEN, "--waba-id", WABA_ID,
         "--phone-number", "+525500000001"],
    )  # fmt: skip
    org_id, headers = organization["organization_id"], {"X-API-Key": organization["api_keys"]["live"]}
    base = f"/v2/messages/organizations/{org_id}/broadcasts"
    server: Server = stack.server().start()

    created = requests.post(f"{server.url}{base}", json=_payload(), headers=headers, timeout=60)
    assert created.status_code == 201, created.text
    broadcast_id = created.json()["id"]
    # the server's embedded job consumer sends; kill it once part of the broadcast went out
    assert wait_until(lambda: len(graph.sends()) >= KILL_AFTER, 120), server.process.tail()
    server.kill()
    sent_before_kill = len(graph.sends())
    assert sent_before_kill < RECIPIENTS, "the broadcast finished before the kill"
    assert stack.scalar("SELECT status FROM broadcasts WHERE id = :b", b=uuid.UUID(broadcast_id)) == "sending"

    server.restart()
    # The dead worker's lease would expire after LEASE_SECONDS (60 s); free it instead of waiting, then
    # resume as the minute's sweep (or `flask broadcasts resume`) does. The restarted server's job
    # consumer runs the resumed broadcast.
    stack.execute(
        "UPDATE broadcasts SET lease_owner = NULL, lease_expires_at = NULL WHERE id = :b",
        b=uuid.UUID(broadcast_id),
    )
    assert (
        "live: resumed 1 broadcast(s)" in stack.flask_many(["broadcasts", "resume", "--older-than", "0"])[0]
    )

    def detail() -> dict[str, Any]:
        return dict(requests.get(f"{server.url}{base}/{broadcast_id}", headers=headers, timeout=30).json())

    assert wait_until(lambda: detail()["status"] == "completed", 120), server.process.tail()
    report = detail()
    states = Counter(recipient["state"] for recipient in report["recipients"])
    sends = Counter(str(received.body["to"]) for received in graph.sends() if received.body)

    assert max(sends.values()) == 1  # no recipient received the template twice
    sent = {r["to"].lstrip("+") for r in report["recipients"] if r["state"] == "sent"}
    assert all(sends[number] == 1 for number in sent)  # every recipient reported sent: exactly one send
    # The only recipient that may not be "sent": the one whose send was in flight at the kill (its message
    # was stored pending, the provider's answer never was): reported "unknown", never sent again.
    assert states["sent"] + states["unknown"] == RECIPIENTS and states["unknown"] <= 1
    assert set(sends) <= set(_numbers()) and len(sends) >= states["sent"]
    assert report["total"] == RECIPIENTS
    assert {state: count for state, count in report["counts"].items() if count} == dict(states)
    assert all(r["message_id"] for r in report["recipients"])  # each recipient has its stored message
    messages = stack.scalar(
        "SELECT count(*) FROM messages WHERE organization_id = :o AND direction = 'outgoing'",
        o=uuid.UUID(org_id),
    )
    assert messages == RECIPIENTS  # one stored message per recipient, none duplicated by the resume
    record_figure(
        f"crash test: broadcast {RECIPIENTS} recipients, killed after {sent_before_kill} sends, "
        f"{states['sent']} sent once, {states['unknown']} unknown, "
        f"{sum(sends.values())} sends recorded by the fake Graph API"
    )
