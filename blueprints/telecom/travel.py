"""Travel eSIMs come from an eSIM aggregator (Airalo-style), not from the Mexican network: this is the
supplier behind an interface, and the simulator that plays it.

A real adapter implements :class:`TravelEsimSupplier`; :func:`supplier_for` answers the simulator in the
sandbox always, and at production until ``TELECOM_TRAVEL_SUPPLIER`` names an adapter (none exists yet).

The simulator keeps no state of its own: everything it reports derives from the :class:`EsimHandle` the
service gives it (when the eSIM was issued, its packages, the partner's ``metadata``) and the instant asked
about, so the same question always gets the same answer and tests move time simply by asking later.

Simulated life of an eSIM (documented in ``docs/telecom.md``):

- the profile is installed :data:`INSTALL_DELAY` after it was issued; an offer with the ``on_install``
  policy activates then, a ``first_usage`` one :data:`FIRST_USE_DELAY` later (the traveller lands);
- once active, data is consumed at a steady daily rate derived from the ICCID (300-700 MiB a day), paused
  while the eSIM is depleted and resumed by a top-up;
- validity runs from activation for the offer's ``validity_days``; a top-up extends the expiry to its own
  start (the later of its purchase and the activation) plus its validity.

Magic values, in the eSIM's ``metadata.simulate``: ``order_declined`` (the order is refused),
``topup_declined`` (every top-up is refused), ``never_installed`` (stays ``not_active``), ``light_usage``
(10 MiB a day: validity ends first), ``heavy_usage`` (2 GiB a day).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol

from flask import current_app

from blueprints.telecom.mexico import luhn_digit
from core.environments import SANDBOX, current_environment
from core.errors import ApiError

SIMULATOR_SMDP = "lpa.travel.sandbox.agentdesk.mx"
# 89 (telecom) + 44 (the aggregator's home network country code) + 990 (a test issuer): 19 digits with Luhn.
SIMULATOR_ISSUER = "8944990"
INSTALL_DELAY = timedelta(hours=1)
FIRST_USE_DELAY = timedelta(hours=2)
MIB = 1024 * 1024
DAILY_RATES = {"light_usage": 10 * MIB, "heavy_usage": 2048 * MIB}
_DAY_SECONDS = 86_400

STATUSES = ("not_active", "active", "depleted", "expired")


class SupplierDeclined(Exception):
    """The supplier refused an order or a top-up; the purchase fails with this code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Package:
    """What the eSIM was sold: its first offer, then each applied top-up."""

    offer_id: str
    data_bytes: int | None  # None: unlimited
    validity_days: int
    added_at: datetime


@dataclass(frozen=True)
class EsimHandle:
    """What the service tells the supplier about one eSIM. A real adapter needs only ``iccid``."""

    id: str
    iccid: str
    issued_at: datetime
    activation_policy: str
    packages: tuple[Package, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IssuedEsim:
    iccid: str
    smdp_address: str
    matching_id: str
    supplier_reference: str

    @property
    def activation_code(self) -> str:
        return f"LPA:1${self.smdp_address}${self.matching_id}"


@dataclass(frozen=True)
class EsimReport:
    """The supplier's view of an eSIM at ``as_of``; ``None`` data figures mean unlimited."""

    status: str
    data_total_bytes: int | None
    data_remaining_bytes: int | None
    activated_at: datetime | None
    expires_at: datetime | None
    as_of: datetime


@dataclass(frozen=True)
class DataUsageDay:
    day: date
    data_bytes: int


class TravelEsimSupplier(Protocol):
    """What a travel eSIM supplier adapter implements. Raise :class:`SupplierDeclined` to refuse."""

    name: str

    def order_esim(self, reference: str, offer_id: str, metadata: dict[str, Any]) -> IssuedEsim: ...

    def status(self, esim: EsimHandle, as_of: datetime) -> EsimReport: ...

    def top_up(self, esim: EsimHandle, offer_id: str) -> None: ...

    def usage(self, esim: EsimHandle, days: list[date], as_of: datetime) -> list[DataUsageDay]: ...


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")


def _seconds(span: timedelta) -> int:
    return max(0, span // timedelta(seconds=1))


class Simulator:
    """The aggregator as the sandbox sees it (and production until an adapter is configured)."""

    name = "simulator"

    @staticmethod
    def _magic(metadata: dict[str, Any]) -> str | None:
        value = (metadata or {}).get("simulate")
        return value if isinstance(value, str) else None

    def order_esim(self, reference: str, offer_id: str, metadata: dict[str, Any]) -> IssuedEsim:
        if self._magic(metadata) == "order_declined":
            raise SupplierDeclined(
                "supplier_declined", "The eSIM supplier declined the order (order_declined)"
            )
        serial = f"{_digest('travel-iccid', reference) % 10**11:011d}"
        body = SIMULATOR_ISSUER + serial
        iccid = body + luhn_digit(body)
        matching = f"{_digest('travel-match', iccid):016X}"
        return IssuedEsim(
            iccid=iccid,
            smdp_address=SIMULATOR_SMDP,
            matching_id=f"{matching[:5]}-{matching[5:10]}-{matching[10:16]}",
            supplier_reference=f"SIM-{_digest('order', reference) % 10**10:010d}",
        )

    def top_up(self, esim: EsimHandle, offer_id: str) -> None:
        if self._magic(esim.metadata) == "topup_declined":
            raise SupplierDeclined(
                "supplier_declined", "The eSIM supplier declined the top-up (topup_declined)"
            )

    def activation_time(self, esim: EsimHandle) -> datetime | None:
        if self._magic(esim.metadata) == "never_installed":
            return None
        installed = esim.issued_at + INSTALL_DELAY
        return installed if esim.activation_policy == "on_install" else installed + FIRST_USE_DELAY

    def daily_rate(self, esim: EsimHandle) -> int:
        magic = self._magic(esim.metadata)
        if magic in DAILY_RATES:
            return DAILY_RATES[magic]
        return (300 + _digest("rate", esim.iccid) % 401) * MIB

    @staticmethod
    def _expiry(esim: EsimHandle, activated: datetime) -> datetime:
        first, *topups = esim.packages
        expires = activated + timedelta(days=first.validity_days)
        for package in sorted(topups, key=lambda p: p.added_at):
            start = max(package.added_at, activated)
            if start < expires:  # a top-up bought after the expiry does not revive the eSIM
                expires = max(expires, start + timedelta(days=package.validity_days))
        return expires

    def _consumption(
        self, esim: EsimHandle, activated: datetime, until: datetime
    ) -> Iterator[tuple[datetime, datetime, int]]:
        """The intervals in which data was being used, from activation to ``until``, each with the bytes
        left at its start: use stops when the packages so far are spent and resumes at the next top-up."""
        rate = self.daily_rate(esim)
        first, *topups = esim.packages
        total = (first.data_bytes or 0) + sum(p.data_bytes or 0 for p in topups if p.added_at <= activated)
        later = sorted((p for p in topups if p.added_at > activated), key=lambda p: p.added_at)
        used, moment = 0, activated
        for boundary, extra in [*((p.added_at, p.data_bytes or 0) for p in later), (None, 0)]:
            stop = until if boundary is None else min(boundary, until)
            if stop > moment and used < total:
                left = -(-(total - used) * _DAY_SECONDS // rate)  # seconds until spent, rounded up
                end = min(stop, moment + timedelta(seconds=left))
                yield moment, end, total - used
                used = min(total, used + rate * _seconds(end - moment) // _DAY_SECONDS)
            if boundary is None or boundary >= until:
                return
            moment, total = max(moment, boundary), total + extra

    def _used(self, esim: EsimHandle, activated: datetime, until: datetime) -> int:
        """Bytes used from activation to ``until`` (which callers keep at or before the expiry)."""
        if until <= activated:
            return 0
        rate = self.daily_rate(esim)
        if esim.packages[0].data_bytes is None:
            return rate * _seconds(until - activated) // _DAY_SECONDS
        return sum(
            min(left, rate * _seconds(end - start) // _DAY_SECONDS)
            for start, end, left in self._consumption(esim, activated, until)
        )

    @staticmethod
    def _as_bought(esim: EsimHandle, as_of: datetime) -> EsimHandle:
        """The eSIM with only the packages bought by ``as_of`` (a later top-up is not yet known)."""
        return replace(esim, packages=tuple(p for p in esim.packages if p.added_at <= as_of))

    def status(self, esim: EsimHandle, as_of: datetime) -> EsimReport:
        esim = self._as_bought(esim, as_of)
        unlimited = esim.packages[0].data_bytes is None
        total = None if unlimited else sum(p.data_bytes or 0 for p in esim.packages)
        activated = self.activation_time(esim)
        if activated is None or as_of < activated:
            return EsimReport("not_active", total, total, None, None, as_of)
        expires = self._expiry(esim, activated)
        expired = as_of >= expires
        if total is None:
            return EsimReport("expired" if expired else "active", None, None, activated, expires, as_of)
        remaining = max(0, total - self._used(esim, activated, min(as_of, expires)))
        status = "expired" if expired else "depleted" if remaining == 0 else "active"
        return EsimReport(status, total, remaining, activated, expires, as_of)

    def usage(self, esim: EsimHandle, days: list[date], as_of: datetime) -> list[DataUsageDay]:
        """Bytes used on each UTC day, up to ``as_of``: the differences of the running total at the days'
        edges, so the days add up exactly to what :meth:`status` counts as used."""
        esim = self._as_bought(esim, as_of)
        activated = self.activation_time(esim)
        if activated is None or as_of <= activated:
            return [DataUsageDay(day, 0) for day in days]
        until = min(as_of, self._expiry(esim, activated))

        def used_at(moment: datetime) -> int:
            return self._used(esim, activated, min(max(moment, activated), until))

        records = []
        for day in days:
            day_from = datetime.combine(day, time.min, tzinfo=UTC)
            records.append(DataUsageDay(day, used_at(day_from + timedelta(days=1)) - used_at(day_from)))
        return records


_SIMULATOR = Simulator()


def supplier_for(environment: str | None = None) -> TravelEsimSupplier:
    environment = environment or current_environment()
    configured = current_app.config.get("TELECOM_TRAVEL_SUPPLIER")
    if environment == SANDBOX or not configured or configured == "simulator":
        return _SIMULATOR
    # No real adapter exists yet: refusing is safer than selling an eSIM nobody will issue.
    raise ApiError(424, f"Travel eSIM supplier {configured!r} is not available", code="supplier_unavailable")
