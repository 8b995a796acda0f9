"""Unavailability reasons (``/settings/reasons``), supervisors only: the catalogue members choose from when
they are away or offline; add, rename, archive (members can no longer choose it; the history and the
statistics keep it) and restore (``services.reasons``, as the API's ``/members/unavailable-reasons``).

| URL | What |
|---|---|
| ``GET /settings/reasons`` | the page |
| ``POST /settings/reasons`` | add a reason (checked by the API's ``ReasonCreate``) |
| ``POST /settings/reasons/<reason_id>`` | rename it, change its description (``ReasonUpdate``) |
| ``POST /settings/reasons/<reason_id>/archive`` | archive it (``active`` false) |
| ``POST /settings/reasons/<reason_id>/restore`` | make it choosable again |
"""

from __future__ import annotations

from typing import Any

from flask import Response, render_template, request, url_for
from flask_babel import gettext as _
from pydantic import BaseModel

from blueprints.desk.forms import attempt
from blueprints.desk.security import require_role, signed_in
from blueprints.members.pages.common import pages, settings_answer
from blueprints.members.schemas import ReasonCreate, ReasonUpdate
from blueprints.members.services import reasons

PAGE = "members/reasons/page.html"
PANE = "members/reasons/_pane.html"


def _context(form: dict[str, str] | None = None, editing: str = "") -> dict[str, Any]:
    me = signed_in()
    return {
        "me": me,
        "reasons": reasons.list_reasons(me.organization_id),
        "form": form or {},
        "editing": editing,
    }


def _answer(**kwargs: Any) -> Response:
    return settings_answer(
        PAGE, PANE, kwargs.pop("context", _context), back=url_for(".reasons_page"), **kwargs
    )


def _values() -> dict[str, str]:
    return {name: request.form.get(name) or "" for name in ("name", "description")}


def _draft(model: type[BaseModel], values: dict[str, str]) -> dict[str, Any]:
    """The form's fields as the API's request model reads them (an empty description is none)."""
    draft = model.model_validate(
        {"name": values["name"], "description": values["description"].strip() or None}
    )
    return draft.model_dump(exclude_unset=True)


@pages.get("/settings/reasons")
@require_role("supervisor")
def reasons_page() -> str:
    return render_template(PAGE, errors={}, **_context())


@pages.post("/settings/reasons")
@require_role("supervisor")
def create_reason() -> Response:
    me = signed_in()
    values = _values()
    reason, errors = attempt(
        lambda: reasons.create_reason(me.organization_id, _draft(ReasonCreate, values)),
        {"name": "name", "description": "description"},
    )
    if reason is None:
        return _answer(context=lambda: _context(values), errors=errors)
    return _answer(saved=_("Reason %(name)s added.", name=reason.name))


@pages.post("/settings/reasons/<reason_id>")
@require_role("supervisor")
def update_reason(reason_id: str) -> Response:
    me = signed_in()
    reasons.get_reason(me.organization_id, reason_id)  # another organization's: 404 before the form is read
    values = _values()
    reason, errors = attempt(
        lambda: reasons.update_reason(me.organization_id, reason_id, _draft(ReasonUpdate, values)),
        {"name": f"name-{reason_id}", "description": f"description-{reason_id}"},
    )
    if reason is None:
        return _answer(context=lambda: _context(values, reason_id), errors=errors)
    return _answer(saved=_("Reason %(name)s saved.", name=reason.name))


@pages.post("/settings/reasons/<reason_id>/archive")
@require_role("supervisor")
def archive_reason(reason_id: str) -> Response:
    reason = reasons.update_reason(signed_in().organization_id, reason_id, {"active": False})
    return _answer(saved=_("Reason %(name)s archived: nobody can choose it now.", name=reason.name))


@pages.post("/settings/reasons/<reason_id>/restore")
@require_role("supervisor")
def restore_reason(reason_id: str) -> Response:
    reason = reasons.update_reason(signed_in().organization_id, reason_id, {"active": True})
    return _answer(saved=_("Reason %(name)s can be chosen again.", name=reason.name))
