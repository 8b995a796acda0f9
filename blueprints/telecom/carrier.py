"""The carrier behind an interface, and the simulator that plays the network.

A real carrier adapter implements :class:`Carrier`; :func:`carrier_for` answers the simulator in the
sandbox always, and at production until ``TELECOM_CARRIER`` names an adapter. The simulator is
deterministic: numbers, ICCIDs and usage derive from the subscription's id, and its declines are driven by
the magic values documented in ``docs/telecom.md``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from flask import current_app

from blueprints.telecom.mexico import luhn_digit
from blueprints.telecom.models import Plan, Subscription, TopupOffer
from blueprints.telecom.models_portings import Porting
from core.environments import SANDBOX, current_environment
from core.errors import ApiError

SIMULATOR_SMDP = "smdp.sandbox.agentdesk.mx"
ISSUER = "8952990"  # 89 (telecom) + 52 (Mexico) + our issuer id; ICCIDs are 19 digits with the Luhn digit


class CarrierDeclined(Exception):
    """The carrier refused the action; the order fails with this code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Activation:
    phone_number: str
    iccid: str


@dataclass(frozen=True)
class EsimProfile:
    smdp_address: str
    matching_id: str

    @property
    def activation_code(self) -> str:
        return f"LPA:1${self.smdp_address}${self.matching_id}"


@dataclass(frozen=True)
class UsageDay:
    day: date
    data_bytes: int
    voice_seconds: int
    sms_messages: int


@dataclass(frozen=True)
class IdentityResult:
    verified: bool
    source: str
    error_code: str | None = None
    error_reason: str | None = None


@dataclass(frozen=True)
class PortRequest:
    """The ABD accepted a port request: who gives the number up, and when the port window runs."""

    donor_provider: str
    scheduled_for: datetime


class Carrier(Protocol):
    """What a carrier adapter implements. Methods raise :class:`CarrierDeclined` to fail an order."""

    name: str

    def reserve_sim(self, subscription: Subscription) -> tuple[str, EsimProfile | None]: ...

    def activate_line(self, subscription: Subscription) -> Activation: ...

    def suspend_line(self, subscription: Subscription) -> None: ...

    def resume_line(self, subscription: Subscription) -> None: ...

    def cancel_line(self, subscription: Subscription) -> None: ...

    def change_plan(self, subscription: Subscription, plan: Plan) -> None: ...

    def change_sim(self, subscription: Subscription, sim_type: str) -> tuple[str, EsimProfile | None]: ...

    def apply_topup(self, subscription: Subscription, topup: TopupOffer) -> None: ...

    def usage(self, subscription: Subscription, days: list[date]) -> list[UsageDay]: ...

    def verify_identity(
        self, kind: str, identifier: str, full_name: str, document_number: str
    ) -> IdentityResult: ...

    # Number portability (port-in): the request goes to the ABD, the outcome arrives at the port window.
    def submit_port(self, porting: Porting, requested_at: datetime) -> PortRequest: ...

    def port_outcome(self, porting: Porting) -> None:
        """Return when the number is ours; raise :class:`CarrierDeclined` with a decline code otherwise."""
        ...


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")


def iccid_for(seed: str) -> str:
    serial = f"{_digest('iccid', seed) % 10**11:011d}"
    body = ISSUER + serial
    return body + luhn_digit(body)


class Simulator:
    """The network as the sandbox sees it (and production until a carrier adapter is configured)."""

    name = "simulator"

    def _declines(self, subscription: Subscription, magic: str) -> None:
        if (subscription.extra or {}).get("simulate") == magic:
            raise CarrierDeclined("carrier_declined", f"The carrier declined the request ({magic})")

    def reserve_sim(self, subscription: Subscription) -> tuple[str, EsimProfile | None]:
        iccid = iccid_for(subscription.id)
        return iccid, self._profile(iccid) if subscription.type == "ESIM" else None

    def _profile(self, iccid: str) -> EsimProfile:
        matching = f"{_digest('match', iccid):016X}"
        return EsimProfile(SIMULATOR_SMDP, f"{matching[:4]}-{matching[4:9]}-{matching[9:16]}")

    def activate_line(self, subscription: Subscription) -> Activation:
        self._declines(subscription, "activation_fails")
        local_length = 10 - len(subscription.area_code)
        local = f"{_digest('number', subscription.id) % 10**local_length:0{local_length}d}"
        # a local number never starts with 0 in the national plan
        local = ("1" + local[1:]) if local.startswith("0") else local
        return Activation(
            f"+52{subscription.area_code}{local}", subscription.iccid or iccid_for(subscription.id)
        )

    def suspend_line(self, subscription: Subscription) -> None:
        self._declines(subscription, "actions_fail")

    def resume_line(self, subscription: Subscription) -> None:
        self._declines(subscription, "actions_fail")

    def cancel_line(self, subscription: Subscription) -> None:
        self._declines(subscription, "actions_fail")

    def change_plan(self, subscription: Subscription, plan: Plan) -> None:
        self._declines(subscription, "actions_fail")

    def change_sim(self, subscription: Subscription, sim_type: str) -> tuple[str, EsimProfile | None]:
        self._declines(subscription, "actions_fail")
        iccid = iccid_for(f"{subscription.id}:{subscription.iccid}")
        return iccid, self._profile(iccid) if sim_type == "ESIM" else None

    def apply_topup(self, subscription: Subscription, topup: TopupOffer) -> None:
        self._declines(subscription, "actions_fail")

    def usage(self, subscription: Subscription, days: list[date]) -> list[UsageDay]:
        records = []
        for day in days:
            seed = _digest("usage", subscription.id, day.isoformat())
            records.append(
                UsageDay(
                    day,
                    data_bytes=(seed % 300) * 1024 * 1024,
                    voice_seconds=(seed >> 12) % 1800,
                    sms_messages=(seed >> 24) % 20,
                )
            )
        return records

    def verify_identity(
        self, kind: str, identifier: str, full_name: str, document_number: str
    ) -> IdentityResult:
        source = "RENAPO" if kind == "curp" else "SAT"
        if document_number.endswith("0000"):
            return IdentityResult(
                False, source, "document_unverified_other", "The document could not be verified"
            )
        if document_number.endswith("1111"):
            return IdentityResult(
                False,
                source,
                "id_number_mismatch",
                f"The {kind.upper()} does not match the document's holder",
            )
        return IdentityResult(True, source)

    # Number portability ---------------------------------------------------------------------------------

    def submit_port(self, porting: Porting, requested_at: datetime) -> PortRequest:
        donor = PORT_DONORS[_digest("donor", porting.phone_number) % len(PORT_DONORS)]
        return PortRequest(donor, next_port_window(requested_at))

    def port_outcome(self, porting: Porting) -> None:
        if porting.nip in PORT_MAGIC_NIPS:
            raise CarrierDeclined(*PORT_MAGIC_NIPS[porting.nip])
        ending = porting.phone_number[-4:]
        if ending in PORT_MAGIC_ENDINGS:
            raise CarrierDeclined(*PORT_MAGIC_ENDINGS[ending])
        if "mismatch" in porting.holder_full_name.lower():
            raise CarrierDeclined(
                "holder_data_mismatch", "The holder's data does not match the donor carrier's records"
            )


# The port window: the ABD executes requested ports at 10:00 Mexico City time on business days, so a port
# completes within 24 h of a weekday request (the IFT rule) and a weekend request on Monday. Public holidays
# are not modelled.
PORT_WINDOW_ZONE = ZoneInfo("America/Mexico_City")
PORT_WINDOW_TIME = time(10, 0)
PORT_DONORS = ("Telcel", "AT&T México", "Movistar", "Bait", "Virgin Mobile")
PORT_MAGIC_NIPS = {
    "0000": ("nip_invalid", "The NIP does not match the one the ABD issued for this number"),
    "1111": (
        "nip_expired",
        "The NIP is no longer valid (5 calendar days); the holder must request a new one",
    ),
}
PORT_MAGIC_ENDINGS = {
    "0001": ("porting_in_progress", "Another portability request for this number is in progress"),
    "0002": ("recently_ported", "The number was ported in the last 30 days"),
    "0003": ("number_not_active", "The number is not active at the donor carrier"),
}


def next_port_window(after: datetime) -> datetime:
    """The first 10:00 America/Mexico_City on a Monday-Friday strictly after ``after`` (UTC-aware)."""
    local = after.astimezone(PORT_WINDOW_ZONE)
    day = local.date()
    while True:
        candidate = datetime.combine(day, PORT_WINDOW_TIME, tzinfo=PORT_WINDOW_ZONE)
        if candidate > local and candidate.weekday() < 5:
            return candidate.astimezone(UTC)
        day += timedelta(days=1)


_SIMULATOR = Simulator()


def carrier_for(environment: str | None = None) -> Carrier:
    environment = environment or current_environment()
    configured = current_app.config.get("TELECOM_CARRIER")
    if environment == SANDBOX or not configured or configured == "simulator":
        return _SIMULATOR
    # No real adapter exists yet: refusing is safer than pretending a line was provisioned.
    raise ApiError(424, f"Carrier adapter {configured!r} is not available", code="carrier_unavailable")
