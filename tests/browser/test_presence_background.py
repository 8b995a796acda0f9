"""A desk left in a background tab keeps its member's presence steady: hiding the tab, even freezing it
for a few seconds (what Chrome does to background tabs), changes nothing for the teammates, while closing
it does set the member offline once the grace period is over (so the first half cannot pass by deafness)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.browser.conftest import DeskLogin, sign_in
from tests.browser.inbox.data import mem
from tests.conftest import Org

GRACE_SECONDS = 1.5

HEAR = """member => {
  window.heard = [];
  document.body.addEventListener('desk:presence.updated', e => {
    if (e.detail.data.member_id === member) window.heard.push(e.detail.data.status);
  });
}"""


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "PRESENCE_GRACE_SECONDS": GRACE_SECONDS}


def _open(new_context: Callable[..., Any], login: DeskLogin) -> Any:
    page = new_context().new_page()
    sign_in(page, login)
    page.wait_for_url("**/desk")
    page.wait_for_selector("body[data-live=on]")
    return page


def _status(client: FlaskClient, org: Org, member_id: str) -> str:
    rows = mem(client, org, "GET", "/members/availabilities")["data"]
    return next(row["status"] for row in rows if row["member_id"] == member_id)


def test_a_hidden_or_frozen_tab_does_not_flap_and_a_closed_one_goes_offline(
    client: FlaskClient,
    org: Org,
    make_user: Callable[..., DeskLogin],
    new_context: Callable[..., Any],
) -> None:
    ana, ben = make_user(org, "Ana Agent"), make_user(org, "Ben Teammate")
    mem(client, org, "PATCH", f"/members/{ana.member_id}/status", status="online")
    background = _open(new_context, ana)
    watcher = _open(new_context, ben)
    watcher.evaluate(HEAR, ana.member_id)
    assert _status(client, org, ana.member_id) == "online"

    # Ana works in another tab: hers goes to the background, is told so, and is frozen for a while
    background.context.new_page().bring_to_front()
    background.evaluate(
        "() => { Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});"
        " document.dispatchEvent(new Event('visibilitychange')); }"
    )
    cdp = background.context.new_cdp_session(background)
    cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
    time.sleep(GRACE_SECONDS * 2)
    cdp.send("Page.setWebLifecycleState", {"state": "active"})
    time.sleep(GRACE_SECONDS * 1.5)
    assert watcher.evaluate("window.heard") == []
    assert _status(client, org, ana.member_id) == "online"

    # closing the tab is leaving: offline after the grace period, heard by the teammate
    background.context.close()
    watcher.wait_for_function("() => window.heard.includes('offline')", timeout=int(GRACE_SECONDS * 4000))
    assert _status(client, org, ana.member_id) == "offline"
