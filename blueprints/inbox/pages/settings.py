"""The supervisors' catalogues of the inbox: labels (with the flows each one starts and stops) and canned
replies (with their short codes). Agents get the designed 403 on every URL, whatever the page shows.

| URL | What |
|---|---|
| ``GET /settings/labels`` | the labels by name, each with its flows (``HX-Target: labels-pane``: the pane) |
| ``POST /settings/labels`` (``name``, ``color``, ``description``) | add (``labels.create_label``) |
| ``GET /settings/labels/<id>``, ``…/edit``, ``…/delete`` | a row as it is, its edit form, "Delete?" |
| ``POST /settings/labels/<id>`` | save (``update_label``: a new name follows on every conversation) |
| ``POST /settings/labels/<id>/delete`` | delete (``delete_label``: off every conversation too) |
| ``GET /settings/canned?q=&skip=`` | the canned replies by short code, searchable, 50 at a time |
| ``POST /settings/canned`` (``short_code``, ``title``, ``content``) | add (``create_canned_response``) |
| ``GET /settings/canned/<id>``, ``…/edit``, ``…/delete`` | a row, its edit form, "Delete?" |
| ``POST /settings/canned/<id>``, ``POST …/delete`` | save (``update_canned_response``), delete |

The routes belong to the inbox's page blueprint (``inbox_pages``: its session, CSRF and refusal handling),
but live under ``/settings`` rather than its ``/inbox`` prefix, beside the other settings pages: a
blueprint's prefix applies to every rule it registers, so these are added to the app when the blueprint is
registered (``Blueprint.record``), under the blueprint's own endpoint names (``inbox_pages.labels_page``).

Forms are checked by the API's own request models (``LabelIn``, ``LabelPatch``, ``CannedResponseIn``,
``CannedResponsePatch``) and the verbs; a refusal comes back as the form, the words under its field. Every
change is in the audit log with its before and after (the verbs record it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Response, make_response, render_template, request
from flask.blueprints import BlueprintSetupState
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from pydantic import BaseModel, ValidationError

from blueprints.desk.errors import register_refusals
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import require_role, signed_in
from blueprints.inbox.pages import pages
from blueprints.inbox.schemas import LabelIn, LabelPatch
from blueprints.inbox.services import labels as label_service
from blueprints.messaging import services as messaging
from blueprints.messaging.schemas import CannedResponseIn, CannedResponsePatch
from core.errors import ApiError

CANNED_PAGE = 50  # canned replies per "Show more"
SEARCH_MAX = 200  # CannedResponseListQuery.q

register_refusals(
    {
        "label_taken": lazy_gettext("A label with this name already exists."),
        "short_code_taken": lazy_gettext("Another canned reply already uses this short code."),
    }
)


_HEX_COLOR = re.compile(r"#[0-9A-Fa-f]{3}([0-9A-Fa-f]{3}([0-9A-Fa-f]{2})?)?")


def hex_color(value: object) -> bool:
    """A colour the page may draw as a swatch (``#rgb``, ``#rrggbb``, ``#rrggbbaa``); anything else a label
    was given is shown as typed."""
    return isinstance(value, str) and _HEX_COLOR.fullmatch(value) is not None


pages.add_app_template_test(hex_color, "hex_color")


def _route(rule: str, endpoint: str, methods: tuple[str, ...] = ("GET",)) -> Callable[[Any], Any]:
    """Register ``view`` at ``rule`` outside the blueprint's ``/inbox`` prefix, named
    ``inbox_pages.<endpoint>``, so the blueprint's before-request guard and error handlers apply to it
    (Flask finds them by the endpoint's blueprint name)."""

    def decorator(view: Any) -> Any:
        def register(state: BlueprintSetupState) -> None:
            state.app.add_url_rule(rule, f"{state.name}.{endpoint}", view, methods=list(methods))

        pages.record(register)
        return view

    return decorator


def _field_errors(error: ValidationError | ApiError) -> dict[str, str]:
    """A refusal in the page's words, by form field (the model or the verb holds the rule)."""
    if isinstance(error, ApiError):
        words = {
            "label_taken": _("A label with this name already exists."),
            "short_code_taken": _("Another canned reply already uses this short code."),
        }
        return {error.param or "name": words.get(error.code or "", error.message or _("That did not work."))}
    found: dict[str, str] = {}
    for item in error.errors(include_url=False):
        field = str(item["loc"][0]) if item["loc"] else "name"
        kind = item["type"]
        context = item.get("ctx") or {}
        if kind in ("string_too_short", "missing") or (kind == "value_error" and "blank" in item["msg"]):
            message = _("Required.")
        elif kind == "string_too_long":
            limit = "{:,}".format(context.get("max_length", 0))
            message = _("At most %(limit)s characters.", limit=limit)
        elif kind == "string_pattern_mismatch" and field == "short_code":
            message = _("Lowercase letters, digits, _ and -, up to 32 characters, no spaces.")
        else:
            message = _("This value is not valid.")
        found.setdefault(field, message)
    return found


def _checked(model: type[BaseModel], values: dict[str, Any]) -> BaseModel:
    return model.model_validate(values)


def _render(template: str, status: int = 200, **context: Any) -> Response:
    return vary_fragment(make_response(render_template(template, **context), status))


def _target(name: str) -> bool:
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
        and request.headers.get("HX-Target") == name
    )


def _optional(name: str) -> str | None:
    return (request.form.get(name) or "").strip() or None


# ---- labels ---------------------------------------------------------------------------------------------


def _labels_context(**extra: Any) -> dict[str, Any]:
    me = signed_in()
    return {
        "me": me,
        "labels": label_service.list_labels(me.organization_id),
        "flows": label_service.flows_by_label(me.organization_id),
        "label_key": label_service.label_key,
        "errors": {},
        "values": {},
        "notice": None,
        **extra,
    }


def _label_row(
    label: Any,
    mode: str = "view",
    errors: dict[str, str] | None = None,
    values: Any = None,
    status: int = 200,
) -> Response:
    me = signed_in()
    flows = label_service.flows_by_label(me.organization_id).get(label_service.label_key(label.name))
    return _render(
        "inbox/settings/_label_row.html",
        status,
        label=label,
        label_flows=flows,
        mode=mode,
        errors=errors or {},
        values=values or {},
    )


@_route("/settings/labels", "labels_page")
@require_role("supervisor")
def labels_page() -> Response:
    template = "inbox/settings/_labels_pane.html" if _target("labels-pane") else "inbox/settings/labels.html"
    return _render(template, **_labels_context())


@_route("/settings/labels", "create_label", ("POST",))
@require_role("supervisor")
def create_label() -> Response:
    me = signed_in()
    values = {
        "name": (request.form.get("name") or "").strip(),
        "color": _optional("color"),
        "description": _optional("description"),
    }
    try:
        body = _checked(LabelIn, values)
        label = label_service.create_label(
            me.organization_id,
            body.name,
            color=body.color,
            description=body.description,  # type: ignore[attr-defined]
        )
    except (ValidationError, ApiError) as refusal:
        if isinstance(refusal, ApiError) and refusal.param is None:
            raise
        return _render(
            "inbox/settings/_labels_pane.html",
            422,
            **_labels_context(errors=_field_errors(refusal), values=values),
        )
    return _render(
        "inbox/settings/_labels_pane.html",
        **_labels_context(notice=_("Label “%(name)s” added.", name=label.name)),
    )


@_route("/settings/labels/<label_id>", "label_row")
@require_role("supervisor")
def label_row(label_id: str) -> Response:
    return _label_row(label_service.get_label(signed_in().organization_id, label_id))


@_route("/settings/labels/<label_id>/edit", "edit_label")
@require_role("supervisor")
def edit_label(label_id: str) -> Response:
    return _label_row(label_service.get_label(signed_in().organization_id, label_id), "edit")


@_route("/settings/labels/<label_id>/delete", "confirm_delete_label")
@require_role("supervisor")
def confirm_delete_label(label_id: str) -> Response:
    return _label_row(label_service.get_label(signed_in().organization_id, label_id), "confirm")


@_route("/settings/labels/<label_id>", "save_label", ("POST",))
@require_role("supervisor")
def save_label(label_id: str) -> Response:
    me = signed_in()
    label = label_service.get_label(me.organization_id, label_id)
    values = {
        "name": (request.form.get("name") or "").strip(),
        "color": _optional("color"),
        "description": _optional("description"),
    }
    try:
        changes = _checked(LabelPatch, values).model_dump(include=set(values))
        label = label_service.update_label(me.organization_id, label_id, changes)
    except (ValidationError, ApiError) as refusal:
        if isinstance(refusal, ApiError) and refusal.param is None:
            raise
        return _label_row(label, "edit", _field_errors(refusal), values, status=422)
    return _label_row(label)


@_route("/settings/labels/<label_id>/delete", "delete_label", ("POST",))
@require_role("supervisor")
def delete_label(label_id: str) -> Response:
    me = signed_in()
    name = label_service.get_label(me.organization_id, label_id).name
    changed = label_service.delete_label(me.organization_id, label_id)
    notice = _("Label “%(name)s” deleted; removed from %(count)s conversations.", name=name, count=changed)
    return _render("inbox/settings/_labels_pane.html", **_labels_context(notice=notice))


# ---- canned replies -------------------------------------------------------------------------------------


def _canned_context(**extra: Any) -> dict[str, Any]:
    me = signed_in()
    search = (request.args.get("q") or "").strip()[:SEARCH_MAX]
    skip = request.args.get("skip", "0")
    offset = int(skip) if skip.isdigit() else 0
    page = messaging.list_canned_responses(
        me.organization_id, q=search or None, skip=offset, take=CANNED_PAGE
    )
    return {
        "me": me,
        "page": page,
        "search": search,
        "next_skip": offset + len(page.items) if offset + len(page.items) < page.total else None,
        "errors": {},
        "values": {},
        "notice": None,
        **extra,
    }


def _canned_values() -> dict[str, Any]:
    return {
        "short_code": (request.form.get("short_code") or "").strip(),
        "title": _optional("title"),
        "content": request.form.get("content") or "",
    }


def _canned_row(
    canned: Any,
    mode: str = "view",
    errors: dict[str, str] | None = None,
    values: Any = None,
    status: int = 200,
) -> Response:
    return _render(
        "inbox/settings/_canned_row.html",
        status,
        canned=canned,
        mode=mode,
        errors=errors or {},
        values=values or {},
    )


@_route("/settings/canned", "canned_page")
@require_role("supervisor")
def canned_page() -> Response:
    context = _canned_context()
    if _target("canned-more"):
        return _render("inbox/settings/_canned_rows.html", **context)
    template = "inbox/settings/_canned_list.html" if _target("canned-list") else "inbox/settings/canned.html"
    return _render(template, **context)


@_route("/settings/canned", "create_canned", ("POST",))
@require_role("supervisor")
def create_canned() -> Response:
    me = signed_in()
    values = _canned_values()
    try:
        body = _checked(CannedResponseIn, values)
        canned = messaging.create_canned_response(
            me.organization_id,
            short_code=body.short_code,  # type: ignore[attr-defined]
            content=body.content,  # type: ignore[attr-defined]
            title=body.title,  # type: ignore[attr-defined]
        )
    except (ValidationError, ApiError) as refusal:
        if isinstance(refusal, ApiError) and refusal.param is None:
            raise
        return _render(
            "inbox/settings/_canned_form_pane.html",
            422,
            **_canned_context(errors=_field_errors(refusal), values=values),
        )
    return _render(
        "inbox/settings/_canned_form_pane.html",
        **_canned_context(notice=_("Canned reply /%(code)s added.", code=canned.short_code)),
    )


@_route("/settings/canned/<canned_id>", "canned_row")
@require_role("supervisor")
def canned_row(canned_id: str) -> Response:
    return _canned_row(messaging.get_canned_response(signed_in().organization_id, canned_id))


@_route("/settings/canned/<canned_id>/edit", "edit_canned")
@require_role("supervisor")
def edit_canned(canned_id: str) -> Response:
    return _canned_row(messaging.get_canned_response(signed_in().organization_id, canned_id), "edit")


@_route("/settings/canned/<canned_id>/delete", "confirm_delete_canned")
@require_role("supervisor")
def confirm_delete_canned(canned_id: str) -> Response:
    return _canned_row(messaging.get_canned_response(signed_in().organization_id, canned_id), "confirm")


@_route("/settings/canned/<canned_id>", "save_canned", ("POST",))
@require_role("supervisor")
def save_canned(canned_id: str) -> Response:
    me = signed_in()
    canned = messaging.get_canned_response(me.organization_id, canned_id)
    values = _canned_values()
    try:
        changes = _checked(CannedResponsePatch, values).model_dump(include=set(values))
        canned = messaging.update_canned_response(me.organization_id, canned_id, **changes)
    except (ValidationError, ApiError) as refusal:
        if isinstance(refusal, ApiError) and refusal.param is None:
            raise
        return _canned_row(canned, "edit", _field_errors(refusal), values, status=422)
    return _canned_row(canned)


@_route("/settings/canned/<canned_id>/delete", "delete_canned", ("POST",))
@require_role("supervisor")
def delete_canned(canned_id: str) -> Response:
    me = signed_in()
    canned = messaging.get_canned_response(me.organization_id, canned_id)
    code = canned.short_code
    messaging.delete_canned_response(me.organization_id, canned_id)
    # the row leaves the table; the notice goes to the page's alert area
    response = _render("inbox/settings/_canned_deleted.html", code=code)
    return response
