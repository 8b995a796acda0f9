"""Telecom partner routes under ``/v1/partner``: parse, call a service, serialise with the schema models.

Authentication is ``X-API-Key`` only (``sk_live_`` at production, ``sk_test_`` under ``/sandbox``). There is
deliberately no ``/v1/partner/orders`` route: orders are published only under their subscription, so that
path answers 404 route-not-found while its siblings answer 401 without a key (the spec's rule).
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import request
from flask_openapi3 import Tag

from blueprints.telecom.schemas import (
    AddressCreate,
    AddressPath,
    AddressUpdate,
    AreaCodeList,
    AreaCodeOut,
    AreaCodeQuery,
    BalanceOut,
    EsimOfferList,
    EsimOfferOut,
    KycCreate,
    KycList,
    KycOut,
    KycPath,
    OfferListQuery,
    OrderList,
    OrderOut,
    PlanChangeBody,
    PlanList,
    PlanListQuery,
    PlanOut,
    PlanPath,
    SimChangeBody,
    SubscriptionAccepted,
    SubscriptionCreate,
    SubscriptionList,
    SubscriptionListQuery,
    SubscriptionOut,
    SubscriptionPath,
    TelDeleted,
    TopupBody,
    TopupList,
    TopupListQuery,
    TopupOut,
    TransactionList,
    TransactionListQuery,
    TransactionOut,
    TransactionPath,
    UsageOut,
    UserAddressList,
    UserAddressOut,
    UserCreate,
    UserList,
    UserListQuery,
    UserOut,
    UserPath,
    UserUpdate,
)
from blueprints.telecom.services import catalogue, kyc, ledger, subscriptions, users
from core import auth
from core.idempotency import idempotent
from core.openapi import API_KEY_ONLY, AreaAPI, TelecomError, error_responses

PREFIX = "/v1/partner"
Json = dict[str, Any]
Answer = tuple[Json, int]


def _blueprint(name: str, tag: str, description: str) -> AreaAPI:
    blueprint = AreaAPI(
        f"telecom_{name}",
        __name__,
        url_prefix=PREFIX,
        abp_tags=[Tag(name=tag, description=description)],
        abp_security=API_KEY_ONLY,
        abp_responses={**error_responses(TelecomError), "402": TelecomError, "409": TelecomError},
    )
    auth.protect(blueprint)
    return blueprint


users_api = _blueprint("users", "Telecom: users and KYC", "Users, their addresses and identity verifications")
catalogue_api = _blueprint(
    "catalogue", "Telecom: catalogues", "Plans, top-ups, travel eSIM offers, area codes"
)
balance_api = _blueprint("balance", "Telecom: balance", "Prepaid balance and its ledger")
subscriptions_api = _blueprint("subscriptions", "Telecom: subscriptions", "Mobile lines and their actions")
BLUEPRINTS = (users_api, catalogue_api, balance_api, subscriptions_api)


def _org() -> uuid.UUID:
    return auth.current_organization_id()


@subscriptions_api.before_request
def _gate_line_type() -> None:
    """The product decides before the body does: ``{"type": "ESIM"}`` alone is 403 for an organization
    without eSIM, and a 400 naming the missing fields for one with it (runs after ``auth.protect``)."""
    if request.endpoint != "telecom_subscriptions.create_subscription" or request.method != "POST":
        return
    body = request.get_json(silent=True)
    line_type = body.get("type") if isinstance(body, dict) else None
    if line_type in ("SIM", "ESIM"):
        auth.require_product(line_type)


# Users -------------------------------------------------------------------------------------------------


@users_api.post("/users", responses={201: UserOut})
def create_user(body: UserCreate) -> Answer:
    """Create a user (the partner's customer). The email is unique in the organization (409)."""
    fields = users.UserFields(**body.model_dump())
    return UserOut.dump(users.create_user(_org(), fields)), 201


@users_api.get("/users", responses={200: UserList})
def list_users(query: UserListQuery) -> Json:
    """Users, newest first (`limit`, `starting_after`); filters `status`, `email`."""
    page = users.list_users(
        _org(), status=query.status, email=query.email, limit=query.limit, starting_after=query.starting_after
    )
    return UserList(data=[UserOut.model_validate(u) for u in page.items], has_more=page.has_more).model_dump(
        mode="json"
    )


@users_api.get("/users/<user_id>", responses={200: UserOut})
def get_user(path: UserPath) -> Json:
    return UserOut.dump(users.get_user(_org(), path.user_id))


@users_api.patch("/users/<user_id>", responses={200: UserOut})
def update_user(path: UserPath, body: UserUpdate) -> Json:
    """Change the sent fields; `status` moves between `active` and `blocked`."""
    return UserOut.dump(users.update_user(_org(), path.user_id, body.sent_fields()))


@users_api.delete("/users/<user_id>", responses={200: UserOut})
def delete_user(path: UserPath) -> Json:
    """Mark the user `deleted` (409 while one of their lines is not ended)."""
    return UserOut.dump(users.delete_user(_org(), path.user_id))


@users_api.post("/users/<user_id>/addresses", responses={201: UserAddressOut})
def create_address(path: UserPath, body: AddressCreate) -> Answer:
    """A Mexican address: 5-digit postal code, one of the 32 states (code or name), country MX."""
    address = users.create_address(_org(), path.user_id, users.AddressFields(**body.model_dump()))
    return UserAddressOut.dump(address), 201


@users_api.get("/users/<user_id>/addresses", responses={200: UserAddressList})
def list_addresses(path: UserPath) -> Json:
    rows = users.list_addresses(_org(), path.user_id)
    return UserAddressList(data=[UserAddressOut.model_validate(a) for a in rows]).model_dump(mode="json")


@users_api.get("/users/<user_id>/addresses/<address_id>", responses={200: UserAddressOut})
def get_address(path: AddressPath) -> Json:
    return UserAddressOut.dump(users.get_address(_org(), path.user_id, path.address_id))


@users_api.patch("/users/<user_id>/addresses/<address_id>", responses={200: UserAddressOut})
def update_address(path: AddressPath, body: AddressUpdate) -> Json:
    return UserAddressOut.dump(
        users.update_address(_org(), path.user_id, path.address_id, body.sent_fields())
    )


@users_api.delete("/users/<user_id>/addresses/<address_id>", responses={200: TelDeleted})
def delete_address(path: AddressPath) -> Json:
    deleted = users.delete_address(_org(), path.user_id, path.address_id)
    return TelDeleted(id=deleted, object="address").model_dump(mode="json")


@users_api.post("/users/<user_id>/kyc_verifications", responses={202: KycOut})
def create_kyc(path: UserPath, body: KycCreate) -> Answer:
    """Verify the user's identity for line registration: CURP (person) or RFC (company) with its check
    digit, and the ID document presented. Answers `processing`; the result arrives asynchronously."""
    request_ = kyc.KycRequest(
        full_name=body.full_name,
        curp=body.curp,
        rfc=body.rfc,
        document_type=body.document.type,
        document_number=body.document.number,
    )
    return KycOut.dump(kyc.start_verification(_org(), path.user_id, request_)), 202


@users_api.get("/users/<user_id>/kyc_verifications", responses={200: KycList})
def list_kyc(path: UserPath) -> Json:
    rows = kyc.list_verifications(_org(), path.user_id)
    return KycList(data=[KycOut.model_validate(v) for v in rows]).model_dump(mode="json")


@users_api.get("/users/<user_id>/kyc_verifications/<kyc_id>", responses={200: KycOut})
def get_kyc(path: KycPath) -> Json:
    return KycOut.dump(kyc.get_verification(_org(), path.user_id, path.kyc_id))


@users_api.post("/users/<user_id>/kyc_verifications/<kyc_id>/cancel", responses={200: KycOut})
def cancel_kyc(path: KycPath) -> Json:
    return KycOut.dump(kyc.cancel_verification(_org(), path.user_id, path.kyc_id))


# Catalogues --------------------------------------------------------------------------------------------


@catalogue_api.get("/plans", responses={200: PlanList})
def list_plans(query: PlanListQuery) -> Json:
    """Mobile plans: allowances in bytes, seconds and messages (`null` = unlimited), price in MXN."""
    rows = catalogue.list_plans(query.status)
    return PlanList(data=[PlanOut.model_validate(p) for p in rows]).model_dump(mode="json")


@catalogue_api.get("/plans/<plan_id>", responses={200: PlanOut})
def get_plan(path: PlanPath) -> Json:
    return PlanOut.dump(catalogue.get_plan(path.plan_id))


@catalogue_api.get("/topups", responses={200: TopupList})
def list_topups(query: TopupListQuery) -> Json:
    """Top-ups on sale; `plan` keeps those a line on that plan may buy."""
    rows = catalogue.list_topups(query.plan)
    return TopupList(data=[TopupOut.model_validate(t) for t in rows]).model_dump(mode="json")


@catalogue_api.get("/esim-offers", responses={200: EsimOfferList})
def list_esim_offers(query: OfferListQuery) -> Json:
    """Travel eSIM offers; an empty list (not an error) when TRAVEL_ESIM is not enabled."""
    rows = catalogue.list_esim_offers(query.country) if auth.organization_has_product("TRAVEL_ESIM") else []
    return EsimOfferList(data=[EsimOfferOut.model_validate(o) for o in rows]).model_dump(mode="json")


@catalogue_api.get("/area_codes", responses={200: AreaCodeList})
def list_area_codes(query: AreaCodeQuery) -> Json:
    """Mexican area codes (claves LADA) with their states and cities, from libphonenumber's data."""
    rows = catalogue.list_area_codes(query.state, query.code)
    return AreaCodeList(data=[AreaCodeOut.model_validate(a) for a in rows]).model_dump(mode="json")


# Balance -----------------------------------------------------------------------------------------------


@balance_api.get("/balance", responses={200: BalanceOut})
def get_balance() -> Json:
    """The prepaid balance in MXN: `ledger` (posted), `held` (open orders), `available`."""
    return BalanceOut.dump(ledger.get_balance(_org()))


@balance_api.get("/balance/transactions", responses={200: TransactionList})
def list_transactions(query: TransactionListQuery) -> Json:
    page = ledger.list_transactions(
        _org(),
        kind=query.type,
        source_id=query.source_id,
        limit=query.limit,
        starting_after=query.starting_after,
    )
    return TransactionList(
        data=[TransactionOut.model_validate(t) for t in page.items], has_more=page.has_more
    ).model_dump(mode="json")


@balance_api.get("/balance/transactions/<transaction_id>", responses={200: TransactionOut})
def get_transaction(path: TransactionPath) -> Json:
    return TransactionOut.dump(ledger.get_transaction(_org(), path.transaction_id))


# Subscriptions -----------------------------------------------------------------------------------------


@subscriptions_api.post("/subscriptions", responses={202: SubscriptionAccepted})
@idempotent
def create_subscription(body: SubscriptionCreate) -> Answer:
    """Order a line (`type` SIM or ESIM; 403 when that product is not enabled, before the rest of the body
    is checked) for a user whose KYC is verified, on a plan, with a new number in `area_code` or the number
    a pending `porting` (`prt_…`) brings in. The plan's price is held (402 `balance_insufficient`); the line
    is `pending` until the carrier activates it (for a porting: when the port completes).

    Send `Idempotency-Key: <unique string>` to make a retry safe: the same key and body replay the first
    answer (`Idempotent-Replayed: true`) and never charge twice; the same key with another body is 409.
    """
    line = subscriptions.NewLine(
        type=body.type,
        user_id=body.user,
        plan_id=body.plan,
        area_code=body.area_code,
        porting_id=body.porting,
        metadata=body.metadata,
    )
    subscription, order = subscriptions.create_subscription(_org(), line)
    return SubscriptionAccepted.of(subscription, order), 202


@subscriptions_api.get("/subscriptions", responses={200: SubscriptionList})
def list_subscriptions(query: SubscriptionListQuery) -> Json:
    page = subscriptions.list_subscriptions(
        _org(),
        status=query.status,
        user_id=query.user,
        limit=query.limit,
        starting_after=query.starting_after,
    )
    return SubscriptionList(
        data=[SubscriptionOut.model_validate(s) for s in page.items], has_more=page.has_more
    ).model_dump(mode="json")


@subscriptions_api.get("/subscriptions/<subscription_id>", responses={200: SubscriptionOut})
def get_subscription(path: SubscriptionPath) -> Json:
    return SubscriptionOut.dump(subscriptions.get_subscription(_org(), path.subscription_id))


@subscriptions_api.post("/subscriptions/<subscription_id>/suspend", responses={202: SubscriptionAccepted})
@idempotent
def suspend(path: SubscriptionPath) -> Answer:
    """Suspend an active line: 202 `suspending`, then `suspended` (409 from any other state)."""
    return SubscriptionAccepted.of(
        *subscriptions.request_action(_org(), path.subscription_id, "suspend")
    ), 202


@subscriptions_api.post("/subscriptions/<subscription_id>/resume", responses={202: SubscriptionAccepted})
@idempotent
def resume(path: SubscriptionPath) -> Answer:
    """Resume a suspended line: 202 `resuming`, then `active` (409 from any other state)."""
    return SubscriptionAccepted.of(*subscriptions.request_action(_org(), path.subscription_id, "resume")), 202


@subscriptions_api.post("/subscriptions/<subscription_id>/cancel", responses={202: SubscriptionAccepted})
@idempotent
def cancel(path: SubscriptionPath) -> Answer:
    """Cancel an active or suspended line: 202 `canceling`, then `ended` (terminal)."""
    return SubscriptionAccepted.of(*subscriptions.request_action(_org(), path.subscription_id, "cancel")), 202


@subscriptions_api.post("/subscriptions/<subscription_id>/plan_change", responses={202: SubscriptionAccepted})
@idempotent
def plan_change(path: SubscriptionPath, body: PlanChangeBody) -> Answer:
    """Change the plan `now` (charged now, a new period starts) or at `renewal` (scheduled)."""
    result = subscriptions.change_plan(_org(), path.subscription_id, body.plan, body.when)
    return SubscriptionAccepted.of(*result), 202


@subscriptions_api.post("/subscriptions/<subscription_id>/sim_change", responses={202: SubscriptionAccepted})
@idempotent
def sim_change(path: SubscriptionPath, body: SimChangeBody) -> Answer:
    """Move the line to a new SIM or eSIM (the product must be enabled); the number stays."""
    auth.require_product(body.type)
    result = subscriptions.change_sim(_org(), path.subscription_id, body.type, body.reason)
    return SubscriptionAccepted.of(*result), 202


@subscriptions_api.post("/subscriptions/<subscription_id>/topups", responses={202: SubscriptionAccepted})
@idempotent
def topup(path: SubscriptionPath, body: TopupBody) -> Answer:
    """Buy a top-up for an active line; its price is held, then debited when the carrier applies it."""
    result = subscriptions.add_topup(_org(), path.subscription_id, body.topup)
    return SubscriptionAccepted.of(*result), 202


@subscriptions_api.get("/subscriptions/<subscription_id>/orders", responses={200: OrderList})
def list_orders(path: SubscriptionPath) -> Json:
    """The line's orders (purchase and every action), newest first."""
    rows = subscriptions.list_orders(_org(), path.subscription_id)
    return OrderList(data=[OrderOut.model_validate(o) for o in rows]).model_dump(mode="json")


@subscriptions_api.get("/subscriptions/<subscription_id>/usage", responses={200: UsageOut})
def usage(path: SubscriptionPath) -> Json:
    """Data, voice and SMS per day in the current period, the allowance remaining and `as_of`."""
    return UsageOut.dump(subscriptions.usage(_org(), path.subscription_id))
