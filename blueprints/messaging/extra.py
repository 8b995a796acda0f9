"""Bounds of a conversation's free ``extra`` keys.

Besides the spec's fields (member_id, labels, archived, team_id, team_name, assignment, flow_id,
flow_member_id), a client may keep its own keys in a conversation's ``extra``; they are stored and
returned like the known ones. So one conversation cannot grow without limit, ``extra`` holds at most
:data:`MAX_KEYS` keys in all and each value, as JSON, at most :data:`MAX_VALUE_BYTES` bytes; beyond that the
request is 400 naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.errors import ApiError

MAX_KEYS = 50
MAX_VALUE_BYTES = 2048
KNOWN_KEYS = (
    "member_id",
    "labels",
    "archived",
    "team_id",
    "team_name",
    "assignment",
    "flow_id",
    "flow_member_id",
)


def value_size(value: Any) -> int:
    """Bytes of ``value`` serialised as compact JSON (UTF-8), as it is stored."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def check_extra(stored: Mapping[str, Any], incoming: Mapping[str, Any], *, field: str = "extra") -> None:
    """Refuse (400 naming the field) an update of ``extra`` that would break the bounds once merged into
    ``stored`` (the conversation's stored document; the known keys always count)."""
    for key, value in incoming.items():
        if not isinstance(key, str) or not key.strip() or len(key) > 64:
            raise ApiError(400, f"{field}: keys are 1-64 characters", param=field)
        if value_size(value) > MAX_VALUE_BYTES:
            raise ApiError(
                400, f"{field}.{key}: at most {MAX_VALUE_BYTES} bytes as JSON", param=f"{field}.{key}"
            )
    keys = set(KNOWN_KEYS) | set(stored) | set(incoming)
    if len(keys) > MAX_KEYS:
        raise ApiError(400, f"{field}: at most {MAX_KEYS} keys", param=field)


def free_keys(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The client's own keys of an ``extra`` (everything but the spec's fields)."""
    return {key: value for key, value in extra.items() if key not in KNOWN_KEYS}
