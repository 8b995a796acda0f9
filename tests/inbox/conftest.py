"""Fixtures for the inbox tests: conversations written straight to the store (fast, many), members and
teams through the members API, and the fake Meta server for what goes through channels."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blueprints.inbox.models import ConversationLabel
from blueprints.messaging.models import Contact, ContactAddress, Conversation, Message
from core.db import db
from tests.conftest import Org
from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def msg(org: Org, suffix: str) -> str:
    return f"/v2/messages/organizations/{org.id}{suffix}"


def mem(org: Org, suffix: str) -> str:
    return f"/v1/members/organizations/{org.id}{suffix}"


MakeConversation = Callable[..., str]


@pytest.fixture
def make_conversation(app: Flask) -> MakeConversation:
    """Create a contact, a conversation and ``messages`` messages; returns the conversation id."""
    counter = iter(range(10_000))

    def _make(
        org: Org,
        *,
        name: str | None = None,
        contact_name: str = "Contact",
        address: str | None = None,
        service: str = "whatsapp",
        organization_address: str = "106540352242922",
        status: str = "active",
        archived: bool = False,
        member_id: str | None = None,
        team_id: str | None = None,
        labels: list[str] | None = None,
        created_at: datetime | None = None,
        last_message_at: datetime | None = None,
        messages: int = 0,
        crm_contact_id: str | None = None,
        broadcast_id: uuid.UUID | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        n = next(counter)
        organization_id = uuid.UUID(org.id)
        address = address or f"+5255{n:08d}"
        created = created_at or T0 + timedelta(minutes=n)
        with app.app_context():
            contact = Contact(
                organization_id=organization_id, name=contact_name, crm_contact_id=crm_contact_id
            )
            db.session.add(contact)
            db.session.flush()
            db.session.add(
                ContactAddress(
                    organization_id=organization_id, contact_id=contact.id, service=service, address=address
                )
            )
            conversation = Conversation(
                organization_id=organization_id,
                contact_id=contact.id,
                organization_address=organization_address,
                contact_address=address,
                service=service,
                status=status,
                name=name,
                member_id=member_id,
                team_id=team_id,
                archived_at=created if archived else None,
                last_message_at=last_message_at or (created if messages else None),
                broadcast_id=broadcast_id,
                is_broadcast=broadcast_id is not None,
                extra={"labels": list(labels or []), **(extra or {})},
                created_at=created,
                updated_at=created,
            )
            db.session.add(conversation)
            db.session.flush()
            for label in labels or []:
                db.session.add(
                    ConversationLabel(
                        conversation_id=conversation.id,
                        organization_id=organization_id,
                        name=label,
                        name_key=label.lower(),
                    )
                )
            for index in range(messages):
                db.session.add(
                    Message(
                        organization_id=organization_id,
                        conversation_id=conversation.id,
                        direction="incoming" if index % 2 == 0 else "outgoing",
                        service=service,
                        organization_address=organization_address,
                        contact_address=address,
                        external_id=f"wamid.{conversation.id.hex}.{index}",
                        timestamp=created + timedelta(seconds=index),
                        content={"kind": "text", "text": f"message {index}"},
                        status={"received": created.isoformat()},
                        current_status="received",
                    )
                )
            db.session.commit()
            return str(conversation.id)

    return _make


@pytest.fixture
def make_member(client: FlaskClient) -> Callable[..., str]:
    def _make(org: Org, name: str, *, status: str | None = None, ai: bool = False) -> str:
        response = client.post(
            msg(org, "/members"),
            json={"name": name, "ai": ai, "organization_id": org.id},
            headers=org.headers(),
        )
        assert response.status_code in (200, 201), response.get_json()
        member_id = response.get_json()["id"]
        if status:
            set_status(client, org, member_id, status)
        return member_id

    return _make


def set_status(client: FlaskClient, org: Org, member_id: str, status: str) -> None:
    response = client.patch(
        mem(org, f"/members/{member_id}/status"), json={"status": status}, headers=org.headers()
    )
    assert response.status_code == 200, response.get_json()


@pytest.fixture
def make_team(client: FlaskClient) -> Callable[..., str]:
    def _make(org: Org, name: str, member_ids: list[str]) -> str:
        response = client.post(
            mem(org, "/teams"), json={"name": name, "member_ids": member_ids}, headers=org.headers()
        )
        assert response.status_code == 201, response.get_json()
        return response.get_json()["id"]

    return _make
