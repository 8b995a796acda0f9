"""Configuration from environment variables, with embedded defaults that run on a laptop.

Every setting has a default that needs no PostgreSQL and no Redis: both stores are SQLite files under
``instance/`` and realtime events and jobs stay in-process. Production sets ``DATABASE_URL``,
``SANDBOX_DATABASE_URL`` and ``REDIS_URL``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INSTANCE_PATH = PROJECT_ROOT / "instance"


DEFAULT_SOCKETIO_CHANNEL = "agentdesk-socketio"
# The queue name every deployment used before JOBS_QUEUE_NAME existed; kept for the default channel.
LEGACY_JOBS_QUEUE_NAME = "agentdesk"


def jobs_queue_name(socketio_channel: str | None) -> str:
    """The job queue's name when ``JOBS_QUEUE_NAME`` is unset: the Socket.IO channel's name, except for
    the default channel, which keeps the queue's historical name ``agentdesk``. A deployment upgraded
    without setting either variable finds the jobs it had queued and scheduled (retries hours ahead)
    where it left them, instead of orphaning them under a key no worker reads."""
    if not socketio_channel or socketio_channel == DEFAULT_SOCKETIO_CHANNEL:
        return LEGACY_JOBS_QUEUE_NAME
    return socketio_channel


def normalize_database_url(url: str) -> str:
    """Point plain ``postgresql://`` URLs at psycopg 3, the driver this project installs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _persistent_secret(instance_path: Path) -> str:
    """A random secret kept in ``instance/secret_key`` so sessions and JWTs survive restarts."""
    path = instance_path / "secret_key"
    if path.exists():
        return path.read_text().strip()
    instance_path.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(48)
    path.write_text(value)
    path.chmod(0o600)
    return value


def load_settings(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Settings shared by both environments; ``overrides`` wins over the environment variables."""
    overrides = dict(overrides or {})
    env = os.environ
    instance_path = Path(overrides.get("INSTANCE_PATH") or env.get("INSTANCE_PATH") or DEFAULT_INSTANCE_PATH)
    instance_path.mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "INSTANCE_PATH": str(instance_path),
        "DATABASE_URL": env.get("DATABASE_URL") or f"sqlite:///{instance_path / 'agentdesk.db'}",
        "SANDBOX_DATABASE_URL": env.get("SANDBOX_DATABASE_URL")
        or f"sqlite:///{instance_path / 'agentdesk-sandbox.db'}",
        "REDIS_URL": env.get("REDIS_URL") or None,
        "SECRET_KEY": env.get("SECRET_KEY") or None,
        # Jobs: "inline" runs a job at once in the caller (tests), "embedded" keeps a SQLite queue under
        # instance/ consumed by threads of the server process, "redis" uses REDIS_URL.
        "JOBS_MODE": env.get("JOBS_MODE") or ("redis" if env.get("REDIS_URL") else "embedded"),
        "JWT_TTL_SECONDS": int(env.get("JWT_TTL_SECONDS", "3600")),
        "API_KEY_TOUCH_SECONDS": int(env.get("API_KEY_TOUCH_SECONDS", "60")),
        "SANDBOX_PREFIX": "/sandbox",
        # Redis pub/sub channel of the Socket.IO message queue; a separate one isolates a deployment (or a
        # test run) that shares a Redis server with others.
        "SOCKETIO_CHANNEL": env.get("SOCKETIO_CHANNEL") or DEFAULT_SOCKETIO_CHANNEL,
        # Name of the job queue (core.jobs): every Redis key of the queue (pending, scheduled, results,
        # locks) and the rows of the embedded SQLite queue carry it. Unset: derived from SOCKETIO_CHANNEL
        # after the overrides (see jobs_queue_name), so the one setting that separates deployments sharing
        # a Redis separates their queues too.
        "JOBS_QUEUE_NAME": env.get("JOBS_QUEUE_NAME") or None,
        # Channels (see docs/channels.md). The Graph base URL carries the API version; tests point it at
        # a loopback fake. Without META_APP_SECRET every webhook delivery is refused (nothing unsigned
        # is ever stored). CHANNEL_TOKEN_KEY is a Fernet key for access tokens at rest; when unset it is
        # derived from SECRET_KEY with HKDF.
        "META_GRAPH_URL": env.get("META_GRAPH_URL") or "https://graph.facebook.com/v23.0",
        "META_VERIFY_TOKEN": env.get("META_VERIFY_TOKEN") or None,
        "META_APP_SECRET": env.get("META_APP_SECRET") or None,
        "META_HTTP_TIMEOUT": float(env.get("META_HTTP_TIMEOUT", "15")),
        "CHANNEL_TOKEN_KEY": env.get("CHANNEL_TOKEN_KEY") or None,
        # Voice (docs/voice.md): Twilio's REST host (tests point it at a loopback fake) and the address the
        # carrier calls back, from which callback URLs are built and X-Twilio-Signature is checked.
        "TWILIO_API_BASE_URL": (env.get("TWILIO_API_BASE_URL") or "https://api.twilio.com").rstrip("/"),
        "TWILIO_HTTP_TIMEOUT": float(env.get("TWILIO_HTTP_TIMEOUT", "15")),
        "PUBLIC_BASE_URL": (env.get("PUBLIC_BASE_URL") or "http://127.0.0.1:5000").rstrip("/"),
        "VOICE_SIMULATOR_STEP_SECONDS": float(env.get("VOICE_SIMULATOR_STEP_SECONDS", "1")),
        # A member whose last connection drops goes offline only after this grace (docs/members.md).
        "PRESENCE_GRACE_SECONDS": float(env.get("PRESENCE_GRACE_SECONDS", "30")),
        # Each process refreshes its members' connections this often; rows older than the stale limit
        # belonged to a process that died and are swept (members left without a connection go offline).
        "PRESENCE_HEARTBEAT_SECONDS": float(env.get("PRESENCE_HEARTBEAT_SECONDS", "20")),
        "DESK_SESSION_CHECK_SECONDS": float(env.get("DESK_SESSION_CHECK_SECONDS", "5")),
        "PRESENCE_STALE_SECONDS": float(env.get("PRESENCE_STALE_SECONDS", "90")),
        # Largest request body read at all (413 in the area's error format beyond it); Meta's webhook
        # deliveries and every API body are far below 1 MiB.
        "MAX_CONTENT_LENGTH": int(env.get("MAX_BODY_BYTES", str(1024 * 1024))),
        # Broadcast pacing per sending number (Meta's default throughput is 80 messages per second).
        "BROADCAST_RATE_PER_SECOND": int(env.get("BROADCAST_RATE_PER_SECOND", "80")),
        # Telecom lifecycle webhooks (docs/telecom.md): the delivery timeout; the Fernet key for endpoint
        # secrets at rest (derived from SECRET_KEY when unset); plain http to 127.0.0.1 for local receivers
        # (tests, a developer's laptop) — never on in production.
        # Mexican carrier adapter by name; unset: the carrier simulator (the sandbox always uses it).
        "TELECOM_CARRIER": env.get("TELECOM_CARRIER") or None,
        # Travel eSIM supplier adapter by name; unset: the simulator (the sandbox always uses it).
        "TELECOM_TRAVEL_SUPPLIER": env.get("TELECOM_TRAVEL_SUPPLIER") or None,
        "TELECOM_WEBHOOKS_TIMEOUT": float(env.get("TELECOM_WEBHOOKS_TIMEOUT", "10")),
        "TELECOM_WEBHOOK_SECRET_KEY": env.get("TELECOM_WEBHOOK_SECRET_KEY") or None,
        "TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK": env.get("TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK", "")
        .strip()
        .lower()
        in ("1", "true", "yes"),
        # The demo organization's simulated customers write now and then (once a minute) so a newcomer sees
        # the desk live; "0" turns it off. Only the demo organization (core.demo) ever gets these.
        "DEMO_LIVE_MESSAGES": env.get("DEMO_LIVE_MESSAGES", "1").strip().lower()
        not in ("0", "false", "no", "off"),
        # API keys resolved in process (core.keycache): at most this many per store (0: no cache); trusted
        # API_KEY_CACHE_SECONDS while subscribed to the invalidation channel on REDIS_URL, otherwise
        # API_KEY_CACHE_LOCAL_SECONDS (how long a key revoked by another process may still be accepted).
        # The channel defaults to SOCKETIO_CHANNEL + "-apikeys", so isolating one isolates both.
        "API_KEY_CACHE_SIZE": int(env.get("API_KEY_CACHE_SIZE", "10000")),
        "API_KEY_CACHE_SECONDS": float(env.get("API_KEY_CACHE_SECONDS", "60")),
        "API_KEY_CACHE_LOCAL_SECONDS": float(env.get("API_KEY_CACHE_LOCAL_SECONDS", "1")),
        "API_KEY_CACHE_CHANNEL": env.get("API_KEY_CACHE_CHANNEL") or None,
        # Webhook deliveries (docs/channels.md): "deferred" stores each and drains them in batches of
        # INGEST_BATCH_SIZE; "inline" stores inside the request. Unset: inline with JOBS_MODE=inline.
        "INGEST_MODE": env.get("INGEST_MODE") or None,
        "INGEST_BATCH_SIZE": int(env.get("INGEST_BATCH_SIZE", "200")),
        "INGEST_BATCH_EVENTS": int(env.get("INGEST_BATCH_EVENTS", "500")),
        # Pooled database connections are replaced after this age (instead of a pre-ping per request).
        "DATABASE_POOL_RECYCLE_SECONDS": int(env.get("DATABASE_POOL_RECYCLE_SECONDS", "1800")),
        "DATABASE_AUTOCOMMIT_READS": env.get("DATABASE_AUTOCOMMIT_READS", "true").strip().lower()
        not in ("0", "false", "no", "off"),
        # Rate limits (core.ratelimit, docs/rate-limits.md): per organization and environment for the
        # API, per source address for refused authentications and for webhook deliveries. Counted in
        # RATELIMIT_STORAGE_URI: memory (per process) by default, REDIS_URL when set (all processes).
        "RATE_LIMIT_ENABLED": env.get("RATE_LIMIT_ENABLED", "true").strip().lower()
        not in ("0", "false", "no", "off"),
        "RATE_LIMIT_API": env.get("RATE_LIMIT_API") or "100/second;3000/minute",
        "RATE_LIMIT_API_SANDBOX": env.get("RATE_LIMIT_API_SANDBOX") or "25/second;1000/minute",
        "RATE_LIMIT_UNAUTHENTICATED": env.get("RATE_LIMIT_UNAUTHENTICATED") or "30/minute",
        "RATE_LIMIT_WEBHOOKS": env.get("RATE_LIMIT_WEBHOOKS") or "2000/second",
        "TRUSTED_PROXIES": int(env.get("TRUSTED_PROXIES", "0")),
        "RATELIMIT_STORAGE_URI": env.get("RATELIMIT_STORAGE_URI") or None,
        # Logs (core.logs, docs/operations.md): "text" for a terminal, "json" (one object per line) for a
        # log shipper; one access line per request, on by default with json (the development server
        # prints its own in text mode).
        "LOG_FORMAT": (env.get("LOG_FORMAT") or "text").strip().lower(),
        "LOG_LEVEL": (env.get("LOG_LEVEL") or "WARNING").strip().upper(),
        "LOG_REQUESTS": None
        if env.get("LOG_REQUESTS") is None
        else env["LOG_REQUESTS"].strip().lower() in ("1", "true", "yes", "on"),
    }
    settings.update(overrides)
    if not settings["RATELIMIT_STORAGE_URI"]:  # after the overrides: a test's REDIS_URL=None wins
        settings["RATELIMIT_STORAGE_URI"] = settings["REDIS_URL"] or "memory://"
    if not settings["JOBS_QUEUE_NAME"]:  # after the overrides too: a test's own channel wins
        settings["JOBS_QUEUE_NAME"] = jobs_queue_name(settings["SOCKETIO_CHANNEL"])
    if not settings["SECRET_KEY"]:
        settings["SECRET_KEY"] = _persistent_secret(instance_path)
    settings["DATABASE_URL"] = normalize_database_url(settings["DATABASE_URL"])
    settings["SANDBOX_DATABASE_URL"] = normalize_database_url(settings["SANDBOX_DATABASE_URL"])
    if settings["LOG_REQUESTS"] is None:
        settings["LOG_REQUESTS"] = settings["LOG_FORMAT"] == "json"
    return settings
