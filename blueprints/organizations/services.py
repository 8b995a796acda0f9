"""Rules for organizations and API keys. Functions take plain values, never the Flask request, and never
commit: the caller's unit of work does (``core.uow``; the CLI blocks use ``in_environment``)."""

from __future__ import annotations

import hashlib
import secrets
import string
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import event, or_, select, update

from blueprints.audit import services as audit_log
from blueprints.organizations.models import PRODUCTS, ApiKey, Organization
from core import keycache
from core.auth import AuthenticatedKey
from core.db import db, utcnow
from core.environments import KEY_PREFIXES
from core.errors import ApiError
from core.tenancy import find_for_org
from core.text import LIKE_ESCAPE, prefix_pattern
from core.timeutil import get_zone
from core.uow import after_commit

_ALPHABET = string.ascii_letters + string.digits
SECRET_LENGTH = 40
VISIBLE_CHARS = 8  # characters after sk_live_/sk_test_ kept in clear as the key's prefix
KEY_NAME_MAX = 120  # api_keys.name


def hash_key(plaintext: str) -> str:
    # Keys carry 238 bits of randomness, so a fast digest is enough (no password stretching needed).
    return hashlib.sha256(plaintext.encode()).hexdigest()


def normalize_products(products: list[str] | None) -> list[str]:
    chosen: list[str] = []
    for raw in products or []:
        product = raw.strip().upper()
        if not product:
            continue
        if product not in PRODUCTS:
            raise ApiError(400, f"products: unknown product {raw!r} (allowed: {', '.join(PRODUCTS)})")
        if product not in chosen:
            chosen.append(product)
    return chosen


def checked_timezone(name: str) -> str:
    """An IANA zone name as stored; 400 naming ``timezone`` when the zone does not exist."""
    try:
        get_zone(name.strip())
    except ValueError as error:
        raise ApiError(400, f"timezone: {error}", param="timezone") from None
    return name.strip()


def create_organization(
    name: str,
    products: list[str] | None = None,
    organization_id: uuid.UUID | None = None,
    timezone: str = "UTC",
) -> Organization:
    name = name.strip()
    if not name:
        raise ApiError(400, "name: must not be empty")
    organization = Organization(
        id=organization_id or uuid.uuid4(),
        name=name,
        products=normalize_products(products),
        timezone=checked_timezone(timezone),
    )
    db.session.add(organization)
    db.session.flush()
    return organization


def get_organization(organization_id: uuid.UUID) -> Organization | None:
    return db.session.get(Organization, organization_id)


def set_timezone(organization_id: uuid.UUID, timezone: str) -> Organization:
    organization = get_organization(organization_id)
    if organization is None:
        raise ApiError(404, "organization not found")
    organization.timezone = checked_timezone(timezone)
    db.session.flush()
    return organization


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    plaintext: str  # shown once, never stored


def issue_api_key(
    organization: Organization,
    environment: str,
    *,
    name: str | None = None,
    expires_at: datetime | None = None,
    plaintext: str | None = None,
) -> IssuedKey:
    """Create a key for ``environment``. ``plaintext`` lets the demo seed derive a stable key."""
    if environment not in KEY_PREFIXES:
        raise ApiError(400, f"environment: must be one of {', '.join(KEY_PREFIXES)}")
    # A name is a note for people ("Zapier", "partner CRM"): spaces around it mean nothing, none is None.
    name = " ".join((name or "").split()) or None
    if name is not None and len(name) > KEY_NAME_MAX:
        raise ApiError(400, f"name: at most {KEY_NAME_MAX} characters", code="name_too_long", param="name")
    plaintext = plaintext or KEY_PREFIXES[environment] + "".join(
        secrets.choice(_ALPHABET) for _ in range(SECRET_LENGTH)
    )
    prefix = plaintext[: len(KEY_PREFIXES[environment]) + VISIBLE_CHARS]
    key = ApiKey(
        organization_id=organization.id,
        environment=environment,
        prefix=prefix,
        key_hash=hash_key(plaintext),
        name=name,
        expires_at=expires_at,
    )
    db.session.add(key)
    db.session.flush()
    audit_log.record(
        "api_key.created",
        "api_key",
        prefix,
        ["environment", "expires_at", "name"],
        organization_id=organization.id,
        before_after={"name": (None, name), "environment": (None, environment)},
    )
    # This process knows the new key at once (another process loads it on its first use: unknown keys
    # are never cached, so there is nothing to invalidate anywhere).
    snapshot = _snapshot(key, organization)
    after_commit(lambda: keycache.remember(key.key_hash, snapshot, None))
    return IssuedKey(key, plaintext)


def find_key(plaintext: str) -> ApiKey | None:
    return db.session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(plaintext)))


def _key_and_organization(key_hash: str) -> tuple[ApiKey, Organization] | None:
    row = db.session.execute(
        select(ApiKey, Organization)
        .join(Organization, Organization.id == ApiKey.organization_id)
        .where(ApiKey.key_hash == key_hash)
    ).first()
    return None if row is None else (row[0], row[1])


def resolve_api_key(
    plaintext: str, environment: str, *, touch_after: timedelta = timedelta(seconds=60)
) -> tuple[ApiKey, Organization] | None:
    """The active key and its organization, or None when the key is unknown, inactive, expired or of
    another environment. A read only (one query, never cached: see :func:`authenticate_key`)."""
    if not plaintext:
        return None
    found = _key_and_organization(hash_key(plaintext))
    if found is None:
        return None
    key, organization = found
    if not key.active or key.environment != environment:
        return None
    if key.expires_at is not None and key.expires_at <= utcnow():
        return None
    return key, organization


def _snapshot(key: ApiKey, organization: Organization) -> keycache.CachedKey:
    return keycache.CachedKey(
        key_id=key.id,
        prefix=key.prefix,
        environment=key.environment,
        active=key.active,
        expires_at=key.expires_at,
        organization_id=organization.id,
        organization_name=organization.name,
        products=tuple(organization.products or ()),
    )


def authenticate_key(plaintext: str, environment: str, now: datetime) -> AuthenticatedKey | None:
    """:func:`resolve_api_key` through this process's cache (``core.keycache``): a known key costs no
    query. ``active``, the environment and ``expires_at`` are checked on every call, from the snapshot."""
    if not plaintext:
        return None
    key_hash = hash_key(plaintext)

    def load() -> tuple[keycache.CachedKey, datetime | None] | None:
        found = _key_and_organization(key_hash)
        if found is None:
            return None  # unknown keys are not cached: a key issued elsewhere works at once
        key, organization = found
        return _snapshot(key, organization), key.last_used_at

    resolved = keycache.resolve(key_hash, load)
    if resolved is None or not resolved[0].usable(environment, now):
        return None
    return AuthenticatedKey(resolved[0], key_hash, resolved[1])


def touch_api_key(key_id: uuid.UUID, now: datetime, touch_after: timedelta) -> None:
    """Record a key's use on a connection of its own, outside any unit of work (called after the response
    went out). The condition keeps concurrent requests of one key to one write per ``touch_after``."""
    with db.engine.begin() as connection:
        connection.execute(
            update(ApiKey)
            .where(
                ApiKey.id == key_id,
                or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at <= now - touch_after),
            )
            .values(last_used_at=now)
        )


MIN_REVOKE_PREFIX = 12  # "sk_live_" and at least 4 characters of the key


def keys_matching(prefix: str) -> list[ApiKey]:
    """The keys a revocation argument names: the full key, its shown prefix (``sk_live_`` + 8), or a
    shorter start of it (at least 12 characters)."""
    prefix = prefix.strip()
    shown = len(KEY_PREFIXES["live"]) + VISIBLE_CHARS
    if len(prefix) > shown:
        key = find_key(prefix)
        if key is not None:
            return [key]
        if len(prefix) >= shown + SECRET_LENGTH - VISIBLE_CHARS:
            return []  # as long as a whole key but not one: a typo, not a prefix
        return list(db.session.scalars(select(ApiKey).where(ApiKey.prefix == prefix[:shown])))
    if len(prefix) < MIN_REVOKE_PREFIX:
        return []
    return list(
        db.session.scalars(
            select(ApiKey).where(ApiKey.prefix.like(prefix_pattern(prefix), escape=LIKE_ESCAPE))
        )
    )


def _revoke(key: ApiKey, now: datetime) -> None:
    if not key.active:
        return  # revoking twice changes nothing and records nothing
    key.active = False
    key.revoked_at = now
    audit_log.record(
        "api_key.revoked",
        "api_key",
        key.prefix,
        ["revoked_at"],
        organization_id=key.organization_id,
        before_after={"active": (True, False)},
    )


def revoke_api_keys(prefix: str) -> list[ApiKey]:
    """Deactivate the keys that ``prefix`` names (see :func:`keys_matching`); returns them."""
    keys = keys_matching(prefix)
    now = utcnow()
    for key in keys:
        _revoke(key, now)
    db.session.flush()
    return keys


def get_api_key(organization_id: uuid.UUID, key_id: str) -> ApiKey:
    """The organization's key by id; another organization's, an unknown or a malformed id: 404."""
    key = find_for_org(ApiKey, key_id, organization_id)
    if key is None:
        raise ApiError(404, "API key not found", code="api_key_not_found")
    return key


def revoke_api_key(organization_id: uuid.UUID, key_id: str) -> ApiKey:
    """Deactivate one key of the organization (the desk's "Revoke"); an inactive one stays as it is.
    Every process stops accepting it once committed (the mapper events below invalidate the caches)."""
    key = get_api_key(organization_id, key_id)
    _revoke(key, utcnow())
    db.session.flush()
    return key


def list_keys(organization_id: uuid.UUID) -> list[ApiKey]:
    return list(
        db.session.scalars(
            select(ApiKey).where(ApiKey.organization_id == organization_id).order_by(ApiKey.created_at)
        )
    )


# Any change to a key or an organization reaches every process's key cache once it is committed: the
# revocation of `keys revoke`, an edit of a key's environment or expiry, an organization's products. The
# mapper events see every ORM change (a service's or a test's), so no path can forget to invalidate.
# ``last_used_at`` is written with a plain UPDATE (touch_api_key), which fires none of them, as it should.
def _forget_key_after_commit(mapper: Any, connection: Any, key: ApiKey) -> None:
    key_hash = key.key_hash
    after_commit(lambda: keycache.invalidate(key_hashes=[key_hash]))


def _forget_organization_after_commit(mapper: Any, connection: Any, organization: Organization) -> None:
    organization_id = organization.id
    after_commit(lambda: keycache.invalidate(organization_ids=[organization_id]))


for _change in ("after_update", "after_delete"):
    event.listen(ApiKey, _change, _forget_key_after_commit)
    event.listen(Organization, _change, _forget_organization_after_commit)
