"""Cutting an answer into the messages a channel accepts.

Channel limits of one text message: WhatsApp 4,096 characters (``messaging.schemas.TEXT_LIMIT``),
Instagram 1,000 bytes (``messaging.sending.INSTAGRAM_TEXT_BYTES``, UTF-8), Messenger 2,000 characters.

- ``split_long_messages`` on: a long answer becomes several chat-sized messages, one per paragraph (as a
  person types them); a paragraph longer than the channel's limit is cut at sentence boundaries, each
  part as full as the limit allows. A single sentence longer than the limit is cut at the last space
  that fits (at the limit itself when there is none).
- ``split_long_messages`` off: one message; an answer longer than the channel's limit is split anyway
  (at paragraph, then sentence, then word boundaries, each part as full as allowed), since the channel
  would refuse it whole and a truncated answer loses its end.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from blueprints.messaging.schemas import TEXT_LIMIT
from blueprints.messaging.sending import INSTAGRAM_TEXT_BYTES

MESSENGER_TEXT_CHARS = 2000
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"'”)\]])\s+|\n+")


def _chars(text: str) -> int:
    return len(text)


def _utf8(text: str) -> int:
    return len(text.encode())


def limit_for(service: str) -> tuple[int, Callable[[str], int]]:
    """The channel's limit and how it is measured (characters, or UTF-8 bytes for Instagram)."""
    if service == "instagram":
        return INSTAGRAM_TEXT_BYTES, _utf8
    if service == "messenger":
        return MESSENGER_TEXT_CHARS, _chars
    return TEXT_LIMIT, _chars


def _hard_cut(piece: str, limit: int, size: Callable[[str], int]) -> list[str]:
    """A piece with no sentence boundary inside the limit: cut at the last space that fits."""
    parts: list[str] = []
    rest = piece
    while size(rest) > limit:
        end = len(rest)
        while end > 0 and size(rest[:end]) > limit:
            end -= 1
        # the limit falls on a space: cut there; else at the last space before it (none: at the limit)
        space = end if rest[end] == " " else rest.rfind(" ", 0, end)
        cut = space if space > 0 else end
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        parts.append(rest)
    return parts


def _sentences(paragraph: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def _pack(pieces: list[str], limit: int, size: Callable[[str], int], joiner: str) -> list[str]:
    """Greedy: as many consecutive pieces per part as fit."""
    parts: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}{joiner}{piece}" if current else piece
        if size(candidate) <= limit:
            current = candidate
            continue
        if current:
            parts.append(current)
        current = piece
    if current:
        parts.append(current)
    return parts


def split_text(text: str, limit: int, size: Callable[[str], int] = _chars) -> list[str]:
    """``text`` in parts of at most ``limit`` (measured by ``size``), cut at paragraph, then sentence,
    then word boundaries."""
    text = text.strip()
    if not text:
        return []
    if size(text) <= limit:
        return [text]
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if size(paragraph) <= limit:
            pieces.append(paragraph)
            continue
        sentences: list[str] = []
        for sentence in _sentences(paragraph):
            sentences.extend(_hard_cut(sentence, limit, size) if size(sentence) > limit else [sentence])
        pieces.extend(_pack(sentences, limit, size, " "))
    return _pack(pieces, limit, size, "\n\n")


def answer_parts(text: str, service: str, split_long_messages: bool) -> list[str]:
    """The messages to send for one answer on ``service``: with ``split_long_messages`` one message per
    paragraph (a paragraph over the limit cut at its sentences); without it one message, cut (at
    paragraph, sentence, word boundaries, each part as full as allowed) only when over the limit."""
    limit, size = limit_for(service)
    text = text.strip()
    if not text:
        return []
    if not split_long_messages:
        return split_text(text, limit, size)
    parts: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        parts.extend(split_text(paragraph, limit, size))
    return parts
