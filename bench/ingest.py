"""Signed inbound WhatsApp webhooks under load, through the production topology.

    .venv/bin/python -m bench ingest            # or: python -m bench.ingest
    BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/bench \\
    BENCH_SANDBOX_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/bench_sandbox \\
    BENCH_REDIS_URL=redis://127.0.0.1:6379/12 .venv/bin/python -m bench ingest

Starts ``scripts/topology.py`` (two gunicorn app processes behind nginx and a ``jobs worker`` with
Redis; one app process on SQLite without Redis), connects a Socket.IO client through nginx, then
``BENCH_SENDERS`` sender processes (default 4, 4 threads each, keep-alive connections) post
``BENCH_MESSAGES`` messages (default 6,000) in signed deliveries of ``BENCH_PER_DELIVERY`` messages each
(default 1; Meta groups a burst into fewer deliveries) through nginx as fast as they are answered (or at
``BENCH_RATE`` messages/s in total); a delivery not answered 200 is sent again afterwards, as Meta does.
``BENCH_JOB_WORKERS`` starts that many job-worker processes (default 1). ``BENCH_CONTACTS`` draws the
senders from that many numbers (default 0: a new sender for each delivery), so that several job workers
drain batches of the same contacts and conversations at once. ``BENCH_UPDATES`` adds that many
deliveries to the burst (default 0), each a WhatsApp status (``delivered``/``read``) or a contact's
reaction on one of the desk's replies: with ``BENCH_CONTACTS``, the desk first answers every contact
``BENCH_REPLIES`` times (default 4) through the API, as a campaign's answers come back.
``BENCH_BACKLOG=1`` pauses the job workers (SIGSTOP) while the burst is posted and resumes them once
every delivery is answered: they drain the stored backlog together, in full batches, as after a
worker restart; the burst's drain time then counts from the resume. Prints:

- accepted/s: deliveries answered 200 per second while posting (what Meta sees);
- sustained messages/s: messages stored and pushed, from the first POST to the last ``message.created``;
- nothing lost: messages stored (the API's ``total``) and events received, against messages sent;
- webhook -> ``message.created`` latency at the connected client, p50 and p95 (POST start to event),
  split at the message's ``created_at`` into webhook -> stored and stored -> client;
- CPU milliseconds per message by component during the burst (``bench/cpu.py``), beside the machine's
  budget at the target (cores / 1,000 messages a second);
- the burst's drain: first POST to last ``message.created``, and the tail after the last answer;
- deadlocks: PostgreSQL's count for the database over the run (``pg_stat_database``) and the job
  workers' log lines that name one;

with the issue's target beside each. ``BENCH_ROOT`` measures another tree of the project (a checkout of
an earlier commit) with this driver. The load runs on the same machine as the servers: the figures are
what the whole machine sustains, the load generator's CPU included.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import multiprocessing
import os
import platform
import random
import signal
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
import socketio

from bench import profile
from bench.cpu import CpuMeter
from scripts.topology import PROJECT_ROOT, Topology, find_nginx

SECRET = "bench-app-secret"
TARGET_RATE = 1000.0
TARGET_P95_MS = 100.0
TARGET_RSS_MB = 200.0
MESSAGES = int(os.environ.get("BENCH_MESSAGES", "6000"))
SENDERS = int(os.environ.get("BENCH_SENDERS", "4"))
THREADS = int(os.environ.get("BENCH_SENDER_THREADS", "4"))
RATE = float(os.environ.get("BENCH_RATE", "0"))  # 0: as fast as answered
# latency is read at the target's rate, not at saturation (where it only measures the queue)
LATENCY_RATE = float(os.environ.get("BENCH_LATENCY_RATE", "1000"))
LATENCY_MESSAGES = int(os.environ.get("BENCH_LATENCY_MESSAGES", "3000"))
# messages per delivery: 1 is the worst case; Meta groups a burst into fewer, larger deliveries
PER_DELIVERY = max(1, int(os.environ.get("BENCH_PER_DELIVERY", "1")))
JOB_WORKERS = max(1, int(os.environ.get("BENCH_JOB_WORKERS", "1")))  # job-worker processes (drainers)
# senders drawn from this many numbers (0: one per delivery); a few senders make every batch of every job
# worker touch the same contacts and conversations, the case of a campaign's answers
CONTACTS = max(0, int(os.environ.get("BENCH_CONTACTS", "0")))
# statuses and reactions on the desk's replies added to the burst, and the replies per contact they name
UPDATES = max(0, int(os.environ.get("BENCH_UPDATES", "0")))
REPLIES = max(1, int(os.environ.get("BENCH_REPLIES", "4")))
UPDATE = "update:"  # the prefix of a status or reaction in a sender's work list (the rest: message ids)
BACKLOG = os.environ.get("BENCH_BACKLOG", "0") not in ("", "0")  # the burst drained as a stored backlog


def _delivery(address: str, external_ids: list[str], sender: str) -> bytes:
    """One signed-to-be delivery carrying ``external_ids`` (Meta groups a burst into fewer deliveries)."""
    payload = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550783881", "phone_number_id": address},
                            "contacts": [{"profile": {"name": f"Bench {sender[-4:]}"}, "wa_id": sender}],
                            "messages": [
                                {
                                    "from": sender,
                                    "id": external_id,
                                    "timestamp": str(int(time.time())),
                                    "type": "text",
                                    "text": {"body": f"hola {external_id[-6:]}"},
                                }
                                for external_id in external_ids
                            ],
                        },
                    }
                ],
            }
        ],
    }
    return json.dumps(payload, separators=(",", ":")).encode()


def _sender(external_id: str) -> str:
    """The WhatsApp number that sends the delivery of ``external_id``."""
    if CONTACTS:
        return f"52155{int(external_id[-8:], 16) % CONTACTS:08d}"
    return f"52155{(hash(external_id) % 10_000_000):08d}"[:13]


def _update(item: str) -> tuple[str, str, str, str]:
    """(kind, the reply's provider id, the contact, status or emoji) of an ``update:`` work item."""
    kind, message_id, contact, value = item[len(UPDATE) :].split("|")
    return kind, message_id, contact, value


def _update_delivery(address: str, item: str) -> bytes:
    """A WhatsApp status, or a contact's reaction, on one of the desk's replies."""
    kind, message_id, contact, value = _update(item)
    now = str(int(time.time()))
    value_field: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550783881", "phone_number_id": address},
    }
    if kind == "status":
        value_field["statuses"] = [
            {"id": message_id, "status": value, "timestamp": now, "recipient_id": contact}
        ]
    else:
        value_field["contacts"] = [{"profile": {"name": f"Bench {contact[-4:]}"}, "wa_id": contact}]
        value_field["messages"] = [
            {
                "from": contact,
                "id": f"wamid.benchr{uuid.uuid4().hex}",
                "timestamp": now,
                "type": "reaction",
                "reaction": {"message_id": message_id, "emoji": value},
            }
        ]
    payload = {
        "object": "whatsapp_business_account",
        "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": value_field}]}],
    }
    return json.dumps(payload, separators=(",", ":")).encode()


def _deliveries(items: list[str]) -> list[list[str]]:
    """The work list cut into deliveries, in its order: messages ``PER_DELIVERY`` at a time, each status
    or reaction on its own."""
    deliveries: list[list[str]] = []
    group: list[str] = []
    for item in items:
        if item.startswith(UPDATE):
            deliveries.append([item])
            continue
        group.append(item)
        if len(group) == PER_DELIVERY:
            deliveries.append(group)
            group = []
    return deliveries + ([group] if group else [])


def _post_all(args: tuple[str, str, list[str], float]) -> list[tuple[str, float, int]]:
    """One sender process: THREADS threads posting its share; (work item, start time, status) for each
    message, status or reaction (every message of one delivery shares its delivery's start and status)."""
    url, address, external_ids, rate = args
    parts = urlsplit(url)
    results: list[tuple[str, float, int]] = []
    lock = threading.Lock()
    deliveries = _deliveries(external_ids)
    share = [deliveries[i::THREADS] for i in range(THREADS)]
    interval = (THREADS * PER_DELIVERY / rate) if rate else 0.0

    def run(groups: list[list[str]]) -> None:
        connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
        mine: list[tuple[str, float, int]] = []
        next_at = time.monotonic()
        for group in groups:
            if group[0].startswith(UPDATE):
                body = _update_delivery(address, group[0])
            else:
                body = _delivery(address, group, _sender(group[0]))
            signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            if interval:
                next_at += interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            started = time.time()
            try:
                connection.request(
                    "POST",
                    "/webhooks/meta",
                    body=body,
                    headers={"Content-Type": "application/json", "X-Hub-Signature-256": signature},
                )
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
                status = 0
            mine += [(external_id, started, status) for external_id in group]
        connection.close()
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=run, args=(groups,)) for groups in share]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _environment(tmp: Path) -> dict[str, str]:
    database = os.environ.get("BENCH_DATABASE_URL")
    redis_url = os.environ.get("BENCH_REDIS_URL")
    environment = {
        **os.environ,
        "DATABASE_URL": database or f"sqlite:///{tmp / 'live.db'}",
        "SANDBOX_DATABASE_URL": os.environ.get("BENCH_SANDBOX_DATABASE_URL")
        or f"sqlite:///{tmp / 'sandbox.db'}",
        "INSTANCE_PATH": str(tmp / "instance"),
        "SECRET_KEY": "bench-secret-" + uuid.uuid4().hex,
        "META_APP_SECRET": SECRET,
        "SOCKETIO_CHANNEL": f"agentdesk-bench-{uuid.uuid4().hex}",
        "DEMO_LIVE_MESSAGES": "0",
        "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
    }
    environment.pop("REDIS_URL", None)
    environment.pop("JOBS_MODE", None)
    if redis_url:
        environment["REDIS_URL"] = redis_url
    return environment


def _machine() -> str:
    load = os.getloadavg()
    return (
        f"{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )


class Listener:
    """The Socket.IO client through nginx: when each ``message.created`` arrived, by provider id."""

    def __init__(self, url: str, key: str) -> None:
        self.arrived: dict[str, float] = {}
        self.stored: dict[str, float] = {}  # the message's created_at (when the drain stored it)
        self.duplicates = 0
        self.client = socketio.Client(reconnection=False)
        self.client.on("message.created", self._created)
        self.client.connect(url, auth={"api_key": key}, transports=["websocket"], wait_timeout=30)

    def _created(self, event: dict[str, Any]) -> None:
        external_id = (event.get("data") or {}).get("external_id")
        if external_id in self.arrived:
            self.duplicates += 1
        elif external_id:
            self.arrived[external_id] = time.time()
            created = (event.get("data") or {}).get("created_at")
            if created:
                self.stored[external_id] = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()

    def wait_for(self, external_ids: list[str], quiet_seconds: float = 15.0) -> None:
        """Until every id arrived, or nothing new arrived for ``quiet_seconds``."""
        seen, quiet_since = -1, time.monotonic()
        while not all(e in self.arrived for e in external_ids):
            if len(self.arrived) != seen:
                seen, quiet_since = len(self.arrived), time.monotonic()
            elif time.monotonic() - quiet_since > quiet_seconds:
                return
            time.sleep(0.05)


def run_phase(
    topology: Topology,
    listener: Listener,
    address: str,
    count: int,
    rate: float,
    updates: list[str] | None = None,
    backlog: bool = False,
) -> dict[str, Any]:
    """Post ``count`` messages at ``rate`` messages/s in total (0: as fast as answered), with ``updates``
    (statuses and reactions, ``update:`` work items) spread among them, then resend every delivery not
    answered 200 once more, as Meta does (its retries start seconds later). With ``backlog`` the job
    workers are paused while posting and resumed after it."""
    external_ids = [f"wamid.bench{uuid.uuid4().hex}" for _ in range(count)]
    work = external_ids + list(updates or ())
    random.Random(count).shuffle(work)
    shares = [work[i::SENDERS] for i in range(SENDERS)]
    workers = [p for p in topology.processes if "jobs" in " ".join(str(a) for a in p.args)] if backlog else []
    for process in workers:
        process.send_signal(signal.SIGSTOP)
    started = time.time()
    with CpuMeter() as meter, multiprocessing.get_context("spawn").Pool(SENDERS) as pool:
        everything = [
            row
            for rows in pool.map(
                _post_all, [(topology.url, address, share, rate / SENDERS) for share in shares]
            )
            for row in rows
        ]
        posted_at = time.time()
        for process in workers:
            process.send_signal(signal.SIGCONT)
        drain_from = posted_at if backlog else started
        posted = [row for row in everything if not row[0].startswith(UPDATE)]
        accepted = [external_id for external_id, _, status in posted if status == 200]
        listener.wait_for(accepted)
    # the rates and latencies are those of the messages accepted at once; the others are resent after
    failed = Counter(status for _, _, status in posted if status != 200)
    updates_failed = [item for item, _, status in everything if item.startswith(UPDATE) and status != 200]
    got = [e for e in accepted if e in listener.arrived]
    finished = max((listener.arrived[e] for e in got), default=time.time())
    sent_at = {external_id: at for external_id, at, _ in posted}
    latencies = sorted((listener.arrived[e] - sent_at[e]) * 1000 for e in got)
    # the same split in two: POST start -> stored by the drain, stored -> at the client
    to_store = sorted((listener.stored[e] - sent_at[e]) * 1000 for e in got if e in listener.stored)
    to_client = sorted((listener.arrived[e] - listener.stored[e]) * 1000 for e in got if e in listener.stored)
    retried = [external_id for external_id, _, status in posted if status != 200]
    if retried or updates_failed:
        _post_all((topology.url, address, retried + updates_failed, 0.0))
        listener.wait_for(external_ids)
    return {
        "updates": len(updates or ()),
        "updates_refused": len(updates_failed),
        "accepted_rate": len(accepted) / max(posted_at - started, 1e-9),
        "refused": failed,
        "events": len(got),
        "pushed_rate": len(got) / max(finished - started, 1e-9),
        "drained_s": finished - drain_from,
        "deliveries": -(-count // PER_DELIVERY) + len(updates or ()),
        "tail_s": max(0.0, finished - posted_at),
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p95": _p95(latencies),
        "store_p50": statistics.median(to_store) if to_store else float("nan"),
        "store_p95": _p95(to_store),
        "push_p50": statistics.median(to_client) if to_client else float("nan"),
        "push_p95": _p95(to_client),
        "cpu": meter.report(count, max(finished - started, 1e-9)),
    }


def send_replies(url: str, key: str, org_id: str, address: str) -> list[tuple[str, str]]:
    """``REPLIES`` desk replies to each of the ``CONTACTS`` senders through the API (the simulator accepts
    them; its own statuses follow through the job queue): (contact's wa_id, reply's provider id) each."""
    replies: list[tuple[str, str]] = []
    for n in range(CONTACTS):
        contact = f"52155{n:08d}"
        for reply in range(REPLIES):
            response = requests.post(
                f"{url}/v2/messages/organizations/{org_id}/messages",
                json={
                    "organization_address": address,
                    "service": "whatsapp",
                    "contact_address": contact,
                    "direction": "outgoing",
                    "content": {"kind": "text", "text": f"reply {reply}"},
                },
                headers={"X-API-Key": key},
                timeout=30,
            )
            if response.status_code == 201 and response.json().get("external_id"):
                replies.append((contact, response.json()["external_id"]))
    return replies


def updates_for(replies: list[tuple[str, str]], count: int) -> list[str]:
    """``count`` statuses and reactions on the replies, as work items (a fixed random choice)."""
    rng = random.Random(count)
    items: list[str] = []
    for _ in range(count if replies else 0):
        contact, message_id = rng.choice(replies)
        if rng.random() < 0.6:
            items.append(f"{UPDATE}status|{message_id}|{contact}|{rng.choice(['delivered', 'read'])}")
        else:
            items.append(f"{UPDATE}reaction|{message_id}|{contact}|{rng.choice(['👍', '❤️', ''])}")
    return items


def _p95(ordered: list[float]) -> float:
    return ordered[max(0, int(len(ordered) * 0.95) - 1)] if ordered else float("nan")


def _refusals(counts: Counter[int]) -> str:
    """``0 not 200`` or ``3 not 200 (status 0: 2, 502: 1), resent once``; status 0 is a dropped
    connection."""
    if not counts:
        return "0 not 200"
    spread = ", ".join(f"{status}: {n}" for status, n in sorted(counts.items()))
    return f"{sum(counts.values())} not 200 (status {spread}), resent once as Meta does"


def _verdict(good: bool) -> str:
    return "meets" if good else "below"


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="agentdesk-bench-ingest-"))
    environment = _environment(tmp)
    root = Path(os.environ.get("BENCH_ROOT") or PROJECT_ROOT)
    with_redis = "REDIS_URL" in environment
    topology = Topology(
        environment=environment,
        apps=2 if with_redis else 1,
        job_workers=JOB_WORKERS,
        use_nginx=find_nginx() is not None,
        root=root,
        workdir=tmp / "topology",
    )
    topology.flask("setup")
    organization = json.loads(topology.flask("orgs", "create", "--name", "Bench ingest", "--json"))
    org_id, key = organization["organization_id"], organization["api_keys"]["live"]
    address = f"9{uuid.uuid4().int % 10**14:014d}"
    topology.flask(
        "channels", "connect", "--org", org_id, "--service", "whatsapp", "--address", address,
        "--provider", "simulator", "--phone-number", "+525500000001",
    )  # fmt: skip
    store = "PostgreSQL" if environment["DATABASE_URL"].startswith("postgres") else "SQLite"
    print(f"machine: {_machine()}")
    print(f"store: {store}, Redis: {'yes' if with_redis else 'no'}, job workers: {JOB_WORKERS}, tree: {root}")
    deadlocks_before = _pg_deadlocks(environment["DATABASE_URL"])
    with topology:
        print(f"topology: {topology.url} -> {', '.join(topology.app_urls)}")
        listener = Listener(topology.url, key)
        try:
            run_phase(topology, listener, address, 200, 0)  # warm-up: connections, caches, JIT of plans
            replies = send_replies(topology.url, key, org_id, address) if UPDATES and CONTACTS else []
            with _profiled(topology):
                updates = updates_for(replies, UPDATES)
                burst = run_phase(topology, listener, address, MESSAGES, RATE, updates, BACKLOG)
            paced = run_phase(topology, listener, address, LATENCY_MESSAGES, LATENCY_RATE)
        finally:
            listener.client.disconnect()
        resident = _resident_mb(topology)
        listed = requests.get(
            f"{topology.url}/v2/messages/organizations/{org_id}/messages",
            params={"take": 1},
            headers={"X-API-Key": key},
            timeout=30,
        ).json()
    sent = 200 + MESSAGES + LATENCY_MESSAGES  # the contacts' messages, each pushed to the client
    kept = sent + len(replies)  # and the desk's replies (their message.created went out before an id)
    stored = int(listed.get("total", -1))
    events = len(listener.arrived)
    deadlocks = _pg_deadlocks(environment["DATABASE_URL"], settle=True)
    pace = f"{RATE:.0f}/s" if RATE else "as fast as answered"
    contacts = f"{CONTACTS} contacts" if CONTACTS else "a new contact each"
    shape = f"{PER_DELIVERY} a delivery, {contacts}, {SENDERS}x{THREADS} senders, {pace}"
    print(f"burst: {MESSAGES} messages, {shape}")
    if burst["updates"]:
        print(
            f"  with {burst['updates']} statuses and reactions on {len(replies)} desk replies "
            f"({burst['updates_refused']} not answered 200, resent once)"
        )
    print(
        f"  accepted/s (messages in deliveries answered 200) {burst['accepted_rate']:6.0f}   "
        f"({_refusals(burst['refused'])})"
    )
    print(
        f"  sustained messages/s         {burst['pushed_rate']:8.0f}   stored and pushed "
        f"(target >= {TARGET_RATE:.0f}: {_verdict(burst['pushed_rate'] >= TARGET_RATE)})"
    )
    print(f"  webhook -> message.created   p50 {burst['p50']:7.1f} ms   p95 {burst['p95']:7.1f} ms (queued)")
    if BACKLOG:
        print(
            f"  drained in                   {burst['drained_s']:8.1f} s   the stored burst, from the job "
            f"workers' resume to the last message.created "
            f"({burst['deliveries'] / max(burst['drained_s'], 1e-9):.0f} deliveries/s)"
        )
    else:
        print(
            f"  drained in                   {burst['drained_s']:8.1f} s   first POST to last "
            f"message.created ({burst['tail_s']:.1f} s after the last answer)"
        )
    print(
        "  CPU per message, by component (the machine's budget at the target: "
        f"{(os.cpu_count() or 1) * 1000 / TARGET_RATE:.1f} ms):"
    )
    print("\n".join(burst["cpu"]))
    print(f"paced: {LATENCY_MESSAGES} messages at {LATENCY_RATE:.0f}/s, {PER_DELIVERY} a delivery")
    print(
        f"  webhook -> message.created   p50 {paced['p50']:7.1f} ms   p95 {paced['p95']:7.1f} ms   "
        f"(target p95 <= {TARGET_P95_MS:.0f} ms: {_verdict(paced['p95'] <= TARGET_P95_MS)})"
    )
    print(
        f"    of which webhook -> stored p50 {paced['store_p50']:6.1f} ms  p95 {paced['store_p95']:6.1f} ms; "
        f"stored -> client p50 {paced['push_p50']:6.1f} ms  p95 {paced['push_p95']:6.1f} ms"
    )
    print(
        f"  accepted/s                   {paced['accepted_rate']:8.0f}   pushed/s {paced['pushed_rate']:7.0f}"
        f"   ({_refusals(paced['refused'])})"
    )
    heaviest = max(resident.values(), default=0.0)
    print(
        "resident memory after the load: "
        + ", ".join(f"{name} {mb:.0f} MB" for name, mb in resident.items())
        + f"   (target <= {TARGET_RSS_MB:.0f} MB a process: {_verdict(heaviest <= TARGET_RSS_MB)})"
    )
    if deadlocks is not None and deadlocks_before is not None:
        print(f"deadlocks: PostgreSQL counted {deadlocks - deadlocks_before} in the run", end="")
    else:
        print("deadlocks: (SQLite: none possible)", end="")
    raised, retried = _logged_deadlocks(topology)
    print(f"; job-worker logs: {raised} raised to the job, {retried} retried in the batch")
    all_once = stored == kept and events == sent and not listener.duplicates
    print(
        f"nothing lost: stored {stored}/{kept}, events {events}/{sent}, duplicate events "
        f"{listener.duplicates}   (target: every message stored and pushed once: {_verdict(all_once)})"
    )


def _pg_deadlocks(database_url: str, *, settle: bool = False) -> int | None:
    """PostgreSQL's count of deadlocks detected in the database (None on SQLite). A backend reports its
    counts when it ends or a while after it went idle: with ``settle``, once the topology's are gone."""
    if not database_url.startswith("postgres"):
        return None
    import psycopg

    url = database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True) as connection:
        deadline = time.monotonic() + (15 if settle else 0)
        while time.monotonic() < deadline:
            others = connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
            if not others or not others[0]:
                break
            time.sleep(0.2)
        connection.execute("SELECT pg_stat_clear_snapshot()")
        row = connection.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def _logged_deadlocks(topology: Topology) -> tuple[int, int]:
    """Deadlocks in the job workers' logs: raised to the job (a failed attempt, retried by the queue a
    second later) and retried inside the batch (the processor's log line names SQLSTATE 40P01)."""
    raised = retried = 0
    for log in sorted((topology.workdir or Path(".")).glob("jobs-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("sqlalchemy.exc.OperationalError: (psycopg.errors.DeadlockDetected)"):
                raised += 1
            elif "40P01" in line:
                retried += 1
    return raised, retried


def _server_pids(topology: Topology) -> dict[str, int]:
    """The processes that do the work: each app process (a gunicorn master's worker, where the requests
    run) and the job workers; nginx is not counted."""
    found: dict[str, int] = {}
    apps = workers = 0
    for process in topology.processes:
        command = " ".join(str(part) for part in process.args)
        if "gunicorn" in command:
            apps += 1
            name = f"app {apps}"
        elif "jobs" in command:
            workers += 1
            name = "job worker" if JOB_WORKERS == 1 else f"job worker {workers}"
        else:
            continue
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        pids = children.read_text().split() if children.exists() else []
        found[name] = int(pids[0]) if pids else process.pid
    return found


def _resident_mb(topology: Topology) -> dict[str, float]:
    """Resident memory of each server process, read from /proc (Linux)."""
    found: dict[str, float] = {}
    for name, pid in _server_pids(topology).items():
        status = Path(f"/proc/{pid}/status")
        for line in status.read_text().splitlines() if status.exists() else []:
            if line.startswith("VmRSS:"):
                found[name] = int(line.split()[1]) / 1024
    return found


def _profiled(topology: Topology) -> AbstractContextManager[object]:
    """BENCH_PROFILE=<folder>: sample every server process during the burst (bench/profile.py)."""
    out = profile.folder()
    if out is None:
        return nullcontext()
    return profile.Sampler({n.replace(" ", "-"): p for n, p in _server_pids(topology).items()}, out)


if __name__ == "__main__":
    main()
