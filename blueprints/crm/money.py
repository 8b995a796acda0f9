"""Money in the CRM: ``Decimal`` end to end, rounded half-up to the currency's ISO 4217 minor units.

Floats never touch an amount: request numbers are parsed into ``Decimal`` by pydantic (from their
textual form), columns are ``Numeric``, and amounts leave as decimal strings (``"1500.00"``, CLP
``"1500"``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from babel.numbers import get_currency_precision

# The deal currencies of the spec; base currency and exchange rates use the same list.
CURRENCIES = (
    "MXN",
    "USD",
    "EUR",
    "COP",
    "ARS",
    "BRL",
    "CLP",
    "PEN",
    "UYU",
    "BOB",
    "PYG",
    "CRC",
    "DOP",
    "GTQ",
    "HNL",
    "NIO",
    "PAB",
    "GBP",
    "CAD",
)
DEFAULT_CURRENCY = "MXN"


def minor_units(currency: str) -> int:
    return int(get_currency_precision(currency))


def quantum(currency: str) -> Decimal:
    return Decimal(1).scaleb(-minor_units(currency))


def round_money(value: Decimal, currency: str) -> Decimal:
    """Half-up to the currency's minor units (``2.345 USD`` -> ``2.35``; ``1500.5 CLP`` -> ``1501``)."""
    rounded = value.quantize(quantum(currency), rounding=ROUND_HALF_UP)
    return rounded + 0  # normalises -0 to 0


def money_str(value: Decimal | None, currency: str) -> str:
    return format(round_money(value if value is not None else Decimal(0), currency), "f")


PRICE_PLACES = 4  # unit prices may be finer than the currency (0.0125 USD per message); totals never are


def round_price(value: Decimal) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-PRICE_PLACES), rounding=ROUND_HALF_UP) + 0


def price_str(value: Decimal, currency: str) -> str:
    """A unit price with at least the currency's minor units and at most 4 places (``"10.50"``,
    ``"0.0125"``, CLP ``"1500"``)."""
    places = max(minor_units(currency), -min(value.normalize().as_tuple().exponent, 0))  # type: ignore[operator]
    return format(value.quantize(Decimal(1).scaleb(-min(places, PRICE_PLACES)), rounding=ROUND_HALF_UP), "f")


def number_out(value: Decimal | None) -> int | float | None:
    """A quantity as a JSON number: an integer when it has no fraction."""
    if value is None:
        return None
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def decimal_str(value: Decimal) -> str:
    """An exact decimal without trailing zeros (``"17.25"``, ``"0.00005"``) for rates."""
    text = format(value.normalize(), "f")
    return text


@dataclass(frozen=True)
class Conversion:
    """How one currency reaches the base: the rate and the path taken."""

    currency: str
    rate: Decimal
    method: str  # "identity", "direct", "inverse" or "cross"
    path: tuple[str, ...]


def find_conversion(currency: str, base: str, rates: dict[tuple[str, str], Decimal]) -> Conversion | None:
    """Rate from ``currency`` to ``base``: the stored direct rate first, then the inverse of the opposite
    pair, then the shortest chain through other currencies (each hop direct before inverse). ``None``
    when no chain exists: the caller reports the deal instead of counting it at a made-up rate."""
    if currency == base:
        return Conversion(currency, Decimal(1), "identity", (currency,))
    if (currency, base) in rates:
        return Conversion(currency, rates[(currency, base)], "direct", (currency, base))
    if (base, currency) in rates:
        return Conversion(currency, Decimal(1) / rates[(base, currency)], "inverse", (currency, base))
    # Breadth-first over the rate graph, both directions; neighbours sorted so the path is deterministic.
    edges: dict[str, dict[str, Decimal]] = {}
    for (source, target), rate in sorted(rates.items()):
        if rate <= 0:
            continue
        edges.setdefault(source, {})[target] = rate
    for (source, target), rate in sorted(rates.items()):
        if rate <= 0:
            continue
        edges.setdefault(target, {}).setdefault(source, Decimal(1) / rate)
    seen = {currency: (Decimal(1), (currency,))}
    queue = deque([currency])
    while queue:
        node = queue.popleft()
        node_rate, node_path = seen[node]
        for neighbour, rate in sorted(edges.get(node, {}).items()):
            if neighbour in seen:
                continue
            seen[neighbour] = (node_rate * rate, (*node_path, neighbour))
            if neighbour == base:
                total, path = seen[neighbour]
                return Conversion(currency, total, "cross", path)
            queue.append(neighbour)
    return None
