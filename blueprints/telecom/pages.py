"""The desk's Telecom page: a supervisor's read-only view of the organization's lines, portings, travel
eSIMs and prepaid balance (the partner API changes them; the desk only shows them).

One page, one fragment per tab (``HX-Target: telecom-pane``) and a "more" fragment per list that follows
the API's cursor (``starting_after``). Agents get 403 whatever the navigation shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request
from flask_babel import format_currency, format_decimal, lazy_gettext

from blueprints.desk.security import DeskUser, protect_pages, require_role, signed_in
from blueprints.telecom.services import data_esims, ledger, overview, portings, subscriptions
from blueprints.telecom.services.common import CURRENCY
from core.errors import ApiError

pages = Blueprint("telecom_pages", __name__, url_prefix="/telecom")
protect_pages(pages)

TABS = ("lines", "portings", "esims", "balance")
PAGE_SIZE = 25
# the statuses each list can be filtered by (the API's values)
STATUSES = {
    "lines": ("pending", "active", "suspending", "suspended", "resuming", "canceling", "ended"),
    "portings": ("pending", "requested", "declined", "completed", "canceled", "expired"),
    "esims": ("provisioning", "not_active", "active", "depleted", "expired", "failed"),
    "balance": (),
}


@dataclass(frozen=True)
class ListState:
    tab: str
    status: str | None
    after: str | None

    @classmethod
    def from_args(cls, args: Any) -> ListState:
        tab = args.get("tab") if args.get("tab") in TABS else "lines"
        status = args.get("status") if args.get("status") in STATUSES[tab] else None
        return cls(tab, status, args.get("after") or None)


def _rows(me: DeskUser, state: ListState) -> dict[str, Any]:
    """The tab's rows after the cursor, with the names they show; a stale cursor starts over."""
    org = me.organization_id
    listers = {
        "lines": subscriptions.list_subscriptions,
        "portings": portings.list_portings,
        "esims": data_esims.list_data_esims,
        "balance": lambda org, status, **window: ledger.list_transactions(org, **window),
    }
    lister = listers[state.tab]
    try:
        page = lister(org, status=state.status, limit=PAGE_SIZE, starting_after=state.after)
    except ApiError:
        page = lister(org, status=state.status, limit=PAGE_SIZE, starting_after=None)
    items = list(page.items)
    if state.tab == "esims":
        items = [view.esim for view in items]
    users = overview.user_names(org, {i.user_id for i in items if getattr(i, "user_id", None)})
    plans = overview.plan_names({i.plan_id for i in items if state.tab == "lines"})
    offers = overview.offer_names({i.offer_id for i in items if state.tab == "esims"})
    return {"items": items, "has_more": page.has_more, "users": users, "plans": plans, "offers": offers}


def _render(template: str, me: DeskUser, state: ListState, **extra: Any) -> Response:
    response = make_response(
        render_template(
            template, me=me, state=state, tabs=TABS, statuses=STATUSES, rows=_rows(me, state), **extra
        )
    )
    response.headers["Vary"] = "HX-Request, HX-Target"
    response.headers["Cache-Control"] = "no-store"
    return response


@pages.get("")
@require_role("supervisor")
def telecom_page() -> Response:
    me = signed_in()
    state = ListState.from_args(request.args)
    fragment = request.headers.get("HX-Request") == "true" and not request.headers.get(
        "HX-History-Restore-Request"
    )
    if fragment and request.headers.get("HX-Target") == "telecom-pane":
        return _render("telecom/_pane.html", me, state, balance=ledger.get_balance(me.organization_id))
    return _render("telecom/page.html", me, state, balance=ledger.get_balance(me.organization_id))


@pages.get("/more")
@require_role("supervisor")
def more_rows() -> Response:
    me = signed_in()
    state = ListState.from_args(request.args)
    if state.after is None:
        abort(400)
    return _render("telecom/_rows.html", me, state)


@pages.app_template_filter()
def mxn(cents: int | None) -> str:
    """Centavos as money in the page's language (``$1,234.50`` / ``$1,234.50 MXN`` per locale)."""
    if cents is None:
        return "—"
    return str(format_currency(Decimal(cents) / 100, CURRENCY))


@pages.app_template_filter()
def data_amount(value: int | None) -> str:
    """Bytes as GB or MB (decimal units, as carriers sell them); ``None`` is unlimited."""
    if value is None:
        from flask_babel import gettext as _

        return _("Unlimited")
    if value >= 10**9:
        return f"{format_decimal(value / 10**9, format='#,##0.#')} GB"
    return f"{format_decimal(value / 10**6, format='#,##0')} MB"


# ---- what the balance tab says a movement was for, in the page's language ----------------------------
# The ledger stores each movement's description as the services write it, in English (the API gives it
# so): an order's kind code when an order is settled ("line_purchase"), or a kind word and the plan or
# offer's name when it is held ("Renewal Plan 10 GB"). The page writes the kind in its language.

ORDER_KINDS = {
    "line_purchase": lazy_gettext("New line"),
    "plan_change": lazy_gettext("Plan change"),
    "topup": lazy_gettext("Top-up"),
    "renewal": lazy_gettext("Renewal"),
    "sim_change": lazy_gettext("SIM change"),
    "suspend": lazy_gettext("Suspension"),
    "resume": lazy_gettext("Resumption"),
    "cancel": lazy_gettext("Cancellation"),
}
# Longest first: "Travel eSIM top-up <offer>" before "Travel eSIM <offer>".
DESCRIPTION_PREFIXES = (
    ("Travel eSIM top-up", lazy_gettext("Travel eSIM top-up")),
    ("Travel eSIM declined", lazy_gettext("Travel eSIM declined")),
    ("Travel eSIM", lazy_gettext("Travel eSIM")),
    ("SIM change", lazy_gettext("SIM change")),
    ("Renewal", lazy_gettext("Renewal")),
    ("Top-up", lazy_gettext("Top-up")),
    ("Line", lazy_gettext("New line")),
)


@pages.app_template_filter("ledger_description")
def ledger_description(description: str | None) -> str:
    if not description:
        return "—"
    if description in ORDER_KINDS:
        return str(ORDER_KINDS[description])
    for prefix, words in DESCRIPTION_PREFIXES:
        if description == prefix or description.startswith(prefix + " "):
            return f"{words}{description[len(prefix) :]}"
    return description
