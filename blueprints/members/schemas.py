"""Wire shapes of the members area (``/v1/members/...``) and of the messaging member endpoints.

Each response shape is declared once, here: the models below are both the OpenAPI documentation and
the serialisers. ``Model.dump(obj)`` validates a service's domain object (an ORM row or a small
dataclass, read by attribute) and returns the JSON body; derived fields are computed by the model's
validators, so nothing else repeats the shape.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    field_validator,
    model_validator,
)

from blueprints.members.agent_config_rules import (
    DEFAULT_AGENT_TYPE,
    AgentType,
    BusinessCategory,
    CallTransfers,
    Notifications,
    SectionOrder,
    Sections,
    Tools,
    ToolSetting,
    Voice,
    effective_sections,
    target_type,
)
from blueprints.members.models import MEMBER_ID_PATTERN, STATUSES
from core.pagination import PageLimitQuery, SkipTakeQuery
from core.responses import ResponseModel, WireObject, WireOptionalText, WireText
from core.timeutil import get_zone
from core.validation import QueryModel, RequestModel

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
        "agent_type": config.agent_type if config else DEFAULT_AGENT_TYPE,
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


# The rules are the domain's (``agent_config_rules``); these request models only say which fields a body
# has. The API view hands the body to ``agent_config.parse``, and the verbs check it again.


class _ConfigFields(RequestModel):
    tools: Tools | None = None
    voice: Voice | None = None
    business_category: BusinessCategory | None = None
    notifications: Notifications | None = None
    call_transfers: CallTransfers | None = None
    section_order: SectionOrder | None = Field(
        None,
        description="The text sections' names in the prompt's order; sections not named follow in the "
        "default order (identity, rules, tone, knowledge, escalation, closing, then the others by name). "
        "Each name once, each a section of the configuration. Replaced as a whole; null or [] is the "
        "default order.",
    )


class AgentConfigReplace(_ConfigFields):
    sections: Sections
    agent_type: AgentType = DEFAULT_AGENT_TYPE


class AgentConfigPatch(_ConfigFields):
    sections: Sections | None = None
    agent_type: AgentType | None = None


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
                "target_type": target_type(target),
            }
        return value


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
    section_order: list[str]
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
                "section_order": config.section_order or [],
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
