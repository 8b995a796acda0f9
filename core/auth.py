"""Authentication and tenancy for the JSON API.

Runs as a ``before_request`` hook of each area blueprint, so it only ever sees requests whose route
matched: an unknown route is answered 404 before anyone asks for a key. Order of checks:

1. ``Authorization: Bearer`` present -> it must be a valid JWT of this environment (an API key sent there
   fails as a JWT: 401). Only areas that allow JWTs (CRM) accept it as the caller's identity.
2. Otherwise ``X-API-Key`` -> active, unexpired key of this environment (the key's recorded environment,
   not its prefix, decides).
3. The path's ``organization_id`` must be the caller's organization: 403 otherwise.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from flask import Blueprint, Response, after_this_request, current_app, g, has_request_context, request

from core import keycache
from core.db import db, utcnow
from core.environments import current_environment
from core.errors import ApiError
from core.ratelimit import count_request
from core.tokens import InvalidToken, decode_token

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- what auth needs from the organizations area


@dataclass(frozen=True)
class AuthenticatedKey:
    """A usable key as authentication sees it: the snapshot and when the key was last recorded used."""

    snapshot: keycache.CachedKey
    key_hash: str
    last_used_at: datetime | None


class Tenancy(Protocol):
    """Organizations and their API keys, as authentication reads them. Core owns no area's tables: the
    organizations area provides this (``blueprints/organizations/directory.py``), connected at start-up in
    ``blueprints/integrations`` with :func:`provide_tenancy`."""

    def authenticate_key(self, plaintext: str, environment: str, now: datetime) -> AuthenticatedKey | None:
        """The key's snapshot when it is active, of ``environment`` and unexpired at ``now`` (cached)."""
        ...

    def record_key_use(self, key_id: uuid.UUID, now: datetime, touch_after: timedelta) -> None:
        """Write the key's ``last_used_at`` on a connection of its own (at most once per ``touch_after``)."""
        ...

    def organization_exists(self, organization_id: uuid.UUID) -> bool: ...

    def organization_products(self, organization_id: uuid.UUID) -> tuple[str, ...]: ...


_tenancy: Tenancy | None = None


def provide_tenancy(tenancy: Tenancy) -> None:
    global _tenancy
    _tenancy = tenancy


def tenancy() -> Tenancy:
    if _tenancy is None:
        raise RuntimeError("no tenancy provider: create_app() connects the organizations area's")
    return _tenancy


def key_touch_due(last_used_at: datetime | None, now: datetime, touch_after: timedelta) -> bool:
    return last_used_at is None or now - last_used_at >= touch_after


@dataclass(frozen=True)
class Principal:
    """Who is calling: the organization, the environment and how they proved it."""

    organization_id: uuid.UUID
    environment: str
    kind: str  # "api_key", "jwt" or "user" (a desk user signed in to the pages)
    key_id: uuid.UUID | None = None
    subject: str | None = None
    key_prefix: str | None = None
    # The organization's enabled products when authentication already knows them (an API key's cached
    # snapshot): product gating then needs no query. None: ask the database.
    products: tuple[str, ...] | None = None

    @property
    def actor(self) -> str:
        """Who did it, in the one format every history, audit trail and version uses (see ``actor``)."""
        if self.kind == "api_key":
            return actor("api_key", self.key_prefix)
        if self.kind == "user":
            return actor("user", self.subject)
        return actor("member", self.subject)


SYSTEM = "system"


def actor(kind: str, identifier: object = None) -> str:
    """``api_key:sk_live_ab12cd34`` (a key's shown prefix, never the secret), ``member:<id>`` (a JWT's
    subject), ``user:<id>`` (a desk user), ``system`` or ``system:<process>`` (jobs, sweeps, routing)."""
    return f"{kind}:{identifier}" if identifier else kind


def current_actor(default: str = SYSTEM) -> str:
    """The caller of the current request as an actor string; ``default`` outside a request."""
    principal = getattr(g, "principal", None) if has_request_context() else None
    return principal.actor if principal is not None else default


def current_principal() -> Principal:
    principal = getattr(g, "principal", None)
    if principal is None:  # a route registered outside an authenticated blueprint
        raise ApiError(401)
    return principal


def current_organization_id() -> uuid.UUID:
    return current_principal().organization_id


def _authenticate(allow_jwt: bool) -> Principal:
    environment = current_environment()
    authorization = request.headers.get("Authorization", "")
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401)
        try:
            claims = decode_token(current_app.config["SECRET_KEY"], token.strip(), environment=environment)
        except InvalidToken:
            raise ApiError(401) from None
        if allow_jwt:
            if not tenancy().organization_exists(claims["org"]):
                raise ApiError(401)
            return Principal(claims["org"], environment, "jwt", subject=str(claims["sub"]))
        # A valid JWT on an area that takes only keys: fall through to the key, which must be present.
    api_key = request.headers.get("X-API-Key", "").strip()
    if not api_key:
        raise ApiError(401)
    now = utcnow()
    # Cached in process (core.keycache): a known key costs no query; active, environment and expiry are
    # still checked on every request, from the snapshot.
    resolved = tenancy().authenticate_key(api_key, environment, now)
    if resolved is None:
        raise ApiError(401)
    snapshot = resolved.snapshot
    touch_after = timedelta(seconds=current_app.config["API_KEY_TOUCH_SECONDS"])
    if key_touch_due(resolved.last_used_at, now, touch_after):
        # this process records a use now: it schedules no other until touch_after has passed
        keycache.cache_for().note_used(resolved.key_hash, now)
        _touch_after_response(snapshot.key_id, now, touch_after)
    return Principal(
        snapshot.organization_id,
        environment,
        "api_key",
        key_id=snapshot.key_id,
        key_prefix=snapshot.prefix,
        products=snapshot.products,
    )


def _touch_after_response(key_id: uuid.UUID, now: datetime, touch_after: timedelta) -> None:
    """Write the key's ``last_used_at`` once the response has gone out, on its own connection: the
    request's unit of work stays a read for reads and keeps its one commit for writes."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def touch() -> None:
        try:
            with app.app_context():
                tenancy().record_key_use(key_id, now, touch_after)
        except Exception:  # bookkeeping only: never fail or slow a request for it
            log.warning("could not record the use of API key %s", key_id, exc_info=True)

    @after_this_request
    def _schedule(response: Response) -> Response:
        response.call_on_close(touch)
        return response


def _check_path_organization(principal: Principal) -> None:
    raw = (request.view_args or {}).get("organization_id")
    if raw is None:
        return
    try:
        requested = uuid.UUID(str(raw))
    except ValueError:
        requested = None
    if requested != principal.organization_id:
        raise ApiError(403)


def protect(blueprint: Blueprint, *, allow_jwt: bool = False) -> None:
    """Require authentication on every route of ``blueprint``."""

    @blueprint.before_request
    def _require_caller() -> None:
        if request.method == "OPTIONS":
            return
        reads_in_autocommit()
        principal = _authenticate(allow_jwt)
        g.principal = principal
        count_request(principal)  # 429 once the organization's bucket is spent (core.ratelimit)
        _check_path_organization(principal)


def reads_in_autocommit() -> None:
    """A GET runs its statements in autocommit on PostgreSQL (``DATABASE_AUTOCOMMIT_READS``): psycopg
    otherwise sends BEGIN before the first statement and the unit of work ROLLBACK after the last, three
    round trips for a one-query read, where under READ COMMITTED each statement has its own snapshot
    anyway. GETs write nothing but single statements (an API key's ``last_used_at``), which commit
    alone. The connection gets its isolation back when it returns to the pool. The API's GETs, and the
    pages whose GETs only read (the CRM's, ``blueprints/crm/pages/common.py``), call it before their
    first statement."""
    if request.method not in ("GET", "HEAD") or not current_app.config.get("DATABASE_AUTOCOMMIT_READS"):
        return
    if db.engine.dialect.name != "postgresql" or db.session().in_transaction():
        return
    db.session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


def _products() -> tuple[str, ...]:
    principal = current_principal()
    if principal.products is not None:
        return principal.products
    return tenancy().organization_products(principal.organization_id)


def require_product(product: str) -> None:
    """Telecom product gating: 403 when the caller's organization has not enabled ``product``."""
    if product not in _products():
        raise ApiError(
            403,
            f"The product {product} is not enabled for this organization",
            code="product_not_enabled",
        )


def organization_has_product(product: str) -> bool:
    return product in _products()
