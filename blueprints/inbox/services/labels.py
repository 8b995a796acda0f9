"""Labels: the organization's catalogue, the labels applied to conversations, the automation flows
(sequences) bound to labels, and the lookups built on them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select

from blueprints.audit import services as audit_log
from blueprints.inbox.models import ConversationLabel, Flow, Label
from blueprints.inbox.services.common import conversation_or_404, record_event
from blueprints.members.services.members import find_member
from blueprints.messaging import conversation_state
from blueprints.messaging.models import Conversation
from core.db import db, utcnow
from core.errors import ApiError
from core.tenancy import find_for_org

MAX_NAME = 80
SOURCES = ("manual", "automation", "ai", "conversation")
FLOW_FIELDS = ("name", "status", "trigger_labels", "interrupt_labels", "member_id", "steps")


def label_key(name: str) -> str:
    """Label names are unique and matched ignoring case and surrounding spaces."""
    return name.strip().lower()


_key = label_key


def clean_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned or len(cleaned) > MAX_NAME:
        raise ApiError(400, f"label: must have 1 to {MAX_NAME} characters", param="label")
    return cleaned


# ---- catalogue -------------------------------------------------------------------------------------------


def list_labels(organization_id: uuid.UUID) -> list[Label]:
    return list(
        db.session.scalars(
            select(Label).where(Label.organization_id == organization_id).order_by(Label.name_key)
        )
    )


def _label_or_404(organization_id: uuid.UUID, label_id: str) -> Label:
    label = find_for_org(Label, label_id, organization_id)
    if label is None:
        raise ApiError(404, "Label not found")
    return label


get_label = _label_or_404  # the organization's label by id; another organization's or unknown: 404


def _taken(name: str) -> ApiError:
    return ApiError(409, f"name: a label named {name!r} already exists", code="label_taken", param="name")


def _check_unique(organization_id: uuid.UUID, name: str, exclude: uuid.UUID | None = None) -> None:
    statement = select(Label.id).where(Label.organization_id == organization_id, Label.name_key == _key(name))
    if exclude:
        statement = statement.where(Label.id != exclude)
    if db.session.scalar(statement):
        raise _taken(name)


def create_label(
    organization_id: uuid.UUID,
    name: str,
    *,
    source: str = "manual",
    color: str | None = None,
    description: str | None = None,
) -> Label:
    _check_unique(organization_id, name)
    label = Label(
        organization_id=organization_id,
        name=name,
        name_key=_key(name),
        source=source,
        color=color,
        description=description,
    )
    db.session.add(label)
    db.session.flush()
    audit_log.record(
        "label.created",
        "label",
        label.id,
        organization_id=organization_id,
        before_after={"name": (None, name), **{f: (None, v) for f, v in _described(color, description)}},
    )
    return label


def _described(color: str | None, description: str | None) -> list[tuple[str, str]]:
    """The optional fields a new label was given, for its audit entry."""
    return [(field, value) for field, value in (("color", color), ("description", description)) if value]


def update_label(organization_id: uuid.UUID, label_id: str, changes: Mapping[str, Any]) -> Label:
    """Change the fields in ``changes`` (``name``, ``source``, ``color``, ``description``); a new name
    follows on every conversation that carries the label."""
    label = _label_or_404(organization_id, label_id)
    before = {field: getattr(label, field) for field in ("name", "source", "color", "description")}
    name = changes.get("name")
    if name and name != label.name:
        _check_unique(organization_id, name, exclude=label.id)
        _rename_applied(organization_id, label.name_key, name)
        label.name, label.name_key = name, _key(name)
    for field in ("source", "color", "description"):
        if field in changes and (field != "source" or changes[field]):
            setattr(label, field, changes[field])
    label.updated_at = utcnow()
    db.session.flush()
    changed = {f: (old, getattr(label, f)) for f, old in before.items() if getattr(label, f) != old}
    if changed:  # a save that changes nothing records nothing
        audit_log.record(
            "label.updated", "label", label.id, organization_id=organization_id, before_after=changed
        )
    return label


def delete_label(organization_id: uuid.UUID, label_id: str) -> int:
    """Remove the label from the catalogue and from every conversation that carries it; returns how many
    conversations were changed."""
    label = _label_or_404(organization_id, label_id)
    affected = _conversations_with(organization_id, label.name_key)
    for conversation in affected:
        kept = [n for n in (conversation.extra or {}).get("labels", []) if _key(n) != label.name_key]
        conversation_state.set_labels(conversation, kept)
    db.session.execute(
        delete(ConversationLabel).where(
            ConversationLabel.organization_id == organization_id, ConversationLabel.name_key == label.name_key
        )
    )
    db.session.delete(label)
    db.session.flush()
    audit_log.record(
        "label.deleted",
        "label",
        label.id,
        organization_id=organization_id,
        before_after={"name": (label.name, None)},
    )
    return len(affected)


def _conversations_with(organization_id: uuid.UUID, name_key: str) -> list[Conversation]:
    return list(
        db.session.scalars(
            select(Conversation)
            .join(ConversationLabel, ConversationLabel.conversation_id == Conversation.id)
            .where(
                ConversationLabel.organization_id == organization_id, ConversationLabel.name_key == name_key
            )
        )
    )


def _rename_applied(organization_id: uuid.UUID, old_key: str, new_name: str) -> None:
    for conversation in _conversations_with(organization_id, old_key):
        names = [
            (new_name if _key(n) == old_key else n) for n in (conversation.extra or {}).get("labels", [])
        ]
        conversation_state.set_labels(conversation, names)
    for row in db.session.scalars(
        select(ConversationLabel).where(
            ConversationLabel.organization_id == organization_id, ConversationLabel.name_key == old_key
        )
    ):
        db.session.delete(row)
        db.session.flush()
        db.session.add(
            ConversationLabel(
                conversation_id=row.conversation_id,
                organization_id=organization_id,
                name=new_name,
                name_key=_key(new_name),
                created_at=row.created_at,
            )
        )


def _ensure_catalogued(organization_id: uuid.UUID, names: list[str], source: str) -> None:
    if not names:
        return
    known = set(
        db.session.scalars(
            select(Label.name_key).where(
                Label.organization_id == organization_id, Label.name_key.in_([_key(n) for n in names])
            )
        )
    )
    for name in names:
        if _key(name) not in known:
            db.session.add(
                Label(organization_id=organization_id, name=name, name_key=_key(name), source=source)
            )
            known.add(_key(name))


# ---- labels on conversations -----------------------------------------------------------------------------


def apply_labels(conversation: Conversation, names: list[str], *, by: str) -> tuple[list[str], list[str]]:
    """Make ``names`` the conversation's labels; audit each addition and removal; start or interrupt the
    flows bound to the labels that were added. Returns (added, removed). Flushes, does not commit."""
    current = {
        row.name_key: row
        for row in db.session.scalars(
            select(ConversationLabel).where(ConversationLabel.conversation_id == conversation.id)
        )
    }
    wanted = {_key(n): n for n in names}
    added = [wanted[k] for k in wanted if k not in current]
    removed = [current[k].name for k in current if k not in wanted]
    for key, row in current.items():
        if key not in wanted:
            db.session.delete(row)
    for name in added:
        db.session.add(
            ConversationLabel(
                conversation_id=conversation.id,
                organization_id=conversation.organization_id,
                name=name,
                name_key=_key(name),
            )
        )
        record_event(conversation, "label_added", {"label": name, "by": by})
    for name in removed:
        record_event(conversation, "label_removed", {"label": name, "by": by})
    _ensure_catalogued(conversation.organization_id, added, "conversation")
    conversation_state.set_labels(conversation, list(wanted.values()))
    _run_label_flows(conversation, added)
    db.session.flush()
    return added, removed


def _run_label_flows(conversation: Conversation, added: list[str]) -> None:
    """A trigger label starts its flow (``extra.flow_id``); an interrupt label stops the running one."""
    if not added:
        return
    keys = {_key(n) for n in added}
    flows = list(
        db.session.scalars(
            select(Flow).where(Flow.organization_id == conversation.organization_id, Flow.status == "active")
        )
    )
    running = (conversation.extra or {}).get("flow_id")
    for flow in flows:
        if running == str(flow.id) and keys & {_key(n) for n in flow.interrupt_labels}:
            conversation_state.set_flow(conversation, None, None)
            record_event(conversation, "flow_interrupted", {"flow_id": str(flow.id), "name": flow.name})
            running = None
    for flow in flows:
        if keys & {_key(n) for n in flow.trigger_labels} and running is None:
            conversation_state.set_flow(conversation, str(flow.id), flow.member_id)
            record_event(conversation, "flow_started", {"flow_id": str(flow.id), "name": flow.name})
            running = str(flow.id)


@dataclass(frozen=True)
class EnrichedLabel:
    """A label as a conversation sees it: applied or not, and the flows it starts and stops."""

    name: str
    source: str
    applied: bool
    triggers: list[Flow]
    interrupts: list[Flow]


def enriched_labels(organization_id: uuid.UUID, conversation_id: str) -> list[EnrichedLabel]:
    """Every label of the catalogue, then the applied labels outside it (source ``conversation``)."""
    conversation = conversation_or_404(organization_id, conversation_id)
    applied = {_key(n): n for n in (conversation.extra or {}).get("labels", [])}
    catalogue = list_labels(organization_id)
    flows = list_flows(organization_id)
    entries: list[tuple[str, str]] = [(label.name, label.source) for label in catalogue]
    known = {label.name_key for label in catalogue}
    entries += [(name, "conversation") for key, name in applied.items() if key not in known]

    def bound(name: str, attribute: str) -> list[Flow]:
        return [flow for flow in flows if _key(name) in {_key(n) for n in getattr(flow, attribute)}]

    return [
        EnrichedLabel(
            name=name,
            source=source,
            applied=_key(name) in applied,
            triggers=bound(name, "trigger_labels"),
            interrupts=bound(name, "interrupt_labels"),
        )
        for name, source in entries
    ]


@dataclass(frozen=True)
class LabelFlows:
    """The flows (sequences) a label starts and the ones it stops, as :func:`_run_label_flows` reads them."""

    triggers: list[Flow]
    interrupts: list[Flow]


def flows_by_label(organization_id: uuid.UUID) -> dict[str, LabelFlows]:
    """Every label key named by a flow, with the flows it triggers and interrupts (one query for all the
    catalogue: the settings page shows them per label)."""
    found: dict[str, LabelFlows] = {}
    for flow in list_flows(organization_id):
        for attribute in ("trigger_labels", "interrupt_labels"):
            for name in {_key(n) for n in getattr(flow, attribute)}:
                entry = found.setdefault(name, LabelFlows([], []))
                (entry.triggers if attribute == "trigger_labels" else entry.interrupts).append(flow)
    return found


def addresses_by_label(organization_id: uuid.UUID, label: str) -> list[str]:
    rows = db.session.scalars(
        select(Conversation.contact_address)
        .join(ConversationLabel, ConversationLabel.conversation_id == Conversation.id)
        .where(
            ConversationLabel.organization_id == organization_id, ConversationLabel.name_key == _key(label)
        )
        .group_by(Conversation.contact_address)
        .order_by(func.min(Conversation.created_at), Conversation.contact_address)
    )
    return list(rows)


# ---- flows -----------------------------------------------------------------------------------------------


def list_flows(organization_id: uuid.UUID) -> list[Flow]:
    return list(
        db.session.scalars(select(Flow).where(Flow.organization_id == organization_id).order_by(Flow.name))
    )


def get_flow(organization_id: uuid.UUID, flow_id: str) -> Flow:
    flow = find_for_org(Flow, flow_id, organization_id)
    if flow is None:
        raise ApiError(404, "Flow not found")
    return flow


def _check_flow_member(organization_id: uuid.UUID, member_id: str | None) -> None:
    """A flow runs as a member (typically an AI agent) of the same organization: an id of another
    organization, or of nobody, is refused naming the field."""
    if member_id is not None and find_member(organization_id, member_id) is None:
        raise ApiError(400, "member_id: no member with this id in the organization", param="member_id")


def create_flow(
    organization_id: uuid.UUID,
    name: str,
    *,
    status: str = "active",
    trigger_labels: list[str] | None = None,
    interrupt_labels: list[str] | None = None,
    member_id: str | None = None,
    steps: list[dict[str, Any]] | None = None,
) -> Flow:
    """An automation sequence; its labels are catalogued (source ``automation``) when new."""
    _check_flow_member(organization_id, member_id)
    flow = Flow(
        organization_id=organization_id,
        name=name,
        status=status,
        trigger_labels=list(trigger_labels or []),
        interrupt_labels=list(interrupt_labels or []),
        member_id=member_id,
        steps=list(steps or []),
    )
    db.session.add(flow)
    _ensure_catalogued(organization_id, [*flow.trigger_labels, *flow.interrupt_labels], "automation")
    db.session.flush()
    return flow


def update_flow(organization_id: uuid.UUID, flow_id: str, changes: Mapping[str, Any]) -> Flow:
    """Change the fields in ``changes``; null leaves a field as it is, except ``member_id`` (null: none)."""
    flow = get_flow(organization_id, flow_id)
    if changes.get("member_id") is not None:
        _check_flow_member(organization_id, changes["member_id"])
    for field, value in changes.items():
        if field not in FLOW_FIELDS:
            raise ValueError(f"not a flow field: {field}")
        if value is not None or field == "member_id":
            setattr(flow, field, value)
    _ensure_catalogued(organization_id, [*flow.trigger_labels, *flow.interrupt_labels], "automation")
    flow.updated_at = utcnow()
    db.session.flush()
    return flow


def delete_flow(organization_id: uuid.UUID, flow_id: str) -> None:
    db.session.delete(get_flow(organization_id, flow_id))
    db.session.flush()
    audit_log.record("flow.deleted", "flow", flow_id, organization_id=organization_id)
