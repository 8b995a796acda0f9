"""Where the CRM meets areas it does not own: conversations (messaging, voice) and summaries (AI runtime).

The CRM never imports those areas. They plug in here at start-up:

- ``register_conversation_reader(fn)``: the messaging area gives the CRM read access to a conversation's
  transcript, ``fn(organization_id, conversation_id) -> [(direction, text, timestamp), ...] | None``.
- ``register_contact_merge_hook(fn)``: the messaging area moves its conversations from the merged-away
  contact to the surviving one, ``fn(organization_id, source_contact_id, target_contact_id) -> int``
  (the number of conversations moved).
- ``set_summarizer(obj)``: the AI runtime replaces the offline extractive summarizer with a language
  model, any object with ``summarize(organization_id, conversation_id, channel) -> Summary``.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

log = logging.getLogger(__name__)

TranscriptLine = tuple[str, str, datetime | str | None]  # (direction, text, timestamp)
ConversationReader = Callable[[uuid.UUID, str], Sequence[TranscriptLine] | None]
ContactMergeHook = Callable[[uuid.UUID, uuid.UUID, uuid.UUID], int | None]

NO_TRANSCRIPT = "No transcript available for this conversation."


@dataclass(frozen=True)
class Summary:
    text: str
    method: str  # "extractive", "none", or the name of the model that wrote it
    message_count: int


class ConversationSummarizer(Protocol):
    def summarize(self, organization_id: uuid.UUID, conversation_id: str, channel: str | None) -> Summary: ...


_readers: list[ConversationReader] = []
_merge_hooks: list[ContactMergeHook] = []


def register_conversation_reader(reader: ConversationReader) -> None:
    if reader not in _readers:
        _readers.append(reader)


def unregister_conversation_reader(reader: ConversationReader) -> None:
    if reader in _readers:
        _readers.remove(reader)


def read_conversation(organization_id: uuid.UUID, conversation_id: str) -> list[TranscriptLine] | None:
    """The first transcript any registered reader knows; None when nobody does."""
    for reader in list(_readers):
        try:
            lines = reader(organization_id, conversation_id)
        except Exception:  # a broken reader must not stop the link; the summary says "not available"
            log.exception("conversation reader %r failed for %s", reader, conversation_id)
            continue
        if lines:
            return list(lines)
    return None


def register_contact_merge_hook(hook: ContactMergeHook) -> None:
    if hook not in _merge_hooks:
        _merge_hooks.append(hook)


def unregister_contact_merge_hook(hook: ContactMergeHook) -> None:
    if hook in _merge_hooks:
        _merge_hooks.remove(hook)


def run_contact_merge_hooks(organization_id: uuid.UUID, source_id: uuid.UUID, target_id: uuid.UUID) -> int:
    """Called inside the merge's transaction, so a failing hook rolls the whole merge back."""
    return sum(int(hook(organization_id, source_id, target_id) or 0) for hook in list(_merge_hooks))


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
        picked = [
            f"{'CrmContact' if d in ('inbound', 'incoming', 'in', 'contact') else 'Agent'}: {s}"
            for _, d, s in sorted(best)
        ]
        text = " ".join([header, *picked])
        if len(text) > self.max_chars:
            text = text[: self.max_chars - 1].rstrip() + "…"
        return Summary(text, "extractive", len(texts))


_summarizer: ConversationSummarizer = ExtractiveSummarizer()


def set_summarizer(summarizer: ConversationSummarizer | None) -> None:
    """Install a summarizer (None restores the offline default)."""
    global _summarizer
    _summarizer = summarizer or ExtractiveSummarizer()


def get_summarizer() -> ConversationSummarizer:
    return _summarizer


def summarize_conversation(organization_id: uuid.UUID, conversation_id: str, channel: str | None) -> Summary:
    try:
        return _summarizer.summarize(organization_id, conversation_id, channel)
    except Exception:  # a failing model must not block linking; the link records that no summary exists
        log.exception("summarizer failed for %s", conversation_id)
        return Summary(NO_TRANSCRIPT, "none", 0)
