"""Rate limits (core.ratelimit, docs/rate-limits.md): per organization and environment on the API, per
source address on refused authentications and on webhook deliveries; 429 in each area's error format with
``Retry-After`` and the ``RateLimit-*`` headers; documented on every operation."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from core import ratelimit
from core.environments import ENVIRONMENTS, environment_app
from tests.conftest import Org
from tests.support.servers import reachable_redis_url

LIVE_LIMIT = 3
HOURLY_LIMIT = 6
SANDBOX_LIMIT = 2
UNAUTHENTICATED_LIMIT = 2
WEBHOOK_LIMIT = 3


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {
        **app_config,
        "RATE_LIMIT_API": f"{LIVE_LIMIT}/minute;{HOURLY_LIMIT}/hour",
        "RATE_LIMIT_API_SANDBOX": f"{SANDBOX_LIMIT}/minute",
        "RATE_LIMIT_UNAUTHENTICATED": f"{UNAUTHENTICATED_LIMIT}/minute",
        "RATE_LIMIT_WEBHOOKS": f"{WEBHOOK_LIMIT}/minute",
        # One proxy (nginx) in front: the source is the last X-Forwarded-For entry, which lets the tests
        # speak from several addresses.
        "TRUSTED_PROXIES": 1,
    }


class Clock:
    """Stands in for ``time.monotonic`` inside core.ratelimit: windows end when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(ratelimit, "monotonic", fake)
    return fake


@pytest.fixture(autouse=True)
def full_buckets(app: Flask) -> Iterator[None]:
    """Applications are reused between tests: every test starts with untouched counts."""
    for environment in ENVIRONMENTS:
        ratelimit.reset(environment_app(app, environment))
    yield


def _from(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


# One read per area format: CRM, messaging/members (plain), telecom.
AREAS: dict[str, Callable[[Org], str]] = {
    "crm": lambda org: f"/v1/crm/organizations/{org.id}/tickets",
    "members": lambda org: f"/v1/members/organizations/{org.id}/members/ai-agents",
    "organizations": lambda org: "/v1/organizations",
    "telecom": lambda org: "/v1/partner/users",
}


def _message(area: str, body: dict[str, Any]) -> str:
    if area == "crm":
        assert body["statusCode"] == 429 and body["error"]["statusCode"] == 429
        assert body["error"]["error"] == "Too Many Requests"
        return str(body["error"]["message"])
    if area == "telecom":
        assert body["error"]["type"] == "rate_limit_error" and body["error"]["code"] == "rate_limited"
        assert body["error"]["request_id"]
        return str(body["error"]["message"])
    assert set(body) == {"statusCode", "message"} and body["statusCode"] == 429
    return str(body["message"])


@pytest.mark.parametrize("area", AREAS)
def test_over_the_limit_answers_429_in_the_area_format_with_headers(
    client: FlaskClient, org: Org, area: str
) -> None:
    path = AREAS[area](org)
    for used in range(1, LIVE_LIMIT + 1):
        ok = client.get(path, headers=org.headers())
        assert ok.status_code == 200, ok.get_json()
        assert ok.headers["RateLimit-Limit"] == str(LIVE_LIMIT)
        assert ok.headers["RateLimit-Remaining"] == str(LIVE_LIMIT - used)
        assert 0 < int(ok.headers["RateLimit-Reset"]) <= 60
        assert ok.headers["RateLimit-Policy"] == f"{LIVE_LIMIT};w=60, {HOURLY_LIMIT};w=3600"
        assert "Retry-After" not in ok.headers

    refused = client.get(path, headers=org.headers())

    assert refused.status_code == 429
    message = _message(area, refused.get_json())
    assert f"limited to {LIVE_LIMIT} per minute" in message and "live API" in message
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert refused.headers["RateLimit-Reset"] == refused.headers["Retry-After"]
    assert refused.headers["RateLimit-Limit"] == str(LIVE_LIMIT)
    assert refused.headers["RateLimit-Remaining"] == "0"


def test_live_and_sandbox_count_apart_with_their_own_limits(client: FlaskClient, org: Org) -> None:
    for _ in range(LIVE_LIMIT):
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 429

    sandbox = client.get("/sandbox/v1/organizations", headers=org.headers("sandbox"))
    assert sandbox.status_code == 200
    assert sandbox.headers["RateLimit-Limit"] == str(SANDBOX_LIMIT)
    assert client.get("/sandbox/v1/organizations", headers=org.headers("sandbox")).status_code == 200
    refused = client.get("/sandbox/v1/organizations", headers=org.headers("sandbox"))
    assert refused.status_code == 429
    assert "sandbox API" in refused.get_json()["message"]


def test_two_organizations_do_not_share_a_bucket(client: FlaskClient, org: Org, other_org: Org) -> None:
    for _ in range(LIVE_LIMIT):
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 429

    other = client.get("/v1/organizations", headers=other_org.headers())
    assert other.status_code == 200
    assert other.headers["RateLimit-Remaining"] == str(LIVE_LIMIT - 1)


def test_the_bucket_is_the_organization_not_the_key(client: FlaskClient, runner: Any, org: Org) -> None:
    created = runner.invoke(args=["keys", "create", "--org", org.id, "--env", "live", "--json"])
    assert created.exit_code == 0, created.output
    second_key = json.loads(created.stdout)["api_key"]
    for _ in range(LIVE_LIMIT):
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 200

    assert client.get("/v1/organizations", headers={"X-API-Key": second_key}).status_code == 429


def test_after_retry_after_seconds_a_request_succeeds(client: FlaskClient, org: Org, clock: Clock) -> None:
    for _ in range(LIVE_LIMIT):
        client.get("/v1/organizations", headers=org.headers())
    refused = client.get("/v1/organizations", headers=org.headers())
    assert refused.status_code == 429
    wait = int(refused.headers["Retry-After"])

    clock.advance(wait - 1)
    assert client.get("/v1/organizations", headers=org.headers()).status_code == 429
    clock.advance(1)
    again = client.get("/v1/organizations", headers=org.headers())
    assert again.status_code == 200
    assert again.headers["RateLimit-Remaining"] == str(LIVE_LIMIT - 1)


def test_every_window_applies_and_refused_requests_do_not_count(
    client: FlaskClient, org: Org, clock: Clock
) -> None:
    for _ in range(LIVE_LIMIT):
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    for _ in range(5):  # refused: must not eat into the hour
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 429

    clock.advance(60)  # the minute is over, the hour is not
    for _ in range(HOURLY_LIMIT - LIVE_LIMIT):
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    refused = client.get("/v1/organizations", headers=org.headers())
    assert refused.status_code == 429
    assert f"limited to {HOURLY_LIMIT} per hour" in refused.get_json()["message"]
    assert 3500 < int(refused.headers["Retry-After"]) <= 3540


def test_failed_authentications_are_limited_per_source(client: FlaskClient, org: Org, clock: Clock) -> None:
    guesser = _from("203.0.113.7")
    for _ in range(UNAUTHENTICATED_LIMIT):
        failed = client.get("/v1/organizations", headers={"X-API-Key": "sk_live_guess", **guesser})
        assert failed.status_code == 401
        assert failed.headers["RateLimit-Limit"] == str(UNAUTHENTICATED_LIMIT)

    refused = client.get("/v1/partner/users", headers={"X-API-Key": "sk_live_guess", **guesser})
    assert refused.status_code == 429
    assert refused.get_json()["error"]["code"] == "rate_limited"
    assert "without a valid API key" in refused.get_json()["error"]["message"]
    assert int(refused.headers["Retry-After"]) > 0
    # Blocked: even a right key from that address is not looked at until the window ends ...
    assert client.get("/v1/organizations", headers={**org.headers(), **guesser}).status_code == 429
    # ... while other addresses, spoofed entries before the proxy's included, are not affected.
    spoofed = _from("203.0.113.7, 198.51.100.2")
    assert client.get("/v1/organizations", headers={"X-API-Key": "nope", **spoofed}).status_code == 401
    assert (
        client.get("/v1/organizations", headers={**org.headers(), **_from("198.51.100.3")}).status_code == 200
    )

    clock.advance(int(refused.headers["Retry-After"]))
    assert client.get("/v1/organizations", headers={**org.headers(), **guesser}).status_code == 200


def test_webhook_deliveries_are_limited_per_source(client: FlaskClient) -> None:
    meta = _from("31.13.64.1")
    for _ in range(WEBHOOK_LIMIT):
        unsigned = client.post("/webhooks/meta", data=b"{}", headers=meta)
        assert unsigned.status_code == 401  # no META_APP_SECRET in tests: refused, but counted
        assert unsigned.headers["RateLimit-Limit"] == str(WEBHOOK_LIMIT)

    refused = client.post("/webhooks/meta", data=b"{}", headers=meta)
    assert refused.status_code == 429
    assert refused.get_json()["statusCode"] == 429
    assert "webhook delivery from one address" in refused.get_json()["message"]
    assert int(refused.headers["Retry-After"]) > 0
    assert client.post("/webhooks/meta", data=b"{}", headers=_from("31.13.64.2")).status_code == 401


def test_every_operation_documents_429_with_its_area_error_body(client: FlaskClient) -> None:
    document = client.get("/openapi.json").get_json()
    operations = with_headers = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete") or "/probe" in path:
                continue  # tests/support/probes.py adds undocumented test routes to these apps
            operations += 1
            responses = operation["responses"]
            assert "429" in responses, f"{method.upper()} {path}"
            schema = responses["429"]["content"]["application/json"]["schema"]
            assert schema == responses["401"]["content"]["application/json"]["schema"], path
            if "headers" in responses["429"]:
                with_headers += 1
                assert set(responses["429"]["headers"]) >= HEADERS, path
    # An operation that declares a 429 of its own (a provider's throttling) replaces the platform's
    # description; every other one carries the headers.
    assert operations > 100 and with_headers >= operations - 2


HEADERS = {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"}


class TestDisabled:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        return {**app_config, "RATE_LIMIT_ENABLED": False}

    def test_no_limit_and_no_headers(self, client: FlaskClient, org: Org) -> None:
        for _ in range(LIVE_LIMIT + 3):
            response = client.get("/v1/organizations", headers=org.headers())
            assert response.status_code == 200
            assert "RateLimit-Limit" not in response.headers
        for _ in range(UNAUTHENTICATED_LIMIT + 2):
            assert client.get("/v1/organizations", headers={"X-API-Key": "wrong"}).status_code == 401
        for _ in range(WEBHOOK_LIMIT + 2):
            assert client.post("/webhooks/meta", data=b"{}").status_code == 401


@pytest.mark.redis
class TestSharedThroughRedis:
    @pytest.fixture
    def app_config(self, app_config: dict[str, Any]) -> dict[str, Any]:
        # Only the counts go to Redis; jobs and Socket.IO stay in process as in every other test.
        return {**app_config, "RATELIMIT_STORAGE_URI": reachable_redis_url(), "RATE_LIMIT_API": "3/minute"}

    def test_two_application_instances_share_the_count(
        self, app: Flask, app_config: dict[str, Any], org: Org
    ) -> None:
        other_process = create_app(app_config).test_client()
        first = app.test_client()
        assert first.get("/v1/organizations", headers=org.headers()).status_code == 200
        assert other_process.get("/v1/organizations", headers=org.headers()).status_code == 200
        third = first.get("/v1/organizations", headers=org.headers())
        assert third.headers["RateLimit-Remaining"] == "0"

        refused = other_process.get("/v1/organizations", headers=org.headers())
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == refused.headers["RateLimit-Reset"]

    def test_live_and_sandbox_keep_apart_in_one_redis(self, client: FlaskClient, org: Org) -> None:
        for _ in range(3):
            assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 429
        sandbox = client.get("/sandbox/v1/organizations", headers=org.headers("sandbox"))
        assert sandbox.status_code == 200
        assert sandbox.headers["RateLimit-Remaining"] == str(SANDBOX_LIMIT - 1)

    def test_the_window_ends_in_redis_too(self, app: Flask, org: Org) -> None:
        limits = ratelimit.limits_of(environment_app(app, "live"))
        assert limits is not None
        rules = ratelimit.parse_rules("1/second")
        bucket = f"api:live:{org.id}:short"
        assert limits.counters.hit(bucket, rules).allowed  # type: ignore[union-attr]
        refused = limits.counters.hit(bucket, rules)
        assert refused is not None and not refused.allowed and refused.retry_after == 1
        time.sleep(1.05)
        assert limits.counters.hit(bucket, rules).allowed  # type: ignore[union-attr]


def test_desk_sign_in_failures_answer_429_with_retry_after(client: FlaskClient) -> None:
    """The desk's own limiter (blueprints/desk): 10 failed attempts a minute for one account."""
    page = client.get("/signin").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token is not None
    attempt = {"email": f"{uuid.uuid4().hex[:8]}@example.com", "password": "wrong", "csrf_token": token[1]}
    source = {"REMOTE_ADDR": "192.0.2.44"}  # its own address: the per-address count stays the suite's
    for _ in range(10):
        assert client.post("/signin", data=attempt, environ_base=source).status_code == 401

    refused = client.post("/signin", data=attempt, environ_base=source)

    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) > 0


def test_a_new_window_shows_its_full_length_not_one_second_more(monkeypatch: pytest.MonkeyPatch) -> None:
    from core import ratelimit

    # a clock reading where (now + 60) - now is 60.00000000000091 in floating point
    monkeypatch.setattr(ratelimit, "monotonic", lambda: 8174.326235239371)
    outcome = ratelimit.MemoryCounters().hit("bucket", ratelimit.parse_rules("60/minute"))
    assert outcome.windows[0].reset_seconds == 60
