"""The ticket board and the ticket drawer.

``GET /tickets`` is the board: one column per state, newest first (the closed column: the latest closed
within ``CLOSED_WINDOW_DAYS``, with the full count), narrowed by the list's filters
(``tickets.TicketFilters``); ``?view=list`` is the same tickets as a table. Cards move between columns by
drag and drop or their "Move to…" menu (``static/desk.js``, "Boards"), which post to
``/tickets/<id>/move``: the state verb keeps the history, and the answer is the card again with the
column heads (exact counts, one grouped query) out of band. A column loads its next 50 cards when its end
scrolls into view (``/tickets/column/<state>``, a keyset on the column's order). A ticket another person
changed is fetched again from ``/tickets/<id>/card`` with the board's filters: the card (its ``data-in``
says its column) or nothing when the board no longer shows it; one the board does not show yet (created
elsewhere) is asked for with ``new=1``, answered 204 when it is not on the board.

``GET /tickets/<id>`` is the drawer: over the board for htmx (an offcanvas), a whole page otherwise. Every
field is a small form posting to ``/tickets/<id>/edit`` (one field per post, through its verb: the state
verb, the assignment verb, ``update_ticket`` for the rest); a refusal comes back next to its field, worded
by its code (``refusals.form_errors``). The ticket's tasks are created and completed from it too.

Reads and writes go through the CRM services and the members area's members; nothing here knows a rule
or writes SQL.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import cached_property, lru_cache
from typing import Any, get_args
from urllib.parse import parse_qsl, urlencode

from babel import Locale
from babel.dates import (
    DateTimePattern,
    format_date,
    format_timedelta,
    get_date_format,
    get_datetime_format,
    get_time_format,
    parse_pattern,
)
from flask import Response, abort, make_response, render_template, request, url_for
from flask_babel import gettext as _
from markupsafe import escape
from werkzeug.datastructures import MultiDict
from werkzeug.routing import BuildError

from blueprints.crm.drafts import TaskDraft, TicketChanges, TicketDraft, parse
from blueprints.crm.models import CrmContact, CrmTask, Ticket, TicketStateChange
from blueprints.crm.pages.common import _labels, pages
from blueprints.crm.refusals import form_errors
from blueprints.crm.rules import TicketChannel
from blueprints.crm.services import tasks as task_service
from blueprints.crm.services import tickets as ticket_service
from blueprints.crm.services.records import crm_contact
from blueprints.crm.services.tasks import TaskFilters
from blueprints.crm.services.tickets import BOARD_STATES, BoardCards, BoardCount, TicketFilters
from blueprints.crm.views import contact_names
from blueprints.desk import formats
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.memo import per_request
from blueprints.desk.security import DeskUser, signed_in
from blueprints.members.models import Member
from blueprints.members.services.members import list_members
from core import uow
from core.auth import actor as make_actor
from core.db import utcnow
from core.errors import ApiError
from core.timeutil import as_utc

PAGE_SIZE = 50  # cards per column and per "load more"; rows per page of the list view
CLOSED_WINDOW_DAYS = 30  # the closed column shows what was closed this recently
STALE_DAYS = 7  # an open ticket older than this wears a warning on its age badge
TASKS_SHOWN = 50  # a ticket's tasks in its drawer (not completed first)
MEMBERS_READ = 1000  # members offered for assignment and named on cards (one query)
CHANNELS: tuple[str, ...] = get_args(TicketChannel)
VIEWS = ("board", "list")


# ---- the board's state (what the URL says) -------------------------------------------------------------


def _as_uuid(value: str) -> str:
    """A filter's id as typed in the URL, or "" when it is none (a stale link filters nothing)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return ""


def _as_date(value: str) -> str:
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        return ""


@dataclass(frozen=True)
class BoardState:
    """The board's filters and view. ``assignee`` is a member id, ``none`` (unassigned) or empty."""

    view: str = "board"
    assignee: str = ""
    priority: str = ""
    type: str = ""
    project: str = ""
    q: str = ""
    created_after: str = ""
    created_before: str = ""

    @classmethod
    def from_args(cls, args: MultiDict[str, str]) -> BoardState:
        view = args.get("view", "board")
        priority = args.get("priority", "")
        return cls(
            view=view if view in VIEWS else "board",
            assignee=args.get("assignee", "").strip()[:64],
            priority=priority if priority in _labels()["priority"] else "",
            type=_as_uuid(args.get("type", "")),
            project=_as_uuid(args.get("project", "")),
            q=args.get("q", "").strip()[:200],
            created_after=_as_date(args.get("created_after", "")),
            created_before=_as_date(args.get("created_before", "")),
        )

    def params(self, **changes: str) -> dict[str, str]:
        """The non-empty query parameters of this state with ``changes`` applied (for ``url_for``)."""
        values = {
            "view": self.view,
            "assignee": self.assignee,
            "priority": self.priority,
            "type": self.type,
            "project": self.project,
            "q": self.q,
            "created_after": self.created_after,
            "created_before": self.created_before,
        }
        values.update(changes)
        return {k: v for k, v in values.items() if v and not (k == "view" and v == "board")}

    def filter_params(self) -> dict[str, str]:
        """The filters alone (what a card's refresh and a column's "load more" repeat)."""
        return self.params(view="")

    @property
    def filtered(self) -> bool:
        return bool(self.filter_params())

    def filters(self, me: DeskUser, **page: int) -> TicketFilters:
        """The service's filters; dates are local days of the organization's zone."""
        return TicketFilters(
            assignee_member_id=self.assignee if self.assignee not in ("", "none") else None,
            unassigned=True if self.assignee == "none" else None,
            priority=self.priority or None,  # type: ignore[arg-type]
            ticket_type_id=uuid.UUID(self.type) if self.type else None,
            project_id=uuid.UUID(self.project) if self.project else None,
            search=self.q or None,
            created_after=date.fromisoformat(self.created_after) if self.created_after else None,
            created_before=date.fromisoformat(self.created_before) if self.created_before else None,
            timezone=me.organization_timezone,
            **page,
        )


def _closed_since() -> datetime:
    return utcnow() - timedelta(days=CLOSED_WINDOW_DAYS)


# ---- what cards and the drawer name: members, projects, types ------------------------------------------


@dataclass(frozen=True)
class Names:
    """The organization's members, projects and ticket types, read once per request (three queries)."""

    members: list[Member]
    projects: list[Any]
    types: list[Any]

    @cached_property
    def member_names(self) -> dict[str, str]:
        return {m.id: m.name for m in self.members}

    @cached_property
    def by_user(self) -> dict[str, str]:
        """Member names by desk user id: a history's ``user:<id>`` actor."""
        return {str(m.user_id): m.name for m in self.members if m.user_id}

    @cached_property
    def project_names(self) -> dict[str, str]:
        return {str(p.id): p.name for p in self.projects}

    @cached_property
    def type_names(self) -> dict[str, str]:
        return {str(t.id): t.name for t in self.types}


def _names(me: DeskUser) -> Names:
    def read() -> Names:
        members = sorted(
            list_members(me.organization_id, skip=0, take=MEMBERS_READ), key=lambda m: (m.ai, m.name.lower())
        )
        return Names(
            members,
            ticket_service.list_named(me.organization_id, "projects"),
            ticket_service.list_named(me.organization_id, "ticket-types"),
        )

    return per_request(("crm_ticket_names", me.organization_id), read)


def _state_labels() -> list[tuple[str, str]]:
    """Every column as "Move to…" offers it: (state, name)."""
    names = _labels()["ticket_state"]
    return [(state, names[state]) for state in BOARD_STATES]


def _age(ticket: Ticket) -> str:
    """How old the ticket is, short ("3 days", "3 días"): a card has little room."""
    found = formats.page_formats()
    locale: Any = found.locale if found is not None else "en_US"
    return format_timedelta(
        utcnow() - as_utc(ticket.created_at),
        threshold=1.0,
        granularity="minute",
        format="short",
        locale=locale,
    )


def _day(value: datetime | None) -> str:
    """A date as an agent reads it ("24 nov 2026"), the organization's day."""
    if value is None:
        return ""
    found = formats.page_formats()
    if found is None:
        return formats.format_datetime(value, "medium")
    return format_date(found.local(value).date(), "medium", locale=found.locale)


@lru_cache(maxsize=8)
def _moment_pattern(locale_id: str) -> DateTimePattern:
    """The locale's medium date and short time as one parsed pattern ("24 nov 2026, 4:19 p.m."), parsed
    once: a board writes one per card."""
    locale = Locale.parse(locale_id)
    glue = get_datetime_format("medium", locale=locale).replace("'", "")
    time_pattern = get_time_format("short", locale=locale).pattern
    date_pattern = get_date_format("medium", locale=locale).pattern
    return parse_pattern(glue.replace("{0}", time_pattern).replace("{1}", date_pattern))


def _moment(value: datetime | None) -> str:
    """A moment: the date spelled out and the time without seconds, in the organization's zone."""
    if value is None:
        return ""
    found = formats.page_formats()
    if found is None:
        return formats.format_datetime(value, "medium")
    return _moment_pattern(str(found.locale)).apply(found.local(value), found.locale)


def _stale(ticket: Ticket) -> bool:
    return ticket.state != "closed" and utcnow() - as_utc(ticket.created_at) > timedelta(days=STALE_DAYS)


def _actor_name(actor: str | None, names: Names) -> str:
    """Who made a change, as a person reads it: a member's name, "API key sk_live_…", "System"."""
    if not actor:
        return _("System")
    kind, _colon, identifier = actor.partition(":")
    if kind == "user":
        return names.by_user.get(identifier, _("A former member"))
    if kind == "member":
        return names.member_names.get(identifier, identifier)
    if kind == "api_key":
        return _("API key %(prefix)s…", prefix=identifier)
    return _("System")


# What stands for a ticket's id in a URL built once per render (a board writes three URLs per card).
_ID = "00000000-0000-4000-8000-000000000000"


class CardKit:
    """What every card of one render shares, computed once: its words in the page's language and its URLs
    (built once with a stand-in id, the board's filters as their query): a board of 250 cards made
    1,800 catalogue lookups and 750 ``url_for`` calls before."""

    placeholder = _ID

    def __init__(self, state: BoardState | None) -> None:
        query = urlencode(state.filter_params()) if state is not None else ""
        self.query = f"?{query}" if query else ""
        self._move = url_for("crm_pages.move_ticket", ticket_id=_ID)
        self._refresh = url_for("crm_pages.ticket_card", ticket_id=_ID)
        # a ticket the board does not show yet (created, or now under its filters): 204 when not on it
        live = {"new": "1", **(state.filter_params() if state is not None else {})}
        self.live_url = f"{self._refresh}?{urlencode(live)}"
        self._open = url_for("crm_pages.ticket", ticket_id=_ID)
        self.words = {
            "priority": _("Priority"),
            "age": _("Age"),
            "assigned_to": _("Assigned to"),
            "unassigned": _("Unassigned"),
            "requester": _("Requester"),
        }

    def move_url(self, ticket: Ticket) -> str:
        return self._move.replace(_ID, str(ticket.id)) + self.query

    def refresh_url(self, ticket: Ticket) -> str:
        return self._refresh.replace(_ID, str(ticket.id)) + self.query

    def open_url(self, ticket: Ticket) -> str:
        return self._open.replace(_ID, str(ticket.id))

    @staticmethod
    def order(ticket: Ticket) -> str:
        """The card's place in its column as text that sorts like the column, newest first (the closed
        column by closing time): where desk.js puts a card a live update brings."""
        moment = ticket.closed_at if ticket.state == "closed" and ticket.closed_at else ticket.created_at
        return f"{as_utc(moment):%Y-%m-%dT%H:%M:%S.%f}|{ticket.number:012d}"

    def created(self, ticket: Ticket) -> str:
        return _("Created %(when)s", when=_moment(ticket.created_at))

    def closed(self, ticket: Ticket) -> str:
        return _("Closed %(when)s", when=_day(ticket.closed_at))


def _render(template: str, **context: Any) -> str:
    return render_template(
        template,
        labels=_labels(),
        state_labels=_state_labels(),
        closed_window_days=CLOSED_WINDOW_DAYS,
        ticket_age=_age,
        ticket_stale=_stale,
        day=_day,
        moment=_moment,
        kit=CardKit(context.get("state") or getattr(context.get("view"), "state", None)),
        rendered_at=utcnow().isoformat(),
        **{"requesters": {}, **context},
    )


def _requesters(me: DeskUser, tickets: Iterable[Ticket | None]) -> dict[uuid.UUID, str]:
    """The names of the customers who asked, for the cards and rows shown (one query, none without any)."""
    wanted = {t.requester_id for t in tickets if t is not None and t.requester_id is not None}
    return contact_names(me.organization_id, sorted(wanted))


# ---- the board and the list --------------------------------------------------------------------------


@dataclass
class Column:
    state: str
    name: str
    count: BoardCount
    cards: BoardCards


@dataclass
class BoardView:
    state: BoardState
    names: Names
    columns: list[Column] = field(default_factory=list)
    counts: dict[str, BoardCount] = field(default_factory=dict)
    rows: list[Ticket] = field(default_factory=list)
    total: int = 0
    offset: int = 0
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def next_offset(self) -> int | None:
        following = self.offset + len(self.rows)
        return following if following < self.total else None


# A filter's refusal is shown by its field of the filter form.
FILTER_FIELDS = {"created_after": "created_after", "created_before": "created_before", "search": "q"}


def _board_view(me: DeskUser, state: BoardState) -> BoardView:
    names = _names(me)
    view = BoardView(state, names)
    since = _closed_since()
    try:
        filters = state.filters(me)
        if state.view == "list":
            page = ticket_service.list_tickets(me.organization_id, state.filters(me, limit=PAGE_SIZE))
            view.rows, view.total = page.items, page.total
            return view
        view.counts = ticket_service.board_counts(me.organization_id, filters, since)
        cards = ticket_service.board_columns(me.organization_id, filters, since, PAGE_SIZE)
    except ApiError as refusal:
        errors = form_errors(refusal, FILTER_FIELDS)
        if not errors:
            raise
        # The board under the other filters, the refused one explained in the form.
        uow.rollback()
        fixed = BoardState(**{**state.__dict__, "created_after": "", "created_before": "", "q": ""})
        view = _board_view(me, fixed)
        view.state, view.errors = state, errors
        return view
    labels = _labels()["ticket_state"]
    view.columns = [Column(s, labels[s], view.counts[s], cards[s]) for s in BOARD_STATES]
    return view


def _view_requesters(me: DeskUser, view: BoardView) -> dict[uuid.UUID, str]:
    return _requesters(me, [*view.rows, *(t for c in view.columns for t in c.cards.tickets)])


def _is_fragment_request() -> bool:
    # A history restore also says HX-Request but wants the whole page.
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


@pages.get("/tickets")
def tickets_page() -> Response:
    """The board (or the list): the whole page, or the view pane alone for the filter form (htmx)."""
    me = signed_in()
    state = BoardState.from_args(request.args)
    view = _board_view(me, state)
    requesters = _view_requesters(me, view)
    if _is_fragment_request() and request.headers.get("HX-Target") == "ticket-view":
        pane = _render("crm/tickets/_view.html", me=me, view=view, requesters=requesters)
        return vary_fragment(make_response(pane))
    page = _render("crm/tickets/page.html", me=me, view=view, requesters=requesters)
    return vary_fragment(make_response(page))


@pages.get("/tickets/column/<state>")
def tickets_column(state: str) -> Response:
    """A column's next cards after ``cursor``, ending with the next "load more" while more are left."""
    me = signed_in()
    if state not in BOARD_STATES:
        abort(404)
    board = BoardState.from_args(request.args)
    cards = ticket_service.board_cards(
        me.organization_id,
        board.filters(me),
        state,
        _closed_since(),
        cursor=request.args.get("cursor") or None,
        limit=PAGE_SIZE,
    )
    html_text = _render(
        "crm/tickets/_cards.html",
        me=me,
        state=board,
        column_state=state,
        cards=cards,
        names=_names(me),
        requesters=_requesters(me, cards.tickets),
    )
    return vary_fragment(make_response(html_text))


@pages.get("/tickets/rows")
def tickets_rows() -> Response:
    """The list view's next rows (offset pages, as the API's list)."""
    me = signed_in()
    board = BoardState.from_args(request.args)
    offset = max(0, request.args.get("offset", 0, type=int) or 0)
    page = ticket_service.list_tickets(me.organization_id, board.filters(me, limit=PAGE_SIZE, offset=offset))
    view = BoardView(board, _names(me), rows=page.items, total=page.total, offset=offset)
    rows = _render("crm/tickets/_rows.html", me=me, view=view, requesters=_requesters(me, page.items))
    return vary_fragment(make_response(rows))


def _card_response(me: DeskUser, board: BoardState, ticket: Ticket | None) -> Response:
    """The card (or nothing, when the board no longer shows it) with every column head out of band."""
    counts = ticket_service.board_counts(me.organization_id, board.filters(me), _closed_since())
    html_text = _render(
        "crm/tickets/_card_answer.html",
        me=me,
        state=board,
        ticket=ticket,
        counts=counts,
        names=_names(me),
        requesters=_requesters(me, [ticket]),
    )
    return vary_fragment(make_response(html_text))


@pages.get("/tickets/heads")
def tickets_heads() -> Response:
    """Every column head again, out of band: a ticket changed or created elsewhere changes the counts
    even when its card is not on this board (not loaded yet, or new)."""
    me = signed_in()
    board = BoardState.from_args(request.args)
    counts = ticket_service.board_counts(me.organization_id, board.filters(me), _closed_since())
    since = _since(request.args.get("since", ""))
    news = 0
    if since is not None:
        # tickets others created after the board was rendered: their cards are not on it yet
        news = ticket_service.created_since(me.organization_id, board.filters(me), since, _actor(me))
    html_text = _render("crm/tickets/_heads.html", me=me, state=board, counts=counts, news=news, live=True)
    return vary_fragment(make_response(html_text))


def _since(value: str) -> datetime | None:
    """The board's render time as the live element carries it (None when absent or not a time)."""
    try:
        return as_utc(datetime.fromisoformat(value)) if value else None
    except ValueError:
        return None


def _ticket_id(ticket_id: str) -> uuid.UUID:
    """The id in the URL, or the page's 404 (a malformed id names no ticket)."""
    try:
        return uuid.UUID(ticket_id)
    except ValueError:
        abort(404)


def _ticket(me: DeskUser, ticket_id: str) -> Ticket:
    """The organization's ticket or the designed 404 (another organization's is not here)."""
    try:
        return ticket_service.get_ticket(me.organization_id, _ticket_id(ticket_id))
    except ApiError:
        abort(404)


@pages.get("/tickets/<ticket_id>/card")
def ticket_card(ticket_id: str) -> Response:
    """One card as the board under the URL's filters shows it; empty when it does not (a live update).
    With ``new=1`` (a ticket the board does not show yet: created elsewhere, or now under its filters)
    the answer is 204 when the board does not show it either."""
    me = signed_in()
    board = BoardState.from_args(request.args)
    _ticket(me, ticket_id)  # another organization's ticket: 404, not an empty card
    shown = ticket_service.ticket_on_board(
        me.organization_id, board.filters(me), _ticket_id(ticket_id), _closed_since()
    )
    if shown is None and request.args.get("new") == "1":
        return vary_fragment(make_response("", 204))
    return _card_response(me, board, shown)


def _actor(me: DeskUser) -> str:
    return make_actor("user", str(me.user_id))


@pages.post("/tickets/<ticket_id>/move")
def move_ticket(ticket_id: str) -> Response:
    """A card dropped in a column (or moved from its menu): the state verb, which keeps the history."""
    me = signed_in()
    board = BoardState.from_args(request.args)
    ticket = _ticket(me, ticket_id)
    moved = ticket_service.change_state(me.organization_id, ticket.id, request.form.get("to", ""), _actor(me))
    return _card_response(me, board, moved)


# ---- a new ticket ------------------------------------------------------------------------------------

NEW_FIELDS = {
    "title": "title",
    "body_html": "description",
    "priority": "priority",
    "ticket_type_id": "type",
    "project_id": "project",
    "assignee_member_id": "assignee",
}


def text_to_html(text: str) -> str | None:
    """What the agent typed as the ticket's HTML body: escaped, one paragraph per blank-line block and a
    line break per line (the verb sanitises it again, like every body)."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        return None
    blocks = [block for block in re.split(r"\n\s*\n", text) if block.strip()]
    return "".join("<p>" + str(escape(block.strip())).replace("\n", "<br>") + "</p>" for block in blocks)


_BREAKS = re.compile(r"<br\s*/?>|</p\s*>|</li\s*>|</h[1-6]\s*>|</div\s*>", re.IGNORECASE)
_TAGS = re.compile(r"<[^>]*>")
_PLAIN = re.compile(r"^(?:\s|<p>|</p>|<br\s*/?>|[^<])*$", re.IGNORECASE)


def html_to_text(body: str | None) -> str:
    """The stored body as the plain text the description box edits: paragraphs and lines kept."""
    if not body:
        return ""
    text = _TAGS.sub("", _BREAKS.sub("\n", body))
    return re.sub(r"\n{3,}", "\n\n", html.unescape(text)).strip()


def has_formatting(body: str | None) -> bool:
    """Whether the body holds more than paragraphs and line breaks (editing it as text drops that)."""
    return bool(body) and not _PLAIN.match(body or "")


@dataclass
class FormState:
    values: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _form_value(name: str) -> str:
    return (request.form.get(name) or "").strip()


def _id_or_none(value: str) -> str | None:
    # an empty choice clears; anything else goes to the verb as sent (a malformed id is its refusal)
    return value or None


def _new_form(me: DeskUser, board: BoardState, form: FormState, status: int = 200) -> Response:
    html_text = _render("crm/tickets/_new_form.html", me=me, state=board, form=form, names=_names(me))
    response = make_response(html_text, status)
    if status == 422:
        response.headers["HX-Retarget"] = "#new-ticket-form"
        response.headers["HX-Reswap"] = "outerHTML"
    return vary_fragment(response)


@pages.post("/tickets")
def create_ticket_page() -> Response:
    """The board's "new ticket": created in ``new`` with the agent's choices; the card joins the board
    (when its filters show it), the form is emptied and a confirmation shows. A refused field: 422 with
    the form as typed and the words under that field."""
    me = signed_in()
    # the board the sheet was opened over, as its filters are now (the form's ``board``, kept in step)
    board = BoardState.from_args(MultiDict(parse_qsl(request.form.get("board") or "")))
    values = {name: _form_value(name) for name in ("title", "description", "priority", "type", "project")}
    values["assignee"] = _form_value("assignee")
    try:
        draft = parse(
            TicketDraft,
            {
                "title": values["title"],
                "source": "manual",
                "priority": values["priority"] or "normal",
                "body_html": text_to_html(request.form.get("description") or ""),
                "ticket_type_id": _id_or_none(values["type"]),
                "project_id": _id_or_none(values["project"]),
                "assignee_member_id": _id_or_none(values["assignee"]),
            },
        )
        ticket = ticket_service.create_ticket(me.organization_id, draft, actor=_actor(me))
    except ApiError as refusal:
        errors = form_errors(refusal, NEW_FIELDS)
        if not errors:
            raise
        uow.rollback()
        return _new_form(me, board, FormState(values, errors), 422)
    shown = ticket_service.ticket_on_board(me.organization_id, board.filters(me), ticket.id, _closed_since())
    counts = ticket_service.board_counts(me.organization_id, board.filters(me), _closed_since())
    html_text = _render(
        "crm/tickets/_created.html",
        me=me,
        state=board,
        form=FormState(),
        names=_names(me),
        ticket=shown,
        counts=counts,
        requesters=_requesters(me, [shown]),
        message=_("Ticket %(reference)s created.", reference=ticket.reference),
    )
    return vary_fragment(make_response(html_text))


# ---- the drawer ----------------------------------------------------------------------------------------


@dataclass
class DrawerView:
    ticket: Ticket
    names: Names
    history: list[TicketStateChange]
    tasks: list[CrmTask]
    tasks_total: int
    requester: CrmContact | None
    requester_url: str | None
    errors: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # what a refused field was sent with
    task_form: FormState = field(default_factory=FormState)
    saved: str = ""  # the field just saved (its confirmation)

    @property
    def description_text(self) -> str:
        return self.values.get("description", html_to_text(self.ticket.body_html))

    @property
    def formatted(self) -> bool:
        return has_formatting(self.ticket.body_html)


def _contact_url(contact_id: uuid.UUID) -> str | None:
    """The CRM contact's page, once the CRM serves one (``crm_pages.contact``)."""
    try:
        return url_for("crm_pages.contact", contact_id=contact_id)
    except BuildError:
        return None


def _drawer(me: DeskUser, ticket: Ticket, **extra: Any) -> DrawerView:
    history = ticket_service.state_history(me.organization_id, ticket.id)
    # not completed first, then soonest due (the task list's order within each)
    tasks = task_service.list_tasks(me.organization_id, TaskFilters(ticket_id=ticket.id, limit=TASKS_SHOWN))
    ordered = sorted(tasks.items, key=lambda task: task.status == "completed")
    requester = crm_contact(me.organization_id, str(ticket.requester_id)) if ticket.requester_id else None
    return DrawerView(
        ticket,
        _names(me),
        history,
        ordered,
        tasks.total,
        requester,
        _contact_url(requester.id) if requester else None,
        **extra,
    )


def _channel_names() -> dict[str, str]:
    return {
        "whatsapp": "WhatsApp",
        "messenger": "Messenger",
        "voice": _("Voice"),
        "email": _("Email"),
        "sms": "SMS",
        "webchat": _("Web chat"),
    }


def _drawer_context(view: DrawerView) -> dict[str, Any]:
    return {
        "channel_names": {code: _channel_names().get(code, code) for code in CHANNELS},
        "actor_name": lambda actor: _actor_name(actor, view.names),
    }


def _drawer_response(me: DeskUser, view: DrawerView, status: int = 200) -> Response:
    # ``as_page``: the ticket's own page sends it with every field (hx-vals), so its header stays a page's
    as_page = request.values.get("as_page") == "1"
    html_text = _render(
        "crm/tickets/_drawer.html", me=me, view=view, as_page=as_page, **_drawer_context(view)
    )
    response = make_response(html_text, status)
    if status == 422:
        # the drawer again, the refusal under its field (htmx swaps 422 like a success in the desk)
        response.headers["HX-Retarget"] = "#ticket-drawer-content"
        response.headers["HX-Reswap"] = "innerHTML"
    return vary_fragment(response)


@pages.get("/tickets/<ticket_id>")
def ticket(ticket_id: str) -> Response:
    """The drawer over the board (htmx), or the ticket as a page of its own (a link, a reload)."""
    me = signed_in()
    view = _drawer(me, _ticket(me, ticket_id))
    if _is_fragment_request():
        return _drawer_response(me, view)
    page = _render("crm/tickets/ticket_page.html", me=me, view=view, **_drawer_context(view))
    return vary_fragment(make_response(page))


# Fields of the drawer by the wire's names a refusal's ``param`` carries.
DRAWER_FIELDS = {
    "title": "title",
    "priority": "priority",
    "state": "state",
    "assignee_member_id": "assignee",
    "assigned_by": "assignee",
    "ticket_type_id": "type",
    "project_id": "project",
    "channel": "channel",
    "body_html": "description",
}
EDITABLE = ("title", "priority", "state", "assignee", "type", "project", "channel", "description")


def _edit(me: DeskUser, ticket: Ticket, name: str, value: str) -> None:
    """One field of the ticket through its verb."""
    if name == "state":
        ticket_service.change_state(me.organization_id, ticket.id, value, _actor(me))
    elif name == "assignee":
        ticket_service.assign_ticket(me.organization_id, ticket.id, _id_or_none(value), me.member_id)
    else:
        wire = {
            "title": ("title", value),
            "priority": ("priority", value),
            "type": ("ticket_type_id", _id_or_none(value)),
            "project": ("project_id", _id_or_none(value)),
            "channel": ("channel", _id_or_none(value)),
            "description": ("body_html", text_to_html(value)),
        }[name]
        changes = parse(TicketChanges, dict([wire]))
        ticket_service.update_ticket(me.organization_id, ticket.id, changes, actor=_actor(me))


@pages.post("/tickets/<ticket_id>/edit")
def edit_ticket(ticket_id: str) -> Response:
    """One field changed in the drawer (``field`` names it, ``value`` is what was chosen or typed)."""
    me = signed_in()
    ticket = _ticket(me, ticket_id)
    name = request.form.get("field", "")
    if name not in EDITABLE:
        abort(404)
    value = request.form.get("value") or ""
    if name != "description":
        value = value.strip()
    try:
        _edit(me, ticket, name, value)
    except ApiError as refusal:
        errors = form_errors(refusal, DRAWER_FIELDS)
        if not errors:
            raise
        uow.rollback()
        fresh = _ticket(me, ticket_id)
        return _drawer_response(me, _drawer(me, fresh, errors=errors, values={name: value}), 422)
    return _drawer_response(me, _drawer(me, _ticket(me, ticket_id), saved=name))


TASK_FIELDS = {"title": "title", "due_date": "due_date", "type": "type"}


@pages.post("/tickets/<ticket_id>/tasks")
def create_ticket_task(ticket_id: str) -> Response:
    """A task of the ticket, owned by the agent who adds it."""
    me = signed_in()
    ticket = _ticket(me, ticket_id)
    values = {name: _form_value(name) for name in ("title", "due_date", "type")}
    try:
        draft = parse(
            TaskDraft,
            {
                "title": values["title"],
                "type": values["type"] or "to_do",
                "due_date": values["due_date"] or None,
                "owner_id": me.member_id,
                "ticket_id": ticket.id,
            },
        )
        task_service.create_task(me.organization_id, draft)
    except ApiError as refusal:
        errors = form_errors(refusal, TASK_FIELDS)
        if not errors:
            raise
        uow.rollback()
        view = _drawer(me, _ticket(me, ticket_id), task_form=FormState(values, errors))
        return _drawer_response(me, view, 422)
    return _drawer_response(me, _drawer(me, ticket, saved="task"))


@pages.post("/tickets/<ticket_id>/tasks/<task_id>/complete")
def complete_ticket_task(ticket_id: str, task_id: str) -> Response:
    me = signed_in()
    ticket = _ticket(me, ticket_id)
    task = task_service.get_task(me.organization_id, _ticket_id(task_id))
    if task.ticket_id != ticket.id:
        abort(404)
    task_service.complete_task(me.organization_id, task.id)
    return _drawer_response(me, _drawer(me, ticket, saved="task_done"))
