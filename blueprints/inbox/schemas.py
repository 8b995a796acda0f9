"""Request and response shapes of the inbox: conversation lists and updates, notes, audit events, labels,
flows, routing rules and broadcasts."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from blueprints.channels.provider_ids import ID_PATTERN
from blueprints.messaging.schemas import ConversationOut
from core.pagination import CURSOR_MAX_LENGTH, SkipTakeQuery
from core.responses import ResponseModel
from core.validation import QueryModel, RequestModel

MAX_INCLUDE_MESSAGES = 50
MAX_BROADCAST_RECIPIENTS = 1000
Service = Literal["whatsapp", "instagram", "messenger"]
SERVICES = ("whatsapp", "instagram", "messenger")


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


class OrgPath(BaseModel):
    organization_id: str


class ConversationPath(OrgPath):
    conversation_id: str


class NotePath(ConversationPath):
    note_id: str


class LabelPath(OrgPath):
    label_id: str


class FlowPath(OrgPath):
    flow_id: str


class AddressPath(OrgPath):
    address: str


class BroadcastPath(OrgPath):
    broadcast_id: str


class ConversationListQuery(SkipTakeQuery):
    search: str | None = None
    status: Literal["active", "closed", "archived"] | None = None
    contact_id: str | None = None
    service: str | None = Field(None, description="Comma-separated: whatsapp,instagram,messenger")
    labels: str | None = Field(None, description="Comma-separated; conversations with ANY of them")
    no_labels: bool = False
    assigned_member_id: str | None = None
    organization_address: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    date_field: Literal["created_at", "last_message_timestamp"] = "created_at"
    order_by: Literal["last_message_timestamp", "created_at", "updated_at"] = "last_message_timestamp"
    order: Literal["asc", "desc"] = "desc"
    broadcast_id: str | None = None
    is_broadcast: bool | None = None
    crm_contact_id: str | None = None
    include_messages: int = Field(0, ge=0, le=MAX_INCLUDE_MESSAGES)
    cursor: str | None = Field(
        None,
        max_length=CURSOR_MAX_LENGTH,
        description="Keyset pagination for deep pages: empty for the first page, then the previous page's "
        "`next_cursor` (the response then carries `next_cursor`, null on the last page). Not with `skip`.",
    )

    @field_validator("service")
    @classmethod
    def _services(cls, value: str | None) -> str | None:
        unknown = [s for s in _split(value) if s not in SERVICES]
        if unknown:
            raise ValueError(f"unknown service {unknown[0]!r} (allowed: {', '.join(SERVICES)})")
        return value

    @property
    def services(self) -> list[str]:
        return _split(self.service)

    @property
    def label_names(self) -> list[str]:
        return _split(self.labels)


class ConversationExtraPatch(RequestModel):
    """The spec's fields, validated; any other key is the client's own and is stored as sent (bounded in
    ``blueprints/messaging/extra.py``)."""

    model_config = ConfigDict(str_strip_whitespace=True, extra="allow", allow_inf_nan=False)

    member_id: str | None = None
    labels: list[str] | None = None
    archived: datetime | None = None
    team_id: str | None = None
    team_name: str | None = None
    assignment: dict[str, Any] | None = None
    flow_id: str | None = None
    flow_member_id: str | None = None

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        cleaned: list[str] = []
        for item in value:
            name = item.strip()
            if not name or len(name) > 80:
                raise ValueError("each label must have 1 to 80 characters")
            if name.lower() not in {c.lower() for c in cleaned}:
                cleaned.append(name)
        return cleaned


class ConversationPatch(RequestModel):
    name: str | None = Field(None, max_length=200)
    status: Literal["active", "closed"] | None = None
    extra: ConversationExtraPatch | None = None


class AssignTeamIn(RequestModel):
    team_id: str = Field(min_length=1)
    team_name: str | None = None


class NoteIn(RequestModel):
    content: str = Field(min_length=1, max_length=20000)
    organization_id: str
    member_id: str | None = None
    actor: str | None = Field(None, max_length=120)


class EventsQuery(QueryModel):
    types: str | None = Field(None, description="Comma-separated event types")

    @property
    def type_list(self) -> list[str]:
        return _split(self.types)


class AddressesByLabelQuery(QueryModel):
    label: str = Field(min_length=1)
    organization_id: str = Field(min_length=1)


class LabelIn(RequestModel):
    name: str = Field(min_length=1, max_length=80)
    source: Literal["manual", "automation", "ai", "conversation"] = "manual"
    color: str | None = Field(None, max_length=16)
    description: str | None = Field(None, max_length=2000)


class LabelPatch(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=80)
    source: Literal["manual", "automation", "ai", "conversation"] | None = None
    color: str | None = Field(None, max_length=16)
    description: str | None = Field(None, max_length=2000)


class FlowIn(RequestModel):
    name: str = Field(min_length=1, max_length=120)
    status: Literal["active", "paused", "draft"] = "active"
    trigger_labels: list[str] = Field(default_factory=list)
    interrupt_labels: list[str] = Field(default_factory=list)
    member_id: str | None = None
    steps: list[dict[str, Any]] = Field(default_factory=list)


class FlowPatch(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=120)
    status: Literal["active", "paused", "draft"] | None = None
    trigger_labels: list[str] | None = None
    interrupt_labels: list[str] | None = None
    member_id: str | None = None
    steps: list[dict[str, Any]] | None = None


class RoutingIn(RequestModel):
    target: Literal["team", "member", "none"]
    team_id: str | None = None
    member_id: str | None = None

    @model_validator(mode="after")
    def _target_needs_id(self) -> RoutingIn:
        if self.target == "team" and not self.team_id:
            raise ValueError("team_id: required when target is team")
        if self.target == "member" and not self.member_id:
            raise ValueError("member_id: required when target is member")
        return self


class TemplateParameter(RequestModel):
    type: Literal["text", "image"] = "text"
    parameter_name: str | None = None
    text: str | None = None
    image: dict[str, Any] | None = None


class TemplateComponent(RequestModel):
    type: Literal["header", "body", "buttons", "button"]
    parameters: list[TemplateParameter] = Field(default_factory=list)
    sub_type: str | None = None
    index: int | None = None


class BroadcastRecipientIn(RequestModel):
    to: str = Field(min_length=1, max_length=32)
    components: list[TemplateComponent] | None = None


class BroadcastIn(RequestModel):
    name: str | None = Field(None, max_length=200)
    organization_address: str = Field(min_length=1, max_length=64)
    meta_template_id: str = Field(
        min_length=1, max_length=64, pattern=ID_PATTERN, description="The provider's template id"
    )
    components: list[TemplateComponent] = Field(default_factory=list)
    recipients: list[BroadcastRecipientIn] = Field(min_length=1)
    rate_per_second: int | None = Field(None, ge=1, le=1000)
    scheduled_at: datetime | None = Field(
        None,
        description="Send at this time (ISO 8601; at most 90 days ahead) instead of at once: the broadcast "
        "is `scheduled` until then and can be canceled",
    )

    @field_validator("recipients")
    @classmethod
    def _limit(cls, value: list[BroadcastRecipientIn]) -> list[BroadcastRecipientIn]:
        if len(value) > MAX_BROADCAST_RECIPIENTS:
            raise ValueError(f"at most {MAX_BROADCAST_RECIPIENTS} recipients per request (got {len(value)})")
        return value


class BroadcastListQuery(SkipTakeQuery):
    status: Literal["sending", "completed", "canceled"] | None = None


# Response shapes: each one feeds the OpenAPI document and serialises what the services return.
class RowOut(ResponseModel):
    """A response read from an ORM row or a dataclass (``core.responses``)."""


class ConversationListItem(ConversationOut):
    messages: list[dict[str, Any]] | None = Field(
        None, description="with include_messages: the last N, oldest first"
    )


class ConversationListOut(BaseModel):
    data: list[ConversationListItem]
    total: int
    skip: int
    take: int
    next_cursor: str | None = Field(None, description="Only when the request sent `cursor`: the next page's")


class NoteOut(RowOut):
    id: str
    conversation_id: str
    organization_id: str
    content: str
    member_id: str | None
    actor: str | None
    created_at: str


class NoteList(BaseModel):
    data: list[NoteOut]
    total: int


class AuditEventOut(RowOut):
    id: str
    conversation_id: str
    type: str
    data: dict[str, Any]
    created_at: str

    @field_validator("data", mode="before")
    @classmethod
    def _no_data(cls, value: Any) -> Any:
        return {} if value is None else value


class AuditEventList(RootModel[list[AuditEventOut]]):
    """The conversation's audit trail: a JSON array, oldest first."""


class FlowRef(RowOut):
    flowId: str = Field(validation_alias=AliasChoices("flowId", "id"))
    name: str
    status: str


class Sequences(BaseModel):
    triggers: list[FlowRef]
    interrupts: list[FlowRef]


class EnrichedLabel(RowOut):
    name: str
    source: str
    isApplied: bool = Field(validation_alias=AliasChoices("isApplied", "applied"))
    sequences: Sequences

    @model_validator(mode="before")
    @classmethod
    def _from_service(cls, value: Any) -> Any:
        # the service's EnrichedLabel carries the flows flat; the response nests them under ``sequences``
        if hasattr(value, "triggers"):
            return {
                "name": value.name,
                "source": value.source,
                "applied": value.applied,
                "sequences": {
                    "triggers": [FlowRef.dump(f) for f in value.triggers],
                    "interrupts": [FlowRef.dump(f) for f in value.interrupts],
                },
            }
        return value


class EnrichedLabels(BaseModel):
    labels: list[EnrichedLabel]


class AddressesOut(BaseModel):
    addresses: list[str]


class LabelOut(RowOut):
    id: str
    name: str
    source: str
    color: str | None
    description: str | None
    created_at: str
    updated_at: str


class LabelList(BaseModel):
    data: list[LabelOut]
    total: int


class FlowOut(RowOut):
    id: str
    name: str
    status: str
    trigger_labels: list[str]
    interrupt_labels: list[str]
    member_id: str | None
    steps: list[dict[str, Any]]
    created_at: str
    updated_at: str

    @field_validator("trigger_labels", "interrupt_labels", "steps", mode="before")
    @classmethod
    def _no_list(cls, value: Any) -> Any:
        return [] if value is None else value


class FlowList(BaseModel):
    data: list[FlowOut]
    total: int


class RoutingOut(RowOut):
    organization_address: str
    target: str
    team_id: str | None
    member_id: str | None


class AssignTeamOut(BaseModel):
    conversation: ConversationOut
    assigned_member_id: str | None


class DeletedOut(BaseModel):
    id: str
    deleted: bool


class LabelDeletedOut(DeletedOut):
    conversations_updated: int


class BroadcastRecipientOut(RowOut):
    to: str = Field(validation_alias=AliasChoices("to", "contact_address"))
    state: str
    message_id: str | None
    conversation_id: str | None
    error: dict[str, Any] | None
    attempted_at: str | None
    finished_at: str | None


class BroadcastOut(RowOut):
    id: str
    name: str | None
    organization_address: str
    meta_template_id: str
    template_name: str | None
    template_language: str | None
    status: str
    total: int
    counts: dict[str, int]
    rate_per_second: int
    created_at: str
    completed_at: str | None
    canceled_at: str | None
    scheduled_at: str | None = None
    recipients: list[BroadcastRecipientOut] | None = Field(
        None, description="every recipient's result (the single broadcast only)"
    )

    @classmethod
    def dump_summary(cls, obj: Any) -> dict[str, Any]:
        """The broadcast without its recipients (the list's items)."""
        return cls.dump(obj, exclude={"recipients"})


class BroadcastListOut(BaseModel):
    data: list[BroadcastOut]
    total: int
    skip: int
    take: int
