"""Routes of the AI runtime, in the areas they belong to (errors ``{statusCode, message}`` in both):

- members area ``/v1/members/organizations/{organization_id}``: ``/knowledge`` (documents and search),
  ``/members/{agent_id}/runs`` and ``/members/{agent_id}/agent-config/test`` (the playground);
- messaging area ``/v2/messages/organizations/{organization_id}``:
  ``/conversations/{conversation_id}/ai`` (state), ``.../ai/pause`` and ``.../ai/resume``.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask_openapi3 import Tag
from sqlalchemy import select

from blueprints.ai import handoff, knowledge, playground
from blueprints.ai.models import AiRun
from blueprints.ai.runtime import agent_setup
from blueprints.ai.schemas import (
    AgentPath,
    AiStateOut,
    ConversationPath,
    DocumentCreate,
    DocumentDeleted,
    DocumentList,
    DocumentOut,
    DocumentPath,
    DocumentQuery,
    DocumentUpdate,
    KnowledgeSearchQuery,
    KnowledgeSearchResult,
    OrgPath,
    PlaygroundOut,
    PlaygroundRequest,
    RunList,
    RunQuery,
)
from blueprints.inbox.services.common import conversation_or_404
from blueprints.members.agent_config import check_section_order
from blueprints.members.services import agents
from blueprints.messaging.models import Conversation
from core import auth
from core.auth import current_actor
from core.db import isoformat
from core.errors import ApiError
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses
from core.pagination import paginate

TAG_KNOWLEDGE = Tag(name="Members: knowledge", description="Knowledge documents the AI agents answer from")
TAG_RUNS = Tag(name="Members: AI agents", description="AI agents and their configuration")
TAG_PAUSE = Tag(name="Messaging: AI agent on a conversation", description="Pause or resume the AI agent")

api = AreaAPI(
    "ai_members_api",
    __name__,
    url_prefix="/v1/members/organizations/<organization_id>",
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)

messaging_api = AreaAPI(
    "ai_messaging_api",
    __name__,
    url_prefix="/v2/messages/organizations/<organization_id>",
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(messaging_api)


def _org() -> uuid.UUID:
    return auth.current_organization_id()


# ------------------------------------------------------------------------------------------ knowledge


@api.get("/knowledge", tags=[TAG_KNOWLEDGE], responses={200: DocumentList})
def list_documents(path: OrgPath, query: DocumentQuery) -> dict[str, Any]:
    """Knowledge documents by title; ``agent_id`` keeps one agent's own, ``search`` searches the text."""
    page = knowledge.list_documents(
        _org(), agent_id=query.agent_id, search_text=query.search, offset=query.offset, limit=query.limit
    )
    return {
        "data": [DocumentOut.dump(d) for d in page.items],
        "total": page.total,
        "page": query.page,
        "limit": query.limit,
    }


@api.post("/knowledge", tags=[TAG_KNOWLEDGE], responses={201: DocumentOut})
def create_document(path: OrgPath, body: DocumentCreate) -> tuple[dict[str, Any], int]:
    return DocumentOut.dump(knowledge.create_document(_org(), body.sent_fields())), 201


@api.get("/knowledge/search", tags=[TAG_KNOWLEDGE], responses={200: KnowledgeSearchResult})
def search_knowledge(path: OrgPath, query: KnowledgeSearchQuery) -> dict[str, Any]:
    """The search the agents use (``search_knowledge``): best passages first."""
    hits = knowledge.search(_org(), query.q, agent_id=query.agent_id, limit=5)
    return {"data": [hit.as_dict() for hit in hits]}


@api.get("/knowledge/<document_id>", tags=[TAG_KNOWLEDGE], responses={200: DocumentOut})
def get_document(path: DocumentPath) -> dict[str, Any]:
    return DocumentOut.dump(knowledge.get_document(_org(), path.document_id))


@api.patch("/knowledge/<document_id>", tags=[TAG_KNOWLEDGE], responses={200: DocumentOut})
def update_document(path: DocumentPath, body: DocumentUpdate) -> dict[str, Any]:
    return DocumentOut.dump(knowledge.update_document(_org(), path.document_id, body.sent_fields()))


@api.delete("/knowledge/<document_id>", tags=[TAG_KNOWLEDGE], responses={200: DocumentDeleted})
def delete_document(path: DocumentPath) -> dict[str, Any]:
    knowledge.delete_document(_org(), path.document_id)
    return {"id": path.document_id, "deleted": True}


# ----------------------------------------------------------------------------------------------- runs


@api.get("/members/<agent_id>/runs", tags=[TAG_RUNS], responses={200: RunList})
def list_runs(path: AgentPath, query: RunQuery) -> dict[str, Any]:
    """The agent's runs, newest first: trigger messages, model, prompt size, latency, tool calls, outcome."""
    agents.get_agent(_org(), path.agent_id)  # 404 "No AI agent found"
    statement = select(AiRun).where(AiRun.organization_id == _org(), AiRun.agent_id == path.agent_id)
    if query.outcome:
        statement = statement.where(AiRun.outcome == query.outcome)
    if query.conversation_id:
        try:
            statement = statement.where(AiRun.conversation_id == uuid.UUID(query.conversation_id))
        except ValueError:
            raise ApiError(400, "conversation_id: not a UUID", param="conversation_id") from None
    page = paginate(
        statement.order_by(AiRun.started_at.desc(), AiRun.id.desc()), offset=query.offset, limit=query.limit
    )
    return RunList.model_validate(
        {"data": page.items, "total": page.total, "page": query.page, "limit": query.limit},
        from_attributes=True,
    ).model_dump(mode="json")


@api.post("/members/<agent_id>/agent-config/test", tags=[TAG_RUNS], responses={200: PlaygroundOut})
def test_agent(path: AgentPath, body: PlaygroundRequest) -> dict[str, Any]:
    """Run the agent on a sample conversation: nothing is sent and nothing is written (tools describe what
    they would do)."""
    config = body.config.model_dump(exclude_unset=True) if body.config is not None else None
    if config is not None and body.config is not None:
        config["sections"] = body.config.sections.sent()
        # as POST agent-config: an order names sections of this configuration
        check_section_order(config.get("section_order"), config["sections"])
    result = playground.run_test(
        _org(), path.agent_id, [m.model_dump() for m in body.messages], config, body.service
    )
    return PlaygroundOut(
        answer=result.answer,
        tool_calls=result.tool_calls,
        model=result.model,
        latency_ms=result.latency_ms,
        outcome=result.outcome,
        error=result.error,
    ).model_dump(mode="json")


# -------------------------------------------------------------------------------------------- pausing


def _state_out(conversation: Conversation) -> dict[str, Any]:
    state = handoff.state_for(conversation)
    until = handoff.paused_until(conversation, state)
    setup = agent_setup(conversation.organization_id, conversation.member_id)
    return AiStateOut(
        conversation_id=str(conversation.id),
        agent_id=setup.agent_id if setup else None,
        paused=until is not None,
        paused_at=isoformat(conversation.ai_paused_at) if until is not None else None,
        paused_until=until if isinstance(until, str) or until is None else isoformat(until),
        last_outcome=state.last_outcome if state else None,
        last_reason=state.last_reason if state else None,
        last_run_id=str(state.last_run_id) if state and state.last_run_id else None,
    ).model_dump(mode="json")


@messaging_api.get("/conversations/<conversation_id>/ai", tags=[TAG_PAUSE], responses={200: AiStateOut})
def ai_state(path: ConversationPath) -> dict[str, Any]:
    """The AI agent's state on the conversation: paused or not (until when), the last run's outcome."""
    return _state_out(conversation_or_404(_org(), path.conversation_id))


@messaging_api.post(
    "/conversations/<conversation_id>/ai/pause", tags=[TAG_PAUSE], responses={200: AiStateOut}
)
def pause_agent(path: ConversationPath) -> dict[str, Any]:
    """Pause the AI agent on this conversation until it is resumed."""
    return _state_out(handoff.pause(_org(), path.conversation_id, by=current_actor()))


@messaging_api.post(
    "/conversations/<conversation_id>/ai/resume", tags=[TAG_PAUSE], responses={200: AiStateOut}
)
def resume_agent(path: ConversationPath) -> dict[str, Any]:
    """Resume the AI agent: it answers from the next incoming message on."""
    return _state_out(handoff.resume(_org(), path.conversation_id, by=current_actor()))
