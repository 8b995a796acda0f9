"""How many conversations each desk tab holds under the list's filters, in one query.

The desk shows Mine, Unassigned, Team and All with their counts; with a filter (a label, a channel, a
search) every count changes. One ``count(*) FILTER (WHERE …)`` per tab over the filtered rows reads
them once instead of once per tab (PostgreSQL, and SQLite since 3.30).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import replace

from sqlalchemy import ColumnElement, false, func, select, true

from blueprints.inbox.services.conversations import ConversationFilter, _filtered
from blueprints.messaging.models import Conversation
from core.db import db

TABS = ("mine", "unassigned", "team", "all")  # the open (not archived) tabs


def tab_counts(
    organization_id: uuid.UUID,
    query: ConversationFilter,
    *,
    member_id: str | None,
    team_ids: list[str],
    tabs: Iterable[str] = TABS,
) -> dict[str, int]:
    """Each open tab's count under ``query``'s filters (its own tab fields are ignored): Mine is
    ``member_id``'s (nothing when None), Team any of ``team_ids``."""
    wanted = list(tabs)
    unknown = set(wanted) - set(TABS)
    if unknown:
        raise ValueError(f"not an open tab: {', '.join(sorted(unknown))}")
    common = replace(
        query,
        archived=False,
        assigned_member_id=None,
        unassigned=False,
        team_ids=None,
        cursor=None,
    )
    rows = (
        _filtered(organization_id, common)
        .with_only_columns(Conversation.member_id, Conversation.team_id, maintain_column_froms=True)
        .order_by(None)
        .subquery()
    )
    conditions: dict[str, ColumnElement[bool]] = {
        "mine": rows.c.member_id == member_id if member_id else false(),
        "unassigned": rows.c.member_id.is_(None),
        "team": rows.c.team_id.in_(team_ids) if team_ids else false(),
        "all": true(),
    }
    counted = db.session.execute(
        select(*[func.count().filter(conditions[tab]) for tab in wanted]).select_from(rows)
    ).one()
    return {tab: int(count or 0) for tab, count in zip(wanted, counted, strict=True)}
