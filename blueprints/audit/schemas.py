"""Request and response models of the audit log's API (the OpenAPI document takes them from here)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from core.pagination import CURSOR_MAX_LENGTH, MAX_TAKE
from core.responses import ResponseModel, WireInstant, WireText
from core.validation import QueryModel


class OrgPath(BaseModel):
    organization_id: str


class AuditListQuery(QueryModel):
    action: str | None = Field(None, max_length=64, description="Exact action, e.g. `team.deleted`")
    actor: str | None = Field(
        None, max_length=120, description="Exact actor, e.g. `api_key:sk_live_ab12cd34`, `user:<id>`, `cli`"
    )
    target_type: str | None = Field(None, max_length=40, description="e.g. `team`, `api_key`, `conversation`")
    target_id: str | None = Field(None, max_length=120)
    since: datetime | None = Field(None, description="ISO 8601; entries at or after this instant")
    until: datetime | None = Field(None, description="ISO 8601; entries before this instant")
    take: int = Field(20, ge=1, le=MAX_TAKE)
    cursor: str | None = Field(
        None,
        max_length=CURSOR_MAX_LENGTH,
        description="Keyset pagination: empty or absent for the first page, then the previous page's "
        "`next_cursor` with the same filters.",
    )


class AuditChange(BaseModel):
    before: Any = Field(description="The value before the action; null when the action set it")
    after: Any = Field(description="The value after the action; null when cleared or deleted")


class AuditSummary(BaseModel):
    fields: list[str] = Field(description="Names of the fields the action set or changed (never values)")
    version: int | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="The version the action made, for objects that keep versions (an AI agent's "
        "configuration: `agent_config.updated`); absent for the others",
    )
    changes: dict[str, AuditChange] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="Before and after of the fields whose values are no secret (a label's name, a canned "
        "reply's short code, a key's name), for the actions that keep them; absent otherwise",
    )


class AuditEntryOut(ResponseModel):
    id: WireText
    occurred_at: WireInstant
    actor: str = Field(description="`api_key:<shown prefix>`, `user:<id>`, `member:<id>`, `cli` or `system`")
    action: str = Field(description="Dotted verb, e.g. `api_key.revoked`, `team.created`, `deal.deleted`")
    target_type: str
    target_id: str
    summary: AuditSummary
    request_id: str | None = Field(description="The request's `X-Request-Id`; null for CLI and jobs")
    source_ip: str | None = Field(
        description="The caller's address as the server saw it; null for CLI and jobs"
    )


class AuditList(ResponseModel):
    data: list[AuditEntryOut]
    total: int = Field(description="Entries the filters find, counted up to 10,000 (`X-Total-Relation: gte`)")
    take: int
    next_cursor: str | None = Field(description="The next page's cursor; null on the last page")
