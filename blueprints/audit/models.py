"""The audit log: one append-only row per administrative action (a key issued or revoked, a channel
connected, an AI agent's configuration changed, a member or team created, changed or deleted, an object
deleted), written in the same unit of work as the action, so the row exists exactly when the action does.

Each environment has its own database, so the environment is implicit in where the row lives."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, UUIDPrimaryKeyMixin, db, ordered_index, utcnow

# The keyset order of the log, newest first: ``occurred_at DESC, id DESC`` spelled in the migration
# (core.db.ORDERED_INDEXES), so the list and its cursor seek read the index in order.
LIST_INDEX = "ix_audit_entries_list"


class AuditEntry(UUIDPrimaryKeyMixin, db.Model):
    __tablename__ = "audit_entries"
    __table_args__ = (ordered_index(LIST_INDEX, "organization_id", "occurred_at", "id"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Who did it, in core.auth's actor format: ``api_key:sk_live_ab12cd34`` (the shown prefix, never the
    # key), ``user:<id>`` (a desk user), ``member:<id>`` (a JWT), ``cli``, ``system``.
    actor: Mapped[str] = mapped_column(String(120))
    # A dotted verb: ``api_key.created``, ``team.deleted``, ``agent_config.updated``, ...
    action: Mapped[str] = mapped_column(String(64))
    target_type: Mapped[str] = mapped_column(String(40))
    target_id: Mapped[str] = mapped_column(String(120))
    # ``{"fields": [...]}``: the names of the fields set or changed, never their values.
    summary: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    request_id: Mapped[str | None] = mapped_column(String(128))
    source_ip: Mapped[str | None] = mapped_column(String(64))
