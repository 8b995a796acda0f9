"""The desk speaks Spanish and English (Flask-Babel).

The browser's ``Accept-Language`` chooses; the language menu overrides it and the choice is remembered in
the signed-in user's session cookie (which "remember me" keeps for a year). Dates, numbers and money
on pages go through Babel's formatters for that locale and the organization's time zone.
"""

from __future__ import annotations

from flask import Flask, request, session
from flask_babel import Babel
from flask_login import current_user

from core.config import PROJECT_ROOT

LANGUAGES = {"en": "English", "es": "Español"}
DEFAULT_LANGUAGE = "en"
# The locale each language formats with: Mexican Spanish writes "$12,500.50", not Spain's "12.500,50 €";
# its messages come from the "es" catalogue (gettext falls back from es_MX to es).
FORMAT_LOCALES = {"en": "en_US", "es": "es_MX"}

babel = Babel()


def select_locale() -> str:
    chosen = session.get("locale")
    if chosen in LANGUAGES:
        return str(chosen)
    return request.accept_languages.best_match(list(LANGUAGES)) or DEFAULT_LANGUAGE


def select_format_locale() -> str:
    return FORMAT_LOCALES[select_locale()]


def select_timezone() -> str | None:
    """The signed-in person's organization's zone (None outside a page: Babel's default, UTC)."""
    user = current_user._get_current_object() if current_user else None  # type: ignore[attr-defined]
    return getattr(user, "organization_timezone", None)


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(PROJECT_ROOT / "translations"))
    babel.init_app(app, locale_selector=select_format_locale, timezone_selector=select_timezone)

    @app.context_processor
    def _languages() -> dict[str, object]:
        return {"languages": LANGUAGES, "current_language": select_locale()}
