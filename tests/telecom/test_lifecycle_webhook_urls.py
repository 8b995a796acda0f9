"""Lifecycle webhook endpoint URLs are checked when saved (created or updated) by the check every delivery
repeats (``core.outbound.check_url``): a loopback, link-local or private address in any spelling the
resolver accepts, a local name or credentials are a 400 naming ``url``, and nothing is stored, instead of
eight refused deliveries over 27 hours."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from core.environments import environment_app
from tests.core.refused_urls import ACCEPTED, REFUSED
from tests.telecom.conftest import Partner


def refusal(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "parameter_invalid",
        "url",
    )
    assert error["message"].startswith("url: ")
    return dict(error)


@pytest.mark.parametrize(("url", "words"), REFUSED)
def test_refused_url_is_a_400_naming_url_and_stores_nothing(partner: Partner, url: str, words: str) -> None:
    error = refusal(partner.post("/lifecycle-webhooks", {"url": url, "enabled_events": ["*"]}))
    assert words in error["message"]
    assert partner.ok(partner.get("/lifecycle-webhooks"))["data"] == []

    # an existing endpoint keeps its URL
    created = partner.ok(partner.post("/lifecycle-webhooks", {"url": ACCEPTED, "enabled_events": ["*"]}), 201)
    refusal(partner.patch(f"/lifecycle-webhooks/{created['id']}", {"url": url}))
    assert partner.ok(partner.get(f"/lifecycle-webhooks/{created['id']}"))["url"] == ACCEPTED


def test_public_https_url_is_stored(partner: Partner) -> None:
    created = partner.ok(partner.post("/lifecycle-webhooks", {"url": ACCEPTED, "enabled_events": ["*"]}), 201)
    assert created["url"] == ACCEPTED


def test_loopback_receivers_need_the_telecom_test_switch(partner: Partner, app: Flask) -> None:
    loopback = ("http://127.0.0.1:8765/hooks", "https://127.1/hooks", "https://0x7f.0.0.1/hooks")
    for url in loopback:
        refusal(partner.post("/lifecycle-webhooks", {"url": url, "enabled_events": ["*"]}))
    environment_app(app, "live").config["TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK"] = True  # tests' receivers
    for url in loopback:
        created = partner.ok(partner.post("/lifecycle-webhooks", {"url": url, "enabled_events": ["*"]}), 201)
        assert created["url"] == url
    refusal(partner.post("/lifecycle-webhooks", {"url": "https://0xa.0.0.1/x", "enabled_events": ["*"]}))
