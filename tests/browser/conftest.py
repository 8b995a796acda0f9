"""Browser tests: the real app on a loopback server, driven by Playwright in Debian's Chromium.

Playwright's own browser download cannot work on these machines, so the tests launch the system
Chromium (``CHROMIUM_PATH``, default ``/usr/bin/chromium``) through ``executable_path``. Without a
Chromium the tests are skipped with a message that says so; under ``CI`` a missing browser fails.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from werkzeug.serving import make_server

from tests.conftest import Org
from tests.support.desk_users import create_desk_user
from tests.support.stores import in_ci

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
AXE = ROOT / "static" / "vendor" / "axe.min.js"
# Flags that keep Chromium from calling outside hosts at start (this network has none to reach).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    candidate = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    return candidate if candidate and Path(candidate).exists() else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Tests that drive a real Chromium carry the ``chromium`` marker, so that a lane can select them
    # (CI runs them in the SQLite lane; the PostgreSQL lane runs everything else, pages included).
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.chromium)
    if chromium_path() is not None:
        return
    browser_items = [item for item in items if "tests/browser/" in str(item.fspath).replace(os.sep, "/")]
    if not browser_items:
        return
    if in_ci():
        raise pytest.UsageError("CI is set but no Chromium was found for the browser tests (CHROMIUM_PATH)")
    marker = pytest.mark.skip(reason="no Chromium found (install Debian's chromium or set CHROMIUM_PATH)")
    for item in browser_items:
        item.add_marker(marker)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if chromium_path() is None:
        terminalreporter.write_line(
            "browser tests SKIPPED: no Chromium (apt-get install chromium, or set CHROMIUM_PATH)", yellow=True
        )


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        launched.close()


@pytest.fixture
def server(app: Flask) -> Iterator[str]:
    """The whole product (both environments, Socket.IO) on a loopback port, served in a thread."""
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join(timeout=5)


@pytest.fixture
def new_context(browser: Any, server: str) -> Iterator[Callable[..., Any]]:
    contexts: list[Any] = []

    def _make(locale: str = "en-US", **options: Any) -> Any:
        context = browser.new_context(
            base_url=server, locale=locale, viewport={"width": 1280, "height": 800}, **options
        )
        context.set_default_timeout(5000)
        contexts.append(context)
        return context

    yield _make
    for context in contexts:
        context.close()


@dataclass(frozen=True)
class DeskLogin:
    email: str
    password: str
    name: str
    member_id: str
    org: Org


@pytest.fixture
def make_user(runner: FlaskCliRunner) -> Callable[..., DeskLogin]:
    def _make(org: Org, name: str = "Ana Agent", role: str = "agent", email: str | None = None) -> DeskLogin:
        email = email or f"{name.split()[0].lower()}.{org.id[:6]}@example.test"
        created = create_desk_user(runner, org.id, email, name=name, role=role)
        return DeskLogin(email, created["password"], name, created["member_id"], org)

    return _make


def wait_for_htmx(page: Any) -> None:
    """Until htmx has no request in flight and nothing swapping or settling: an event sent to an element
    of a pane still being replaced would go to the old element, which htmx then drops."""
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
        " && document.getAnimations().length === 0"  # and no CSS transition half-way
    )


def sign_in(page: Any, login: DeskLogin, remember: bool = False) -> None:
    page.goto("/signin")
    page.locator("#email").fill(login.email)
    page.locator("#password").fill(login.password)
    if remember:
        page.locator("#remember").check()
    page.locator("form button[type=submit]").click()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Serious and critical accessibility violations on the page (axe-core from npm)."""
    # By URL, from our own origin: the pages' Content-Security-Policy refuses inline scripts, which is
    # what add_script_tag(path=...) would insert.
    page.add_script_tag(url="/static/vendor/axe.min.js")
    # A button just clicked is still fading to its hover colours (Bootstrap's 150 ms transition); axe
    # would measure the contrast of a frame in between. Let the finite transitions end first.
    page.evaluate(
        """() => Promise.race([
            Promise.all(document.getAnimations()
                .filter(a => a.effect && a.effect.getComputedTiming().iterations !== Infinity)
                .map(a => a.finished.catch(() => null))),
            new Promise(resolve => setTimeout(resolve, 2000)),
        ])"""
    )
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
