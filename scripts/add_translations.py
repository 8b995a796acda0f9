"""Append translations to both message catalogues: ``python -m scripts.add_translations FILE.json``.

FILE.json is a list of ``[context or null, msgid, Spanish]``; English gets the msgid itself. Entries the
catalogue already has (same context and msgid) are skipped, and new ones are appended at the end, so
several people adding strings at once do not rewrite each other's. Then run
``pybabel compile -d translations -f`` (``make translations``); ``tests/test_translations.py`` says what
is still missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]


def main(path: str) -> None:
    entries = json.loads(Path(path).read_text())
    for language in ("es", "en"):
        catalogue_path = ROOT / "translations" / language / "LC_MESSAGES" / "messages.po"
        with catalogue_path.open("rb") as handle:
            catalogue = read_po(handle, locale=language)
        known = {(message.context, message.id) for message in catalogue if message.id}
        blocks = []
        for context, msgid, spanish in entries:
            if (context, msgid) in known:
                continue
            known.add((context, msgid))
            text = spanish if language == "es" else msgid
            block = "\n"
            if context:
                block += f"msgctxt {json.dumps(context, ensure_ascii=False)}\n"
            block += f"msgid {json.dumps(msgid, ensure_ascii=False)}\n"
            block += f"msgstr {json.dumps(text, ensure_ascii=False)}\n"
            blocks.append(block)
        with catalogue_path.open("a") as handle:
            handle.write("".join(blocks))
        print(f"{language}: {len(blocks)} added")


if __name__ == "__main__":
    main(sys.argv[1])
