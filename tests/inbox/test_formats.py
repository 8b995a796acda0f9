"""The pages' per-request translations and date formats (blueprints/desk/formats.py) say exactly what
Flask-Babel says, in both languages and in the organization's time zone: they are a cache, not a second
set of rules."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import flask_babel
import pytest
from babel.dates import format_timedelta
from flask import Flask, render_template_string

from blueprints.desk import formats
from core.db import utcnow

NOW = utcnow()
MOMENTS = [
    NOW - timedelta(minutes=3),
    NOW - timedelta(hours=5),
    NOW - timedelta(days=1, hours=2),
    datetime(2025, 1, 31, 23, 59, 59, tzinfo=UTC),
    datetime(2026, 7, 4, 6, 5, 0, tzinfo=UTC),
]


@pytest.fixture(params=[("en", "UTC"), ("es", "America/Mexico_City"), ("en", "Asia/Kolkata")])
def page(request: pytest.FixtureRequest, app: Flask, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    language, zone = request.param
    monkeypatch.setattr(flask_babel.get_babel(app), "timezone_selector", lambda: zone)
    with app.test_request_context("/inbox", headers={"Accept-Language": language}):
        yield language


@pytest.mark.parametrize("length", ["short", "medium", "long", "full", "yyyy-MM-dd HH:mm"])
def test_dates_read_as_flask_babel_writes_them(page: str, length: str) -> None:
    for moment in MOMENTS:
        assert formats.format_datetime(moment, length) == flask_babel.format_datetime(moment, length)
    assert formats.format_time(MOMENTS[1], "short") == flask_babel.format_time(MOMENTS[1], "short")


def test_when_shows_the_hour_today_and_the_date_before_in_the_organizations_day(page: str) -> None:
    for moment in MOMENTS:
        today = flask_babel.to_user_timezone(moment).date() == flask_babel.to_user_timezone(NOW).date()
        expected = (
            flask_babel.format_time(moment, "short")
            if today
            else flask_babel.format_datetime(moment, "short")
        )
        assert formats.format_when(moment) == expected


def test_ago_and_left_match_babel(page: str) -> None:
    moment = utcnow() - timedelta(hours=3, minutes=10)
    expected = format_timedelta(
        moment - utcnow(),
        add_direction=True,
        threshold=1.0,
        granularity="minute",
        format="short",
        locale=flask_babel.get_locale(),
    )
    assert formats.format_ago(moment) == expected
    assert formats.format_left(utcnow() + timedelta(hours=23, minutes=40)) == flask_babel.format_timedelta(
        timedelta(hours=23, minutes=40), threshold=1.0, granularity="minute"
    )
    assert formats.format_ago(None) == "" and formats.format_left(None) == ""


def test_templates_translate_through_the_cached_catalogue(page: str) -> None:
    rendered = render_template_string(
        "{{ _('Closed') }}|{{ _('Assigned to %(name)s', name='<b>Ana</b>') }}|{{ 3|string }}"
    )
    closed = flask_babel.gettext("Closed")
    assigned = flask_babel.gettext("Assigned to %(name)s", name="&lt;b&gt;Ana&lt;/b&gt;")
    assert rendered == f"{closed}|{assigned}|3"
    if page == "es":
        assert closed == "Cerrada"


def test_outside_a_request_formats_fall_back_to_flask_babel(app: Flask) -> None:
    with app.app_context():
        moment = MOMENTS[3]
        assert formats.format_datetime(moment, "medium") == flask_babel.format_datetime(moment, "medium")
        assert formats.gettext("Closed") == "Closed"
