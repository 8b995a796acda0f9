"""The desk speaks Spanish and English (Flask-Babel).

The browser's ``Accept-Language`` chooses; the language menu overrides it and the choice is remembered in
the signed-in user's session cookie (which "remember me" keeps for a year). Dates, numbers and money
on pages go through Babel's formatters for that locale and the organization's time zone.
"""

from __future__ import annotations

from flask import Flask, has_request_context, request, session
from flask_babel import Babel
from flask_login import current_user

from blueprints.desk import formats
from core.config import PROJECT_ROOT

LANGUAGES = {"en": "English", "es": "Español"}
DEFAULT_LANGUAGE = "en"
# The locale each language formats with: Mexican Spanish writes "$12,500.50", not Spain's "12.500,50 €";
# its messages come from the "es" catalogue (gettext falls back from es_MX to es).
FORMAT_LOCALES = {"en": "en_US", "es": "es_MX"}

babel = Babel()


def select_locale() -> str:
    if not has_request_context():  # a job or a command formatting text: the default language
        return DEFAULT_LANGUAGE
    chosen = session.get("locale")
    if chosen in LANGUAGES:
        return str(chosen)
    return request.accept_languages.best_match(list(LANGUAGES)) or DEFAULT_LANGUAGE


def select_format_locale() -> str:
    return FORMAT_LOCALES[select_locale()]


def select_timezone() -> str | None:
    """The signed-in person's organization's zone (None outside a page: Babel's default, UTC)."""
    if not has_request_context():
        return None
    user = current_user._get_current_object() if current_user else None  # type: ignore[attr-defined]
    return getattr(user, "organization_timezone", None)


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(PROJECT_ROOT / "translations"))
    babel.init_app(app, locale_selector=select_format_locale, timezone_selector=select_timezone)
    # Same answers as Flask-Babel's, resolved once per request (blueprints/desk/formats.py: the inbox's
    # list pages made a hundred lookups of the locale and catalogue each).
    app.jinja_env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=formats.gettext,
        ngettext=formats.ngettext,
        newstyle=True,
        pgettext=formats.pgettext,
        npgettext=formats.npgettext,
    )
    app.jinja_env.filters["datetimeformat"] = formats.format_datetime
    app.jinja_env.filters["timeformat"] = formats.format_time

    @app.context_processor
    def _languages() -> dict[str, object]:
        return {"languages": LANGUAGES, "current_language": select_locale()}
