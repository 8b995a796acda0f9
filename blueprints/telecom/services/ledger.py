"""The prepaid balance: immutable signed ledger entries and the running totals that writers lock.

An order that costs money places a ``hold`` when accepted (402 ``balance_insufficient`` when not covered);
completion writes ``hold_release`` + ``debit``; failure writes only the ``hold_release``. Entries are never
changed: ``Balance`` keeps ``ledger`` (posted entries) and ``held`` (open holds) so reads are one row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select

from blueprints.telecom.models import Balance, LedgerEntry
from blueprints.telecom.services.common import CursorPage, cursor_page, pesos, publish
from core.db import db, for_update
from core.errors import ApiError, not_found
from core.tenancy import find_for_org

ENTRY_TYPES = ("credit", "hold", "hold_release", "debit", "refund")


@dataclass(frozen=True)
class BalanceView:
    ledger_cents: int
    held_cents: int
    updated_at: object

    @property
    def available_cents(self) -> int:
        return self.ledger_cents - self.held_cents


def _locked(organization_id: uuid.UUID) -> Balance:
    """The organization's totals row, locked until the commit so concurrent holds take turns."""
    balance = db.session.scalar(for_update(select(Balance).where(Balance.organization_id == organization_id)))
    if balance is None:
        balance = Balance(organization_id=organization_id, ledger_cents=0, held_cents=0)
        db.session.add(balance)
        db.session.flush()
    return balance


def get_balance(organization_id: uuid.UUID) -> BalanceView:
    balance = db.session.scalar(select(Balance).where(Balance.organization_id == organization_id))
    if balance is None:
        return BalanceView(0, 0, None)
    return BalanceView(balance.ledger_cents, balance.held_cents, balance.updated_at)


def _entry(
    organization_id: uuid.UUID,
    kind: str,
    amount_cents: int,
    after_cents: int,
    description: str,
    source: tuple[str, str] | None,
) -> LedgerEntry:
    entry = LedgerEntry(
        organization_id=organization_id,
        type=kind,
        amount_cents=amount_cents,
        balance_after_cents=after_cents,
        description=description,
        source_object=source[0] if source else None,
        source_id=source[1] if source else None,
    )
    db.session.add(entry)
    return entry


def credit(organization_id: uuid.UUID, amount_cents: int, description: str) -> LedgerEntry:
    if amount_cents <= 0:
        raise ValueError("a credit must be positive")
    balance = _locked(organization_id)
    balance.ledger_cents += amount_cents
    entry = _entry(organization_id, "credit", amount_cents, balance.ledger_cents, description, None)
    db.session.flush()
    publish("balance.credited", organization_id, {"id": entry.id, "amount": pesos(amount_cents)})
    return entry


def hold(
    organization_id: uuid.UUID, amount_cents: int, description: str, source: tuple[str, str]
) -> LedgerEntry:
    """Reserve ``amount_cents`` for an order, or 402 ``balance_insufficient`` leaving nothing behind."""
    balance = _locked(organization_id)
    available = balance.ledger_cents - balance.held_cents
    if available < amount_cents:
        raise ApiError(
            402,
            f"The balance available ({pesos(available)} MXN) does not cover {pesos(amount_cents)} MXN",
            code="balance_insufficient",
        )
    balance.held_cents += amount_cents
    entry = _entry(
        organization_id, "hold", -amount_cents, balance.ledger_cents - balance.held_cents, description, source
    )
    db.session.flush()
    return entry


def settle(
    organization_id: uuid.UUID, amount_cents: int, description: str, source: tuple[str, str], *, charge: bool
) -> LedgerEntry | None:
    """Close an order's hold: release it, and post the debit when the order completed (``charge``)."""
    balance = _locked(organization_id)
    balance.held_cents -= amount_cents
    _entry(
        organization_id,
        "hold_release",
        amount_cents,
        balance.ledger_cents - balance.held_cents,
        description,
        source,
    )
    if not charge:
        db.session.flush()
        return None
    balance.ledger_cents -= amount_cents
    debit = _entry(organization_id, "debit", -amount_cents, balance.ledger_cents, description, source)
    db.session.flush()
    publish("balance.debited", organization_id, {"id": debit.id, "amount": pesos(-amount_cents)})
    return debit


def list_transactions(
    organization_id: uuid.UUID,
    *,
    kind: str | None = None,
    source_id: str | None = None,
    limit: int = 10,
    starting_after: str | None = None,
) -> CursorPage[LedgerEntry]:
    statement = select(LedgerEntry).where(LedgerEntry.organization_id == organization_id)
    if kind is not None:
        statement = statement.where(LedgerEntry.type == kind)
    if source_id is not None:
        statement = statement.where(LedgerEntry.source_id == source_id)
    return cursor_page(LedgerEntry, statement, organization_id, limit=limit, starting_after=starting_after)


def get_transaction(organization_id: uuid.UUID, transaction_id: str) -> LedgerEntry:
    entry = find_for_org(LedgerEntry, transaction_id, organization_id)
    if entry is None:
        raise not_found("Balance transaction")
    return entry
