"""Named hooks between areas, on blinker (the signal library Flask itself depends on).

An area that needs an answer about data it does not own declares a hook and calls it; the owner connects a
receiver at start-up (``blueprints/integrations/``). Several receivers may answer one hook, none silently
replaces another, and a test adds a receiver for a block with ``with some_hook.connected(fn): ...``
instead of saving and restoring module globals.

Receivers take the hook's keyword arguments (no blinker ``sender``): ``fn(organization_id=..., ...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from blinker import ANY, NamedSignal, Namespace

_namespace = Namespace()


class Hook:
    """One named hook: ``connect(fn)``, ``answers(**kwargs) -> [result, ...]`` in connection order."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.signal: NamedSignal = _namespace.signal(name, doc)
        self._adapters: dict[Callable[..., Any], Callable[..., Any]] = {}

    def _adapter(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if fn not in self._adapters:

            def receive(_sender: Any, **kwargs: Any) -> Any:
                return fn(**kwargs)

            receive.__qualname__ = f"{self.name}:{getattr(fn, '__qualname__', fn)!s}"
            self._adapters[fn] = receive
        return self._adapters[fn]

    def connect(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Add ``fn`` as a receiver (once; connecting it again changes nothing). Usable as a decorator."""
        self.signal.connect(self._adapter(fn), sender=ANY, weak=False)
        return fn

    def disconnect(self, fn: Callable[..., Any]) -> None:
        adapter = self._adapters.pop(fn, None)
        if adapter is not None:
            self.signal.disconnect(adapter)

    @contextmanager
    def connected(self, fn: Callable[..., Any]) -> Iterator[None]:
        """``fn`` answers only inside the block (for tests)."""
        self.connect(fn)
        try:
            yield
        finally:
            self.disconnect(fn)

    @contextmanager
    def only(self, fn: Callable[..., Any] | None) -> Iterator[None]:
        """Inside the block ``fn`` is the one receiver (or none; receivers connected inside the block count
        too); after it exactly the previous receivers answer again."""
        previous = list(self._adapters)
        for receiver in previous:
            self.disconnect(receiver)
        if fn is not None:
            self.connect(fn)
        try:
            yield
        finally:
            for receiver in list(self._adapters):
                self.disconnect(receiver)
            for receiver in previous:
                self.connect(receiver)

    @property
    def receivers(self) -> list[Callable[..., Any]]:
        return list(self._adapters)

    def answers(self, **kwargs: Any) -> list[Any]:
        return [result for _, result in self.signal.send(None, **kwargs)]


def hook(name: str, doc: str) -> Hook:
    return Hook(name, doc)
