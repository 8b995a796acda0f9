"""Sign-in, sign-out, the language menu and the desk's home. Each area's pages live in its own
``pages.py``; this module only holds what belongs to no area."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Response,
    current_app,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_babel import gettext as _
from flask_babel import lazy_pgettext
from flask_login import current_user, login_user, logout_user

from blueprints.crm.services.tasks import overdue_count
from blueprints.desk.errors import refusal_message
from blueprints.desk.fragments import vary_fragment as _vary
from blueprints.desk.i18n import LANGUAGES
from blueprints.desk.memo import per_request
from blueprints.desk.security import DeskUser, limiter, protect_pages, sign_in_lifetime, signed_in
from blueprints.inbox.pages import inbox_page
from blueprints.inbox.services.conversations import ConversationFilter
from blueprints.inbox.services.tab_counts import tab_counts
from blueprints.members.services.desk import desk_identity
from blueprints.members.services.presence import availabilities, change_status
from blueprints.members.services.reasons import list_reasons
from blueprints.members.services.users import (
    MIN_PASSWORD_LENGTH,
    authenticate,
    end_sign_in,
    sign_in_remembered,
    sign_out_everywhere,
    start_sign_in,
)
from blueprints.members.services.users import change_password as change_password_of
from core import uow
from core.auth import actor
from core.errors import ApiError

pages = Blueprint("desk", __name__)
protect_pages(pages)

# Failed attempts only: 10 a minute for one account (whoever tries it), 30 a minute from one address.
_ACCOUNT_LIMIT = "10 per minute"
_SOURCE_LIMIT = "30 per minute"


def _failed(response: Response) -> bool:
    return response.status_code != 302


def _account_key() -> str:
    return "account:" + (request.form.get("email") or "").strip().lower()


def _local_target(target: str | None) -> str | None:
    """Only a path of this site is a place to go back to after sign-in (no open redirect)."""
    if not target:
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return None
    return target


@pages.route("/signin", methods=["GET", "POST"])
@limiter.limit(_ACCOUNT_LIMIT, key_func=_account_key, methods=["POST"], deduct_when=_failed)
@limiter.limit(_SOURCE_LIMIT, methods=["POST"], deduct_when=_failed)
def signin() -> Response | str | tuple[str, int]:
    error = None
    email = ""
    if request.method == "POST":
        email = (request.form.get("email") or "").strip()
        user = authenticate(email, request.form.get("password") or "")
        remember = request.form.get("remember") == "on"
        identity = None
        if user is not None:
            # The record is committed with last_login_at by this request's unit of work.
            sign_in = start_sign_in(user, remember=remember, lifetime=sign_in_lifetime(remember))
            identity = desk_identity(user.id, sign_in.id)
        if identity is not None:
            if getattr(current_user, "is_authenticated", False):
                # Signing in again on a signed-in browser replaces its sign-in: the earlier one ends
                # rather than staying valid, unseen, for whoever kept a copy of its cookies.
                end_sign_in(current_user.organization_id, current_user.user_id, current_user.sign_in_id)
            login_user(DeskUser(**asdict(identity)), remember=remember)
            target = _local_target(request.args.get("next"))
            if identity.must_change_password:  # a password someone else chose: changed before anything else
                return redirect(url_for("desk.change_password", next=target))
            return redirect(target or url_for("desk.home"))
        error = _("Wrong e-mail or password.")
    status = 401 if error else 200
    return render_template("desk/signin.html", error=error, email=email), status


@pages.route("/account/password", methods=["GET", "POST"])
def change_password() -> Response | tuple[str, int] | str:
    """The signed-in user changes their password: the current one, the new one twice. A user whose
    password someone else chose (a supervisor created or reset it) is sent here by every page until it is
    changed. The change ends every sign-in of the user (``users.change_password``); this browser goes on
    with a new one, as remembered as the one it had."""
    me = signed_in()
    errors: dict[str, str] = {}
    target = _local_target(request.values.get("next"))
    if request.method == "POST":
        new = request.form.get("password") or ""
        if new != (request.form.get("confirm") or ""):
            errors["confirm"] = _("The two new passwords are not the same.")
        else:
            try:
                user = change_password_of(
                    me.organization_id,
                    me.user_id,
                    new,
                    current_password=request.form.get("current_password") or "",
                )
            except ApiError as error:
                uow.rollback()
                errors[error.param or "password"] = refusal_message(error)
            else:
                remember = sign_in_remembered(me.sign_in_id)
                sign_in = start_sign_in(user, remember=remember, lifetime=sign_in_lifetime(remember))
                identity = desk_identity(user.id, sign_in.id)
                if identity is not None:
                    login_user(DeskUser(**asdict(identity)), remember=remember)
                return redirect(target or url_for("desk.home"))
    status = 422 if errors else 200
    return render_template(
        "desk/password.html", me=me, errors=errors, next=target or "", min_length=MIN_PASSWORD_LENGTH
    ), status


@pages.post("/signout")
def signout() -> Response:
    """Sign out of this browser: its sign-in ends on the server, so a copy of the session or "remember
    me" cookie is refused from now on. With ``scope=everywhere``, every sign-in of the user ends (the
    same route, so that it stays the one page verb that ends the session)."""
    me = signed_in()
    if request.form.get("scope") == "everywhere":
        sign_out_everywhere(me.organization_id, me.user_id)
    else:
        end_sign_in(me.organization_id, me.user_id, me.sign_in_id)
    logout_user()  # the browser's cookies; the boundary commits the ended record after this view
    return redirect(url_for("desk.signin"))


@pages.post("/language")
def choose_language() -> Response:
    chosen = request.form.get("language")
    if chosen in LANGUAGES:
        session["locale"] = chosen
    return redirect(_local_target(request.form.get("back")) or url_for("desk.home"))


@pages.get("/desk")
def home() -> Response:
    """The desk opens on the inbox (the page agents live in)."""
    return inbox_page()


# ---- presence: the member's own status and the teammates' dots in the shell -------------------------

STATUSES = ("online", "busy", "away", "offline")


def status_names() -> dict[str, str]:
    """The presence statuses in the page's language."""
    return {"online": _("Online"), "busy": _("Busy"), "away": _("Away"), "offline": _("Offline")}


# Statuses that say why the member is not there (a reason from the organization's catalogue).
STATUSES_WITH_REASON = ("away", "offline")


def _shell() -> dict[str, Any]:
    """What the shell shows of presence, read once per page: the member's status and reason, the
    catalogue of reasons and every human teammate (three queries and the conversation counter)."""
    me = signed_in()
    return per_request(("desk_shell", me.organization_id, me.member_id), lambda: _read_shell(me))


def _read_shell(me: DeskUser) -> dict[str, Any]:
    people = per_request(
        ("availabilities", me.organization_id), lambda: availabilities(me.organization_id, ai=False)
    )
    mine = next((a for a in people if a.member.id == me.member_id), None)
    return {
        "status": mine.member.status if mine else "offline",
        "reason_id": str(mine.member.status_reason_id or "") if mine else "",
        "reason": mine.reason.name if mine and mine.reason else None,
        "reasons": list_reasons(me.organization_id, active=True),
        "teammates": [a for a in people if a.member.id != me.member_id],
    }


# ---- navigation: one rail for every section, collapsing to a drawer on a phone --------------------------


@dataclass(frozen=True)
class NavItem:
    key: str  # what a page sets as ``active_page``
    endpoint: str
    icon: str  # a Bootstrap icon
    label: Any  # a lazy translation
    supervisors: bool = False  # only supervisors see it
    badge: str | None = None  # a key of nav_badges()


# In the order of the rail. Its labels are short words (gettext context "rail": "Bandeja", not the page
# title's "Bandeja de entrada"). A section whose page is not registered (yet) is left out, so the rail
# shows exactly what the product serves; the server refuses a supervisor's page to others whatever it shows.
NAV = (
    NavItem("inbox", "inbox_pages.inbox_page", "bi-inbox", lazy_pgettext("rail", "Inbox"), badge="mine"),
    NavItem("deals", "crm_pages.deals_page", "bi-kanban", lazy_pgettext("rail", "Deals")),
    NavItem("tickets", "crm_pages.tickets_page", "bi-ticket-detailed", lazy_pgettext("rail", "Tickets")),
    NavItem(
        "tasks", "crm_pages.tasks_page", "bi-check2-square", lazy_pgettext("rail", "Tasks"), badge="overdue"
    ),
    NavItem("contacts", "crm_pages.contacts_page", "bi-person-vcard", lazy_pgettext("rail", "Contacts")),
    NavItem("team", "members_pages.team_page", "bi-people", lazy_pgettext("rail", "Team"), True),
    NavItem("agents", "ai_pages.agents_page", "bi-robot", lazy_pgettext("rail", "AI agents"), True),
    NavItem(
        "broadcasts",
        "broadcasts_pages.broadcasts_page",
        "bi-megaphone",
        lazy_pgettext("rail", "Broadcasts"),
        True,
    ),
    NavItem("telecom", "telecom_pages.telecom_page", "bi-sim", lazy_pgettext("rail", "Telecom"), True),
    NavItem("audit", "audit_pages.audit_page", "bi-journal-text", lazy_pgettext("rail", "Audit"), True),
    NavItem("settings", "members_pages.people_page", "bi-gear", lazy_pgettext("rail", "Settings"), True),
)

# The settings pages, in the order of their sub-navigation (templates/desk/_settings_nav.html, which every
# settings page includes with ``settings_page`` set to its key and ``active_page`` to "settings"). Same rule
# as NAV: a page whose endpoint is not registered (yet) is left out, so each appears when it lands.
SETTINGS = (
    NavItem(
        "people", "members_pages.people_page", "bi-person-gear", lazy_pgettext("settings", "People"), True
    ),
    NavItem("teams", "members_pages.teams_page", "bi-diagram-3", lazy_pgettext("settings", "Teams"), True),
    NavItem(
        "reasons",
        "members_pages.reasons_page",
        "bi-cup-hot",
        lazy_pgettext("settings", "Unavailability reasons"),
        True,
    ),
    NavItem(
        "channels",
        "channels_pages.channels_page",
        "bi-broadcast-pin",
        lazy_pgettext("settings", "Channels"),
        True,
    ),
    NavItem("labels", "inbox_pages.labels_page", "bi-tags", lazy_pgettext("settings", "Labels"), True),
    NavItem(
        "canned",
        "inbox_pages.canned_page",
        "bi-chat-square-quote",
        lazy_pgettext("settings", "Canned replies"),
        True,
    ),
    NavItem("keys", "organizations_pages.keys_page", "bi-key", lazy_pgettext("settings", "API keys"), True),
)


def _shown(items: tuple[NavItem, ...], me: DeskUser) -> list[NavItem]:
    served = current_app.view_functions
    return [item for item in items if item.endpoint in served and (me.is_supervisor or not item.supervisors)]


def nav_items(me: DeskUser) -> list[NavItem]:
    return _shown(NAV, me)


def settings_items(me: DeskUser) -> list[NavItem]:
    """The settings pages this desk serves, for the settings sub-navigation."""
    return _shown(SETTINGS, me)


def nav_badges(me: DeskUser) -> dict[str, int]:
    """The rail's counts: the member's open conversations (the inbox's Mine tab) and, once the tasks page
    exists, their overdue tasks. One query each, once per page."""

    def read() -> dict[str, int]:
        counts = {"mine": 0, "overdue": 0}
        if me.member_id is not None:
            counts["mine"] = tab_counts(
                me.organization_id, ConversationFilter(), member_id=me.member_id, team_ids=[], tabs=("mine",)
            ).get("mine", 0)
            if "crm_pages.tasks_page" in current_app.view_functions:  # the badge comes with the page
                counts["overdue"] = overdue_count(
                    me.organization_id, me.member_id, timezone=me.organization_timezone
                )
        return counts

    return per_request(("desk_nav_badges", me.organization_id, me.member_id), read)


@pages.get("/desk/nav")
def nav_fragment() -> Response:
    """The rail's badges again (a conversation assigned or closed elsewhere changes them live)."""
    me = signed_in()
    html = render_template("desk/_nav_badges.html", me=me, badges=nav_badges(me), items=nav_items(me))
    return _vary(make_response(html))


@pages.app_context_processor
def _shell_context() -> dict[str, Any]:
    signed = bool(getattr(current_user, "is_authenticated", False))
    return {
        "status_names": status_names() if signed else {},
        "statuses_with_reason": STATUSES_WITH_REASON,
        "shell": _shell if signed else None,
        "nav_items": nav_items if signed else None,
        "nav_badges": nav_badges if signed else None,
        "settings_items": settings_items if signed else None,
    }


@pages.post("/desk/presence")
def presence() -> Response:
    me = signed_in()
    status = request.form.get("status") or ""
    raw_reason = (request.form.get("reason_id") or "").strip()
    error = None
    if status not in STATUSES or me.member_id is None:
        error = _("Choose one of the statuses.")
    elif status in STATUSES_WITH_REASON and not raw_reason and list_reasons(me.organization_id, active=True):
        error = _("Choose a reason.")
    else:
        try:
            reason_id = uuid.UUID(raw_reason) if raw_reason and status in STATUSES_WITH_REASON else None
            change_status(
                me.organization_id, me.member_id, status, reason_id, changed_by=actor("user", str(me.user_id))
            )
        except (ValueError, ApiError):
            error = _("That reason is not available any more.")
    if error is not None:
        uow.rollback()
    html = render_template(
        "desk/_presence.html",
        me=me,
        error=error,
        open_menu=error is not None,
        chosen=status if error else None,
        chosen_reason=raw_reason if error else None,
    )
    return make_response(html, 422 if error else 200)
