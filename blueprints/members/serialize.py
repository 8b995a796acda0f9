"""Rows -> wire dictionaries (validated against the response models in schemas.py by the tests)."""

from __future__ import annotations

from typing import Any

from blueprints.members.models import (
    AgentConfig,
    AgentConfigVersion,
    Member,
    MemberStatusEvent,
    Team,
    UnavailabilityReason,
)
from blueprints.members.services.agents import AGENT_STATUS, AgentView, effective_sections
from blueprints.members.services.presence import Availability
from blueprints.members.services.stats import MemberTotals
from core.db import isoformat


def member(m: Member) -> dict[str, Any]:
    return {
        "id": m.id,
        "organization_id": str(m.organization_id),
        "name": m.name,
        "picture": m.picture,
        "ai": m.ai,
        "user_id": str(m.user_id) if m.user_id else None,
        "extra": m.extra or {},
        "created_at": isoformat(m.created_at),
        "updated_at": isoformat(m.updated_at),
    }


def reason(r: UnavailabilityReason) -> dict[str, Any]:
    return {
        "id": str(r.id),
        "name": r.name,
        "description": r.description,
        "active": r.active,
        "created_at": isoformat(r.created_at),
        "updated_at": isoformat(r.updated_at),
    }


def availability(a: Availability) -> dict[str, Any]:
    m = a.member
    return {
        "member_id": m.id,
        "name": m.name,
        "ai": m.ai,
        "status": m.status,
        "since": isoformat(m.status_since),
        "reason": {"id": str(a.reason.id), "name": a.reason.name} if a.reason else None,
        "chosen_status": m.chosen_status,
        "connected": a.connected,
        "active_conversations": a.active_conversations,
    }


def team(t: Team, members: list[Member]) -> dict[str, Any]:
    return {
        "id": str(t.id),
        "name": t.name,
        "description": t.description,
        "members": [{"id": m.id, "name": m.name, "ai": m.ai, "status": m.status} for m in members],
        "created_at": isoformat(t.created_at),
        "updated_at": isoformat(t.updated_at),
    }


def status_event(e: MemberStatusEvent) -> dict[str, Any]:
    return {
        "id": str(e.id),
        "member_id": e.member_id,
        "member_name": e.member_name,
        "from_status": e.from_status,
        "to_status": e.to_status,
        "reason": {"id": str(e.reason_id), "name": e.reason_name} if e.reason_id and e.reason_name else None,
        "changed_by": e.changed_by,
        "source": e.source,
        "at": isoformat(e.at),
    }


def agent_summary(view: AgentView) -> dict[str, Any]:
    m, config = view.member, view.config
    email = (m.extra or {}).get("email")
    return {
        "id": m.id,
        "name": m.name,
        "email": email if isinstance(email, str) else None,
        "type": "ai",
        "status": AGENT_STATUS.get(m.status, m.status),
        "avatar_url": m.picture,
        "agent_type": config.agent_type if config else "generic",
        "business_category": config.business_category if config else None,
        "teams": [{"team_id": str(t.id), "team_name": t.name} for t in view.teams],
        "connections": view.connections,
        "has_config": config is not None,
    }


def agent_detail(view: AgentView) -> dict[str, Any]:
    m = view.member
    return {
        **agent_summary(view),
        "extra": m.extra or {},
        "created_at": isoformat(m.created_at),
        "updated_at": isoformat(m.updated_at),
        "config": agent_config(view.config, m.id) if view.config else None,
    }


def agent_config(c: AgentConfig, member_id: str) -> dict[str, Any]:
    return {
        "id": str(c.id),
        "member_id": member_id,
        "sections": effective_sections(c.sections or {}),
        "tools": c.tools or {},
        "voice": c.voice,
        "agent_type": c.agent_type,
        "business_category": c.business_category,
        "notifications": c.notifications or {},
        "call_transfers": [
            {
                "name": t["name"],
                "condition": t["condition"],
                "target": t["target"],
                "target_type": "phone" if t["target"].startswith("+") else "member",
                "announce_message": t.get("announce_message"),
            }
            for t in c.call_transfers or []
        ],
        "version": c.version,
        "created_at": isoformat(c.created_at),
        "updated_at": isoformat(c.updated_at),
    }


def version(v: AgentConfigVersion) -> dict[str, Any]:
    return {
        "version": v.version,
        "action": v.action,
        "restored_from": v.restored_from,
        "changed_by": v.changed_by,
        "changed_at": isoformat(v.created_at),
        "diff": v.diff,
    }


def member_totals(t: MemberTotals) -> dict[str, Any]:
    return {
        "member_id": t.member.id,
        "name": t.member.name,
        "ai": t.member.ai,
        **{f"{status}_seconds": round(seconds) for status, seconds in t.seconds.items()},
        "tracked_seconds": round(t.tracked),
        "reasons": {name: round(seconds) for name, seconds in sorted(t.reasons.items())},
    }
