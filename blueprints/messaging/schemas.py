"""Wire shapes of the messaging area: request models (validation + OpenAPI) and response models."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from blueprints.channels.provider_ids import ID_PATTERN
from blueprints.messaging.models import Conversation
from blueprints.messaging.reactions import visible
from core.db import isoformat
from core.pagination import CURSOR_MAX_LENGTH, MAX_TAKE
from core.responses import ResponseModel
from core.timeutil import parse_iso_datetime
from core.validation import QueryModel, RequestModel

Service = Literal["whatsapp", "instagram", "messenger"]
MEDIA_KINDS = ("image", "video", "audio", "document")
TEXT_LIMIT = 4096  # WhatsApp's body limit (meta.md §1.2); Instagram's 1,000 bytes is checked per service
CAPTION_LIMIT = 1024


class OrgPath(BaseModel):
    organization_id: str


class MessagePath(OrgPath):
    message_id: str


class ConversationPath(OrgPath):
    conversation_id: str


class ContactPath(OrgPath):
    contact_id: str


class WindowPath(OrgPath):
    address: str


class FileIn(RequestModel):
    uri: str = Field(min_length=1, max_length=2048, description="Public https URL of the media")
    mime_type: str = Field(min_length=3, max_length=127)
    filename: str | None = Field(None, max_length=255, description="Documents only")

    @field_validator("uri")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value

    @field_validator("mime_type")
    @classmethod
    def _mime(cls, value: str) -> str:
        if "/" not in value:
            raise ValueError("must be a MIME type such as image/jpeg")
        return value.lower()


class LocationIn(RequestModel):
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    name: str | None = Field(None, max_length=1000)
    address: str | None = Field(None, max_length=1000)


class ContentIn(RequestModel):
    kind: Literal["text", "image", "video", "audio", "document", "location"]
    text: str | None = Field(None, max_length=TEXT_LIMIT)
    file: FileIn | None = None
    location: LocationIn | None = None

    @model_validator(mode="after")
    def _by_kind(self) -> ContentIn:
        if self.kind == "text":
            if not self.text:
                raise ValueError("text is required when kind is text")
        elif self.kind in MEDIA_KINDS:
            if self.file is None:
                raise ValueError(f"file ({{uri, mime_type}}) is required when kind is {self.kind}")
            if self.kind == "audio" and self.text:
                raise ValueError("audio messages cannot carry a caption (text)")
            if self.text and len(self.text) > CAPTION_LIMIT:
                raise ValueError(f"a caption (text) is at most {CAPTION_LIMIT} characters")
            family = self.file.mime_type.split("/", 1)[0]
            if self.kind in ("image", "video", "audio") and family != self.kind:
                raise ValueError(f"file.mime_type {self.file.mime_type} does not fit kind {self.kind}")
        elif self.kind == "location" and self.location is None:
            raise ValueError("location ({latitude, longitude}) is required when kind is location")
        return self


class SendMessageIn(RequestModel):
    organization_address: str = Field(min_length=1, max_length=64)
    service: Service
    contact_address: str = Field(min_length=1, max_length=64, description="Recipient, without the +")
    direction: Literal["outgoing"]
    content: ContentIn
    member_id: str | None = Field(None, max_length=64, description="The member sending, if any")


class TemplateMedia(RequestModel):
    link: str = Field(min_length=1, max_length=2048)


class TemplateParameterIn(RequestModel):
    type: Literal["text", "image", "video", "document"]
    parameter_name: str | None = Field(None, max_length=64)
    text: str | None = Field(None, max_length=TEXT_LIMIT)
    image: TemplateMedia | None = None
    video: TemplateMedia | None = None
    document: TemplateMedia | None = None

    @model_validator(mode="after")
    def _value(self) -> TemplateParameterIn:
        if self.type == "text" and self.text is None:
            raise ValueError("text is required for a text parameter")
        if self.type != "text" and getattr(self, self.type) is None:
            raise ValueError(f"{self.type}.link is required for an {self.type} parameter")
        return self


class TemplateComponentIn(RequestModel):
    type: Literal["header", "body", "buttons", "button"]
    sub_type: str | None = Field(None, max_length=32)
    index: int | None = Field(None, ge=0, le=9)
    parameters: list[TemplateParameterIn] = Field(default_factory=list, max_length=100)


class SendTemplateIn(RequestModel):
    organization_address: str = Field(min_length=1, max_length=64)
    to: str = Field(min_length=1, max_length=32, description="Recipient phone number, E.164")
    meta_template_id: str = Field(
        min_length=1, max_length=64, pattern=ID_PATTERN, description="The provider's template id"
    )
    do_not_pause: bool = False
    components: list[TemplateComponentIn] = Field(default_factory=list, max_length=20)
    member_id: str | None = Field(None, max_length=64)


class MessageListQuery(QueryModel):
    conversation_id: uuid.UUID | None = None
    direction: Literal["incoming", "outgoing"] | None = None
    start_date: str | None = Field(None, description="ISO 8601 date or datetime, inclusive")
    end_date: str | None = Field(None, description="ISO 8601; a bare date includes that whole day")
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE, description="The latest N, returned oldest first")
    cursor: str | None = Field(
        None,
        max_length=CURSOR_MAX_LENGTH,
        description="Keyset pagination to older messages: empty for the first page, then the previous page's "
        "`next_cursor` (the response then carries `next_cursor`, null on the last page). Not with `skip`.",
    )

    @field_validator("start_date", "end_date")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value:
            parse_iso_datetime(value)
        return value or None


class WindowQuery(QueryModel):
    organization_address: str = Field(min_length=1, max_length=64)


class ContactAddressIn(RequestModel):
    service: Service
    address: str = Field(min_length=1, max_length=64)


class ContactIn(RequestModel):
    name: str | None = Field(None, max_length=200)
    addresses: list[ContactAddressIn] = Field(default_factory=list, max_length=20)
    crm_contact_id: str | None = Field(None, max_length=64)
    extra: dict[str, Any] = Field(default_factory=dict)


class ContactPatch(RequestModel):
    name: str | None = Field(None, max_length=200)
    addresses: list[ContactAddressIn] | None = Field(None, max_length=20)
    crm_contact_id: str | None = Field(None, max_length=64)
    extra: dict[str, Any] | None = None


class ContactListQuery(QueryModel):
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)
    search: str | None = Field(None, max_length=200, description="Name or address, case-insensitive")
    service: Service | None = None
    crm_contact_id: str | None = Field(None, max_length=64)


# ---- responses: each shape is declared here once; it documents the route and writes its JSON ----


class WireModel(ResponseModel):
    """Read from ORM rows (``core.responses``)."""


class ReactionOut(BaseModel):
    """A contact's reaction to a message (an addition to the spec's message)."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)

    emoji: str
    sender: str = Field(alias="from", description="The contact's address (E.164, PSID or IGSID)")
    at: str = Field(description="When the contact reacted (the provider's time), ISO 8601")


class MessageOut(WireModel):
    id: str
    conversation_id: str
    organization_id: str
    direction: str
    service: str
    organization_address: str
    contact_address: str
    external_id: str | None
    content: dict[str, Any] | None
    template_name: str | None
    template_language: str | None
    template: dict[str, Any] | None
    data: dict[str, Any] | None
    status: dict[str, Any]
    current_status: str
    reply_to: str | None
    member_id: str | None
    timestamp: str
    created_at: str
    updated_at: str
    reactions: list[ReactionOut] = Field(
        default_factory=list, description="The contact's reactions, one per person, oldest first"
    )

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        return dict(value or {})

    @field_validator("reactions", mode="before")
    @classmethod
    def _reactions(cls, value: Any) -> Any:
        return visible(value)  # removed reactions are kept as tombstones, never shown


class MessageList(BaseModel):
    data: list[MessageOut]
    total: int
    skip: int
    take: int
    next_cursor: str | None = Field(None, description="Only when the request sent `cursor`: the next page's")


class ConversationContact(BaseModel):
    id: str
    name: str | None
    address: str


# ``extra`` keys kept in columns (lists filter on them); every other key lives in the JSON document.
EXTRA_COLUMNS = ("member_id", "archived", "team_id")


def conversation_extra(conversation: Conversation) -> dict[str, Any]:
    """The spec's fields (null when unset) and every other key stored, as it was stored."""
    stored = conversation.extra or {}
    return {
        **{key: value for key, value in stored.items() if key not in EXTRA_COLUMNS},
        "member_id": conversation.member_id,
        "labels": list(stored.get("labels") or []),
        "archived": isoformat(conversation.archived_at),
        "team_id": conversation.team_id,
        "team_name": stored.get("team_name"),
        "assignment": stored.get("assignment"),
        "flow_id": stored.get("flow_id"),
        "flow_member_id": stored.get("flow_member_id"),
    }


class ConversationOut(WireModel):
    id: str
    organization_id: str
    contact_id: str
    organization_address: str
    contact_address: str
    service: str
    status: str
    name: str | None
    extra: dict[str, Any]
    last_message_at: str | None
    last_incoming_at: str | None
    ai_paused_at: str | None
    broadcast_id: str | None
    is_broadcast: bool
    created_at: str
    updated_at: str
    contact: ConversationContact

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, value: Any) -> Any:
        # ``extra`` joins columns and the JSON document; ``contact`` is the contact seen in this thread
        if not isinstance(value, Conversation):
            return value
        fields = {
            name: getattr(value, name)
            for name in cls.model_fields
            if name not in ("extra", "contact") and hasattr(Conversation, name)
        }
        contact = value.contact
        return {
            **fields,
            "extra": conversation_extra(value),
            "is_broadcast": bool(value.is_broadcast),
            "contact": {"id": str(contact.id), "name": contact.name, "address": value.contact_address},
        }


class ContactAddressOut(WireModel):
    service: str
    address: str


class ContactOut(WireModel):
    id: str
    organization_id: str
    name: str | None
    crm_contact_id: str | None
    extra: dict[str, Any]
    addresses: list[ContactAddressOut]
    created_at: str
    updated_at: str

    @field_validator("extra", mode="before")
    @classmethod
    def _extra(cls, value: Any) -> Any:
        return dict(value or {})


class ContactList(BaseModel):
    data: list[ContactOut]
    total: int
    skip: int
    take: int


class WindowOut(BaseModel):
    status: Literal["open", "closed"]
    expires_at: str | None = Field(None, description="When the open window closes (extension)")


# ---- canned responses ----

SHORT_CODE_PATTERN = r"^[a-z0-9_-]{1,32}$"
CANNED_CONTENT_LIMIT = 4096


class CannedResponsePath(OrgPath):
    canned_response_id: str


class CannedResponseIn(RequestModel):
    short_code: str = Field(
        pattern=SHORT_CODE_PATTERN,
        description="What the agent types after `/`: lowercase letters, digits, `_` and `-`, 1-32",
    )
    content: str = Field(min_length=1, max_length=CANNED_CONTENT_LIMIT)
    title: str | None = Field(None, max_length=200)

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class CannedResponsePatch(RequestModel):
    short_code: str | None = Field(None, pattern=SHORT_CODE_PATTERN)
    content: str | None = Field(None, min_length=1, max_length=CANNED_CONTENT_LIMIT)
    title: str | None = Field(None, max_length=200)

    @field_validator("short_code", "content")
    @classmethod
    def _not_null(cls, value: str | None) -> str:
        # sent as null: these two always have a value (title may be cleared with null)
        if value is None:
            raise ValueError("must not be null")
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class CannedResponseListQuery(QueryModel):
    q: str | None = Field(None, max_length=200, description="Short code, title or content, case-insensitive")
    skip: int = Field(0, ge=0)
    take: int = Field(20, ge=1, le=MAX_TAKE)


class CannedResponseOut(WireModel):
    id: str
    organization_id: str
    short_code: str
    title: str | None
    content: str
    created_at: str
    updated_at: str


class CannedResponseList(BaseModel):
    data: list[CannedResponseOut]
    total: int
    skip: int
    take: int
