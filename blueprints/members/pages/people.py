"""People (``/settings/people``), supervisors only: every desk user with their role, status now and
teams; add a desk user (agent or supervisor) whose initial password must be changed at first sign-in;
reset a password (the same mark); deactivate a user (their open sessions end, as ``users deactivate``
does: the same service function).

| URL | What |
|---|---|
| ``GET /settings/people`` | the page |
| ``POST /settings/people`` | add a user (``users.create_user``, ``must_change_password``) |
| ``POST /settings/people/<user_id>/password`` | reset the password (``users.reset_password``) |
| ``POST /settings/people/<user_id>/deactivate`` | deactivate (``users.deactivate_user``) |

Each answers the people pane again (htmx), the refusal under its field by the service's ``param``.
"""

from __future__ import annotations

from typing import Any

from flask import Response, render_template, request, url_for
from flask_babel import gettext as _

from blueprints.desk.forms import attempt
from blueprints.desk.security import require_role, signed_in
from blueprints.members import views
from blueprints.members.models import ROLES
from blueprints.members.pages.common import pages, settings_answer
from blueprints.members.services import users

PAGE = "members/people/page.html"
PANE = "members/people/_pane.html"
NEW_FIELDS = {"name": "name", "email": "email", "role": "role", "password": "password"}


def _context(form: dict[str, str] | None = None, open_user: str = "") -> dict[str, Any]:
    """The pane's data: ``form`` what was typed in the add form, ``open_user`` the user whose reset form
    stays open (with its refusal)."""
    me = signed_in()
    return {
        "me": me,
        "people": views.people_rows(me.organization_id),
        "roles": ROLES,
        "min_length": users.MIN_PASSWORD_LENGTH,
        "form": form or {"role": "agent"},
        "open_user": open_user,
    }


@pages.get("/settings/people")
@require_role("supervisor")
def people_page() -> str:
    return render_template(PAGE, errors={}, **_context())


@pages.post("/settings/people")
@require_role("supervisor")
def create_person() -> Response:
    me = signed_in()
    values = {name: (request.form.get(name) or "").strip() for name in ("name", "email", "role")}
    password = request.form.get("password") or ""
    created, errors = attempt(
        lambda: users.create_user(
            me.organization_id,
            email=values["email"],
            password=password,
            name=values["name"],
            role=values["role"],
            must_change_password=True,
        ),
        NEW_FIELDS,
    )
    if created is None:
        return settings_answer(
            PAGE, PANE, lambda: _context(form=values), errors=errors, back=url_for(".people_page")
        )
    saved = _(
        "%(name)s can sign in as %(email)s with the password you chose, and will choose their own then.",
        name=created.user.name,
        email=created.user.email,
    )
    return settings_answer(PAGE, PANE, _context, saved=saved, back=url_for(".people_page"))


@pages.post("/settings/people/<user_id>/password")
@require_role("supervisor")
def reset_password(user_id: str) -> Response:
    me = signed_in()
    password = request.form.get("password") or ""
    user, errors = attempt(
        lambda: users.reset_password(me.organization_id, user_id, password),
        {"password": f"password-{user_id}"},
    )
    if user is None:
        return settings_answer(
            PAGE, PANE, lambda: _context(open_user=user_id), errors=errors, back=url_for(".people_page")
        )
    saved = _(
        "%(name)s's password is reset: their sessions have ended, and they choose a new one at their next "
        "sign-in.",
        name=user.name,
    )
    return settings_answer(PAGE, PANE, _context, saved=saved, back=url_for(".people_page"))


@pages.post("/settings/people/<user_id>/deactivate")
@require_role("supervisor")
def deactivate_person(user_id: str) -> Response:
    me = signed_in()
    user = users.deactivate_user(me.organization_id, user_id, by_user_id=me.user_id)
    saved = _("%(name)s is deactivated and signed out everywhere.", name=user.name)
    return settings_answer(PAGE, PANE, _context, saved=saved, back=url_for(".people_page"))
