"""Where the CRM meets areas it does not own: conversations (messaging, voice) and summaries (AI runtime).

The CRM never imports those areas. They connect receivers to these hooks (``core.hooks``) at start-up:

- ``conversation_transcript``: the messaging area gives the CRM read access to a conversation's
  transcript, ``fn(organization_id, conversation_id) -> [(direction, text, timestamp), ...] | None``.
- ``contact_merged``: the messaging area moves its conversations from the merged-away contact to the
  surviving one, ``fn(organization_id, source_id, target_id) -> int`` (the number of conversations moved).
- ``conversation_summary``: the AI runtime summarizes with a language model,
  ``fn(organization_id, conversation_id, channel) -> Summary | None``; without an answer the offline
  extractive summarizer writes the summary.
- ``known_members``: the members area says which member ids name members of the organization,
  ``fn(organization_id, member_ids) -> set of ids``. Owners, assignees and ``linked_by`` are checked
  against it.
- ``known_conversations``: messaging (and later voice) say which conversation or call ids exist in the
  organization, ``fn(organization_id, conversation_ids) -> set of ids``. Deal and ticket links are
  checked against it.

When nobody answers ``known_members`` or ``known_conversations`` every id is accepted: the CRM can run
without the areas that own those ids.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from core.hooks import Hook, hook

log = logging.getLogger(__name__)

TranscriptLine = tuple[str, str, datetime | str | None]  # (direction, text, timestamp)

NO_TRANSCRIPT = "No transcript available for this conversation."


@dataclass(frozen=True)
class ExtractiveParts:
    """What the extractive summary is made of, so a page can write it in its own language (the stored
    ``text`` is English, as the API gives it)."""

    messages: int
    from_contact: int
    from_business: int
    lines: tuple[tuple[str, str], ...]  # ("contact" | "agent", sentence), in spoken order


@dataclass(frozen=True)
class Summary:
    text: str
    method: str  # "extractive", "none", or the name of the model that wrote it
    message_count: int
    parts: ExtractiveParts | None = None


conversation_transcript = hook(
    "crm.conversation_transcript",
    "fn(organization_id, conversation_id) -> [(direction, text, timestamp), ...] | None",
)
contact_merged = hook(
    "crm.contact_merged", "fn(organization_id, source_id, target_id) -> conversations moved (int)"
)
conversation_summary = hook(
    "crm.conversation_summary", "fn(organization_id, conversation_id, channel) -> Summary | None"
)


known_members = hook(
    "crm.known_members",
    "fn(organization_id, member_ids) -> set of ids that are members of the organization",
)
known_conversations = hook(
    "crm.known_conversations",
    "fn(organization_id, conversation_ids) -> set of ids that exist in the organization "
    "(conversations, later calls)",
)


def _unknown(asked: Hook, organization_id: uuid.UUID, key: str, ids: Iterable[str]) -> list[str]:
    """The ids no receiver of ``asked`` knows, in the order given; none while nobody answers."""
    wanted = list(dict.fromkeys(ids))
    if not wanted or not asked.receivers:
        return []
    known: set[str] = set()
    for answer in asked.answers(organization_id=organization_id, **{key: wanted}):
        known.update(str(i) for i in answer or ())
    return [i for i in wanted if i not in known]


def unknown_members(organization_id: uuid.UUID, member_ids: Iterable[str]) -> list[str]:
    return _unknown(known_members, organization_id, "member_ids", member_ids)


def unknown_conversations(organization_id: uuid.UUID, conversation_ids: Iterable[str]) -> list[str]:
    return _unknown(known_conversations, organization_id, "conversation_ids", conversation_ids)


def read_conversation(organization_id: uuid.UUID, conversation_id: str) -> list[TranscriptLine] | None:
    """The first transcript any registered reader knows; None when nobody does."""
    for reader in conversation_transcript.receivers:
        try:
            lines: Sequence[TranscriptLine] | None = reader(
                organization_id=organization_id, conversation_id=conversation_id
            )
        except Exception:  # a broken reader must not stop the link; the summary says "not available"
            log.exception("conversation reader %r failed for %s", reader, conversation_id)
            continue
        if lines:
            return list(lines)
    return None


def run_contact_merge_hooks(organization_id: uuid.UUID, source_id: uuid.UUID, target_id: uuid.UUID) -> int:
    """Called inside the merge's transaction, so a failing hook rolls the whole merge back."""
    answers = contact_merged.answers(
        organization_id=organization_id, source_id=source_id, target_id=target_id
    )
    return sum(int(moved or 0) for moved in answers)


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
# Words that say nothing about the conversation's content (English and Spanish, the desk's languages).
_STOPWORDS = frozenset(
    """the and for you your are with that this have from not but was can will just what when how our
    hola gracias para que con los las una por del como pero más muy esta este eso sus les nos ese
    hello thanks thank please yes okay""".split()  # noqa: SIM905
)


class ExtractiveSummarizer:
    """Offline summary: a header (message counts, time span) and the most informative sentences,
    scored by the frequency of their content words across the conversation, kept in spoken order."""

    max_sentences = 3
    max_chars = 600

    def summarize(self, organization_id: uuid.UUID, conversation_id: str, channel: str | None) -> Summary:
        lines = read_conversation(organization_id, conversation_id)
        texts = [
            (direction, (text or "").strip()) for direction, text, _ in lines or [] if (text or "").strip()
        ]
        if not texts:
            return Summary(NO_TRANSCRIPT, "none", 0)
        inbound = sum(1 for direction, _ in texts if direction in ("inbound", "incoming", "in", "contact"))
        header = (
            f"{len(texts)} messages ({inbound} from the contact, {len(texts) - inbound} from the business)."
        )
        sentences: list[tuple[int, str, str]] = []
        for direction, text in texts:
            for sentence in _SENTENCE.split(text):
                if sentence.strip():
                    sentences.append((len(sentences), direction, sentence.strip()))
        frequencies = Counter(
            w for _, _, s in sentences for w in (m.lower() for m in _WORD.findall(s)) if w not in _STOPWORDS
        )

        def score(sentence: str) -> float:
            words = [w.lower() for w in _WORD.findall(sentence) if w.lower() not in _STOPWORDS]
            return sum(frequencies[w] for w in words) / (len(words) ** 0.5) if words else 0.0

        best = sorted(sentences, key=lambda item: (-score(item[2]), item[0]))[: self.max_sentences]
        roles = [
            ("contact" if d in ("inbound", "incoming", "in", "contact") else "agent", s)
            for _, d, s in sorted(best)
        ]
        picked = [f"{'Contact' if role == 'contact' else 'Agent'}: {s}" for role, s in roles]
        text = " ".join([header, *picked])
        if len(text) > self.max_chars:
            text = text[: self.max_chars - 1].rstrip() + "…"
        parts = ExtractiveParts(len(texts), inbound, len(texts) - inbound, tuple(roles))
        return Summary(text, "extractive", len(texts), parts)


def summarize_conversation(organization_id: uuid.UUID, conversation_id: str, channel: str | None) -> Summary:
    """The first summary a connected summarizer writes; the offline extractive one otherwise."""
    for summarizer in conversation_summary.receivers:
        try:
            summary = summarizer(
                organization_id=organization_id, conversation_id=conversation_id, channel=channel
            )
        except Exception:  # a failing model must not block linking; the next one (or the offline one) writes
            log.exception("summarizer %r failed for %s", summarizer, conversation_id)
            continue
        if summary is not None:
            return summary
    try:
        return ExtractiveSummarizer().summarize(organization_id, conversation_id, channel)
    except Exception:
        log.exception("offline summarizer failed for %s", conversation_id)
        return Summary(NO_TRANSCRIPT, "none", 0)
