"""The desk's tabs: which conversations each holds (:func:`for_tab`) and how many under the list's
filters, in one query (:func:`tab_counts`).

The desk shows Mine, Unassigned, Team and All with their counts; with a filter (a label, a channel, a
search) every count changes. One ``count(*) FILTER (WHERE …)`` per tab over the filtered rows reads
them once instead of once per tab (PostgreSQL, and SQLite since 3.30). Both follow the same rules: Mine
is the member's, Unassigned nobody's, Team any of the member's teams', All every open conversation,
Archived the archive.
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
NO_MEMBER = "(no member)"  # an assignee id no member can have (ids are UUIDs or "mem_…")


def for_tab(
    query: ConversationFilter, tab: str, *, member_id: str | None, team_ids: list[str]
) -> ConversationFilter:
    """``query`` narrowed to one tab (``archived`` too); an unknown tab is All."""
    narrowed = replace(query, archived=tab == "archived")
    if tab == "mine":
        # someone without a member has nothing assigned: an id no member can have keeps the tab empty
        # (no NUL byte: PostgreSQL refuses one in a string parameter)
        return replace(narrowed, assigned_member_id=member_id or NO_MEMBER)
    if tab == "unassigned":
        return replace(narrowed, unassigned=True)
    if tab == "team":
        return replace(narrowed, team_ids=team_ids)
    return narrowed


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
