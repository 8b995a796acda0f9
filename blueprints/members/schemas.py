"""Wire shapes of the members area (``/v1/members/...``) and of the messaging member endpoints."""

from __future__ import annotations

import re
import uuid
from datetime import date
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from email_validator import EmailNotValidError, validate_email
from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from blueprints.members.models import STATUSES, TOOLS
from core.pagination import PageLimitQuery, SkipTakeQuery
from core.phones import InvalidPhoneNumber, normalize_phone
from core.timeutil import get_zone
from core.validation import QueryModel, RequestModel

MEMBER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$"
Status = Literal["online", "offline", "busy", "away"]
assert set(STATUSES) == {"online", "offline", "busy", "away"}

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


class MemberOut(BaseModel):
    id: str
    organization_id: str
    name: str
    picture: str | None
    ai: bool
    user_id: str | None
    extra: dict[str, Any]
    created_at: str
    updated_at: str


class MemberList(RootModel[list[MemberOut]]):
    pass


class MemberDeleted(BaseModel):
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


class ReasonRef(BaseModel):
    id: str
    name: str


class AvailabilityOut(BaseModel):
    member_id: str
    name: str
    ai: bool
    status: Status
    since: str
    reason: ReasonRef | None
    chosen_status: Status
    connected: bool
    active_conversations: int


class AvailabilityList(BaseModel):
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


class ReasonOut(BaseModel):
    id: str
    name: str
    description: str | None
    active: bool
    created_at: str
    updated_at: str


class ReasonList(BaseModel):
    data: list[ReasonOut]
    total: int


class ReasonListQuery(QueryModel):
    active: bool | None = None


class ReasonDeleted(BaseModel):
    id: str
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


class TeamMemberOut(BaseModel):
    id: str
    name: str
    ai: bool
    status: Status


class TeamOut(BaseModel):
    id: str
    name: str
    description: str | None
    members: list[TeamMemberOut]
    created_at: str
    updated_at: str


class TeamList(BaseModel):
    data: list[TeamOut]
    total: int


class TeamDeleted(BaseModel):
    id: str
    deleted: bool


class TeamAvailability(BaseModel):
    team_id: str
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


class StatusEventOut(BaseModel):
    id: str
    member_id: str
    member_name: str
    from_status: str | None
    to_status: str
    reason: ReasonRef | None
    changed_by: str
    source: str
    at: str


class HistoryPage(BaseModel):
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


class MemberAvailabilityStats(BaseModel):
    member_id: str
    name: str
    ai: bool
    online_seconds: int
    busy_seconds: int
    away_seconds: int
    offline_seconds: int
    tracked_seconds: int
    reasons: dict[str, int]


class Range(BaseModel):
    from_: str = Field(alias="from")
    to: str
    timezone: str
    start: str
    end: str

    model_config = ConfigDict(populate_by_name=True)


class AvailabilityStats(BaseModel):
    range: Range
    members: list[MemberAvailabilityStats]


class StatusStats(BaseModel):
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


class TeamRef(BaseModel):
    team_id: str
    team_name: str


class AgentSummary(BaseModel):
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


class AgentList(BaseModel):
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


def _https(value: str) -> str:
    parsed = urlparse(value)
    if parsed.scheme != "https" or not parsed.hostname:
        raise ValueError(f"webhook must be an https URL: {value!r}")
    return value


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


class CallTransferOut(BaseModel):
    name: str
    condition: str
    target: str
    target_type: Literal["phone", "member"]
    announce_message: str | None


class AgentConfigOut(BaseModel):
    id: str
    member_id: str
    sections: dict[str, Any]
    tools: dict[str, ToolSetting]
    voice: str | None
    agent_type: str
    business_category: str | None
    notifications: dict[str, dict[str, Any]]
    call_transfers: list[CallTransferOut]
    version: int
    created_at: str
    updated_at: str


class AgentDetail(AgentSummary):
    extra: dict[str, Any]
    created_at: str
    updated_at: str
    config: AgentConfigOut | None


class VersionOut(BaseModel):
    version: int
    action: str
    restored_from: int | None
    changed_by: str
    changed_at: str
    diff: dict[str, Any]


class VersionList(BaseModel):
    data: list[VersionOut]
    total: int
    page: int
    limit: int


class VersionQuery(PageLimitQuery):
    pass
