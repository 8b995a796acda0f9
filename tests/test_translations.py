"""Both catalogues are complete: every translatable string of the templates and page code has a Spanish
and an English entry (a new string without its translation fails here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
METHOD_MAP = [("blueprints/**/**.py", "python"), ("templates/**/**.html", "jinja2")]


def _source_messages() -> set[str]:
    found = set()
    for _, _, message, _, _ in extract_from_dir(str(ROOT), METHOD_MAP):
        found.add(message if isinstance(message, str) else message[0])
    return found


@pytest.mark.parametrize("language", ["es", "en"])
def test_catalogue_is_complete(language: str) -> None:
    with (ROOT / "translations" / language / "LC_MESSAGES" / "messages.po").open("rb") as handle:
        catalogue = read_po(handle, locale=language)
    translated = {
        # a plural entry's id is (singular, plural) and its string one form per plural: all must be there
        message.id[0] if isinstance(message.id, tuple) else message.id
        for message in catalogue
        if message.id and message.string and all(message.string) and not message.fuzzy
    }
    missing = sorted(_source_messages() - translated)
    assert missing == [], f"untranslated in {language}: {missing}"
