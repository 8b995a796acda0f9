"""Dates and time zones: IANA zones, local calendar days as UTC ranges, ISO parsing for filters."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_ZONE_NAME = 64


def get_zone(name: str | None) -> ZoneInfo:
    """The IANA zone ``name`` (UTC when empty); ValueError naming the zone when unknown."""
    if not name:
        return ZoneInfo("UTC")
    if len(name) > MAX_ZONE_NAME:  # the longest IANA name has 32 characters; a path this long is no zone
        raise ValueError(f"unknown IANA time zone (names have at most {MAX_ZONE_NAME} characters)")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: names the file system refuses
        raise ValueError(f"unknown IANA time zone {name!r}") from exc


def day_start(day: date, zone: ZoneInfo) -> datetime:
    """The UTC instant at which ``day`` begins in ``zone`` (DST-correct)."""
    return datetime.combine(day, time.min, tzinfo=zone).astimezone(UTC)


def day_end(day: date, zone: ZoneInfo) -> datetime:
    """The UTC instant at which ``day`` ends in ``zone``: the start of the next local day (exclusive)."""
    return day_start(day + timedelta(days=1), zone)


def as_utc(value: datetime) -> datetime:
    """Aware UTC; naive input is taken as UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_iso_datetime(value: str) -> datetime:
    """ISO 8601 date or datetime (``Z`` accepted) as aware UTC; a bare date is its UTC midnight."""
    text = value.strip()
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), time.min, tzinfo=UTC)
        return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 date or datetime: {value!r}") from exc
