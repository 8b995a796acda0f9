"""Wire shapes of the members area (``/v1/members/...``) and of the messaging member endpoints.

Each response shape is declared once, here: the models below are both the OpenAPI documentation and
the serialisers. ``Model.dump(obj)`` validates a service's domain object (an ORM row or a small
dataclass, read by attribute) and returns the JSON body; derived fields are computed by the model's
validators, so nothing else repeats the shape.
"""

from __future__ import annotations

import re
import uuid
from datetime import date
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from email_validator import EmailNotValidError, validate_email
from flask import current_app, has_app_context
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    field_validator,
    model_validator,
)

from blueprints.members.models import STATUSES, TOOLS
from core.outbound import UrlRefused, check_url, switch_on
from core.pagination import PageLimitQuery, SkipTakeQuery
from core.phones import InvalidPhoneNumber, normalize_phone
from core.responses import ResponseModel, WireObject, WireOptionalText, WireText
from core.timeutil import get_zone
from core.validation import QueryModel, RequestModel

MEMBER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$"
Status = Literal["online", "offline", "busy", "away"]
assert set(STATUSES) == {"online", "offline", "busy", "away"}

# ------------------------------------------------------------------------------------ response basics


# UUIDs and datetimes of rows as the wire shows them (ISO 8601 with milliseconds and Z); JSON columns that
# may hold null are shown as {} (core.responses).
Text = WireText
OptionalText = WireOptionalText
Timestamp = WireText
JsonObject = WireObject


class OutModel(ResponseModel):
    """A response shape that reads the domain objects of the services by attribute."""


class OutList(RootModel[Any]):
    model_config = ConfigDict(from_attributes=True)

    @classmethod
    def dump(cls, value: Any) -> Any:
        return cls.model_validate(value).model_dump(mode="json", by_alias=True)


# ---------------------------------------------------------------------------------------------- paths


class OrgPath(BaseModel):
    organization_id: str


class MemberPath(OrgPath):
    member_id: str


class AgentPath(OrgPath):
    agent_id: str


# Ids that are UUIDs are taken as text in paths: a malformed one is "not found" (404), not a 400.
class ReasonPath(OrgPath):
    reason_id: str


class TeamPath(OrgPath):
    team_id: str


class TeamMemberPath(TeamPath):
    member_id: str


class VersionPath(AgentPath):
    version: int


# ------------------------------------------------------------------------------------------- members


def _http_url(value: str | None, field: str) -> str | None:
    if value is None or value == "":
        return None
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"{field} must be an http(s) URL")
    return value


class MemberCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    ai: bool
    organization_id: uuid.UUID
    id: str | None = Field(None, pattern=MEMBER_ID_PATTERN)
    user_id: uuid.UUID | None = None
    picture: str | None = Field(None, max_length=2048)
    extra: dict[str, Any] | None = None

    @field_validator("picture")
    @classmethod
    def _picture(cls, value: str | None) -> str | None:
        return _http_url(value, "picture")


class MemberUpdate(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=200)
    ai: bool | None = None
    organization_id: uuid.UUID | None = None
    id: str | None = Field(None, pattern=MEMBER_ID_PATTERN)
    user_id: uuid.UUID | None = None
    picture: str | None = Field(None, max_length=2048)
    extra: dict[str, Any] | None = None

    @field_validator("picture")
    @classmethod
    def _picture(cls, value: str | None) -> str | None:
        return _http_url(value, "picture")

    not_null = ("name", "ai")


class MemberOut(OutModel):
    id: str
    organization_id: Text
    name: str
    picture: str | None
    ai: bool
    user_id: OptionalText
    extra: JsonObject
    created_at: Timestamp
    updated_at: Timestamp


class MemberList(OutList):
    root: list[MemberOut]


class MemberDeleted(OutModel):
    id: str
    deleted: bool
    active_conversations: int = Field(description="Active conversations still assigned to the member.")


class MemberListQuery(SkipTakeQuery):
    pass


# ------------------------------------------------------------------------------------------ presence


class StatusChange(RequestModel):
    status: Status
    reason_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _reason_only_when_unavailable(self) -> StatusChange:
        if self.status == "online" and self.reason_id is not None:
            raise ValueError("reason_id: a reason is only given when the status is not online")
        return self


class ReasonRef(OutModel):
    id: Text
    name: str


# Read from ``services.presence.Availability`` (the member, its reason, connected, load).
class AvailabilityOut(OutModel):
    member_id: str
    name: str
    ai: bool
    status: Status
    since: Timestamp
    reason: ReasonRef | None
    chosen_status: Status
    connected: bool
    active_conversations: int

    @model_validator(mode="before")
    @classmethod
    def _from_availability(cls, value: Any) -> Any:
        member = getattr(value, "member", None)
        if member is None:
            return value
        return {
            "member_id": member.id,
            "name": member.name,
            "ai": member.ai,
            "status": member.status,
            "since": member.status_since,
            "reason": value.reason,
            "chosen_status": member.chosen_status,
            "connected": value.connected,
            "active_conversations": value.active_conversations,
        }


class AvailabilityList(OutModel):
    data: list[AvailabilityOut]
    total: int


class AvailabilityQuery(QueryModel):
    status: Status | None = None
    ai: bool | None = None


# ------------------------------------------------------------------------------------------- reasons


class ReasonCreate(RequestModel):
    name: str = Field(min_length=1, max_length=120)
    description: str | None = Field(None, max_length=2000)
    active: bool = True


class ReasonUpdate(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=120)
    description: str | None = Field(None, max_length=2000)
    active: bool | None = None

    not_null = ("name", "active")


class ReasonOut(OutModel):
    id: Text
    name: str
    description: str | None
    active: bool
    created_at: Timestamp
    updated_at: Timestamp


class ReasonList(OutModel):
    data: list[ReasonOut]
    total: int


class ReasonListQuery(QueryModel):
    active: bool | None = None


class ReasonDeleted(OutModel):
    id: Text
    deleted: bool
    active: bool = Field(description="False when the reason was in use and has been deactivated instead.")


# --------------------------------------------------------------------------------------------- teams


class TeamCreate(RequestModel):
    name: str = Field(min_length=1, max_length=120)
    description: str | None = Field(None, max_length=2000)
    member_ids: list[str] = Field(default_factory=list, max_length=500)


class TeamUpdate(RequestModel):
    name: str | None = Field(None, min_length=1, max_length=120)
    description: str | None = Field(None, max_length=2000)

    not_null = ("name",)


class TeamMembersAdd(RequestModel):
    member_ids: list[str] = Field(min_length=1, max_length=500)


class TeamMemberOut(OutModel):
    id: str
    name: str
    ai: bool
    status: Status


# Read from ``services.teams.TeamView`` (the team and its members).
class TeamOut(OutModel):
    id: Text
    name: str
    description: str | None
    members: list[TeamMemberOut]
    created_at: Timestamp
    updated_at: Timestamp

    @model_validator(mode="before")
    @classmethod
    def _from_view(cls, value: Any) -> Any:
        team = getattr(value, "team", None)
        if team is None:
            return value
        return {
            "id": team.id,
            "name": team.name,
            "description": team.description,
            "members": value.members,
            "created_at": team.created_at,
            "updated_at": team.updated_at,
        }


class TeamList(OutModel):
    data: list[TeamOut]
    total: int


class TeamDeleted(OutModel):
    id: Text
    deleted: bool


class TeamAvailability(OutModel):
    team_id: Text
    team_name: str
    counts: dict[str, int]
    members: list[AvailabilityOut]


# ------------------------------------------------------------------------------------ history, stats


def _check_zone(value: str | None) -> str:
    get_zone(value)
    return value or "UTC"


class HistoryQuery(SkipTakeQuery):
    member_id: str | None = None
    status: Status | None = None
    date_from: date | None = Field(None, alias="from")
    date_to: date | None = Field(None, alias="to")
    timezone: str = "UTC"

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return _check_zone(value)


class StatusEventOut(OutModel):
    id: Text
    member_id: str
    member_name: str
    from_status: str | None
    to_status: str
    reason: ReasonRef | None
    changed_by: str
    source: str
    at: Timestamp

    @model_validator(mode="before")
    @classmethod
    def _from_event(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return value
        # The reason as it was named at the time of the change (the reason itself may be gone).
        reason = (
            {"id": value.reason_id, "name": value.reason_name}
            if value.reason_id and value.reason_name
            else None
        )
        return {
            "id": value.id,
            "member_id": value.member_id,
            "member_name": value.member_name,
            "from_status": value.from_status,
            "to_status": value.to_status,
            "reason": reason,
            "changed_by": value.changed_by,
            "source": value.source,
            "at": value.at,
        }


class HistoryPage(OutModel):
    data: list[StatusEventOut]
    total: int
    skip: int
    take: int


class StatsQuery(QueryModel):
    date_from: date | None = Field(None, alias="from")
    date_to: date | None = Field(None, alias="to")
    timezone: str = "UTC"
    member_id: str | None = None
    team_id: uuid.UUID | None = None

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return _check_zone(value)


class StatusEventsExportQuery(StatsQuery):
    status: Status | None = None


# Read from ``services.stats.MemberTotals``; seconds are rounded to whole seconds.
class MemberAvailabilityStats(OutModel):
    member_id: str
    name: str
    ai: bool
    online_seconds: int
    busy_seconds: int
    away_seconds: int
    offline_seconds: int
    tracked_seconds: int
    reasons: dict[str, int]

    @model_validator(mode="before")
    @classmethod
    def _from_totals(cls, value: Any) -> Any:
        member = getattr(value, "member", None)
        if member is None:
            return value
        return {
            "member_id": member.id,
            "name": member.name,
            "ai": member.ai,
            **{f"{status}_seconds": round(seconds) for status, seconds in value.seconds.items()},
            "tracked_seconds": round(value.tracked),
            "reasons": {name: round(seconds) for name, seconds in sorted(value.reasons.items())},
        }


# Read from ``services.stats.StatsRange``: the local days asked for and the UTC instants they span.
class Range(OutModel):
    from_: str = Field(alias="from")
    to: str
    timezone: str
    start: Timestamp
    end: Timestamp

    @model_validator(mode="before")
    @classmethod
    def _from_range(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return value
        return {
            "from": value.first_day.isoformat(),
            "to": value.last_day.isoformat(),
            "timezone": value.zone.key,
            "start": value.start,
            "end": value.end,
        }


class AvailabilityStats(OutModel):
    range: Range
    members: list[MemberAvailabilityStats]


class StatusStats(OutModel):
    range: Range
    total_members: int
    current: dict[str, int]
    members_with_status: dict[str, int]
    changes: dict[str, int]
    reasons: dict[str, int]


# ----------------------------------------------------------------------------------------- AI agents


class AgentListQuery(PageLimitQuery):
    search: str | None = Field(None, max_length=200)
    category: str | None = Field(None, max_length=64)
    sort: Literal["name", "created_at"] = "name"
    order: Literal["asc", "desc"] = "asc"


class TeamRef(OutModel):
    team_id: Text
    team_name: str


# Summary "status": what a customer-facing list calls an agent's presence.
AGENT_STATUS = {"online": "available", "busy": "busy", "away": "away", "offline": "unavailable"}


def _agent_fields(view: Any) -> dict[str, Any]:
    """The summary fields of an ``services.agents.AgentView`` (member, config, teams, connections)."""
    member, config = view.member, view.config
    email = (member.extra or {}).get("email")
    return {
        "id": member.id,
        "name": member.name,
        "email": email if isinstance(email, str) else None,
        "type": "ai",
        "status": AGENT_STATUS.get(member.status, member.status),
        "avatar_url": member.picture,
        "agent_type": config.agent_type if config else "generic",
        "business_category": config.business_category if config else None,
        "teams": [{"team_id": team.id, "team_name": team.name} for team in view.teams],
        "connections": view.connections,
        "has_config": config is not None,
    }


class AgentSummary(OutModel):
    id: str
    name: str
    email: str | None
    type: Literal["ai"]
    status: str
    avatar_url: str | None
    agent_type: str
    business_category: str | None
    teams: list[TeamRef]
    connections: list[str]
    has_config: bool

    @model_validator(mode="before")
    @classmethod
    def _from_view(cls, value: Any) -> Any:
        return value if getattr(value, "member", None) is None else _agent_fields(value)


class AgentList(OutModel):
    agents: list[AgentSummary]
    total: int
    page: int
    limit: int


# ------------------------------------------------------------------------------- agent configuration


class ChatSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(0.7, ge=0, le=1)
    context_messages: int = Field(50, ge=0, le=100)
    context_days: int = Field(7, ge=1, le=30)
    split_long_messages: bool = False


CHAT_DEFAULTS = ChatSection().model_dump()


class ToolSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool


def _email(value: str) -> str:
    try:
        return validate_email(value, check_deliverability=False, test_environment=True).normalized
    except EmailNotValidError as exc:
        raise ValueError(f"not a valid e-mail address: {value!r}") from exc


def _notifications_loopback() -> bool:
    """The notifications area delivers these webhooks and owns their test switch; it sits above this area,
    so its setting is read by name rather than imported. Off outside an application."""
    return has_app_context() and switch_on(current_app.config.get("NOTIFICATIONS_ALLOW_HTTP_LOOPBACK"))


def _https(value: str) -> str:
    """The webhook as stored, checked when saved by the very check every delivery repeats
    (``core.outbound``), with the notifications area's loopback switch: a URL its deliveries would refuse
    (a private or loopback address in any spelling, credentials, plain http) is a 400 now, not a failed
    delivery log a day later. No DNS here; a name is resolved and its addresses checked at delivery."""
    try:
        return check_url(value, allow_loopback=_notifications_loopback())
    except UrlRefused as refused:
        raise ValueError(f"webhook must be an https URL to a public host: {refused}") from None


class NotificationTargets(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: list[str] | None = Field(None, max_length=20)
    whatsapp: list[str] | None = Field(None, max_length=20)
    webhook: str | None = Field(None, max_length=2048)

    @field_validator("email")
    @classmethod
    def _emails(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_email(v) for v in value]

    @field_validator("whatsapp")
    @classmethod
    def _phones(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        numbers = []
        for raw in value:
            try:
                numbers.append(normalize_phone(raw))
            except InvalidPhoneNumber as exc:
                raise ValueError(f"not a valid E.164 phone number: {raw!r}") from exc
        return numbers

    @field_validator("webhook")
    @classmethod
    def _webhook(cls, value: str | None) -> str | None:
        return None if value is None else _https(value)


NOTIFICATION_TRIGGERS = ("end_of_call", *TOOLS)
_PHONE_LIKE = re.compile(r"^\+?[\d\s().-]{6,}$")


class CallTransfer(BaseModel):
    """A rule for handing a call over: when ``condition`` holds, transfer to ``target``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    condition: str = Field(min_length=1, max_length=2000)
    target: str = Field(min_length=1, max_length=64, description="E.164 number or a member id")
    announce_message: str | None = Field(None, max_length=1000)

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        if _PHONE_LIKE.match(value):
            try:
                return normalize_phone(value)
            except InvalidPhoneNumber as exc:
                raise ValueError(f"not a valid E.164 phone number: {value!r}") from exc
        if not re.match(MEMBER_ID_PATTERN, value):
            raise ValueError(f"not an E.164 number or a member id: {value!r}")
        return value

    @property
    def target_type(self) -> str:
        return "phone" if self.target.startswith("+") else "member"


ToolName = Literal[
    "transfer_to_human", "search_knowledge", "send_product", "create_ticket", "schedule_meeting"
]
Trigger = Literal[
    "end_of_call",
    "transfer_to_human",
    "search_knowledge",
    "send_product",
    "create_ticket",
    "schedule_meeting",
]
assert set(ToolName.__args__) == set(TOOLS) and set(Trigger.__args__) == set(NOTIFICATION_TRIGGERS)
SectionText = Annotated[str, Field(max_length=20000)]


class Sections(BaseModel):
    """Prompt sections: any name with a text value; ``chat`` holds the chat parameters."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, SectionText | None]

    chat: ChatSection | None = None

    @model_validator(mode="after")
    def _names(self) -> Sections:
        for name in self.__pydantic_extra__ or {}:
            if not re.match(r"^[A-Za-z0-9_-]{1,64}$", name):
                raise ValueError(f"invalid section name {name!r} (letters, digits, _ and -, at most 64)")
        return self

    def sent(self) -> dict[str, Any]:
        """Sections as sent; ``None`` values mean "remove this section" in a PATCH."""
        return self.model_dump(exclude_unset=True)


class _ConfigFields(RequestModel):
    tools: dict[ToolName, ToolSetting | None] | None = None
    voice: str | None = Field(None, max_length=120)
    business_category: str | None = Field(None, max_length=64)
    notifications: dict[Trigger, NotificationTargets | None] | None = None
    call_transfers: list[CallTransfer] | None = Field(None, max_length=50)


class AgentConfigReplace(_ConfigFields):
    sections: Sections
    agent_type: str = Field("generic", min_length=1, max_length=64)


class AgentConfigPatch(_ConfigFields):
    sections: Sections | None = None
    agent_type: str | None = Field(None, min_length=1, max_length=64)


class CallTransferOut(OutModel):
    name: str
    condition: str
    target: str
    target_type: Literal["phone", "member"]
    announce_message: str | None

    @model_validator(mode="before")
    @classmethod
    def _target_type(cls, value: Any) -> Any:
        if isinstance(value, dict) and "target_type" not in value:
            target = value.get("target") or ""
            return {
                "announce_message": None,
                **value,
                "target_type": "phone" if target.startswith("+") else "member",
            }
        return value


def effective_sections(sections: dict[str, Any]) -> dict[str, Any]:
    """Sections as read: ``chat`` always present, with the defaults for what was not set."""
    return {**sections, "chat": {**CHAT_DEFAULTS, **(sections.get("chat") or {})}}


class AgentConfigOut(OutModel):
    id: Text
    member_id: str
    sections: dict[str, Any]
    tools: dict[str, ToolSetting]
    voice: str | None
    agent_type: str
    business_category: str | None
    notifications: dict[str, dict[str, Any]]
    call_transfers: list[CallTransferOut]
    version: int
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, config: Any, member_id: str) -> AgentConfigOut:
        """The answer for a configuration row (which knows its member only by key, so the id is given)."""
        return cls.model_validate(
            {
                "id": config.id,
                "member_id": member_id,
                "sections": effective_sections(config.sections or {}),
                "tools": config.tools or {},
                "voice": config.voice,
                "agent_type": config.agent_type,
                "business_category": config.business_category,
                "notifications": config.notifications or {},
                "call_transfers": config.call_transfers or [],
                "version": config.version,
                "created_at": config.created_at,
                "updated_at": config.updated_at,
            }
        )

    @classmethod
    def dump_config(cls, config: Any, member_id: str) -> Any:
        return cls.of(config, member_id).model_dump(mode="json", by_alias=True)


class AgentDetail(AgentSummary):
    extra: JsonObject
    created_at: Timestamp
    updated_at: Timestamp
    config: AgentConfigOut | None

    @model_validator(mode="before")
    @classmethod
    def _from_view(cls, value: Any) -> Any:
        member = getattr(value, "member", None)
        if member is None:
            return value
        return {
            **_agent_fields(value),
            "extra": member.extra,
            "created_at": member.created_at,
            "updated_at": member.updated_at,
            "config": AgentConfigOut.of(value.config, member.id) if value.config else None,
        }


class VersionOut(OutModel):
    version: int
    action: str
    restored_from: int | None
    changed_by: str
    changed_at: Timestamp
    diff: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return value
        return {
            "version": value.version,
            "action": value.action,
            "restored_from": value.restored_from,
            "changed_by": value.changed_by,
            "changed_at": value.created_at,
            "diff": value.diff,
        }


class VersionList(OutModel):
    data: list[VersionOut]
    total: int
    page: int
    limit: int


class VersionQuery(PageLimitQuery):
    pass
