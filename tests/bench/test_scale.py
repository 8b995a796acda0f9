"""``flask --app app demo seed --scale N``: the large dataset generator (bench/scale), at a tiny scale.

The rows are bulk inserts, so these tests check what the services would have kept true had they written
them (denormalised columns, counters, label rows, histories) and that the normal JSON API reads them."""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from decimal import Decimal
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import func, select, update

from bench.scale import SCALE_ORGANIZATION_ID, Counts, common, counts_of
from bench.scale.common import parse_scale
from blueprints.crm.models import (
    ContactIdentity,
    CrmSettings,
    Deal,
    DealLineItem,
    DealStageVisit,
    Pipeline,
    Ticket,
    TicketStateChange,
)
from blueprints.inbox.models import ConversationLabel, Label
from blueprints.members.models import Member, MemberStatusEvent
from blueprints.members.services.users import authenticate
from blueprints.messaging.models import Contact, ContactAddress, Conversation, Message
from blueprints.organizations.models import Organization
from core.db import db

SCALE = "0.001"
ORG = SCALE_ORGANIZATION_ID


def _seed(runner: FlaskCliRunner, scale: str = SCALE) -> str:
    result = runner.invoke(args=["demo", "seed", "--scale", scale, "--quiet"])
    assert result.exit_code == 0, result.output
    return result.output


def _line(output: str, start: str) -> str:
    return next(line.strip() for line in output.splitlines() if line.strip().startswith(start))


def _api_key(output: str) -> str:
    block = output.split("Large dataset:")[1]
    return _line(block, "live API key:").split(": ")[1]


def test_scale_parses_large_and_fractions_and_refuses_the_rest(runner: FlaskCliRunner) -> None:
    assert parse_scale("large") == 1.0 and parse_scale("0.01") == 0.01 and parse_scale("1") == 1.0
    for wrong in ("0", "1.5", "-0.1", "nan", "big"):
        result = runner.invoke(args=["demo", "seed", "--scale", wrong])
        assert result.exit_code == 2, (wrong, result.output)
        assert "--scale" in result.output and "large" in result.output


def test_counts_follow_the_scale() -> None:
    full = Counts.at(1.0)
    assert (full.conversations, full.messages, full.contacts) == (100_000, 1_000_000, 50_000)
    assert (full.deals, full.tickets, full.tasks) == (10_000, 50_000, 30_000)
    hundredth = Counts.at(0.01)
    assert (hundredth.conversations, hundredth.messages, hundredth.tickets) == (1_000, 10_000, 500)


def _check_messaging(app: Flask) -> dict[str, Any]:
    """The conversations' denormalised columns against their messages, label rows, contact links."""
    with app.app_context():
        conversations = {
            c.id: c
            for c in db.session.scalars(select(Conversation).where(Conversation.organization_id == ORG))
        }
        stats: dict[uuid.UUID, dict[str, Any]] = defaultdict(
            lambda: {"count": 0, "first": None, "last": None, "in": None}
        )
        for message in db.session.execute(
            select(Message.conversation_id, Message.organization_id, Message.timestamp, Message.direction,
                   Message.current_status, Message.status, Message.service, Message.contact_address)
            .where(Message.organization_id == ORG)
        ):  # fmt: skip
            conversation = conversations[message.conversation_id]  # every message's conversation exists...
            assert conversation.organization_id == ORG  # ...and is the organization's
            assert (message.service, message.contact_address) == (
                conversation.service,
                conversation.contact_address,
            )
            s = stats[message.conversation_id]
            s["count"] += 1
            s["first"] = min(filter(None, (s["first"], message.timestamp)))
            s["last"] = max(filter(None, (s["last"], message.timestamp)))
            if message.direction == "incoming":
                s["in"] = max(filter(None, (s["in"], message.timestamp)))
                assert message.current_status == "received" and set(message.status) == {"received"}
            else:
                assert message.current_status in {"read", "delivered", "sent", "failed"}
                assert message.current_status in message.status
                assert ("error" in message.status) == (message.current_status == "failed")
        assert set(stats) == set(conversations)  # no conversation without messages
        for conversation_id, conversation in conversations.items():
            s = stats[conversation_id]
            assert conversation.last_message_at == s["last"]
            assert conversation.last_incoming_at == s["in"]
            assert conversation.created_at == s["first"]
            if conversation.archived_at is not None:
                assert conversation.archived_at >= conversation.last_incoming_at
            assert (conversation.member_id is None) == ("assignment" not in conversation.extra)
        rows = db.session.execute(
            select(ConversationLabel.conversation_id, ConversationLabel.name, ConversationLabel.name_key)
            .where(ConversationLabel.organization_id == ORG)
        ).all()  # fmt: skip
        applied: dict[uuid.UUID, list[str]] = defaultdict(list)
        for conversation_id, name, key in rows:
            assert key == name.lower()
            applied[conversation_id].append(name)
        for conversation_id, conversation in conversations.items():
            assert sorted(applied.get(conversation_id, [])) == sorted(conversation.extra["labels"])
        catalogue = set(db.session.scalars(select(Label.name_key).where(Label.organization_id == ORG)))
        assert {key for _, _, key in rows} <= catalogue
        # one conversation per thread, its address the contact's on that service
        addresses = {
            (a.contact_id, a.service): a.address
            for a in db.session.scalars(select(ContactAddress).where(ContactAddress.organization_id == ORG))
        }
        for conversation in conversations.values():
            assert addresses[(conversation.contact_id, conversation.service)] == conversation.contact_address
        # a contact's CRM link is the CRM contact whose phone is its WhatsApp number
        phones = dict(
            db.session.execute(
                select(ContactIdentity.contact_id, ContactIdentity.value).where(
                    ContactIdentity.organization_id == ORG, ContactIdentity.kind == "phone"
                )
            ).all()
        )
        linked = db.session.scalars(
            select(Contact).where(Contact.organization_id == ORG, Contact.crm_contact_id.is_not(None))
        ).all()
        assert linked and len(linked) == len(phones)
        for contact in linked:
            assert phones[uuid.UUID(contact.crm_contact_id)] == addresses[(contact.id, "whatsapp")]
        services = Counter(c.service for c in conversations.values())
        return {
            "conversations": conversations,
            "counts": {cid: s["count"] for cid, s in stats.items()},
            "services": services,
            "labels": Counter(name.lower() for _, name, _ in rows),
        }


def _check_crm_and_members(app: Flask, expected: Counts) -> None:
    with app.app_context():
        deals = db.session.scalars(select(Deal).where(Deal.organization_id == ORG)).all()
        totals: dict[uuid.UUID, Decimal] = defaultdict(Decimal)
        for item in db.session.scalars(select(DealLineItem).where(DealLineItem.organization_id == ORG)):
            assert item.currency and item.total >= 0
            totals[item.deal_id] += item.total
        numbers: dict[uuid.UUID, list[int]] = defaultdict(list)
        for deal in deals:
            assert deal.amount == totals[deal.id]  # the amount is the sum of its line items
            numbers[deal.pipeline_id].append(deal.number)
            open_visits = db.session.scalars(
                select(DealStageVisit).where(
                    DealStageVisit.deal_id == deal.id, DealStageVisit.left_at.is_(None)
                )
            ).all()
            assert [v.stage_id for v in open_visits] == [deal.stage_id]
            assert open_visits[0].entered_at == deal.stage_entered_at
            assert (deal.closed_at is None) == (deal.status == "open")
        for pipeline in db.session.scalars(select(Pipeline).where(Pipeline.organization_id == ORG)):
            assert sorted(numbers[pipeline.id]) == list(range(1, pipeline.deal_counter + 1))
        assert len(db.session.scalars(select(Pipeline).where(Pipeline.organization_id == ORG)).all()) == 3
        tickets = db.session.scalars(select(Ticket).where(Ticket.organization_id == ORG)).all()
        assert sorted(t.number for t in tickets) == list(range(1, expected.tickets + 1))
        settings = db.session.scalar(select(CrmSettings).where(CrmSettings.organization_id == ORG))
        assert settings is not None and settings.ticket_counter == expected.tickets
        for ticket in tickets:
            assert ticket.reference == f"TCK-{ticket.number}"
            history = db.session.scalars(
                select(TicketStateChange)
                .where(TicketStateChange.ticket_id == ticket.id)
                .order_by(TicketStateChange.changed_at)
            ).all()
            assert history[0].from_state is None and history[-1].to_state == ticket.state
            assert (ticket.closed_at is not None) == (ticket.state == "closed")
        for member in db.session.scalars(select(Member).where(Member.organization_id == ORG)):
            last = db.session.scalars(
                select(MemberStatusEvent)
                .where(MemberStatusEvent.organization_id == ORG, MemberStatusEvent.member_id == member.id)
                .order_by(MemberStatusEvent.at.desc())
                .limit(1)
            ).one()
            assert (last.to_status, last.at) == (member.status, member.status_since)


def test_seed_scale_makes_a_consistent_organization_the_api_reads(
    app: Flask, runner: FlaskCliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # small batches, so that children and their parents meet across many batch boundaries
    monkeypatch.setattr(common, "BATCH", 37)
    output = _seed(runner)
    expected = Counts.at(float(SCALE))
    with app.app_context():
        found = counts_of(ORG)
        organization = db.session.get(Organization, ORG)
        assert organization is not None and organization.name == "Scale Co"
        assert organization.timezone == "America/Mexico_City"
    assert found["messaging_contacts"] == expected.contacts == 50
    assert found["conversations"] == expected.conversations == 100
    assert found["messages"] == expected.messages == 1_000
    assert (found["crm_deals"], found["crm_tickets"], found["crm_tasks"]) == (10, 50, 30)
    assert found["crm_accounts"] == expected.crm_accounts and found["crm_contacts"] == expected.crm_contacts
    assert found["members"] == 25 and found["member_status_events"] > 20 * 200  # a year of working days
    assert f"conversations: {expected.conversations}" in output

    shape = _check_messaging(app)
    assert shape["services"]["whatsapp"] == 70 and shape["services"]["instagram"] == 20
    assert shape["services"]["messenger"] == 10
    lengths = sorted(shape["counts"].values())
    assert lengths[0] >= 1 and lengths[len(lengths) // 2] < 10 < lengths[-1]  # many short, a few long
    _check_crm_and_members(app, expected)

    client = app.test_client()
    headers = {"X-API-Key": _api_key(output)}
    msg = f"/v2/messages/organizations/{ORG}"
    page = client.get(f"{msg}/conversations?take=5&include_messages=3", headers=headers).get_json()
    assert page["total"] == 100 and len(page["data"]) == 5
    newest = max(shape["conversations"].values(), key=lambda c: (c.last_message_at, c.id))
    assert page["data"][0]["id"] == str(newest.id)
    assert all(1 <= len(item["messages"]) <= 3 for item in page["data"])
    label, times = shape["labels"].most_common(1)[0]
    by_label = client.get(f"{msg}/conversations?labels={label}", headers=headers).get_json()
    assert by_label["total"] == times
    archived = client.get(f"{msg}/conversations?status=archived", headers=headers).get_json()
    assert (
        archived["total"] == sum(1 for c in shape["conversations"].values() if c.archived_at is not None) > 0
    )
    longest = max(shape["counts"], key=shape["counts"].get)
    messages = client.get(f"{msg}/messages?conversation_id={longest}&take=200", headers=headers).get_json()
    assert messages["total"] == shape["counts"][longest]
    crm = f"/v1/crm/organizations/{ORG}"
    assert client.get(f"{crm}/deals", headers=headers).get_json()["total"] == 10
    assert client.get(f"{crm}/tickets", headers=headers).get_json()["total"] == 50
    assert client.get(f"{crm}/tasks", headers=headers).get_json()["total"] == 30
    pipelines = client.get(f"{crm}/pipelines", headers=headers).get_json()["data"]
    summaries = [
        client.get(f"{crm}/currency/pipeline/{p['id']}/summary", headers=headers).get_json()
        for p in pipelines
    ]
    assert sum(s["total_deals"] for s in summaries) == 10 and all(s["complete"] for s in summaries)
    ticket = client.get(f"{crm}/tickets/by-ref/TCK-50", headers=headers)
    assert ticket.status_code == 200
    members = f"/v1/members/organizations/{ORG}"
    availability = client.get(f"{members}/members/availabilities", headers=headers).get_json()
    assert availability["total"] == 25
    stats = client.get(f"{members}/stats/member-availability", headers=headers).get_json()
    assert sum(m["online_seconds"] for m in stats["members"]) > 0
    login = _line(output, "Desk login: agent01@scaleco.test")
    with app.app_context():
        assert authenticate("agent01@scaleco.test", login.split(" / ")[1].split(" ")[0]) is not None

    # a second run with the same scale adds nothing
    again = _seed(runner)
    assert "already holds this scale: nothing added" in again
    with app.app_context():
        assert counts_of(ORG) == found


def test_an_interrupted_run_is_generated_again_with_the_same_data(app: Flask, runner: FlaskCliRunner) -> None:
    _seed(runner)
    with app.app_context():
        first = set(db.session.scalars(select(Conversation.id).where(Conversation.organization_id == ORG)))
        found = counts_of(ORG)
        # what a crash half-way leaves: the organization still carries its incomplete name
        db.session.execute(
            update(Organization).where(Organization.id == ORG).values(name="Scale Co (incomplete)")
        )
        db.session.execute(Message.__table__.delete().where(Message.__table__.c.organization_id == ORG))
        db.session.commit()
    output = _seed(runner)
    assert "interrupted" in output
    with app.app_context():
        assert counts_of(ORG) == found
        # Random(42): the same conversations (ids included) as the first run
        assert (
            set(db.session.scalars(select(Conversation.id).where(Conversation.organization_id == ORG)))
            == first
        )
        assert db.session.scalar(select(func.count()).select_from(Organization)) == 2  # demo + Scale Co


def test_another_scale_replaces_the_dataset(app: Flask, runner: FlaskCliRunner) -> None:
    _seed(runner)
    output = _seed(runner, "0.002")
    assert "replacing Scale Co's 100 conversations" in output
    with app.app_context():
        assert counts_of(ORG)["conversations"] == 200
        assert counts_of(ORG)["messages"] == 2_000
