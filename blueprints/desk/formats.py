"""Translations and date formats for pages, resolved once per request.

Flask-Babel resolves the locale, the time zone and the catalogue again on every ``_()`` and every date a
template formats (about 40 µs for one ``_()``, 170 µs for one date, measured in a request context); an
inbox list page makes a hundred such calls for its 25 rows. Here they are resolved once per request and
kept in the WSGI environ (per request even when a test shares one app context between requests), and
date patterns are parsed once per locale. Outside a request (CLI, jobs) everything falls back to
Flask-Babel, whose answers these match exactly (``tests/inbox/test_formats.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any

import flask_babel
from babel import Locale
from babel.dates import DateTimePattern, format_timedelta, get_datetime_format, get_time_format, parse_pattern
from babel.support import NullTranslations, Translations
from flask import has_request_context, request

from core.db import utcnow
from core.timeutil import as_utc

_ENVIRON_KEY = "agentdesk.page_formats"


@dataclass
class PageFormats:
    """This request's locale, time zone and catalogue."""

    locale: Locale
    zone: tzinfo
    translations: Translations | NullTranslations
    _today: date | None = field(default=None, repr=False)

    def local(self, value: datetime) -> datetime:
        return as_utc(value).astimezone(self.zone)

    @property
    def today(self) -> date:
        if self._today is None:
            self._today = self.local(utcnow()).date()
        return self._today


def page_formats() -> PageFormats | None:
    """The current request's formats (None outside a request)."""
    if not has_request_context():
        return None
    formats: PageFormats | None = request.environ.get(_ENVIRON_KEY)
    if formats is None:
        locale = flask_babel.get_locale() or Locale.parse("en_US")
        formats = PageFormats(locale, flask_babel.get_timezone(), flask_babel.get_translations())
        request.environ[_ENVIRON_KEY] = formats
    return formats


def _translations() -> Translations | NullTranslations:
    formats = page_formats()
    return formats.translations if formats is not None else flask_babel.get_translations()


# The callables Jinja's i18n extension calls for `_()`, `gettext()`, `ngettext()` (newstyle: Jinja
# substitutes the variables and escapes).
def gettext(message: str) -> str:
    return _translations().ugettext(message)


def ngettext(singular: str, plural: str, number: int) -> str:
    return _translations().ungettext(singular, plural, number)


def pgettext(context: str, message: str) -> str:
    return _translations().upgettext(context, message)


def npgettext(context: str, singular: str, plural: str, number: int) -> str:
    return _translations().unpgettext(context, singular, plural, number)


@lru_cache(maxsize=256)
def _datetime_pattern(locale_id: str, length: str) -> DateTimePattern:
    """The locale's date-and-time pattern of ``length`` as one parsed pattern: Babel formats the date and
    the time separately and joins them with the locale's glue (``{1}, {0}``); joining the patterns first
    gives the same text with one pass."""
    from babel.dates import get_date_format

    locale = Locale.parse(locale_id)
    glue = get_datetime_format(length, locale=locale).replace("'", "")
    time_pattern = get_time_format(length, locale=locale).pattern
    date_pattern = get_date_format(length, locale=locale).pattern
    return parse_pattern(glue.replace("{0}", time_pattern).replace("{1}", date_pattern))


_LENGTHS = ("short", "medium", "long", "full")


def format_datetime(value: datetime | None, format: str = "medium") -> str:
    """Flask-Babel's ``format_datetime`` (a length or a pattern), in the page's locale and time zone."""
    if value is None:
        return ""
    formats = page_formats()
    if formats is None:
        return flask_babel.format_datetime(value, format)
    local = formats.local(value)
    if format in _LENGTHS:
        return _datetime_pattern(str(formats.locale), format).apply(local, formats.locale)
    return parse_pattern(format).apply(local, formats.locale)


def format_time(value: datetime, format: str = "short") -> str:
    formats = page_formats()
    if formats is None:
        return flask_babel.format_time(value, format)
    pattern = get_time_format(format, locale=formats.locale) if format in _LENGTHS else parse_pattern(format)
    return pattern.apply(formats.local(value), formats.locale)


def format_when(value: datetime) -> str:
    """A message's time: the hour today, the date and hour before; "today" in the organization's zone."""
    formats = page_formats()
    if formats is None:
        return flask_babel.format_datetime(value, "short")
    if formats.local(value).date() == formats.today:
        return format_time(value, "short")
    return format_datetime(value, "short")


def format_ago(value: datetime | None) -> str:
    """How long ago, short ("5 min ago", "hace 5 min"): list rows have little room."""
    if value is None:
        return ""
    formats = page_formats()
    locale: Any = formats.locale if formats is not None else flask_babel.get_locale()
    return format_timedelta(
        as_utc(value) - utcnow(),
        add_direction=True,
        threshold=1.0,
        granularity="minute",
        format="short",
        locale=locale,
    )


def format_left(value: datetime | None) -> str:
    """How long until ``value``, e.g. "3 hours" (an open service window)."""
    if value is None:
        return ""
    formats = page_formats()
    locale: Any = formats.locale if formats is not None else flask_babel.get_locale()
    delta: timedelta = as_utc(value) - utcnow()
    return format_timedelta(delta, threshold=1.0, granularity="minute", locale=locale)
