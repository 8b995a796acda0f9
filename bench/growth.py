"""How the conversation list grows with the store: one organization grown in steps to 1,000, 10,000 and
100,000 conversations of 10 messages each (10k → 100k → 1M messages), the list measured at each step,
and the curves drawn as a PNG (matplotlib).

    .venv/bin/python -m bench growth                      # SQLite, docs/benchmarks-growth-sqlite.png
    BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/bench \\
    BENCH_SANDBOX_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/bench_sandbox \\
    .venv/bin/python -m bench growth                      # docs/benchmarks-growth-postgresql.png

``BENCH_GROWTH_STEPS`` (default ``1000,10000,100000``) sets the steps; ``BENCH_GROWTH_PNG`` the file.
Target (performance issue): list p95 <= 50 ms at 1M messages, growth <= x1.3 from 10k to 100k
conversations.
"""

from __future__ import annotations

import os
import platform
import uuid
from pathlib import Path

from flask import Flask

from bench.dataset import seed_conversations
from bench.harness import make_app, make_org, measure
from core.db import db

MESSAGES = 10
CASES = (
    ("list take=20 include_messages=5", "?take=20&include_messages=5"),
    ("labels=vip", "?labels=vip&take=20"),
    ("search=Contact 4242", "?search=Contact%204242&take=20"),
    ("cursor page (keyset)", "?take=20&cursor={cursor}"),
)


def _steps() -> list[int]:
    return [int(step) for step in os.environ.get("BENCH_GROWTH_STEPS", "1000,10000,100000").split(",")]


def _analyze(app: Flask) -> None:
    """Planner statistics after a bulk load, as the production path would have them (autovacuum on
    PostgreSQL; PRAGMA optimize on SQLite)."""
    with app.app_context():
        if db.engine.dialect.name == "postgresql":
            with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.exec_driver_sql("ANALYZE")
        else:
            with db.engine.begin() as connection:
                connection.exec_driver_sql("PRAGMA optimize")


def main() -> None:
    app = make_app()
    org = make_org(app)
    organization_id = uuid.UUID(org["organization_id"])
    client = app.test_client()
    headers = {"X-API-Key": org["api_keys"]["live"]}
    base = f"/v2/messages/organizations/{organization_id}/conversations"
    with app.app_context():
        backend = db.engine.dialect.name
    print(f"machine: {platform.node()} {os.cpu_count()} cores, {backend}, {MESSAGES} messages a conversation")
    results: dict[str, list[float]] = {label: [] for label, _ in CASES}
    seeded = 0
    steps = _steps()
    for step in steps:
        seed_conversations(app, organization_id, step - seeded, MESSAGES, start=seeded)
        seeded = step
        _analyze(app)
        print(f"-- {seeded:,} conversations, {seeded * MESSAGES:,} messages")
        cursor = client.get(f"{base}?take=20", headers=headers).get_json().get("next_cursor") or ""
        for label, query in CASES:
            url = base + query.format(cursor=cursor)

            def run(url: str = url) -> None:
                response = client.get(url, headers=headers)
                assert response.status_code == 200, (url, response.status_code, response.get_data())

            _, p95 = measure(f"{label} @ {seeded:,}", run, iterations=200, warmup=10)
            results[label].append(p95)
    first, last = steps[-2] if len(steps) > 1 else steps[0], steps[-1]
    for label, series in results.items():
        growth = series[-1] / series[-2] if len(series) > 1 else 1.0
        print(
            f"{label:<40} p95 {series[-1]:6.1f} ms at {last:,}; x{growth:.2f} from {first:,}"
            " (target <= 50 ms, x1.3)"
        )
    _plot(steps, results, backend)


def _plot(steps: list[int], results: dict[str, list[float]], backend: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no screen on a server
    import matplotlib.pyplot as plt

    default = Path(__file__).resolve().parents[1] / "docs" / f"benchmarks-growth-{backend}.png"
    target = Path(os.environ.get("BENCH_GROWTH_PNG", default))
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=110)
    messages = [step * MESSAGES for step in steps]
    for label, series in results.items():
        axes.plot(messages, series, marker="o", label=label)
    axes.axhline(50, color="grey", linestyle="--", linewidth=1, label="target p95 50 ms")
    axes.set_xscale("log")
    axes.set_xlabel("messages in the organization (10 a conversation)")
    axes.set_ylabel("p95 per request (ms)")
    axes.set_title(f"Conversation list as the store grows ({backend}, in process)")
    axes.set_ylim(bottom=0)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(target)
    print(f"plot: {target}")
