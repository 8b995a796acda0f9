"""The log redaction rules one by one, the filter on the installed handler, the JSON and text formats,
and the settings that choose them."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from core import logs
from core.config import load_settings
from core.logs import REDACTED, RedactingFilter, redact

API_KEY = "sk_live_AbCd1234" + "x9Y8z7W6v5U4t3S2r1Q0p9O8n7M6l5K4"
CURP = "GOMC800101HDFRRN09"
CARD = "4111111111111111"  # Luhn-valid test Visa


@pytest.fixture
def root_logging() -> Iterator[logging.Logger]:
    """Root handlers and level as they were: these tests install their own handler."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    root.handlers[:] = handlers
    root.setLevel(level)


def _capture(settings: dict[str, Any] | None = None) -> io.StringIO:
    buffer = io.StringIO()
    logs.configure({"LOG_FORMAT": "json", "LOG_LEVEL": "DEBUG", **(settings or {})}, stream=buffer)
    return buffer


# --- the rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # API keys keep their shown prefix (sk_live_ + 8), their public name in listings and audit actors
        (f"key {API_KEY} refused", f"key sk_live_AbCd1234{REDACTED} refused"),
        ("sk_test_AbCd1234efgh5678", f"sk_test_AbCd1234{REDACTED}"),
        ("actor api_key:sk_live_AbCd1234 did it", "actor api_key:sk_live_AbCd1234 did it"),
        ("secret whsec_Zx-9_aBcDeFgHiJkLmN=", f"secret whsec_{REDACTED}"),
        ("Authorization: Bearer abc.DEF-123_x/y+z==", f"Authorization: {REDACTED} {REDACTED}"),
        ("sent Bearer abc123", f"sent Bearer {REDACTED}"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl end", f"jwt {REDACTED} end"),
        ("graph token EAAGm0PX4ZCpsBAKZCZBqZA0ZD used", f"graph token {REDACTED} used"),
        (
            "GET /webhooks/meta?hub.mode=subscribe&hub.verify_token=s3cr3t&hub.challenge=42",
            f"GET /webhooks/meta?hub.mode=subscribe&hub.verify_token={REDACTED}&hub.challenge=42",
        ),
        (
            '{"email": "a@b.mx", "password": "correct horse"}',
            f'{{"email": "a@b.mx", "password": "{REDACTED}"}}',
        ),
        (
            "{'nip': '9753', 'phone_number': '+525587654329'}",
            f"{{'nip': '{REDACTED}', 'phone_number': '+525587654329'}}",
        ),
        ("porting nip=9753 accepted", f"porting nip={REDACTED} accepted"),
        ("X-API-Key: abc", f"X-API-Key: {REDACTED}"),
        ("access_token=abc&x=1", f"access_token={REDACTED}&x=1"),
        ("postgresql://agentdesk:pw@db:5432/live", f"postgresql://{REDACTED}@db:5432/live"),
        ("redis://:pw@10.0.0.5:6379/0", f"redis://{REDACTED}@10.0.0.5:6379/0"),
        (
            "(psycopg.errors.X) boom\n[SQL: INSERT ...]\n[parameters: ('9753', 'x')]",
            f"(psycopg.errors.X) boom\n[SQL: INSERT ...]\n[parameters: {REDACTED}]",
        ),
        # CURP: at most the first 4 characters, upper or lower case
        (f"holder {CURP} verified", "holder GOMC************** verified"),
        (f"curp:{CURP.lower()}", f"curp:{REDACTED}"),
        (CURP.lower(), "gomc**************"),
        # card-like numbers: Luhn-valid, 13-19 digits, plain or grouped; the last 4 stay
        (f"card {CARD}", "card ************1111"),
        ("card 4111 1111 1111 1111 ok", "card ************1111 ok"),
        ("amex 3782-822463-10005", "amex ***********0005"),
    ],
)
def test_each_secret_is_masked(raw: str, expected: str) -> None:
    assert redact(raw) == expected


@pytest.mark.parametrize(
    "harmless",
    [
        "GET /v1/partner/users/0b6f0d4e-8a9b-4c1d-9e2f-3a4b5c6d7e8f 200",
        "card 4111111111111112 failed Luhn",  # not Luhn-valid: an order number, not a card
        "from +5215512345678",  # E.164 phone numbers are not cards
        "iccid 8952140000000000012",  # ICCIDs (89...) are SIM numbers, not cards
        "1732400000000 ms since the epoch",
        "token_count=12 mapping=ok shipping=3",
        "sk_live_AbCd1234",  # a key's shown prefix alone is not the key
        "wamid.HBgLNTIxNTUxMjM0NTY3OBUCABIYIDNBMzQ1",
    ],
)
def test_ordinary_text_is_left_alone(harmless: str) -> None:
    assert redact(harmless) == harmless


# --- the filter on a record --------------------------------------------------------------------------


def _record(msg: str, *args: Any, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise RuntimeError(f"lookup of {API_KEY} failed")
        except RuntimeError:
            exc_info = sys.exc_info()
    return logging.LogRecord("t", logging.ERROR, __file__, 1, msg, args or None, exc_info)


def test_the_filter_masks_arguments_the_traceback_and_the_stack() -> None:
    record = _record("holder %s paid with %s", CURP, CARD, exc=True)
    record.stack_info = f"Stack (most recent call last):\n  nip={9753}"

    assert RedactingFilter().filter(record) is True

    rendered = logging.Formatter().format(record)
    for secret in (API_KEY, CURP, CARD, "9753"):
        assert secret not in rendered
    assert "GOMC" in rendered and "1111" in rendered
    # the arguments are gone: no later formatter can render the secret again
    assert record.args is None


def test_the_filter_masks_once() -> None:
    record = _record("key %s", API_KEY)
    RedactingFilter().filter(record)
    first = record.getMessage()
    RedactingFilter().filter(record)
    assert record.getMessage() == first == f"key sk_live_AbCd1234{REDACTED}"


def test_the_installed_handler_masks_every_record(root_logging: logging.Logger) -> None:
    """Fails if configure() stops installing the redaction filter."""
    buffer = _capture()

    logging.getLogger("blueprints.anything").debug(
        "calling Graph with %s", "Bearer EAAGm0PX4ZCpsBAKZCZBqZA0ZD"
    )
    try:
        raise ValueError(f"holder {CURP} card {CARD}")
    except ValueError:
        logging.getLogger("core.errors").exception("unhandled error on POST /v1/partner/users")

    output = buffer.getvalue()
    assert output.count("\n") == 2
    for secret in ("EAAGm0PX4ZCpsBAKZCZBqZA0ZD", CURP, CARD):
        assert secret not in output
    error = json.loads(output.splitlines()[1])
    assert error["level"] == "ERROR" and error["logger"] == "core.errors"
    assert "ValueError: holder GOMC**************" in error["exception"]


def test_other_root_handlers_get_the_filter_too(root_logging: logging.Logger) -> None:
    """A handler the host added (a test runner's, a log shipper's) must not receive secrets either."""
    other = io.StringIO()
    root_logging.addHandler(logging.StreamHandler(other))
    _capture()

    logging.getLogger("x").warning("key %s", API_KEY)

    assert API_KEY not in other.getvalue()
    assert "sk_live_AbCd1234" in other.getvalue()


def test_configure_twice_keeps_one_handler(root_logging: logging.Logger) -> None:
    _capture()
    buffer = _capture()
    logging.getLogger("x").warning("once")
    ours = [h for h in root_logging.handlers if isinstance(h, logs.AgentDeskHandler)]
    assert len(ours) == 1
    assert buffer.getvalue().count("once") == 1


# --- formats and settings ----------------------------------------------------------------------------


def test_json_lines_outside_a_request_have_no_request_fields(root_logging: logging.Logger) -> None:
    buffer = _capture()
    logging.getLogger("core.jobs").info("job consumer started with %d threads", 2)

    line = json.loads(buffer.getvalue())
    assert set(line) == {"time", "level", "logger", "message"}
    assert line["message"] == "job consumer started with 2 threads"
    assert line["time"].endswith("+00:00")


def test_text_format_is_one_readable_line(root_logging: logging.Logger) -> None:
    buffer = _capture({"LOG_FORMAT": "text"})
    logging.getLogger("core.jobs").warning("key %s", API_KEY)

    text = buffer.getvalue()
    assert " WARNING core.jobs: key sk_live_AbCd1234[REDACTED]" in text
    assert not text.lstrip().startswith("{")


def test_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("LOG_FORMAT", "LOG_LEVEL", "LOG_REQUESTS"):
        monkeypatch.delenv(name, raising=False)
    defaults = load_settings({"INSTANCE_PATH": str(tmp_path)})
    assert (defaults["LOG_FORMAT"], defaults["LOG_LEVEL"], defaults["LOG_REQUESTS"]) == (
        "text",
        "WARNING",
        False,
    )

    monkeypatch.setenv("LOG_FORMAT", "JSON")
    monkeypatch.setenv("LOG_LEVEL", "debug")
    production = load_settings({"INSTANCE_PATH": str(tmp_path)})
    assert (production["LOG_FORMAT"], production["LOG_LEVEL"], production["LOG_REQUESTS"]) == (
        "json",
        "DEBUG",
        True,
    )

    monkeypatch.setenv("LOG_REQUESTS", "0")
    assert load_settings({"INSTANCE_PATH": str(tmp_path)})["LOG_REQUESTS"] is False


def test_access_lines_do_not_depend_on_the_level(root_logging: logging.Logger) -> None:
    """Production keeps LOG_LEVEL at WARNING and still gets one access line per request."""
    buffer = _capture({"LOG_LEVEL": "WARNING", "LOG_REQUESTS": True})
    logging.getLogger(logs.ACCESS_LOGGER).info("GET /v1/organizations 200")
    logging.getLogger("huey").info("Executing a task")

    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["GET /v1/organizations 200"]
