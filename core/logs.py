"""Process logging: one configuration for every process, request context on each line, secrets masked.

``configure(settings)`` (called by ``create_app``) installs one handler on the root logger:

- ``LOG_FORMAT=text`` (default, for a terminal) or ``json`` (one JSON object per line, for a log shipper);
- ``LOG_LEVEL`` (default ``WARNING``, Python's own; access lines have their own switch);
- every record passes :class:`RequestContextFilter` (request id, method, path, environment, and the
  organization once the caller is authenticated) and :class:`RedactingFilter` (API keys, tokens, secrets,
  NIPs, CURPs and card numbers masked in the message, its arguments and the traceback).

``init_app(app)`` adds one access line per request (``LOG_REQUESTS``). See docs/operations.md.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from flask import Flask, Response, current_app, g, has_request_context, request

ACCESS_LOGGER = "agentdesk.access"
REDACTED = "[REDACTED]"

# --- redaction ---------------------------------------------------------------------------------------

# Names whose value is a secret wherever it is written ``name=value``, ``name: value``, ``"name": "value"``
# or ``name='value'`` (query strings, headers, dict and model reprs). The keyword must end the name
# (``access_token``, ``hub.verify_token``, ``X-API-Key``, ``webhook_secret``) so ``token_count`` or
# ``mapping`` are left alone.
_SECRET_NAMES = (
    r"password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|authorization|"
    r"signature|nip|pin|cvv|cvc|curp"
)
_LABELLED = re.compile(
    rf"""(?<![\w.-])(?P<name>(?:[\w.-]*[_.-])?(?:{_SECRET_NAMES}))(?P<sep>["']?\s*[:=]\s*)"""
    # not a key's shown prefix (``api_key:sk_live_ab12cd34``, the audit actor), which is public
    r"""(?!sk_(?:live|test)_[A-Za-z0-9]{8}(?![A-Za-z0-9]))"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^\s"'&,;)}\]]+)""",
    re.IGNORECASE,
)
# API keys: ``sk_live_``/``sk_test_`` + 40 characters. The shown prefix (8 characters) stays: it is the
# key's public name in listings and audit actors (``api_key:sk_live_ab12cd34``).
_API_KEY = re.compile(r"\b(sk_(?:live|test)_[A-Za-z0-9]{8})[A-Za-z0-9]+")
# Webhook signing secrets of the telecom lifecycle webhooks and agent notifications.
_WHSEC = re.compile(r"\bwhsec_[A-Za-z0-9_\-]+=*")
_BEARER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
# A JWT: base64url header that always starts ``{"`` (``eyJ``), then payload and signature.
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
# Meta (Graph API) access tokens start with ``EAA``.
_META_TOKEN = re.compile(r"\bEAA[A-Za-z0-9]{16,}")
# CURP: 4 letters, birth date, sex, state, 3 consonants, homonym digit, check digit. Only the first 4
# characters (initials, no date) are kept.
_CURP = re.compile(
    r"(?<![A-Za-z0-9])([A-Z][AEIOUX][A-Z]{2})\d{6}[HMX][A-Z]{2}[B-DF-HJ-NP-TV-Z]{3}[A-Z0-9]\d(?![A-Za-z0-9])",
    re.IGNORECASE,
)
# Card-like numbers: 13-19 digits (optionally grouped by single spaces or hyphens) that start like a
# payment card (2-6) and pass the Luhn check; only the last 4 digits stay. Numbers after ``+`` (E.164
# phones) and ICCIDs (``89…``) are not cards.
_CARD = re.compile(r"(?<![\w+.\-])[2-6]\d(?:[ -]?\d){11,17}(?![\w\-])")
# Credentials inside a URL (``postgresql://user:password@host/db``, ``redis://:password@host``).
_URL_CREDENTIALS = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^/\s@]*@", re.IGNORECASE)
# SQLAlchemy puts the statement's parameters (a CURP, a NIP, a key hash) in its exceptions' text.
_SQL_PARAMETERS = re.compile(r"\[parameters: [^\n]*\]")


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _mask_card(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = text.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or not _luhn_valid(digits):
        return text
    return "*" * (len(digits) - 4) + digits[-4:]


def _mask_labelled(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"


Replacement = str | Callable[[re.Match[str]], str]

# Each rule runs only when its cheap gate passes: a substring of the lower-cased text (C speed) or, for
# the numeric rules, a run of digits. A regular expression that starts with a look-behind or a class
# cannot use the engine's fast literal scan and costs ~100 ns per character, so without gates a 1 KiB
# line would cost ~1 ms; with them an ordinary line costs a few microseconds.
_LABELLED_NEEDLES = (
    "pass", "pwd", "secret", "token", "api", "authorization", "signature", "nip", "pin", "cvv", "cvc", "curp",
)  # fmt: skip
_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")
_RUN_OF_4, _RUN_OF_6 = "0000", "000000"  # in the text with every digit turned into 0

_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], Replacement], ...] = (
    (("[parameters:",), _SQL_PARAMETERS, f"[parameters: {REDACTED}]"),
    (("://",), _URL_CREDENTIALS, rf"\1{REDACTED}@"),
    (("sk_",), _API_KEY, rf"\1{REDACTED}"),
    (("whsec_",), _WHSEC, f"whsec_{REDACTED}"),
    (("bearer", "basic"), _BEARER, rf"\1 {REDACTED}"),
    (("eyj",), _JWT, REDACTED),
    (("eaa",), _META_TOKEN, REDACTED),
    (_LABELLED_NEEDLES, _LABELLED, _mask_labelled),
)
_NUMERIC_RULES: tuple[tuple[str, re.Pattern[str], Replacement], ...] = (
    (_RUN_OF_6, _CURP, lambda m: m.group(1) + "*" * 14),  # 6 digits of birth date
    (_RUN_OF_4, _CARD, _mask_card),  # every card format has a group of at least 4 digits
)


def redact(text: str) -> str:
    """``text`` with every secret this module knows masked (see docs/operations.md for the rules)."""
    # The gates look at the original text; masking only removes secrets (``[REDACTED]`` and ``*`` open
    # no gate), so a gate that passed for a secret already masked merely runs a regex for nothing.
    lowered = text.lower()
    for needles, pattern, replacement in _RULES:
        if any(needle in lowered for needle in needles):
            text = pattern.sub(replacement, text)
    digits = text.translate(_DIGITS_TO_ZERO)
    for run, pattern, replacement in _NUMERIC_RULES:
        if run in digits:
            text = pattern.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """Masks secrets in a record's final message, its traceback and stack before any handler formats it.

    The message is rendered once (``msg % args``) and the record keeps only the masked text, so a later
    handler or formatter cannot re-render the secret from ``args``. Idempotent: a record passing several
    handlers is masked once."""

    _traceback_formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_redacted", False):
            return True
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._traceback_formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        record._redacted = True
        return True


# --- request context ---------------------------------------------------------------------------------


_REQUEST_ID_KEY = "agentdesk.request_id"


class RequestContextFilter(logging.Filter):
    """Adds the request's id, method, path and environment, and the authenticated organization (API
    caller or desk user), to every record logged while a request is being handled."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is not None or not has_request_context():
            return True
        # g belongs to the app context: a job run inline inside the request (another app context) finds
        # the id on the request itself.
        record.request_id = getattr(g, "request_id", None) or request.environ.get(_REQUEST_ID_KEY)
        record.method = request.method
        record.path = redact(request.path)
        record.environment = current_app.config.get("AGENTDESK_ENV")
        # API callers (key, JWT) have a principal; desk users a signed-in user, read only when the
        # request already loaded it (loading it here would query the database from inside logging).
        caller = getattr(g, "principal", None) or getattr(g, "_login_user", None)
        organization_id = getattr(caller, "organization_id", None)
        if organization_id is not None:
            record.organization_id = str(organization_id)
        return True


_CONTEXT_FIELDS = ("request_id", "organization_id", "environment", "method", "path", "status", "duration_ms")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, the request context
    fields that are known, and ``exception`` with the (masked) traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in _CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = record.stack_info
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """Readable lines for a terminal, with the request id when there is one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(context)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", None)
        organization = getattr(record, "organization_id", None)
        context = f" [{request_id}]" if request_id else ""
        if organization:
            context += f" org={organization}"
        record.context = context
        return super().format(record)


class AgentDeskHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The one root handler this module installs (recognised, so a second ``configure`` replaces it).

    Without a stream of its own it writes to whatever ``sys.stderr`` is when each record is emitted:
    test runners and servers swap it, and a handler holding a closed stream would fail."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._own_stream = stream
        super().__init__(stream)

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return self._own_stream or sys.stderr

    @stream.setter
    def stream(self, value: TextIO | None) -> None:
        self._own_stream = value if value is not sys.stderr else None


def install_filters(handler: logging.Handler) -> None:
    """Context first, then redaction (the path is context and is masked too)."""
    if not any(isinstance(f, RequestContextFilter) for f in handler.filters):
        handler.addFilter(RequestContextFilter())
    if not any(isinstance(f, RedactingFilter) for f in handler.filters):
        handler.addFilter(RedactingFilter())


def configure(settings: dict[str, Any], stream: TextIO | None = None) -> logging.Handler:
    """Install (or replace) the root handler for ``settings``; every other root handler present (a test
    runner's, a host's) gets the same filters so nothing reaches any output unmasked."""
    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing, AgentDeskHandler):
            root.removeHandler(existing)
    handler = AgentDeskHandler(stream)
    handler.setFormatter(JsonFormatter() if settings.get("LOG_FORMAT") == "json" else TextFormatter())
    install_filters(handler)
    root.addHandler(handler)
    for other in root.handlers:
        install_filters(other)
    root.setLevel(settings.get("LOG_LEVEL") or "WARNING")
    access, werkzeug = logging.getLogger(ACCESS_LOGGER), logging.getLogger("werkzeug")
    if settings.get("LOG_REQUESTS"):
        # Access lines are wanted whatever LOG_LEVEL says, and ours (with request id and organization)
        # replace the development server's own.
        access.setLevel(logging.INFO)
        werkzeug.setLevel(logging.WARNING)
    else:
        access.setLevel(logging.NOTSET)
        werkzeug.setLevel(logging.NOTSET)  # Werkzeug then picks INFO itself, as without this module
    return handler


# --- access log --------------------------------------------------------------------------------------

access_log = logging.getLogger(ACCESS_LOGGER)


def _keep_request_id() -> None:
    """Runs after core.errors assigned the id (registered later): keep it where any app context sees it."""
    if request_id := getattr(g, "request_id", None):
        request.environ[_REQUEST_ID_KEY] = request_id


def _start_clock() -> None:
    g.log_started = time.perf_counter()


# Load balancers poll these every few seconds; their successes would drown the log.
_QUIET_PATHS = frozenset({"/healthz", "/readyz"})


def _log_access(response: Response) -> Response:
    if response.status_code == 200 and request.path in _QUIET_PATHS:
        return response
    started = getattr(g, "log_started", None)
    duration = round((time.perf_counter() - started) * 1000, 1) if started is not None else None
    access_log.info(
        "%s %s %s",
        request.method,
        request.path,
        response.status_code,
        extra={"status": response.status_code, "duration_ms": duration},
    )
    return response


def init_app(app: Flask) -> None:
    """Per request: the request id kept for every log line, and one access line (``LOG_REQUESTS``)
    with status and duration."""
    app.before_request(_keep_request_id)
    if app.config.get("LOG_REQUESTS"):
        app.before_request(_start_clock)
        app.after_request(_log_access)
