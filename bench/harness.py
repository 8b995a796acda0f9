"""A throwaway app on temporary SQLite stores (or BENCH_DATABASE_URL) and small timing helpers."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import event

from app import create_app
from core.db import db


def make_app() -> Flask:
    tmp = Path(tempfile.mkdtemp(prefix="agentdesk-bench-"))
    config: dict[str, Any] = {
        "INSTANCE_PATH": str(tmp),
        "DATABASE_URL": os.environ.get("BENCH_DATABASE_URL", f"sqlite:///{tmp / 'live.db'}"),
        "SANDBOX_DATABASE_URL": os.environ.get(
            "BENCH_SANDBOX_DATABASE_URL", f"sqlite:///{tmp / 'sandbox.db'}"
        ),
        "JOBS_MODE": "inline",
        "REDIS_URL": None,
        # One organization asks as fast as it is answered: its requests are counted (the counter is part
        # of the request path) but never refused.
        "RATE_LIMIT_API": "1000000/second",
        "RATE_LIMIT_API_SANDBOX": "1000000/second",
    }
    app = create_app(config)
    result = app.test_cli_runner().invoke(args=["setup"])
    assert result.exit_code == 0, result.output
    return app


def make_org(app: Flask, name: str = "Bench") -> dict[str, Any]:
    result = app.test_cli_runner().invoke(args=["orgs", "create", "--name", name, "--json"])
    return json.loads(result.output)


def measure(
    label: str, fn: Callable[[], object], iterations: int = 2000, warmup: int = 50
) -> tuple[float, float]:
    """Print and return (p50, p95) in milliseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    started = time.perf_counter()
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - started
    samples.sort()
    p95 = samples[int(len(samples) * 0.95) - 1]
    print(
        f"{label:<48} {iterations / elapsed:8.0f} req/s   p50 {statistics.median(samples):6.2f} ms"
        f"   p95 {p95:6.2f} ms   (n={iterations}, in-process WSGI, one thread)"
    )
    return statistics.median(samples), p95


@contextmanager
def statements(app: Flask) -> Iterator[list[str]]:
    """Every SQL statement the app's live store runs inside the block, in order (the page benches print
    how many a page costs, to show it does not grow with its rows)."""
    seen: list[str] = []
    with app.app_context():
        engine = db.engine

    def count(*args: Any) -> None:
        seen.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)
