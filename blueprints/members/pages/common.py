"""What the members area's desk pages share: the blueprint (the team dashboard at ``/team``; people, teams
and unavailability reasons under ``/settings``), supervisors only; the words for the area's refusals in
the page's language; and how a settings page answers a change (its pane again, with the refusal under its
field or a confirmation in the alert area).

Every change goes through the services the API and the ``users`` commands call, so it is checked by the
same rules and lands in the audit log the same way (the services record it, with the signed-in desk user
as the actor)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from flask import Blueprint, Response, make_response, redirect, render_template, request
from flask_babel import format_date, format_decimal, format_percent
from flask_babel import lazy_gettext as _

from blueprints.desk.errors import refuse_with_alerts, register_refusals
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import protect_pages
from blueprints.members.services.users import MAX_NAME_LENGTH, MIN_PASSWORD_LENGTH
from core import uow

pages = Blueprint("members_pages", __name__)
protect_pages(pages)
refuse_with_alerts(pages)

# The services answer in the API's words (English); the desk shows these instead, by the refusal's code
# (``lazy_gettext`` as ``_``: translated when shown, and found by the catalogue check).
register_refusals(
    {
        "email_invalid": _("Write an e-mail address, such as ana@example.com."),
        "email_taken": _("Someone already signs in with this e-mail."),
        "name_required": _("Required."),
        "name_too_long": _("At most %(count)s characters.", count=MAX_NAME_LENGTH),
        "role_unknown": _("Choose agent or supervisor."),
        "password_too_short": _("Use at least %(count)s characters.", count=MIN_PASSWORD_LENGTH),
        "password_wrong": _("That is not your current password."),
        "password_unchanged": _("Choose a password different from the one you were given."),
        "user_is_you": _("You cannot deactivate yourself."),
        "team_exists": _("There is already a team with this name."),
        "member_unknown": _("Choose a person from the list."),
        "member_not_in_team": _("This person is no longer in the team."),
        "reason_exists": _("There is already a reason with this name."),
        "range_inverted": _("The start is later than the end."),
        "range_too_long": _("Choose at most a year."),
    }
)


@pages.app_template_filter("member_hours")
def member_hours(hours: float) -> str:
    """Hours with one decimal, as the page's language writes numbers ("12.5")."""
    return str(format_decimal(hours, format="#,##0.0"))


@pages.app_template_filter("member_share")
def member_share(share: float) -> str:
    """A part of the whole as a percentage ("85 %" in Spanish, "85%" in English)."""
    return str(format_percent(share, format="#,##0%"))


@pages.app_template_filter("member_day")
def member_day(day: date) -> str:
    return str(format_date(day, "medium"))


def htmx() -> bool:
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def settings_answer(
    page: str,
    pane: str,
    context: Callable[[], dict[str, Any]],
    *,
    errors: dict[str, str] | None = None,
    saved: str | None = None,
    back: str,
) -> Response:
    """A settings page's answer to a change: to htmx, its pane again (the refusal under its field, 422,
    with nothing kept; or the confirmation ``saved`` in the alert area); to a plain form post, the whole
    page on a refusal, or a redirect to ``back`` once done. ``context`` reads the page's data (after the
    change, or after the rollback of a refused one)."""
    if errors:
        uow.rollback()
    status = 422 if errors else 200
    if not htmx():
        if not errors:
            return redirect(back, 303)
        return make_response(render_template(page, errors=errors, **context()), status)
    html = render_template(pane, errors=errors or {}, saved=saved, **context())
    return vary_fragment(make_response(html, status))
