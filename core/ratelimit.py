"""Rate limits on the JSON API and the provider webhooks (docs/rate-limits.md).

Buckets, each a set of fixed windows parsed from a Flask-Limiter style string (``"100/second;3000/minute"``):

- ``api:<environment>:<organization>``: every authenticated API request of an organization, whatever key
  or JWT it carries (Stripe's model: per account, live and test counted apart), so creating more keys
  never multiplies the quota. ``core.auth.protect`` calls :func:`count_request` once the caller is known.
- ``unauthenticated:<source>``: API requests answered 401 from one source address. Failures only, so a
  valid caller pays nothing for it; once a source is over, this process refuses its API requests with 429
  before looking at the key until the window ends (guessing keys, or hammering the key lookup with
  unknown ones, stops there).
- ``webhooks:<source>``: deliveries to ``/webhooks/...`` from one source address (generous: Meta bursts).

A request costs one counter call: in process for ``memory://``, one Redis round trip (a Lua script that
checks and increments every window of the bucket at once) for ``redis://``. A request over the limit
increments nothing, so rejected retries do not push the longer windows further out. When Redis cannot
be reached the request is let through (availability first) and the failure logged.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from time import monotonic
from typing import TYPE_CHECKING, Protocol

import redis
from flask import Flask, Response, current_app, g, request
from limits import RateLimitItem, parse_many

from core.errors import ApiError, error_response, format_for_path

if TYPE_CHECKING:
    from core.auth import Principal

log = logging.getLogger(__name__)

EXTENSION = "agentdesk_rate_limits"
WEBHOOKS_PREFIX = "/webhooks/"


# ---- rules and outcomes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One window of a bucket: at most ``amount`` requests per ``seconds``."""

    amount: int
    seconds: int
    text: str  # "100 per second", for messages

    @classmethod
    def from_item(cls, item: RateLimitItem) -> Rule:
        unit = item.GRANULARITY.name
        per = unit if item.multiples == 1 else f"{item.multiples} {unit}s"
        return cls(item.amount, item.get_expiry(), f"{item.amount} per {per}")


def parse_rules(text: str) -> tuple[Rule, ...]:
    """``"100/second;3000/minute"`` (any string Flask-Limiter and ``limits`` accept) as rules."""
    rules = tuple(Rule.from_item(item) for item in parse_many(text))
    if not rules:
        raise ValueError(f"no rate limit in {text!r}")
    return rules


@dataclass(frozen=True)
class Window:
    """A rule's state after this request: requests counted in the window and seconds until it ends."""

    rule: Rule
    count: int
    reset_seconds: int

    @property
    def remaining(self) -> int:
        return max(self.rule.amount - self.count, 0)

    @property
    def exhausted(self) -> bool:
        return self.count >= self.rule.amount


@dataclass(frozen=True)
class Outcome:
    allowed: bool
    windows: tuple[Window, ...]

    @property
    def binding(self) -> Window:
        """The window shown in the headers: the one closest to exhaustion (the IETF draft's advice),
        and of those the one that lasts longest, so ``RateLimit-Reset`` equals ``Retry-After`` on 429."""
        return min(self.windows, key=lambda w: (w.remaining, -w.reset_seconds))

    def headers(self) -> dict[str, str]:
        shown = self.binding
        headers = {
            "RateLimit-Limit": str(shown.rule.amount),
            "RateLimit-Remaining": str(shown.remaining),
            "RateLimit-Reset": str(shown.reset_seconds),
            "RateLimit-Policy": ", ".join(f"{w.rule.amount};w={w.rule.seconds}" for w in self.windows),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after)
        return headers

    @property
    def retry_after(self) -> int:
        return max(w.reset_seconds for w in self.windows if w.exhausted)


def _seconds(milliseconds: float) -> int:
    # whole milliseconds first: a window made this instant has (now + 60) - now = 60.00000000000001 s
    # left in floating point, which rounded up to a 61-second reset for a 60-second window
    return max(math.ceil(round(milliseconds) / 1000), 1)


# ---- counters -----------------------------------------------------------------------------------------


class Counters(Protocol):
    def hit(self, key: str, rules: Sequence[Rule]) -> Outcome | None:
        """Count one request against every rule of the bucket ``key`` when none is exhausted. ``None``
        when the store cannot answer (the caller lets the request through)."""

    def clear(self) -> None:
        """Forget every count."""


class MemoryCounters:
    """Fixed windows in this process (the default without Redis: each process counts on its own)."""

    SWEEP_EVERY = 1000

    def __init__(self) -> None:
        self._windows: dict[str, list[float]] = {}  # key -> [count, ends_at]
        self._lock = threading.Lock()
        self._hits = 0

    def hit(self, key: str, rules: Sequence[Rule]) -> Outcome:
        now = monotonic()  # looked up at each call: tests move the module's clock
        with self._lock:
            self._hits += 1
            if self._hits % self.SWEEP_EVERY == 0:
                self._sweep(now)
            states = []
            for rule in rules:
                state = self._windows.get(f"{key}:{rule.seconds}")
                if state is None or state[1] <= now:
                    state = [0, now + rule.seconds]
                states.append(state)
            allowed = all(state[0] < rule.amount for state, rule in zip(states, rules, strict=True))
            if allowed:
                for state, rule in zip(states, rules, strict=True):
                    state[0] += 1
                    self._windows[f"{key}:{rule.seconds}"] = state
        return Outcome(
            allowed,
            tuple(
                Window(rule, int(state[0]), _seconds((state[1] - now) * 1000))
                for state, rule in zip(states, rules, strict=True)
            ),
        )

    def _sweep(self, now: float) -> None:
        """Forget ended windows so sources seen once do not stay in memory."""
        for key in [k for k, state in self._windows.items() if state[1] <= now]:
            del self._windows[key]

    def clear(self) -> None:
        with self._lock:
            self._windows.clear()


# Check every window first, increment them only when none is exhausted; answer each window's count and
# milliseconds left. KEYS: one per rule. ARGV: the rules' amounts, then their windows in milliseconds.
_CHECK_AND_INCREMENT = """
local n = #KEYS
local counts, ttls, allowed = {}, {}, 1
for i = 1, n do
  local ttl = redis.call('PTTL', KEYS[i])
  local count = 0
  if ttl > 0 then
    count = tonumber(redis.call('GET', KEYS[i]) or '0')
  else
    ttl = tonumber(ARGV[n + i])
  end
  counts[i], ttls[i] = count, ttl
  if count >= tonumber(ARGV[i]) then allowed = 0 end
end
if allowed == 1 then
  for i = 1, n do
    if counts[i] == 0 then
      redis.call('SET', KEYS[i], 1, 'PX', ARGV[n + i])
    else
      redis.call('INCR', KEYS[i])
    end
    counts[i] = counts[i] + 1
  end
end
local answer = {allowed}
for i = 1, n do answer[#answer + 1] = counts[i] end
for i = 1, n do answer[#answer + 1] = ttls[i] end
return answer
"""


class RedisCounters:
    """Fixed windows in Redis, shared by every process: one script call (one round trip) per request."""

    # After a failure Redis is not asked again for this long: a dead Redis must not add a connection
    # timeout to every request.
    PAUSE_AFTER_ERROR_SECONDS = 1.0

    def __init__(self, url: str, prefix: str) -> None:
        self.prefix = prefix
        self._client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self._script = self._client.register_script(_CHECK_AND_INCREMENT)
        self._paused_until = 0.0

    def hit(self, key: str, rules: Sequence[Rule]) -> Outcome | None:
        if monotonic() < self._paused_until:
            return None
        # One hash tag per bucket: all its keys live in one Redis Cluster slot, as a script needs.
        keys = [f"{self.prefix}:{{{key}}}:{rule.seconds}" for rule in rules]
        args = [rule.amount for rule in rules] + [rule.seconds * 1000 for rule in rules]
        try:
            answer = self._script(keys=keys, args=args)
        except redis.RedisError:
            self._paused_until = monotonic() + self.PAUSE_AFTER_ERROR_SECONDS
            log.warning("rate limits not counted: Redis did not answer", exc_info=True)
            return None
        n = len(rules)
        return Outcome(
            answer[0] == 1,
            tuple(
                Window(rule, int(answer[1 + i]), _seconds(int(answer[1 + n + i])))
                for i, rule in enumerate(rules)
            ),
        )

    def clear(self) -> None:
        for key in self._client.scan_iter(f"{self.prefix}:*"):
            self._client.delete(key)


def counters_for(storage_uri: str, prefix: str) -> Counters:
    if storage_uri.startswith("memory://"):
        return MemoryCounters()
    if storage_uri.startswith(("redis://", "rediss://", "unix://")):
        return RedisCounters(storage_uri, prefix)
    raise ValueError(f"RATELIMIT_STORAGE_URI must be memory:// or a redis:// URL, not {storage_uri!r}")


# ---- per application ----------------------------------------------------------------------------------


@dataclass
class RateLimits:
    environment: str
    api: tuple[Rule, ...]
    unauthenticated: tuple[Rule, ...]
    webhooks: tuple[Rule, ...]
    counters: Counters
    # Webhook deliveries count in this process only: the limit is a flood guard in front of the signature
    # check, and a Redis round trip per delivery was a seventh of the accept path's time (docs/benchmarks).
    webhook_counters: Counters
    trusted_proxies: int
    # Sources over the unauthenticated limit, and until when (monotonic()) this process refuses them.
    blocked_sources: dict[str, float]


def limits_of(app: Flask) -> RateLimits | None:
    """The application's limits; ``None`` when they are off (``RATE_LIMIT_ENABLED=false``)."""
    return app.extensions.get(EXTENSION)


def init_app(app: Flask) -> None:
    config = app.config
    if not config["RATE_LIMIT_ENABLED"]:
        app.extensions[EXTENSION] = None
        return
    environment = config["AGENTDESK_ENV"]
    api_setting = "RATE_LIMIT_API" if environment == "live" else "RATE_LIMIT_API_SANDBOX"
    app.extensions[EXTENSION] = RateLimits(
        environment=environment,
        api=parse_rules(config[api_setting]),
        unauthenticated=parse_rules(config["RATE_LIMIT_UNAUTHENTICATED"]),
        webhooks=parse_rules(config["RATE_LIMIT_WEBHOOKS"]),
        counters=counters_for(config["RATELIMIT_STORAGE_URI"], f"{config['SOCKETIO_CHANNEL']}-ratelimit"),
        webhook_counters=MemoryCounters(),
        trusted_proxies=int(config["TRUSTED_PROXIES"]),
        blocked_sources={},
    )
    app.before_request(_limit_sources)
    app.after_request(_finish)


def source_address(limits: RateLimits) -> str:
    """The client's address: the remote end, or with ``trusted_proxies`` proxies in front (nginx) the
    entry of ``X-Forwarded-For`` the outermost trusted proxy wrote (what ProxyFix's ``x_for`` reads)."""
    if limits.trusted_proxies:
        forwarded = [part.strip() for part in request.headers.get("X-Forwarded-For", "").split(",")]
        forwarded = [part for part in forwarded if part]
        if len(forwarded) >= limits.trusted_proxies:
            return forwarded[-limits.trusted_proxies]
    return request.remote_addr or "unknown"


def _too_many(outcome: Outcome, what: str) -> ApiError:
    window = outcome.binding
    message = (
        f"Too many requests: {what} is limited to {window.rule.text}; retry after {outcome.retry_after} s"
    )
    return ApiError(429, message, headers=outcome.headers())


def count_request(principal: Principal) -> None:
    """Count an authenticated API request against its organization's bucket; 429 when it is spent.
    Called by ``core.auth.protect`` right after the caller is known."""
    limits = limits_of(current_app)
    if limits is None:
        return
    bucket = f"api:{limits.environment}:{principal.organization_id}"
    outcome = limits.counters.hit(bucket, limits.api)
    if outcome is None:
        return
    g.rate_limit = outcome
    if not outcome.allowed:
        raise _too_many(outcome, f"this organization's {limits.environment} API traffic")


def _is_api_request() -> bool:
    return (
        request.url_rule is not None
        and request.method != "OPTIONS"
        and not request.path.startswith(WEBHOOKS_PREFIX)
        and format_for_path(request.path) is not None
    )


def _limit_sources() -> None:
    """Before any authentication: webhook deliveries count per source; a source over the unauthenticated
    limit is refused without its key being looked at."""
    limits = limits_of(current_app)
    if limits is None:
        return
    if request.path.startswith(WEBHOOKS_PREFIX):
        outcome = limits.webhook_counters.hit(f"webhooks:{source_address(limits)}", limits.webhooks)
        if outcome is not None:
            g.rate_limit = outcome
            if not outcome.allowed:
                raise _too_many(outcome, "webhook delivery from one address")
        return
    if not limits.blocked_sources or not _is_api_request():
        return
    source = source_address(limits)
    until = limits.blocked_sources.get(source)
    if until is None:
        return
    left = until - monotonic()
    if left <= 0:
        limits.blocked_sources.pop(source, None)
        return
    shown = max(limits.unauthenticated, key=lambda rule: rule.seconds)
    blocked = Outcome(False, (Window(shown, shown.amount, _seconds(left * 1000)),))
    raise _too_many(blocked, "requests without a valid API key from one address")


def _finish(response: Response) -> Response:
    """Count a refused authentication against its source (429 instead of 401 once over), and add the
    ``RateLimit-*`` headers of the request's bucket to every limited response."""
    limits = limits_of(current_app)
    if limits is None:
        return response
    if response.status_code == 401 and _is_api_request():
        source = source_address(limits)
        outcome = limits.counters.hit(f"unauthenticated:{source}", limits.unauthenticated)
        if outcome is not None and not outcome.allowed:
            _forget_ended_blocks(limits)
            limits.blocked_sources[source] = monotonic() + outcome.retry_after
            refused = error_response(_too_many(outcome, "requests without a valid API key from one address"))
            # Keep what other hooks already added to the 401 (security headers, cookies): only the body,
            # status and rate limit headers change.
            for name, value in response.headers.items():
                if name not in refused.headers and name.lower() not in ("content-type", "content-length"):
                    refused.headers.add(name, value)
            return refused
        if outcome is not None:
            g.rate_limit = outcome
    outcome = getattr(g, "rate_limit", None)
    if outcome is not None:
        for name, value in outcome.headers().items():
            response.headers.setdefault(name, value)
    return response


def _forget_ended_blocks(limits: RateLimits, keep_at_most: int = 10_000) -> None:
    """Sources blocked once and never seen again must not stay in memory for ever."""
    if len(limits.blocked_sources) < keep_at_most:
        return
    now = monotonic()
    for source in [s for s, until in limits.blocked_sources.items() if until <= now]:
        limits.blocked_sources.pop(source, None)


def reset(app: Flask) -> None:
    """Forget every count of ``app`` (tests: a reused application starts each test with full buckets)."""
    limits = limits_of(app)
    if limits is not None:
        limits.counters.clear()
        limits.blocked_sources.clear()
