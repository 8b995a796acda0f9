"""Knowledge documents (``{mem}/knowledge``) and their full-text search (SQLite FTS5, PostgreSQL)."""

from __future__ import annotations

import uuid
from typing import Any

from flask.testing import FlaskClient

from blueprints.ai.knowledge import query_words
from tests.ai.conftest import MakeAgent, mem
from tests.conftest import Org


def _create(client: FlaskClient, org: Org, **fields: Any) -> Any:
    return client.post(mem(org, "/knowledge"), json=fields, headers=org.headers())


def test_documents_crud_in_the_members_error_format(
    client: FlaskClient, org: Org, other_org: Org, make_agent: MakeAgent, commits: Any
) -> None:
    agent = make_agent(route=False)
    with commits() as counted:
        created = _create(
            client, org, title="Envíos", body="Gratis a todo México.", source="https://demo.test/faq"
        )
    assert created.status_code == 201 and counted.count == 1
    document = created.get_json()
    assert (
        document["title"] == "Envíos"
        and document["agent_id"] is None
        and document["source"] == "https://demo.test/faq"
    )
    url = mem(org, f"/knowledge/{document['id']}")
    assert client.get(url, headers=org.headers()).get_json() == document
    changed = client.patch(
        url, json={"body": "Gratis a todo México en 3 días.", "agent_id": agent.id}, headers=org.headers()
    )
    assert changed.status_code == 200
    assert changed.get_json()["agent_id"] == agent.id and changed.get_json()["title"] == "Envíos"
    listed = client.get(mem(org, f"/knowledge?agent_id={agent.id}"), headers=org.headers()).get_json()
    assert listed["total"] == 1 and listed["page"] == 1 and listed["limit"] == 20
    # another organization's document, an unknown id and a malformed one are all "not found"
    assert (
        client.get(mem(other_org, f"/knowledge/{document['id']}"), headers=other_org.headers()).status_code
        == 404
    )
    for missing in (str(uuid.uuid4()), "nope"):
        response = client.get(mem(org, f"/knowledge/{missing}"), headers=org.headers())
        assert response.get_json() == {"statusCode": 404, "message": "No Knowledge document found"}
    bad = _create(client, org, title="", body="x")
    assert bad.status_code == 400 and bad.get_json()["message"].startswith("title")
    not_agent = _create(client, org, title="T", body="x", agent_id="nobody")
    assert not_agent.status_code == 400 and not_agent.get_json()["message"].startswith("agent_id")
    null_title = client.patch(url, json={"title": None}, headers=org.headers())
    assert null_title.status_code == 400
    deleted = client.delete(url, headers=org.headers())
    assert deleted.get_json() == {"id": document["id"], "deleted": True}
    assert client.get(url, headers=org.headers()).status_code == 404


def test_search_ignores_accents_and_case_matches_plurals_and_ranks_passages(
    client: FlaskClient, org: Org, other_org: Org
) -> None:
    _create(client, org, title="Envío de la SIM", body="El ENVÍO es gratis.\n\nTarda de 2 a 4 días hábiles.")
    _create(client, org, title="Devoluciones", body="Puedes devolver un producto en 30 días.")
    _create(client, org, title="Opening hours", body="We open Monday to Friday, 9 to 18.")
    _create(client, other_org, title="Envíos secretos", body="Otro envio de otra organización.")
    search = mem(org, "/knowledge/search")
    hits = client.get(f"{search}?q=envios gratis", headers=org.headers()).get_json()["data"]
    assert [h["title"] for h in hits] == ["Envío de la SIM"]
    assert hits[0]["passage"] == "El ENVÍO es gratis." and hits[0]["score"] == 2
    hits = client.get(f"{search}?q=¿Cuánto TARDA el envío?", headers=org.headers()).get_json()["data"]
    assert hits[0]["passage"] == "Tarda de 2 a 4 días hábiles."
    english = client.get(f"{search}?q=When are you open?", headers=org.headers()).get_json()["data"]
    assert [h["title"] for h in english] == ["Opening hours"]
    # query syntax of either store is only text here
    for odd in ('"envio', "envio*) OR (", "a & b | !c", "NEAR(x y)", "''"):
        response = client.get(f"{search}?q={odd}", headers=org.headers())
        assert response.status_code == 200, odd
    listed = client.get(mem(org, "/knowledge?search=devolver"), headers=org.headers()).get_json()
    assert [d["title"] for d in listed["data"]] == ["Devoluciones"]


def test_query_words_drop_common_words_and_plural_endings() -> None:
    assert query_words("¿Cuáles son los horarios de atención?") == ["horario", "atencion"]
    assert query_words("What are your opening hours?") == ["opening", "hour"]
    assert query_words("hola, gracias") == []
