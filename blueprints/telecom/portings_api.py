"""``/v1/partner/portings``: number portability (port-in) requests. Parse, call ``services.portings``,
serialise with ``schemas_portings``. The line that receives the number is ordered with
``POST /subscriptions {"porting": "prt_…"}`` (api.py)."""

from __future__ import annotations

from blueprints.telecom.api import Answer, Json, _blueprint, _org
from blueprints.telecom.schemas_portings import (
    PortingCreate,
    PortingList,
    PortingListQuery,
    PortingOut,
    PortingPath,
    PortingUpdate,
)
from blueprints.telecom.services import portings
from core import auth
from core.idempotency import idempotent

portings_api = _blueprint(
    "portings",
    "Telecom: portings",
    "Number portability into a new line (Mexico: NIP from 051, port within 24 h on business days)",
)
BLUEPRINTS = (portings_api,)


def _require_a_line_product() -> None:
    # A ported number goes to a SIM or eSIM line: an organization that sells neither cannot port in.
    if not (auth.organization_has_product("SIM") or auth.organization_has_product("ESIM")):
        auth.require_product("SIM")


@portings_api.post("/portings", responses={201: PortingOut})
@idempotent
def create_porting(body: PortingCreate) -> Answer:
    """Start a port-in of a Mexican number for a user whose KYC is verified: the holder's 4-digit NIP
    (texted by 051, valid 5 days from `nip_issued_at`, write-only) and their data. The porting is `pending`
    until its line is ordered with `POST /subscriptions {"porting": id}`, which sends it to the ABD."""
    _require_a_line_product()
    request = portings.NewPorting(
        user_id=body.user,
        phone_number=body.phone_number,
        nip=body.nip,
        nip_issued_at=body.nip_issued_at,
        holder=portings.Holder(**body.holder.model_dump()),
        metadata=body.metadata,
    )
    return PortingOut.dump(portings.create_porting(_org(), request)), 201


@portings_api.get("/portings", responses={200: PortingList})
def list_portings(query: PortingListQuery) -> Json:
    """Portings, newest first (`limit`, `starting_after`); filters `status`, `user`, `phone_number`."""
    page = portings.list_portings(
        _org(),
        status=query.status,
        user_id=query.user,
        phone_number=query.phone_number,
        limit=query.limit,
        starting_after=query.starting_after,
    )
    return PortingList(
        data=[PortingOut.model_validate(p) for p in page.items], has_more=page.has_more
    ).model_dump(mode="json")


@portings_api.get("/portings/<porting_id>", responses={200: PortingOut})
def get_porting(path: PortingPath) -> Json:
    return PortingOut.dump(portings.get_porting(_org(), path.porting_id))


@portings_api.patch("/portings/<porting_id>", responses={200: PortingOut})
def update_porting(path: PortingPath, body: PortingUpdate) -> Json:
    """A new NIP (`nip` with `nip_issued_at`) or corrected `holder` data while `pending` or `declined`; a
    declined porting goes back to `pending` and is requested again when its line exists."""
    changes = body.sent_fields()
    if body.holder is not None:
        changes["holder"] = portings.Holder(**body.holder.model_dump())
    return PortingOut.dump(portings.update_porting(_org(), path.porting_id, changes))


@portings_api.post("/portings/<porting_id>/cancel", responses={200: PortingOut})
@idempotent
def cancel_porting(path: PortingPath) -> Json:
    """Cancel a `pending`, `requested` or `declined` porting; its waiting line ends and the hold on the
    balance is released."""
    return PortingOut.dump(portings.cancel_porting(_org(), path.porting_id))
