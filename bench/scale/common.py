"""What every part of the large dataset shares: the batched bulk writer, the progress bars, the clock that
spreads moments over a year with office-hour peaks, deterministic ids and Spanish names."""

from __future__ import annotations

import bisect
import json
import math
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from random import Random
from typing import Any
from zoneinfo import ZoneInfo

import click
from sqlalchemy import Table, insert

from core.db import db

BATCH = 5000
# The organization sells in Mexico: its office hours are Mexico City's.
ZONE_NAME = "America/Mexico_City"
ZONE = ZoneInfo(ZONE_NAME)


def new_id(rng: Random) -> uuid.UUID:
    """A version-4 UUID drawn from ``rng``: random-looking, yet the same on every run."""
    return uuid.UUID(int=rng.getrandbits(128), version=4)


# ---- the --scale option ---------------------------------------------------------------------------------


def parse_scale(value: str) -> float:
    """``large`` is 1; otherwise a number in (0, 1]."""
    text = str(value).strip().lower()
    if text == "large":
        return 1.0
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{value!r} is not 'large' nor a number") from None
    if not math.isfinite(number) or not 0 < number <= 1:
        raise ValueError(f"{value!r} is not in (0, 1]")
    return number


class ScaleType(click.ParamType):
    name = "large|N"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_scale(str(value))
        except ValueError as error:
            self.fail(f"{error}: give 'large' or a fraction such as 0.01", param, ctx)


# ---- progress -------------------------------------------------------------------------------------------


class Progress:
    """One progress bar per table (``click.progressbar`` on stderr; a plain line when not a terminal)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    @contextmanager
    def bar(self, label: str, length: int) -> Iterator[Any]:
        if self.quiet:
            yield _NoBar()
            return
        with click.progressbar(
            length=max(length, 1), label=f"{label:<28}", file=sys.stderr, show_pos=True, width=30
        ) as bar:
            yield bar


class _NoBar:
    def update(self, n: int) -> None:
        pass


# ---- bulk inserts ---------------------------------------------------------------------------------------


def _copy_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        # COPY in text format: the server parses JSON text into the json/jsonb column
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


class Bulk:
    """Rows buffered per table and written in batches: ``INSERT`` executemany (SQLite), ``COPY``
    (PostgreSQL, psycopg 3), SQLAlchemy's ``insert()`` elsewhere. No ORM objects.

    ``tables`` is the parent-first order: whenever one buffer is full every buffer is written in that
    order, so a child row never reaches the database before the row it points at. Each write ends with a
    COMMIT: a bulk load is not a unit of work (nothing to roll back to: an interrupted run leaves the
    organization marked as incomplete and the next run starts it over), and committing per batch keeps the
    transaction, SQLite's WAL file and PostgreSQL's memory bounded."""

    def __init__(self, *tables: Table, batch: int | None = None) -> None:
        self.order = list(tables)
        self.rows: dict[Table, list[dict[str, Any]]] = {table: [] for table in tables}
        self.batch = batch or BATCH  # read at call time: tests make batches small
        self.written: dict[str, int] = {table.name: 0 for table in tables}
        self.on_write: dict[Table, Any] = {}

    def add(self, table: Table, row: dict[str, Any]) -> None:
        rows = self.rows[table]
        rows.append(row)
        if len(rows) >= self.batch:
            self.flush()

    def flush(self) -> None:
        connection = db.session.connection()
        copy = connection.dialect.name == "postgresql"
        for table in self.order:
            rows = self.rows[table]
            if not rows:
                continue
            if copy:
                _copy(connection, table, rows)
            elif connection.dialect.name == "sqlite":
                # indexes of a million random UUIDs outgrow SQLite's 2 MB page cache: give it 256 MB
                connection.exec_driver_sql("PRAGMA cache_size=-262144")
                _executemany(connection, table, rows)
            else:
                connection.execute(insert(table), rows)
            self.written[table.name] += len(rows)
            callback = self.on_write.get(table)
            if callback is not None:
                callback(len(rows))
            self.rows[table] = []
        db.session.commit()


def _executemany(connection: Any, table: Table, rows: list[dict[str, Any]]) -> None:
    """One ``INSERT`` executemany through the driver, each value converted by its column type's own bind
    processor (UUID, UTC datetime, JSON as SQLAlchemy stores them), without the per-statement parameter
    machinery that costs more than SQLite's insert itself."""
    columns = list(rows[0])
    dialect = connection.dialect
    processors = [table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns]
    pairs = list(zip(columns, processors, strict=True))
    names = ", ".join(f'"{name}"' for name in columns)
    marks = ", ".join("?" for _ in columns)
    values = [tuple(p(row[c]) if p else row[c] for c, p in pairs) for row in rows]
    connection.exec_driver_sql(f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', values)


def _copy(connection: Any, table: Table, rows: list[dict[str, Any]]) -> None:
    """``COPY table (columns) FROM STDIN``: several times faster than multi-row INSERTs on PostgreSQL.
    Columns are the keys of the first row (every row of a batch has the same keys)."""
    columns = list(rows[0])
    raw = connection.connection.dbapi_connection
    names = ", ".join(f'"{name}"' for name in columns)
    with raw.cursor() as cursor, cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as copy:
        for row in rows:
            copy.write_row([_copy_value(row[name]) for name in columns])


# ---- time -----------------------------------------------------------------------------------------------

# Relative weight of each local hour: quiet nights, a morning rise, peaks late morning and after lunch.
HOUR_WEIGHTS = (
    0.15, 0.08, 0.05, 0.04, 0.04, 0.08, 0.25, 0.6, 1.2, 2.2, 3.0, 3.3,
    3.2, 2.8, 2.4, 2.7, 3.0, 3.0, 2.6, 2.1, 1.7, 1.3, 0.8, 0.4,
)  # fmt: skip
WEEKDAY_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 0.95, 0.55, 0.3)  # Monday first


def _cumulative(weights: list[float] | tuple[float, ...]) -> list[float]:
    total, out = 0.0, []
    for weight in weights:
        total += weight
        out.append(total)
    return out


class Clock:
    """Moments over the ``days`` before ``now``: weekdays busier than weekends, office hours busier than
    nights (Mexico City time), and a business that grows (the last months busier than the first)."""

    def __init__(self, now: datetime, days: int = 365) -> None:
        self.now = now
        self.start = now - timedelta(days=days)
        today = now.astimezone(ZONE).date()
        self.days = [today - timedelta(days=offset) for offset in range(days)]
        growth = [1.0 - 0.4 * offset / days for offset in range(days)]
        self.day_cum = _cumulative(
            [WEEKDAY_WEIGHTS[d.weekday()] * g for d, g in zip(self.days, growth, strict=True)]
        )
        self.hour_cum = _cumulative(HOUR_WEIGHTS)

    def day(self, rng: Random) -> date:
        return self.days[bisect.bisect(self.day_cum, rng.random() * self.day_cum[-1])]

    def hour(self, rng: Random) -> int:
        return min(bisect.bisect(self.hour_cum, rng.random() * self.hour_cum[-1]), 23)

    def moment(self, rng: Random) -> datetime:
        day = self.day(rng)
        local = datetime.combine(day, time(self.hour(rng), rng.randrange(60), rng.randrange(60)), ZONE)
        moment = local.astimezone(UTC)
        if moment > self.now:  # today's hours still to come: earlier today instead
            moment = self.now - timedelta(seconds=rng.uniform(60, 6 * 3600))
        return moment

    def local(self, day: date, hour: int, minute: int) -> datetime:
        return datetime.combine(day, time(hour, minute), ZONE).astimezone(UTC)


# ---- names ----------------------------------------------------------------------------------------------

FIRST_NAMES = (
    "María", "José", "Juan", "Guadalupe", "Luis", "Ana", "Carlos", "Fernanda", "Jorge", "Sofía", "Miguel",
    "Valeria", "Alejandro", "Camila", "Diego", "Daniela", "Ricardo", "Andrea", "Eduardo", "Gabriela",
    "Fernando", "Paola", "Roberto", "Mariana", "Francisco", "Alejandra", "Javier", "Lucía", "Manuel",
    "Verónica", "Sergio", "Adriana", "Raúl", "Claudia", "Héctor", "Patricia", "Óscar", "Rosa", "Arturo",
    "Leticia", "Emilio", "Ximena", "Iván", "Renata", "Pablo", "Regina", "Mauricio", "Jimena", "Andrés",
    "Natalia",
)  # fmt: skip
LAST_NAMES = (
    "Hernández", "García", "Martínez", "López", "González", "Pérez", "Rodríguez", "Sánchez", "Ramírez",
    "Cruz", "Flores", "Gómez", "Morales", "Vázquez", "Reyes", "Jiménez", "Torres", "Díaz", "Gutiérrez",
    "Ruiz", "Mendoza", "Aguilar", "Ortiz", "Moreno", "Castillo", "Romero", "Álvarez", "Méndez", "Chávez",
    "Rivera", "Juárez", "Ramos", "Domínguez", "Herrera", "Medina", "Castro", "Vargas", "Guzmán",
    "Velázquez", "Rojas", "Contreras", "Salazar", "Luna", "Ortega", "Cortés", "Guerrero", "Estrada",
    "Navarro", "Delgado", "Campos",
)  # fmt: skip


def person_name(rng: Random) -> str:
    first = rng.choice(FIRST_NAMES)
    if rng.random() < 0.5:
        return f"{first} {rng.choice(LAST_NAMES)} {rng.choice(LAST_NAMES)}"
    return f"{first} {rng.choice(LAST_NAMES)}"


def ascii_slug(text: str) -> str:
    """``"José Pérez"`` -> ``"jose.perez"`` (e-mail local parts and domains)."""
    table = str.maketrans("áéíóúüñÁÉÍÓÚÜÑ", "aeiouunAEIOUUN")
    return ".".join(text.translate(table).lower().split())


# ---- what the parts share -------------------------------------------------------------------------------

# Row counts of the full dataset (``--scale large``); a scale multiplies them (at least one of each).
FULL = {
    "contacts": 50_000,
    "conversations": 100_000,
    "messages": 1_000_000,
    "crm_accounts": 2_000,
    "crm_contacts": 20_000,
    "deals": 10_000,
    "tickets": 50_000,
    "tasks": 30_000,
}


@dataclass(frozen=True)
class Counts:
    contacts: int
    conversations: int
    messages: int
    crm_accounts: int
    crm_contacts: int
    deals: int
    tickets: int
    tasks: int

    @classmethod
    def at(cls, scale: float) -> Counts:
        counts = {name: max(1, round(full * scale)) for name, full in FULL.items()}
        # every conversation has a message; every CRM contact is a messaging contact with a WhatsApp number
        counts["messages"] = max(counts["messages"], counts["conversations"])
        counts["crm_contacts"] = min(counts["crm_contacts"], counts["contacts"])
        return cls(**counts)


@dataclass
class Context:
    """The organization being generated and what one part hands to the next (ids by index)."""

    organization_id: uuid.UUID
    counts: Counts
    clock: Clock
    progress: Progress
    rng: Random
    people: Any = None  # members.People
    contact_ids: list[uuid.UUID] = field(default_factory=list)
    contact_names: list[str] = field(default_factory=list)
    contact_created: list[datetime] = field(default_factory=list)
    crm_contact_ids: list[uuid.UUID] = field(default_factory=list)  # CRM contact i is messaging contact i
    conversation_ids: list[uuid.UUID] = field(default_factory=list)
    # contact index -> (conversation id, service) of its first conversation (CRM links point at it)
    first_conversation: dict[int, tuple[uuid.UUID, str]] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)

    def count(self, bulk: Bulk) -> None:
        for name, rows in bulk.written.items():
            self.written[name] = self.written.get(name, 0) + rows
