"""CRM routes under ``/v1/crm/organizations/<organization_id>``: thin views over the services.

Authentication: ``X-API-Key`` or ``Authorization: Bearer <JWT>`` (the only area that takes a JWT).
"""

from __future__ import annotations

from typing import Any, TypeVar

from flask_openapi3 import Tag
from pydantic import BaseModel

from blueprints.crm.drafts import (
    AccountChanges,
    AccountDraft,
    ContactChanges,
    ContactDraft,
    DealChanges,
    DealDraft,
    LineItemChanges,
    LineItemDraft,
    NamedChanges,
    NamedDraft,
    PipelineChanges,
    PipelineDraft,
    ProductChanges,
    ProductDraft,
    StageChanges,
    StageDraft,
    TaskChanges,
    TaskDraft,
    TicketChanges,
    TicketDraft,
    parse,
)
from blueprints.crm.rules import Refusal
from blueprints.crm.schemas import (
    AccountContactBody,
    AccountContactPath,
    AccountCreate,
    AccountList,
    AccountListQuery,
    AccountOut,
    AccountUpdate,
    ActivityList,
    ActivityOut,
    BaseCurrencyBody,
    ContactCreate,
    ContactIdentityPath,
    ContactListQuery,
    ContactUpdate,
    CrmContactList,
    CrmContactOut,
    CurrencyOut,
    DealConversationBody,
    DealConversationOut,
    DealCreate,
    DealItemPath,
    DealLinkPath,
    DealList,
    DealListQuery,
    DealOut,
    DealStageBody,
    DealUpdate,
    Deleted,
    IdentityIn,
    IdPath,
    LineItemCreate,
    LineItemOut,
    LineItemUpdate,
    MergeBody,
    MergeOut,
    NamedCreate,
    NamedList,
    NamedOut,
    NamedUpdate,
    NoteBody,
    OrgPath,
    PipelineCreate,
    PipelineList,
    PipelineOut,
    PipelineSummary,
    PipelineUpdate,
    ProductCreate,
    ProductDeleted,
    ProductList,
    ProductListQuery,
    ProductOut,
    ProductUpdate,
    RateBody,
    RateOut,
    RatePath,
    RefPath,
    SettingsOut,
    SettingsUpdate,
    StageCreate,
    StageDeleteQuery,
    StageOut,
    StageTimes,
    StageUpdate,
    StateHistory,
    SummaryPath,
    TaskCreate,
    TaskList,
    TaskListQuery,
    TaskOut,
    TaskUpdate,
    TicketAssignBody,
    TicketCreate,
    TicketList,
    TicketListQuery,
    TicketOut,
    TicketStateBody,
    TicketUpdate,
)
from blueprints.crm.services import contacts, deals, pipelines, products, tasks, tickets
from blueprints.crm.services.contacts import AccountFilters, ContactFilters
from blueprints.crm.services.deals import DealFilters
from blueprints.crm.services.products import ProductFilters
from blueprints.crm.services.tasks import TaskFilters
from blueprints.crm.services.tickets import TicketFilters
from core import auth
from core.openapi import API_KEY_OR_JWT, AreaAPI, CrmError, error_responses
from core.pagination import Page
from core.validation import RequestModel

PREFIX = "/v1/crm/organizations/<organization_id>"

Json = dict[str, Any]
Created = tuple[Json, int]


def _blueprint(name: str, tag: str, description: str) -> AreaAPI:
    blueprint = AreaAPI(
        f"crm_{name}",
        __name__,
        url_prefix=PREFIX,
        abp_tags=[Tag(name=tag, description=description)],
        abp_security=API_KEY_OR_JWT,
        abp_responses={**error_responses(CrmError), "409": CrmError},
    )
    auth.protect(blueprint, allow_jwt=True)
    return blueprint


pipelines_api = _blueprint("pipelines", "CRM: pipelines and currency", "Pipelines, stages, currency")
deals_api = _blueprint("deals", "CRM: deals", "Deals, line items, conversations, stage times")
tickets_api = _blueprint("tickets", "CRM: tickets", "Tickets, projects and ticket types")
tasks_api = _blueprint("tasks", "CRM: tasks", "Tasks")
contacts_api = _blueprint("contacts", "CRM: contacts and accounts", "Contacts, identities, accounts")
BLUEPRINTS = (pipelines_api, deals_api, tickets_api, tasks_api, contacts_api)


def _org() -> Any:
    return auth.current_organization_id()


def _actor() -> str:
    return auth.current_actor()


D = TypeVar("D")


def _filters(filters: type[D], query: BaseModel) -> D:
    """The service's filter dataclass from the parsed query (generated from it: the same fields)."""
    return filters(**query.model_dump())


def _draft(draft: type[D], body: RequestModel) -> D:
    """A verb's typed input from the parsed body (the same field names)."""
    return parse(draft, body.model_dump())


def _changes(changes: type[D], body: RequestModel) -> D:
    """A verb's partial update from the parsed body: the fields the client did not send stay UNSET."""
    return parse(changes, body.sent_fields())


def _page(model: type[Any], page: Page[Any], query: Any) -> Json:
    """The CRM list wrapper: ``{data, total, limit, offset}``."""
    return model.dump({"data": page.items, "total": page.total, "limit": query.limit, "offset": query.offset})


def _deleted(object_id: Any) -> Json:
    return Deleted.dump({"id": object_id, "deleted": True})


# ------------------------------------------------------------------------------------ pipelines, stages


@pipelines_api.get("/pipelines", responses={200: PipelineList})
def list_pipelines(path: OrgPath) -> Json:
    """List pipelines with their stages; an organization without any sees the default `General` (VNT)
    pipeline, persisted by the first write that needs it."""
    items = pipelines.list_pipelines(_org())
    return PipelineList.dump({"data": items, "total": len(items)})


@pipelines_api.post("/pipelines", responses={201: PipelineOut})
def create_pipeline(path: OrgPath, body: PipelineCreate) -> Created:
    """Create a pipeline (unique 2-5 letter key; 409 when taken)."""
    pipeline = pipelines.create_pipeline(_org(), _draft(PipelineDraft, body))
    return PipelineOut.dump(pipeline), 201


@pipelines_api.get("/pipelines/<id>", responses={200: PipelineOut})
def get_pipeline(path: IdPath) -> Json:
    return PipelineOut.dump(pipelines.get_pipeline(_org(), path.id))


@pipelines_api.patch("/pipelines/<id>", responses={200: PipelineOut})
def update_pipeline(path: IdPath, body: PipelineUpdate) -> Json:
    """Rename, re-key (only while it has no deals) or make default."""
    return PipelineOut.dump(pipelines.update_pipeline(_org(), path.id, _changes(PipelineChanges, body)))


@pipelines_api.delete("/pipelines/<id>", responses={200: Deleted})
def delete_pipeline(path: IdPath) -> Json:
    """Delete a pipeline; 409 while live deals use it."""
    pipelines.delete_pipeline(_org(), path.id)
    return _deleted(path.id)


@pipelines_api.post("/pipelines/<id>/stages", responses={201: StageOut})
def create_stage(path: IdPath, body: StageCreate) -> Created:
    """Insert a stage at `stage_order` (0-based); the stages at or after it shift by one."""
    return StageOut.dump(pipelines.create_stage(_org(), path.id, _draft(StageDraft, body))), 201


@pipelines_api.patch("/pipelines/stages/<id>", responses={200: StageOut})
def update_stage(path: IdPath, body: StageUpdate) -> Json:
    """Rename, change probability/status/rotting days, or reorder with `stage_order`."""
    return StageOut.dump(pipelines.update_stage(_org(), path.id, _changes(StageChanges, body)))


@pipelines_api.delete("/pipelines/stages/<id>", responses={200: Deleted})
def delete_stage(path: IdPath, query: StageDeleteQuery) -> Json:
    """Delete a stage; 409 while live deals sit in it unless `move_to_stage_id` says where they go."""
    deals.delete_stage(_org(), path.id, query.move_to_stage_id)
    return _deleted(path.id)


# ---------------------------------------------------------------------------------------------- currency


def _currency() -> Json:
    return CurrencyOut.dump(
        {
            "base_currency": pipelines.get_settings(_org()).base_currency,
            "supported_currencies": pipelines.supported_currencies(),
            "rates": pipelines.list_rates(_org()),
        }
    )


@pipelines_api.get("/currency", responses={200: CurrencyOut})
def get_currency(path: OrgPath) -> Json:
    """Base currency and the configured exchange rates."""
    return _currency()


@pipelines_api.patch("/currency/base", responses={200: CurrencyOut})
def set_base_currency(path: OrgPath, body: BaseCurrencyBody) -> Json:
    pipelines.set_base_currency(_org(), body.base_currency)
    return _currency()


@pipelines_api.post("/currency/rates", responses={200: RateOut})
def upsert_rate(path: OrgPath, body: RateBody) -> Json:
    """Create or replace the rate of a pair: 1 `from_currency` = `rate` `to_currency`."""
    return RateOut.dump(pipelines.upsert_rate(_org(), body.from_currency, body.to_currency, body.rate))


@pipelines_api.delete("/currency/rates/<from_currency>/<to_currency>", responses={200: CurrencyOut})
def delete_rate(path: RatePath) -> Json:
    pipelines.delete_rate(_org(), path.from_currency, path.to_currency)
    return _currency()


@pipelines_api.get("/currency/pipeline/<pipelineId>/summary", responses={200: PipelineSummary})
def pipeline_summary(path: SummaryPath) -> Json:
    """Per-stage totals and weighted totals in the base currency; unconvertible deals are listed."""
    return PipelineSummary.dump(pipelines.pipeline_summary(_org(), path.pipelineId))


@pipelines_api.get("/settings", responses={200: SettingsOut})
def get_settings(path: OrgPath) -> Json:
    """CRM settings of the organization: base currency, ticket reference prefix and counter."""
    return SettingsOut.dump(pipelines.get_settings(_org()))


@pipelines_api.patch("/settings", responses={200: SettingsOut})
def update_settings(path: OrgPath, body: SettingsUpdate) -> Json:
    """Change the ticket prefix (new tickets only; existing references never change)."""
    return SettingsOut.dump(pipelines.update_settings(_org(), body.ticket_prefix))


# ------------------------------------------------------------------------------------------------- deals


@deals_api.get("/deals", responses={200: DealList})
def list_deals(path: OrgPath, query: DealListQuery) -> Json:
    return _page(DealList, deals.list_deals(_org(), _filters(DealFilters, query)), query)


@deals_api.post("/deals", responses={201: DealOut})
def create_deal(path: OrgPath, body: DealCreate) -> Created:
    return DealOut.dump(deals.create_deal(_org(), _draft(DealDraft, body), actor=_actor())), 201


@deals_api.get("/deals/<id>", responses={200: DealOut})
def get_deal(path: IdPath) -> Json:
    return DealOut.dump(deals.get_deal(_org(), path.id))


@deals_api.patch("/deals/<id>", responses={200: DealOut})
def update_deal(path: IdPath, body: DealUpdate) -> Json:
    return DealOut.dump(deals.update_deal(_org(), path.id, _changes(DealChanges, body), actor=_actor()))


@deals_api.patch("/deals/<id>/stage", responses={200: DealOut})
def move_deal(path: IdPath, body: DealStageBody) -> Json:
    """Move to a stage of the deal's pipeline; a won/lost stage sets the status, an open one reopens.
    `lost_reason`, why the deal was lost, goes with a move to a lost stage and is kept in the move's
    `stage_changed` activity; with any other stage it is refused (400 naming `lost_reason`), not dropped."""
    reason = body.lost_reason
    deal = deals.change_stage(_org(), path.id, body.stage_id, actor=_actor(), lost_reason=reason)
    if reason is not None and deal.stage.status != "lost":
        # Checked once the verb has found the deal and the stage, so that its refusals come first (another
        # organization's deal is 404 whatever the body says); refusing rolls the move back with the rest
        # of the unit of work. The desk's own moves call the verb, which drops such a reason.
        raise Refusal(
            400,
            "lost_reason: only a move to a stage whose status is lost takes a reason",
            code="value_not_allowed",
            param="lost_reason",
        )
    return DealOut.dump(deal)


@deals_api.delete("/deals/<id>", responses={200: Deleted})
def delete_deal(path: IdPath) -> Json:
    """Soft delete: the deal disappears from reads and lists."""
    deals.delete_deal(_org(), path.id)
    return _deleted(path.id)


@deals_api.post("/deals/<id>/line-items", responses={201: LineItemOut})
def add_line_item(path: IdPath, body: LineItemCreate) -> Created:
    """total = quantity x unit_price - discount (>= 0, half-up); the deal amount becomes the sum."""
    return LineItemOut.dump(
        deals.add_line_item(_org(), path.id, _draft(LineItemDraft, body), actor=_actor())
    ), 201


@deals_api.patch("/deals/<id>/line-items/<itemId>", responses={200: LineItemOut})
def update_line_item(path: DealItemPath, body: LineItemUpdate) -> Json:
    item = deals.update_line_item(
        _org(), path.id, path.itemId, _changes(LineItemChanges, body), actor=_actor()
    )
    return LineItemOut.dump(item)


@deals_api.delete("/deals/<id>/line-items/<itemId>", responses={200: Deleted})
def delete_line_item(path: DealItemPath) -> Json:
    deals.delete_line_item(_org(), path.id, path.itemId, actor=_actor())
    return _deleted(path.itemId)


@deals_api.post("/deals/<id>/conversations", responses={201: DealConversationOut})
def link_conversation(path: IdPath, body: DealConversationBody) -> Created:
    """Link a conversation or call of the organization (404 otherwise); its summary is captured into the
    deal's activity timeline."""
    link = deals.link_conversation(_org(), path.id, body.conversation_id, body.channel, body.linked_by)
    return DealConversationOut.dump(link), 201


@deals_api.delete("/deals/<id>/conversations/<linkId>", responses={200: Deleted})
def unlink_conversation(path: DealLinkPath) -> Json:
    deals.unlink_conversation(_org(), path.id, path.linkId, actor=_actor())
    return _deleted(path.linkId)


@deals_api.get("/deals/<id>/stage-times", responses={200: StageTimes})
def stage_times(path: IdPath) -> Json:
    """Milliseconds spent in each stage (revisits summed; the current stay runs to now)."""
    return StageTimes.dump(deals.stage_times(_org(), path.id))


@deals_api.get("/deals/<id>/activities", responses={200: ActivityList})
def list_activities(path: IdPath) -> Json:
    """The deal's timeline, newest first: creation, stage/status/amount changes, links, notes."""
    items = deals.list_activities(_org(), path.id)
    return ActivityList.dump({"data": items, "total": len(items)})


@deals_api.post("/deals/<id>/notes", responses={201: ActivityOut})
def add_note(path: IdPath, body: NoteBody) -> Created:
    author = str(body.author_id) if body.author_id else _actor()
    return ActivityOut.dump(deals.add_note(_org(), path.id, body.body, author)), 201


# ----------------------------------------------------------------------------------------------- tickets


@tickets_api.get("/tickets", responses={200: TicketList})
def list_tickets(path: OrgPath, query: TicketListQuery) -> Json:
    return _page(TicketList, tickets.list_tickets(_org(), _filters(TicketFilters, query)), query)


@tickets_api.post("/tickets", responses={201: TicketOut})
def create_ticket(path: OrgPath, body: TicketCreate) -> Created:
    return TicketOut.dump(tickets.create_ticket(_org(), _draft(TicketDraft, body), actor=_actor())), 201


@tickets_api.get("/tickets/by-ref/<reference>", responses={200: TicketOut})
def get_ticket_by_reference(path: RefPath) -> Json:
    return TicketOut.dump(tickets.get_ticket_by_reference(_org(), path.reference))


@tickets_api.get("/tickets/<id>", responses={200: TicketOut})
def get_ticket(path: IdPath) -> Json:
    return TicketOut.dump(tickets.get_ticket(_org(), path.id))


@tickets_api.patch("/tickets/<id>", responses={200: TicketOut})
def update_ticket(path: IdPath, body: TicketUpdate) -> Json:
    return TicketOut.dump(
        tickets.update_ticket(_org(), path.id, _changes(TicketChanges, body), actor=_actor())
    )


@tickets_api.patch("/tickets/<id>/assign", responses={200: TicketOut})
def assign_ticket(path: IdPath, body: TicketAssignBody) -> Json:
    ticket = tickets.assign_ticket(_org(), path.id, body.assignee_member_id, body.assigned_by)
    return TicketOut.dump(ticket)


@tickets_api.patch("/tickets/<id>/state", responses={200: TicketOut})
def change_ticket_state(path: IdPath, body: TicketStateBody) -> Json:
    return TicketOut.dump(tickets.change_state(_org(), path.id, body.state, actor=_actor()))


@tickets_api.get("/tickets/<id>/history", responses={200: StateHistory})
def ticket_history(path: IdPath) -> Json:
    """State history, oldest first (creation is the first entry)."""
    changes = tickets.state_history(_org(), path.id)
    return StateHistory.dump({"ticket_id": path.id, "data": changes})


def _named_routes(kind: str, label: str) -> None:
    """CRUD for the small lookup resources tickets point at (projects, ticket types)."""
    endpoint = kind.replace("-", "_")

    def list_items(path: OrgPath) -> Json:
        items = tickets.list_named(_org(), kind)
        return NamedList.dump({"data": items, "total": len(items)})

    def create_item(path: OrgPath, body: NamedCreate) -> Created:
        return NamedOut.dump(tickets.create_named(_org(), kind, _draft(NamedDraft, body))), 201

    def get_item(path: IdPath) -> Json:
        return NamedOut.dump(tickets.get_named(_org(), kind, path.id))

    def update_item(path: IdPath, body: NamedUpdate) -> Json:
        return NamedOut.dump(tickets.update_named(_org(), kind, path.id, _changes(NamedChanges, body)))

    def delete_item(path: IdPath) -> Json:
        tickets.delete_named(_org(), kind, path.id)
        return _deleted(path.id)

    for view in (list_items, create_item, get_item, update_item, delete_item):
        view.__name__ = f"{view.__name__}_{endpoint}"
        view.__doc__ = f"{view.__name__.split('_')[0].capitalize()} {label}."
    tickets_api.get(f"/{kind}", responses={200: NamedList})(list_items)
    tickets_api.post(f"/{kind}", responses={201: NamedOut})(create_item)
    tickets_api.get(f"/{kind}/<id>", responses={200: NamedOut})(get_item)
    tickets_api.patch(f"/{kind}/<id>", responses={200: NamedOut})(update_item)
    tickets_api.delete(f"/{kind}/<id>", responses={200: Deleted})(delete_item)


_named_routes("projects", "projects")
_named_routes("ticket-types", "ticket types")


# ------------------------------------------------------------------------------------------------- tasks


@tasks_api.get("/tasks", responses={200: TaskList})
def list_tasks(path: OrgPath, query: TaskListQuery) -> Json:
    return _page(TaskList, tasks.list_tasks(_org(), _filters(TaskFilters, query)), query)


@tasks_api.post("/tasks", responses={201: TaskOut})
def create_task(path: OrgPath, body: TaskCreate) -> Created:
    return TaskOut.dump(tasks.create_task(_org(), _draft(TaskDraft, body))), 201


@tasks_api.get("/tasks/<id>", responses={200: TaskOut})
def get_task(path: IdPath) -> Json:
    return TaskOut.dump(tasks.get_task(_org(), path.id))


@tasks_api.patch("/tasks/<id>", responses={200: TaskOut})
def update_task(path: IdPath, body: TaskUpdate) -> Json:
    """Only the fields sent change."""
    return TaskOut.dump(tasks.update_task(_org(), path.id, _changes(TaskChanges, body)))


@tasks_api.patch("/tasks/<id>/complete", responses={200: TaskOut})
def complete_task(path: IdPath) -> Json:
    return TaskOut.dump(tasks.complete_task(_org(), path.id))


@tasks_api.delete("/tasks/<id>", responses={200: Deleted})
def delete_task(path: IdPath) -> Json:
    tasks.delete_task(_org(), path.id)
    return _deleted(path.id)


# ------------------------------------------------------------------------------------ contacts, accounts


@contacts_api.get("/contacts", responses={200: CrmContactList})
def list_contacts(path: OrgPath, query: ContactListQuery) -> Json:
    return _page(CrmContactList, contacts.list_contacts(_org(), _filters(ContactFilters, query)), query)


@contacts_api.post("/contacts", responses={201: CrmContactOut})
def create_contact(path: OrgPath, body: ContactCreate) -> Created:
    """Create a contact; phones are stored in E.164, emails lower-cased; a taken identity is 409."""
    return CrmContactOut.dump(contacts.create_contact(_org(), _draft(ContactDraft, body))), 201


@contacts_api.get("/contacts/<id>", responses={200: CrmContactOut})
def get_contact(path: IdPath) -> Json:
    return CrmContactOut.dump(contacts.get_contact(_org(), path.id))


@contacts_api.patch("/contacts/<id>", responses={200: CrmContactOut})
def update_contact(path: IdPath, body: ContactUpdate) -> Json:
    return CrmContactOut.dump(contacts.update_contact(_org(), path.id, _changes(ContactChanges, body)))


@contacts_api.delete("/contacts/<id>", responses={200: Deleted})
def delete_contact(path: IdPath) -> Json:
    contacts.delete_contact(_org(), path.id)
    return _deleted(path.id)


@contacts_api.post("/contacts/<id>/identities", responses={201: CrmContactOut})
def add_identity(path: IdPath, body: IdentityIn) -> Created:
    return CrmContactOut.dump(contacts.add_identity(_org(), path.id, body.kind, body.value)), 201


@contacts_api.delete("/contacts/<id>/identities/<identity_id>", responses={200: CrmContactOut})
def remove_identity(path: ContactIdentityPath) -> Json:
    return CrmContactOut.dump(contacts.remove_identity(_org(), path.id, path.identity_id))


@contacts_api.post("/contacts/<id>/merge", responses={200: MergeOut})
def merge_contact(path: IdPath, body: MergeBody) -> Json:
    """Merge `source_contact_id` into this contact (identities, deals, tickets, tasks, accounts and
    conversations move here); the source is deleted."""
    return MergeOut.dump(contacts.merge_contacts(_org(), path.id, body.source_contact_id))


@contacts_api.get("/accounts", responses={200: AccountList})
def list_accounts(path: OrgPath, query: AccountListQuery) -> Json:
    return _page(AccountList, contacts.list_accounts(_org(), _filters(AccountFilters, query)), query)


@contacts_api.post("/accounts", responses={201: AccountOut})
def create_account(path: OrgPath, body: AccountCreate) -> Created:
    return AccountOut.dump(contacts.create_account(_org(), _draft(AccountDraft, body))), 201


@contacts_api.get("/accounts/<id>", responses={200: AccountOut})
def get_account(path: IdPath) -> Json:
    return AccountOut.dump(contacts.get_account(_org(), path.id))


@contacts_api.patch("/accounts/<id>", responses={200: AccountOut})
def update_account(path: IdPath, body: AccountUpdate) -> Json:
    return AccountOut.dump(contacts.update_account(_org(), path.id, _changes(AccountChanges, body)))


@contacts_api.delete("/accounts/<id>", responses={200: Deleted})
def delete_account(path: IdPath) -> Json:
    contacts.delete_account(_org(), path.id)
    return _deleted(path.id)


@contacts_api.post("/accounts/<id>/contacts", responses={200: AccountOut})
def link_account_contact(path: IdPath, body: AccountContactBody) -> Json:
    """Link a contact to the account (again: updates the role)."""
    return AccountOut.dump(contacts.link_contact(_org(), path.id, body.contact_id, body.role))


@contacts_api.delete("/accounts/<id>/contacts/<contact_id>", responses={200: AccountOut})
def unlink_account_contact(path: AccountContactPath) -> Json:
    return AccountOut.dump(contacts.unlink_contact(_org(), path.id, path.contact_id))


# ---------------------------------------------------------------------------------------------- products

products_api = _blueprint("products", "CRM: products", "The product catalogue (line items, AI agents)")
BLUEPRINTS = (*BLUEPRINTS, products_api)


@products_api.get("/products", responses={200: ProductList})
def list_products(path: OrgPath, query: ProductListQuery) -> Json:
    """The catalogue by name; `q` matches every word in the name, SKU or description; `active` filters."""
    return _page(ProductList, products.list_products(_org(), _filters(ProductFilters, query)), query)


@products_api.post("/products", responses={201: ProductOut})
def create_product(path: OrgPath, body: ProductCreate) -> Created:
    """Create a product; a SKU already used in the organization is 409."""
    return ProductOut.dump(products.create_product(_org(), _draft(ProductDraft, body))), 201


@products_api.get("/products/<id>", responses={200: ProductOut})
def get_product(path: IdPath) -> Json:
    return ProductOut.dump(products.get_product(_org(), path.id))


@products_api.patch("/products/<id>", responses={200: ProductOut})
def update_product(path: IdPath, body: ProductUpdate) -> Json:
    """Only the fields sent change."""
    return ProductOut.dump(products.update_product(_org(), path.id, _changes(ProductChanges, body)))


@products_api.delete("/products/<id>", responses={200: ProductDeleted})
def delete_product(path: IdPath) -> Json:
    """Delete a product; one that line items reference is archived (`active: false`) instead."""
    archived = products.delete_product(_org(), path.id)
    return ProductDeleted.dump({"id": path.id, "deleted": not archived, "archived": archived})
