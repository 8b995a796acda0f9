"""Crash tests: real server and worker processes killed with SIGKILL, and database connections dropped.

Every test here is marked ``crash`` (``pytest -m "not crash"`` leaves them out locally; CI runs them in
both lanes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401
from tests.reliability.stack import FIGURES, Stack


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.section("crash tests")
        for line in FIGURES:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    folder = Path(__file__).parent
    for item in items:
        if folder in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.crash)


@pytest.fixture
def make_stack(tmp_path: Path) -> Iterator[Callable[..., Stack]]:
    """``make_stack(**settings)``: a :class:`Stack` on fresh stores; its processes are killed afterwards."""
    made: list[Stack] = []

    def _make(**settings: str | None) -> Stack:
        stack = Stack.create(tmp_path / f"stack{len(made)}", **settings)
        made.append(stack)
        return stack

    yield _make
    for stack in made:
        stack.stop()
