"""What the audit log keeps of a change and how /audit words it: before → after for the fields a service
hands over (never a secret's), actions and fields in words in both languages, and codes nobody worded yet
still readable."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blueprints.audit import services as audit_log
from core.environments import LIVE, in_environment
from tests.audit.test_audit_page import _signed_in
from tests.conftest import Org


def _rows(html: str) -> list[str]:
    return re.findall(r"<tr data-audit-id=.*?</tr>", html, re.S)


def test_secret_fields_never_get_values(app: Flask, org: Org) -> None:
    with app.app_context():
        for name in ("access_token", "password", "key_hash", "client_secret"):
            with pytest.raises(ValueError):
                audit_log.record(
                    "x.y", "x", "1", organization_id=org.id, before_after={name: (None, "s3cr3t")}
                )


def test_long_values_are_cut_and_lists_kept_short(app: Flask, org: Org) -> None:
    with app.app_context():
        entry = audit_log.record(
            "x.y",
            "x",
            "1",
            organization_id=org.id,
            before_after={"content": ("a" * 500, None), "labels": (None, [str(n) for n in range(50)])},
        )
    changes = entry.summary["changes"]
    assert len(changes["content"]["before"]) == audit_log.MAX_VALUE_CHARS
    assert changes["content"]["before"].endswith("…")
    assert len(changes["labels"]["after"]) == audit_log.MAX_LIST_ITEMS
    assert entry.summary["fields"] == ["content", "labels"]


@pytest.mark.parametrize(("language", "words"), [("en", "Label changed"), ("es", "Etiqueta modificada")])
def test_the_page_shows_before_and_after_in_words(
    app: Flask,
    client: FlaskClient,
    org: Org,
    make_desk_user: Callable[..., Any],
    language: str,
    words: str,
) -> None:
    labels = f"/v2/messages/organizations/{org.id}/labels"
    label = client.post(labels, json={"name": "vip"}, headers=org.headers()).get_json()
    client.patch(f"{labels}/{label['id']}", json={"name": "VIP"}, headers=org.headers())
    with in_environment(app, LIVE):  # an action nobody has words for yet
        audit_log.record("widget.frobbed", "widget", uuid.uuid4(), ["frobbed_at"], organization_id=org.id)

    supervisor = _signed_in(app, make_desk_user(org, "supervisor"))
    html = supervisor.get("/audit", headers={"Accept-Language": language}).get_data(as_text=True)
    rows = _rows(html)
    unknown = next(row for row in rows if "widget.frobbed" in row)
    renamed = next(row for row in rows if "label.updated" in row)
    assert "Widget frobbed" in unknown and "frobbed at" in unknown
    assert words in renamed
    assert re.search(r'audit-before">vip</span>.*?audit-after">VIP</span>', renamed, re.S)
    assert ("Nombre:" if language == "es" else "Name:") in renamed
    # the filter offers the actions by their words
    assert f'value="label.updated" >{words}</option>' in html or f'value="label.updated">{words}' in html
