"""Where the tests keep their two stores: SQLite files by default, PostgreSQL with TEST_DATABASE_URL.

The PostgreSQL lane uses the database named in ``TEST_DATABASE_URL`` for the live store and the same
name with ``_sandbox`` appended for the sandbox store, creating it when missing. Each session starts
from an empty schema and applies the real migrations, so the migrations are tested on every run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from core.config import normalize_database_url


@dataclass(frozen=True)
class Stores:
    live_url: str
    sandbox_url: str
    backend: str  # "sqlite" or "postgresql"


def in_ci() -> bool:
    return bool(os.environ.get("CI"))


def _postgres_stores(url: str) -> Stores:
    live = make_url(normalize_database_url(url))
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        live = live.set(database=f"{live.database}_{worker}")
    sandbox = live.set(database=f"{live.database}_sandbox")
    admin = create_engine(live.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            for database in (live.database, sandbox.database):
                exists = connection.scalar(
                    text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": database}
                )
                if not exists:
                    connection.execute(text(f'CREATE DATABASE "{database}"'))
    except Exception as error:
        if in_ci():
            raise
        pytest.skip(f"PostgreSQL at {url} is not reachable: {error}")
    finally:
        admin.dispose()
    for database_url in (live, sandbox):
        engine = create_engine(database_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
        engine.dispose()
    return Stores(
        live.render_as_string(hide_password=False),
        sandbox.render_as_string(hide_password=False),
        "postgresql",
    )


def make_stores(tmp_dir: Path) -> Stores:
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        return _postgres_stores(url)
    return Stores(f"sqlite:///{tmp_dir / 'live.db'}", f"sqlite:///{tmp_dir / 'sandbox.db'}", "sqlite")
