"""The supervisors' channels page (``/settings/channels``; agents get the designed 403 on every URL).

- ``GET /settings/channels``: the connected addresses (service, number or page, provider, status,
  routing) and the form to connect one.
- ``POST /settings/channels``: connect (or reconnect) an address with
  ``channels.services.connect_address``, the function behind ``channels connect``.
- ``POST /settings/channels/<address>/routing`` (``routing`` = ``none``, ``team:<id>``, ``member:<id>``):
  where the address's new conversations go, ``inbox.services.assignment.set_routing``, as
  ``PUT {msg}/addresses/<address>/routing``.

The access token is write-only: its field is a password input that is never filled again, the page shows
only whether a token is stored, and a refused form comes back without it. The desk connects in its own
environment (the sandbox desk in the sandbox), where ``channels connect`` defaults to both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request
from flask_babel import gettext as _

from blueprints.channels import services
from blueprints.channels.models import PROVIDERS, SERVICES, OrganizationAddress
from blueprints.desk.errors import alert, refused
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import DeskUser, protect_pages, require_role, signed_in
from blueprints.inbox.services import assignment
from blueprints.members.services.members import list_members
from blueprints.members.services.teams import list_teams
from core import uow
from core.errors import ApiError

pages = Blueprint("channels_pages", __name__)
protect_pages(pages)

CONNECT_FIELDS = ("service", "provider", "address", "phone_number", "waba_id", "verified_name")
MAX_FIELD = 200
MAX_CHOICES = 500  # teams and AI agents offered as routing targets


@dataclass(frozen=True)
class ChannelRow:
    address: OrganizationAddress
    routing: assignment.Routing
    target_name: str | None  # the team's or the agent's name; None when it no longer exists


@dataclass(frozen=True)
class Targets:
    teams: list[tuple[str, str]]  # (id, name)
    agents: list[tuple[str, str]]


def _targets(me: DeskUser) -> Targets:
    teams = list_teams(me.organization_id, skip=0, take=MAX_CHOICES).items
    agents = [m for m in list_members(me.organization_id, skip=0, take=MAX_CHOICES) if m.ai]
    return Targets(
        teams=sorted(((str(t.id), t.name) for t in teams), key=lambda pair: pair[1].lower()),
        agents=sorted(((m.id, m.name) for m in agents), key=lambda pair: pair[1].lower()),
    )


def _rows(me: DeskUser, targets: Targets) -> list[ChannelRow]:
    """Every address with its rule: three queries whatever the number of addresses (addresses, rules,
    and the targets the page reads once for its selects)."""
    rules = assignment.routings(me.organization_id)
    names = dict(targets.teams) | dict(targets.agents)
    rows = []
    for address in services.list_addresses(me.organization_id):
        routing = rules.get(address.address) or assignment.Routing(address.address, "none", None, None)
        target = routing.team_id if routing.target == "team" else routing.member_id
        rows.append(ChannelRow(address, routing, names.get(target or "")))
    return rows


def _context(me: DeskUser, **extra: Any) -> dict[str, Any]:
    targets = _targets(me)
    return {
        "me": me,
        "rows": _rows(me, targets),
        "targets": targets,
        "services": SERVICES,
        "providers": PROVIDERS,
        "form": {"service": "whatsapp", "provider": "meta"},
        "errors": {},
        **extra,
    }


@pages.get("/settings/channels")
@require_role("supervisor")
def channels_page() -> Response:
    me = signed_in()
    return vary_fragment(make_response(render_template("channels/page.html", **_context(me))))


def _field_error(error: ApiError, form: dict[str, str]) -> tuple[str, str]:
    """The form field a refusal of ``connect_address`` names, and the words for it in the page's language
    (the service's English is kept for a refusal these words do not cover)."""
    param = error.param or "address"
    if error.status == 409:
        return "address", _("This address is connected to another organization.")
    if param in ("address", "waba_id"):
        if not form.get(param):
            return param, _("Required.")
        if form.get("provider") == "meta":
            return param, _("A Meta id is digits only.")
        return param, _("Letters, digits and _ only, at most 64.")
    if param == "phone_number":
        return param, _("Not a valid phone number.")
    return (param if param in CONNECT_FIELDS else "address"), error.message


@pages.post("/settings/channels")
@require_role("supervisor")
def connect_channel() -> Response:
    me = signed_in()
    form = {name: (request.form.get(name) or "").strip()[:MAX_FIELD] for name in CONNECT_FIELDS}
    # Read once and handed to the service; never put back into the form or any answer.
    token = (request.form.get("access_token") or "").strip()
    connection = services.Connection(
        service=form["service"],
        address=form["address"],
        provider=form["provider"] or "meta",
        phone_number=form["phone_number"] or None,
        waba_id=form["waba_id"] or None,
        verified_name=form["verified_name"] or None,
        access_token=token or None,
    )
    try:
        record = services.connect_address(me.organization_id, connection)
    except ApiError as error:
        if error.status >= 500:
            return refused(error)
        field, message = _field_error(error, form)
        uow.rollback()  # a refusal never half-writes
        html = render_template("channels/_connect.html", **_context(me, form=form, errors={field: message}))
        response = make_response(html, 422)
        response.headers["HX-Retarget"] = "#channel-connect"
        response.headers["HX-Reswap"] = "outerHTML"
        return vary_fragment(response)
    html = render_template(
        "channels/_connected.html",
        **_context(me),
        message=_("%(service)s %(address)s is connected.", service=record.service, address=record.address),
        connected=record.address,
    )
    return vary_fragment(make_response(html))


def _parse_routing(value: str) -> tuple[str, str | None, str | None]:
    if value == "none":
        return "none", None, None
    kind, _sep, target = value.partition(":")
    if kind == "team" and target:
        return "team", target, None
    if kind == "member" and target:
        return "member", None, target
    abort(400)


@pages.post("/settings/channels/<address>/routing")
@require_role("supervisor")
def set_routing(address: str) -> Response:
    me = signed_in()
    try:  # another organization's address is the 404 whatever the form says
        assignment.get_routing(me.organization_id, address)
    except ApiError as error:
        return refused(error)
    target, team_id, member_id = _parse_routing((request.form.get("routing") or "").strip()[:MAX_FIELD])
    try:
        assignment.set_routing(me.organization_id, address, target, team_id, member_id)
    except ApiError as error:
        if error.status == 400:
            return alert(_("That team or agent is no longer in the organization."))
        return refused(error)
    context = _context(me)
    row = next((r for r in context["rows"] if r.address.address == address), None)
    if row is None:  # removed between the write and this read: the list is the truth
        abort(404)
    html = render_template(
        "channels/_routed.html", row=row, targets=context["targets"], message=_("Routing saved.")
    )
    return vary_fragment(make_response(html))
