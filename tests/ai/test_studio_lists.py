"""The studio's lists past their first page: the agents (100 a page), the knowledge documents (100) and the
versions (50) end with "Show more", which fetches the next rows after the last one shown (a keyset cursor:
rows added meanwhile never shift a page) and ends with its own "Show more" while more are left. The pages
are made small here (monkeypatched) so a handful of rows span several."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.ai.pages import agents as agents_page
from blueprints.ai.pages import knowledge as knowledge_page
from blueprints.ai.pages import studio as studio_page
from tests.ai.conftest import mem
from tests.ai.test_studio_knowledge_pages import Desk, desk_of, document, new_agent
from tests.conftest import Org

MORE = re.compile(r'hx-get="([^"]+)"\s+hx-target="#(agents|versions|knowledge)-more"')


def more_url(html: str) -> str | None:
    found = MORE.search(html)
    return found.group(1).replace("&amp;", "&") if found else None


@pytest.fixture
def boss(app: Flask, runner: FlaskCliRunner, org: Org) -> Desk:
    return desk_of(app, runner, org, name="Laura")


def test_the_agent_list_shows_more(
    client: FlaskClient, org: Org, other_org: Org, boss: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents_page, "LIST_LIMIT", 2)
    names = ["Ana", "beto", "Carla", "Dora", "Eva"]  # the list's order ignores case
    ids = {name: new_agent(client, org, name=name) for name in reversed(names)}
    stranger = new_agent(client, other_org, name="Ajena")

    first = boss.client.get("/agents").get_data(as_text=True)
    assert re.findall(r'<tr data-agent-id="([^"]+)"', first) == [ids["Ana"], ids["beto"]]
    url = more_url(first)
    assert url is not None and f"after={ids['beto']}" in url
    shown = [ids["Ana"], ids["beto"]]
    while url is not None:
        rows = boss.get(url)
        assert rows.status_code == 200
        html = rows.get_data(as_text=True)
        assert "<table" not in html  # rows only: they replace the "Show more" row
        shown += re.findall(r'<tr data-agent-id="([^"]+)"', html)
        url = more_url(html)
    assert shown == [ids[name] for name in names]

    # the filters go along: status is filtered by the query, so every page is full while more are left
    narrowed = boss.client.get("/agents?q=a").get_data(as_text=True)  # Ana, Carla, Dora, Eva
    url = more_url(narrowed)
    assert url is not None and "q=a" in url
    assert len(re.findall(r"<tr data-agent-id", boss.get(url).get_data(as_text=True))) == 2
    assert "No agent matches" in boss.client.get("/agents?status=busy").get_data(as_text=True)
    available = boss.client.get("/agents?status=available").get_data(as_text=True)  # AI agents start online
    assert len(re.findall(r"<tr data-agent-id", available)) == 2 and "status=available" in (
        more_url(available) or ""
    )
    # another organization's agent as the cursor: the list starts over, and never shows it
    again = boss.get(f"/agents?after={stranger}").get_data(as_text=True)
    assert re.findall(r'<tr data-agent-id="([^"]+)"', again) == [ids["Ana"], ids["beto"]]
    # opened by its address (no htmx), the page starts at the top
    assert re.findall(
        r'<tr data-agent-id="([^"]+)"', boss.client.get(f"/agents?after={ids['Ana']}").get_data(as_text=True)
    ) == [ids["Ana"], ids["beto"]]


def test_the_versions_show_more_and_any_two_compare(
    client: FlaskClient, org: Org, boss: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(studio_page, "VERSIONS_SHOWN", 2)
    agent_id = new_agent(client, org, config={"sections": {"identity": "v1"}})
    for n in range(2, 6):
        client.patch(
            mem(org, f"/members/{agent_id}/agent-config"),
            json={"sections": {"identity": f"v{n}"}},
            headers=org.headers(),
        )
    pane = boss.get(f"/agents/{agent_id}/versions").get_data(as_text=True)
    assert re.findall(r'<tr data-version="(\d+)"', pane) == ["5", "4"]
    # every version can be compared, shown in the table or not
    assert re.findall(r'<option value="(\d+)"', pane) == ["5", "4", "3", "2", "1"] * 2
    shown = ["5", "4"]
    url = more_url(pane)
    assert url is not None and url.endswith("before=4")
    while url is not None:
        html = boss.get(url).get_data(as_text=True)
        assert "Compare versions" not in html
        shown += re.findall(r'<tr data-version="(\d+)"', html)
        url = more_url(html)
    assert shown == ["5", "4", "3", "2", "1"]
    # a restore button on an older page names the version stored now
    older = boss.get(f"/agents/{agent_id}/versions?before=2").get_data(as_text=True)
    assert 'name="expected_version" value="5"' in older
    compared = boss.get(f"/agents/{agent_id}/versions?a=1&b=5").get_data(as_text=True)
    assert re.search(r"diff-removed.*?v1.*?diff-added.*?v5|v1.*?v5", compared, re.S)
    assert boss.get(f"/agents/{agent_id}/versions?before=x").status_code == 400


def test_the_knowledge_list_shows_more(
    client: FlaskClient, org: Org, other_org: Org, boss: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(knowledge_page, "LIST_LIMIT", 2)
    agent_id = new_agent(client, org)
    other = new_agent(client, org, name="Otro")
    titles = ["Devoluciones", "Envíos", "Horario", "Pagos", "Precios"]
    ids = {title: document(client, org, title, f"Texto de {title}.", agent_id) for title in reversed(titles)}
    document(client, org, "Ajeno", "De otro agente.", other)  # another agent's own: never in this tab
    foreign = document(client, other_org, "Aaa", "De otra organización.")

    tab = boss.get(f"/agents/{agent_id}/knowledge").get_data(as_text=True)
    assert re.findall(r'data-document-id="([^"]+)"', tab) == [ids["Devoluciones"], ids["Envíos"]]
    assert "Documents: 5" in tab
    shown = [ids["Devoluciones"], ids["Envíos"]]
    url = more_url(tab)
    assert url is not None
    while url is not None:
        html = boss.get(url).get_data(as_text=True)
        assert "knowledge-add" not in html  # rows only
        shown += re.findall(r'data-document-id="([^"]+)"', html)
        url = more_url(html)
    assert shown == [ids[title] for title in titles]
    # a search is a page of its own, with the words carried by "Show more"
    found = boss.get(f"/agents/{agent_id}/knowledge", q="texto").get_data(as_text=True)
    assert "q=texto" in (more_url(found) or "")
    # another organization's document as the cursor: the list starts over
    again = boss.get(f"/agents/{agent_id}/knowledge?after={foreign}").get_data(as_text=True)
    assert re.findall(r'data-document-id="([^"]+)"', again) == [ids["Devoluciones"], ids["Envíos"]]
    assert boss.get(f"/agents/{agent_id}/knowledge?after=nope").status_code == 400
