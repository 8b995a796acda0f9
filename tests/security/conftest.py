"""The isolation matrix reports what it covered at the end of every run (CI output included)."""

from __future__ import annotations

from typing import Any

from tests.security.matrix import COVERAGE


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if COVERAGE:
        terminalreporter.section("isolation matrix")
        for line in COVERAGE:
            terminalreporter.write_line(line)
