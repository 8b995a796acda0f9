"""The Redis job queue's worker killed with SIGKILL in the middle of a batch of stored webhook deliveries,
then restarted: the batch it was writing is rolled back with it, the batches it committed stay, and the
restarted worker stores every message exactly once.

What the queue guarantees (core/jobs.py, Huey on Redis): a job is taken off the queue when a worker starts
it, so the job a killed worker was running is gone. The work is not: each delivery stays pending in
``inbound_deliveries`` until the commit of the batch that stores its messages, a later drain (the next
delivery's job, or the minute's ``drain_leftovers`` sweep) takes it again, and the provider message id
makes the second pass store nothing twice: at-least-once processing, exactly-once effect."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
import requests

from tests.fakes.fixtures import APP_SECRET
from tests.fakes.meta_webhooks import encode, sign, wa_change, wa_delivery, wa_text, wamid
from tests.reliability.stack import Server, Stack, record_figure
from tests.support.servers import reachable_redis_url, wait_until

pytestmark = pytest.mark.redis

N = 150
BATCH = 20
ADDRESS = "106540352242922"

# A worker that stalls in its third batch: stored and flushed, not committed, when it is killed.
STALLING_WORKER = """
import sys, time
from pathlib import Path
from app import create_app
from core import jobs
from blueprints.channels.inbound import inbound_batch
from blueprints.messaging.ingest import store_batch

marker = Path(sys.argv[1])
create_app()
batches = []

def store_then_stall(*, events):
    report = store_batch(events=events)
    batches.append(len(events))
    if len(batches) == 3:
        marker.write_text("stalled")
        time.sleep(600)
    return report

with inbound_batch.only(store_then_stall):
    jobs.run_worker(1)
"""


def _post(url: str, message_id: str, n: int) -> int:
    body = encode(
        wa_delivery(wa_change(ADDRESS, messages=[wa_text(f"52155{n % 11:08d}", f"job {n}", id=message_id)]))
    )
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": sign(body, APP_SECRET)}
    for _ in range(5):  # Meta's retries: a busy store answers 503
        status = requests.post(f"{url}/webhooks/meta", data=body, headers=headers, timeout=30).status_code
        if status != 503:
            return status
        time.sleep(1)
    return status


def _pending(stack: Stack) -> int:
    return int(stack.scalar("SELECT count(*) FROM inbound_deliveries WHERE processed_at IS NULL"))


def _stored(stack: Stack, org_id: uuid.UUID) -> list[str]:
    rows = stack.rows("SELECT external_id FROM messages WHERE organization_id = :o", o=org_id)
    return [row[0] for row in rows]


def test_a_queue_worker_killed_mid_batch_leaves_each_message_stored_once(
    make_stack: Any, tmp_path: Path
) -> None:
    redis_url = reachable_redis_url()
    queue = redis.Redis.from_url(redis_url)
    for key in queue.scan_iter("huey.*agentdesk*"):  # no job of an earlier run in this test's Redis db
        queue.delete(key)
    stack: Stack = make_stack(
        JOBS_MODE="redis", REDIS_URL=redis_url, INGEST_MODE="deferred", INGEST_BATCH_SIZE=str(BATCH)
    )
    organization = stack.prepare(
        "Queue",
        ["channels", "connect", "--org", "{org}", "--service", "whatsapp", "--address", ADDRESS,
         "--provider", "simulator", "--phone-number", "+525500000009"],
    )  # fmt: skip
    org_id = uuid.UUID(organization["organization_id"])
    server: Server = stack.server().start()

    # the deliveries are stored and their drain jobs queued while no worker runs
    ids = [wamid() for _ in range(N)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(lambda n: _post(server.url, ids[n], n), range(N)))
    assert statuses == [200] * N
    assert _pending(stack) == N

    marker = tmp_path / "stalled"
    worker = stack.python(STALLING_WORKER, str(marker), name="stalling-worker").start()
    assert wait_until(marker.exists, 120), worker.tail()
    worker.kill()  # in its third batch: two committed, the third flushed but not committed
    committed = set(_stored(stack, org_id))
    assert len(committed) == 2 * BATCH
    assert _pending(stack) == N - 2 * BATCH

    restarted = stack.flask_process("jobs", "worker", "--workers", "2", name="worker").start()
    # The job the killed worker was running is lost with it; the next delivery's job (or, without
    # traffic, the minute's sweep) drains everything still pending.
    late = wamid()
    assert _post(server.url, late, N) == 200
    assert wait_until(lambda: _pending(stack) == 0, 120), restarted.tail()

    stored = _stored(stack, org_id)
    assert sorted(stored) == sorted([*ids, late])  # every message exactly once
    conversations = stack.scalar("SELECT count(*) FROM conversations WHERE organization_id = :o", o=org_id)
    assert conversations == 11
    record_figure(
        f"crash test: job queue {N} deliveries in batches of {BATCH}, worker killed with "
        f"{len(committed)} committed, {len(stored)} messages stored once"
    )
