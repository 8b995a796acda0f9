"""Work a page does once per request, whichever fragments of it ask (the shell's teammates and the inbox
side panel both show everyone's presence, the list's filter and the panel both list the labels)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from flask import request

T = TypeVar("T")
_ENVIRON_KEY = "agentdesk.per_request"


def per_request(key: tuple[Any, ...], compute: Callable[[], T]) -> T:
    """``compute()`` the first time ``key`` is asked for in this request, its answer after that. Kept in
    the WSGI environ: two requests never share an answer, even when a test shares one app context."""
    store: dict[tuple[Any, ...], Any] = request.environ.setdefault(_ENVIRON_KEY, {})
    if key not in store:
        store[key] = compute()
    return store[key]  # type: ignore[no-any-return]
