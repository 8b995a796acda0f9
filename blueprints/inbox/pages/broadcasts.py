"""The supervisors' broadcasts (``/broadcasts``; agents get the designed 403 on every URL): a blueprint
of its own, ``broadcasts_pages``, because the inbox's ``inbox_pages`` lives under ``/inbox``.

- ``GET /broadcasts``: the organization's broadcasts, newest first, with their progress.
- ``GET /broadcasts/new``: the form: a WhatsApp number, one of its approved templates with its named
  parameters, the recipients (a pasted or uploaded CSV of numbers, or the contacts of a label).
- ``GET /broadcasts/new/templates?organization_address=``: the number's approved templates (options).
- ``GET /broadcasts/new/template?organization_address=&template_id=``: the template's parameters.
- ``POST /broadcasts/new/recipients``: the recipients as they would be sent, and the rejected rows (row,
  value, reason), checked as the person types or picks a file.
- ``POST /broadcasts`` (``when`` = ``now``, or ``later`` with ``scheduled_at``, a local date and time in the
  organization's zone): create (``inbox.services.broadcasts.create_broadcast``, as ``POST {msg}/broadcasts``),
  then its progress page.
- ``GET /broadcasts/<id>`` (``HX-Target: broadcast-progress``: the pane alone): the progress, per
  recipient sent, delivered, read or failed; desk.js fetches the pane again on ``broadcast.progress``,
  ``broadcast.completed``, ``broadcast.canceled`` of this broadcast and on ``message.updated`` of one of
  its messages.
- ``POST /broadcasts/<id>/cancel``: ``cancel_broadcast`` (queued recipients are not sent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext

from blueprints.channels.services import list_addresses
from blueprints.desk.errors import alert, refused, register_refusals
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import DeskUser, protect_pages, require_role, signed_in
from blueprints.inbox import views
from blueprints.inbox.services import broadcasts, recipient_lists
from blueprints.inbox.services import labels as label_service
from blueprints.messaging import services as messaging
from core import uow
from core.auth import actor as make_actor
from core.errors import ApiError
from core.timeutil import get_zone

pages = Blueprint("broadcasts_pages", __name__)
protect_pages(pages)

LIST_SIZE = 50
MAX_NAME = 200
MAX_PARAMETER = 1024
MAX_TEXT = recipient_lists.MAX_UPLOAD_BYTES
# The rejected rows shown one by one; past it the report says how many more there are.
MAX_REJECTED_SHOWN = 200

register_refusals({"template_not_found": lazy_gettext("The provider does not know this template any more.")})


def _reason(rejected: recipient_lists.Rejected) -> str:
    if rejected.reason == recipient_lists.DUPLICATE:
        return _("Same number as row %(row)s", row=rejected.duplicate_of)
    if rejected.reason == recipient_lists.OVER_LIMIT:
        return _("Past the limit of 1,000 recipients")
    return _("Not a valid phone number")


@dataclass
class BroadcastForm:
    """What the person typed, kept when the form comes back refused (never a file: it is read once)."""

    name: str = ""
    organization_address: str = ""
    template_id: str = ""
    parameters: dict[str, str] = field(default_factory=dict)
    source: str = "csv"  # csv (pasted or uploaded) or label
    numbers: str = ""
    label: str = ""
    when: str = "now"  # now, or later (at scheduled_at)
    scheduled_at: str = ""  # the form's local date and time (datetime-local), in the organization's zone

    @classmethod
    def read(cls) -> BroadcastForm:
        form = request.form
        return cls(
            name=(form.get("name") or "").strip()[:MAX_NAME],
            organization_address=(form.get("organization_address") or "").strip()[:64],
            template_id=(form.get("template_id") or "").strip()[:128],
            parameters={
                key[len("param.") :]: value[:MAX_PARAMETER]
                for key, value in form.items()
                if key.startswith("param.")
            },
            source="label" if form.get("source") == "label" else "csv",
            numbers=(form.get("numbers") or "")[:MAX_TEXT],
            label=(form.get("label") or "").strip()[:200],
            when="later" if form.get("when") == "later" else "now",
            scheduled_at=(form.get("scheduled_at") or "").strip()[:32],
        )


def _scheduled_at(me: DeskUser, form: BroadcastForm) -> datetime | None:
    """The form's local date and time in the organization's zone; None when it is not one."""
    try:
        local = datetime.fromisoformat(form.scheduled_at)
    except ValueError:
        return None
    return local.replace(tzinfo=get_zone(me.organization_timezone)) if local.tzinfo is None else local


def _upload() -> str | None:
    """The uploaded CSV's text (UTF-8, or Latin-1 as spreadsheets on Windows save it), None without one."""
    upload = request.files.get("csv_file")
    if upload is None or not upload.filename:
        return None
    data = upload.read(MAX_TEXT + 1)
    if len(data) > MAX_TEXT:
        abort(413)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _recipients(me: DeskUser, form: BroadcastForm) -> recipient_lists.RecipientList | None:
    """The recipients the form names; None when it names none yet."""
    if form.source == "label":
        if not form.label:
            return None
        return recipient_lists.from_addresses(
            label_service.addresses_by_label(me.organization_id, form.label)
        )
    text = _upload()
    if text is not None:
        form.numbers = text[:MAX_TEXT]  # shown back in the box: what was checked is what is sent
    if not form.numbers.strip():
        return None
    return recipient_lists.from_csv(form.numbers)


def _whatsapp_numbers(me: DeskUser) -> list[Any]:
    return [a for a in list_addresses(me.organization_id) if a.service == "whatsapp" and a.can_send]


def _templates(me: DeskUser, address: str) -> tuple[list[Any], bool]:
    """The number's approved templates, and whether the provider failed to list them."""
    if not address:
        return [], False
    try:
        return messaging.approved_templates(me.organization_id, address), False
    except ApiError as error:
        if error.status == 404:
            abort(404)
        uow.rollback()
        return [], True


def _template_fields(me: DeskUser, address: str, template_id: str) -> tuple[Any, list[str]]:
    template = messaging.template_for(me.organization_id, address, template_id)
    fields = list(dict.fromkeys([*template.placeholders("HEADER"), *template.placeholders("BODY")]))
    return template, fields


def _form_context(
    me: DeskUser, form: BroadcastForm, errors: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    numbers = _whatsapp_numbers(me)
    if not form.organization_address and numbers:
        form.organization_address = numbers[0].address
    templates, templates_failed = _templates(me, form.organization_address)
    template, fields = None, []
    if form.template_id and form.organization_address:
        try:
            template, fields = _template_fields(me, form.organization_address, form.template_id)
        except ApiError:
            uow.rollback()
            form.template_id = ""
    return {
        "me": me,
        "form": form,
        "errors": errors or {},
        "numbers": numbers,
        "templates": templates,
        "templates_failed": templates_failed,
        "template": template,
        "fields": fields,
        "labels": label_service.list_labels(me.organization_id),
        "reason": _reason,
        "max_rejected": MAX_REJECTED_SHOWN,
        **extra,
    }


@pages.get("/broadcasts")
@require_role("supervisor")
def broadcasts_page() -> Response:
    me = signed_in()
    page = broadcasts.list_broadcasts(me.organization_id, skip=0, take=LIST_SIZE)
    html = render_template("inbox/broadcasts/list.html", me=me, items=page.items, total=page.total)
    return vary_fragment(make_response(html))


@pages.get("/broadcasts/new")
@require_role("supervisor")
def new_broadcast() -> Response:
    me = signed_in()
    form = BroadcastForm(
        organization_address=(request.args.get("organization_address") or "").strip()[:64],
        template_id=(request.args.get("template_id") or "").strip()[:128],
    )
    html = render_template("inbox/broadcasts/new.html", **_form_context(me, form))
    return vary_fragment(make_response(html))


@pages.get("/broadcasts/new/templates")
@require_role("supervisor")
def template_choices() -> Response:
    me = signed_in()
    form = BroadcastForm(organization_address=(request.args.get("organization_address") or "").strip()[:64])
    html = render_template("inbox/broadcasts/_template_fields.html", **_form_context(me, form))
    return vary_fragment(make_response(html))


@pages.get("/broadcasts/new/template")
@require_role("supervisor")
def template_parameters() -> Response:
    me = signed_in()
    form = BroadcastForm(
        organization_address=(request.args.get("organization_address") or "").strip()[:64],
        template_id=(request.args.get("template_id") or "").strip()[:128],
    )
    html = render_template("inbox/broadcasts/_parameters.html", **_form_context(me, form))
    return vary_fragment(make_response(html))


@pages.post("/broadcasts/new/recipients")
@require_role("supervisor")
def check_recipients() -> Response:
    me = signed_in()
    form = BroadcastForm.read()
    found = _recipients(me, form)
    html = render_template(
        "inbox/broadcasts/_report.html",
        report=found,
        form=form,
        reason=_reason,
        max_rejected=MAX_REJECTED_SHOWN,
        refreshed_numbers=request.files.get("csv_file") is not None,
    )
    return vary_fragment(make_response(html))


def _refused_form(me: DeskUser, form: BroadcastForm, errors: dict[str, str], report: Any = None) -> Response:
    uow.rollback()
    html = render_template("inbox/broadcasts/_form.html", **_form_context(me, form, errors, report=report))
    response = make_response(html, 422)
    response.headers["HX-Retarget"] = "#broadcast-form"
    response.headers["HX-Reswap"] = "outerHTML"
    return vary_fragment(response)


@pages.post("/broadcasts")
@require_role("supervisor")
def create_broadcast() -> Response:
    me = signed_in()
    form = BroadcastForm.read()
    report = _recipients(me, form)
    errors: dict[str, str] = {}
    if not form.organization_address:
        errors["organization_address"] = _("Choose the number to send from.")
    if not form.template_id:
        errors["template_id"] = _("Choose an approved template.")
    for name, value in form.parameters.items():
        if not value.strip():
            errors[f"param.{name}"] = _("Fill in this parameter.")
    if report is None or not report.numbers:
        errors["recipients"] = (
            _("No contact carries this label.")
            if form.source == "label" and form.label
            else _("Add at least one valid number.")
        )
    when = _scheduled_at(me, form) if form.when == "later" else None
    if form.when == "later" and when is None:
        errors["scheduled_at"] = _("Choose the day and time to send it.")
    if errors:
        return _refused_form(me, form, errors, report)
    assert report is not None
    parameters = [
        {"type": "text", "parameter_name": name, "text": value.strip()}
        for name, value in form.parameters.items()
    ]
    spec = broadcasts.BroadcastSpec(
        name=form.name or None,
        organization_address=form.organization_address,
        meta_template_id=form.template_id,
        components=[{"type": "body", "parameters": parameters}] if parameters else [],
        recipients=[broadcasts.Recipient(to=number) for number in report.numbers],
        scheduled_at=when,
    )
    try:
        created = broadcasts.create_broadcast(
            me.organization_id, spec, created_by=make_actor("user", str(me.user_id))
        )
    except ApiError as error:
        if error.status >= 500:
            return refused(error)
        param = (error.param or "").split(".")[0]
        where = {
            "organization_address": "organization_address",
            "meta_template_id": "template_id",
            "scheduled_at": "scheduled_at",
        }.get(param, "template_id" if param == "components" else "recipients")
        message = (
            _("Fill in this parameter.")
            if error.code == "template_parameter_missing"
            else _("The provider does not know this template any more.")
            if error.code == "template_not_found"
            else _("Choose a time from now to 90 days ahead.")
            if param == "scheduled_at"
            else error.message
        )
        return _refused_form(me, form, {where: message}, report)
    target = url_for("broadcasts_pages.broadcast_page", broadcast_id=created.broadcast.id)
    response = make_response("", 200)
    response.headers["HX-Redirect"] = target  # the progress page, whose URL reloads it
    return response


def _progress(me: DeskUser, broadcast_id: str) -> views.Progress:
    try:
        return views.broadcast_progress(me.organization_id, broadcast_id)
    except ApiError:
        abort(404)  # another organization's broadcast, or no such id: the designed 404


@pages.get("/broadcasts/<broadcast_id>")
@require_role("supervisor")
def broadcast_page(broadcast_id: str) -> Response:
    me = signed_in()
    progress = _progress(me, broadcast_id)
    fragment = (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
        and request.headers.get("HX-Target") == "broadcast-progress"
    )
    template = "inbox/broadcasts/_progress.html" if fragment else "inbox/broadcasts/progress.html"
    return vary_fragment(make_response(render_template(template, me=me, progress=progress)))


@pages.post("/broadcasts/<broadcast_id>/cancel")
@require_role("supervisor")
def cancel_broadcast(broadcast_id: str) -> Response:
    me = signed_in()
    try:
        broadcasts.cancel_broadcast(me.organization_id, broadcast_id)
    except ApiError as error:
        if error.status == 409:
            return alert(_("This broadcast has already finished."))
        return refused(error)
    html = render_template(
        "inbox/broadcasts/_canceled.html",
        me=me,
        progress=_progress(me, broadcast_id),
        message=_("Broadcast canceled: the recipients still queued will not receive it."),
    )
    return vary_fragment(make_response(html))
