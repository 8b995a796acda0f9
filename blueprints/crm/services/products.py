"""The product catalogue: what line items' ``product_id`` names and what AI agents offer (``send_product``).

A product has an optional SKU (unique in the organization), a unit price in one of the CRM's currencies
(kept like a line item's ``unit_price``: up to 4 decimal places, exact), links to its page and image, and
``active``. Deleting a product that line items reference archives it (``active`` false) instead, so a deal
never names a product that does not exist; an unreferenced product is removed.

Search (``q`` of the list, :func:`search_products` for the AI tool) is case-insensitive over name, SKU and
description: every word of the query must appear in one of them (so "red shirt" finds "Shirt, red"), LIKE
wildcards taken literally. Catalogues are small per organization, so the organization's rows are read off
``ix_crm_products_list`` and filtered, rather than kept in a text index.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import and_, case, exists, or_, select
from sqlalchemy.exc import IntegrityError

from blueprints.audit import services as audit_log
from blueprints.crm.drafts import ProductChanges, ProductDraft, check, given, sent
from blueprints.crm.models import DealLineItem, Product
from blueprints.crm.money import price_str, round_price
from blueprints.crm.rules import Limit, Offset, Refusal, Search
from blueprints.crm.services.common import get_ref, savepoint
from core.db import db, utcnow
from core.events import publish
from core.pagination import Page, paginate
from core.tenancy import missing_ids
from core.text import LIKE_ESCAPE, contains_pattern

SEARCHED = ("name", "sku", "description")
MAX_QUERY_WORDS = 8  # a sentence pasted by a model is cut to its first words, not refused
EDITABLE = ("sku", "name", "description", "currency", "url", "image_url", "active")
# Fields a PATCH may leave out but not clear.
NOT_NULL = ("name", "price", "currency", "active")


@dataclass(frozen=True)
class ProductFilters:
    """The catalogue list's filters; the API's query model is generated from them (``limit`` and
    ``offset`` come first there, as in every list)."""

    q: Annotated[Search | None, Field(description="words found in the name, SKU or description")] = None
    active: bool | None = None
    limit: Limit = 100
    offset: Offset = 0


def _event(product: Product, change: str) -> None:
    publish(
        "product.updated",
        product.organization_id,
        {
            "id": str(product.id),
            "sku": product.sku,
            "name": product.name,
            "price": price_str(product.price, product.currency),
            "currency": product.currency,
            "active": product.active,
            "change": change,
        },
    )


def _words(query: str) -> list[str]:
    return [w for w in query.split() if w][:MAX_QUERY_WORDS]


def _matches(query: str) -> Any:
    """Every word in the name, the SKU or the description (case-insensitive, wildcards literal)."""
    columns = [getattr(Product, name) for name in SEARCHED]
    return and_(
        *(
            or_(*(c.ilike(contains_pattern(word), escape=LIKE_ESCAPE) for c in columns))
            for word in _words(query)
        )
    )


def get_product(organization_id: uuid.UUID, product_id: uuid.UUID | str) -> Product:
    """The organization's product, or 404 ``No Product found`` (another organization's too)."""
    return get_ref(Product, product_id, organization_id, "Product")


def list_products(organization_id: uuid.UUID, filters: ProductFilters) -> Page[Product]:
    filters = check(filters)
    statement = select(Product).where(Product.organization_id == organization_id)
    if filters.active is not None:
        statement = statement.where(Product.active.is_(filters.active))
    if filters.q and _words(filters.q):
        statement = statement.where(_matches(filters.q))
    statement = statement.order_by(Product.name, Product.id)
    return paginate(statement, offset=filters.offset, limit=filters.limit)


def search_products(organization_id: uuid.UUID, query: str, limit: int = 5) -> list[Product]:
    """Active products matching every word of ``query``; those whose name holds the whole query first,
    then by name. An empty query lists the first active products by name."""
    statement = select(Product).where(Product.organization_id == organization_id, Product.active.is_(True))
    text = " ".join(_words(query or ""))
    order: list[Any] = [Product.name, Product.id]
    if text:
        statement = statement.where(_matches(text))
        whole = Product.name.ilike(contains_pattern(text), escape=LIKE_ESCAPE)
        order.insert(0, case((whole, 0), else_=1))
    return list(db.session.scalars(statement.order_by(*order).limit(max(1, min(limit, 50)))))


def unknown_product_ids(organization_id: uuid.UUID, product_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """Which of the ids name no product of the organization (one query)."""
    return missing_ids(Product, product_ids, organization_id)


def check_product_id(organization_id: uuid.UUID, product_id: uuid.UUID | None) -> None:
    """400 naming ``product_id`` when it names no product of the organization (None is fine)."""
    if product_id is not None and unknown_product_ids(organization_id, [product_id]):
        raise Refusal(
            400,
            f"product_id: no product of the organization has the id {product_id}",
            code="product_unknown",
            param="product_id",
        )


def _sku_conflict() -> Refusal:
    return Refusal(
        409, "sku: another product of the organization has this SKU", code="sku_taken", param="sku"
    )


def _store(product: Product) -> None:
    try:
        with savepoint():
            db.session.add(product)
    except IntegrityError:  # the SKU taken, maybe concurrently
        raise _sku_conflict() from None


def create_product(organization_id: uuid.UUID, draft: ProductDraft) -> Product:
    """A product of the catalogue; a SKU another product of the organization has is 409."""
    draft = check(draft)
    now = utcnow()
    product = Product(
        id=uuid.uuid4(),
        organization_id=organization_id,
        sku=draft.sku or None,
        name=draft.name,
        description=draft.description,
        price=round_price(draft.price),
        currency=draft.currency,
        url=draft.url,
        image_url=draft.image_url,
        active=draft.active,
        created_at=now,
        updated_at=now,
    )
    _store(product)
    _event(product, "created")
    return product


def update_product(organization_id: uuid.UUID, product_id: uuid.UUID, changes: ProductChanges) -> Product:
    """Only the fields sent change; ``name``, ``price``, ``currency`` and ``active`` cannot be cleared."""
    changes = check(changes)
    product = get_product(organization_id, product_id)
    for name in NOT_NULL:
        if getattr(changes, name) is None:
            raise Refusal(400, f"{name}: cannot be null", code="value_null", param=name)
    if given(changes.price):
        product.price = round_price(changes.price)
    for name in EDITABLE:
        value = getattr(changes, name)
        if sent(value):
            setattr(product, name, (value or None) if name == "sku" else value)
    product.updated_at = utcnow()
    _store(product)
    _event(product, "updated")
    return product


def is_referenced(organization_id: uuid.UUID, product_id: uuid.UUID) -> bool:
    return bool(
        db.session.scalar(
            select(
                exists().where(
                    DealLineItem.organization_id == organization_id, DealLineItem.product_id == product_id
                )
            )
        )
    )


def delete_product(organization_id: uuid.UUID, product_id: uuid.UUID) -> bool:
    """Remove the product; one that line items reference is archived instead (``active`` false). True when
    it was archived, False when removed."""
    product = get_product(organization_id, product_id)
    if is_referenced(organization_id, product.id):
        product.active = False
        product.updated_at = utcnow()
        db.session.flush()
        _event(product, "archived")
        return True
    db.session.delete(product)
    db.session.flush()
    audit_log.record("product.deleted", "product", product.id, organization_id=organization_id)
    _event(product, "deleted")
    return False
