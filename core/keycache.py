"""API keys resolved in process: a request authenticated by a known key sends no query for it.

Each app (each environment's store) keeps a bounded LRU map from a key's SHA-256 digest (the value
``api_keys.key_hash`` already holds: no plaintext is ever kept) to a :class:`CachedKey`, the snapshot
authentication needs: the key's id, shown prefix, environment, ``active``, ``expires_at`` and its
organization's id, name and products. The caller checks the snapshot on every request (``usable``), so a
key's expiry needs no invalidation.

How long a snapshot may be trusted:

- without ``REDIS_URL``: ``API_KEY_CACHE_LOCAL_SECONDS`` (1 s). A key revoked by another process (the CLI,
  another server) is refused everywhere within that time;
- with ``REDIS_URL``: ``API_KEY_CACHE_SECONDS`` (60 s) while this process is subscribed to the
  invalidation channel. Every change of a key or an organization is published there after its commit
  (:func:`invalidate`) and each process drops the entries at once. While the subscription is down the
  short TTL applies again; when it comes back (Redis restarted) the whole cache is cleared, since
  messages may have been missed meanwhile.

Unknown keys are never cached (a key created by another process works at once, and a flood of random
keys cannot evict the good ones). A load that raced an invalidation is not stored (:attr:`generation`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from weakref import WeakSet

import redis
from flask import Flask, current_app
from sqlalchemy import event

from core.db import db

log = logging.getLogger(__name__)

_EXTENSION = "agentdesk.keycache"
DEFAULT_CHANNEL_SUFFIX = "-apikeys"


@dataclass(frozen=True)
class CachedKey:
    """What a request needs to know about its key and organization, without asking the database."""

    key_id: uuid.UUID
    prefix: str
    environment: str
    active: bool
    expires_at: datetime | None
    organization_id: uuid.UUID
    organization_name: str
    products: tuple[str, ...]

    def usable(self, environment: str, now: datetime) -> bool:
        """Active, of this environment (the recorded one, not the prefix) and not expired at ``now``."""
        if not self.active or self.environment != environment:
            return False
        return self.expires_at is None or self.expires_at > now


@dataclass
class _Entry:
    value: CachedKey
    loaded_at: float  # time.monotonic()
    last_used_at: datetime | None  # kept here so the touch rule needs no query either


@dataclass(eq=False)  # identity equality: two empty caches must stay two members of a WeakSet
class KeyCache:
    """One store's cache. Thread-safe; ``maxsize`` 0 turns caching off."""

    maxsize: int
    ttl: float  # trusted this long while the invalidation channel is subscribed
    local_ttl: float  # otherwise
    redis_url: str | None = None  # where invalidations are published; None: the short TTL only
    listener: _Listener | None = None
    generation: int = 0  # bumped by every invalidation; a load that spans one is not stored
    _entries: OrderedDict[str, _Entry] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def listening(self) -> bool:
        """Whether invalidations reach this cache as they should (or there is nothing to listen to)."""
        if self.redis_url is None or self.maxsize <= 0:
            return True
        return self.listener is not None and self.listener.alive()

    def _current_ttl(self) -> float:
        if self.listener is not None and self.listener.subscribed.is_set():
            return self.ttl
        return self.local_ttl

    def get(self, key_hash: str) -> tuple[CachedKey, datetime | None] | None:
        """The snapshot and the key's last recorded use, or None when absent or too old."""
        with self._lock:
            entry = self._entries.get(key_hash)
            if entry is None:
                return None
            if time.monotonic() - entry.loaded_at >= self._current_ttl():
                del self._entries[key_hash]
                return None
            self._entries.move_to_end(key_hash)
            return entry.value, entry.last_used_at

    def put(self, key_hash: str, value: CachedKey, last_used_at: datetime | None, generation: int) -> None:
        """Store a snapshot loaded after ``generation`` was read; dropped if an invalidation came since."""
        if self.maxsize <= 0:
            return
        with self._lock:
            if generation != self.generation:
                return
            self._entries[key_hash] = _Entry(value, time.monotonic(), last_used_at)
            self._entries.move_to_end(key_hash)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def note_used(self, key_hash: str, when: datetime) -> None:
        with self._lock:
            entry = self._entries.get(key_hash)
            if entry is not None:
                entry.last_used_at = when

    def forget(self, key_hashes: Iterable[str] = (), organization_ids: Iterable[str] = ()) -> None:
        hashes, organizations = set(key_hashes), {str(o) for o in organization_ids}
        with self._lock:
            self.generation += 1
            for key_hash in hashes:
                self._entries.pop(key_hash, None)
            if organizations:
                for key_hash in [
                    h for h, e in self._entries.items() if str(e.value.organization_id) in organizations
                ]:
                    del self._entries[key_hash]

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()

    def size(self) -> int:
        return len(self._entries)


# Every cache of this process (live and sandbox apps, and the apps tests build), for invalidations.
_CACHES: WeakSet[KeyCache] = WeakSet()
_CACHES_LOCK = threading.Lock()


def channel_name(config: Any) -> str:
    """``API_KEY_CACHE_CHANNEL``, or the Socket.IO channel's name plus ``-apikeys``: a deployment (or a
    test run) that isolates its Socket.IO channel on a shared Redis isolates this one with it."""
    return config.get("API_KEY_CACHE_CHANNEL") or (
        config.get("SOCKETIO_CHANNEL", "agentdesk-socketio") + DEFAULT_CHANNEL_SUFFIX
    )


def cache_for(app: Flask | None = None, *, listen: bool = True) -> KeyCache:
    """The cache of ``app`` (the current app by default), created on first use. With ``listen`` (the
    request path) this process's listener on the invalidation channel is started when ``REDIS_URL`` is
    set; a CLI command that only issues or revokes keys never starts one."""
    app = app or current_app._get_current_object()  # type: ignore[attr-defined]
    cache: KeyCache | None = app.extensions.get(_EXTENSION)
    if cache is not None and (not listen or cache.listening()):
        return cache
    with _CACHES_LOCK:
        cache = app.extensions.get(_EXTENSION)
        if cache is None:
            cache = KeyCache(
                maxsize=int(app.config.get("API_KEY_CACHE_SIZE", 10_000)),
                ttl=float(app.config.get("API_KEY_CACHE_SECONDS", 60)),
                local_ttl=float(app.config.get("API_KEY_CACHE_LOCAL_SECONDS", 1)),
                redis_url=app.config.get("REDIS_URL") or None,
            )
            _CACHES.add(cache)
            app.extensions[_EXTENSION] = cache
            # A disposed engine means the store was reset under us (tests empty and dispose it; a forked
            # worker disposes its parent's pool): forget every key learnt from it.
            with app.app_context():  # ``app`` may be another environment's than the current one
                event.listen(db.engine, "engine_disposed", _clear_on_dispose(cache))
        if listen and not cache.listening() and cache.redis_url:
            # Also after a fork (a pre-forking server): the parent's thread is gone, start our own.
            cache.listener = _listener(cache.redis_url, channel_name(app.config))
            cache.listener.caches.add(cache)
        return cache


def _clear_on_dispose(cache: KeyCache) -> Callable[[Any], None]:
    def clear(engine: Any) -> None:
        cache.clear()

    return clear


def resolve(
    key_hash: str, load: Callable[[], tuple[CachedKey, datetime | None] | None]
) -> tuple[CachedKey, datetime | None] | None:
    """The cached snapshot of ``key_hash``, else ``load()`` (a database read) and remember a found key."""
    cache = cache_for()
    cached = cache.get(key_hash)
    if cached is not None:
        return cached
    generation = cache.generation
    loaded = load()
    if loaded is not None:
        cache.put(key_hash, loaded[0], loaded[1], generation)
    return loaded


def remember(key_hash: str, value: CachedKey, last_used_at: datetime | None) -> None:
    """Put a snapshot this process knows to be current (a key it has just issued and committed)."""
    cache = cache_for(listen=False)
    cache.put(key_hash, value, last_used_at, cache.generation)


def invalidate(key_hashes: Iterable[str] = (), organization_ids: Iterable[Any] = ()) -> None:
    """Drop keys (by digest) and every key of some organizations from every cache of this process, and
    tell the other processes through Redis when ``REDIS_URL`` is set. Call it after the commit that
    changed them (:func:`core.uow.after_commit`)."""
    hashes = sorted(set(key_hashes))
    organizations = sorted({str(o) for o in organization_ids})
    if not hashes and not organizations:
        return
    _apply(list(_CACHES), hashes, organizations)
    url = current_app.config.get("REDIS_URL")
    if not url:
        return
    message = json.dumps({"keys": hashes, "organizations": organizations})
    try:
        _publisher(url).publish(channel_name(current_app.config), message)
    except redis.RedisError:
        # The other processes keep a snapshot up to API_KEY_CACHE_SECONDS, unless their own subscription
        # broke too (then they are on the short TTL and clear everything on reconnect).
        log.warning("could not publish an API key invalidation; other processes may lag", exc_info=True)


def _apply(caches: Iterable[KeyCache], hashes: Iterable[str], organizations: Iterable[str]) -> None:
    for cache in caches:
        cache.forget(hashes, organizations)


_PUBLISHERS: dict[str, redis.Redis] = {}


def _publisher(url: str) -> redis.Redis:
    client = _PUBLISHERS.get(url)
    if client is None:
        client = _PUBLISHERS[url] = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    return client


class _Listener:
    """A daemon thread subscribed to the invalidation channel, reconnecting forever with a short pause.

    ``subscribed`` is set only while the subscription is confirmed; caches use their long TTL only then.
    Every (re)subscription clears the caches first: what was published while we were away is unknown.
    """

    HEALTH_CHECK_SECONDS = 5  # an idle connection is PINGed this often, so a dead Redis is noticed

    def __init__(self, url: str, channel: str) -> None:
        self.url = url
        self.channel = channel
        self.pid = os.getpid()
        self.caches: WeakSet[KeyCache] = WeakSet()
        self.subscribed = threading.Event()
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"keycache:{channel}", daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self.pid == os.getpid() and self._thread.is_alive()

    def stop(self) -> None:
        self.stopping.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        pause = 0.2
        while not self.stopping.is_set():
            try:
                self._listen()
                pause = 0.2
            except Exception:  # Redis down, restarted or refused: keep trying, on the short TTL meanwhile
                log.debug("API key invalidation channel lost; reconnecting", exc_info=True)
            self._lost()
            self.stopping.wait(pause)
            pause = min(pause * 2, 5.0)

    def _lost(self) -> None:
        self.subscribed.clear()
        for cache in list(self.caches):
            cache.clear()

    def _listen(self) -> None:
        client = redis.Redis.from_url(
            self.url,
            socket_connect_timeout=2,
            socket_timeout=self.HEALTH_CHECK_SECONDS * 2,
            health_check_interval=self.HEALTH_CHECK_SECONDS,
            client_name=f"agentdesk-keycache:{self.channel}",  # findable in CLIENT LIST
        )
        pubsub = client.pubsub()
        try:
            pubsub.subscribe(self.channel)
            while not self.stopping.is_set():
                message = pubsub.get_message(timeout=1.0)
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    for cache in list(self.caches):
                        cache.clear()
                    self.subscribed.set()
                elif message["type"] == "message":
                    self._handle(message["data"])
        finally:
            self.subscribed.clear()
            pubsub.close()
            client.close()

    def _handle(self, data: bytes | str) -> None:
        try:
            payload = json.loads(data)
            hashes = [str(h) for h in payload.get("keys", ())]
            organizations = [str(o) for o in payload.get("organizations", ())]
        except (ValueError, AttributeError, TypeError):
            log.warning("ignoring a malformed API key invalidation: %r", data)
            return
        _apply(list(self.caches), hashes, organizations)


_LISTENERS: dict[tuple[str, str], _Listener] = {}


def _listener(url: str, channel: str) -> _Listener:
    """This process's listener for (url, channel); called with ``_CACHES_LOCK`` held."""
    listener = _LISTENERS.get((url, channel))
    if listener is None or not listener.alive():
        listener = _LISTENERS[(url, channel)] = _Listener(url, channel)
    return listener
