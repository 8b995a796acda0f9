"""A stream of signed WhatsApp webhooks, the server killed with SIGKILL in the middle of it, restarted, and
everything Meta would send again sent again (everything not answered 200, plus some answered ones twice,
in another order): every message is stored exactly once, with its contact and conversation, and nothing
is left half-written or pending."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from tests.fakes.fixtures import APP_SECRET
from tests.fakes.meta_webhooks import encode, sign, wa_change, wa_delivery, wa_text, wamid
from tests.reliability.stack import Server, Stack, record_figure
from tests.support.servers import wait_until

N = 300  # deliveries, one message each
KILL_AFTER = 120  # accepted deliveries before the SIGKILL
SENDERS = 23  # distinct customers: contacts and conversations are created under concurrency
REDELIVERED = 40  # answered deliveries Meta sends again anyway, twice each
ADDRESS = "106540352242922"


def _deliveries() -> list[tuple[str, bytes]]:
    """(provider message id, signed body) with timestamps one second apart, oldest first."""
    start = int(time.time()) - N
    out = []
    for n in range(N):
        message_id = wamid()
        message = wa_text(f"52155{n % SENDERS:08d}", f"stream {n}", id=message_id, timestamp=str(start + n))
        out.append((message_id, encode(wa_delivery(wa_change(ADDRESS, messages=[message])))))
    return out


def _post(url: str, body: bytes) -> int | None:
    """The status Meta would see, or None when the connection broke (the process was killed)."""
    try:
        response = requests.post(
            f"{url}/webhooks/meta",
            data=body,
            headers={"Content-Type": "application/json", "X-Hub-Signature-256": sign(body, APP_SECRET)},
            timeout=30,
        )
    except requests.RequestException:
        return None
    return response.status_code


def _send_all(url: str, bodies: list[bytes], on_answer: Callable[[int | None], None]) -> list[int | None]:
    def one(body: bytes) -> int | None:
        status = _post(url, body)
        on_answer(status)
        return status

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, bodies))


def _redeliver_until_answered(url: str, bodies: list[bytes], rounds: int = 5) -> list[int | None]:
    """Meta's retry loop: send, then send again whatever was not answered 200; every status seen."""
    seen: list[int | None] = []
    for _ in range(rounds):
        statuses = _send_all(url, bodies, lambda _: None)
        seen += statuses
        bodies = [body for body, status in zip(bodies, statuses, strict=True) if status != 200]
        if not bodies:
            return seen
        time.sleep(1)  # Retry-After
    raise AssertionError(f"{len(bodies)} deliveries never answered 200: {seen}")


def _consistency_problems(stack: Stack, org_id: uuid.UUID) -> list[str]:
    """Half-written or duplicated records, as plain SQL finds them."""
    checks = {
        "message without its conversation": """
            SELECT count(*) FROM messages m LEFT JOIN conversations c ON c.id = m.conversation_id
            WHERE m.organization_id = :org AND c.id IS NULL""",
        "conversation without its contact": """
            SELECT count(*) FROM conversations c LEFT JOIN messaging_contacts k ON k.id = c.contact_id
            WHERE c.organization_id = :org AND k.id IS NULL""",
        "contact without an address": """
            SELECT count(*) FROM messaging_contacts k
            WHERE k.organization_id = :org
              AND NOT EXISTS (SELECT 1 FROM messaging_contact_addresses a WHERE a.contact_id = k.id)""",
        "conversation without a message": """
            SELECT count(*) FROM conversations c WHERE c.organization_id = :org
              AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id)""",
        "duplicate conversation": """
            SELECT count(*) FROM (SELECT 1 FROM conversations WHERE organization_id = :org
              GROUP BY organization_address, contact_address, service HAVING count(*) > 1) d""",
        "duplicate contact address": """
            SELECT count(*) FROM (SELECT 1 FROM messaging_contact_addresses WHERE organization_id = :org
              GROUP BY service, address HAVING count(*) > 1) d""",
        "last_message_at not the newest message": """
            SELECT count(*) FROM conversations c WHERE c.organization_id = :org
              AND (c.last_message_at IS NULL
                   OR c.last_message_at <> (SELECT max(m.timestamp) FROM messages m
                                            WHERE m.conversation_id = c.id))""",
        "last_incoming_at not the newest incoming message": """
            SELECT count(*) FROM conversations c WHERE c.organization_id = :org
              AND (c.last_incoming_at IS NULL
                   OR c.last_incoming_at <> (SELECT max(m.timestamp) FROM messages m
                                             WHERE m.conversation_id = c.id AND m.direction = 'incoming'))""",
        "delivery left unprocessed": "SELECT count(*) FROM inbound_deliveries WHERE processed_at IS NULL",
        "dead letter": "SELECT count(*) FROM webhook_dead_letters",
    }
    return [f"{name}: {found}" for name, sql in checks.items() if (found := stack.scalar(sql, org=org_id))]


def test_a_webhook_stream_survives_a_sigkill_and_meta_style_retries(make_stack: Any) -> None:
    # The production path: each delivery stored raw and answered, then drained in batches by the
    # server's drainer thread (small batches, so the kill also lands between batches).
    stack: Stack = make_stack(INGEST_MODE="deferred", JOBS_MODE="embedded", INGEST_BATCH_SIZE="25")
    organization = stack.prepare(
        "Stream",
        ["channels", "connect", "--org", "{org}", "--service", "whatsapp", "--address", ADDRESS,
         "--provider", "simulator", "--phone-number", "+525500000009"],
    )  # fmt: skip
    org_id = uuid.UUID(organization["organization_id"])
    server: Server = stack.server().start()
    deliveries = _deliveries()
    ids = [message_id for message_id, _ in deliveries]

    accepted = 0
    lock = threading.Lock()
    killed = threading.Event()

    def count_and_kill(status: int | None) -> None:
        nonlocal accepted
        with lock:
            if status == 200:
                accepted += 1
            if accepted >= KILL_AFTER and not killed.is_set():
                killed.set()
                server.kill()  # mid-stream: other requests are in flight, the drainer is mid-batch

    statuses = _send_all(server.url, [body for _, body in deliveries], count_and_kill)
    assert killed.is_set()
    answered = [n for n, status in enumerate(statuses) if status == 200]
    unanswered = [n for n, status in enumerate(statuses) if status != 200]
    assert unanswered, "the kill came after the whole stream"
    assert all(status in (200, None) for status in statuses), sorted(set(statuses), key=str)

    server.restart()
    # Meta's retries: everything not answered 200, and some answered ones twice, all in another order.
    rng = random.Random(15)
    again = unanswered + [n for n in rng.sample(answered, REDELIVERED) for _ in range(2)]
    rng.shuffle(again)
    seen = _redeliver_until_answered(server.url, [deliveries[n][1] for n in again])
    assert set(seen) <= {200, 503}, seen  # a busy store answers a retryable 503, never a 500

    # drained by the restarted server's drainer (woken by the retries, it takes every pending row)
    assert wait_until(
        lambda: stack.scalar("SELECT count(*) FROM inbound_deliveries WHERE processed_at IS NULL") == 0, 60
    ), server.process.tail()

    stored = [
        row[0] for row in stack.rows("SELECT external_id FROM messages WHERE organization_id = :o", o=org_id)
    ]
    assert sorted(stored) == sorted(ids)  # every message, once (the count would show a duplicate)
    contacts = stack.scalar("SELECT count(*) FROM messaging_contacts WHERE organization_id = :o", o=org_id)
    conversations = stack.scalar("SELECT count(*) FROM conversations WHERE organization_id = :o", o=org_id)
    assert contacts == conversations == SENDERS
    assert _consistency_problems(stack, org_id) == []
    record_figure(
        f"crash test: webhook stream {N} deliveries, killed after {len(answered)} accepted, "
        f"{len(again)} resent, {len(set(stored))} messages stored once"
    )
