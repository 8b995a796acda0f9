"""The agent studio without a browser: supervisors only (403 for agents on every URL), another
organization's agent is the 404; Save sends only what changed (PATCH) on the version the page was loaded
from, refusals land under the field their path names with the page's words and nothing is saved, a stale
version is the conflict (who saved which version, the edits against it, kept in the form, re-applied on
top); the versions' diff and restore; the list and "New agent"; both languages."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from werkzeug.datastructures import MultiDict

from blueprints.ai.studio_form import config_from_form
from tests.ai.conftest import mem
from tests.ai.test_studio_knowledge_pages import Desk, desk_of, new_agent
from tests.conftest import Org

CONFIG = {
    "sections": {"identity": "Eres Sofía.", "rules": "Sé breve.\nNo prometas fechas."},
    "tools": {"search_knowledge": {"enabled": True}},
    "notifications": {"end_of_call": {"email": ["ventas@example.com"]}},
}


def form_of(html: str) -> MultiDict[str, str]:
    """The studio form's fields as a browser would post them (inputs, checked boxes, textareas)."""
    found = re.search(r'<form id="studio-form".*?</form>', html, re.S)
    assert found is not None
    form = re.sub(r"<template.*?</template>", "", found.group(0), flags=re.S)
    fields: MultiDict[str, str] = MultiDict()
    for tag in re.finditer(r"<textarea\b([^>]*)>(.*?)</textarea>|<input\b([^>]*)>", form, re.S):
        attributes = tag.group(1) if tag.group(1) is not None else tag.group(3)
        name = re.search(r'\bname="([^"]*)"', attributes)
        if name is None:
            continue
        if tag.group(1) is not None:
            value = tag.group(2)
        else:
            if 'type="checkbox"' in attributes and " checked" not in attributes:
                continue
            found_value = re.search(r'\bvalue="([^"]*)"', attributes)
            value = found_value.group(1) if found_value else ""
        fields.add(name.group(1), html_lib.unescape(value))
    return fields


def config(client: FlaskClient, org: Org, agent_id: str) -> tuple[dict[str, Any], str]:
    response = client.get(mem(org, f"/members/{agent_id}/agent-config"), headers=org.headers())
    return response.get_json(), response.headers["ETag"]


def studio(desk: Desk, agent_id: str, language: str | None = None) -> tuple[str, MultiDict[str, str]]:
    response = desk.client.get(f"/agents/{agent_id}", headers={"Accept-Language": language or "en"})
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    return html, form_of(html)


@pytest.fixture
def boss(app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return desk_of(app, runner, org, name="Laura")


def test_config_from_form_reads_every_path() -> None:
    form = MultiDict(
        [
            ("sections.identity", "Eres Sofía.\r\nHola"),
            ("sections.chat.temperature", "0,3"),
            ("sections.chat.context_messages", "20"),
            ("sections.chat.context_days", ""),
            ("sections.chat.split_long_messages", "false"),
            ("sections.chat.split_long_messages", "true"),
            ("tools.create_ticket.enabled", "false"),
            ("tools.search_knowledge.enabled", "false"),
            ("tools.search_knowledge.enabled", "true"),
            ("notifications.end_of_call.email", "a@example.com\nb@example.com, c@example.com"),
            ("notifications.end_of_call.whatsapp", ""),
            ("notifications.end_of_call.webhook", " https://hooks.example.com/x "),
            ("notifications.create_ticket.email", ""),
            ("call_transfers.1.name", "Ventas"),
            ("call_transfers.1.condition", "pide ventas"),
            ("call_transfers.1.target", "+525512345678"),
            ("call_transfers.1.announce_message", ""),
            ("call_transfers.0.name", ""),
            ("call_transfers.0.condition", ""),
            ("call_transfers.0.target", ""),
            ("voice", "alloy"),
            ("business_category", ""),
            ("agent_type", ""),
            ("expected_version", "3"),
        ]
    )
    assert config_from_form(form) == {
        "sections": {
            "identity": "Eres Sofía.\nHola",
            "chat": {"temperature": 0.3, "context_messages": 20, "split_long_messages": True},
        },
        "tools": {"create_ticket": {"enabled": False}, "search_knowledge": {"enabled": True}},
        "notifications": {
            "end_of_call": {
                "email": ["a@example.com", "b@example.com", "c@example.com"],
                "webhook": "https://hooks.example.com/x",
            }
        },
        "call_transfers": [{"name": "Ventas", "condition": "pide ventas", "target": "+525512345678"}],
        "voice": "alloy",
        "business_category": None,
    }
    # what is not a number goes as typed: the rules refuse it
    assert config_from_form(MultiDict([("sections.chat.temperature", "abc")]))["sections"]["chat"] == {
        "temperature": "abc"
    }


def test_agents_get_403_on_every_studio_url_and_no_link(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org
) -> None:
    agent_id = new_agent(client, org, config=CONFIG)
    agent = desk_of(app, runner, org, role="agent", name="Ana")
    for path in (
        f"/agents/{agent_id}",
        f"/agents/{agent_id}/versions",
        "/agents",
    ):
        assert agent.client.get(path).status_code == 403, path
    for path in (
        f"/agents/{agent_id}/config",
        f"/agents/{agent_id}/preview",
        f"/agents/{agent_id}/versions/1/restore",
        "/agents/new",
    ):
        assert agent.post(path, {"name": "X"}).status_code == 403, path
    assert f"/agents/{agent_id}" not in agent.client.get("/desk").get_data(as_text=True)
    assert config(client, org, agent_id)[1] == '"1"'


def test_another_organizations_agent_is_the_404(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org, other_org: Org, boss: Desk
) -> None:
    theirs = new_agent(client, other_org, config=CONFIG)
    page = boss.client.get(f"/agents/{theirs}", headers={"Accept": "text/html"})
    assert page.status_code == 404
    assert "This page is not here" in page.get_data(as_text=True)
    assert boss.post(f"/agents/{theirs}/config", {"sections.identity": "x"}).status_code == 404
    assert boss.get(f"/agents/{theirs}/versions").status_code == 404
    assert boss.post(f"/agents/{theirs}/versions/1/restore", {"expected_version": "1"}).status_code == 404
    assert config(client, other_org, theirs)[1] == '"1"'


def test_save_sends_only_what_changed_and_makes_a_version(client: FlaskClient, org: Org, boss: Desk) -> None:
    agent_id = new_agent(client, org, config=CONFIG)
    html, form = studio(boss, agent_id)
    assert 'name="sections.chat.temperature" value="0.7"' in html
    assert "Range: 0 to 1" in html and "Default: 0.7" in html
    form["sections.chat.temperature"] = "0.3"
    form["sections.tone"] = "Cálido."
    form.setlist("tools.create_ticket.enabled", ["false", "true"])
    saved = boss.post(f"/agents/{agent_id}/config", form)
    assert saved.status_code == 200
    text = saved.get_data(as_text=True)
    assert "Saved as version 2" in text and 'data-clean="true"' in text
    stored, etag = config(client, org, agent_id)
    assert etag == '"2"'
    body = stored.get("configuration", stored)
    assert body["sections"]["chat"]["temperature"] == 0.3
    assert body["sections"]["tone"] == "Cálido."
    assert body["sections"]["rules"] == CONFIG["sections"]["rules"]
    assert body["tools"]["create_ticket"] == {"enabled": True}
    assert body["notifications"]["end_of_call"]["email"] == ["ventas@example.com"]
    # nothing changed: no version
    _html, form = studio(boss, agent_id)
    again = boss.post(f"/agents/{agent_id}/config", form)
    assert "Nothing changed since version 2" in again.get_data(as_text=True)
    assert config(client, org, agent_id)[1] == '"2"'


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("sections.chat.temperature", "1.5", "Out of range: between 0 and 1."),
        ("sections.chat.context_days", "0", "Out of range: between 1 and 30."),
        ("sections.chat.context_messages", "many", "Write a number"),
        ("notifications.end_of_call.email", "ventas@example.com\nno-es-correo", "Address 2 of the list"),
        ("notifications.end_of_call.webhook", "http://10.0.0.1/hook", "https://"),
        ("call_transfers.0.target", "+1", "phone number with its country code"),
    ],
)
def test_a_refusal_lands_under_its_field_and_nothing_is_saved(
    client: FlaskClient, org: Org, boss: Desk, field: str, value: str, words: str
) -> None:
    agent_id = new_agent(client, org, config=CONFIG)
    _html, form = studio(boss, agent_id)
    if field.startswith("call_transfers"):
        form["call_transfers.0.name"] = "Ventas"
        form["call_transfers.0.condition"] = "pide ventas"
    form[field] = value
    refused = boss.post(f"/agents/{agent_id}/config", form)
    assert refused.status_code == 422
    text = refused.get_data(as_text=True)
    error = re.search(rf'data-error-for="{re.escape(field)}">([^<]*)<', text)
    assert error is not None, text[:2000]
    assert words in error.group(1)
    opening = re.search(r'<form id="studio-form"[^>]*>', text)
    assert opening is not None and "data-clean" not in opening.group(0)
    assert config(client, org, agent_id)[1] == '"1"'


def test_a_refusal_in_spanish(client: FlaskClient, org: Org, boss: Desk) -> None:
    agent_id = new_agent(client, org, config=CONFIG)
    _html, form = studio(boss, agent_id, "es")
    form["sections.chat.temperature"] = "1.5"
    refused = boss.client.post(
        f"/agents/{agent_id}/config",
        data=form,
        headers={"HX-Request": "true", "X-CSRFToken": boss.csrf, "Accept-Language": "es"},
    )
    text = refused.get_data(as_text=True)
    assert "Fuera de rango: entre 0 y 1." in text
    assert "Guardar" in text


def test_a_stale_version_is_the_conflict_and_the_edits_are_applied_on_top(
    client: FlaskClient, org: Org, boss: Desk, app: Flask, runner: FlaskCliRunner
) -> None:
    agent_id = new_agent(client, org, config=CONFIG)
    _html, mine = studio(boss, agent_id)
    other = desk_of(app, runner, org, name="Marta")
    _html, theirs = studio(other, agent_id)
    theirs["sections.chat.context_days"] = "3"
    assert other.post(f"/agents/{agent_id}/config", theirs).status_code == 200
    mine["sections.chat.temperature"] = "0.3"
    mine["sections.identity"] = "Eres Sofía, de Ventas."
    conflict = boss.post(f"/agents/{agent_id}/config", mine)
    assert conflict.status_code == 422
    text = conflict.get_data(as_text=True)
    assert "Marta Supervisor saved version 2 while you were editing." in text
    assert "0.7" in text and "0.3" in text  # the edit against version 2
    assert 'name="sections.chat.temperature" value="0.3"' in text  # kept in the form
    assert config(client, org, agent_id)[1] == '"2"'
    again = form_of(text)
    assert again["expected_version"] == "2" and again["base_version"] == "1"
    applied = boss.post(f"/agents/{agent_id}/config", again)
    assert applied.status_code == 200, applied.get_data(as_text=True)[:500]
    body, etag = config(client, org, agent_id)
    body = body.get("configuration", body)
    assert etag == '"3"'
    assert body["sections"]["chat"]["temperature"] == 0.3
    assert body["sections"]["chat"]["context_days"] == 3  # Marta's change kept
    assert body["sections"]["identity"] == "Eres Sofía, de Ventas."


def test_versions_diff_and_restore(client: FlaskClient, org: Org, boss: Desk) -> None:
    agent_id = new_agent(client, org, config=CONFIG)
    _html, form = studio(boss, agent_id)
    form["sections.chat.temperature"] = "0.3"
    form["sections.rules"] = "Sé breve.\nNo prometas fechas de entrega."
    assert boss.post(f"/agents/{agent_id}/config", form).status_code == 200
    pane = boss.get(f"/agents/{agent_id}/versions").get_data(as_text=True)
    assert "Laura Supervisor" in pane
    assert re.search(r'diff-old-value">0.7</span>.*?diff-new-value">0.3<', pane, re.S)
    assert "No prometas fechas de entrega." in pane and "diff-changed" in pane
    # any two versions
    same = boss.get(f"/agents/{agent_id}/versions?a=2&b=2").get_data(as_text=True)
    assert "No differences." in same
    restored = boss.post(f"/agents/{agent_id}/versions/1/restore", {"expected_version": "2"})
    assert restored.status_code == 204
    assert restored.headers["HX-Redirect"].startswith(f"/agents/{agent_id}?tab=versions")
    body, etag = config(client, org, agent_id)
    body = body.get("configuration", body)
    assert etag == '"3"' and body["sections"]["chat"]["temperature"] == 0.7
    stale = boss.post(f"/agents/{agent_id}/versions/1/restore", {"expected_version": "2"})
    assert stale.status_code == 422
    assert "saved version 3 meanwhile" in stale.get_data(as_text=True)
    assert config(client, org, agent_id)[1] == '"3"'


def test_the_list_and_a_new_agent(client: FlaskClient, org: Org, boss: Desk) -> None:
    agent_id = new_agent(client, org, name="Sofía", config={**CONFIG, "business_category": "ventas"})
    new_agent(
        client, org, name="Max", config={"sections": {"identity": "Max"}, "business_category": "soporte"}
    )
    page = boss.client.get("/agents").get_data(as_text=True)
    assert f'href="/agents/{agent_id}"' in page and "Max" in page
    only = boss.get("/agents", HX_Target="agents-list", category="ventas")
    assert only.status_code == 200
    narrowed = boss.client.get("/agents?category=ventas&q=sof").get_data(as_text=True)
    assert "Sofía" in narrowed and ">Max<" not in narrowed
    assert "No agent matches" in boss.client.get("/agents?status=busy").get_data(as_text=True)
    created = boss.post("/agents/new", {"name": "  Nueva   asistente "})
    assert created.status_code == 204
    target = created.headers["HX-Redirect"]
    new_id = target.rsplit("/", 1)[1]
    body, etag = config(client, org, new_id)
    body = body.get("configuration", body)
    assert etag == '"1"'
    assert set(body["sections"]) >= {"identity", "rules", "tone", "closing", "chat"}
    html = boss.client.get(target).get_data(as_text=True)
    assert "Nueva asistente" in html and 'name="sections.identity"' in html
    assert boss.post("/agents/new", {"name": " "}).status_code == 422


def test_every_save_and_restore_from_the_studio_is_in_the_audit_log(
    client: FlaskClient, org: Org, boss: Desk
) -> None:
    agent_id = new_agent(client, org, config=CONFIG)
    _html, form = studio(boss, agent_id)
    form["sections.chat.temperature"] = "0.3"
    assert boss.post(f"/agents/{agent_id}/config", form).status_code == 200
    refused = form.copy()
    refused["sections.chat.temperature"] = "1.5"
    assert boss.post(f"/agents/{agent_id}/config", refused).status_code == 422  # refused: no entry
    assert boss.post(f"/agents/{agent_id}/versions/1/restore", {"expected_version": "2"}).status_code == 204
    body = client.get(mem(org, "/audit-log?take=100"), headers=org.headers()).get_json()
    entries = [
        e for e in body["data"] if e["action"] == "agent_config.updated" and e["actor"].startswith("user:")
    ]
    # newest first: the restore (version 3), then the save (version 2), both by the desk user
    assert [e["summary"]["version"] for e in entries] == [3, 2]
    assert {e["target_id"] for e in entries} == {agent_id}
