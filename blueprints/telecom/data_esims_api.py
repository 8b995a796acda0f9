"""Travel eSIM routes under ``/v1/partner/data_esims``: parse, call ``services.data_esims``, serialise.

Selling needs the ``TRAVEL_ESIM`` product: a purchase or a top-up of an organization without it is 403
``product_not_enabled`` before its body is read. Reading stays open, so eSIMs sold before the product was
turned off can still be followed.
"""

from __future__ import annotations

from typing import Any

from flask import Response, request

from blueprints.telecom.api import _blueprint, _org
from blueprints.telecom.schemas_data_esims import (
    DataEsimCreate,
    DataEsimList,
    DataEsimListQuery,
    DataEsimOut,
    DataEsimPath,
    DataEsimTopupCreate,
    DataEsimTopupList,
    DataEsimTopupOut,
    DataEsimUsageOut,
)
from blueprints.telecom.services import data_esims
from blueprints.telecom.services.data_esims import DataEsimView
from core import auth
from core.idempotency import idempotent

Json = dict[str, Any]
Answer = tuple[Json, int]

data_esims_api = _blueprint(
    "data_esims", "Telecom: travel eSIMs", "Travel data eSIMs bought from the eSIM offers, their top-ups"
)
BLUEPRINTS = (data_esims_api,)

_SELLING = {"telecom_data_esims.create_data_esim", "telecom_data_esims.create_topup"}
_QR_DOC = {
    "description": "PNG image of the QR code of `activation_code`, for the phone's camera",
    "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
}


@data_esims_api.before_request
def _gate_travel_esim() -> None:
    """The product decides before the body does (runs after ``auth.protect``)."""
    if request.method == "POST" and request.endpoint in _SELLING:
        auth.require_product("TRAVEL_ESIM")


@data_esims_api.post("/data_esims", responses={202: DataEsimOut})
@idempotent
def create_data_esim(body: DataEsimCreate) -> Answer:
    """Buy a travel eSIM of an eSIM offer, optionally for a user. The offer's price is held (402
    `balance_insufficient`); the eSIM is `provisioning` until the supplier issues it (then `not_active`,
    with its ICCID and activation code, and the price is debited) or declines it (`failed`, hold released).

    Send `Idempotency-Key` to make a retry safe: the same key and body replay the first answer and never
    charge twice."""
    new = data_esims.NewDataEsim(offer_id=body.offer, user_id=body.user, metadata=body.metadata)
    esim = data_esims.purchase(_org(), new)
    return DataEsimOut.dump(DataEsimView(esim, esim.reported_at)), 202


@data_esims_api.get("/data_esims", responses={200: DataEsimList})
def list_data_esims(query: DataEsimListQuery) -> Json:
    """Travel eSIMs, newest first, as last reported (`as_of` on each); filters `status`, `user`."""
    page = data_esims.list_data_esims(
        _org(),
        status=query.status,
        user_id=query.user,
        limit=query.limit,
        starting_after=query.starting_after,
    )
    return DataEsimList(
        data=[DataEsimOut.model_validate(v) for v in page.items], has_more=page.has_more
    ).model_dump(mode="json")


@data_esims_api.get("/data_esims/<data_esim_id>", responses={200: DataEsimOut})
def get_data_esim(path: DataEsimPath) -> Json:
    """The eSIM with its status and data remaining refreshed from the supplier (`as_of`)."""
    return DataEsimOut.dump(data_esims.get_data_esim(_org(), path.data_esim_id))


@data_esims_api.get("/data_esims/<data_esim_id>/qr.png", responses={200: _QR_DOC})
def get_qr(path: DataEsimPath) -> Response:
    """The activation code as a QR code (409 `activation_code_unavailable` until the eSIM is issued)."""
    esim, png = data_esims.qr_png(_org(), path.data_esim_id)
    return Response(
        png,
        mimetype="image/png",
        # the code installs the eSIM on any phone: it is a credential, never kept by a cache
        headers={"Cache-Control": "no-store", "Content-Disposition": f'inline; filename="{esim.id}.png"'},
    )


@data_esims_api.get("/data_esims/<data_esim_id>/usage", responses={200: DataEsimUsageOut})
def get_usage(path: DataEsimPath) -> Json:
    """Data used per UTC day since the activation, as the supplier reports it now."""
    return DataEsimUsageOut.dump(data_esims.usage(_org(), path.data_esim_id))


@data_esims_api.post("/data_esims/<data_esim_id>/topups", responses={202: DataEsimTopupOut})
@idempotent
def create_topup(path: DataEsimPath, body: DataEsimTopupCreate) -> Answer:
    """Add a package to a `not_active`, `active` or `depleted` eSIM (409 `invalid_state_transition` once
    it expired): an available offer covering the eSIM's countries (409 `topup_not_available`). Its price is
    held, then debited when the supplier applies it; a depleted eSIM is active again."""
    _esim, topup = data_esims.add_topup(_org(), path.data_esim_id, body.offer)
    return DataEsimTopupOut.dump(topup), 202


@data_esims_api.get("/data_esims/<data_esim_id>/topups", responses={200: DataEsimTopupList})
def list_topups(path: DataEsimPath) -> Json:
    """The eSIM's top-ups, newest first."""
    rows = data_esims.list_topups(_org(), path.data_esim_id)
    return DataEsimTopupList(data=[DataEsimTopupOut.model_validate(t) for t in rows]).model_dump(mode="json")
