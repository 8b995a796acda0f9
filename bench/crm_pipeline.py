"""The CRM's pipeline summary and deal list on a realistic store: 10,000 deals over 3 pipelines in 4
currencies (MXN base; USD and EUR by direct rate, COP by a cross rate through USD), bulk inserted."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from flask import Flask
from sqlalchemy import insert

from bench.harness import make_app, make_org, measure
from blueprints.crm.models import CrmSettings, Deal, ExchangeRate, Pipeline, Stage
from core.db import db

DEALS = 10_000
BATCH = 5000
# (name, key, share of the deals): the default pipeline carries most of them, like a real sales team.
PIPELINES = (("Ventas", "VNT", 0.6), ("Renovaciones", "REN", 0.3), ("Alianzas", "ALI", 0.1))
STAGES = (
    ("New", 10, "open"),
    ("Qualified", 25, "open"),
    ("Proposal", 50, "open"),
    ("Negotiation", 75, "open"),
    ("Won", 100, "won"),
    ("Lost", 0, "lost"),
)
# currency -> (share of the deals, smallest and largest amount in that currency)
CURRENCIES = {
    "MXN": (0.55, 1_000, 900_000),
    "USD": (0.25, 100, 60_000),
    "EUR": (0.1, 100, 50_000),
    "COP": (0.1, 500_000, 90_000_000),
}
RATES = (("USD", "MXN", "17.20"), ("EUR", "MXN", "18.90"), ("COP", "USD", "0.00025"))
# From the performance issue: the summary p95 <= 100 ms; lists "stay flat" (no figure: no sort step, so
# the page costs the same whatever the number of deals).
SUMMARY_TARGET_MS = 100.0


def seed_deals(app: Flask, organization_id: uuid.UUID) -> list[uuid.UUID]:
    """The pipelines (default first), rates and ``DEALS`` deals; returns the pipeline ids, largest first."""
    rng = random.Random(42)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    now = datetime.now(UTC)
    pipeline_ids: list[uuid.UUID] = []
    with app.app_context():
        db.session.execute(
            insert(CrmSettings),
            [
                {
                    "organization_id": organization_id,
                    "base_currency": "MXN",
                    "created_at": now,
                    "updated_at": now,
                }
            ],
        )
        db.session.execute(
            insert(ExchangeRate),
            [
                {
                    "id": uuid.uuid4(),
                    "organization_id": organization_id,
                    "from_currency": source,
                    "to_currency": target,
                    "rate": Decimal(rate),
                    "created_at": now,
                    "updated_at": now,
                }
                for source, target, rate in RATES
            ],
        )
        stages: dict[uuid.UUID, list[tuple[uuid.UUID, str]]] = {}
        counts = [round(DEALS * share) for _, _, share in PIPELINES]
        for index, (name, key, _) in enumerate(PIPELINES):
            pipeline_id = uuid.uuid4()
            pipeline_ids.append(pipeline_id)
            db.session.execute(
                insert(Pipeline),
                [
                    {
                        "id": pipeline_id,
                        "organization_id": organization_id,
                        "name": name,
                        "key": key,
                        "is_default": index == 0,
                        "deal_counter": counts[index],
                        "created_at": t0 + timedelta(seconds=index),
                        "updated_at": t0 + timedelta(seconds=index),
                    }
                ],
            )
            rows = [
                {
                    "id": uuid.uuid4(),
                    "organization_id": organization_id,
                    "pipeline_id": pipeline_id,
                    "name": stage,
                    "stage_order": order,
                    "probability": probability,
                    "status": status,
                    "created_at": now,
                    "updated_at": now,
                }
                for order, (stage, probability, status) in enumerate(STAGES)
            ]
            db.session.execute(insert(Stage), rows)
            stages[pipeline_id] = [(row["id"], row["status"]) for row in rows]  # type: ignore[misc]
        currencies = list(CURRENCIES)
        weights = [share for share, _, _ in CURRENCIES.values()]
        batch: list[dict[str, object]] = []
        for pipeline_id, count, (_, key, _) in zip(pipeline_ids, counts, PIPELINES, strict=True):
            for number in range(1, count + 1):
                currency = rng.choices(currencies, weights)[0]
                _, low, high = CURRENCIES[currency]
                stage_id, status = rng.choice(stages[pipeline_id])
                created = t0 + timedelta(minutes=rng.randrange(365 * 24 * 60))
                cents = 0 if currency == "COP" else rng.randrange(100)
                batch.append(
                    {
                        "id": uuid.uuid4(),
                        "organization_id": organization_id,
                        "pipeline_id": pipeline_id,
                        "stage_id": stage_id,
                        "number": number,
                        "reference": f"{key}-{number}",
                        "name": f"Deal {key}-{number}",
                        "amount": Decimal(rng.randrange(low, high)) + Decimal(cents) / 100,
                        "currency": currency,
                        "status": status,
                        "owner_id": f"mem_{rng.randrange(20)}" if rng.random() < 0.9 else None,
                        "expected_close_date": created + timedelta(days=rng.randrange(90)),
                        "stage_entered_at": created,
                        "closed_at": created if status != "open" else None,
                        # one in fifty deleted: the summary and lists must leave them out
                        "deleted_at": created if rng.random() < 0.02 else None,
                        "created_at": created,
                        "updated_at": created,
                    }
                )
                if len(batch) >= BATCH:
                    db.session.execute(insert(Deal), batch)
                    batch.clear()
        if batch:
            db.session.execute(insert(Deal), batch)
        db.session.commit()
    return pipeline_ids


def main() -> None:
    app = make_app()
    org = make_org(app)
    organization_id = uuid.UUID(org["organization_id"])
    pipeline_ids = seed_deals(app, organization_id)
    client = app.test_client()
    headers = {"X-API-Key": org["api_keys"]["live"]}
    base = f"/v1/crm/organizations/{organization_id}"
    print(f"{DEALS} deals over {len(PIPELINES)} pipelines ({', '.join(CURRENCIES)})")
    for pipeline_id, (name, _, _) in zip(pipeline_ids, PIPELINES, strict=True):
        summary = client.get(f"{base}/currency/pipeline/{pipeline_id}/summary", headers=headers).get_json()
        assert summary["complete"], summary
        measure(
            f"summary {name} ({summary['total_deals']} deals)  target p95 <= {SUMMARY_TARGET_MS:.0f} ms",
            lambda p=pipeline_id: client.get(f"{base}/currency/pipeline/{p}/summary", headers=headers),
            iterations=100,
            warmup=5,
        )
    for label, query in (
        ("limit=20", "?limit=20"),
        ("limit=100", "?limit=100"),
        ("pipeline limit=20", f"?limit=20&pipeline_id={pipeline_ids[0]}"),
        ("owner status=open limit=20", "?limit=20&owner_id=mem_3&status=open"),
    ):
        measure(
            f"GET deals {label}  target: flat",
            lambda q=query: client.get(f"{base}/deals{q}", headers=headers),
            iterations=100,
            warmup=5,
        )
