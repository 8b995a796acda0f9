"""Scale Co's conversations: four channel accounts (two WhatsApp numbers, an Instagram account, a Facebook
Page) on the simulator, the label catalogue and routing rules, contacts with their addresses,
conversations (70 % WhatsApp, 20 % Instagram, 10 % Messenger) and their messages, and the label rows.

The invariants the services rely on, kept here:
- one conversation per (organization address, contact, service), its ``contact_address`` the contact's
  address on that service (E.164 for WhatsApp, a PSID/IGSID otherwise);
- ``last_message_at`` / ``last_incoming_at`` are the latest message's / incoming message's ``timestamp``;
  ``created_at`` is the first message's time; an archived or closed conversation had no incoming message
  after it was archived (an incoming message re-opens and un-archives);
- ``member_id``/``team_id`` columns with ``extra.assignment``/``extra.team_name`` as the inbox writes them;
  ``extra.labels`` equals the ``conversation_labels`` rows (same names, ``name_key`` lower-cased) and each
  label is in the catalogue;
- messages: ``external_id`` unique per organization, incoming ``status {received}``, outgoing statuses
  with a timestamp per status reached and ``current_status`` the furthest (``failed`` with ``error``);
- a contact's ``crm_contact_id`` names the CRM contact whose phone identity is its WhatsApp number.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta
from random import Random
from typing import Any

from sqlalchemy import select

from bench.scale.common import Bulk, Context, new_id, person_name
from blueprints.channels.services import Connection, connect_address
from blueprints.inbox.models import ConversationLabel, Label, MemberAssignment
from blueprints.inbox.services import assignment, labels
from blueprints.messaging.models import Contact, ContactAddress, Conversation, Message
from core.db import db, isoformat

SCREEN_IMAGE = "/static/demo/pantalla-sin-senal.svg"
RECEIPT_DOCUMENT = "/static/demo/comprobante-de-pago.pdf"

# key, connection, the team its conversations belong to, AI share, the AI agents that answer there
ADDRESSES: tuple[tuple[str, Connection, str, float, tuple[str, ...]], ...] = (
    (
        "whatsapp-sales",
        Connection(
            service="whatsapp",
            address="200000000000101",
            provider="simulator",
            phone_number="+525590000101",
            verified_name="Scale Co Ventas",
        ),
        "Ventas",
        0.35,
        ("scale_ai_sofia", "scale_ai_vera"),
    ),
    (
        "whatsapp-support",
        Connection(
            service="whatsapp",
            address="200000000000102",
            provider="simulator",
            phone_number="+525590000102",
            verified_name="Scale Co Soporte",
        ),
        "Soporte",
        0.25,
        ("scale_ai_max", "scale_ai_tomas"),
    ),
    (
        "instagram",
        Connection(
            service="instagram", address="17841400000000901", provider="simulator", verified_name="@scaleco"
        ),
        "Ventas",
        0.7,
        ("scale_ai_vera", "scale_ai_sofia"),
    ),
    (
        "messenger",
        Connection(
            service="messenger", address="200000000000103", provider="simulator", verified_name="Scale Co"
        ),
        "Cobranza",
        0.3,
        ("scale_ai_lia",),
    ),
)
WA_SALES, WA_SUPPORT, INSTAGRAM, MESSENGER = range(4)
LABELS = (
    ("vip", "#d97706"),
    ("lead", "#2563eb"),
    ("soporte", "#059669"),
    ("facturación", "#7c3aed"),
    ("portabilidad", "#db2777"),
    ("recarga", "#0891b2"),
    ("eSIM", "#65a30d"),
    ("queja", "#dc2626"),
)
INCOMING_TEXTS = (
    "Hola, buenas tardes",
    "Hola",
    "Buenos días",
    "¿Tienen el plan de 20 GB disponible?",
    "Mi recarga no aparece",
    "¿Cuánto cuesta la eSIM para viajar a Estados Unidos?",
    "No tengo señal desde ayer",
    "Quiero portar mi número",
    "¿Cuál es su horario de atención?",
    "Ya hice el pago, les mando el comprobante",
    "Gracias 👍",
    "¿Aceptan pago con tarjeta?",
    "Me cobraron dos veces este mes",
    "¿Cómo activo el roaming?",
    "Perfecto, muchas gracias",
    "¿Me pueden llamar?",
    "Sigue sin funcionar",
    "¿Cuándo llega mi chip?",
    "Quiero cambiar de plan",
    "¿Tienen planes empresariales?",
    "Ok",
    "Sí, por favor",
    "¿Qué necesito para contratar?",
    "Mi número es el mismo de este WhatsApp",
    "Ya reinicié el teléfono y nada",
    "¿Hay cobertura en Oaxaca?",
    "Necesito mi factura de octubre",
    "¿Puedo pagar en OXXO?",
    "Se me acabaron los datos",
    "¿Cuánto tarda la portabilidad?",
    "No me llegó el código NIP",
    "Excelente servicio, gracias",
    "Voy a viajar a España la próxima semana, ¿qué plan me recomiendan?",
    "Buenas noches, desde hace tres días el internet está muy lento y ya no sé qué hacer, "
    "reinicié el equipo varias veces y sigue igual",
    "¿Me ayudan a configurar el APN?",
    "Listo, ya quedó",
)
OUTGOING_TEXTS = (
    "¡Hola {first}! ¿En qué te puedo ayudar?",
    "Claro, con gusto te ayudo.",
    "¿Me compartes tu número de línea, por favor?",
    "Ya quedó aplicada tu recarga.",
    "El plan de 20 GB cuesta $299 al mes.",
    "Te comparto la guía para configurar el APN.",
    "Revisamos tu cuenta y todo está en orden.",
    "Gracias por tu paciencia, {first}.",
    "Tu portabilidad quedará lista en 24 a 48 horas.",
    "Sí, aceptamos tarjeta de crédito, débito y pago en OXXO.",
    "Te paso con el equipo de soporte técnico.",
    "¿Podrías reiniciar tu teléfono y decirme si ya tienes señal?",
    "Ya generamos tu factura, te llegará por correo.",
    "Nuestro horario es de lunes a sábado de 9:00 a 20:00.",
    "¿Hay algo más en lo que te pueda ayudar?",
    "¡Que tengas excelente día, {first}!",
    "Te envío el enlace de pago: https://pagos.scaleco.test/l/{folio}",
    "Listo, tu chip sale hoy por paquetería.",
    "Con gusto, tu folio es {folio}.",
    "Lamentamos el inconveniente, ya lo estamos revisando.",
)
CAPTIONS = ("Así se ve mi pantalla", "Este es el error", None, None)
FAILED_ERROR = {
    "code": 131026,
    "title": "Message Undeliverable",
    "details": "Message failed to send because the recipient is not a WhatsApp user or has not accepted "
    "the terms of service.",
    "provider": "simulator",
}
WELCOME_TEMPLATE = {
    "id": "sim_welcome",
    "name": "welcome",
    "language": "es_MX",
    "category": "MARKETING",
}
MAX_MESSAGES = 400  # the longest thread; the share of long ones comes from the log-normal tail


# ---- structure ------------------------------------------------------------------------------------------


def create_structure(ctx: Context) -> None:
    """Channel accounts, label catalogue, routing rules (through the services, in the session)."""
    org = ctx.organization_id
    for _, connection, *_ in ADDRESSES:
        connect_address(org, connection)
    for name, color in LABELS:
        labels.create_label(org, name, color=color)
    people = ctx.people
    for key, connection, team, _, ai in ADDRESSES:
        if key == "instagram":
            assignment.set_routing(org, connection.address, "member", None, ai[0])
        else:
            assignment.set_routing(org, connection.address, "team", people.team_ids[team], None)


# ---- addresses of contacts ------------------------------------------------------------------------------


def whatsapp_number(index: int) -> str:
    """A distinct Mexican mobile number per contact (a bijection of the index: never two alike)."""
    x = (index * 7919 + 1_234_567) % 80_000_000
    area = ("55", "33", "81")[index % 3]
    return f"+52{area}{2 + x % 8}{x // 8:07d}"


def scoped_id(prefix: str, index: int) -> str:
    return f"{prefix}{(index * 7919 + 123_457) % 10**14:014d}"


def whatsapp_contacts(contacts: int, conversations: int) -> int:
    """Contacts ``0 .. n-1`` have a WhatsApp number (the rest write only on Instagram)."""
    n_wa = round(conversations * 0.7)
    return min(contacts, n_wa, max(math.ceil(n_wa / 2), round(contacts * 0.8)))


def plan_slots(contacts: int, conversations: int) -> list[tuple[int, int]]:
    """(contact index, address index) of every conversation: 70 % WhatsApp over two numbers (some people
    write to both), 20 % Instagram, 10 % Messenger; every contact has at least one conversation."""
    n_wa = round(conversations * 0.7)
    n_ig = round(conversations * 0.2)
    n_fb = conversations - n_wa - n_ig
    wa_contacts = whatsapp_contacts(contacts, conversations)
    ig_first = max(0, contacts - n_ig)
    fb_first = max(0, min(contacts // 2, contacts - n_fb))
    slots = [(c, WA_SALES) for c in range(wa_contacts)]
    slots += [(c, WA_SUPPORT) for c in range(n_wa - wa_contacts)]
    slots += [(c % contacts, INSTAGRAM) for c in range(ig_first, ig_first + n_ig)]
    slots += [(c % contacts, MESSENGER) for c in range(fb_first, fb_first + n_fb)]
    return slots


def contact_address(index: int, address: int) -> str:
    if address in (WA_SALES, WA_SUPPORT):
        return whatsapp_number(index)
    return scoped_id("73" if address == INSTAGRAM else "64", index)


def _message_counts(rng: Random, conversations: int, messages: int) -> list[int]:
    """Skewed lengths that add up to ``messages`` exactly: many short threads, a few very long ones."""
    weights = [min(rng.lognormvariate(0.0, 1.25), 60.0) for _ in range(conversations)]
    spare = messages - conversations
    total = sum(weights)
    shares = [w * spare / total for w in weights]
    counts = [1 + min(int(s), MAX_MESSAGES - 1) for s in shares]
    missing = messages - sum(counts)
    # the largest fractions first, then round-robin, never past MAX_MESSAGES
    order = sorted(range(conversations), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    while missing > 0:
        progressed = False
        for i in order:
            if missing == 0:
                break
            if counts[i] < MAX_MESSAGES:
                counts[i] += 1
                missing -= 1
                progressed = True
        if not progressed:
            break
    return counts


# ---- the bulk part --------------------------------------------------------------------------------------


def generate(ctx: Context) -> None:
    rng, clock, counts = ctx.rng, ctx.clock, ctx.counts
    slots = plan_slots(counts.contacts, counts.conversations)
    starts = [clock.moment(rng) for _ in slots]
    lengths = _message_counts(rng, len(slots), counts.messages)
    ctx.conversation_ids = [new_id(rng) for _ in slots]
    ctx.contact_ids = [new_id(rng) for _ in range(counts.contacts)]
    ctx.contact_names = [person_name(rng) for _ in range(counts.contacts)]
    # a CRM contact is known by its phone: only contacts with a WhatsApp number can be one
    crm_contacts = min(counts.crm_contacts, whatsapp_contacts(counts.contacts, counts.conversations))
    ctx.crm_contact_ids = [new_id(rng) for _ in range(crm_contacts)]
    first_seen: list[datetime | None] = [None] * counts.contacts
    services_of: list[set[int]] = [set() for _ in range(counts.contacts)]
    for slot, (contact, address) in enumerate(slots):
        if first_seen[contact] is None or starts[slot] < first_seen[contact]:  # type: ignore[operator]
            first_seen[contact] = starts[slot]
            ctx.first_conversation[contact] = (ctx.conversation_ids[slot], ADDRESSES[address][1].service)
        services_of[contact].add(address)
    ctx.contact_created = [seen or clock.now for seen in first_seen]

    _contacts(ctx, services_of)
    _conversations(ctx, slots, starts, lengths)


def _contacts(ctx: Context, services_of: list[set[int]]) -> None:
    org, rng = ctx.organization_id, ctx.rng
    contacts, addresses = Contact.__table__, ContactAddress.__table__
    bulk = Bulk(contacts, addresses)
    with ctx.progress.bar("messaging_contacts", len(ctx.contact_ids)) as bar:
        bulk.on_write[contacts] = bar.update
        for index, contact_id in enumerate(ctx.contact_ids):
            seen = ctx.contact_created[index]
            crm = ctx.crm_contact_ids[index] if index < len(ctx.crm_contact_ids) else None
            bulk.add(
                contacts,
                {
                    "id": contact_id,
                    "organization_id": org,
                    "name": ctx.contact_names[index],
                    "crm_contact_id": str(crm) if crm is not None else None,
                    "extra": {},
                    "created_at": seen,
                    "updated_at": seen,
                },
            )
            # one address per service, even for a person who wrote to both WhatsApp numbers
            services = {ADDRESSES[a][1].service: a for a in sorted(services_of[index])}
            for service, address in services.items():
                value = contact_address(index, address)
                bulk.add(
                    addresses,
                    {
                        "id": new_id(rng),
                        "organization_id": org,
                        "contact_id": contact_id,
                        "service": service,
                        "address": value,
                        "provider_id": value.lstrip("+"),
                        "created_at": seen,
                    },
                )
        bulk.flush()
    ctx.count(bulk)


def _pick_member(rng: Random, people: Any, address: int) -> tuple[str | None, str | None, str]:
    """(member id, team name, assigned_by) of a conversation that arrived on ``address``."""
    _, _, team, ai_share, ai_agents = ADDRESSES[address]
    r = rng.random()
    if r < 0.08:
        return None, (team if rng.random() < 0.5 else None), ""
    if r < 0.08 + ai_share:
        member = rng.choice(ai_agents)
        return member, people.team_of[member], "routing"
    member = rng.choice(people.humans_of(team))
    return member, team, ("routing" if rng.random() < 0.7 else "manual")


def _content(rng: Random, incoming: bool, service: str, first_name: str, folio: int) -> dict[str, Any]:
    r = rng.random()
    if incoming:
        if r < 0.87 or (service == "instagram" and r >= 0.97):
            return {"kind": "text", "text": rng.choice(INCOMING_TEXTS)}
        if r < 0.93:
            caption = rng.choice(CAPTIONS) if service == "whatsapp" else None
            return {
                "kind": "image",
                "text": caption,
                "file": {"uri": SCREEN_IMAGE, "mime_type": "image/svg+xml"},
            }
        if r < 0.97:
            return {
                "kind": "audio",
                "file": {"provider_id": f"media.{folio}", "mime_type": "audio/ogg; codecs=opus"},
            }
        if r < 0.99 or service != "whatsapp":
            return {
                "kind": "document",
                "text": None,
                "file": {
                    "uri": RECEIPT_DOCUMENT,
                    "mime_type": "application/pdf",
                    "filename": "comprobante-de-pago.pdf",
                },
            }
        return {
            "kind": "location",
            "location": {
                "latitude": 19.4326 + rng.uniform(-0.2, 0.2),
                "longitude": -99.1332 + rng.uniform(-0.2, 0.2),
            },
        }
    if r < 0.97:
        text = rng.choice(OUTGOING_TEXTS)
        if "{" in text:
            text = text.format(first=first_name, folio=folio)
        return {"kind": "text", "text": text}
    return {"kind": "image", "text": None, "file": {"uri": SCREEN_IMAGE, "mime_type": "image/svg+xml"}}


def _outgoing_status(
    rng: Random, at: datetime, now: datetime, read_by: datetime
) -> tuple[dict[str, Any], str]:
    """Every status reached with its time; read before the contact's next message (or within hours)."""
    status: dict[str, Any] = {
        "pending": isoformat(at),
        "accepted": isoformat(at + timedelta(milliseconds=150)),
    }
    r = rng.random()
    if r < 0.03:
        status["failed"] = isoformat(at + timedelta(seconds=2))
        status["error"] = FAILED_ERROR
        return status, "failed"
    status["sent"] = isoformat(at + timedelta(seconds=1))
    if r < 0.10:
        return status, "sent"
    delivered = at + timedelta(seconds=rng.uniform(2, 8))
    status["delivered"] = isoformat(delivered)
    read = min(read_by, delivered + timedelta(seconds=rng.uniform(20, 4 * 3600)))
    if r < 0.30 or read > now or read <= delivered:
        return status, "delivered"
    status["read"] = isoformat(read)
    return status, "read"


def _timeline(rng: Random, length: int, ai: bool) -> list[tuple[bool, float]]:
    """(incoming?, seconds after the first message) for each message: bursts of the contact and replies,
    sometimes a pause of hours or days before the thread goes on."""
    timeline = [(True, 0.0)]
    offset = 0.0
    incoming = True
    for _ in range(length - 1):
        incoming = rng.random() < 0.35 if incoming else rng.random() >= 0.25
        if incoming:
            gap = rng.uniform(3 * 3600, 3 * 86400) if rng.random() < 0.1 else rng.lognormvariate(4.5, 1.0)
        else:
            gap = rng.uniform(2, 20) if ai else min(rng.lognormvariate(4.3, 1.1), 2 * 3600)
        offset += gap
        timeline.append((incoming, offset))
    return timeline


def _conversations(
    ctx: Context, slots: list[tuple[int, int]], starts: list[datetime], lengths: list[int]
) -> None:
    org, rng, now, people = ctx.organization_id, ctx.rng, ctx.clock.now, ctx.people
    conversations, messages = Conversation.__table__, Message.__table__
    label_rows = ConversationLabel.__table__
    bulk = Bulk(conversations, messages, label_rows)
    catalogue = {key: name for key, name in _catalogue(org)}
    label_names = list(catalogue.values())
    last_assigned: dict[str, datetime] = {}
    message_number = 0
    with ctx.progress.bar("conversations + messages", sum(lengths)) as bar:
        bulk.on_write[messages] = bar.update
        for slot, (contact, address) in enumerate(slots):
            conversation_id = ctx.conversation_ids[slot]
            connection = ADDRESSES[address][1]
            service = connection.service
            their_address = contact_address(contact, address)
            name = ctx.contact_names[contact]
            first_name = name.split()[0]
            member, team, assigned_by = _pick_member(rng, people, address)
            ai = member is not None and member in people.ai
            start = starts[slot]
            # a follow-up template when the contact went quiet for days on WhatsApp (the window closed);
            # it is one of the conversation's messages, so the total stays exactly the asked count
            wants_template = service == "whatsapp" and lengths[slot] >= 2 and rng.random() < 0.04
            timeline = _timeline(rng, lengths[slot] - wants_template, ai)
            span = timeline[-1][1]
            room = (now - start).total_seconds() - 1
            squeeze = min(1.0, room / span) if span > 0 else 1.0  # a thread never runs past now
            times = [start + timedelta(seconds=offset * squeeze) for _, offset in timeline]
            template_at = None
            if wants_template:
                candidate = times[-1] + timedelta(hours=rng.uniform(26, 96))
                if candidate < now:
                    template_at = candidate
                else:  # too recent for a follow-up: a last reply instead
                    timeline.append((False, timeline[-1][1]))
                    times.append(times[-1] + (now - times[-1]) / 2)
            last_incoming = max(t for (incoming, _), t in zip(timeline, times, strict=True) if incoming)
            last_message = template_at or times[-1]
            # the contact's next message after each one: an outgoing message is read before it
            read_by, upcoming = [now] * len(times), now
            for index in range(len(times) - 1, -1, -1):
                read_by[index] = upcoming
                if timeline[index][0]:
                    upcoming = times[index]
            thread: list[dict[str, Any]] = []  # added after the conversation row they point at
            for index, ((incoming, _), at) in enumerate(zip(timeline, times, strict=True)):
                message_number += 1
                if incoming:
                    status, current = {"received": isoformat(at)}, "received"
                else:
                    status, current = _outgoing_status(rng, at, now, read_by[index])
                thread.append(
                    _message(
                        org,
                        rng,
                        conversation_id,
                        connection,
                        their_address,
                        message_number,
                        at,
                        incoming,
                        content=_content(rng, incoming, service, first_name, message_number),
                        status=status,
                        current=current,
                        member=None if incoming else member,
                    ),
                )
            if template_at is not None:
                message_number += 1
                status, current = _outgoing_status(rng, template_at, now, now)
                row = _message(
                    org,
                    rng,
                    conversation_id,
                    connection,
                    their_address,
                    message_number,
                    template_at,
                    False,
                    content=None,
                    status=status,
                    current=current,
                    member=member,
                )
                row.update(
                    template={**WELCOME_TEMPLATE, "text": f"Hola {first_name}, gracias por escribirnos."},
                    data={
                        "components": [
                            {
                                "type": "body",
                                "parameters": [
                                    {"type": "text", "parameter_name": "name", "text": first_name}
                                ],
                            }
                        ]
                    },
                    template_name=WELCOME_TEMPLATE["name"],
                    template_language=WELCOME_TEMPLATE["language"],
                )
                thread.append(row)
            # the state the desk sees: recent threads stay open; older ones were often closed or archived
            status_value, archived_at = "active", None
            if (now - last_message).total_seconds() > 86400:
                r = rng.random()
                if r < 0.45:
                    archived_at = min(now, last_message + timedelta(minutes=rng.uniform(30, 48 * 60)))
                elif r < 0.70:
                    status_value = "closed"
            chosen = _labels(rng, label_names)
            extra: dict[str, Any] = {"labels": chosen}
            if team is not None:
                extra["team_name"] = team
            assigned_at = None
            if member is not None:
                assigned_at = times[min(1, len(times) - 1)]
                extra["assignment"] = {
                    "member_id": member,
                    "assigned_by": assigned_by,
                    "assigned_at": isoformat(assigned_at),
                }
                if assigned_at > last_assigned.get(member, assigned_at - timedelta(seconds=1)):
                    last_assigned[member] = assigned_at
            bulk.add(
                conversations,
                {
                    "id": conversation_id,
                    "organization_id": org,
                    "contact_id": ctx.contact_ids[contact],
                    "organization_address": connection.address,
                    "contact_address": their_address,
                    "service": service,
                    "status": status_value,
                    "name": name,
                    "member_id": member,
                    "team_id": people.team_ids[team] if team is not None else None,
                    "archived_at": archived_at,
                    "last_message_at": last_message,
                    "last_incoming_at": last_incoming,
                    "broadcast_id": None,
                    "is_broadcast": False,
                    "ai_paused_at": template_at,  # a template sent without do_not_pause pauses the AI
                    "extra": extra,
                    "created_at": start,
                    "updated_at": archived_at or last_message,
                },
            )
            for row in thread:
                bulk.add(messages, row)
            for label in chosen:
                bulk.add(
                    label_rows,
                    {
                        "conversation_id": conversation_id,
                        "name_key": label.lower(),
                        "name": label,
                        "organization_id": org,
                        "created_at": assigned_at or start,
                    },
                )
        bulk.flush()
    for member, at in last_assigned.items():
        db.session.add(MemberAssignment(organization_id=org, member_id=member, last_assigned_at=at))
    db.session.commit()
    ctx.count(bulk)
    ctx.written[MemberAssignment.__tablename__] = len(last_assigned)


def _catalogue(organization_id: uuid.UUID) -> list[tuple[str, str]]:
    rows = db.session.execute(
        select(Label.name_key, Label.name).where(Label.organization_id == organization_id)
    )
    return sorted((key, name) for key, name in rows)


def _labels(rng: Random, names: list[str]) -> list[str]:
    r = rng.random()
    if r < 0.55:
        return []
    if r < 0.9:
        return [rng.choice(names)]
    return rng.sample(names, 2)


def _message(
    org: uuid.UUID,
    rng: Random,
    conversation_id: uuid.UUID,
    connection: Connection,
    their_address: str,
    number: int,
    at: datetime,
    incoming: bool,
    *,
    content: dict[str, Any] | None,
    status: dict[str, Any],
    current: str,
    member: str | None,
) -> dict[str, Any]:
    prefix = "wamid.SCALE" if connection.service == "whatsapp" else "m_SCALE"
    return {
        "id": new_id(rng),
        "organization_id": org,
        "conversation_id": conversation_id,
        "direction": "incoming" if incoming else "outgoing",
        "service": connection.service,
        "organization_address": connection.address,
        "contact_address": their_address,
        "external_id": f"{prefix}.{number:09d}",
        "timestamp": at,
        "content": content,
        "template": None,
        "data": None,
        "template_name": None,
        "template_language": None,
        "status": status,
        "current_status": current,
        "reply_to": None,
        "member_id": member,
        "idempotency_scope": None,
        "idempotency_key": None,
        "reactions": None,
        "created_at": at,
        "updated_at": at,
    }
