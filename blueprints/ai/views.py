"""What the desk shows of the AI agents (plain reads for the pages, ``blueprints/ai/pages.py`` and the
inbox's conversation header): an agent's state on one conversation, the runs log one page at a time, and
the organization's agents with their last run. Nothing here writes; pausing and resuming are
``handoff.pause`` / ``handoff.resume``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select

from blueprints.ai import handoff
from blueprints.ai.models import OUTCOMES, AiConversationState, AiRun
from blueprints.members.models import AgentConfig, AgentConfigVersion, Member, User
from blueprints.messaging.models import Contact, Conversation, Message
from core.db import db, utcnow
from core.tenancy import find_for_org

# ------------------------------------------------------------------------------ state on a conversation


@dataclass(frozen=True)
class ConversationAiState:
    """The badge of a conversation's header.

    ``status``: ``answering`` (a run holds the lease now), ``active``, ``paused`` or ``handed_off``.
    ``paused_until``: the end of the pause, or ``"resumed"`` (until someone resumes it).
    ``pause_reason``: ``manual``, ``human_reply`` or ``template_sent``.
    ``handoff_reason``: ``transfer`` (the model or the offline responder asked for people), ``failed``
    (the model failed) with ``handoff_detail`` (the hand-off note or the error)."""

    agent_id: str | None
    agent_name: str | None
    status: str
    paused_until: datetime | str | None = None
    pause_reason: str | None = None
    handoff_reason: str | None = None
    handoff_detail: str | None = None

    @property
    def assigned(self) -> bool:
        """The agent is on the conversation (pause and resume apply)."""
        return self.status != "handed_off"


def _pause_reason(conversation: Conversation, state: AiConversationState | None, agent_id: str) -> str:
    """Why the agent is paused. A supervisor's pause is stored (``paused_until_resumed``); the others are
    told apart by the newest outgoing message sent by someone else up to the pause: a template pauses as
    it is sent, a person's reply a moment after it."""
    if state is not None and state.paused_until_resumed:
        return "manual"
    newest = db.session.execute(
        select(Message.template)
        .where(
            Message.conversation_id == conversation.id,
            Message.direction == "outgoing",
            or_(Message.member_id.is_(None), Message.member_id != agent_id),
            Message.created_at <= conversation.ai_paused_at,
        )
        .order_by(Message.created_at.desc(), Message.id.desc())
        .limit(1)
    ).first()
    return "template_sent" if newest is not None and newest[0] else "human_reply"


def _handoff_reason(state: AiConversationState) -> tuple[str, str | None]:
    run = find_for_org(AiRun, state.last_run_id, state.organization_id) if state.last_run_id else None
    if state.last_outcome == "failed_handed_off":
        return "failed", (run.error if run is not None else state.last_reason)
    notes = [
        str((call.get("arguments") or {}).get("note") or "")
        for call in (run.tool_calls if run is not None else [])
        if call.get("name") == "transfer_to_human"
    ]
    return "transfer", next((note for note in reversed(notes) if note), None)


def conversation_state(organization_id: uuid.UUID, conversation: Conversation) -> ConversationAiState | None:
    """The AI agent's state on the conversation when an AI agent is assigned to it or handed it over to
    people (its last run ended in a hand-off); None when no agent is involved."""
    member = (
        db.session.scalar(
            select(Member).where(
                Member.organization_id == organization_id, Member.id == conversation.member_id
            )
        )
        if conversation.member_id
        else None
    )
    state = handoff.state_for(conversation)
    if member is not None and member.ai:
        until = handoff.paused_until(conversation, state)
        if until is not None:
            return ConversationAiState(
                member.id,
                member.name,
                "paused",
                paused_until=until,
                pause_reason=_pause_reason(conversation, state, member.id),
            )
        leased = (
            state is not None
            and state.lease_token is not None
            and (state.lease_until or utcnow()) >= utcnow()
        )
        return ConversationAiState(member.id, member.name, "answering" if leased else "active")
    if state is None or state.last_outcome not in handoff.HANDED_OFF:
        return None
    run_agent = db.session.scalar(select(AiRun.agent_id).where(AiRun.id == state.last_run_id))
    agent = (
        db.session.scalar(
            select(Member).where(Member.organization_id == organization_id, Member.id == run_agent)
        )
        if run_agent
        else None
    )
    reason, detail = _handoff_reason(state)
    return ConversationAiState(
        run_agent,
        agent.name if agent is not None else None,
        "handed_off",
        handoff_reason=reason,
        handoff_detail=detail,
    )


# ------------------------------------------------------------------------------------------- runs log


@dataclass(frozen=True)
class RunRow:
    run: AiRun
    conversation_name: str | None

    @property
    def tools(self) -> list[tuple[str, str]]:
        """(name, short arguments) of each tool call."""
        shown = []
        for call in self.run.tool_calls or []:
            arguments = call.get("arguments") or {}
            text = ", ".join(
                f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
                for key, value in arguments.items()
            )
            shown.append((str(call.get("name") or "?"), text if len(text) <= 80 else text[:79] + "…"))
        return shown


@dataclass(frozen=True)
class RunsPage:
    rows: list[RunRow]
    has_more: bool

    @property
    def next_after(self) -> str | None:
        return str(self.rows[-1].run.id) if self.has_more and self.rows else None


def runs_page(
    organization_id: uuid.UUID, agent_id: str, *, outcome: str | None, after: str | None, limit: int = 25
) -> RunsPage:
    """The agent's runs newest first, ``limit`` at a time, after the run ``after`` (keyset on
    ``(started_at, id)``: rows that arrive meanwhile never shift a page). An unknown ``after`` starts over.
    """
    statement = select(AiRun).where(AiRun.organization_id == organization_id, AiRun.agent_id == agent_id)
    if outcome in OUTCOMES:
        statement = statement.where(AiRun.outcome == outcome)
    cursor = _run_cursor(organization_id, after)
    if cursor is not None:
        started, run_id = cursor
        statement = statement.where(
            or_(AiRun.started_at < started, and_(AiRun.started_at == started, AiRun.id < run_id))
        )
    runs = list(
        db.session.scalars(statement.order_by(AiRun.started_at.desc(), AiRun.id.desc()).limit(limit + 1))
    )
    names = _conversation_names(
        organization_id, {r.conversation_id for r in runs[:limit] if r.conversation_id}
    )
    rows = [
        RunRow(run, names.get(run.conversation_id) if run.conversation_id else None) for run in runs[:limit]
    ]
    return RunsPage(rows, len(runs) > limit)


def _run_cursor(organization_id: uuid.UUID, after: str | None) -> tuple[datetime, uuid.UUID] | None:
    if not after:
        return None
    try:
        run_id = uuid.UUID(after)
    except ValueError:
        return None
    started = db.session.scalar(
        select(AiRun.started_at).where(AiRun.id == run_id, AiRun.organization_id == organization_id)
    )
    return (started, run_id) if started is not None else None


def _conversation_names(organization_id: uuid.UUID, ids: set[uuid.UUID]) -> dict[uuid.UUID, str]:
    """How agents know each conversation: the contact's name, else the conversation's, else the address
    (one query for the whole page)."""
    if not ids:
        return {}
    rows = db.session.execute(
        select(Conversation.id, Contact.name, Conversation.name, Conversation.contact_address)
        .outerjoin(Contact, Contact.id == Conversation.contact_id)
        .where(Conversation.organization_id == organization_id, Conversation.id.in_(ids))
    )
    return {cid: contact or name or address for cid, contact, name, address in rows}


# --------------------------------------------------------------------------------------------- agents


@dataclass(frozen=True)
class AgentRow:
    agent: Member
    last_run: AiRun | None
    runs_today: int


def agents_overview(organization_id: uuid.UUID) -> list[AgentRow]:
    """The organization's AI agents by name, each with its newest run and its runs of the last 24 hours
    (three queries whatever the number of agents)."""
    agents = list(
        db.session.scalars(
            select(Member)
            .where(Member.organization_id == organization_id, Member.ai.is_(True))
            .order_by(func.lower(Member.name), Member.id)
        )
    )
    last, today = runs_summary(organization_id, [a.id for a in agents])
    return [AgentRow(agent, last.get(agent.id), int(today.get(agent.id, 0))) for agent in agents]


def runs_summary(organization_id: uuid.UUID, ids: list[str]) -> tuple[dict[str, AiRun], dict[str, int]]:
    """For these agents: the newest run of each, and how many runs each made in the last 24 hours (two
    queries whatever the number of agents)."""
    if not ids:
        return {}, {}
    newest = (
        select(AiRun.agent_id, func.max(AiRun.started_at).label("started_at"))
        .where(AiRun.organization_id == organization_id, AiRun.agent_id.in_(ids))
        .group_by(AiRun.agent_id)
        .subquery()
    )
    last: dict[str, AiRun] = {}
    for run in db.session.scalars(
        select(AiRun)
        .join(newest, and_(AiRun.agent_id == newest.c.agent_id, AiRun.started_at == newest.c.started_at))
        .where(AiRun.organization_id == organization_id)
    ):
        last.setdefault(run.agent_id, run)
    today = dict(
        db.session.execute(
            select(AiRun.agent_id, func.count())
            .where(
                AiRun.organization_id == organization_id,
                AiRun.agent_id.in_(ids),
                AiRun.started_at >= utcnow() - timedelta(days=1),
            )
            .group_by(AiRun.agent_id)
        ).all()
    )
    return last, {agent_id: int(count) for agent_id, count in today.items()}


def find_agent(organization_id: uuid.UUID, agent_id: str) -> Member | None:
    """The organization's AI member with this id (None for a person, an unknown or another organization's
    id)."""
    member = db.session.scalar(
        select(Member).where(Member.organization_id == organization_id, Member.id == agent_id)
    )
    return member if member is not None and member.ai else None


def outcome_names() -> tuple[str, ...]:
    return OUTCOMES


def agent_categories(organization_id: uuid.UUID) -> list[str]:
    """The business categories the organization's agents' configurations name, sorted (one query)."""
    rows = db.session.scalars(
        select(AgentConfig.business_category)
        .where(AgentConfig.organization_id == organization_id, AgentConfig.business_category.is_not(None))
        .distinct()
    )
    return sorted({row for row in rows if row}, key=str.lower)


def actor_names(organization_id: uuid.UUID, actors: list[str | None]) -> dict[str, str]:
    """``{actor: name}`` for the ``user:<id>`` and ``member:<id>`` actors among ``actors`` (a desk user's
    name, a member's name; two queries at most). Others (API keys, the system) are left to the page."""
    user_ids: set[uuid.UUID] = set()
    member_ids: set[str] = set()
    for actor in actors:
        kind, _colon, identifier = (actor or "").partition(":")
        if kind == "user":
            try:
                user_ids.add(uuid.UUID(identifier))
            except ValueError:
                continue
        elif kind == "member":
            member_ids.add(identifier)
    names: dict[str, str] = {}
    if user_ids:
        for user_id, name in db.session.execute(
            select(User.id, User.name).where(User.organization_id == organization_id, User.id.in_(user_ids))
        ):
            names[f"user:{user_id}"] = name
    if member_ids:
        for member_id, name in db.session.execute(
            select(Member.id, Member.name).where(
                Member.organization_id == organization_id, Member.id.in_(member_ids)
            )
        ):
            names[f"member:{member_id}"] = name
    return names


def config_version(
    organization_id: uuid.UUID, config_id: uuid.UUID, version: int
) -> AgentConfigVersion | None:
    """One stored version of an agent's configuration (its snapshot: what the page was loaded from)."""
    return db.session.scalar(
        select(AgentConfigVersion)
        .join(AgentConfig, AgentConfig.id == AgentConfigVersion.config_id)
        .where(
            AgentConfig.organization_id == organization_id,
            AgentConfigVersion.config_id == config_id,
            AgentConfigVersion.version == version,
        )
    )
