"""Wire shapes of the AI runtime's routes: knowledge documents and runs (members area paths), the
playground, and pausing an agent on a conversation (messaging area paths)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from blueprints.members.schemas import AgentConfigReplace
from core.pagination import PageLimitQuery
from core.responses import ResponseModel, WireInstant, WireOptionalText, WireText
from core.validation import RequestModel


class OrgPath(BaseModel):
    organization_id: str


class DocumentPath(OrgPath):
    document_id: str


class AgentPath(OrgPath):
    agent_id: str


class ConversationPath(OrgPath):
    conversation_id: str


# ------------------------------------------------------------------------------------------ knowledge


class DocumentCreate(RequestModel):
    title: str = Field(min_length=1, max_length=300)
    body: str = Field(min_length=1, max_length=100_000)
    source: str | None = Field(None, max_length=2048, description="Where the text comes from (a URL, a file)")
    agent_id: str | None = Field(
        None, max_length=64, description="Only this AI agent uses it; all when absent"
    )


class DocumentUpdate(RequestModel):
    not_null = ("title", "body")

    title: str | None = Field(None, min_length=1, max_length=300)
    body: str | None = Field(None, min_length=1, max_length=100_000)
    source: str | None = Field(None, max_length=2048)
    agent_id: str | None = Field(None, max_length=64)


class DocumentQuery(PageLimitQuery):
    agent_id: str | None = Field(None, max_length=64)
    search: str | None = Field(None, max_length=500, description="Full-text search (words, any order)")


class DocumentOut(ResponseModel):
    id: WireText
    title: str
    body: str
    source: str | None
    agent_id: str | None
    created_at: WireInstant
    updated_at: WireInstant


class DocumentList(BaseModel):
    data: list[DocumentOut]
    total: int
    page: int
    limit: int


class DocumentDeleted(BaseModel):
    id: str
    deleted: bool


class KnowledgeSearchQuery(RequestModel):
    q: str = Field(min_length=1, max_length=500)
    agent_id: str | None = Field(None, max_length=64)


class KnowledgeHit(BaseModel):
    title: str | None
    passage: str
    source: Literal["section", "document"]
    document_id: str | None
    score: int


class KnowledgeSearchResult(BaseModel):
    data: list[KnowledgeHit]


# ----------------------------------------------------------------------------------------------- runs


class RunQuery(PageLimitQuery):
    outcome: str | None = Field(None, max_length=32)
    conversation_id: str | None = Field(None, max_length=64)


class ToolCallOut(BaseModel):
    name: str
    arguments: dict[str, Any]
    result: dict[str, Any]


class RunOut(ResponseModel):
    id: WireText
    agent_id: str
    conversation_id: WireOptionalText
    trigger_message_ids: list[str]
    config_version: int | None
    model: str | None
    prompt_chars: int
    prompt_tokens: int | None
    completion_tokens: int | None
    rounds: int
    latency_ms: int | None
    tool_calls: list[ToolCallOut]
    answer: list[str]
    sent_message_ids: list[str]
    outcome: str
    error: str | None
    started_at: WireInstant
    finished_at: WireOptionalText


class RunList(BaseModel):
    data: list[RunOut]
    total: int
    page: int
    limit: int


# ------------------------------------------------------------------------------------------ playground


class SampleMessage(RequestModel):
    role: Literal["customer", "agent"]
    text: str = Field(min_length=1, max_length=4096)


class PlaygroundRequest(RequestModel):
    messages: list[SampleMessage] = Field(min_length=1, max_length=100)
    config: AgentConfigReplace | None = Field(
        None, description="An unsaved configuration to try (same shape as POST agent-config)"
    )
    service: Literal["whatsapp", "instagram", "messenger"] = "whatsapp"


class PlaygroundOut(BaseModel):
    answer: list[str] = Field(description="The messages the agent would send")
    tool_calls: list[ToolCallOut]
    model: str
    latency_ms: int
    outcome: str
    error: str | None = None


# -------------------------------------------------------------------------------------------- pausing


class AiStateOut(BaseModel):
    conversation_id: str
    agent_id: str | None = Field(description="The AI agent assigned, when the assignee is one")
    paused: bool
    paused_at: str | None
    paused_until: str | None = Field(description="ISO 8601, or 'resumed' for a pause until resumed")
    last_outcome: str | None
    last_reason: str | None
    last_run_id: str | None
