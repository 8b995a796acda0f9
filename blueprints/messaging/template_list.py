"""The APPROVED templates of an organization address, as the composer's template picker offers them.

The list comes from the address's provider (``Provider.list_templates``: Meta's
``GET /<waba id>/message_templates``, or the simulator's own). An agent opens conversation after
conversation, and each closed-window composer asks for the list; calling Meta every time would cost a
Graph call per render and hit its rate limits, so answers are kept in memory for
:data:`CACHE_SECONDS` per (environment, organization, address), and a failure for
:data:`FAILURE_SECONDS` (a Meta outage then costs one slow call per address every few seconds, not one per
render). The cache is per process: several processes each ask Meta at most once a minute per address. A
template approved a moment ago shows within a minute; sending never uses this list (the send reads the
template from the provider again, ``sending.send_template``).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from blueprints.channels.crypto import TokenDecryptionError
from blueprints.channels.providers import TEMPLATE_SERVICES, ProviderError, Template
from blueprints.channels.registry import provider_for
from blueprints.channels.services import get_address
from blueprints.messaging.sending import ADDRESS_NOT_FOUND, sendable_address
from core.environments import current_environment
from core.errors import ApiError

CACHE_SECONDS = 60.0
FAILURE_SECONDS = 15.0
TEMPLATE_LIST_FAILED = "Failed to get templates from Meta"


@dataclass(frozen=True)
class _Entry:
    expires: float  # time.monotonic() deadline
    templates: tuple[Template, ...] | None  # None: the provider failed
    error: str | None = None


_cache: dict[tuple[str, str, str], _Entry] = {}
_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every cached list (tests; an operator who just approved templates restarts nothing)."""
    with _lock:
        _cache.clear()


def has_templates(service: str) -> bool:
    """Whether the service has message templates at all (WhatsApp does; Instagram and Messenger not)."""
    return service in TEMPLATE_SERVICES


def approved_templates(organization_id: uuid.UUID, organization_address: str) -> list[Template]:
    """The address's APPROVED templates, sorted by name and language (from the cache when fresh).

    404 ``Organization address not found`` for an address that is not the organization's; the address
    checks of a send (token, status: 400); 502 ``Failed to get templates from Meta`` when the provider
    could not list them (the desk then falls back to the templates the address sent lately). An
    Instagram or Messenger address has none: an empty list, and the provider is not called."""
    address = get_address(organization_id, organization_address)
    if address is None:
        raise ApiError(404, ADDRESS_NOT_FOUND, param="organization_address")
    if not has_templates(address.service):
        return []
    key = (current_environment(), str(organization_id), address.address)
    now = time.monotonic()
    with _lock:
        entry = _cache.get(key)
    if entry is None or entry.expires <= now:
        entry = _fetch(organization_id, organization_address)
        with _lock:
            _cache[key] = entry
    if entry.templates is None:
        raise ApiError(502, TEMPLATE_LIST_FAILED, param="organization_address")
    return list(entry.templates)


def _fetch(organization_id: uuid.UUID, organization_address: str) -> _Entry:
    address = sendable_address(organization_id, organization_address, None)
    try:
        found = provider_for(address).list_templates(address)
    except (ProviderError, TokenDecryptionError) as error:
        return _Entry(time.monotonic() + FAILURE_SECONDS, None, str(error))
    ordered = sorted(found, key=lambda t: (t.name.lower(), t.language, t.id))
    return _Entry(time.monotonic() + CACHE_SECONDS, tuple(ordered))
