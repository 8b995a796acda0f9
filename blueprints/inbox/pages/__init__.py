"""The desk's inbox: three panes (list, thread with its composer, side panel), each an HTMX fragment.

URLs are the agent's place: ``/inbox?tab=&label=&channel=&address=&q=`` (the list) and
``/inbox/c/<conversation id>?<same list state>`` (the same page with that thread open). A plain request
(a reload, a link, the back button's history restore) gets the whole page; an htmx request gets the
fragment its ``HX-Target`` names (``list-pane`` or ``conversation``). The smaller fragments (one row, one
message, the side panel, the composer, newer activity) are what the live updates of ``static/desk.js``
fetch when a Socket.IO event says something changed (docs/desk.md has the contract).

Every read and every change goes through the inbox, messaging and members services, the same functions
as the JSON API; nothing here knows a rule or writes SQL.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from werkzeug.datastructures import MultiDict
from werkzeug.routing import BuildError

from blueprints.ai import handoff
from blueprints.ai.views import conversation_state
from blueprints.channels.provider_ids import INVALID_PROVIDER_ID
from blueprints.channels.providers import MediaRef
from blueprints.channels.services import list_addresses
from blueprints.desk import formats
from blueprints.desk.errors import alert, refuse_with_alerts, register_refusals
from blueprints.desk.fragments import conversation_for_page as _conversation
from blueprints.desk.fragments import vary_fragment as _vary
from blueprints.desk.memo import per_request
from blueprints.desk.security import DeskUser, protect_pages, signed_in
from blueprints.inbox.services import conversations as inbox
from blueprints.inbox.services import labels as label_service
from blueprints.inbox.services import notes as note_service
from blueprints.inbox.services.tab_counts import for_tab, tab_counts
from blueprints.members.services.members import find_member, members_by_ids
from blueprints.members.services.presence import availabilities
from blueprints.members.services.teams import list_teams, teams_of
from blueprints.messaging import services as messaging
from blueprints.messaging.models import Conversation, Message
from blueprints.messaging.sending import Content, TemplateSend
from core.auth import actor as make_actor
from core.db import utcnow
from core.errors import ApiError
from core.timeutil import as_utc

pages = Blueprint("inbox_pages", __name__, url_prefix="/inbox")
protect_pages(pages)

TABS = ("mine", "unassigned", "team", "all", "archived")
COUNTED_TABS = ("mine", "unassigned", "team", "all")  # an archive's size tells the agent nothing
CHANNELS = ("whatsapp", "instagram", "messenger")
PAGE_SIZE = 20  # conversation rows per "load more" (a screen and a half; the API's default page too)
THREAD_SIZE = 30  # messages per "older" step
# What the thread shows of the audit trail (notes have their own bubbles; flows are automation detail).
TIMELINE_EVENTS = (
    "assignment",
    "unassignment",
    "label_added",
    "label_removed",
    "archived",
    "unarchived",
    "status_changed",
    "team_assigned",
    "team_removed",
)


# ---- the list's state (what the URL says) --------------------------------------------------------------


@dataclass(frozen=True)
class ListState:
    tab: str = "all"
    label: str = ""
    channel: str = ""
    address: str = ""
    q: str = ""

    @classmethod
    def from_args(cls, args: MultiDict[str, str]) -> ListState:
        tab = args.get("tab", "all")
        channel = args.get("channel", "")
        return cls(
            tab=tab if tab in TABS else "all",
            label=args.get("label", "").strip()[:80],
            channel=channel if channel in CHANNELS else "",
            address=args.get("address", "").strip()[:64],
            q=args.get("q", "").strip()[:100],
        )

    def params(self, **changes: str) -> dict[str, str]:
        """The non-empty query parameters of this state with ``changes`` applied (for ``url_for``)."""
        values = {"tab": self.tab, "label": self.label, "channel": self.channel, "address": self.address}
        values["q"] = self.q
        values.update(changes)
        return {
            key: value for key, value in values.items() if value and not (key == "tab" and value == "all")
        }

    @property
    def filtered(self) -> bool:
        return bool(self.label or self.channel or self.address or self.q)


def _filter(
    me: DeskUser, state: ListState, tab: str, team_ids: list[str], **window: Any
) -> inbox.ConversationFilter:
    base = inbox.ConversationFilter(
        search=state.q or None,
        services=[state.channel] if state.channel else [],
        labels=[state.label] if state.label else [],
        organization_address=state.address or None,
        **window,
    )
    return for_tab(base, tab, member_id=me.member_id, team_ids=team_ids)


def _my_team_ids(me: DeskUser) -> list[str]:
    member = find_member(me.organization_id, me.member_id) if me.member_id else None
    if member is None:
        return []
    return [str(team.id) for team in teams_of([member.pk]).get(member.pk, [])]


# ---- rows ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    conversation: Conversation
    last: Message | None
    unread: int
    assignee: Any  # the assigned member, when there is one


def _rows(me: DeskUser, items: list[Conversation], last: dict[uuid.UUID, list[Message]]) -> list[Row]:
    """Rows for these conversations: preview, unread badge and assignee read in one query each."""
    members = members_by_ids(me.organization_id, [c.member_id for c in items if c.member_id])
    unread = messaging.unanswered_counts(me.organization_id, [c.id for c in items])
    return [
        Row(c, (last.get(c.id) or [None])[-1], unread.get(c.id, 0), members.get(c.member_id or ""))
        for c in items
    ]


@dataclass
class ListView:
    state: ListState
    rows: list[Row]
    total: int
    skip: int
    counts: dict[str, int] = field(default_factory=dict)
    # the counts follow in their own request (the tabs show placeholders until then)
    counts_pending: bool = False

    @property
    def next_skip(self) -> int | None:
        following = self.skip + len(self.rows)
        return following if following < self.total else None


def _list_view(me: DeskUser, state: ListState, skip: int = 0, *, counts: str = "now") -> ListView:
    """A page of the list. ``counts``: ``now`` counts the tabs with it, ``later`` leaves them to the
    ``/counts`` fragment the client asks for next (placeholders meanwhile), ``none`` skips them (a next
    page of rows shows no tabs)."""
    team_ids = _my_team_ids(me)
    page = inbox.list_conversations(
        me.organization_id,
        # the total only says whether "load more" is needed: the tabs are counted apart
        _filter(me, state, state.tab, team_ids, skip=skip, take=PAGE_SIZE, include_messages=1, total_cap=0),
    )
    # a count that stopped at the page's end means at least one row more
    total = page.total if page.total_is_exact else page.total + 1
    view = ListView(state, _rows(me, page.items, page.messages), total, skip)
    if skip == 0 and counts == "now":
        view.counts = _tab_counts(me, state, team_ids)
    view.counts_pending = skip == 0 and counts == "later"
    return view


def _tab_counts(me: DeskUser, state: ListState, team_ids: list[str]) -> dict[str, int]:
    """Every counted tab under the list's filters. Unfiltered, each tab is counted off its own partial
    index (index-only, 7 ms for four tabs of 10,000 conversations); filtered, every row must be read
    anyway, so one query reads them once for all tabs (17 ms against 19 with a label; bench notes in
    docs/benchmarks.md)."""
    if not (state.q or state.label or state.channel or state.address):
        return {
            tab: inbox.count_conversations(me.organization_id, _filter(me, state, tab, team_ids))
            for tab in COUNTED_TABS
        }
    return tab_counts(
        me.organization_id,
        _filter(me, state, "all", team_ids),
        member_id=me.member_id,
        team_ids=team_ids,
        tabs=COUNTED_TABS,
    )


# ---- the thread ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One entry of the thread: a message, a note or an audit event, in time order."""

    kind: str  # message, note, event
    at: datetime
    row: Any
    quoted: Message | None = None


def _message_items(me: DeskUser, messages: list[Message]) -> list[Item]:
    originals = messaging.messages_by_external_ids(
        me.organization_id, [m.reply_to for m in messages if m.reply_to]
    )
    return [Item("message", as_utc(m.timestamp), m, originals.get(m.reply_to or "")) for m in messages]


def _activity(
    me: DeskUser, conversation_id: uuid.UUID, after: datetime | None, before: datetime | None
) -> list[Item]:
    """Notes and audit events between two instants (either open)."""
    found: list[Item] = []
    for note in note_service.list_notes(me.organization_id, conversation_id):
        found.append(Item("note", as_utc(note.created_at), note))
    for event in note_service.list_events(me.organization_id, conversation_id, list(TIMELINE_EVENTS)):
        found.append(Item("event", as_utc(event.created_at), event))
    return [i for i in found if (after is None or i.at > after) and (before is None or i.at <= before)]


@dataclass
class ThreadView:
    conversation: Conversation
    items: list[Item]
    older_skip: int | None
    names: dict[str, str] = field(default_factory=dict)


def _names(me: DeskUser, items: list[Item]) -> dict[str, str]:
    """Member names the items mention (authors of notes and messages, assignees), in one query."""
    wanted: set[str] = set()
    for item in items:
        if item.kind == "event":
            wanted.add(str(item.row.data.get("member_id") or ""))
        else:
            wanted.add(str(item.row.member_id or ""))
    wanted.discard("")
    return {
        member_id: member.name
        for member_id, member in members_by_ids(me.organization_id, list(wanted)).items()
    }


def _thread(me: DeskUser, conversation: Conversation, skip: int = 0) -> ThreadView:
    """A window of messages (the latest ``THREAD_SIZE`` after skipping ``skip``) with the notes and audit
    events of its time span: from its first message (the very beginning for the oldest window) up to the
    first message of the next newer window (for the newest window: up to now)."""
    # An older window also reads the oldest message of the window after it: where its span ends.
    page = messaging.list_messages(
        me.organization_id,
        conversation_id=conversation.id,
        skip=skip - 1 if skip else 0,
        take=THREAD_SIZE + 1 if skip else THREAD_SIZE,
    )
    messages = list(page.items)
    end = as_utc(messages.pop().timestamp) if skip and messages else None
    if skip and not messages:
        return ThreadView(conversation, [], None)
    items = _message_items(me, messages)
    has_older = skip + len(messages) < page.total
    start = items[0].at if items and has_older else None
    activity = _activity(me, conversation.id, start, end)
    merged = sorted([*items, *activity], key=lambda i: (i.at, i.kind != "message"))
    older_skip = skip + len(messages) if has_older else None
    return ThreadView(conversation, merged, older_skip, _names(me, merged))


# ---- the composer and the side panel ------------------------------------------------------------------


@dataclass(frozen=True)
class ComposerView:
    conversation: Conversation
    window_open: bool
    expires_at: datetime | None
    can_send: bool
    reason: str | None

    @property
    def has_templates(self) -> bool:
        """WhatsApp has templates for a closed window; Instagram and Messenger have none."""
        return messaging.has_templates(self.conversation.service)


def _composer(me: DeskUser, conversation: Conversation) -> ComposerView:
    # The template list is not read here: the picker loads it as its own fragment (``template_picker``),
    # so a slow provider never delays opening a conversation.
    try:
        window = messaging.service_window(
            me.organization_id, conversation.contact_address, conversation.organization_address
        )
    except ApiError:
        return ComposerView(conversation, False, None, False, _("This channel is no longer connected."))
    return ComposerView(conversation, window.status == "open", window.expires_at, True, None)


@dataclass(frozen=True)
class TemplateChoice:
    """One entry of the template picker (an approved template, or one the address sent lately)."""

    id: str
    name: str
    language: str
    category: str | None = None
    body: str = ""


@dataclass(frozen=True)
class TemplatePicker:
    conversation: Conversation
    templates: list[TemplateChoice]
    approved: bool  # False: the provider failed and these are the recently sent ones


def _template_picker(me: DeskUser, conversation: Conversation) -> TemplatePicker:
    """The address's approved templates; when the provider cannot list them, the ones it sent lately."""
    try:
        approved = messaging.approved_templates(me.organization_id, conversation.organization_address)
    except ApiError:
        recent = messaging.recent_templates(me.organization_id, conversation.organization_address)
        return TemplatePicker(
            conversation, [TemplateChoice(t["id"], t["name"], t["language"]) for t in recent], False
        )
    choices = [
        TemplateChoice(t.id, t.name, t.language, t.category, t.text_of("BODY") or "") for t in approved
    ]
    return TemplatePicker(conversation, choices, True)


@dataclass(frozen=True)
class PanelView:
    conversation: Conversation
    addresses: list[Any]
    crm_url: str | None
    members: list[Any]
    teams: list[Any]
    catalogue: list[Any]
    applied: list[str]
    # The conversation's latest summary: the one the CRM stored when it was linked to a deal, else the
    # extractive one computed now (blueprints/ai/summaries.py); None without messages.
    summary: Any = None
    # the organization's AI agents: a conversation may be theirs, and an agent may hand one to them
    ai_members: list[Any] = field(default_factory=list)


def _crm_url(crm_contact_id: str | None) -> str | None:
    """The CRM contact's page, once the CRM area serves one (``crm_pages.contact``)."""
    if not crm_contact_id:
        return None
    try:
        return url_for("crm_pages.contact", contact_id=crm_contact_id)
    except BuildError:
        return None


def _labels(me: DeskUser) -> list[Any]:
    return per_request(("labels", me.organization_id), lambda: label_service.list_labels(me.organization_id))


def _panel(me: DeskUser, conversation: Conversation) -> PanelView:
    contact = messaging.get_contact(me.organization_id, conversation.contact_id)
    people = per_request(
        ("availabilities", me.organization_id), lambda: availabilities(me.organization_id, ai=False)
    )
    teams = list_teams(me.organization_id, skip=0, take=200).items
    applied = list((conversation.extra or {}).get("labels") or [])
    keys = {name.lower() for name in applied}
    catalogue = [label for label in _labels(me) if label.name_key not in keys]
    from blueprints.ai.summaries import latest_summary  # the AI area's read, only for this panel

    return PanelView(
        conversation,
        list(contact.addresses),
        _crm_url(contact.crm_contact_id),
        people,
        teams,
        catalogue,
        applied,
        latest_summary(me.organization_id, conversation.id),
        per_request(
            ("ai-availabilities", me.organization_id), lambda: availabilities(me.organization_id, ai=True)
        ),
    )


# ---- responses ---------------------------------------------------------------------------------------


def _is_fragment_request() -> bool:
    # A history restore also says HX-Request (htmx 2.0.8+) but wants the whole page.
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def _context(me: DeskUser, state: ListState, conversation: Conversation | None) -> dict[str, Any]:
    context: dict[str, Any] = {
        "me": me,
        "state": state,
        "tabs": TABS,
        "channels": CHANNELS,
        "open": conversation,
        "now_iso": utcnow().isoformat(),
    }
    if conversation is not None:
        context.update(
            thread=_thread(me, conversation),
            composer=_composer(me, conversation),
            panel=_panel(me, conversation),
            to_label=_address_label(me, conversation.organization_address),
            ai_state=_ai_state(me, conversation),
        )
    return context


def _ai_state(me: DeskUser, conversation: Conversation) -> Any:
    """The header's AI badge: the AI area's read (``blueprints/ai/views.py``), as the panel's summary."""
    return conversation_state(me.organization_id, conversation)


def _addresses(me: DeskUser) -> list[Any]:
    return per_request(("addresses", me.organization_id), lambda: list_addresses(me.organization_id))


def _address_label(me: DeskUser, address: str) -> str:
    """How agents know one of the organization's numbers or accounts: its phone number as the provider
    shows it (a WhatsApp address is the provider's phone-number id, which nobody recognises)."""
    for known in _addresses(me):
        if known.address == address:
            extra = known.extra or {}
            return str(extra.get("phone_number") or extra.get("verified_name") or address)
    return address


def _page(conversation_id: str | None) -> Response:
    me = signed_in()
    state = ListState.from_args(request.args)
    conversation = _conversation(me, conversation_id) if conversation_id else None
    target = request.headers.get("HX-Target")
    if _is_fragment_request() and target == "list-pane":
        # A filter just changed: the rows come first and the filtered counts (which read every matching
        # row) in the next request, so the agent sees the list without waiting for the tabs.
        view = _list_view(me, state, counts="later" if state.filtered else "now")
        html = render_template("inbox/_list_pane.html", me=me, state=state, view=view, open=conversation)
        if view.counts_pending:
            response = make_response(html)
            response.headers["HX-Trigger-After-Settle"] = "desk:refresh-counts"
            return _vary(response)
    elif _is_fragment_request() and target == "conversation" and conversation is not None:
        html = render_template("inbox/_conversation.html", **_context(me, state, conversation))
    else:
        context = _context(me, state, conversation)
        html = render_template(
            "inbox/page.html",
            view=_list_view(me, state),
            label_names=[label.name for label in _labels(me)],
            addresses=_addresses(me),
            **context,
        )
    return _vary(make_response(html))


@pages.get("")
def inbox_page() -> Response:
    return _page(None)


@pages.get("/c/<conversation_id>")
def conversation_page(conversation_id: str) -> Response:
    return _page(conversation_id)


@pages.get("/rows")
def more_rows() -> Response:
    me = signed_in()
    state = ListState.from_args(request.args)
    skip = max(0, request.args.get("skip", 0, type=int) or 0)
    view = _list_view(me, state, skip, counts="none")
    return _vary(
        make_response(
            render_template(
                "inbox/_rows.html", me=me, view=view, state=state, open_id=request.args.get("open", "")
            )
        )
    )


@pages.get("/counts")
def counts() -> Response:
    me = signed_in()
    state = ListState.from_args(request.args)
    team_ids = _my_team_ids(me)
    view = ListView(
        state,
        [],
        0,
        0,
        _tab_counts(me, state, team_ids),
    )
    return _vary(make_response(render_template("inbox/_tabs.html", me=me, view=view, state=state)))


@pages.get("/row/<conversation_id>")
def row(conversation_id: str) -> Response:
    """One row as the current list shows it, or nothing when the conversation is not (or no longer) in
    the list the agent looks at (the live update then removes it)."""
    me = signed_in()
    state = ListState.from_args(request.args)
    conversation = _conversation(me, conversation_id)
    query = _filter(
        me, state, state.tab, _my_team_ids(me) if state.tab == "team" else [], take=1, include_messages=1
    )
    page = inbox.list_conversations(me.organization_id, replace(query, ids=[conversation.id]))
    if not page.items:
        return _vary(make_response("", 200))
    rows = _rows(me, page.items, page.messages)
    html = render_template("inbox/_row.html", row=rows[0], state=state, open_id=request.args.get("open", ""))
    return _vary(make_response(html))


@pages.get("/c/<conversation_id>/messages/<message_id>")
def message_fragment(conversation_id: str, message_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    try:
        message = messaging.get_message(me.organization_id, message_id)
    except ApiError:
        abort(404)
    if message.conversation_id != conversation.id:
        abort(404)
    item = _message_items(me, [message])[0]
    html = render_template("inbox/_item.html", item=item, conversation=conversation, names=_names(me, [item]))
    return _vary(make_response(html))


@pages.get("/c/<conversation_id>/older")
def older(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    skip = max(1, request.args.get("skip", 1, type=int) or 1)
    view = _thread(me, conversation, skip)
    return _vary(make_response(render_template("inbox/_older.html", thread=view, conversation=conversation)))


@pages.get("/c/<conversation_id>/activity")
def activity(conversation_id: str) -> Response:
    """Notes and audit events newer than ``after`` (ISO 8601): what a live event adds to an open thread."""
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    after = _parse_instant(request.args.get("after"))
    items = _activity(me, conversation.id, after, None)
    names = _names(me, items)
    html = "".join(
        render_template("inbox/_item.html", item=i, conversation=conversation, names=names) for i in items
    )
    return _vary(make_response(html))


@pages.get("/c/<conversation_id>/panel")
def panel(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    state = ListState.from_args(request.args)
    return _vary(
        make_response(
            render_template("inbox/_panel.html", panel=_panel(me, conversation), me=me, state=state)
        )
    )


@pages.get("/c/<conversation_id>/composer")
def composer(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    return _vary(make_response(render_template("inbox/_composer.html", composer=_composer(me, conversation))))


@pages.get("/c/<conversation_id>/templates")
def template_picker(conversation_id: str) -> Response:
    """The closed-window composer's list of templates (loaded after the composer: the provider is
    asked, through a short cache, ``messaging.approved_templates``)."""
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    picker = _template_picker(me, conversation)
    return _vary(make_response(render_template("inbox/_template_picker.html", picker=picker)))


@pages.get("/canned")
def canned() -> Response:
    """The composer's canned replies matching what follows the ``/`` typed (``q``), with the contact's
    name filled in (``conversation``: the open conversation, optional)."""
    me = signed_in()
    typed = (request.args.get("q") or "").strip().lstrip("/")[:32].lower()
    contact_name: str | None = None
    conversation_id = request.args.get("conversation") or ""
    if conversation_id:
        conversation = _conversation(me, conversation_id)
        contact_name = conversation.contact.name or conversation.name
    found = messaging.suggest_canned_responses(me.organization_id, typed)
    items = [(c, messaging.fill_variables(c.content, contact_name)) for c in found]
    html = render_template("inbox/_canned.html", items=items, typed=typed)
    return _vary(make_response(html))


# ---- sending -----------------------------------------------------------------------------------------


@pages.post("/c/<conversation_id>/messages")
def send(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    text = (request.form.get("text") or "").strip()
    attachment = (request.form.get("attachment") or "").strip()
    if not text and not attachment:
        return _problem(_("Write a message first."))
    if attachment:
        if not attachment.startswith("https://"):
            return _problem(_("An attachment is a link that starts with https://"))
        kind = request.form.get("attachment_kind") or "document"
        content = Content(
            kind=kind if kind in ("image", "video", "audio", "document") else "document",
            media=MediaRef(attachment),
        )
        message = _send(me, conversation, content)
        if text:
            message = _send(me, conversation, Content(kind="text", text=text))
    else:
        message = _send(me, conversation, Content(kind="text", text=text))
    return _sent(message)


def _send(me: DeskUser, conversation: Conversation, content: Content) -> Message:
    return messaging.send_message(
        me.organization_id,
        organization_address=conversation.organization_address,
        service=conversation.service,
        contact_address=conversation.contact_address,
        content=content,
        member_id=me.member_id,
    )


def _sent(message: Message) -> Response:
    response = make_response("", 200)
    response.headers["X-Message-Id"] = str(message.id)
    response.headers["HX-Trigger"] = json.dumps(
        {"desk:sent": {"conversation_id": str(message.conversation_id), "message_id": str(message.id)}}
    )
    return response


@pages.get("/c/<conversation_id>/template")
def template_form(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    template_id = (request.args.get("template_id") or "").strip()
    if not template_id:
        return make_response("")
    template = messaging.template_for(me.organization_id, conversation.organization_address, template_id)
    fields = list(dict.fromkeys([*template.placeholders("HEADER"), *template.placeholders("BODY")]))
    html = render_template(
        "inbox/_template_form.html",
        template=template,
        fields=fields,
        conversation=conversation,
        body=template.text_of("BODY") or "",
    )
    return make_response(html)


@pages.post("/c/<conversation_id>/template")
def send_template(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    template_id = (request.form.get("template_id") or "").strip()
    values = {key[len("param.") :]: value for key, value in request.form.items() if key.startswith("param.")}
    missing = [name for name, value in values.items() if not value.strip()]
    if not template_id or missing:
        return _problem(_("Fill in every field of the template."))
    parameters = [{"type": "text", "parameter_name": name, "text": value} for name, value in values.items()]
    message = messaging.send_template(
        me.organization_id,
        TemplateSend(
            organization_address=conversation.organization_address,
            to=conversation.contact_address,
            meta_template_id=template_id,
            components=[{"type": "body", "parameters": parameters}] if parameters else [],
            member_id=me.member_id,
        ),
    )
    return _sent(message)


@pages.post("/c/<conversation_id>/notes")
def add_note(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    text = (request.form.get("text") or "").strip()
    if not text:
        return _problem(_("Write the note first."))
    note = note_service.add_note(
        me.organization_id, conversation.id, text, member_id=me.member_id, actor=_actor(me)
    )
    response = make_response("", 200)
    response.headers["HX-Trigger"] = json.dumps(
        {"desk:noted": {"conversation_id": str(conversation.id), "note_id": str(note.id)}}
    )
    return response


# ---- the side panel's verbs -------------------------------------------------------------------------


def _actor(me: DeskUser) -> str:
    return make_actor("user", str(me.user_id))


def _panel_response(me: DeskUser, conversation_id: str) -> Response:
    conversation = _conversation(me, conversation_id)
    state = ListState.from_args(request.args)
    return make_response(
        render_template("inbox/_panel.html", panel=_panel(me, conversation), me=me, state=state)
    )


@pages.post("/c/<conversation_id>/assign")
def assign(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    member_id = (request.form.get("member_id") or "").strip()
    if member_id:
        inbox.assign(me.organization_id, conversation.id, member_id, actor=_actor(me))
    else:
        inbox.unassign(me.organization_id, conversation.id, actor=_actor(me))
    return _panel_response(me, conversation_id)


@pages.post("/c/<conversation_id>/team")
def set_team(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    team_id = (request.form.get("team_id") or "").strip() or None
    inbox.set_team(me.organization_id, conversation.id, team_id, actor=_actor(me))
    return _panel_response(me, conversation_id)


@pages.post("/c/<conversation_id>/labels")
def add_label(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    name = request.form.get("label") or ""
    if name.strip():
        inbox.add_label(me.organization_id, conversation.id, name, actor=_actor(me))
    return _panel_response(me, conversation_id)


@pages.post("/c/<conversation_id>/labels/remove")
def remove_label(conversation_id: str) -> Response:
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    inbox.remove_label(me.organization_id, conversation.id, request.form.get("label") or "", actor=_actor(me))
    return _panel_response(me, conversation_id)


@pages.post("/c/<conversation_id>/state")
def change_state(conversation_id: str) -> Response:
    """archive, archive_and_clean, unarchive, close, reopen."""
    me = signed_in()
    conversation = _conversation(me, conversation_id)
    action = request.form.get("action")
    verbs = {
        "archive": lambda: inbox.archive(me.organization_id, conversation.id, actor=_actor(me)),
        "archive_and_clean": lambda: inbox.archive_and_clean(
            me.organization_id, conversation.id, actor=_actor(me)
        ),
        "unarchive": lambda: inbox.unarchive(me.organization_id, conversation.id, actor=_actor(me)),
        "close": lambda: inbox.set_status(me.organization_id, conversation.id, "closed", actor=_actor(me)),
        "reopen": lambda: inbox.set_status(me.organization_id, conversation.id, "active", actor=_actor(me)),
    }
    if action not in verbs:
        return _problem(_("Unknown action."))
    verbs[action]()
    return _panel_response(me, conversation_id)


# ---- errors ------------------------------------------------------------------------------------------


def _problem(message: str, status: int = 422) -> Response:
    """A refusal shown where the agent looks (the alert area), keeping nothing of the request."""
    return alert(message, status=status)


# The services answer in the API's words (English); the desk shows the translation of each code it knows.
register_refusals(
    {
        "send_failed": lazy_gettext("The message could not be sent."),
        "template_not_found": lazy_gettext("The template could not be found."),
        "template_parameter_missing": lazy_gettext("Fill in every field of the template."),
        INVALID_PROVIDER_ID: lazy_gettext("That template does not belong to this number."),
    }
)
refuse_with_alerts(pages)


def _parse_instant(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def list_url(state: ListState, conversation_id: str | None = None, **changes: str) -> str:
    params = state.params(**changes)
    if conversation_id:
        return url_for("inbox_pages.conversation_page", conversation_id=conversation_id, **params)
    return url_for("inbox_pages.inbox_page", **params)


@pages.app_template_global()
def inbox_url(state: ListState, conversation_id: str | None = None, **changes: str) -> str:
    return list_url(state, conversation_id, **changes)


@pages.app_template_filter()
def when(value: datetime) -> str:
    """A message's time: the hour today, the date and hour before (Babel, in the page's language and
    the organization's time zone: "today" is the agents' today, not UTC's)."""
    return formats.format_when(value)


@pages.app_template_filter()
def reactions(message: Message) -> list[dict[str, Any]]:
    """A message's reactions to show (one per person; removed ones are kept as tombstones, not shown)."""
    return messaging.visible_reactions(message.reactions)


@pages.app_template_filter()
def left(value: datetime | None) -> str:
    """How long an open service window has left, e.g. "3 hours" (Babel)."""
    return formats.format_left(value)


@pages.app_template_filter()
def ago(value: datetime | None) -> str:
    """How long ago, short ("5 min. ago", "hace 5 min"): list rows have little room."""
    return formats.format_ago(value)


# ---- notes the product wrote: their English words in the page's language -----------------------------

_HANDOFF_WORDS = {
    "transfer_to_human": lazy_gettext("AI agent handed over"),
    "failed": lazy_gettext("AI agent could not answer"),
}
_TRANSFER_NUMBER = re.compile(
    re.escape(handoff.TRANSFER_NUMBER)
    .replace(r"\{rule\}", "(?P<rule>.*?)")
    .replace(r"\{number\}", r"(?P<number>\+\d+)")
)


@pages.app_template_filter("note_text")
def note_text(content: str, actor: str | None) -> str:
    """A note as the page shows it: an AI agent's hand-off note starts with the product's own English
    words (stored so, as the API gives notes), written here in the page's language; the agent's own
    words after them are left as they are. Any other note is shown as written."""
    if not (actor or "").startswith("ai:"):
        return content
    for reason, label in handoff.HANDOFF_LABELS.items():
        if content.startswith(label + ": "):
            rest = _TRANSFER_NUMBER.sub(
                lambda m: _(
                    "Transfer rule %(rule)s names the number %(number)s.", rule=m["rule"], number=m["number"]
                ),
                content[len(label) + 2 :],
            )
            return f"{_HANDOFF_WORDS[reason]}: {rest}"
    return content
