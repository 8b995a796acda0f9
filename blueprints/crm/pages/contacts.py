"""The desk's contacts and accounts: searchable lists, a contact's whole history on one page, an
account's contacts, deals and tickets, and merging two contacts.

- ``GET /contacts?tab=contacts|accounts&q=&page=``: the lists, 25 a page (``HX-Target: directory`` gets
  the list alone: the search box replaces it as one types).
- ``GET /contacts/<id>``: identities, accounts and one timeline, newest first, of the person's
  conversations (their last messages, each a link to the inbox), deals, tickets, tasks and deal notes.
  The timeline is built from sources (``TIMELINE_SOURCES``), each one batch of reads whatever the number
  of items; the voice area's calls join as one more source.
- ``/contacts/<id>/merge…``: find the duplicate, see what would move to this contact (identities,
  deals, tickets, tasks, conversations, accounts), then merge (``contacts.merge_contacts``, the API's
  verb; the messaging area moves the conversations in the same transaction).
- ``GET /accounts/<id>``.

Another organization's contact or account (or a malformed id) is the desk's designed 404. Reads go
through the CRM services and, for conversations, the inbox's list (``ConversationFilter(crm_contact_id)``);
nothing here writes SQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flask import Response, abort, make_response, render_template, request, url_for
from flask_babel import format_date, format_time
from flask_babel import gettext as _

from blueprints.crm.models import CrmAccount, CrmContact
from blueprints.crm.pages.common import _labels, pages
from blueprints.crm.services import contacts as contact_service
from blueprints.crm.services.contacts import AccountFilters, ContactFilters
from blueprints.crm.services.records import account_records, contact_history
from blueprints.crm.services.tasks import due_group
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import DeskUser, signed_in
from blueprints.inbox.services import conversations as inbox
from blueprints.members.services.members import members_by_ids
from core.db import utcnow
from core.errors import ApiError
from core.timeutil import as_utc, get_zone

PAGE_SIZE = 25  # rows of the contact and account lists
TIMELINE_CONVERSATIONS = 50  # a contact's conversations on their page, the latest first
LAST_MESSAGES = 2  # the last messages shown under each conversation
MERGE_CANDIDATES = 8
TABS = ("contacts", "accounts")


def _is_fragment_request() -> bool:
    # A history restore also says HX-Request but wants the whole page.
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        abort(404)


def _contact_or_404(me: DeskUser, contact_id: str) -> CrmContact:
    try:
        return contact_service.get_contact(me.organization_id, _uuid(contact_id))
    except ApiError:
        abort(404)


def _account_or_404(me: DeskUser, account_id: str) -> CrmAccount:
    try:
        return contact_service.get_account(me.organization_id, _uuid(account_id))
    except ApiError:
        abort(404)


# ---- the lists ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DirectoryState:
    tab: str = "contacts"
    q: str = ""
    page: int = 1

    @classmethod
    def from_args(cls, args: Any) -> DirectoryState:
        tab = args.get("tab", "contacts")
        page = args.get("page", 1, type=int) or 1
        return cls(tab if tab in TABS else "contacts", (args.get("q") or "").strip()[:100], max(page, 1))

    def url(self, **changes: Any) -> str:
        values = {"tab": self.tab, "q": self.q, "page": self.page, **changes}
        params = {
            key: value
            for key, value in values.items()
            if value and (key, value) not in (("tab", "contacts"), ("page", 1))
        }
        return url_for("crm_pages.contacts_page", **params)


@dataclass
class DirectoryView:
    state: DirectoryState
    rows: list[Any]
    total: int

    @property
    def pages(self) -> int:
        return max((self.total + PAGE_SIZE - 1) // PAGE_SIZE, 1)


def _directory(me: DeskUser, state: DirectoryState) -> DirectoryView:
    offset = (state.page - 1) * PAGE_SIZE
    search = state.q or None
    if state.tab == "accounts":
        page: Any = contact_service.list_accounts(
            me.organization_id, AccountFilters(limit=PAGE_SIZE, offset=offset, search=search)
        )
    else:
        page = contact_service.list_contacts(
            me.organization_id, ContactFilters(limit=PAGE_SIZE, offset=offset, search=search)
        )
    return DirectoryView(state, list(page.items), page.total)


@pages.get("/contacts")
def contacts_page() -> Response:
    me = signed_in()
    state = DirectoryState.from_args(request.args)
    view = _directory(me, state)
    if _is_fragment_request() and request.headers.get("HX-Target") == "directory":
        html = render_template("crm/contacts/_directory.html", view=view)
    else:
        html = render_template("crm/contacts/list.html", me=me, view=view)
    return vary_fragment(make_response(html))


# ---- a contact's history -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineItem:
    """One entry of a contact's timeline. ``kind``: conversation, deal, ticket, task or note (and, once
    the voice area exists, call); ``row`` the record; ``extra`` what the entry shows besides (a
    conversation's last messages)."""

    kind: str
    at: datetime
    row: Any
    extra: Any = None


@dataclass
class TimelineContext:
    """What the sources share: the page's person and contact, and the member names the entries mention
    (filled once, after every source ran, in one query)."""

    me: DeskUser
    contact: CrmContact
    member_ids: set[str] = field(default_factory=set)
    totals: dict[str, int] = field(default_factory=dict)


TimelineSource = Callable[[TimelineContext], list[TimelineItem]]


def _conversation_items(context: TimelineContext) -> list[TimelineItem]:
    """The person's conversations (every messaging contact linked to this CRM contact), each at its last
    message, with its last messages: the inbox's list (a page, its contacts and the last messages of all
    of them, one query each)."""
    me = context.me
    page = inbox.list_conversations(
        me.organization_id,
        inbox.ConversationFilter(
            crm_contact_id=str(context.contact.id),
            take=TIMELINE_CONVERSATIONS,
            include_messages=LAST_MESSAGES,
        ),
    )
    context.totals["conversations"] = page.total
    context.member_ids.update(c.member_id for c in page.items if c.member_id)
    return [
        TimelineItem(
            "conversation",
            as_utc(c.last_message_at or c.created_at),
            c,
            page.messages.get(c.id, []),
        )
        for c in page.items
    ]


def _crm_items(context: TimelineContext) -> list[TimelineItem]:
    """Deals (when created), tickets (when opened), tasks (when completed, else created) and deal notes:
    ``records.contact_history``, one query per kind."""
    history = contact_history(context.me.organization_id, context.contact.id)
    context.totals.update(history.totals)
    context.member_ids.update(d.owner_id for d in history.deals if d.owner_id)
    context.member_ids.update(t.assignee_member_id for t in history.tickets if t.assignee_member_id)
    context.member_ids.update(t.owner_id for t in history.tasks if t.owner_id)
    deal_names = {deal.id: deal for deal in history.deals}
    now, zone = utcnow(), get_zone(context.me.organization_timezone)
    return [
        *(TimelineItem("deal", as_utc(d.created_at), d) for d in history.deals),
        *(TimelineItem("ticket", as_utc(t.created_at), t) for t in history.tickets),
        # a task says whether it is overdue, by the rule of the task list and the rail's badge
        *(
            TimelineItem("task", as_utc(t.completed_at or t.created_at), t, due_group(t, now, zone))
            for t in history.tasks
        ),
        *(TimelineItem("note", as_utc(n.created_at), n, deal_names.get(n.deal_id)) for n in history.notes),
    ]


# The timeline's sources, each one batch of reads. Calls join when the voice area exists: a source that
# reads the contact's calls through the voice services and answers TimelineItem("call", started_at, call),
# appended here (and a "call" entry in crm/contacts/_timeline.html).
TIMELINE_SOURCES: tuple[TimelineSource, ...] = (_conversation_items, _crm_items)


@dataclass
class ContactView:
    contact: CrmContact
    timeline: list[TimelineItem]
    names: dict[str, str]  # member id -> name
    totals: dict[str, int]


def contact_view(me: DeskUser, contact: CrmContact) -> ContactView:
    """The contact's page: every source's entries, newest first (a tie keeps the sources' order), and the
    names of the members they mention."""
    context = TimelineContext(me, contact)
    items = [item for source in TIMELINE_SOURCES for item in source(context)]
    items.sort(key=lambda item: item.at, reverse=True)
    members = members_by_ids(me.organization_id, sorted(context.member_ids))
    names = {key: member.name for key, member in members.items()}
    return ContactView(contact, items, names, context.totals)


@pages.app_template_filter("crm_moment")
def crm_moment(value: datetime) -> str:
    """When a timeline entry happened, in the organization's zone: the date and the minute (Babel's
    medium date-and-time writes the seconds, which a history does not need)."""
    return f"{format_date(value, 'medium')}, {format_time(value, 'short')}"


def _kind_names() -> dict[str, str]:
    return {
        "conversation": _("Conversation"),
        "deal": _("Deal"),
        "ticket": _("Ticket"),
        "task": _("Task"),
        "note": _("Note"),
        "call": _("Call"),
    }


def _deal_status_names() -> dict[str, str]:
    return {"open": _("Open"), "won": _("Won"), "lost": _("Lost")}


@pages.get("/contacts/<contact_id>")
def contact(contact_id: str) -> Response:
    me = signed_in()
    found = _contact_or_404(me, contact_id)
    html = render_template(
        "crm/contacts/contact.html",
        me=me,
        view=contact_view(me, found),
        labels=_labels(),
        kinds=_kind_names(),
        deal_statuses=_deal_status_names(),
        merged=request.args.get("merged") == "1",
    )
    return vary_fragment(make_response(html))


# ---- merging two contacts ----------------------------------------------------------------------------------


@pages.get("/contacts/<contact_id>/merge/candidates")
def contact_merge_candidates(contact_id: str) -> Response:
    """Contacts matching what was typed (name, phone, email), this one left out."""
    me = signed_in()
    target = _contact_or_404(me, contact_id)
    typed = (request.args.get("q") or "").strip()[:100]
    found: list[CrmContact] = []
    if typed:
        page = contact_service.list_contacts(
            me.organization_id, ContactFilters(limit=MERGE_CANDIDATES + 1, search=typed)
        )
        found = [c for c in page.items if c.id != target.id][:MERGE_CANDIDATES]
    html = render_template("crm/contacts/_merge_candidates.html", target=target, found=found, typed=typed)
    return vary_fragment(make_response(html))


@dataclass(frozen=True)
class MergePreview:
    target: CrmContact
    source: CrmContact
    moves: dict[str, int]  # what moves to the target, by kind (conversations included)


@pages.get("/contacts/<contact_id>/merge")
def contact_merge_confirmation(contact_id: str) -> Response:
    """What merging ``source`` into this contact would move, before anything moves (empty without one)."""
    me = signed_in()
    target = _contact_or_404(me, contact_id)
    raw = (request.args.get("source") or "").strip()
    if not raw:
        return vary_fragment(make_response(""))
    source = _contact_or_404(me, raw)
    moves = contact_service.merge_preview(me.organization_id, target.id, source.id)
    # the conversations are the messaging area's: those of every messaging contact linked to the source
    moves["conversations"] = inbox.count_conversations(
        me.organization_id, inbox.ConversationFilter(crm_contact_id=str(source.id))
    )
    html = render_template("crm/contacts/_merge_confirm.html", preview=MergePreview(target, source, moves))
    return vary_fragment(make_response(html))


@pages.post("/contacts/<contact_id>/merge")
def contact_merge(contact_id: str) -> Response:
    """Merge the chosen contact into this one (the API's verb, one transaction) and show the survivor."""
    me = signed_in()
    target = _contact_or_404(me, contact_id)
    source = _contact_or_404(me, (request.form.get("source_contact_id") or "").strip())
    contact_service.merge_contacts(me.organization_id, target.id, source.id)
    response = make_response("", 200)
    response.headers["HX-Redirect"] = url_for("crm_pages.contact", contact_id=target.id, merged=1)
    return response


# ---- an account -------------------------------------------------------------------------------------------


@pages.get("/accounts/<account_id>")
def account(account_id: str) -> Response:
    me = signed_in()
    found = _account_or_404(me, account_id)
    records = account_records(me.organization_id, found.id)
    owner_ids = sorted({d.owner_id for d in records.deals.items if d.owner_id})
    names = {key: m.name for key, m in members_by_ids(me.organization_id, owner_ids).items()}
    html = render_template(
        "crm/contacts/account.html",
        me=me,
        account=found,
        records=records,
        names=names,
        labels=_labels(),
        deal_statuses=_deal_status_names(),
    )
    return vary_fragment(make_response(html))
