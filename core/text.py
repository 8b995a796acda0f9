"""Text helpers every area's queries use."""

from __future__ import annotations

LIKE_ESCAPE = "\\"


def like_escape(text: str) -> str:
    """``text`` with LIKE's wildcards taken literally (use with ``escape=LIKE_ESCAPE``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def contains_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, wildcards in ``text`` taken literally."""
    return f"%{like_escape(text)}%"


def prefix_pattern(text: str) -> str:
    return f"{like_escape(text)}%"
