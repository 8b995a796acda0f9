"""The deal kanban, the deal drawer and the pipelines editor.

``GET /deals?pipeline=&owner=&contact=&q=&amount_min=&amount_max=&created_after=&created_before=&status=``
is the board: one column per stage of the pipeline with its count, total and weighted total in the
organization's base currency (the pipeline summary, narrowed by the same filters, so a column's figures
are exact however many of its cards are loaded); ``view=list`` shows the same deals as a sortable table and
``/deals.csv`` exports them. A column shows its first 50 cards and loads 50 more when its end scrolls into
view (``/deals/column``). Cards move by drag and drop or their "Move to…" menu (``static/desk.js``,
"Boards"): both post ``to`` (a stage id) and, for a lost stage, ``reason`` to ``/deals/<id>/move``, which
answers the card and the column heads out of band, or the refusal's alert (the card goes back). A live
``deal.moved`` / ``deal.updated`` makes desk.js fetch ``/deals/<id>/card`` with the board's query: the
card with ``data-in`` its stage, or an empty answer when it has left the board; for a deal the board does
not show yet, with ``new=1``: the card, or 204 when it is not on this board. ``/deals/heads`` answers the
heads alone; ``/deals/<id>/live`` the sheet again for an open drawer or deal page (204 once deleted). The
list view follows the same events through ``/deals/<id>/row``: a row it shows is answered again in place
(with the totals), and a deal that joins or leaves the list makes desk.js fetch the list again.

``GET /deals/<id>`` is the deal: a side sheet over the board (an htmx request aimed at
``#deal-drawer-content``) or a page of its own. Every field is edited in place through the deal verbs;
line items through the line-item verbs, after which the amount shown is the one the verb stored.

``GET /deals/pipelines`` (supervisors) edits pipelines and stages.

Every read and write goes through the CRM services (``views.py`` for the board's joins); a refusal is
placed under its field by ``param`` and worded by ``code`` (``refusals.py``), else it is the desk's alert.
"""

from __future__ import annotations

import csv
import functools
import io
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from babel.dates import format_timedelta
from babel.numbers import format_currency as babel_currency
from flask import Response, abort, make_response, render_template, request, url_for
from flask_babel import format_date, format_decimal, pgettext
from flask_babel import gettext as _
from sqlalchemy import ColumnElement
from werkzeug.datastructures import MultiDict

from blueprints.crm import views
from blueprints.crm.drafts import (
    DealChanges,
    DealContactDraft,
    DealDraft,
    LineItemChanges,
    LineItemDraft,
    PipelineChanges,
    PipelineDraft,
    StageChanges,
    StageDraft,
    TaskDraft,
    parse,
)
from blueprints.crm.models import Deal, Pipeline, Stage
from blueprints.crm.money import CURRENCIES
from blueprints.crm.pages.common import _labels, pages
from blueprints.crm.refusals import form_errors, message_for
from blueprints.crm.rules import Refusal
from blueprints.crm.services import deals as deal_service
from blueprints.crm.services import pipelines as pipeline_service
from blueprints.crm.services import products as product_service
from blueprints.crm.services import tasks as task_service
from blueprints.crm.services.deals import DealFilters
from blueprints.crm.services.pipelines import PipelineTotals, StageTotal
from blueprints.desk import formats
from blueprints.desk.errors import alert, refusal_message
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import DeskUser, require_role, signed_in
from blueprints.members.services.members import list_members
from core import uow
from core.auth import actor as make_actor
from core.db import utcnow
from core.errors import ApiError
from core.tenancy import find_for_org
from core.timeutil import as_utc

PER_COLUMN = 50  # cards a column shows, then 50 more each time its end scrolls into view
LIST_PAGE = 100  # rows of the list view per page
CSV_LIMIT = 10_000  # rows an export holds at most
OWNERS_SHOWN = 500  # members offered as owners
CHOICES_SHOWN = 200  # contacts, accounts and products offered in the drawer's selects
STATUSES = ("open", "won", "lost")


def _deal_404(view: Callable[..., Response]) -> Callable[..., Response]:
    """A route about one deal: the deal not being the organization's (or not existing) is the desk's 404
    (the designed page, or the "no longer here" alert for htmx), never a form error."""

    @functools.wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> Response:
        try:
            return view(*args, **kwargs)
        except ApiError as refusal:
            if refusal.code == "deal_not_found" and refusal.param is None:
                uow.rollback()
                abort(404)
            raise

    return guarded


def _actor(me: DeskUser) -> str:
    return make_actor("user", str(me.user_id))


def _uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value)) if value else None
    except ValueError:
        return None


# ---- the board's state (what the URL says) -----------------------------------------------------------------


@dataclass(frozen=True)
class BoardState:
    """The board's query: pipeline, view, filters and the list's order. ``owner`` is ``mine`` (the
    default), ``all``, ``none`` (unassigned) or a member id."""

    pipeline: str = ""
    view: str = "board"
    owner: str = "mine"
    contact: str = ""
    q: str = ""
    amount_min: str = ""
    amount_max: str = ""
    created_after: str = ""
    created_before: str = ""
    status: str = ""
    sort: str = "created_at"
    dir: str = "desc"

    @classmethod
    def from_args(cls, args: MultiDict[str, str]) -> BoardState:
        values = {f.name: args.get(f.name, f.default).strip()[:200] for f in fields(cls)}
        state = cls(**values)
        return replace(
            state,
            view=state.view if state.view in ("board", "list") else "board",
            owner=state.owner or "mine",
            status=state.status if state.status in STATUSES else "",
            sort=state.sort if state.sort in views.LIST_SORTS else "created_at",
            dir="asc" if state.dir == "asc" else "desc",
        )

    def params(self, **changes: str) -> dict[str, str]:
        """The query parameters that differ from the defaults, with ``changes`` applied (for url_for)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        defaults = {f.name: f.default for f in fields(self)}
        return {key: value for key, value in values.items() if value and value != defaults[key]}

    @property
    def filtered(self) -> bool:
        return any(
            (self.contact, self.q, self.amount_min, self.amount_max, self.created_after, self.created_before)
        ) or bool(self.status)


# The filter fields by the wire names a refusal's ``param`` carries.
FILTER_FIELDS = {
    "search": "q",
    "amount_min": "amount_min",
    "amount_max": "amount_max",
    "created_after": "created_after",
    "created_before": "created_before",
    "status": "status",
    "owner_id": "owner",
}


@dataclass
class Filtered:
    where: list[ColumnElement[bool]]
    errors: dict[str, str]


def _filters(me: DeskUser, state: BoardState) -> Filtered:
    """The deal conditions the state's filters make (the API list's rules, ``deals.deal_conditions``); a
    filter the rules refuse is left out and its message shown next to it."""
    values: dict[str, Any] = {
        "search": state.q or None,
        "amount_min": state.amount_min or None,
        "amount_max": state.amount_max or None,
        "created_after": state.created_after or None,
        "created_before": state.created_before or None,
        "status": state.status or None,
        "timezone": me.organization_timezone,
    }
    if state.owner == "mine":
        values["owner_id"] = me.member_id
    elif state.owner == "none":
        values["unassigned"] = True
    elif state.owner != "all":
        values["owner_id"] = state.owner
    errors: dict[str, str] = {}
    for _attempt in range(len(values)):
        try:
            where = deal_service.deal_conditions(me.organization_id, parse(DealFilters, values))
        except ApiError as refusal:
            found = form_errors(refusal, FILTER_FIELDS)
            if not found or refusal.param not in values:
                raise
            errors.update(found)
            values.pop(refusal.param)
            continue
        where.extend(views.contact_condition(state.contact or None, None))
        return Filtered(where, errors)
    raise AssertionError("unreachable: every filter was left out")


def _pipeline(me: DeskUser, wanted: str) -> tuple[Pipeline, list[Pipeline]]:
    """The pipeline the state names (the default one when it names none of the organization's)."""
    pipelines = pipeline_service.list_pipelines(me.organization_id)
    chosen = next((p for p in pipelines if str(p.id) == wanted), None)
    if chosen is None:
        chosen = next((p for p in pipelines if p.is_default), pipelines[0])
    return chosen, pipelines


# ---- the board ---------------------------------------------------------------------------------------------


@dataclass
class Column:
    stage: Stage
    total: StageTotal
    page: views.CardPage


@dataclass
class BoardView:
    me: DeskUser
    state: BoardState
    pipeline: Pipeline
    pipelines: list[Pipeline]
    summary: PipelineTotals
    errors: dict[str, str]
    owners: list[tuple[str, str]]
    columns: list[Column] = field(default_factory=list)
    rows: list[views.DealCard] = field(default_factory=list)
    more_rows: bool = False
    offset: int = 0

    @property
    def moves(self) -> list[tuple[str, str]]:
        return [(str(stage.id), stage.name) for stage in self.pipeline.stages]

    @property
    def lost_stage_ids(self) -> set[str]:
        return {str(stage.id) for stage in self.pipeline.stages if stage.status == "lost"}

    @property
    def board_params(self) -> dict[str, str]:
        """The query a card's own URLs carry, so its answers are this board's (pipeline and filters)."""
        return self.state.params(pipeline=str(self.pipeline.id), view="", sort="", dir="")

    @functools.cached_property
    def card_urls(self) -> CardUrls:
        return CardUrls.build(self.board_params)

    @property
    def live_card_url(self) -> str:
        """Where desk.js asks for a card it does not show yet (a deal created or changed elsewhere): the
        board's query and ``new=1`` (204 when the deal is not on this board), ``_ANY_ID`` standing for the
        deal's id."""
        return url_for("crm_pages.deal_card", deal_id=_ANY_ID, new="1", **self.board_params)

    @property
    def live_heads_url(self) -> str:
        """The column heads and totals under this board's query (a live change to a card not loaded)."""
        return url_for("crm_pages.deals_heads", **self.board_params)

    @property
    def live_id(self) -> str:
        return str(_ANY_ID)

    @property
    def live_row_url(self) -> str:
        """Where the list view asks for a deal's row after a live change (``_ANY_ID`` standing for the
        deal's id; desk.js adds ``new=1`` for a deal the list does not show): the list's filters."""
        return url_for("crm_pages.deal_row", deal_id=_ANY_ID, **self.board_params)

    @property
    def view_url(self) -> str:
        """The view pane as it is (filters, order, page): what the list view fetches again when a live
        change adds a deal to it or takes one out."""
        return url_for(
            "crm_pages.deals_page",
            **self.state.params(),
            **({"offset": str(self.offset)} if self.offset else {}),
        )

    @functools.cached_property
    def words(self) -> CardWords:
        return CardWords.build()


# A stand-in deal id: a card's URLs are built once per board and the id put in per card (url_for for each
# of 300 cards was a tenth of the board's time).
_ANY_ID = uuid.UUID(int=0)


@dataclass(frozen=True)
class CardUrls:
    move: tuple[str, str]
    refresh: tuple[str, str]
    open: tuple[str, str]

    @classmethod
    def build(cls, params: dict[str, str]) -> CardUrls:
        def split(url: str) -> tuple[str, str]:
            before, _sep, after = url.partition(str(_ANY_ID))
            return before, after

        return cls(
            split(url_for("crm_pages.deal_move", deal_id=_ANY_ID, **params)),
            split(url_for("crm_pages.deal_card", deal_id=_ANY_ID, **params)),
            split(url_for("crm_pages.deal", deal_id=_ANY_ID)),
        )

    def of(self, deal_id: uuid.UUID) -> tuple[str, str, str]:
        """(move, refresh, open) URLs of one card."""
        key = str(deal_id)
        return tuple(before + key + after for before, after in (self.move, self.refresh, self.open))  # type: ignore[return-value]


@dataclass(frozen=True)
class CardWords:
    """The words every card repeats, translated once per board (a card would look each up again)."""

    owner: str
    no_owner: str
    contact: str
    rotting: str
    rotting_title: str
    in_stage: str
    in_stage_since: str

    @classmethod
    def build(cls) -> CardWords:
        return cls(
            owner=_("Owner"),
            no_owner=_("No owner"),
            contact=_("Contact"),
            rotting=_("Rotting"),
            # still holding their placeholders: formatted per card (Jinja's ``format`` filter)
            rotting_title=formats.gettext("In this stage longer than %(days)s days"),
            in_stage=formats.gettext("%(time)s in stage"),
            in_stage_since=formats.gettext("In this stage since %(when)s"),
        )


def _owners(me: DeskUser) -> list[tuple[str, str]]:
    members = list_members(me.organization_id, skip=0, take=OWNERS_SHOWN)
    return sorted(((m.id, m.name) for m in members if not m.ai), key=lambda pair: pair[1].lower())


def _board(me: DeskUser, state: BoardState, offset: int = 0) -> BoardView:
    pipeline, pipelines = _pipeline(me, state.pipeline)
    filtered = _filters(me, state)
    summary = pipeline_service.pipeline_summary(
        me.organization_id, pipeline.id, filtered.where, pipeline=pipeline
    )
    view = BoardView(me, state, pipeline, pipelines, summary, filtered.errors, _owners(me), offset=offset)
    if state.view == "list":
        view.rows, view.more_rows = views.deal_rows(
            me.organization_id,
            pipeline,
            filtered.where,
            state.sort,
            state.dir == "desc",
            offset,
            LIST_PAGE,
        )
    else:
        pages_by_stage = views.board_columns(me.organization_id, pipeline, filtered.where, PER_COLUMN)
        totals = {total.stage.id: total for total in summary.stages}
        view.columns = [
            Column(stage, totals[stage.id], pages_by_stage[stage.id]) for stage in pipeline.stages
        ]
    return view


def _render(template: str, **context: Any) -> str:
    context.setdefault("me", signed_in())
    return render_template(template, labels=_labels(), statuses=_status_labels(), **context)


def _status_labels() -> dict[str, str]:
    # context "deal": a deal is "abierto", a conversation "abierta"
    return {
        "open": pgettext("deal", "Open"),
        "won": pgettext("deal", "Won"),
        "lost": pgettext("deal", "Lost"),
    }


@pages.get("/deals")
def deals_page() -> Response:
    """The board (or the list): the whole page, or the view pane for an htmx request from the filters."""
    me = signed_in()
    state = BoardState.from_args(request.args)
    offset = max(
        int(request.args.get("offset", "0") or 0) if request.args.get("offset", "").isdigit() else 0, 0
    )
    board = _board(me, state, offset)
    if request.headers.get("HX-Request") == "true" and request.headers.get("HX-Target") == "deals-view":
        return vary_fragment(make_response(_render("crm/deals/_view.html", board=board)))
    return vary_fragment(make_response(_render("crm/deals/page.html", board=board, active_page="deals")))


@pages.get("/deals/column")
def deals_column() -> Response:
    """The next cards of one column (its end scrolled into view): the cards and a new "more" sentinel."""
    me = signed_in()
    state = BoardState.from_args(request.args)
    pipeline, _pipelines = _pipeline(me, state.pipeline)
    stage_id = _uuid(request.args.get("stage"))
    stage = next((s for s in pipeline.stages if s.id == stage_id), None)
    if stage is None:
        abort(400)  # asked without a stage of this board's pipeline (the board itself always names one)
    filtered = _filters(me, state)
    page = views.column_cards(
        me.organization_id, pipeline, stage.id, filtered.where, request.args.get("after"), PER_COLUMN
    )
    board = BoardView(me, state, pipeline, [], _no_summary(pipeline), filtered.errors, [])
    html = _render("crm/deals/_cards.html", board=board, stage=stage, page=page)
    return vary_fragment(make_response(html))


def _no_summary(pipeline: Pipeline) -> PipelineTotals:
    # the fragments that show no figures (more cards) do not compute the summary
    return PipelineTotals(pipeline.id, "", Decimal(0), Decimal(0), 0, 0, True, [], [], [])


def _card_response(
    me: DeskUser,
    deal_id: uuid.UUID,
    *,
    status: int = 200,
    only_shown: bool = False,
    template: str = "crm/deals/_card_answer.html",
) -> Response:
    """The deal's card as this board shows it (with the column heads and totals out of band), or an empty
    answer when the deal is not on this board any more (deleted, another pipeline, filtered out).
    ``only_shown`` (a card the board does not show yet): 204 and nothing read further when it is not on
    this board either, so the heads it did not change are not computed again. ``template``: the list
    view's row answer instead (the row and the totals)."""
    state = BoardState.from_args(request.args)
    pipeline, _pipelines = _pipeline(me, state.pipeline)
    filtered = _filters(me, state)
    card = views.deal_card(me.organization_id, deal_id, pipeline, filtered.where)
    if card is None and only_shown:
        return vary_fragment(make_response("", 204))
    summary = pipeline_service.pipeline_summary(
        me.organization_id, pipeline.id, filtered.where, pipeline=pipeline
    )
    board = BoardView(me, state, pipeline, [], summary, filtered.errors, [])
    html = _render(template, board=board, card=card)
    response = make_response(html, status)
    return vary_fragment(response)


@pages.get("/deals/<uuid:deal_id>/card")
@_deal_404
def deal_card(deal_id: uuid.UUID) -> Response:
    """The card for a live update: of a card the board shows (``data-refresh-url``), or with ``new=1`` of
    a deal it does not show yet (created, or now matching the filters), answered only when it belongs on
    the board (204 otherwise). A deal deleted elsewhere is no longer on any board (an empty card with the
    heads, or 204); another organization's is the designed 404."""
    me = signed_in()
    _organizations_deal(me, deal_id)
    return _card_response(me, deal_id, only_shown=request.args.get("new") == "1")


@pages.get("/deals/<uuid:deal_id>/row")
@_deal_404
def deal_row(deal_id: uuid.UUID) -> Response:
    """The deal's row for an open list view following a live change (``data-row-url`` with the list's
    filters): the row and the totals out of band, or the totals alone when the deal has left the list
    (deleted, another pipeline, filtered out). With ``new=1``, for a deal the list does not show: 204
    when it is not in the list either (desk.js fetches the list again otherwise, to put it in its place
    in the list's order and pages). Another organization's deal is the designed 404."""
    me = signed_in()
    _organizations_deal(me, deal_id)
    return _card_response(
        me, deal_id, only_shown=request.args.get("new") == "1", template="crm/deals/_row_answer.html"
    )


def _organizations_deal(me: DeskUser, deal_id: uuid.UUID) -> Deal:
    """The organization's deal, deleted or not (a live update asks about a deal deleted meanwhile);
    another organization's, or none, is the 404."""
    deal = find_for_org(Deal, deal_id, me.organization_id)
    if deal is None:
        abort(404)
    return deal


@pages.get("/deals/<uuid:deal_id>/live")
def deal_live(deal_id: uuid.UUID) -> Response:
    """The deal's sheet as it is now, for an open drawer or deal page following changes made elsewhere
    (``static/desk.js`` swaps its sections by id; ``as_page=1``: the page's heading levels). A deal
    deleted meanwhile answers 204, which the sheet shows as deleted; another organization's is the 404."""
    me = signed_in()
    if _organizations_deal(me, deal_id).deleted_at is not None:
        return vary_fragment(make_response("", 204))
    return _sheet(_drawer(me, deal_id), "crm/deals/_drawer.html")


@pages.get("/deals/heads")
def deals_heads() -> Response:
    """Every column head and the totals under the board's query, out of band: what a live change to a
    deal whose card is not loaded (or was deleted) changes on an open board."""
    me = signed_in()
    state = BoardState.from_args(request.args)
    pipeline, _pipelines = _pipeline(me, state.pipeline)
    filtered = _filters(me, state)
    summary = pipeline_service.pipeline_summary(
        me.organization_id, pipeline.id, filtered.where, pipeline=pipeline
    )
    board = BoardView(me, state, pipeline, [], summary, filtered.errors, [])
    return vary_fragment(make_response(_render("crm/deals/_card_answer.html", board=board, card=None)))


@pages.post("/deals/<uuid:deal_id>/move")
@_deal_404
def deal_move(deal_id: uuid.UUID) -> Response:
    """A card dropped on a column or moved through its menu: the stage-move verb (won and lost stages set
    the status; the reason a lost deal was lost goes with it). A refusal answers the alert (desk.js puts
    the card back)."""
    me = signed_in()
    deal_service.get_deal(me.organization_id, deal_id)  # the deal is the organization's before anything else
    stage_id = _uuid(request.form.get("to"))
    if stage_id is None:
        return alert(_("Choose a stage of the deal's pipeline."))
    reason = (request.form.get("reason") or "").strip() or None
    deal_service.change_stage(me.organization_id, deal_id, stage_id, actor=_actor(me), lost_reason=reason)
    return _card_response(me, deal_id)


# ---- the list view's export --------------------------------------------------------------------------------


@pages.get("/deals.csv")
def deals_csv() -> Response:
    """The list view's deals (same filters and order) as CSV: amounts as exact decimals with their
    currency, dates in the organization's zone."""
    me = signed_in()
    state = BoardState.from_args(request.args)
    pipeline, _pipelines = _pipeline(me, state.pipeline)
    filtered = _filters(me, state)
    rows, _more = views.deal_rows(
        me.organization_id, pipeline, filtered.where, state.sort, state.dir == "desc", 0, CSV_LIMIT
    )
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            _("Reference"),
            _("Deal"),
            _("Amount"),
            _("Currency"),
            _("Stage"),
            _("Status"),
            _("Owner"),
            _("Contact"),
            _("Created"),
            _("Expected close"),
        ]
    )
    for row in rows:
        deal = row.deal
        writer.writerow(
            [
                deal.reference,
                _csv_text(deal.name),
                f"{deal.amount:f}",
                deal.currency,
                _csv_text(row.stage.name),
                deal.status,
                _csv_text(row.owner_name or ""),
                _csv_text(row.contact_name or ""),
                formats.format_datetime(deal.created_at, "yyyy-MM-dd HH:mm"),
                as_utc(deal.expected_close_date).date().isoformat() if deal.expected_close_date else "",
            ]
        )
    response = make_response(out.getvalue())
    response.headers["Content-Type"] = "text/csv; charset=utf-8"
    filename = f"deals-{pipeline.key.lower()}-{utcnow():%Y%m%d}.csv"
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    response.headers["Cache-Control"] = "no-store"
    return response


def _csv_text(value: str) -> str:
    # A cell a spreadsheet would run as a formula (=, +, -, @ first) is kept as text.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


# ---- new deal ----------------------------------------------------------------------------------------------

NEW_DEAL_FIELDS = {
    "name": "name",
    "amount": "amount",
    "currency": "currency",
    "stage_id": "stage",
    "pipeline_id": "stage",
    "owner_id": "owner",
    "expected_close_date": "expected_close_date",
    "contacts": "contact",
}


def _new_form(
    me: DeskUser, state: BoardState, values: dict[str, str], errors: dict[str, str], status: int
) -> Response:
    pipeline, pipelines = _pipeline(me, state.pipeline)
    board = BoardView(me, state, pipeline, pipelines, _no_summary(pipeline), {}, _owners(me))
    html = _render(
        "crm/deals/_new_form.html",
        board=board,
        values=values,
        errors=errors,
        currencies=CURRENCIES,
        base_currency=pipeline_service.get_settings(me.organization_id).base_currency,
    )
    return vary_fragment(make_response(html, status))


@pages.get("/deals/new")
def deal_new_form() -> Response:
    """The "new deal" form, in the drawer over the board (the board's pipeline; the agent as owner)."""
    me = signed_in()
    return _new_form(me, BoardState.from_args(request.args), {}, {}, 200)


@pages.post("/deals/new")
def deal_create() -> Response:
    """A refused field answers the form with its message (422); a new deal answers its sheet in the
    drawer, the board's view again out of band (the new card in its column) and a success alert."""
    me = signed_in()
    state = BoardState.from_args(request.args)
    pipeline, _pipelines = _pipeline(me, state.pipeline)
    values = {
        name: (request.form.get(name) or "").strip()
        for name in ("name", "amount", "currency", "stage", "owner", "expected_close_date", "contact")
    }
    contact_id = _uuid(values["contact"])
    try:
        draft = parse(
            DealDraft,
            {
                "name": values["name"],
                "pipeline_id": pipeline.id,
                "stage_id": values["stage"] or None,
                "amount": values["amount"] or None,
                "currency": values["currency"] or None,
                "owner_id": values["owner"] or None,
                "expected_close_date": values["expected_close_date"] or None,
                "contacts": (DealContactDraft(contact_id, is_primary=True),) if contact_id else (),
            },
        )
        created = deal_service.create_deal(me.organization_id, draft, actor=_actor(me))
    except ApiError as refusal:
        errors = form_errors(refusal, NEW_DEAL_FIELDS)
        if not errors:
            raise
        uow.rollback()
        return _new_form(me, state, values, errors, 422)
    view = _drawer(me, created.id)
    html = _render(
        "crm/deals/_created.html",
        view=view,
        board=_board(me, state),
        message=_("Deal %(reference)s created.", reference=created.reference),
        **_drawer_parts(view),
    )
    return vary_fragment(make_response(html))


# ---- the drawer --------------------------------------------------------------------------------------------


@dataclass
class DrawerView:
    me: DeskUser
    deal: Deal
    stage: Stage
    pipeline: Pipeline
    stages: list[Stage]
    owners: list[tuple[str, str]]
    contacts: dict[uuid.UUID, str]
    errors: dict[str, str] = field(default_factory=dict)
    item_errors: dict[str, dict[str, str]] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    section: str = ""

    @property
    def has_items(self) -> bool:
        return bool(self.deal.line_items)

    @property
    def primary_contact_id(self) -> uuid.UUID | None:
        primary = next((link for link in self.deal.contacts if link.is_primary), None)
        return primary.contact_id if primary else None

    @functools.cached_property
    def item_urls(self) -> ItemUrls:
        return ItemUrls.build(self.deal.id)

    @functools.cached_property
    def item_words(self) -> ItemWords:
        return ItemWords.build()


@dataclass(frozen=True)
class ItemUrls:
    """A line item's URLs (change, remove, move), made once per render with a stand-in item id, which each
    row replaces by its own (``url_for`` five times per row was a fifth of the line items' rendering)."""

    update: tuple[str, str]
    delete: tuple[str, str]
    position: tuple[str, str]

    @classmethod
    def build(cls, deal_id: uuid.UUID) -> ItemUrls:
        def split(endpoint: str) -> tuple[str, str]:
            before, _sep, after = url_for(endpoint, deal_id=deal_id, item_id=_ANY_ID).partition(str(_ANY_ID))
            return before, after

        return cls(
            split("crm_pages.deal_item_update"),
            split("crm_pages.deal_item_delete"),
            split("crm_pages.deal_item_position"),
        )

    def of(self, item_id: uuid.UUID) -> tuple[str, str, str]:
        """(update, delete, position) URLs of one line item."""
        key = str(item_id)
        return tuple(before + key + after for before, after in (self.update, self.delete, self.position))  # type: ignore[return-value]


@dataclass(frozen=True)
class ItemWords:
    """The words every line-item row repeats, translated once per render (about seventeen per row)."""

    product: str
    quantity: str
    unit_price: str
    discount: str
    sku: str
    drag: str
    move_up: str
    move_down: str
    remove: str
    # still holding their placeholders: formatted per row (Jinja's ``format`` filter, then escaped)
    line_of: str
    move_name_up: str
    move_name_down: str
    remove_name: str

    @classmethod
    def build(cls) -> ItemWords:
        return cls(
            product=_("Product"),
            quantity=_("Quantity"),
            unit_price=_("Unit price"),
            discount=_("Discount"),
            sku=_("SKU"),
            drag=_("Drag to reorder"),
            move_up=_("Move up"),
            move_down=_("Move down"),
            remove=_("Remove"),
            line_of=formats.gettext("Line %(place)s of %(count)s"),
            move_name_up=formats.gettext("Move %(name)s up"),
            move_name_down=formats.gettext("Move %(name)s down"),
            remove_name=formats.gettext("Remove %(name)s"),
        )


def _drawer(me: DeskUser, deal_id: uuid.UUID, **extra: Any) -> DrawerView:
    """The deal with what its sheet shows; another organization's deal (or none) is the page's 404."""
    sheet = views.deal_sheet(me.organization_id, deal_id)
    if sheet is None:
        abort(404)
    deal = sheet.deal
    return DrawerView(
        me, deal, deal.stage, deal.pipeline, sheet.stages, _owners(me), sheet.contact_names, **extra
    )


def _drawer_parts(view: DrawerView) -> dict[str, Any]:
    """What the sheet's sections read besides the deal: tasks, timeline, stage times, the choices."""
    org = view.me.organization_id
    times = deal_service.stage_times(org, view.deal.id, deal=view.deal, stages=view.stages)
    longest = max((t.duration_ms for t in times.stages), default=0)
    choices = views.sheet_choices(org, CHOICES_SHOWN)
    return {
        "tasks": views.deal_tasks(org, view.deal.id, 50),
        "activities": deal_service.list_activities(org, view.deal.id, deal=view.deal, limit=100),
        "stage_times": times.stages,
        "longest": longest,
        "products": choices.products,
        "accounts": choices.accounts,
        "contact_choices": choices.contacts,
        "currencies": CURRENCIES,
    }


SHEETS = ("crm/deals/_drawer.html", "crm/deals/deal_page.html")


def _sheet(view: DrawerView, template: str, status: int = 200) -> Response:
    """The whole sheet (drawer or page), or one of its sections after a change (``standalone``: the
    section also updates the headline's amount out of band)."""
    html = _render(template, view=view, standalone=template not in SHEETS, **_drawer_parts(view))
    return vary_fragment(make_response(html, status))


@pages.get("/deals/<uuid:deal_id>")
@_deal_404
def deal(deal_id: uuid.UUID) -> Response:
    """The deal's sheet inside the board's drawer (htmx), or its own page (a link, a reload)."""
    me = signed_in()
    view = _drawer(me, deal_id)
    if request.headers.get("HX-Request") == "true":
        return _sheet(view, "crm/deals/_drawer.html")
    return _sheet(view, "crm/deals/deal_page.html")


# The drawer's fields by the wire names a refusal's ``param`` carries.
DETAIL_FIELDS = {
    "name": "name",
    "amount": "amount",
    "currency": "currency",
    "owner_id": "owner",
    "account_id": "account",
    "expected_close_date": "expected_close_date",
    "stage_id": "stage",
    "lost_reason": "lost_reason",
    "status": "status",
    "contacts": "contacts",
}
EDITABLE = ("name", "amount", "currency", "owner", "account", "expected_close_date", "status")


def _refused_section(
    me: DeskUser,
    deal_id: uuid.UUID,
    refusal: ApiError,
    fields_map: Mapping[str, str],
    template: str,
    **extra: Any,
) -> Response:
    errors = form_errors(refusal, fields_map)
    if not errors:
        raise refusal
    uow.rollback()
    view = _drawer(me, deal_id, errors=errors, **extra)
    return _sheet(view, template, 422)


@pages.post("/deals/<uuid:deal_id>/edit/<name>")
@_deal_404
def deal_edit(deal_id: uuid.UUID, name: str) -> Response:
    """One field changed in place (``value``): the deal verb, then the details section again (its message
    under the field when refused)."""
    me = signed_in()
    if name not in EDITABLE:
        abort(404)
    value = (request.form.get("value") or "").strip()
    wire = {"owner": "owner_id", "account": "account_id"}.get(name, name)
    try:
        changes = parse(DealChanges, {wire: value or None})
        deal_service.update_deal(me.organization_id, deal_id, changes, actor=_actor(me))
    except ApiError as refusal:
        return _refused_section(
            me, deal_id, refusal, DETAIL_FIELDS, "crm/deals/_details.html", values={name: value}
        )
    return _sheet(_drawer(me, deal_id), "crm/deals/_details.html")


@pages.post("/deals/<uuid:deal_id>/stage")
@_deal_404
def deal_stage(deal_id: uuid.UUID) -> Response:
    """The sheet's stage select: the same move as the board's (a lost stage asks why)."""
    me = signed_in()
    stage_id = _uuid(request.form.get("stage"))
    reason = (request.form.get("lost_reason") or "").strip()
    values = {"stage": request.form.get("stage") or "", "lost_reason": reason}
    try:
        if stage_id is None:
            raise Refusal(400, "stage_id", code="value_not_an_id", param="stage_id")
        view = _drawer(me, deal_id)
        target = next((s for s in view.stages if s.id == stage_id), None)
        if target is not None and target.status == "lost" and not reason:
            # The desk asks why every lost deal was lost (the board's move asks it too).
            raise Refusal(400, "lost_reason", code="value_required", param="lost_reason")
        deal_service.change_stage(
            me.organization_id, deal_id, stage_id, actor=_actor(me), lost_reason=reason or None
        )
    except ApiError as refusal:
        return _refused_section(me, deal_id, refusal, DETAIL_FIELDS, "crm/deals/_details.html", values=values)
    return _sheet(_drawer(me, deal_id), "crm/deals/_details.html")


# ---- contacts of the deal ----------------------------------------------------------------------------------


def _contacts_after(deal: Deal, change: Callable[[list[DealContactDraft]], list[DealContactDraft]]) -> Any:
    current = [DealContactDraft(link.contact_id, link.role, link.is_primary) for link in deal.contacts]
    return tuple(change(current))


@pages.post("/deals/<uuid:deal_id>/contacts")
@_deal_404
def deal_contacts(deal_id: uuid.UUID) -> Response:
    """Add a contact (``add``), remove one (``remove``) or make one the primary (``primary``): the deal
    verb with the whole new list, as the API's PATCH replaces it."""
    me = signed_in()
    view = _drawer(me, deal_id)
    add, remove, primary = (_uuid(request.form.get(key)) for key in ("add", "remove", "primary"))

    def change(current: list[DealContactDraft]) -> list[DealContactDraft]:
        if remove is not None:
            current = [c for c in current if c.contact_id != remove]
        if add is not None and all(c.contact_id != add for c in current):
            current.append(DealContactDraft(add, None, not current))
        if primary is not None:
            current = [replace(c, is_primary=c.contact_id == primary) for c in current]
        return current

    try:
        deal_service.update_deal(
            me.organization_id,
            deal_id,
            parse(DealChanges, {"contacts": _contacts_after(view.deal, change)}),
            actor=_actor(me),
        )
    except ApiError as refusal:
        return _refused_section(me, deal_id, refusal, {"contacts": "contacts"}, "crm/deals/_contacts.html")
    return _sheet(_drawer(me, deal_id), "crm/deals/_contacts.html")


# ---- line items --------------------------------------------------------------------------------------------

ITEM_FIELDS = {
    "name": "name",
    "quantity": "quantity",
    "unit_price": "unit_price",
    "discount": "discount",
    "product_id": "product",
    "currency": "unit_price",
    "position": "position",
}


def _item_values() -> dict[str, str]:
    return {
        name: (request.form.get(name) or "").strip()
        for name in ("product", "name", "quantity", "unit_price", "discount")
    }


def _items_refused(
    me: DeskUser, deal_id: uuid.UUID, key: str, refusal: ApiError, values: dict[str, str]
) -> Response:
    errors = form_errors(refusal, ITEM_FIELDS)
    if not errors:
        raise refusal
    uow.rollback()
    view = _drawer(me, deal_id, item_errors={key: errors}, values=values)
    return _sheet(view, "crm/deals/_items.html", 422)


@pages.post("/deals/<uuid:deal_id>/items")
@_deal_404
def deal_item_add(deal_id: uuid.UUID) -> Response:
    """A line item added: from a catalogue product (its name, SKU and, in the deal's currency, its price
    unless typed) or typed by hand. The answer is the items with the amount the verb computed."""
    me = signed_in()
    values = _item_values()
    product_id = _uuid(values["product"])
    data: dict[str, Any] = {
        "name": values["name"] or None,
        "quantity": values["quantity"] or "1",
        "unit_price": values["unit_price"] or None,
        "discount": values["discount"] or "0",
        "product_id": product_id,
    }
    try:
        if product_id is not None:
            product = product_service.get_product(me.organization_id, product_id)
            deal = deal_service.get_deal(me.organization_id, deal_id)
            data["name"] = data["name"] or product.name
            data["sku"] = product.sku
            if data["unit_price"] is None and product.currency == deal.currency:
                data["unit_price"] = product.price
        deal_service.add_line_item(me.organization_id, deal_id, parse(LineItemDraft, data), actor=_actor(me))
    except ApiError as refusal:
        if refusal.code == "product_not_found":
            refusal = Refusal(400, refusal.message or "", code="product_unknown", param="product_id")
        return _items_refused(me, deal_id, "new", refusal, values)
    return _sheet(_drawer(me, deal_id), "crm/deals/_items.html")


@pages.post("/deals/<uuid:deal_id>/items/<uuid:item_id>")
@_deal_404
def deal_item_update(deal_id: uuid.UUID, item_id: uuid.UUID) -> Response:
    """A line item's quantity, unit price, discount or name changed in place."""
    me = signed_in()
    values = _item_values()
    sent = {key: values[key] for key in ("name", "quantity", "unit_price", "discount") if key in request.form}
    try:
        changes = parse(LineItemChanges, {key: value or None for key, value in sent.items()})
        deal_service.update_line_item(me.organization_id, deal_id, item_id, changes, actor=_actor(me))
    except ApiError as refusal:
        return _items_refused(me, deal_id, str(item_id), refusal, values)
    return _sheet(_drawer(me, deal_id), "crm/deals/_items.html")


@pages.post("/deals/<uuid:deal_id>/items/<uuid:item_id>/delete")
@_deal_404
def deal_item_delete(deal_id: uuid.UUID, item_id: uuid.UUID) -> Response:
    me = signed_in()
    deal_service.delete_line_item(me.organization_id, deal_id, item_id, actor=_actor(me))
    return _sheet(_drawer(me, deal_id), "crm/deals/_items.html")


@pages.post("/deals/<uuid:deal_id>/items/<uuid:item_id>/position")
@_deal_404
def deal_item_position(deal_id: uuid.UUID, item_id: uuid.UUID) -> Response:
    """A line item moved by its drag handle or its "Move up" / "Move down" buttons (``static/desk.js``,
    "Sortable lists"): ``position`` is its new 0-based place and the others shift (the line-item verb).
    The answer is the items in their stored order; a refused place is said by the row (422)."""
    me = signed_in()
    position = (request.form.get("position") or "").strip()
    try:
        if not position:
            raise Refusal(400, "position: Field required", code="value_required", param="position")
        changes = parse(LineItemChanges, {"position": position})
        deal_service.update_line_item(me.organization_id, deal_id, item_id, changes, actor=_actor(me))
    except ApiError as refusal:
        return _items_refused(me, deal_id, str(item_id), refusal, {})
    return _sheet(_drawer(me, deal_id), "crm/deals/_items.html")


# ---- tasks and notes ---------------------------------------------------------------------------------------

TASK_FIELDS = {"title": "title", "due_date": "due_date", "owner_id": "title"}


@pages.post("/deals/<uuid:deal_id>/tasks")
@_deal_404
def deal_task_add(deal_id: uuid.UUID) -> Response:
    """A task of the deal (the agent's), due on a day (in the organization's zone: stored at 00:00Z, as
    a date without a time)."""
    me = signed_in()
    _drawer(me, deal_id)  # the organization's deal, or 404
    values = {name: (request.form.get(name) or "").strip() for name in ("title", "due_date")}
    try:
        draft = parse(
            TaskDraft,
            {
                "title": values["title"],
                "due_date": values["due_date"] or None,
                "deal_id": deal_id,
                "owner_id": me.member_id,
            },
        )
        task_service.create_task(me.organization_id, draft)
    except ApiError as refusal:
        return _refused_section(me, deal_id, refusal, TASK_FIELDS, "crm/deals/_tasks.html", values=values)
    return _sheet(_drawer(me, deal_id), "crm/deals/_tasks.html")


@pages.post("/deals/<uuid:deal_id>/tasks/<uuid:task_id>/complete")
@_deal_404
def deal_task_complete(deal_id: uuid.UUID, task_id: uuid.UUID) -> Response:
    me = signed_in()
    _drawer(me, deal_id)
    task = task_service.get_task(me.organization_id, task_id)
    if task.deal_id != deal_id:
        abort(404)
    task_service.complete_task(me.organization_id, task_id)
    return _sheet(_drawer(me, deal_id), "crm/deals/_tasks.html")


@pages.post("/deals/<uuid:deal_id>/notes")
@_deal_404
def deal_note_add(deal_id: uuid.UUID) -> Response:
    me = signed_in()
    body = (request.form.get("body") or "").strip()
    try:
        deal_service.add_note(me.organization_id, deal_id, body, me.member_id)
    except ApiError as refusal:
        return _refused_section(
            me, deal_id, refusal, {"body": "body"}, "crm/deals/_timeline.html", values={"body": body}
        )
    return _sheet(_drawer(me, deal_id), "crm/deals/_timeline.html")


# ---- the pipelines editor (supervisors) --------------------------------------------------------------------

PIPELINE_FIELDS = {"name": "name", "key": "key", "is_default": "is_default"}
STAGE_FIELDS = {
    "name": "name",
    "probability": "probability",
    "status": "status",
    "rotting_days": "rotting_days",
    "stage_order": "name",
    "move_to_stage_id": "move_to",
}


def _editor(
    me: DeskUser,
    errors: dict[str, dict[str, str]] | None = None,
    values: dict[str, dict[str, str]] | None = None,
    status: int = 200,
) -> Response:
    pipelines = pipeline_service.list_pipelines(me.organization_id)
    counts: dict[uuid.UUID, int] = {}
    for pipeline in pipelines:
        summary = pipeline_service.pipeline_summary(me.organization_id, pipeline.id, pipeline=pipeline)
        counts.update({total.stage.id: total.deal_count for total in summary.stages})
    context = {"pipelines": pipelines, "counts": counts, "errors": errors or {}, "values": values or {}}
    if request.headers.get("HX-Request") == "true":
        html = _render("crm/deals/_pipelines.html", **context)
    else:
        html = _render("crm/deals/pipelines_page.html", active_page="deals", **context)
    return vary_fragment(make_response(html, status))


def _editor_refused(
    me: DeskUser, key: str, refusal: ApiError, fields_map: Mapping[str, str], values: dict[str, str]
) -> Response:
    if refusal.status == 404:
        raise refusal  # another organization's pipeline or stage (or none): the desk's 404, never a form
    found = form_errors(refusal, fields_map)
    if not found:
        message = message_for(refusal) or refusal_message(refusal)
        found = {"_": message}
    uow.rollback()
    return _editor(me, {key: found}, {key: values}, 422)


@pages.get("/deals/pipelines")
@require_role("supervisor")
def pipelines_page() -> Response:
    return _editor(signed_in())


@pages.post("/deals/pipelines")
@require_role("supervisor")
def pipeline_create() -> Response:
    me = signed_in()
    values = {name: (request.form.get(name) or "").strip() for name in ("name", "key")}
    try:
        pipeline_service.create_pipeline(me.organization_id, parse(PipelineDraft, values))
    except ApiError as refusal:
        return _editor_refused(me, "new-pipeline", refusal, PIPELINE_FIELDS, values)
    return _editor(me)


@pages.post("/deals/pipelines/<uuid:pipeline_id>")
@require_role("supervisor")
def pipeline_update(pipeline_id: uuid.UUID) -> Response:
    me = signed_in()
    values = {name: (request.form.get(name) or "").strip() for name in ("name", "key")}
    data: dict[str, Any] = {key: value for key, value in values.items() if value}
    if request.form.get("is_default"):
        data["is_default"] = True
    try:
        pipeline_service.update_pipeline(me.organization_id, pipeline_id, parse(PipelineChanges, data))
    except ApiError as refusal:
        return _editor_refused(me, str(pipeline_id), refusal, PIPELINE_FIELDS, values)
    return _editor(me)


@pages.post("/deals/pipelines/<uuid:pipeline_id>/delete")
@require_role("supervisor")
def pipeline_delete(pipeline_id: uuid.UUID) -> Response:
    me = signed_in()
    try:
        pipeline_service.delete_pipeline(me.organization_id, pipeline_id)
    except ApiError as refusal:
        return _editor_refused(me, str(pipeline_id), refusal, PIPELINE_FIELDS, {})
    return _editor(me)


def _stage_values() -> dict[str, str]:
    return {
        name: (request.form.get(name) or "").strip()
        for name in ("name", "probability", "status", "rotting_days", "stage_order")
    }


@pages.post("/deals/pipelines/<uuid:pipeline_id>/stages")
@require_role("supervisor")
def stage_create(pipeline_id: uuid.UUID) -> Response:
    me = signed_in()
    pipeline_service.pipeline_for_update(me.organization_id, pipeline_id)  # the organization's, else 404
    values = _stage_values()
    key = f"new-stage-{pipeline_id}"
    try:
        draft = parse(
            StageDraft,
            {
                "name": values["name"],
                "stage_order": values["stage_order"] or 10_000,  # past the end appends
                "probability": values["probability"] or None,
                "status": values["status"] or "open",
                "rotting_days": values["rotting_days"] or None,
            },
        )
        pipeline_service.create_stage(me.organization_id, pipeline_id, draft)
    except ApiError as refusal:
        return _editor_refused(me, key, refusal, STAGE_FIELDS, values)
    return _editor(me)


@pages.post("/deals/stages/<uuid:stage_id>")
@require_role("supervisor")
def stage_update(stage_id: uuid.UUID) -> Response:
    """A stage's name, probability, status and rotting limit (empty: none), or its place (``stage_order``
    from the up/down buttons)."""
    me = signed_in()
    pipeline_service.get_stage(me.organization_id, stage_id)  # the organization's stage, else the 404
    values = _stage_values()
    data: dict[str, Any] = {}
    if "stage_order" in request.form:
        data["stage_order"] = values["stage_order"]
    else:
        data = {
            "name": values["name"],
            "probability": values["probability"] or None,
            "status": values["status"] or None,
            "rotting_days": values["rotting_days"] or None,
        }
    try:
        pipeline_service.update_stage(me.organization_id, stage_id, parse(StageChanges, data))
    except ApiError as refusal:
        return _editor_refused(me, str(stage_id), refusal, STAGE_FIELDS, values)
    return _editor(me)


@pages.post("/deals/stages/<uuid:stage_id>/delete")
@require_role("supervisor")
def stage_delete(stage_id: uuid.UUID) -> Response:
    """Delete a stage; its deals move to ``move_to`` first (the editor asks where when it holds any)."""
    me = signed_in()
    move_to = _uuid(request.form.get("move_to"))
    try:
        deal_service.delete_stage(me.organization_id, stage_id, move_to)
    except ApiError as refusal:
        return _editor_refused(
            me, str(stage_id), refusal, STAGE_FIELDS, {"move_to": request.form.get("move_to") or ""}
        )
    return _editor(me)


# ---- template helpers --------------------------------------------------------------------------------------


@pages.app_template_filter("deal_in_stage")
def deal_in_stage(since: datetime) -> str:
    """How long a deal has been in its stage, narrow ("3d", "5h"): a card has little room. Rounded to the
    unit shown (minutes, hours, then days) so a board's 300 cards share a few dozen formatted values."""
    seconds = max((utcnow() - as_utc(since)).total_seconds(), 0)
    unit = 86400 if seconds >= 86400 else 3600 if seconds >= 3600 else 60
    # at least a minute: a card moved a moment ago reads "1m", not "0m"
    return _narrow_timedelta(str(_locale()), max(round(seconds / unit), 1) * unit)


@functools.lru_cache(maxsize=2048)
def _narrow_timedelta(locale: str, seconds: int) -> str:
    return format_timedelta(
        timedelta(seconds=seconds), threshold=1.0, granularity="minute", format="narrow", locale=locale
    )


@pages.app_template_filter("deal_duration")
def deal_duration(milliseconds: int) -> str:
    page = formats.page_formats()
    locale: Any = page.locale if page is not None else "en_US"
    return format_timedelta(
        timedelta(milliseconds=milliseconds), threshold=1.0, granularity="minute", locale=locale
    )


@pages.app_template_filter("deal_date")
def deal_date(value: datetime) -> str:
    """A calendar date stored at 00:00Z (a deal's expected close): the day as given, never shifted."""
    return format_date(as_utc(value).date(), "medium")


@pages.app_template_filter("deal_amount")
def deal_amount(amount: Decimal, currency: str) -> str:
    """An amount in a currency, as the page's language writes money (Babel with the request's locale,
    resolved once: Flask-Babel's ``format_currency`` resolves it again for each of a board's cards)."""
    return _money(str(_locale()), currency, str(amount))


@functools.lru_cache(maxsize=4096)
def _money(locale: str, currency: str, amount: str) -> str:
    """Babel's text for an amount, kept per locale, currency and the amount's exact text (Babel reads a
    number through its text too): one takes Babel about 35 µs, and a deal's sheet shows up to 200
    product prices, a board 300 cards, mostly the same amounts from one request to the next."""
    return babel_currency(Decimal(amount), currency, locale=locale)


def _locale() -> Any:
    page = formats.page_formats()
    return page.locale if page is not None else "en_US"


@pages.app_template_filter("deal_number")
def deal_number(value: Decimal) -> str:
    """A quantity as the page's language writes numbers (2, 1.5)."""
    return format_decimal(value.normalize() if value == value.to_integral() else value)


@pages.app_template_filter("deal_input")
def deal_input(value: Decimal | None) -> str:
    """A decimal for an input's value: plain digits and a dot (what the verbs read), no exponent."""
    if value is None:
        return ""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
