"""A broadcast's recipients from a list a person brings: a pasted or uploaded CSV of numbers, or the
contact addresses of a label's conversations.

Each row is read as WhatsApp reads a number (``messaging.threads.contact_address_for``: E.164 through
``core.phones``, the 521/549 quirks folded), so what this list accepts is exactly what
``broadcasts.create_broadcast`` will accept. A row that is not a number, repeats an earlier row's number
(after normalisation: ``+52 1 55…`` and ``+52 55…`` are one person) or comes after the 1,000th
recipient is rejected with its row number, its value and a reason code; the rest keep their order.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from blueprints.inbox.schemas import MAX_BROADCAST_RECIPIENTS
from blueprints.messaging.threads import contact_address_for
from core.errors import ApiError

# Reason codes of a rejected row (the desk words each one in the person's language).
INVALID = "invalid"
DUPLICATE = "duplicate"
OVER_LIMIT = "over_limit"
MAX_UPLOAD_BYTES = 200_000  # 1,000 numbers with names beside them fit many times over
MAX_VALUE_SHOWN = 80
_HAS_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Rejected:
    row: int  # 1-based, as a spreadsheet numbers it
    value: str
    reason: str
    duplicate_of: int | None = None  # the row whose number this one repeats


@dataclass
class RecipientList:
    numbers: list[str] = field(default_factory=list)  # E.164, first appearance order
    rejected: list[Rejected] = field(default_factory=list)
    rows: int = 0  # the rows read (blank ones and a header left out)


def from_values(values: Iterable[tuple[int, str]], limit: int = MAX_BROADCAST_RECIPIENTS) -> RecipientList:
    """``(row number, raw value)`` pairs read into recipients and rejected rows."""
    result = RecipientList()
    seen: dict[str, int] = {}
    for row, raw in values:
        value = raw.strip()
        if not value:
            continue
        result.rows += 1
        shown = value[:MAX_VALUE_SHOWN]
        try:
            number = contact_address_for("whatsapp", value, "to")
        except ApiError:
            result.rejected.append(Rejected(row, shown, INVALID))
            continue
        if number in seen:
            result.rejected.append(Rejected(row, shown, DUPLICATE, duplicate_of=seen[number]))
            continue
        if len(result.numbers) >= limit:
            result.rejected.append(Rejected(row, shown, OVER_LIMIT))
            continue
        seen[number] = row
        result.numbers.append(number)
    return result


def from_csv(text: str, limit: int = MAX_BROADCAST_RECIPIENTS) -> RecipientList:
    """A CSV (or one number a line) read by its first cell per row. A first row without any digit is a
    header (``phone``, ``número``) and is left out; any later row without a number is rejected."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    values: list[tuple[int, str]] = []
    for index, cells in enumerate(reader, start=1):
        first = next((cell for cell in cells if cell.strip()), "")
        if index == 1 and first and not _HAS_DIGIT.search(first):
            continue
        values.append((index, first))
    return from_values(values, limit)


def from_addresses(addresses: list[str], limit: int = MAX_BROADCAST_RECIPIENTS) -> RecipientList:
    """Contact addresses (a label's conversations), numbered in the order given."""
    return from_values(enumerate(addresses, start=1), limit)
