"""The agent studio's Knowledge tab without a browser: the documents an agent answers from (its own and the
shared ones, never another agent's), adding pasted text or a .txt/.md file (size, type and UTF-8
refusals by the field, nothing written), editing, deleting, each audited as through the API;
"What would it find?" runs the runtime's own search; supervisors only, another organization's agent or
document is the desk's 404; both languages."""

from __future__ import annotations

import io
import re
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from blueprints.ai import knowledge
from blueprints.ai.models import KnowledgeDocument
from blueprints.ai.pages.knowledge import MAX_FILE_BYTES
from core.db import db
from core.environments import LIVE, in_environment
from tests.ai.conftest import mem, msg
from tests.conftest import Org
from tests.support.desk_users import create_desk_user, sign_in

HX = {"HX-Request": "true"}
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


class Desk:
    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        found = CSRF.search(client.get("/desk").get_data(as_text=True))
        assert found is not None
        self.csrf = found.group(1)

    def get(self, path: str, language: str | None = None, **params: Any) -> Any:
        headers = dict(HX)
        if language:
            headers["Accept-Language"] = language
        return self.client.get(path, query_string=params or None, headers=headers)

    def post(self, path: str, data: dict[str, Any] | None = None, **headers: str) -> Any:
        return self.client.post(path, data=data or {}, headers={**HX, "X-CSRFToken": self.csrf, **headers})


def desk_of(
    app: Flask, runner: FlaskCliRunner, org: Org, role: str = "supervisor", name: str = "Sara"
) -> Desk:
    email = f"{name.lower()}.{role}.{org.id[:6]}@example.test"
    create_desk_user(runner, org.id, email, name=f"{name} Supervisor", role=role)
    client = app.test_client()
    sign_in(client, email)
    return Desk(client)


def new_agent(client: FlaskClient, org: Org, name: str = "Bot", config: dict[str, Any] | None = None) -> str:
    created = client.post(
        msg(org, "/members"),
        json={"name": name, "ai": True, "organization_id": org.id},
        headers=org.headers(),
    )
    assert created.status_code == 201, created.get_json()
    agent_id = str(created.get_json()["id"])
    body = config or {"sections": {"identity": "You are Bot.", "knowledge": "Horario: abrimos de 9 a 18 h."}}
    saved = client.post(mem(org, f"/members/{agent_id}/agent-config"), json=body, headers=org.headers())
    assert saved.status_code == 201, saved.get_json()
    return agent_id


def document(client: FlaskClient, org: Org, title: str, body: str, agent_id: str | None = None) -> str:
    fields: dict[str, Any] = {"title": title, "body": body}
    if agent_id:
        fields["agent_id"] = agent_id
    response = client.post(mem(org, "/knowledge"), json=fields, headers=org.headers())
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["id"])


def api_documents(client: FlaskClient, org: Org) -> dict[str, dict[str, Any]]:
    body = client.get(mem(org, "/knowledge?limit=100"), headers=org.headers()).get_json()
    return {d["title"]: d for d in body["data"]}


def audit_actions(client: FlaskClient, org: Org) -> list[str]:
    """The knowledge actions a desk user made, from the audit log."""
    body = client.get(mem(org, "/audit-log?take=100"), headers=org.headers()).get_json()
    return [
        e["action"]
        for e in body["data"]
        if e["action"].startswith("knowledge_document.") and e["actor"].startswith("user:")
    ]


def text(response: Any) -> str:
    return str(response.get_data(as_text=True))


@pytest.fixture
def sup(app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return desk_of(app, runner, org)


def test_the_tab_lists_the_agents_own_and_the_shared_documents_never_another_agents(
    client: FlaskClient, org: Org, sup: Desk
) -> None:
    bot = new_agent(client, org, "Bot")
    other = new_agent(client, org, "Otro")
    document(client, org, "Horario", "Abrimos de 9 a 18 h, de lunes a sábado.")
    document(client, org, "Envíos de Bot", "Enviamos a todo México en 48 horas.", agent_id=bot)
    document(client, org, "Secreto de Otro", "Solo para el otro agente.", agent_id=other)
    response = sup.get(f"/agents/{bot}/knowledge")
    assert response.status_code == 200
    html = text(response)
    assert "Horario" in html and "Envíos de Bot" in html and "Secreto de Otro" not in html
    assert 'data-total="2"' in html
    assert html.count('data-scope="shared"') == 1 and html.count('data-scope="agent"') == 1
    assert "Documents: 2" in html
    # the list alone, narrowed by the search (the same search as the API's list)
    narrowed = sup.get(f"/agents/{bot}/knowledge", q="envios", **{})
    assert narrowed.status_code == 200
    listed = sup.client.get(
        f"/agents/{bot}/knowledge?q=envios", headers={**HX, "HX-Target": "knowledge-list"}
    )
    html = text(listed)
    assert html.lstrip().startswith('<div id="knowledge-list"') and "Envíos de Bot" in html
    assert "Horario" not in html and 'data-total="1"' in html


def test_adding_pasted_text_is_audited_and_listed_and_the_api_sees_it(
    client: FlaskClient, org: Org, sup: Desk, commits: Any
) -> None:
    bot = new_agent(client, org)
    with commits() as counted:
        response = sup.post(
            f"/agents/{bot}/knowledge",
            {"title": "  Devoluciones ", "body": "Aceptamos devoluciones en 30 días.", "scope": "agent"},
        )
    assert response.status_code == 200, text(response)
    assert counted.count == 1
    html = text(response)
    assert 'id="knowledge-add"' in html and 'hx-swap-oob="true"' in html and "Devoluciones" in html
    assert "Added “Devoluciones”." in html
    saved = api_documents(client, org)["Devoluciones"]  # trimmed as the API trims
    assert saved["agent_id"] == bot and saved["body"] == "Aceptamos devoluciones en 30 días."
    shared = sup.post(
        f"/agents/{bot}/knowledge", {"title": "Pagos", "body": "Tarjeta y OXXO.", "scope": "shared"}
    )
    assert shared.status_code == 200
    assert api_documents(client, org)["Pagos"]["agent_id"] is None
    assert audit_actions(client, org).count("knowledge_document.created") == 2


def test_an_uploaded_markdown_file_becomes_a_document_found_by_the_studio_and_the_runtime(
    app: Flask, client: FlaskClient, org: Org, sup: Desk
) -> None:
    bot = new_agent(client, org)
    body = "# Envíos\n\nEnviamos a Puebla y a todo México en 48 horas.\n\nEl envío es gratis desde 999 MXN."
    response = sup.post(
        f"/agents/{bot}/knowledge",
        {"title": "", "body": "", "scope": "agent", "file": (io.BytesIO(body.encode()), "envios-mexico.md")},
    )
    assert response.status_code == 200, text(response)
    saved = api_documents(client, org)["envios-mexico"]
    assert saved["source"] == "envios-mexico.md" and saved["body"] == body and saved["agent_id"] == bot
    found = sup.get(f"/agents/{bot}/knowledge/search", q="¿Hacen envíos a Puebla?")
    html = text(found)
    assert found.status_code == 200
    assert f'data-hit-document="{saved["id"]}"' in html and "Enviamos a Puebla" in html
    assert '<code class="knowledge-word">envio</code>' in html and "Relevant" in html
    with in_environment(app, LIVE):
        hits = knowledge.search(uuid.UUID(org.id), "¿Hacen envíos a Puebla?", agent_id=bot)
    assert hits[0].document_id == saved["id"]


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("manual.pdf", b"%PDF-1.7", "Choose a .txt or .md file"),
        ("latin1.txt", "Información de envíos".encode("latin-1"), "is not UTF-8 text"),
        ("big.txt", b"a" * (MAX_FILE_BYTES + 1), "larger than 400 kB"),
        ("empty.md", b"  \n", "The file is empty."),
        ("binary.txt", b"abc\x00def", "binary data"),
    ],
)
def test_a_refused_file_is_explained_by_its_field_and_nothing_is_written(
    client: FlaskClient, org: Org, sup: Desk, name: str, content: bytes, words: str
) -> None:
    bot = new_agent(client, org)
    response = sup.post(
        f"/agents/{bot}/knowledge",
        {"title": "Kept title", "body": "", "scope": "shared", "file": (io.BytesIO(content), name)},
    )
    assert response.status_code == 422
    html = text(response)
    assert 'data-error-for="file"' in html and words in html
    assert 'aria-invalid="true" aria-describedby="knowledge-file-error' in html
    assert 'value="Kept title"' in html and 'value="shared" checked' in html
    assert api_documents(client, org) == {}


def test_refused_text_fields_are_explained_by_their_field(client: FlaskClient, org: Org, sup: Desk) -> None:
    bot = new_agent(client, org)
    response = sup.post(f"/agents/{bot}/knowledge", {"title": "x" * 301, "body": ""})
    assert response.status_code == 422
    html = text(response)
    assert 'data-error-for="title"' in html and "At most 300 characters (this has 301)." in html
    assert 'data-error-for="body"' in html and "Required." in html
    assert api_documents(client, org) == {}


def test_editing_and_deleting_a_document_through_the_services(
    client: FlaskClient, org: Org, sup: Desk
) -> None:
    bot = new_agent(client, org)
    doc = document(client, org, "Horario", "De 9 a 18 h.")
    form = sup.get(f"/agents/{bot}/knowledge/{doc}/edit")
    assert form.status_code == 200 and "data-editing" in text(form) and 'value="shared" checked' in text(form)
    refused = sup.post(
        f"/agents/{bot}/knowledge/{doc}", {"title": "", "body": "De 9 a 20 h.", "scope": "shared"}
    )
    assert refused.status_code == 422 and 'data-error-for="title"' in text(refused)
    assert api_documents(client, org)["Horario"]["body"] == "De 9 a 18 h."
    saved = sup.post(
        f"/agents/{bot}/knowledge/{doc}", {"title": "Horario", "body": "De 9 a 20 h.", "scope": "agent"}
    )
    assert saved.status_code == 200 and "Saved" in text(saved)
    stored = api_documents(client, org)["Horario"]
    assert stored["body"] == "De 9 a 20 h." and stored["agent_id"] == bot
    row = sup.get(f"/agents/{bot}/knowledge/{doc}")
    assert row.status_code == 200 and 'data-scope="agent"' in text(row)
    deleted = sup.post(f"/agents/{bot}/knowledge/{doc}/delete", {"q": ""})
    assert (
        deleted.status_code == 200
        and "Deleted “Horario”." in text(deleted)
        and 'data-total="0"' in text(deleted)
    )
    assert api_documents(client, org) == {}
    actions = audit_actions(client, org)
    assert "knowledge_document.updated" in actions and "knowledge_document.deleted" in actions


def test_what_would_it_find_runs_the_runtimes_search_with_the_prompts_knowledge_section(
    client: FlaskClient, org: Org, sup: Desk
) -> None:
    bot = new_agent(client, org)
    for n in range(5):
        document(client, org, f"Envíos {n}", f"Los envíos a la zona {n} tardan {n + 1} días.")
    response = sup.get(f"/agents/{bot}/knowledge/search", q="¿Cuál es su horario?")
    html = text(response)
    assert "Knowledge section" in html and "Horario: abrimos de 9 a 18 h." in html
    many = text(sup.get(f"/agents/{bot}/knowledge/search", q="envios zona"))
    assert many.count("knowledge-hit ") == 5 and many.count("knowledge-hit-beyond") == 2
    assert 'data-score="2"' in many
    nothing = text(sup.get(f"/agents/{bot}/knowledge/search", q="hola gracias"))
    assert "data-no-words" in nothing
    missing = text(sup.get(f"/agents/{bot}/knowledge/search", q="criptomonedas"))
    assert "data-no-hits" in missing


def test_supervisors_only_and_another_organizations_records_are_not_found(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org, other_org: Org, sup: Desk
) -> None:
    bot = new_agent(client, org)
    doc = document(client, org, "Horario", "De 9 a 18 h.")
    foreign_agent = new_agent(client, other_org, "Ajeno")
    foreign_doc = document(client, other_org, "Ajeno", "Texto ajeno.")
    other_agents_doc = document(client, org, "De Otro", "Texto.", agent_id=new_agent(client, org, "Otro"))
    agent = desk_of(app, runner, org, role="agent", name="Ana")
    urls = [
        ("get", f"/agents/{bot}/knowledge"),
        ("get", f"/agents/{bot}/knowledge/search?q=horario"),
        ("get", f"/agents/{bot}/knowledge/{doc}"),
        ("get", f"/agents/{bot}/knowledge/{doc}/edit"),
        ("post", f"/agents/{bot}/knowledge"),
        ("post", f"/agents/{bot}/knowledge/{doc}"),
        ("post", f"/agents/{bot}/knowledge/{doc}/delete"),
    ]
    for method, url in urls:
        answer = agent.get(url) if method == "get" else agent.post(url, {"title": "x", "body": "y"})
        assert answer.status_code == 403, url
    for url in (f"/agents/{foreign_agent}/knowledge", "/agents/not-an-id/knowledge"):
        assert sup.get(url).status_code == 404
    for other in (foreign_doc, other_agents_doc, "not-an-id"):
        assert sup.get(f"/agents/{bot}/knowledge/{other}/edit").status_code == 404
        assert sup.post(f"/agents/{bot}/knowledge/{other}/delete").status_code == 404
    assert sup.post(f"/agents/{foreign_agent}/knowledge", {"title": "x", "body": "y"}).status_code == 404
    with in_environment(app, LIVE):
        assert db.session.scalar(select(func.count()).select_from(KnowledgeDocument)) == 3
    # without the CSRF token nothing changes
    bare = sup.client.post(f"/agents/{bot}/knowledge/{doc}/delete", headers=HX)
    assert bare.status_code in (400, 403)
    assert "Horario" in api_documents(client, org)


def test_the_tab_speaks_spanish(client: FlaskClient, org: Org, sup: Desk) -> None:
    bot = new_agent(client, org)
    document(client, org, "Horario", "De 9 a 18 h.")
    html = text(sup.get(f"/agents/{bot}/knowledge", language="es"))
    assert (
        "Conocimiento" in html and "¿Qué encontraría?" in html and "Compartido por todos los agentes" in html
    )
    assert "Add a document" not in html
    hits = text(sup.get(f"/agents/{bot}/knowledge/search", language="es", q="horario"))
    assert "Buscó:" in hits
