"""AI agents: the list and detail views, and each agent's configuration with its versions.

Every change of a configuration (create, replace, update, restore) stores a version: the full snapshot
after the change (what a restore puts back) and a diff against the previous one (what a supervisor
reads), with who made it and when, and writes an audit entry naming the version. A restore is itself a
new version, so nothing is ever lost.

The verbs take the typed inputs of ``blueprints.members.agent_config`` (``AgentConfigDraft``,
``AgentConfigChanges``) and check them whoever built them. Given ``expected_version`` (the version the
caller started from: an API client's ``If-Match``, a page's hidden field), a verb refuses with
``version_conflict`` (412) when another version is stored; the configuration's row is locked while it
is read for a change, so two writers that started from the same version cannot both win.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.exc import IntegrityError

from blueprints.audit import services as audit_log
from blueprints.members.agent_config import (
    DEFAULT_AGENT_TYPE,
    AgentConfigChanges,
    AgentConfigDraft,
    Refusal,
    check,
    check_section_order,
    check_targets,
    version_conflict,
)
from blueprints.members.models import AgentConfig, AgentConfigVersion, Member, Team, User
from blueprints.members.services import hooks, teams
from blueprints.members.services.members import find_member, get_member
from core.db import db, for_update
from core.errors import not_found
from core.events import publish
from core.pagination import Page, paginate
from core.text import LIKE_ESCAPE, contains_pattern

CONFIG_FIELDS = (
    "sections",
    "tools",
    "voice",
    "agent_type",
    "business_category",
    "notifications",
    "call_transfers",
    "section_order",
)


@dataclass(frozen=True)
class AgentView:
    member: Member
    config: AgentConfig | None
    teams: list[Team]
    connections: list[str]


def list_agents(
    organization_id: uuid.UUID,
    *,
    search: str | None,
    category: str | None,
    sort: str,
    order: str,
    offset: int,
    limit: int,
    status: str | None = None,
    after: str | None = None,
) -> Page[AgentView]:
    """One query for the page (agents with their configuration), one for the total when needed, one
    for the teams of the page and one call of the connections provider. ``status``: the members'
    presence (``online``, ``busy``, ``away``, ``offline``). ``after``: an agent's id, the page starts
    after it in the list's order (keyset: agents created or renamed meanwhile never shift a page; one
    query more; an id that is not an AI agent of the organization starts over)."""
    statement = (
        select(Member, AgentConfig)
        .outerjoin(AgentConfig, AgentConfig.member_pk == Member.pk)
        .where(Member.organization_id == organization_id, Member.ai.is_(True))
    )
    if search:
        statement = statement.where(
            func.lower(Member.name).like(contains_pattern(search.lower()), escape=LIKE_ESCAPE)
        )
    if category:
        statement = statement.where(func.lower(AgentConfig.business_category) == category.lower())
    if status:
        statement = statement.where(Member.status == status)
    # Case-insensitive name order, the same on SQLite (binary collation) and PostgreSQL.
    column = func.lower(Member.name) if sort == "name" else Member.created_at
    if after:
        mark = db.session.execute(
            select(column, Member.id).where(
                Member.organization_id == organization_id, Member.ai.is_(True), Member.id == after
            )
        ).first()
        if mark is not None:
            value, member_id = mark
            if order == "desc":
                later = or_(column < value, and_(column == value, Member.id < member_id))
            else:
                later = or_(column > value, and_(column == value, Member.id > member_id))
            statement = statement.where(later)
    direction = column.desc() if order == "desc" else column.asc()
    statement = statement.order_by(direction, Member.id.desc() if order == "desc" else Member.id.asc())
    page = paginate(statement, offset=offset, limit=limit, scalars=False)
    memberships = teams.teams_of([member.pk for member, _ in page.items])
    channels = hooks.connections(organization_id) if page.items else []
    views = [
        AgentView(member, config, memberships.get(member.pk, []), channels) for member, config in page.items
    ]
    return Page(views, page.total)


def get_agent(organization_id: uuid.UUID, agent_id: str) -> AgentView:
    member = find_member(organization_id, agent_id)
    if member is None or not member.ai:
        raise not_found("AI agent")
    config = _config_of(member)
    return AgentView(
        member, config, teams.teams_of([member.pk]).get(member.pk, []), hooks.connections(organization_id)
    )


def _config_of(member: Member, *, lock: bool = False) -> AgentConfig | None:
    """The member's configuration; ``lock``: held until the commit and read afresh, for a change."""
    statement = select(AgentConfig).where(AgentConfig.member_pk == member.pk)
    return db.session.scalar(for_update(statement) if lock else statement)


def _agent_member(organization_id: uuid.UUID, agent_id: str) -> Member:
    member = get_member(organization_id, agent_id)
    if not member.ai:
        raise Refusal(
            400,
            f"Member {agent_id} is not an AI agent: only AI agents have a configuration",
            code="not_an_ai_agent",
        )
    return member


def get_config(organization_id: uuid.UUID, agent_id: str) -> AgentConfig:
    config = _config_of(_agent_member(organization_id, agent_id))
    if config is None:
        raise not_found("Agent configuration")
    return config


def current_version(config: AgentConfig) -> AgentConfigVersion | None:
    """The version row of what is stored now (who saved it, when)."""
    return db.session.scalar(
        select(AgentConfigVersion).where(
            AgentConfigVersion.config_id == config.id, AgentConfigVersion.version == config.version
        )
    )


def _expect(config: AgentConfig | None, expected_version: int | None) -> None:
    """``version_conflict`` (412) when the caller started from another version than the stored one
    (0: no configuration yet); nothing when it did not say."""
    if expected_version is None:
        return
    current = config.version if config is not None else 0
    if expected_version == current:
        return
    row = current_version(config) if config is not None else None
    raise version_conflict(
        expected_version, current, row.changed_by if row else None, row.created_at if row else None
    )


def snapshot(config: AgentConfig) -> dict[str, Any]:
    return {
        "sections": dict(config.sections or {}),
        "tools": dict(config.tools or {}),
        "voice": config.voice,
        "agent_type": config.agent_type,
        "business_category": config.business_category,
        "notifications": dict(config.notifications or {}),
        "call_transfers": list(config.call_transfers or []),
        "section_order": list(config.section_order or []),
    }


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Changed fields as ``{field: {"from": old, "to": new}}``; dictionaries (sections, tools,
    notifications) per key, e.g. ``sections.identity``."""
    changes: dict[str, Any] = {}
    for name in CONFIG_FIELDS:
        old, new = before.get(name), after.get(name)
        if name in ("sections", "tools", "notifications"):
            old, new = old or {}, new or {}
            for key in sorted(set(old) | set(new)):
                if old.get(key) != new.get(key):
                    changes[f"{name}.{key}"] = {"from": old.get(key), "to": new.get(key)}
        elif name == "section_order":
            # snapshots made before the field existed have none: the default order, as an empty one
            if (old or []) != (new or []):
                changes[name] = {"from": old or [], "to": new or []}
        elif old != new:
            changes[name] = {"from": old, "to": new}
    return changes


def _clean(values: dict[str, Any] | None) -> dict[str, Any]:
    """Drop keys sent as null (and null targets inside a notification)."""
    return {
        k: {tk: tv for tk, tv in v.items() if tv is not None} if isinstance(v, dict) else v
        for k, v in (values or {}).items()
        if v is not None
    }


def _record(
    config: AgentConfig,
    member: Member,
    before: dict[str, Any],
    *,
    action: str,
    changed_by: str,
    restored_from: int | None = None,
) -> None:
    after = snapshot(config)
    config.version = (config.version or 0) + 1
    db.session.add(
        AgentConfigVersion(
            config_id=config.id,
            version=config.version,
            action=action,
            restored_from=restored_from,
            snapshot=after,
            diff=diff(before, after),
            changed_by=changed_by,
        )
    )
    publish(
        "agent_config.updated",
        config.organization_id,
        {
            "config_id": str(config.id),
            "version": config.version,
            "action": action,
            # who saved it, for a studio open elsewhere to say so ("Laura saved version 7 …")
            "changed_by": changed_by,
            "changed_by_name": actor_name(config.organization_id, changed_by),
        },
    )
    audit_log.record(
        "agent_config.updated",
        "agent",
        member.id,
        {name.split(".", 1)[0] for name in diff(before, after)},  # top-level names (section keys are free)
        organization_id=config.organization_id,
        version=config.version,
    )


def actor_name(organization_id: uuid.UUID, actor: str | None) -> str | None:
    """The display name of a ``user:<id>`` (a desk user) or ``member:<id>`` actor of the organization (one
    query), or None: an API key, the system, or someone of another organization or since deleted."""
    kind, _colon, identifier = (actor or "").partition(":")
    if kind == "user":
        try:
            user_id = uuid.UUID(identifier)
        except ValueError:
            return None
        return db.session.scalar(
            select(User.name).where(User.organization_id == organization_id, User.id == user_id)
        )
    if kind == "member":
        return db.session.scalar(
            select(Member.name).where(Member.organization_id == organization_id, Member.id == identifier)
        )
    return None


def _empty() -> dict[str, Any]:
    return {
        "sections": {},
        "tools": {},
        "voice": None,
        "agent_type": DEFAULT_AGENT_TYPE,
        "business_category": None,
        "notifications": {},
        "call_transfers": [],
        "section_order": [],
    }


def _new_config(organization_id: uuid.UUID, member: Member) -> AgentConfig:
    """The member's first configuration (version 0 until its first change is recorded). Two first saves
    at once: the one that loses the unique member key reads the winner's row, locked."""
    config = AgentConfig(organization_id=organization_id, member_pk=member.pk, version=0)
    try:
        with db.session.begin_nested():
            db.session.add(config)
            db.session.flush()
    except IntegrityError:
        existing = _config_of(member, lock=True)
        if existing is None:
            raise
        return existing
    return config


def replace_config(
    organization_id: uuid.UUID,
    agent_id: str,
    draft: AgentConfigDraft,
    *,
    changed_by: str,
    expected_version: int | None = None,
) -> tuple[AgentConfig, bool]:
    """POST: the whole configuration becomes ``draft``. Returns (config, created). ``expected_version``
    0 means "there is no configuration yet"."""
    draft = check(draft)
    member = _agent_member(organization_id, agent_id)
    config = _config_of(member, lock=True)
    _expect(config, expected_version)
    values = draft.values()
    transfers = values["call_transfers"] or []
    check_targets(organization_id, transfers)
    if config is None:
        config = _new_config(organization_id, member)
        _expect(config, expected_version)  # another first save won meanwhile
    created = config.version == 0
    before = _empty() if created else snapshot(config)
    config.sections = _clean(values["sections"])
    config.tools = _clean(values["tools"])
    config.voice = values["voice"]
    config.agent_type = values["agent_type"] or DEFAULT_AGENT_TYPE
    config.business_category = values["business_category"]
    config.notifications = _clean(values["notifications"])
    config.call_transfers = transfers
    config.section_order = values["section_order"] or []
    _record(config, member, before, action="create" if created else "replace", changed_by=changed_by)
    db.session.flush()  # the answer shows the new version and updated_at
    return config, created


def update_config(
    organization_id: uuid.UUID,
    agent_id: str,
    changes: AgentConfigChanges,
    *,
    changed_by: str,
    expected_version: int | None = None,
) -> AgentConfig:
    """PATCH: only the fields sent. Sections, tools and notifications merge by key (a key sent as null
    is removed); the other fields are replaced, and ``agent_type`` sent as null returns to ``generic``.
    ``section_order`` (replaced; null: the default order) must name sections of the merged configuration;
    when it is not sent, a section removed leaves the stored order."""
    changes = check(changes)
    member = _agent_member(organization_id, agent_id)
    config = _config_of(member, lock=True)
    if config is None:
        raise not_found("Agent configuration")
    _expect(config, expected_version)
    fields = changes.values()
    before = snapshot(config)
    for name in ("sections", "tools", "notifications"):
        if name in fields and fields[name] is not None:
            merged = dict(getattr(config, name) or {})
            for key, value in fields[name].items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = _clean({key: value})[key]
            setattr(config, name, merged)
        elif name in fields:
            setattr(config, name, {})
    if "call_transfers" in fields:
        transfers = fields["call_transfers"] or []
        check_targets(organization_id, transfers)
        config.call_transfers = transfers
    if "voice" in fields:
        config.voice = fields["voice"]
    if "agent_type" in fields:
        config.agent_type = fields["agent_type"] or DEFAULT_AGENT_TYPE
    if "business_category" in fields:
        config.business_category = fields["business_category"]
    if "section_order" in fields:
        # checked against the sections as merged (the PATCH may add, remove or keep sections)
        check_section_order(fields["section_order"], config.sections or {})
        config.section_order = fields["section_order"] or []
    elif config.section_order and "sections" in fields:
        # a section removed leaves the order too, so a stored order only ever names sections
        config.section_order = [name for name in config.section_order if name in (config.sections or {})]
    if diff(before, snapshot(config)):
        _record(config, member, before, action="update", changed_by=changed_by)
    db.session.flush()  # the answer shows the new version and updated_at
    return config


def list_versions(
    organization_id: uuid.UUID, agent_id: str, *, offset: int, limit: int, before: int | None = None
) -> Page[AgentConfigVersion]:
    """Newest first. ``before``: only the versions older than that number (the desk's "Show more":
    versions saved meanwhile never shift a page)."""
    config = get_config(organization_id, agent_id)
    statement = (
        select(AgentConfigVersion)
        .where(AgentConfigVersion.config_id == config.id)
        .order_by(AgentConfigVersion.version.desc())
    )
    if before is not None:
        statement = statement.where(AgentConfigVersion.version < before)
    return paginate(statement, offset=offset, limit=limit)


def version_numbers(config: AgentConfig) -> list[int]:
    """Every version number of the configuration, newest first (one query; what a page offers to
    compare)."""
    return list(
        db.session.scalars(
            select(AgentConfigVersion.version)
            .where(AgentConfigVersion.config_id == config.id)
            .order_by(AgentConfigVersion.version.desc())
        )
    )


def versions_by_number(config: AgentConfig, numbers: list[int]) -> dict[int, AgentConfigVersion]:
    """The configuration's versions with these numbers (one query)."""
    if not numbers:
        return {}
    rows = db.session.scalars(
        select(AgentConfigVersion).where(
            AgentConfigVersion.config_id == config.id, AgentConfigVersion.version.in_(numbers)
        )
    )
    return {row.version: row for row in rows}


def restore_version(
    organization_id: uuid.UUID,
    agent_id: str,
    version: int,
    *,
    changed_by: str,
    expected_version: int | None = None,
) -> AgentConfig:
    """The configuration becomes version ``version``'s snapshot, recorded as a new version
    (``expected_version``: the version the caller saw stored, as for the other changes)."""
    member = _agent_member(organization_id, agent_id)
    config = _config_of(member, lock=True)
    if config is None:
        raise not_found("Agent configuration")
    _expect(config, expected_version)
    stored = db.session.scalar(
        select(AgentConfigVersion).where(
            AgentConfigVersion.config_id == config.id, AgentConfigVersion.version == version
        )
    )
    if stored is None:
        raise not_found("Configuration version")
    before = snapshot(config)
    saved = stored.snapshot
    check_targets(organization_id, saved.get("call_transfers") or [])
    config.sections = saved.get("sections") or {}
    config.tools = saved.get("tools") or {}
    config.voice = saved.get("voice")
    config.agent_type = saved.get("agent_type") or DEFAULT_AGENT_TYPE
    config.business_category = saved.get("business_category")
    config.notifications = saved.get("notifications") or {}
    config.call_transfers = saved.get("call_transfers") or []
    config.section_order = saved.get("section_order") or []
    _record(config, member, before, action="restore", changed_by=changed_by, restored_from=version)
    db.session.flush()  # the answer shows the new version and updated_at
    return config
