"""Conversation summaries (issue 13, part 5): the language model writes them when one is configured, the
CRM's offline extractive summarizer otherwise.

- :func:`model_summary` answers the CRM's ``crm.conversation_summary`` hook
  (``fn(organization_id, conversation_id, channel) -> Summary | None``; connected by :func:`register`).
  It reads the transcript through the CRM's ``crm.conversation_transcript`` hook (the messaging area
  answers), keeps the latest messages within :data:`MAX_TRANSCRIPT_CHARS`, and asks the model for a short
  summary. No model configured, no transcript, or a :class:`ProviderError` (timeout, rate limit, server
  down, after the provider's own retries): None, and the CRM writes the extractive summary instead. A
  link is therefore never blocked by the model. The summary's ``method`` is the model's name.
- The CRM captures the summary when a conversation is linked to a deal (``DealConversation.summary`` and
  the deal's ``conversation_linked`` activity); :func:`latest_summary` is what the inbox's side panel
  shows: the newest stored one, or, when the conversation was never linked, the extractive summary
  computed on demand (cheap, no model call on a page render).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from blueprints.ai.provider import ProviderError, chat_provider
from blueprints.crm import hooks as crm_hooks
from blueprints.crm.hooks import ExtractiveParts, ExtractiveSummarizer, Summary, read_conversation
from blueprints.crm.models import Deal, DealConversation
from core.db import db

log = logging.getLogger(__name__)

# The transcript the model reads: the latest messages, each cut, within a total (a long conversation's
# newest part is what a summary for the deal needs; the model's context stays bounded).
MAX_TRANSCRIPT_CHARS = 12_000
MAX_MESSAGE_CHARS = 1_000
MAX_SUMMARY_TOKENS = 300
MAX_SUMMARY_CHARS = 1_200
TEMPERATURE = 0.2

SYSTEM_PROMPT = (
    "You summarize a customer conversation of a business for a colleague who will follow it up in the "
    "CRM. In 2 to 4 sentences, in the language the customer wrote in, say what the customer wants, what "
    "the business offered or agreed (products, prices, dates) and what remains to be done. Use only what "
    "the transcript says; never invent names, prices or commitments. Plain text, no lists, no greeting."
)

_CONTACT_DIRECTIONS = ("inbound", "incoming", "in", "contact")


def _stamp(value: datetime | str | None) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value or "")


def transcript_text(lines: list[tuple[str, str, Any]]) -> str:
    """``[time] Customer: text`` lines, newest kept when the whole does not fit, oldest first."""
    rendered: list[str] = []
    total = 0
    for direction, text, timestamp in reversed(lines):
        text = (text or "").strip()
        if not text:
            continue
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[: MAX_MESSAGE_CHARS - 1] + "…"
        who = "Customer" if direction in _CONTACT_DIRECTIONS else "Business"
        line = f"[{_stamp(timestamp)}] {who}: {text}"
        if total + len(line) > MAX_TRANSCRIPT_CHARS:
            break
        rendered.append(line)
        total += len(line) + 1
    omitted = sum(1 for _, t, _ in lines if (t or "").strip()) - len(rendered)
    head = [f"({omitted} earlier messages omitted)"] if omitted > 0 else []
    return "\n".join(head + list(reversed(rendered)))


def model_summary(*, organization_id: uuid.UUID, conversation_id: str, channel: str | None) -> Summary | None:
    """The model's summary of the conversation, or None (offline, nothing to read, or the model failed)."""
    provider = chat_provider()
    if provider is None:
        return None
    lines = read_conversation(organization_id, conversation_id)
    if not lines:
        return None
    text = transcript_text(lines)
    if not text:
        return None
    channel_note = f" (channel: {channel})" if channel else ""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Transcript{channel_note}:\n{text}"},
    ]
    try:
        completion = provider.complete(messages, temperature=TEMPERATURE, max_tokens=MAX_SUMMARY_TOKENS)
    except ProviderError as error:
        log.warning("summary of %s by the model failed (%s): extractive instead", conversation_id, error)
        return None
    summary = " ".join((completion.text or "").split())
    if not summary:
        return None
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
    counted = sum(1 for _, t, _ in lines if (t or "").strip())
    return Summary(summary, completion.model or provider.model, counted)


# -------------------------------------------------------------------------------------- the side panel


@dataclass(frozen=True)
class PanelSummary:
    text: str
    stored: bool  # captured by the CRM when the conversation was linked to a deal
    deal_reference: str | None
    deal_name: str | None
    at: datetime | None
    # the extractive summary's parts, when it was computed now: the page writes it in its language
    parts: ExtractiveParts | None = None


def latest_summary(organization_id: uuid.UUID, conversation_id: str | uuid.UUID) -> PanelSummary | None:
    """The newest summary the CRM stored for the conversation (one query), else the extractive summary
    computed now; None when the conversation has no messages to summarize."""
    row = db.session.execute(
        select(DealConversation.summary, DealConversation.created_at, Deal.reference, Deal.name)
        .join(Deal, Deal.id == DealConversation.deal_id)
        .where(
            DealConversation.organization_id == organization_id,
            DealConversation.conversation_id == str(conversation_id),
            DealConversation.summary.is_not(None),
            Deal.deleted_at.is_(None),
        )
        .order_by(DealConversation.created_at.desc())
        .limit(1)
    ).first()
    if row is not None and row.summary and row.summary != crm_hooks.NO_TRANSCRIPT:
        return PanelSummary(row.summary, True, row.reference, row.name, row.created_at)
    computed = ExtractiveSummarizer().summarize(organization_id, str(conversation_id), None)
    if computed.method == "none":
        return None
    return PanelSummary(computed.text, False, None, None, None, computed.parts)
