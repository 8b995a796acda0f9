"""Recording and reading the audit log.

:func:`record` adds the entry to the current unit of work (``core/uow.py``) and never commits: the row is
written by the same COMMIT as the action it describes, so a refused or failed action leaves no entry and an
action that happened always has its entry. Services call it next to the change, with the organization they
already hold; who did it comes from the request (an API key, a JWT, a signed-in desk user), else ``cli``
inside a command, else ``system`` (jobs, sweeps).

``changes`` names the fields that were set or changed, and names that do not look like field names are
refused, so a secret can never be passed in by mistake. A service may also hand over ``before_after``, the
old and new value of fields that are no secret (a label's name, a canned reply's short code, a key's
name): that is what the desk's log shows as "before → after". Field names that sound secret (token,
password, secret, hash, credential) are refused there, and values are short plain ones (text cut at
200 characters, numbers, true/false, lists of a few words), so the log never becomes a copy of the
records. An object that keeps
numbered versions (an AI agent's configuration) also names the version the action made (``version``), so
the entry leads to that version's snapshot and diff.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import click
from flask import g, has_request_context, request
from sqlalchemy import select

from blueprints.audit.models import AuditEntry
from core.db import db, utcnow
from core.pagination import TOTAL_COUNT_CAP, CursorPage, Keyset, keyset_paginate

CLI = "cli"
SYSTEM = "system"

# A field name: letters, digits, ``_``, ``-`` and ``.`` (nested names like ``sections.identity``).
_FIELD_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
MAX_FIELDS = 100
_ACTION = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")
# A value's field name that sounds like a secret is never given a value in the log, whoever asks.
_SECRET_FIELD = re.compile(r"token|secret|password|passwd|hash|credential|private", re.IGNORECASE)
MAX_VALUE_CHARS = 200
MAX_LIST_ITEMS = 20

# The actions services record (docs/audit.md); the desk's filter offers them.
ACTIONS: tuple[str, ...] = (
    "api_key.created",
    "api_key.revoked",
    "label.created",
    "label.updated",
    "canned_response.created",
    "canned_response.updated",
    "channel.connected",
    "routing.updated",
    "broadcast.created",
    "broadcast.canceled",
    "agent_config.updated",
    "knowledge_document.created",
    "knowledge_document.updated",
    "member.created",
    "member.updated",
    "member.deleted",
    "team.created",
    "team.updated",
    "team.deleted",
    "team.members_added",
    "team.members_removed",
    "unavailable_reason.created",
    "unavailable_reason.updated",
    "user.deactivated",
    "user.password_changed",
    "user.password_reset",
    "account.deleted",
    "canned_response.deleted",
    "contact.deleted",
    "conversation.deleted",
    "crm_contact.deleted",
    "deal.deleted",
    "flow.deleted",
    "knowledge_document.deleted",
    "label.deleted",
    "note.deleted",
    "pipeline.deleted",
    "product.deleted",
    "project.deleted",
    "task.deleted",
    "telecom_user.deleted",
    "ticket_type.deleted",
    "unavailable_reason.deleted",
    "telecom_webhook_endpoint.deleted",
)


def record(
    action: str,
    target_type: str,
    target_id: object,
    changes: Iterable[str] | None = None,
    *,
    organization_id: uuid.UUID | str | None = None,
    actor: str | None = None,
    version: int | None = None,
    before_after: Mapping[str, tuple[Any, Any]] | None = None,
) -> AuditEntry:
    """Add one audit entry to the current unit of work (committed or rolled back with the action).

    ``changes``: the names of the fields the action set or changed (never their values).
    ``organization_id`` and ``actor`` default to the request's caller; CLI commands and jobs pass them.
    ``version``: the version of the target the action made, for targets that keep numbered versions.
    ``before_after``: ``{field: (before, after)}`` for fields that are no secret, what the desk shows as
    "before → after" (``None`` before: the field was set by the action; ``None`` after: it was cleared or
    the object deleted). Its fields join ``changes``.
    """
    if not _ACTION.fullmatch(action):
        raise ValueError(f"audit action must be a dotted verb like 'team.created', not {action!r}")
    values = _checked_values(before_after or {})
    fields = sorted(set(changes or ()) | set(values))
    bad = [name for name in fields if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name)]
    if bad or len(fields) > MAX_FIELDS:
        raise ValueError("audit changes must be field names (never values)")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise ValueError("audit version must be an integer")
    summary: dict[str, Any] = {"fields": fields}
    if version is not None:
        summary["version"] = version
    if values:
        summary["changes"] = values
    entry = AuditEntry(
        id=uuid.uuid4(),
        organization_id=_organization(organization_id),
        occurred_at=utcnow(),
        actor=(actor or _current_actor())[:120],
        action=action,
        target_type=target_type,
        target_id=str(target_id)[:120],
        summary=summary,
        request_id=_request_value(lambda: getattr(g, "request_id", None), 128),
        source_ip=_request_value(lambda: request.remote_addr, 64),
    )
    db.session.add(entry)
    return entry


def _plain(value: Any) -> Any:
    """A value as the log keeps it: short text, a number, true/false, null, or a few short words."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_plain(str(item)) for item in list(value)[:MAX_LIST_ITEMS]]
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _checked_values(before_after: Mapping[str, tuple[Any, Any]]) -> dict[str, dict[str, Any]]:
    values: dict[str, dict[str, Any]] = {}
    for name, pair in before_after.items():
        if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name) or _SECRET_FIELD.search(name):
            raise ValueError(f"audit values: {name!r} is not a field whose value may be kept")
        before, after = pair
        values[name] = {"before": _plain(before), "after": _plain(after)}
    return values


def _request_value(read: Any, limit: int) -> str | None:
    if not has_request_context():
        return None
    value = read()
    return str(value)[:limit] if value else None


def _desk_user() -> Any:
    """The signed-in desk user of this request, or None (API requests have no session user)."""
    try:
        from flask_login import current_user
    except ImportError:  # pragma: no cover - Flask-Login is a dependency of the desk
        return None
    try:
        user = current_user._get_current_object()  # type: ignore[attr-defined]
    except Exception:  # no login manager on this app, or outside a request
        return None
    return user if getattr(user, "is_authenticated", False) else None


def _current_actor() -> str:
    # core.auth imports the organizations area, which records through this module: import it late.
    from core.auth import actor as make_actor

    if has_request_context():
        principal = getattr(g, "principal", None)
        if principal is not None:
            return str(principal.actor)
        user = _desk_user()
        if user is not None:
            return make_actor("user", str(user.user_id))
        return SYSTEM
    if click.get_current_context(silent=True) is not None:
        return CLI
    return SYSTEM


def _organization(explicit: uuid.UUID | str | None) -> uuid.UUID:
    if explicit is not None:
        return explicit if isinstance(explicit, uuid.UUID) else uuid.UUID(str(explicit))
    if has_request_context():
        principal = getattr(g, "principal", None)
        if principal is not None:
            return principal.organization_id  # type: ignore[no-any-return]
        user = _desk_user()
        if user is not None:
            return user.organization_id  # type: ignore[no-any-return]
    raise ValueError("audit.record needs organization_id outside an authenticated request")


# --------------------------------------------------------------------------------------------- reading

# Newest first; the id breaks ties between entries of the same instant (ix_audit_entries_list).
KEYSET = Keyset((AuditEntry.occurred_at, AuditEntry.id), descending=True)
SORT = "audit"


@dataclass(frozen=True)
class AuditFilters:
    action: str | None = None
    actor: str | None = None
    target_type: str | None = None
    target_id: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def list_entries(
    organization_id: uuid.UUID, filters: AuditFilters, *, cursor: str | None, limit: int
) -> CursorPage[AuditEntry]:
    """The organization's entries newest first, ``limit`` at a time after ``cursor`` (keyset: entries
    recorded meanwhile never shift a page). ``total`` is exact up to ``TOTAL_COUNT_CAP``."""
    statement = select(AuditEntry).where(AuditEntry.organization_id == organization_id)
    if filters.action:
        statement = statement.where(AuditEntry.action == filters.action)
    if filters.actor:
        statement = statement.where(AuditEntry.actor == filters.actor)
    if filters.target_type:
        statement = statement.where(AuditEntry.target_type == filters.target_type)
    if filters.target_id:
        statement = statement.where(AuditEntry.target_id == filters.target_id)
    if (since := _utc(filters.since)) is not None:
        statement = statement.where(AuditEntry.occurred_at >= since)
    if (until := _utc(filters.until)) is not None:
        statement = statement.where(AuditEntry.occurred_at < until)
    statement = statement.order_by(AuditEntry.occurred_at.desc(), AuditEntry.id.desc())
    return keyset_paginate(
        statement, KEYSET, cursor=cursor, limit=limit, sort=SORT, count_cap=TOTAL_COUNT_CAP
    )
