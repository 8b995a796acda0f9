"""Tables of the AI agents' runtime: knowledge documents, runs, and each conversation's runtime state.

Member ids and conversation ids of other areas are kept as text next to the organization id (the members
area's convention); the per-conversation state points at the conversation with a foreign key so it goes
away with it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from core.db import JSONType, TimestampMixin, UUIDPrimaryKeyMixin, db, utcnow
from core.textsearch import UNMODELLED

OUTCOMES = (
    "answered",  # an answer was sent (possibly after tools)
    "handed_off",  # transfer_to_human (by the model, or the offline responder had nothing)
    "failed_handed_off",  # the model failed after its retries: handed to a human, nothing lost
    "window_closed",  # the 24 h service window had closed: nothing sent
    "skipped_paused",  # the agent is paused on the conversation
    "send_failed",  # the channel refused the answer
    "no_answer",  # the model answered nothing usable and called no hand-off
)

# The full-text index objects built by migration ai_0001 (FTS5 table and its shadow tables on SQLite, a
# GIN expression index on PostgreSQL): not declared on the model, skipped by the schema comparison.
KNOWLEDGE_FTS = "knowledge_documents_fts"
KNOWLEDGE_GIN = "ix_knowledge_documents_search_tsv"
UNMODELLED.update(
    {
        KNOWLEDGE_FTS,
        *(KNOWLEDGE_FTS + suffix for suffix in ("_data", "_idx", "_docsize", "_config", "_content")),
        KNOWLEDGE_GIN,
    }
)


class KnowledgeDocument(UUIDPrimaryKeyMixin, TimestampMixin, db.Model):
    """An organization's knowledge (FAQ entry, policy, product sheet). ``agent_id`` scopes it to one AI
    agent; without it every agent of the organization uses it. ``search_text`` is the title and body
    folded (lower case, no accents) by :func:`blueprints.ai.knowledge.fold`: the one column both stores'
    full-text indexes read, so "envío" and "ENVIO" are the same word on SQLite and PostgreSQL."""

    __tablename__ = "knowledge_documents"
    __table_args__ = (Index("ix_knowledge_documents_org_agent", "organization_id", "agent_id"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    agent_id: Mapped[str | None] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(String(300))
    body: Mapped[str] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(String(2048))
    search_text: Mapped[str] = mapped_column(Text, default="")


class AiRun(UUIDPrimaryKeyMixin, db.Model):
    """One run of an agent on a conversation (or a playground test, ``dry_run``)."""

    __tablename__ = "ai_runs"
    __table_args__ = (
        Index("ix_ai_runs_org_agent_started", "organization_id", "agent_id", "started_at"),
        Index("ix_ai_runs_conversation_started", "conversation_id", "started_at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    agent_id: Mapped[str] = mapped_column(String(64))
    conversation_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("conversations.id", ondelete="SET NULL")
    )
    trigger_message_ids: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    config_version: Mapped[int | None] = mapped_column(Integer)
    model: Mapped[str | None] = mapped_column(String(200))
    prompt_chars: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    rounds: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    tool_calls: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    answer: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    sent_message_ids: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    outcome: Mapped[str] = mapped_column(String(32), index=True)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]


class AiConversationState(db.Model):
    """The runtime's state on one conversation: the lease that makes one answer per burst, the mark of the
    last incoming message answered, and a pause until resumed (``paused_until_resumed``).

    The lease is taken and handed back with compare-and-set UPDATEs (``lease_token``): a job that finds it
    held sets ``rerun`` instead of answering, and the holder runs once more when it finishes."""

    __tablename__ = "ai_conversation_states"

    conversation_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    lease_token: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None]
    rerun: Mapped[bool] = mapped_column(default=False)
    # created_at of the newest incoming message a run has covered: later ones are the next burst
    answered_through: Mapped[datetime | None]
    paused_until_resumed: Mapped[bool] = mapped_column(default=False)
    paused_by: Mapped[str | None] = mapped_column(String(120))
    last_run_id: Mapped[uuid.UUID | None]
    last_outcome: Mapped[str | None] = mapped_column(String(32))
    last_reason: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
