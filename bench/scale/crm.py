"""Scale Co's CRM: three pipelines, four currencies with exchange rates, accounts, contacts (each one a
messaging contact, linked by its WhatsApp number), deals with line items, contacts, stage history and
timeline, tickets with their state history, and tasks.

The invariants the CRM services rely on, kept here:
- deal ``number`` runs 1..n per pipeline in creation order, ``reference`` = ``<KEY>-<number>`` and the
  pipeline's ``deal_counter`` = n (the next deal takes n + 1);
- ``amount`` = the sum of the line item totals, each ``max(quantity x unit_price - discount, 0)`` rounded
  half-up to the currency's minor units (``Decimal``, as ``blueprints.crm.money`` stores them);
- stage history: one visit per stay, the last one open (``left_at`` null) in the deal's stage, entered at
  ``stage_entered_at``; a won/lost stage gives the deal that status and ``closed_at``;
- ticket ``number`` runs 1..n per organization in creation order, ``reference`` = ``TCK-<number>``,
  ``crm_settings.ticket_counter`` = n; the state history starts with the creation (``from_state`` null) and
  ends in the ticket's state; ``closed_at`` is set exactly for closed tickets;
- identities are E.164 phones and lower-cased e-mails, unique per organization; conversation links name
  conversations of the organization.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from random import Random
from typing import Any

from sqlalchemy import update

from bench.scale.common import Bulk, Context, ascii_slug, new_id
from bench.scale.messaging import whatsapp_number
from blueprints.crm.drafts import NamedDraft, PipelineDraft, StageDraft
from blueprints.crm.models import (
    AccountContact,
    ContactIdentity,
    CrmAccount,
    CrmContact,
    CrmSettings,
    CrmTask,
    Deal,
    DealActivity,
    DealContact,
    DealConversation,
    DealLineItem,
    DealStageVisit,
    Pipeline,
    Ticket,
    TicketConversation,
    TicketStateChange,
)
from blueprints.crm.money import money_str, round_money
from blueprints.crm.services import pipelines, tickets
from blueprints.crm.services.common import ensure_settings
from blueprints.crm.services.deals import line_item_total
from core.db import db

# (name, key, stages as (name, probability, status)); General (VNT) is the CRM's own default pipeline
PIPELINES = (
    ("General", "VNT", None),
    (
        "Empresas",
        "EMP",
        (
            ("Prospecto", 10, "open"),
            ("Diagnóstico", 30, "open"),
            ("Propuesta", 50, "open"),
            ("Negociación", 75, "open"),
            ("Ganado", 100, "won"),
            ("Perdido", 0, "lost"),
        ),
    ),
    (
        "Renovaciones",
        "REN",
        (
            ("Por renovar", 40, "open"),
            ("Cotizado", 70, "open"),
            ("Renovado", 100, "won"),
            ("No renovó", 0, "lost"),
        ),
    ),
)
PIPELINE_WEIGHTS = (0.6, 0.25, 0.15)
RATES = (("USD", "MXN", "17.20"), ("EUR", "MXN", "18.90"), ("COP", "USD", "0.00025"))
CURRENCIES = (("MXN", 0.6), ("USD", 0.25), ("EUR", 0.08), ("COP", 0.07))
# how many of a currency one MXN buys, to price the catalogue in the deal's currency
PER_MXN = {"MXN": Decimal(1), "USD": Decimal("0.0581"), "EUR": Decimal("0.0529"), "COP": Decimal("232.5")}
# (name, sku, unit price in MXN)
PRODUCTS = (
    ("Plan 20 GB", "PLAN-20", Decimal("299")),
    ("Plan 50 GB", "PLAN-50", Decimal("449")),
    ("Plan ilimitado", "PLAN-UNL", Decimal("649")),
    ("eSIM viajero 10 GB", "ESIM-10", Decimal("389")),
    ("Línea empresarial", "BIZ-LINE", Decimal("520")),
    ("Asiento de agente", "SEAT", Decimal("450")),
    ("Paquete de minutos", "MIN-1000", Decimal("49.90")),
    ("Mensajes WhatsApp (por mensaje)", "WA-MSG", Decimal("0.2150")),
    ("Equipo 5G", "DEV-5G", Decimal("7999")),
    ("Instalación", "SETUP", Decimal("1500")),
    ("Soporte premium anual", "SUP-PREM", Decimal("12000")),
    ("Portabilidad empresarial", "PORT-BIZ", Decimal("250")),
)
TICKET_TYPES = (("Falla técnica", "Sin señal, datos lentos"), ("Facturación", "Cobros y facturas"),
                ("Portabilidad", "Cambio de compañía"), ("Activación", "Chips y eSIM"))  # fmt: skip
PROJECTS = (("Migración 5G", "Cambio de equipos a 5G"), ("Lanzamiento eSIM", "Campaña de eSIM para viajeros"))
TICKET_TITLES = (
    "Sin señal en la zona",
    "Cobro duplicado",
    "La recarga no se aplicó",
    "Portabilidad detenida",
    "eSIM no se activa",
    "Factura con datos incorrectos",
    "Internet lento",
    "No llega el código NIP",
    "Cambio de plan",
    "Chip dañado",
    "Roaming no funciona",
    "Solicitud de factura",
)
TASK_TITLES = (
    ("call", "Llamar a {first}"),
    ("email", "Enviar cotización a {first}"),
    ("follow_up", "Dar seguimiento a {first}"),
    ("meeting", "Demo con {first}"),
    ("to_do", "Revisar documentos de {first}"),
    ("call", "Confirmar pago de {first}"),
)
INDUSTRIES = (
    "Logística",
    "Comercio",
    "Educación",
    "Salud",
    "Turismo",
    "Manufactura",
    "Servicios",
    "Gobierno",
)
COMPANY_WORDS = (
    ("Grupo", "Comercializadora", "Servicios", "Distribuidora", "Transportes", "Consultores"),
    ("del Norte", "del Bajío", "Azteca", "Pacífico", "Central", "Peninsular", "Sierra", "Maya"),
)
JOB_TITLES = ("Gerente de compras", "Director general", "Administración", "Operaciones", "TI", None, None)
ACTOR = "scale"


def _weighted(rng: Random, options: tuple[tuple[Any, float], ...]) -> Any:
    r = rng.random() * sum(weight for _, weight in options)
    for value, weight in options:
        r -= weight
        if r < 0:
            return value
    return options[-1][0]


def _spread(
    rng: Random, start: datetime, now: datetime, steps: int, low: float, high: float
) -> list[datetime]:
    """``steps`` increasing moments after ``start`` (gaps of ``low``..``high`` hours), squeezed before now."""
    gaps = [rng.uniform(low, high) * 3600 for _ in range(steps)]
    room = (now - start).total_seconds() - 1
    squeeze = min(1.0, room / sum(gaps)) if gaps and sum(gaps) > 0 else 1.0
    out, at = [], start
    for gap in gaps:
        at = at + timedelta(seconds=gap * squeeze)
        out.append(at)
    return out


def create_structure(ctx: Context) -> None:
    """Pipelines and stages, rates, settings, ticket types and projects (through the services)."""
    org = ctx.organization_id
    for name, key, stages in PIPELINES:
        if stages is None:
            pipelines.ensure_default_pipeline(org)
            continue
        pipeline = pipelines.create_pipeline(org, PipelineDraft(name, key, is_default=False))
        for order, (stage, probability, status) in enumerate(stages):
            pipelines.create_stage(org, pipeline.id, StageDraft(stage, order, probability, status))
    for source, target, rate in RATES:
        pipelines.upsert_rate(org, source, target, Decimal(rate))
    ensure_settings(org)
    for name, description in TICKET_TYPES:
        tickets.create_named(org, "ticket-types", NamedDraft(name, description))
    for name, description in PROJECTS:
        tickets.create_named(org, "projects", NamedDraft(name, description))


def generate(ctx: Context) -> None:
    people = ctx.people
    owners = people.humans_of("Ventas")
    agents = people.humans_of("Soporte") + people.humans_of("Cobranza")
    accounts = _accounts(ctx)
    account_of = _contacts(ctx, accounts)
    deals = _deals(ctx, owners, accounts, account_of)
    ticket_ids = _tickets(ctx, agents, account_of)
    _tasks(ctx, [*owners, *agents], deals, ticket_ids, account_of)


def _accounts(ctx: Context) -> list[uuid.UUID]:
    org, rng, clock = ctx.organization_id, ctx.rng, ctx.clock
    table = CrmAccount.__table__
    bulk = Bulk(table)
    ids = []
    with ctx.progress.bar("crm_accounts", ctx.counts.crm_accounts) as bar:
        bulk.on_write[table] = bar.update
        for index in range(ctx.counts.crm_accounts):
            name = f"{rng.choice(COMPANY_WORDS[0])} {rng.choice(COMPANY_WORDS[1])} {index + 1}"
            at = clock.moment(rng)
            account_id = new_id(rng)
            ids.append(account_id)
            bulk.add(
                table,
                {
                    "id": account_id,
                    "organization_id": org,
                    "name": name,
                    "domain": f"{ascii_slug(name).replace('.', '-')}.mx",
                    "industry": rng.choice(INDUSTRIES),
                    "phone": whatsapp_number(10_000_000 + index),
                    "notes": None,
                    "created_at": at,
                    "updated_at": at,
                },
            )
        bulk.flush()
    ctx.count(bulk)
    return ids


def _contacts(ctx: Context, accounts: list[uuid.UUID]) -> list[uuid.UUID | None]:
    """CRM contact i is messaging contact i: same name, its WhatsApp number as phone identity (that is
    how the messaging contact's ``crm_contact_id`` was found)."""
    org, rng = ctx.organization_id, ctx.rng
    contacts, identities, links = CrmContact.__table__, ContactIdentity.__table__, AccountContact.__table__
    bulk = Bulk(contacts, identities, links)
    account_of: list[uuid.UUID | None] = []
    with ctx.progress.bar("crm_contacts", len(ctx.crm_contact_ids)) as bar:
        bulk.on_write[contacts] = bar.update
        for index, contact_id in enumerate(ctx.crm_contact_ids):
            name = ctx.contact_names[index]
            at = ctx.contact_created[index] + timedelta(minutes=rng.uniform(5, 600))
            at = min(at, ctx.clock.now)
            bulk.add(
                contacts,
                {
                    "id": contact_id,
                    "organization_id": org,
                    "name": name,
                    "job_title": rng.choice(JOB_TITLES),
                    "notes": None,
                    "created_at": at,
                    "updated_at": at,
                },
            )
            bulk.add(
                identities,
                {
                    "id": new_id(rng),
                    "organization_id": org,
                    "contact_id": contact_id,
                    "kind": "phone",
                    "value": whatsapp_number(index),
                    "created_at": at,
                },
            )
            if rng.random() < 0.6:
                domain = rng.choice(("gmail.com", "hotmail.com", "outlook.com", "yahoo.com.mx"))
                bulk.add(
                    identities,
                    {
                        "id": new_id(rng),
                        "organization_id": org,
                        "contact_id": contact_id,
                        "kind": "email",
                        "value": f"{ascii_slug(name)}.{index}@{domain}",
                        "created_at": at,
                    },
                )
            account = rng.choice(accounts) if rng.random() < 0.7 else None
            account_of.append(account)
            if account is not None:
                bulk.add(
                    links,
                    {
                        "account_id": account,
                        "contact_id": contact_id,
                        "role": rng.choice(("Compras", "Decisor", "Técnico", None)),
                        "created_at": at,
                    },
                )
        bulk.flush()
    ctx.count(bulk)
    return account_of


def _stages_of(organization_id: uuid.UUID) -> list[tuple[Pipeline, list[Any]]]:
    return [(p, list(p.stages)) for p in pipelines.list_pipelines(organization_id)]


def _line_items(
    rng: Random, currency: str
) -> list[tuple[tuple[str, str, Decimal], Decimal, Decimal, Decimal]]:
    """(product, quantity, unit price, discount) x 1..4, priced in ``currency``."""
    items = []
    for product in rng.sample(PRODUCTS, rng.choice((1, 1, 1, 2, 2, 3, 4))):
        quantity = Decimal(rng.choice((1, 1, 1, 2, 3, 5, 10, 20, 50)))
        if product[1] == "WA-MSG":
            quantity = Decimal(rng.choice((1000, 5000, 20000)))
        price = (product[2] * PER_MXN[currency]).quantize(
            Decimal("0.0001") if product[1] == "WA-MSG" else Decimal("0.01")
        )
        discount = Decimal(0)
        if rng.random() < 0.2:
            discount = round_money(quantity * price * Decimal(rng.choice((5, 10, 15))) / 100, currency)
        items.append((product, quantity, price, discount))
    return items


def _deals(
    ctx: Context, owners: list[str], accounts: list[uuid.UUID], account_of: list[uuid.UUID | None]
) -> list[tuple[uuid.UUID, str, uuid.UUID | None]]:
    org, rng, clock, now = ctx.organization_id, ctx.rng, ctx.clock, ctx.clock.now
    product_ids = {p[1]: uuid.uuid5(org, f"product:{p[1]}") for p in PRODUCTS}
    structure = _stages_of(org)
    counters = [0] * len(structure)
    tables = (
        Deal.__table__,
        DealContact.__table__,
        DealLineItem.__table__,
        DealStageVisit.__table__,
        DealActivity.__table__,
        DealConversation.__table__,
    )
    deals_t, contacts_t, items_t, visits_t, activity_t, links_t = tables
    bulk = Bulk(*tables)
    created_times = sorted(clock.moment(rng) for _ in range(ctx.counts.deals))
    made: list[tuple[uuid.UUID, str, uuid.UUID | None]] = []
    with ctx.progress.bar("crm_deals", len(created_times)) as bar:
        bulk.on_write[deals_t] = bar.update
        for created in created_times:
            which = _weighted(rng, tuple(enumerate(PIPELINE_WEIGHTS)))
            pipeline, stages = structure[which]
            counters[which] += 1
            number = counters[which]
            open_stages = [s for s in stages if s.status == "open"]
            won = next(s for s in stages if s.status == "won")
            lost = next(s for s in stages if s.status == "lost")
            age = (now - created).days
            r = rng.random()
            outcome = "open"
            if (age > 45 and r < 0.42) or (10 < age <= 45 and r < 0.15):
                outcome = "won"
            elif (age > 45 and r < 0.77) or (10 < age <= 45 and r < 0.30):
                outcome = "lost"
            if outcome == "won":
                path = [*open_stages, won]
            elif outcome == "lost":
                path = [*open_stages[: rng.randrange(len(open_stages)) + 1], lost]
            else:
                path = open_stages[
                    : min(rng.randrange(len(open_stages)), rng.randrange(len(open_stages))) + 1
                ]
            entered = [created, *_spread(rng, created, now, len(path) - 1, 12, 20 * 24)]
            stage = path[-1]
            deal_id = new_id(rng)
            currency = _weighted(rng, CURRENCIES)
            items = _line_items(rng, currency)
            totals = [line_item_total(q, price, discount, currency) for _, q, price, discount in items]
            amount = round_money(sum(totals, Decimal(0)), currency)
            owner = rng.choice(owners) if rng.random() < 0.9 else None
            contact = rng.randrange(len(ctx.crm_contact_ids))
            account = account_of[contact] or (rng.choice(accounts) if rng.random() < 0.3 else None)
            actor = f"member:{owner}" if owner else ACTOR
            closed_at = entered[-1] if stage.status != "open" else None
            bulk.add(
                deals_t,
                {
                    "id": deal_id,
                    "organization_id": org,
                    "pipeline_id": pipeline.id,
                    "stage_id": stage.id,
                    "number": number,
                    "reference": f"{pipeline.key}-{number}",
                    "name": f"{items[0][0][0]} · {ctx.contact_names[contact]}",
                    "amount": amount,
                    "currency": currency,
                    "status": stage.status,
                    "owner_id": owner,
                    "account_id": account,
                    "expected_close_date": datetime.combine(
                        (created + timedelta(days=rng.randrange(20, 120))).date(), time.min, UTC
                    ),
                    "stage_entered_at": entered[-1],
                    "closed_at": closed_at,
                    "deleted_at": None,
                    "created_at": created,
                    "updated_at": entered[-1],
                },
            )
            bulk.add(
                contacts_t,
                {
                    "id": new_id(rng),
                    "deal_id": deal_id,
                    "contact_id": ctx.crm_contact_ids[contact],
                    "role": "buyer",
                    "is_primary": True,
                    "created_at": created,
                },
            )
            for position, ((product, quantity, price, discount), total) in enumerate(
                zip(items, totals, strict=True)
            ):
                bulk.add(
                    items_t,
                    {
                        "id": new_id(rng),
                        "organization_id": org,
                        "deal_id": deal_id,
                        "product_id": product_ids[product[1]],
                        "name": product[0],
                        "quantity": quantity,
                        "unit_price": price,
                        "discount": discount,
                        "total": total,
                        "currency": currency,
                        "sku": product[1],
                        "notes": None,
                        "position": position,  # the editor's order: items share one created_at here
                        "created_at": created,
                        "updated_at": created,
                    },
                )
            activity = {
                "stage_id": str(path[0].id),
                "amount": money_str(amount, currency),
                "currency": currency,
            }
            bulk.add(activity_t, _activity(org, rng, deal_id, "created", activity, created, actor))
            for index, visited in enumerate(path):
                left = entered[index + 1] if index + 1 < len(path) else None
                bulk.add(
                    visits_t,
                    {
                        "id": new_id(rng),
                        "deal_id": deal_id,
                        "stage_id": visited.id,
                        "stage_name": visited.name,
                        "stage_order": visited.stage_order,
                        "entered_at": entered[index],
                        "left_at": left,
                    },
                )
                if index:
                    moved = {
                        "from_stage_id": str(path[index - 1].id),
                        "to_stage_id": str(visited.id),
                        "to_stage_name": visited.name,
                    }
                    bulk.add(
                        activity_t,
                        _activity(org, rng, deal_id, "stage_changed", moved, entered[index], actor),
                    )
            if stage.status != "open":
                change = {"from": "open", "to": stage.status}
                bulk.add(
                    activity_t, _activity(org, rng, deal_id, "status_changed", change, entered[-1], actor)
                )
            linked = ctx.first_conversation.get(contact)
            if linked is not None and rng.random() < 0.15:
                conversation_id, service = linked
                at = created + timedelta(minutes=rng.uniform(1, 120))
                at = min(at, now)
                summary = f"Conversación por {service} vinculada al trato."
                bulk.add(
                    links_t,
                    {
                        "id": new_id(rng),
                        "organization_id": org,
                        "deal_id": deal_id,
                        "conversation_id": str(conversation_id),
                        "channel": service,
                        "linked_by": owner,
                        "summary": summary,
                        "created_at": at,
                    },
                )
                data = {
                    "conversation_id": str(conversation_id),
                    "channel": service,
                    "summary_method": "scale",
                }
                bulk.add(
                    activity_t, _activity(org, rng, deal_id, "conversation_linked", data, at, actor, summary)
                )
            made.append((deal_id, f"{pipeline.key}-{number}", ctx.crm_contact_ids[contact]))
        bulk.flush()
    for (pipeline, _), counter in zip(structure, counters, strict=True):
        db.session.execute(update(Pipeline).where(Pipeline.id == pipeline.id).values(deal_counter=counter))
    db.session.commit()
    ctx.count(bulk)
    return made


def _activity(
    org: uuid.UUID,
    rng: Random,
    deal_id: uuid.UUID,
    kind: str,
    data: dict[str, Any],
    at: datetime,
    actor: str,
    summary: str | None = None,
) -> dict[str, Any]:
    return {
        "id": new_id(rng),
        "organization_id": org,
        "deal_id": deal_id,
        "type": kind,
        "data": data,
        "summary": summary,
        "actor": actor,
        "created_at": at,
    }


TICKET_PATHS = {
    "new": ("new",),
    "waiting_on_agent": ("new", "waiting_on_agent"),
    "waiting_on_customer": ("new", "waiting_on_agent", "waiting_on_customer"),
    "on_hold": ("new", "waiting_on_agent", "on_hold"),
    "closed": ("new", "waiting_on_agent", "closed"),
}


def _tickets(ctx: Context, agents: list[str], account_of: list[uuid.UUID | None]) -> list[uuid.UUID]:
    org, rng, clock, now = ctx.organization_id, ctx.rng, ctx.clock, ctx.clock.now
    from blueprints.crm.models import CrmProject, TicketType

    types = list(db.session.scalars(db.select(TicketType.id).where(TicketType.organization_id == org)))
    projects = list(db.session.scalars(db.select(CrmProject.id).where(CrmProject.organization_id == org)))
    supervisors = ctx.people.supervisors
    tickets_t, changes_t, links_t = (
        Ticket.__table__,
        TicketStateChange.__table__,
        TicketConversation.__table__,
    )
    bulk = Bulk(tickets_t, changes_t, links_t)
    created_times = sorted(clock.moment(rng) for _ in range(ctx.counts.tickets))
    ids = []
    with ctx.progress.bar("crm_tickets", len(created_times)) as bar:
        bulk.on_write[tickets_t] = bar.update
        for number, created in enumerate(created_times, start=1):
            recent = (now - created).days <= 7
            state = _weighted(
                rng,
                (
                    ("new", 0.3),
                    ("waiting_on_agent", 0.35),
                    ("waiting_on_customer", 0.2),
                    ("on_hold", 0.05),
                    ("closed", 0.1),
                )
                if recent
                else (
                    ("new", 0.03),
                    ("waiting_on_agent", 0.07),
                    ("waiting_on_customer", 0.08),
                    ("on_hold", 0.05),
                    ("closed", 0.77),
                ),
            )
            path = list(TICKET_PATHS[state])
            if state == "closed" and rng.random() < 0.5:
                path.insert(2, "waiting_on_customer")
            times = [created, *_spread(rng, created, now, len(path) - 1, 0.2, 72)]
            source = _weighted(
                rng, (("channel", 0.55), ("form", 0.15), ("manual", 0.15), ("api", 0.1), ("automation", 0.05))
            )
            requester = rng.randrange(len(ctx.crm_contact_ids)) if rng.random() < 0.85 else None
            channel = None
            linked = None
            if source == "channel":
                linked = ctx.first_conversation.get(requester) if requester is not None else None
                channel = "whatsapp" if linked is None or linked[1] != "messenger" else "messenger"
            elif rng.random() < 0.5:
                channel = "email"
            assignee = rng.choice(agents) if rng.random() < 0.9 else None
            ticket_id = new_id(rng)
            ids.append(ticket_id)
            title = rng.choice(TICKET_TITLES)
            actor = f"member:{assignee}" if assignee else "system"
            bulk.add(
                tickets_t,
                {
                    "id": ticket_id,
                    "organization_id": org,
                    "number": number,
                    "reference": f"TCK-{number}",
                    "title": title,
                    "state": state,
                    "priority": _weighted(
                        rng, (("urgent", 0.05), ("high", 0.2), ("normal", 0.6), ("low", 0.15))
                    ),
                    "source": source,
                    "body_html": f"<p>{title}. Reportado por el cliente.</p>",
                    "requester_id": ctx.crm_contact_ids[requester] if requester is not None else None,
                    "assignee_member_id": assignee,
                    "assigned_by": rng.choice(supervisors) if assignee else None,
                    "assigned_at": times[min(1, len(times) - 1)] if assignee else None,
                    "account_id": account_of[requester] if requester is not None else None,
                    "project_id": rng.choice(projects) if rng.random() < 0.1 else None,
                    "ticket_type_id": rng.choice(types) if rng.random() < 0.8 else None,
                    "channel": channel,
                    "closed_at": times[-1] if state == "closed" else None,
                    "created_at": created,
                    "updated_at": times[-1],
                },
            )
            previous = None
            for to_state, at in zip(path, times, strict=True):
                bulk.add(
                    changes_t,
                    {
                        "id": new_id(rng),
                        "ticket_id": ticket_id,
                        "from_state": previous,
                        "to_state": to_state,
                        "changed_by": actor if previous else "system",
                        "changed_at": at,
                    },
                )
                previous = to_state
            if linked is not None and rng.random() < 0.6:
                bulk.add(
                    links_t,
                    {
                        "id": new_id(rng),
                        "ticket_id": ticket_id,
                        "conversation_id": str(linked[0]),
                        "created_at": created,
                    },
                )
        bulk.flush()
    db.session.execute(
        update(CrmSettings)
        .where(CrmSettings.organization_id == org)
        .values(ticket_counter=len(created_times))
    )
    db.session.commit()
    ctx.count(bulk)
    return ids


def _tasks(
    ctx: Context,
    owners: list[str],
    deals: list[tuple[uuid.UUID, str, uuid.UUID | None]],
    ticket_ids: list[uuid.UUID],
    account_of: list[uuid.UUID | None],
) -> None:
    org, rng, clock, now = ctx.organization_id, ctx.rng, ctx.clock, ctx.clock.now
    table = CrmTask.__table__
    bulk = Bulk(table)
    with ctx.progress.bar("crm_tasks", ctx.counts.tasks) as bar:
        bulk.on_write[table] = bar.update
        for _ in range(ctx.counts.tasks):
            created = clock.moment(rng)
            due = created + timedelta(days=rng.uniform(0.5, 21)) if rng.random() < 0.9 else None
            kind, title = rng.choice(TASK_TITLES)
            contact = rng.randrange(len(ctx.crm_contact_ids)) if rng.random() < 0.6 else None
            deal = rng.choice(deals) if rng.random() < 0.4 else None
            ticket = rng.choice(ticket_ids) if rng.random() < 0.25 else None
            if deal is not None and rng.random() < 0.5:
                title = f"Seguimiento {deal[1]}"
                first = None
            else:
                first = ctx.contact_names[contact].split()[0] if contact is not None else "el cliente"
                title = title.format(first=first)
            status, completed_at = "pending", None
            if due is not None and due < now:
                status = _weighted(rng, (("completed", 0.8), ("pending", 0.15), ("in_progress", 0.05)))
            elif rng.random() < 0.15:
                status = "in_progress"
            if status == "completed":
                done = min(due or now, now) - timedelta(hours=rng.uniform(0, 24))
                completed_at = max(done, created)
            bulk.add(
                table,
                {
                    "id": new_id(rng),
                    "organization_id": org,
                    "title": title,
                    "type": kind,
                    "status": status,
                    "priority": _weighted(
                        rng, (("low", 0.2), ("normal", 0.6), ("high", 0.15), ("urgent", 0.05))
                    ),
                    "due_date": due,
                    "owner_id": rng.choice(owners) if rng.random() < 0.95 else None,
                    "deal_id": deal[0] if deal else None,
                    "ticket_id": ticket,
                    "contact_id": ctx.crm_contact_ids[contact] if contact is not None else None,
                    "account_id": account_of[contact] if contact is not None else None,
                    "notes": None,
                    "completed_at": completed_at,
                    "deleted_at": None,
                    "created_at": created,
                    "updated_at": completed_at or created,
                },
            )
        bulk.flush()
    ctx.count(bulk)
