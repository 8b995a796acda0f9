"""What every telecom service uses: money as centavos, cursor pages, events, the 409 of a refused move."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, and_, or_

from core import events
from core.db import db
from core.errors import ApiError
from core.hooks import hook
from core.tenancy import find_for_org

T = TypeVar("T")
CURRENCY = "MXN"


def pesos(cents: int | None) -> str | None:
    """Centavos as the peso string the API shows (``19900`` -> ``"199.00"``, ``-500`` -> ``"-5.00"``)."""
    if cents is None:
        return None
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole}.{part:02d}"


def cents_of(amount: str | Decimal) -> int:
    """Pesos (text or Decimal, at most two decimals) as centavos; ValueError otherwise. Never a float."""
    try:
        value = Decimal(str(amount).strip())
        exact = value.is_finite() and value == value.quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError):
        raise ValueError(f"not an amount: {amount!r}") from None
    if not exact:
        raise ValueError(f"not an amount with at most two decimals: {amount!r}")
    return int(value * 100)


def conflict(code: str, message: str, param: str | None = None) -> ApiError:
    return ApiError(409, message, code=code, param=param)


def invalid(param: str, problem: str, code: str = "parameter_invalid") -> ApiError:
    return ApiError(400, f"{param}: {problem}", code=code, param=param)


# The event store and the lifecycle webhooks (services/events.py, services/webhooks.py) build on this module
# (cursor pages, errors) and answer here: connected in blueprints/integrations.
event_published = hook(
    "telecom.event_published",
    "fn(name, organization_id, obj) -> None: store the event and queue a delivery per listening endpoint, "
    "in the caller's transaction",
)


def publish(name: str, organization_id: uuid.UUID, obj: dict[str, Any]) -> None:
    """Announce a change of a telecom resource (``obj`` names it: ``{"id", "object", ...}``).

    In the caller's transaction: a stored event (``GET /v1/partner/events``) with the resource as the API
    shows it, and one delivery per lifecycle webhook endpoint listening to ``name``, whose job is queued
    after the commit. After the commit: the domain event to Socket.IO and in-process subscribers. A
    rollback drops all of it, so nobody hears of a change that did not happen.
    """
    event_published.answers(name=name, organization_id=organization_id, obj=obj)
    events.publish(name, organization_id, obj)


@dataclass(frozen=True)
class CursorPage(Generic[T]):
    items: list[T]
    has_more: bool


def cursor_page(
    model: type[Any],
    statement: Select[Any],
    organization_id: uuid.UUID,
    *,
    limit: int,
    starting_after: str | None,
) -> CursorPage[Any]:
    """Newest first; ``starting_after`` is the last id of the previous page (Stripe's cursor)."""
    if starting_after is not None:
        anchor = find_for_org(model, starting_after, organization_id)
        if anchor is None:
            raise invalid("starting_after", "no such object in this list")
        statement = statement.where(
            or_(
                model.created_at < anchor.created_at,
                and_(model.created_at == anchor.created_at, model.id < anchor.id),
            )
        )
    rows = list(
        db.session.scalars(statement.order_by(model.created_at.desc(), model.id.desc()).limit(limit + 1))
    )
    return CursorPage(rows[:limit], len(rows) > limit)
