"""The pipeline summary is aggregated in SQL (one GROUP BY stage, currency) and answers exactly what the
former computation, which read every deal into Python and converted them one by one, answered: the
reference below is that computation, kept verbatim, compared on random stores of several currencies,
base currencies, rates (direct, inverse, cross, missing) and stages."""

from __future__ import annotations

import itertools
import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import insert, select

from blueprints.crm.drafts import PipelineDraft, StageChanges, StageDraft
from blueprints.crm.models import Deal
from blueprints.crm.money import find_conversion, minor_units, round_money
from blueprints.crm.services import pipelines
from blueprints.crm.services.common import read_settings
from blueprints.crm.services.pipelines import PipelineTotals, StageTotal, UnconvertedDeal
from core.db import db
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.crm.conftest import Crm
from tests.support.queries import count_queries

CURRENCIES = ("MXN", "USD", "EUR", "COP", "CLP", "PYG", "GBP", "ARS")


def python_summary(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> PipelineTotals:
    """The summary as it was computed before the aggregation moved to SQL (every deal read and
    converted in Python); the reference the SQL version must equal."""
    pipeline = pipelines.get_pipeline(organization_id, pipeline_id)
    base = read_settings(organization_id).base_currency
    rates = {(r.from_currency, r.to_currency): r.rate for r in pipelines.list_rates(organization_id)}
    rows = db.session.execute(
        select(Deal.id, Deal.reference, Deal.stage_id, Deal.amount, Deal.currency)
        .where(
            Deal.organization_id == organization_id,
            Deal.pipeline_id == pipeline.id,
            Deal.deleted_at.is_(None),
        )
        .order_by(Deal.number)
    ).all()
    conversions = {c: find_conversion(c, base, rates) for c in sorted({row.currency for row in rows})}
    per_stage: dict[uuid.UUID, dict[str, Any]] = {
        s.id: {"count": 0, "total": Decimal(0), "weighted": Decimal(0), "unconverted": 0}
        for s in pipeline.stages
    }
    probabilities = {s.id: Decimal(s.probability) for s in pipeline.stages}
    unconverted: list[UnconvertedDeal] = []
    for row in rows:
        bucket = per_stage.get(row.stage_id)
        if bucket is None:
            continue
        bucket["count"] += 1
        conversion = conversions[row.currency]
        if conversion is None:
            bucket["unconverted"] += 1
            unconverted.append(
                UnconvertedDeal(
                    deal_id=row.id,
                    reference=row.reference,
                    stage_id=row.stage_id,
                    amount=row.amount,
                    currency=row.currency,
                    reason=f"no exchange rate from {row.currency} to {base}",
                )
            )
            continue
        converted = row.amount * conversion.rate
        bucket["total"] += converted
        bucket["weighted"] += converted * probabilities[row.stage_id] / 100
    total = sum((b["total"] for b in per_stage.values()), Decimal(0))
    weighted = sum((b["weighted"] for b in per_stage.values()), Decimal(0))
    return PipelineTotals(
        pipeline_id=pipeline.id,
        base_currency=base,
        total_amount=round_money(total, base),
        weighted_amount=round_money(weighted, base),
        total_deals=len(rows),
        converted_deals=len(rows) - len(unconverted),
        complete=not unconverted,
        stages=[
            StageTotal(
                stage=s,
                deal_count=per_stage[s.id]["count"],
                total_amount=round_money(per_stage[s.id]["total"], base),
                weighted_amount=round_money(per_stage[s.id]["weighted"], base),
                currency=base,
                unconverted_count=per_stage[s.id]["unconverted"],
            )
            for s in pipeline.stages
        ],
        unconverted=unconverted,
        conversions=[c for c in conversions.values() if c is not None],
    )


# Rough value of one unit in US dollars: rates derived from these stay as consistent as real ones, so a
# chain of several hops cannot reach absurd magnitudes.
USD_VALUE = {
    "MXN": 0.058,
    "USD": 1.0,
    "EUR": 1.08,
    "COP": 0.00025,
    "CLP": 0.0011,
    "PYG": 0.00013,
    "GBP": 1.27,
    "ARS": 0.001,
}


def _rate(rng: random.Random, source: str, target: str) -> Decimal:
    """A rate as people type them (17.2, 0.00025, 4012.5, 1.083333): near the real one, 2 to 8 places."""
    real = USD_VALUE[source] / USD_VALUE[target] * rng.uniform(0.9, 1.1)
    rate = Decimal(repr(real)).quantize(Decimal(1).scaleb(-rng.randrange(2, 9)))
    return rate if rate > 0 else Decimal("0.00000001")


def _amount(rng: random.Random, currency: str) -> Decimal:
    """An amount as the CRM stores it (rounded to the currency's minor units), with small ones that put
    converted totals on half-unit boundaries (0.01 x 0.5) and large ones (hundreds of millions)."""
    places = minor_units(currency)
    kind = rng.random()
    if kind < 0.2:
        units = rng.randrange(0, 10)
    elif kind < 0.9:
        units = rng.randrange(0, 10**7)
    else:
        units = rng.randrange(10**9, 10**11)
    return Decimal(units).scaleb(-places)


def _random_store(organization_id: uuid.UUID, rng: random.Random) -> tuple[uuid.UUID, uuid.UUID]:
    """A random base currency, random rates (some currencies left without a chain to the base), the
    default pipeline with random probabilities, a second pipeline, and deals in both; some deleted, one
    in a stage of the other pipeline (which the summary counts but never adds). Returns the pipelines."""
    pipelines.set_base_currency(organization_id, rng.choice(("MXN", "USD", "CLP", "COP", "EUR")))
    others = list(CURRENCIES)
    rng.shuffle(others)
    for source, target in itertools.pairwise(others):
        if rng.random() < 0.75:
            pipelines.upsert_rate(organization_id, source, target, _rate(rng, source, target))
    for _ in range(rng.randrange(0, 4)):  # extra edges: shorter chains, inverse pairs
        source, target = rng.sample(CURRENCIES, 2)
        pipelines.upsert_rate(organization_id, source, target, _rate(rng, source, target))
    main = pipelines.list_pipelines(organization_id)[0]
    pipelines.ensure_default_pipeline(organization_id)
    for stage in pipelines.pipeline_for_update(organization_id, main.id).stages:
        pipelines.update_stage(
            organization_id, stage.id, StageChanges(probability=rng.choice((0, 10, 33, 50, 67, 99)))
        )
    other = pipelines.create_pipeline(organization_id, PipelineDraft("Other", "OTR", is_default=False))
    other_stage = pipelines.create_stage(organization_id, other.id, StageDraft("Only", stage_order=0)).id
    main_stages = [s.id for s in pipelines.pipeline_for_update(organization_id, main.id).stages]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rows: list[dict[str, Any]] = []
    numbers = {main.id: 0, other.id: 0}
    for n in range(rng.randrange(150, 300)):
        pipeline_id = main.id if rng.random() < 0.85 or n == 7 else other.id
        stage_id = rng.choice(main_stages) if pipeline_id == main.id else other_stage
        if n == 7:
            stage_id = other_stage  # a main-pipeline deal in a foreign stage: counted, never added
        numbers[pipeline_id] += 1
        currency = rng.choice(CURRENCIES)
        rows.append(
            {
                "id": uuid.uuid4(),
                "organization_id": organization_id,
                "pipeline_id": pipeline_id,
                "stage_id": stage_id,
                "number": numbers[pipeline_id],
                "reference": f"X-{numbers[pipeline_id]}",
                "name": f"Deal {n}",
                "amount": _amount(rng, currency),
                "currency": currency,
                "status": "open",
                "deleted_at": t0 if rng.random() < 0.05 and n != 7 else None,
                "created_at": t0 + timedelta(minutes=n),
                "updated_at": t0 + timedelta(minutes=n),
            }
        )
    db.session.execute(insert(Deal), rows)
    return main.id, other.id


@pytest.mark.parametrize("seed", range(12))
def test_the_sql_summary_equals_the_python_one_on_random_stores(app: Flask, org: Org, seed: int) -> None:
    organization_id = uuid.UUID(org.id)
    rng = random.Random(seed)
    with in_environment(app, LIVE):
        main, other = _random_store(organization_id, rng)
        db.session.flush()
        for pipeline_id in (main, other):
            expected = python_summary(organization_id, pipeline_id)
            assert pipelines.pipeline_summary(organization_id, pipeline_id) == expected
        summary = pipelines.pipeline_summary(organization_id, main)
    assert summary.total_deals == sum(s.deal_count for s in summary.stages) + 1  # the foreign-stage deal


def test_random_stores_cover_every_conversion_and_a_missing_rate(app: Flask, org: Org) -> None:
    """The seeds above are not vacuous: together they convert by every method and leave deals out."""
    organization_id = uuid.UUID(org.id)
    methods: set[str] = set()
    incomplete = 0
    for seed in range(12):
        with in_environment(app, LIVE):
            main, _ = _random_store(organization_id, random.Random(seed))
            db.session.flush()
            summary = pipelines.pipeline_summary(organization_id, main)
            methods |= {c.method for c in summary.conversions}
            incomplete += not summary.complete
            db.session.rollback()
    assert methods == {"identity", "direct", "inverse", "cross"}
    assert incomplete > 0


def test_summary_sums_amounts_exactly_on_every_store(crm: Crm) -> None:
    """Binary floats would lose the cents here: 10^11 + 0.01 repeated. The database sums integers."""
    pipeline = crm.pipeline()
    for amount in ("99999999999.99", "0.01", "0.01", "0.01", "12345678901.23"):
        crm.deal(amount=amount, currency="MXN")
    response = crm.get(f"/currency/pipeline/{pipeline['id']}/summary")
    summary = json.loads(response.data, parse_float=Decimal)
    assert summary["total_amount"] == Decimal("112345678901.25")
    assert summary["stages"][0]["total_amount"] == Decimal("112345678901.25")
    assert summary["weighted_amount"] == "11234567890.13"  # 10 % of 112345678901.25, half-up


def test_summary_reads_a_fixed_number_of_statements(app: Flask, crm: Crm) -> None:
    """Aggregated in the database: the statements do not grow with the deals (and the deals are not
    read one by one unless some cannot be converted)."""
    pipeline = crm.pipeline()
    crm.ok(crm.post("/currency/rates", {"from_currency": "USD", "to_currency": "MXN", "rate": "17.2"}))

    def statements() -> int:
        with count_queries() as counted:
            crm.ok(crm.get(f"/currency/pipeline/{pipeline['id']}/summary"))
        return counted.count

    crm.deal(amount="10", currency="USD")
    few = statements()
    for _ in range(15):
        crm.deal(amount="10", currency="USD")
    assert statements() == few
