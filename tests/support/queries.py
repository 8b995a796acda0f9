"""Count the SQL statements a block of code sends, to hold list endpoints to a constant query budget."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


class QueryCounter:
    def __init__(self) -> None:
        self.statements: list[str] = []

    @property
    def count(self) -> int:
        return len(self.statements)

    def __call__(self) -> int:
        return self.count


@contextmanager
def count_queries() -> Iterator[QueryCounter]:
    """Statements of this thread only: the code under test (a test-client request runs in the test's
    thread), not a presence grace timer or heartbeat that happens to touch the database meanwhile."""
    counter = QueryCounter()
    thread = threading.get_ident()

    def _record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if threading.get_ident() != thread:
            return
        if not statement.lstrip().upper().startswith(("PRAGMA", "SAVEPOINT", "RELEASE")):
            counter.statements.append(statement)

    event.listen(Engine, "after_cursor_execute", _record)
    try:
        yield counter
    finally:
        event.remove(Engine, "after_cursor_execute", _record)


class CommitCounter:
    def __init__(self) -> None:
        self.count = 0


@contextmanager
def count_commits() -> Iterator[CommitCounter]:
    """Count COMMITs sent to any database (both stores) inside the block, by this thread: requests run
    in the test's thread and jobs run inline there, while a thread an earlier test left behind (a timer,
    a drain) may commit at any moment and must not be counted."""
    counter = CommitCounter()
    owner = threading.get_ident()

    def _record(conn: Any) -> None:
        if threading.get_ident() == owner:
            counter.count += 1

    event.listen(Engine, "commit", _record)
    try:
        yield counter
    finally:
        event.remove(Engine, "commit", _record)
