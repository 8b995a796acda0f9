"""Pipelines and stages, currency settings and exchange rates, the multi-currency pipeline summary."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, cast, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

from blueprints.audit import services as audit_log
from blueprints.crm.drafts import PipelineChanges, PipelineDraft, StageChanges, StageDraft, check, given, sent
from blueprints.crm.models import CrmSettings, Deal, DealStageVisit, ExchangeRate, Pipeline, Stage
from blueprints.crm.money import CURRENCIES, Conversion, find_conversion, round_money
from blueprints.crm.rules import CurrencyIn, Rate, Refusal, Rule, TicketPrefix, missing
from blueprints.crm.services.common import ensure_settings, insert_ignore, read_settings, savepoint
from core.db import db, utcnow
from core.tenancy import find_for_org

DEFAULT_PIPELINE_NAME = "General"
DEFAULT_PIPELINE_KEY = "VNT"
# (name, probability, status): a common B2B funnel with one won and one lost stage at the end.
DEFAULT_STAGES = (
    ("New", 10, "open"),
    ("Qualified", 25, "open"),
    ("Proposal", 50, "open"),
    ("Negotiation", 75, "open"),
    ("Won", 100, "won"),
    ("Lost", 0, "lost"),
)


# The default pipeline has ids derived from the organization's, so the pipeline a read shows before it
# exists is the very one the first write persists (a client may create a deal in a stage it only read).
_DEFAULT_IDS = uuid.UUID("6f1f3c52-8d0e-4d4e-9a43-2b7c5f0c9e11")


def default_pipeline_id(organization_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(_DEFAULT_IDS, f"{organization_id}:pipeline")


def default_stage_id(organization_id: uuid.UUID, order: int) -> uuid.UUID:
    return uuid.uuid5(_DEFAULT_IDS, f"{organization_id}:stage:{order}")


def _pipelines_query(organization_id: uuid.UUID) -> Any:
    return (
        select(Pipeline)
        .where(Pipeline.organization_id == organization_id)
        .options(selectinload(Pipeline.stages))
        .order_by(Pipeline.created_at, Pipeline.id)
    )


def _has_pipelines(organization_id: uuid.UUID) -> bool:
    statement = select(Pipeline.id).where(Pipeline.organization_id == organization_id).limit(1)
    return db.session.scalar(statement) is not None


def _default_pipeline(organization_id: uuid.UUID) -> Pipeline:
    """``General`` (VNT) as it will be persisted: a transient object, never added to the session."""
    now = utcnow()
    pipeline_id = default_pipeline_id(organization_id)
    stages = [
        Stage(
            id=default_stage_id(organization_id, order),
            organization_id=organization_id,
            pipeline_id=pipeline_id,
            name=name,
            stage_order=order,
            probability=probability,
            status=status,
            rotting_days=None,
            created_at=now,
            updated_at=now,
        )
        for order, (name, probability, status) in enumerate(DEFAULT_STAGES)
    ]
    return Pipeline(
        id=pipeline_id,
        organization_id=organization_id,
        name=DEFAULT_PIPELINE_NAME,
        key=DEFAULT_PIPELINE_KEY,
        is_default=True,
        deal_counter=0,
        created_at=now,
        updated_at=now,
        stages=stages,
    )


def ensure_default_pipeline(organization_id: uuid.UUID) -> None:
    """Persist ``General`` (VNT) when the organization has no pipeline yet; every write about pipelines,
    stages or deals calls this first. Insert-or-nothing on the pipeline row: of two concurrent first
    writes, the second waits for the first and finds its pipeline (and stages) instead of failing."""
    if _has_pipelines(organization_id):
        return
    shown = _default_pipeline(organization_id)
    # RETURNING says whether this insert won (psycopg reports no row count for INSERT ... ON CONFLICT)
    inserted = db.session.execute(
        insert_ignore(
            Pipeline.__table__,
            {
                "id": shown.id,
                "organization_id": organization_id,
                "name": shown.name,
                "key": shown.key,
                "is_default": True,
                "deal_counter": 0,
                "created_at": shown.created_at,
                "updated_at": shown.updated_at,
            },
        ).returning(Pipeline.__table__.c.id)
    ).first()
    if inserted is None:
        return
    db.session.execute(
        insert(Stage),
        [
            {
                "id": stage.id,
                "organization_id": organization_id,
                "pipeline_id": shown.id,
                "name": stage.name,
                "stage_order": stage.stage_order,
                "probability": stage.probability,
                "status": stage.status,
                "rotting_days": None,
                "created_at": stage.created_at,
                "updated_at": stage.updated_at,
            }
            for stage in shown.stages
        ],
    )


def find_pipeline(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> Pipeline | None:
    """The pipeline with its stages, or None; the not yet persisted default pipeline counts."""
    pipeline = db.session.scalars(_pipelines_query(organization_id).where(Pipeline.id == pipeline_id)).first()
    is_default_id = pipeline_id == default_pipeline_id(organization_id)
    if pipeline is None and is_default_id and not _has_pipelines(organization_id):
        return _default_pipeline(organization_id)
    return pipeline


def get_pipeline(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> Pipeline:
    """For reads: the default pipeline may be the transient one (see :func:`list_pipelines`)."""
    pipeline = find_pipeline(organization_id, pipeline_id)
    if pipeline is None:
        raise missing("Pipeline")
    return pipeline


def pipeline_for_update(
    organization_id: uuid.UUID, pipeline_id: uuid.UUID, param: str | None = None
) -> Pipeline:
    """For writes: the persisted pipeline (the default one is persisted first when it is named); 404
    naming ``param`` when the id came in a field (a deal's ``pipeline_id``)."""
    ensure_default_pipeline(organization_id)
    pipeline = db.session.scalars(_pipelines_query(organization_id).where(Pipeline.id == pipeline_id)).first()
    if pipeline is None:
        raise missing("Pipeline", param)
    return pipeline


def _add_pipeline(organization_id: uuid.UUID, name: str, key: str, is_default: bool) -> Pipeline:
    pipeline = Pipeline(
        id=uuid.uuid4(), organization_id=organization_id, name=name, key=key, is_default=is_default
    )
    db.session.add(pipeline)
    return pipeline


def list_pipelines(organization_id: uuid.UUID) -> list[Pipeline]:
    """All pipelines with their stages. An organization without any sees ``General`` (VNT) as the first
    write will persist it: a read never writes."""
    pipelines = list(db.session.scalars(_pipelines_query(organization_id)))
    return pipelines or [_default_pipeline(organization_id)]


def _key_taken(organization_id: uuid.UUID, key: str, exclude: uuid.UUID | None = None) -> bool:
    statement = select(Pipeline.id).where(Pipeline.organization_id == organization_id, Pipeline.key == key)
    if exclude is not None:
        statement = statement.where(Pipeline.id != exclude)
    return db.session.scalar(statement) is not None


def _make_default(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> None:
    db.session.execute(
        update(Pipeline)
        .where(Pipeline.organization_id == organization_id, Pipeline.id != pipeline_id)
        .values(is_default=False)
        .execution_options(synchronize_session="fetch")
    )


def _key_taken_refusal(key: str) -> Refusal:
    return Refusal(
        409, f"key: a pipeline with key {key} already exists", code="pipeline_key_taken", param="key"
    )


def create_pipeline(organization_id: uuid.UUID, draft: PipelineDraft) -> Pipeline:
    """A new pipeline without stages. An organization that had none gets ``General`` (VNT) first, the
    default pipeline every read showed it; the new one is the default only when asked."""
    draft = check(draft)
    ensure_default_pipeline(organization_id)
    if _key_taken(organization_id, draft.key):
        raise _key_taken_refusal(draft.key)
    try:
        with savepoint():
            pipeline = _add_pipeline(organization_id, draft.name, draft.key, bool(draft.is_default))
            db.session.flush()
    except IntegrityError:  # the same key taken concurrently
        raise _key_taken_refusal(draft.key) from None
    if draft.is_default:
        _make_default(organization_id, pipeline.id)
    return pipeline_for_update(organization_id, pipeline.id)


def _has_deals(pipeline_id: uuid.UUID, *, live_only: bool) -> bool:
    statement = select(Deal.id).where(Deal.pipeline_id == pipeline_id)
    if live_only:
        statement = statement.where(Deal.deleted_at.is_(None))
    return db.session.scalar(statement.limit(1)) is not None


def update_pipeline(organization_id: uuid.UUID, pipeline_id: uuid.UUID, changes: PipelineChanges) -> Pipeline:
    changes = check(changes)
    pipeline = pipeline_for_update(organization_id, pipeline_id)
    if given(changes.name):
        pipeline.name = changes.name
    if given(changes.key) and changes.key != pipeline.key:
        if _key_taken(organization_id, changes.key, exclude=pipeline.id):
            raise _key_taken_refusal(changes.key)
        # References are <KEY>-<n> and never rewritten; a new key on a pipeline with deals would leave
        # two spellings for one pipeline and could collide with a future pipeline taking the old key.
        if _has_deals(pipeline.id, live_only=False):
            raise Refusal(
                409,
                "key: cannot change the key of a pipeline that has deals",
                code="pipeline_key_locked",
                param="key",
            )
        pipeline.key = changes.key
    if given(changes.is_default):
        if changes.is_default:
            pipeline.is_default = True
            _make_default(organization_id, pipeline.id)
        elif pipeline.is_default:
            raise Refusal(
                409,
                "is_default: make another pipeline the default instead",
                code="pipeline_default_required",
                param="is_default",
            )
    db.session.flush()
    return pipeline


def delete_pipeline(organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> None:
    """Refused (409) while live deals use the pipeline; its soft-deleted deals go with it. When the
    default goes, the oldest remaining pipeline becomes the default."""
    pipeline = pipeline_for_update(organization_id, pipeline_id)
    if _has_deals(pipeline.id, live_only=True):
        raise Refusal(409, "The pipeline has deals; move or delete them first", code="pipeline_has_deals")
    was_default = pipeline.is_default
    db.session.execute(delete(Deal).where(Deal.pipeline_id == pipeline.id))
    db.session.delete(pipeline)
    audit_log.record("pipeline.deleted", "pipeline", pipeline.id, organization_id=organization_id)
    db.session.flush()
    if was_default:
        successor = db.session.scalars(
            select(Pipeline)
            .where(Pipeline.organization_id == organization_id)
            .order_by(Pipeline.created_at, Pipeline.id)
            .limit(1)
        ).first()
        if successor is not None:
            successor.is_default = True


# ------------------------------------------------------------------------------------------------ stages


def get_stage(organization_id: uuid.UUID, stage_id: uuid.UUID, param: str | None = None) -> Stage:
    """A persisted stage for a write (the default pipeline's stages are persisted first when needed);
    404 naming ``param`` when the id came in a field."""
    ensure_default_pipeline(organization_id)
    stage = find_for_org(Stage, stage_id, organization_id)
    if stage is None:
        raise missing("Stage", param)
    return stage


def renumber(stages: list[Stage]) -> None:
    for position, stage in enumerate(stages):
        stage.stage_order = position


def ordered_stages(pipeline_id: uuid.UUID) -> list[Stage]:
    return list(
        db.session.scalars(
            select(Stage)
            .where(Stage.pipeline_id == pipeline_id)
            .order_by(Stage.stage_order, Stage.created_at)
        )
    )


def _default_probability(status: str) -> int:
    return 100 if status == "won" else 0


def create_stage(organization_id: uuid.UUID, pipeline_id: uuid.UUID, draft: StageDraft) -> Stage:
    draft = check(draft)
    pipeline = pipeline_for_update(organization_id, pipeline_id)
    stages = ordered_stages(pipeline.id)
    stage = Stage(
        organization_id=organization_id,
        pipeline_id=pipeline.id,
        name=draft.name,
        stage_order=0,
        probability=_default_probability(draft.status) if draft.probability is None else draft.probability,
        status=draft.status,
        rotting_days=draft.rotting_days,
    )
    db.session.add(stage)
    # An order past the end appends; the others shift so orders stay 0..n-1.
    stages.insert(min(draft.stage_order, len(stages)), stage)
    renumber(stages)
    db.session.flush()
    return stage


def update_stage(organization_id: uuid.UUID, stage_id: uuid.UUID, changes: StageChanges) -> Stage:
    changes = check(changes)
    stage = get_stage(organization_id, stage_id)
    if given(changes.name):
        stage.name = changes.name
    if given(changes.probability):
        stage.probability = changes.probability
    if given(changes.status):
        stage.status = changes.status
    if sent(changes.rotting_days):
        stage.rotting_days = changes.rotting_days
    if given(changes.stage_order):
        stages = [s for s in ordered_stages(stage.pipeline_id) if s.id != stage.id]
        stages.insert(min(changes.stage_order, len(stages)), stage)
        renumber(stages)
    db.session.flush()
    return stage


# The rules of the verbs below, which take plain values.
_CURRENCY = Rule[str](CurrencyIn)
_RATE = Rule[Decimal](Rate)
_TICKET_PREFIX = Rule[str | None](TicketPrefix | None)


# ---------------------------------------------------------------------------------------------- currency


def get_settings(organization_id: uuid.UUID) -> CrmSettings:
    """The settings, or the defaults before the first write that needs them (never written here)."""
    return read_settings(organization_id)


def update_settings(organization_id: uuid.UUID, ticket_prefix: str | None = None) -> CrmSettings:
    ticket_prefix = _TICKET_PREFIX.check(ticket_prefix, "ticket_prefix")
    settings = ensure_settings(organization_id)
    if ticket_prefix:
        # Existing tickets keep their reference; new tickets use the new prefix.
        settings.ticket_prefix = ticket_prefix.upper()
    db.session.flush()
    return settings


def list_rates(organization_id: uuid.UUID) -> list[ExchangeRate]:
    return list(
        db.session.scalars(
            select(ExchangeRate)
            .where(ExchangeRate.organization_id == organization_id)
            .order_by(ExchangeRate.from_currency, ExchangeRate.to_currency)
        )
    )


def set_base_currency(organization_id: uuid.UUID, currency: str) -> CrmSettings:
    currency = _CURRENCY.check(currency, "base_currency")
    settings = ensure_settings(organization_id)
    settings.base_currency = currency
    db.session.flush()
    return settings


def upsert_rate(organization_id: uuid.UUID, source: str, target: str, rate: Decimal) -> ExchangeRate:
    source = _CURRENCY.check(source, "from_currency")
    target = _CURRENCY.check(target, "to_currency")
    rate = _RATE.check(rate, "rate")
    if source == target:
        raise Refusal(
            400, "to_currency: must differ from from_currency", code="rate_same_currency", param="to_currency"
        )
    for _attempt in range(2):
        existing = db.session.scalars(
            select(ExchangeRate).where(
                ExchangeRate.organization_id == organization_id,
                ExchangeRate.from_currency == source,
                ExchangeRate.to_currency == target,
            )
        ).first()
        if existing is not None:
            existing.rate = rate
            db.session.flush()
            return existing
        try:
            with savepoint():
                created = ExchangeRate(
                    organization_id=organization_id, from_currency=source, to_currency=target, rate=rate
                )
                db.session.add(created)
                db.session.flush()
            return created
        except IntegrityError:  # a concurrent upsert of the same pair won the insert: update theirs
            continue
    raise Refusal(409, "The exchange rate is being changed concurrently; try again", code="rate_busy")


def delete_rate(organization_id: uuid.UUID, source: str, target: str) -> None:
    result = db.session.execute(
        delete(ExchangeRate).where(
            ExchangeRate.organization_id == organization_id,
            ExchangeRate.from_currency == source.upper(),
            ExchangeRate.to_currency == target.upper(),
        )
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        raise missing("Exchange rate")


@dataclass(frozen=True)
class StageTotal:
    stage: Stage
    deal_count: int
    total_amount: Decimal  # in the base currency, rounded to its minor units
    weighted_amount: Decimal
    currency: str
    unconverted_count: int


@dataclass(frozen=True)
class UnconvertedDeal:
    deal_id: uuid.UUID
    reference: str
    stage_id: uuid.UUID
    amount: Decimal
    currency: str
    reason: str


@dataclass(frozen=True)
class PipelineTotals:
    pipeline_id: uuid.UUID
    base_currency: str
    total_amount: Decimal
    weighted_amount: Decimal
    total_deals: int
    converted_deals: int
    complete: bool
    stages: list[StageTotal]
    unconverted: list[UnconvertedDeal]
    conversions: list[Conversion]


# Amounts are summed in SQL as integers of the column's scale (Numeric(20, 4)): PostgreSQL's numeric sum is
# exact anyway, but SQLite keeps NUMERIC values as binary floats and would sum them inexactly. Rounding
# ``amount * 10^4`` recovers the stored value exactly on both (amounts below 10^11 in any currency).
_AMOUNT_SCALE = 4
# Group totals (at most 20 integer digits and 4 decimals) times a rate (at most 30 significant digits,
# 28 for an inverse or cross rate), times a probability: exact within 80 digits, so the summary is the
# exact sum of the deals at the rates shown, rounded once.
_EXACT = Context(prec=80)


@dataclass
class _StageBucket:
    count: int = 0
    total: Decimal = Decimal(0)
    weighted: Decimal = Decimal(0)
    unconverted: int = 0


def pipeline_summary(
    organization_id: uuid.UUID,
    pipeline_id: uuid.UUID,
    where: Sequence[ColumnElement[bool]] = (),
    pipeline: Pipeline | None = None,
) -> PipelineTotals:
    """Per-stage totals of the pipeline's live deals (every status) converted to the base currency.

    The database groups the deals by stage and currency (count and exact sum); each group is converted
    at full precision (direct rate, else inverse, else the shortest cross chain), which equals converting
    every deal and adding them up. Stage and pipeline totals are rounded half-up once to the base
    currency's minor units. Weighted amount = converted amount x stage probability / 100. Deals whose
    currency has no chain to the base are left out of the amounts and listed in ``unconverted`` (read
    one by one only then); ``complete`` is false then.

    ``where`` narrows the deals further (the desk's board filters: owner, contact, search …, conditions
    on ``Deal`` from ``deals.deal_conditions``), so a filtered board's column totals are exact too;
    ``pipeline`` is the pipeline with its stages when the caller read it already (one read less).
    """
    if pipeline is None or pipeline.id != pipeline_id:
        pipeline = get_pipeline(organization_id, pipeline_id)
    base = read_settings(organization_id).base_currency
    rates = {(r.from_currency, r.to_currency): r.rate for r in list_rates(organization_id)}
    live = (
        Deal.organization_id == organization_id,
        Deal.pipeline_id == pipeline.id,
        Deal.deleted_at.is_(None),
        *where,
    )
    minor = cast(func.round(Deal.amount * 10**_AMOUNT_SCALE), BigInteger)
    groups = db.session.execute(
        select(Deal.stage_id, Deal.currency, func.count().label("deals"), func.sum(minor).label("minor"))
        .where(*live)
        .group_by(Deal.stage_id, Deal.currency)
    ).all()
    conversions = {c: find_conversion(c, base, rates) for c in sorted({group.currency for group in groups})}
    buckets = {s.id: _StageBucket() for s in pipeline.stages}
    probabilities = {s.id: Decimal(s.probability) for s in pipeline.stages}
    total_deals = 0
    for group in groups:
        total_deals += group.deals
        bucket = buckets.get(group.stage_id)
        if bucket is None:  # cannot happen while deals keep a stage of their pipeline; never hide it
            continue
        bucket.count += group.deals
        conversion = conversions[group.currency]
        if conversion is None:
            bucket.unconverted += group.deals
            continue
        amount = Decimal(int(group.minor or 0)).scaleb(-_AMOUNT_SCALE)
        converted = _EXACT.multiply(amount, conversion.rate)
        bucket.total = _EXACT.add(bucket.total, converted)
        weighted = _EXACT.divide(_EXACT.multiply(converted, probabilities[group.stage_id]), Decimal(100))
        bucket.weighted = _EXACT.add(bucket.weighted, weighted)
    unconverted = _unconverted_deals(live, conversions, buckets, base)
    total = sum((b.total for b in buckets.values()), Decimal(0))
    weighted_total = sum((b.weighted for b in buckets.values()), Decimal(0))
    return PipelineTotals(
        pipeline_id=pipeline.id,
        base_currency=base,
        total_amount=round_money(total, base),
        weighted_amount=round_money(weighted_total, base),
        total_deals=total_deals,
        converted_deals=total_deals - len(unconverted),
        complete=not unconverted,
        stages=[
            StageTotal(
                stage=s,
                deal_count=buckets[s.id].count,
                total_amount=round_money(buckets[s.id].total, base),
                weighted_amount=round_money(buckets[s.id].weighted, base),
                currency=base,
                unconverted_count=buckets[s.id].unconverted,
            )
            for s in pipeline.stages
        ],
        unconverted=unconverted,
        conversions=[c for c in conversions.values() if c is not None],
    )


def _unconverted_deals(
    live: tuple[Any, ...],
    conversions: dict[str, Conversion | None],
    buckets: dict[uuid.UUID, _StageBucket],
    base: str,
) -> list[UnconvertedDeal]:
    """The deals of the currencies without a chain to ``base``, oldest number first (no query when every
    currency converts, the usual case)."""
    missing = [currency for currency, conversion in conversions.items() if conversion is None]
    if not missing:
        return []
    rows = db.session.execute(
        select(Deal.id, Deal.reference, Deal.stage_id, Deal.amount, Deal.currency)
        .where(*live, Deal.currency.in_(missing))
        .order_by(Deal.number)
    )
    return [
        UnconvertedDeal(
            deal_id=row.id,
            reference=row.reference,
            stage_id=row.stage_id,
            amount=row.amount,
            currency=row.currency,
            reason=f"no exchange rate from {row.currency} to {base}",
        )
        for row in rows
        if row.stage_id in buckets
    ]


def supported_currencies() -> list[str]:
    return list(CURRENCIES)


def stage_visit_count(deal_id: uuid.UUID) -> int:
    return int(db.session.scalar(select(func.count()).where(DealStageVisit.deal_id == deal_id)) or 0)
