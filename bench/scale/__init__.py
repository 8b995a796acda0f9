"""The large dataset: ``flask --app app demo seed --scale large|N`` adds the organization "Scale Co" to the
live store, a year of a busy contact centre, so that lists, searches, statistics and pages can be measured
on realistic volumes (``--scale large``: 100,000 conversations with 1,000,000 messages, 50,000 contacts,
20 agents and 5 AI agents with a year of presence history, 10,000 deals, 50,000 tickets, 30,000 tasks;
``--scale 0.01`` a hundredth of the rows).

The small structure (organization, key, people, AI configurations, teams, channel accounts, labels,
routing, pipelines, rates, ticket types) goes through the areas' services; the volume is bulk rows
(``bench.scale.common.Bulk``) shaped as those services write them: ``messaging``, ``members`` and ``crm``
each document the invariants they keep. Everything is drawn from ``random.Random(42)``, so two runs make
the same data (times are relative to the moment of the run).

Idempotent: the organization is created as "Scale Co (incomplete)" and renamed "Scale Co" by the last
step. A complete dataset of the asked scale is left alone; one of another scale, or an interrupted run,
is deleted and generated again.
"""

from __future__ import annotations

import time
import uuid
from random import Random

from flask import Flask
from sqlalchemy import func, select, update

from bench.scale import crm, members, messaging
from bench.scale.common import ZONE_NAME, Clock, Context, Counts, Progress, ScaleType, parse_scale
from blueprints.organizations import services as organizations
from blueprints.organizations.models import Organization
from core.db import db, utcnow
from core.demo import derived_secret
from core.environments import KEY_PREFIXES, LIVE, in_environment

SCALE_ORGANIZATION_ID = uuid.UUID("5ca1e000-0c00-4000-8000-000000000042")
SCALE_ORGANIZATION_NAME = "Scale Co"
INCOMPLETE_NAME = "Scale Co (incomplete)"
SEED = 42
__all__ = ["SCALE_ORGANIZATION_ID", "Counts", "ScaleType", "generate", "parse_scale"]


# What the summary counts: table -> how its rows belong to the organization
_COUNTED = (
    ("messaging_contacts", "contacts"),
    ("conversations", "conversations"),
    ("messages", "messages"),
    ("conversation_labels", "applied labels"),
    ("members", "members"),
    ("member_status_events", "presence changes"),
    ("crm_accounts", "CRM accounts"),
    ("crm_contacts", "CRM contacts"),
    ("crm_deals", "deals"),
    ("crm_deal_line_items", "deal line items"),
    ("crm_tickets", "tickets"),
    ("crm_tasks", "tasks"),
)


def counts_of(organization_id: uuid.UUID) -> dict[str, int]:
    """Rows of the organization in the main tables (one COUNT each)."""
    tables = db.metadata.tables
    found = {}
    for name, _ in _COUNTED:
        table = tables[name]
        statement = select(func.count()).select_from(table).where(table.c.organization_id == organization_id)
        found[name] = int(db.session.scalar(statement) or 0)
    return found


def _api_key(organization: Organization) -> str:
    plaintext = KEY_PREFIXES[LIVE] + derived_secret("scale-api-key-live")
    key = organizations.find_key(plaintext)
    if key is None:
        organizations.issue_api_key(organization, LIVE, name="scale", plaintext=plaintext)
    return plaintext


def _drop(organization_id: uuid.UUID) -> None:
    """Every row of the organization, children first (tables without the column go by cascade)."""
    for table in reversed(db.metadata.sorted_tables):
        if "organization_id" in table.c:
            db.session.execute(table.delete().where(table.c.organization_id == organization_id))
    db.session.execute(Organization.__table__.delete().where(Organization.__table__.c.id == organization_id))
    db.session.commit()


def _summary(organization_id: uuid.UUID, scale: float, key: str) -> list[str]:
    found = counts_of(organization_id)
    lines = [
        f"Scale Co ({organization_id}), scale {scale:g}, live store only",
        f"live API key: {key}",
        f"Desk login: {members.email_of(members.human_ids()[0])} / {members.password()} (supervisor; "
        f"agent02..agent{members.HUMANS:02d}@{members.EMAIL_DOMAIN} share the password)",
    ]
    lines += [f"{label}: {found[name]:,}" for name, label in _COUNTED]
    return lines


def generate(app: Flask, scale: float, *, quiet: bool = False) -> list[str]:
    """Make (or find) Scale Co at ``scale`` in the live store; lines to print."""
    counts = Counts.at(scale)
    lines: list[str] = []
    with in_environment(app, LIVE):
        existing = organizations.get_organization(SCALE_ORGANIZATION_ID)
        if existing is not None:
            conversations = counts_of(SCALE_ORGANIZATION_ID)["conversations"]
            if existing.name == SCALE_ORGANIZATION_NAME and conversations == counts.conversations:
                key = _api_key(existing)
                return [
                    "Scale Co already holds this scale: nothing added",
                    *_summary(existing.id, scale, key),
                ]
            if existing.name == SCALE_ORGANIZATION_NAME:
                lines.append(f"replacing Scale Co's {conversations:,} conversations with scale {scale:g}")
            else:
                lines.append("an earlier run of Scale Co was interrupted: generating it again")
            db.session.expunge_all()
            _drop(SCALE_ORGANIZATION_ID)
        started = time.perf_counter()
        organization = organizations.create_organization(
            INCOMPLETE_NAME, [], organization_id=SCALE_ORGANIZATION_ID, timezone=ZONE_NAME
        )
        key = _api_key(organization)
        now = utcnow().replace(microsecond=0)
        ctx = Context(
            organization_id=SCALE_ORGANIZATION_ID,
            counts=counts,
            clock=Clock(now),
            progress=Progress(quiet),
            rng=Random(SEED),
        )
        ctx.people = members.create_people(ctx.organization_id, ctx.rng, ctx.clock)
        messaging.create_structure(ctx)
        crm.create_structure(ctx)
        db.session.commit()
        members.presence_history(ctx.organization_id, ctx.people, ctx.rng, ctx.clock, ctx.progress)
        messaging.generate(ctx)
        crm.generate(ctx)
        # the marker: only a run that got here is complete
        db.session.execute(
            update(Organization)
            .where(Organization.id == SCALE_ORGANIZATION_ID)
            .values(name=SCALE_ORGANIZATION_NAME)
        )
        db.session.commit()
        elapsed = time.perf_counter() - started
        lines += _summary(SCALE_ORGANIZATION_ID, scale, key)
        lines.append(f"generated in {elapsed:.1f} s ({db.engine.dialect.name})")
    return lines
