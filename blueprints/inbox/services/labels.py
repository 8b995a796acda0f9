"""Labels: the organization's catalogue, the labels applied to conversations, the automation flows
(sequences) bound to labels, and the lookups built on them."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import delete, func, select

from blueprints.inbox.models import ConversationLabel, Flow, Label
from blueprints.inbox.schemas import FlowIn, FlowPatch, LabelIn, LabelPatch
from blueprints.inbox.services.common import as_uuid, conversation_or_404, record_event
from blueprints.messaging.models import Conversation
from core.db import db, isoformat, utcnow
from core.errors import ApiError


def _key(name: str) -> str:
    return name.strip().lower()


# ---- catalogue -------------------------------------------------------------------------------------------


def serialize_label(label: Label) -> dict[str, Any]:
    return {
        "id": str(label.id),
        "name": label.name,
        "source": label.source,
        "color": label.color,
        "description": label.description,
        "created_at": isoformat(label.created_at),
        "updated_at": isoformat(label.updated_at),
    }


def list_labels(organization_id: uuid.UUID) -> dict[str, Any]:
    rows = list(
        db.session.scalars(
            select(Label).where(Label.organization_id == organization_id).order_by(Label.name_key)
        )
    )
    return {"data": [serialize_label(label) for label in rows], "total": len(rows)}


def _label_or_404(organization_id: uuid.UUID, label_id: str) -> Label:
    identifier = as_uuid(label_id)
    label = db.session.get(Label, identifier) if identifier else None
    if label is None or label.organization_id != organization_id:
        raise ApiError(404, "Label not found")
    return label


def _check_unique(organization_id: uuid.UUID, name: str, exclude: uuid.UUID | None = None) -> None:
    statement = select(Label.id).where(Label.organization_id == organization_id, Label.name_key == _key(name))
    if exclude:
        statement = statement.where(Label.id != exclude)
    if db.session.scalar(statement):
        raise ApiError(409, f"name: a label named {name!r} already exists")


def create_label(organization_id: uuid.UUID, body: LabelIn) -> dict[str, Any]:
    _check_unique(organization_id, body.name)
    label = Label(
        organization_id=organization_id,
        name=body.name,
        name_key=_key(body.name),
        source=body.source,
        color=body.color,
        description=body.description,
    )
    db.session.add(label)
    db.session.commit()
    return serialize_label(label)


def update_label(organization_id: uuid.UUID, label_id: str, body: LabelPatch) -> dict[str, Any]:
    label = _label_or_404(organization_id, label_id)
    fields = body.model_fields_set
    if "name" in fields and body.name and body.name != label.name:
        _check_unique(organization_id, body.name, exclude=label.id)
        _rename_applied(organization_id, label.name_key, body.name)
        label.name, label.name_key = body.name, _key(body.name)
    for field in ("source", "color", "description"):
        if field in fields and (field != "source" or getattr(body, field)):
            setattr(label, field, getattr(body, field))
    label.updated_at = utcnow()
    db.session.commit()
    return serialize_label(label)


def delete_label(organization_id: uuid.UUID, label_id: str) -> dict[str, Any]:
    """Remove the label from the catalogue and from every conversation that carries it."""
    label = _label_or_404(organization_id, label_id)
    affected = _conversations_with(organization_id, label.name_key)
    for conversation in affected:
        conversation.extra = {
            **(conversation.extra or {}),
            "labels": [n for n in (conversation.extra or {}).get("labels", []) if _key(n) != label.name_key],
        }
    db.session.execute(
        delete(ConversationLabel).where(
            ConversationLabel.organization_id == organization_id, ConversationLabel.name_key == label.name_key
        )
    )
    db.session.delete(label)
    db.session.commit()
    return {"id": label_id, "deleted": True, "conversations_updated": len(affected)}


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
        conversation.extra = {**(conversation.extra or {}), "labels": names}
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
    extra = dict(conversation.extra or {})
    extra["labels"] = list(wanted.values())
    _run_label_flows(conversation, extra, added)
    conversation.extra = extra
    db.session.flush()
    return added, removed


def _run_label_flows(conversation: Conversation, extra: dict[str, Any], added: list[str]) -> None:
    """A trigger label starts its flow (``extra.flow_id``); an interrupt label stops the running one."""
    if not added:
        return
    keys = {_key(n) for n in added}
    flows = list(
        db.session.scalars(
            select(Flow).where(Flow.organization_id == conversation.organization_id, Flow.status == "active")
        )
    )
    running = extra.get("flow_id")
    for flow in flows:
        if running == str(flow.id) and keys & {_key(n) for n in flow.interrupt_labels}:
            extra["flow_id"] = None
            extra["flow_member_id"] = None
            record_event(conversation, "flow_interrupted", {"flow_id": str(flow.id), "name": flow.name})
            running = None
    for flow in flows:
        if keys & {_key(n) for n in flow.trigger_labels} and running is None:
            extra["flow_id"] = str(flow.id)
            extra["flow_member_id"] = flow.member_id
            record_event(conversation, "flow_started", {"flow_id": str(flow.id), "name": flow.name})
            running = str(flow.id)


def enriched_labels(organization_id: uuid.UUID, conversation_id: str) -> dict[str, Any]:
    conversation = conversation_or_404(organization_id, conversation_id)
    applied = {_key(n): n for n in (conversation.extra or {}).get("labels", [])}
    catalogue = list(
        db.session.scalars(
            select(Label).where(Label.organization_id == organization_id).order_by(Label.name_key)
        )
    )
    flows = list(
        db.session.scalars(select(Flow).where(Flow.organization_id == organization_id).order_by(Flow.name))
    )
    entries: list[tuple[str, str]] = [(label.name, label.source) for label in catalogue]
    known = {label.name_key for label in catalogue}
    entries += [(name, "conversation") for key, name in applied.items() if key not in known]

    def refs(name: str, attribute: str) -> list[dict[str, str]]:
        return [
            {"flowId": str(flow.id), "name": flow.name, "status": flow.status}
            for flow in flows
            if _key(name) in {_key(n) for n in getattr(flow, attribute)}
        ]

    return {
        "labels": [
            {
                "name": name,
                "source": source,
                "isApplied": _key(name) in applied,
                "sequences": {
                    "triggers": refs(name, "trigger_labels"),
                    "interrupts": refs(name, "interrupt_labels"),
                },
            }
            for name, source in entries
        ]
    }


def addresses_by_label(organization_id: uuid.UUID, label: str) -> dict[str, Any]:
    rows = db.session.scalars(
        select(Conversation.contact_address)
        .join(ConversationLabel, ConversationLabel.conversation_id == Conversation.id)
        .where(
            ConversationLabel.organization_id == organization_id, ConversationLabel.name_key == _key(label)
        )
        .group_by(Conversation.contact_address)
        .order_by(func.min(Conversation.created_at), Conversation.contact_address)
    )
    return {"addresses": list(rows)}


# ---- flows -----------------------------------------------------------------------------------------------


def serialize_flow(flow: Flow) -> dict[str, Any]:
    return {
        "id": str(flow.id),
        "name": flow.name,
        "status": flow.status,
        "trigger_labels": list(flow.trigger_labels or []),
        "interrupt_labels": list(flow.interrupt_labels or []),
        "member_id": flow.member_id,
        "steps": list(flow.steps or []),
        "created_at": isoformat(flow.created_at),
        "updated_at": isoformat(flow.updated_at),
    }


def list_flows(organization_id: uuid.UUID) -> dict[str, Any]:
    rows = list(
        db.session.scalars(select(Flow).where(Flow.organization_id == organization_id).order_by(Flow.name))
    )
    return {"data": [serialize_flow(f) for f in rows], "total": len(rows)}


def _flow_or_404(organization_id: uuid.UUID, flow_id: str) -> Flow:
    identifier = as_uuid(flow_id)
    flow = db.session.get(Flow, identifier) if identifier else None
    if flow is None or flow.organization_id != organization_id:
        raise ApiError(404, "Flow not found")
    return flow


def get_flow(organization_id: uuid.UUID, flow_id: str) -> dict[str, Any]:
    return serialize_flow(_flow_or_404(organization_id, flow_id))


def create_flow(organization_id: uuid.UUID, body: FlowIn) -> dict[str, Any]:
    flow = Flow(organization_id=organization_id, **body.model_dump())
    db.session.add(flow)
    _ensure_catalogued(organization_id, [*body.trigger_labels, *body.interrupt_labels], "automation")
    db.session.commit()
    return serialize_flow(flow)


def update_flow(organization_id: uuid.UUID, flow_id: str, body: FlowPatch) -> dict[str, Any]:
    flow = _flow_or_404(organization_id, flow_id)
    for field, value in body.sent_fields().items():
        if value is not None or field == "member_id":
            setattr(flow, field, value)
    _ensure_catalogued(organization_id, [*flow.trigger_labels, *flow.interrupt_labels], "automation")
    flow.updated_at = utcnow()
    db.session.commit()
    return serialize_flow(flow)


def delete_flow(organization_id: uuid.UUID, flow_id: str) -> dict[str, Any]:
    flow = _flow_or_404(organization_id, flow_id)
    db.session.delete(flow)
    db.session.commit()
    return {"id": flow_id, "deleted": True}
