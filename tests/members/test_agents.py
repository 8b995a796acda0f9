"""AI agents: the list (search, category, sort, order, page, limit), the summary fields and the detail."""

from __future__ import annotations

import uuid

from flask.testing import FlaskClient

from blueprints.members.services import hooks
from tests.conftest import Org
from tests.members.conftest import NO_ACCESS, error, mem

AGENTS = "/members/ai-agents"


def _configure(client: FlaskClient, org: Org, agent_id: str, **body: object) -> None:
    response = client.post(
        mem(org, f"/members/{agent_id}/agent-config"), json={"sections": {}, **body}, headers=org.headers()
    )
    assert response.status_code in (200, 201), response.get_json()


def _list(client: FlaskClient, org: Org, query: str = "") -> dict:
    response = client.get(mem(org, f"{AGENTS}{query}"), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_list_wrapper_summary_and_only_ai_members(client: FlaskClient, org: Org, make_member) -> None:
    make_member(org, name="Human")
    sofia = make_member(
        org, name="Sofía", ai=True, picture="https://cdn.example.test/s.png", extra={"email": "s@x.test"}
    )
    _configure(client, org, sofia["id"], business_category="sales", agent_type="voice")
    team = client.post(
        mem(org, "/teams"), json={"name": "Sales", "member_ids": [sofia["id"]]}, headers=org.headers()
    )
    calls: list[uuid.UUID] = []

    def channels(*, organization_id: uuid.UUID) -> list[str]:
        calls.append(organization_id)
        return ["whatsapp", "webchat", "whatsapp"]

    hooks.connected_channels.connect(channels)
    body = _list(client, org)
    assert set(body) == {"agents", "total", "page", "limit"}
    assert (body["total"], body["page"], body["limit"]) == (1, 1, 20)
    assert body["agents"] == [
        {
            "id": sofia["id"],
            "name": "Sofía",
            "email": "s@x.test",
            "type": "ai",
            "status": "available",
            "avatar_url": "https://cdn.example.test/s.png",
            "agent_type": "voice",
            "business_category": "sales",
            "teams": [{"team_id": team.get_json()["id"], "team_name": "Sales"}],
            "connections": ["webchat", "whatsapp"],
            "has_config": True,
        }
    ]
    assert calls == [uuid.UUID(org.id)]


def test_search_category_sort_order_and_pages(client: FlaskClient, org: Org, make_member) -> None:
    names = ["Bravo Sales", "alpha support", "Charlie SALES", "delta 100%_off"]
    agents = {n: make_member(org, name=n, ai=True)["id"] for n in names}
    _configure(client, org, agents["Bravo Sales"], business_category="sales")
    _configure(client, org, agents["Charlie SALES"], business_category="Sales")
    _configure(client, org, agents["alpha support"], business_category="support")
    # name (case-insensitive) is the default sort, ascending
    expected = ["alpha support", "Bravo Sales", "Charlie SALES", "delta 100%_off"]
    assert [a["name"] for a in _list(client, org)["agents"]] == expected
    assert [a["name"] for a in _list(client, org, "?sort=name&order=desc")["agents"]] == expected[::-1]
    assert [a["name"] for a in _list(client, org, "?search=SALES")["agents"]] == [
        "Bravo Sales",
        "Charlie SALES",
    ]
    assert [a["name"] for a in _list(client, org, "?search=100%25_")["agents"]] == ["delta 100%_off"]
    assert _list(client, org, "?search=%25")["total"] == 1  # a literal %, not a wildcard
    assert [a["name"] for a in _list(client, org, "?category=sales")["agents"]] == [
        "Bravo Sales",
        "Charlie SALES",
    ]
    assert _list(client, org, "?category=none")["agents"] == []
    created = [a["name"] for a in _list(client, org, "?sort=created_at")["agents"]]
    assert created == names
    assert [a["name"] for a in _list(client, org, "?sort=created_at&order=desc")["agents"]] == names[::-1]
    page2 = _list(client, org, "?sort=created_at&page=2&limit=3")
    assert [a["name"] for a in page2["agents"]] == names[3:] and page2["total"] == 4 and page2["page"] == 2
    assert _list(client, org, "?page=9")["agents"] == [] and _list(client, org, "?page=9")["total"] == 4
    assert _list(client, org, "?limit=100")["limit"] == 100


def test_list_limits_are_400(client: FlaskClient, org: Org) -> None:
    for query, field in (
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        ("?page=0", "page"),
        ("?sort=age", "sort"),
        ("?order=up", "order"),
        ("?limit=ten", "limit"),
    ):
        response = client.get(mem(org, f"{AGENTS}{query}"), headers=org.headers())
        assert response.status_code == 400, query
        assert response.get_json()["statusCode"] == 400
        assert response.get_json()["message"].startswith(f"{field}: "), response.get_json()


def test_list_query_count_is_constant(client: FlaskClient, org: Org, make_member, queries) -> None:
    hooks.connected_channels.connect(lambda **_: ["whatsapp"])
    first = make_member(org, name="A0", ai=True)
    _configure(client, org, first["id"], business_category="sales")
    client.post(mem(org, "/teams"), json={"name": "T", "member_ids": [first["id"]]}, headers=org.headers())
    with queries() as few:
        _list(client, org)
    for i in range(1, 9):
        agent = make_member(org, name=f"A{i}", ai=True)
        _configure(client, org, agent["id"])
        client.post(
            mem(org, "/teams"), json={"name": f"T{i}", "member_ids": [agent["id"]]}, headers=org.headers()
        )
    with queries() as many:
        body = _list(client, org)
    assert len(body["agents"]) == 9 and all(a["teams"] for a in body["agents"])
    assert many.count == few.count


def test_detail(client: FlaskClient, org: Org, other_org: Org, make_member) -> None:
    agent = make_member(org, name="Bot", ai=True, extra={"tier": "gold"})
    bare = client.get(mem(org, f"{AGENTS}/{agent['id']}"), headers=org.headers()).get_json()
    assert bare["has_config"] is False and bare["config"] is None and bare["agent_type"] == "generic"
    assert bare["extra"] == {"tier": "gold"} and bare["created_at"].endswith("Z")
    _configure(client, org, agent["id"], voice="alloy")
    detail = client.get(mem(org, f"{AGENTS}/{agent['id']}"), headers=org.headers()).get_json()
    assert detail["has_config"] is True and detail["config"]["voice"] == "alloy"
    assert detail["config"]["sections"]["chat"]["temperature"] == 0.7
    human = make_member(org, name="Human")
    theirs = make_member(other_org, name="Theirs", ai=True)
    for agent_id in (human["id"], theirs["id"], "ai_missing"):
        response = client.get(mem(org, f"{AGENTS}/{agent_id}"), headers=org.headers())
        assert response.get_json() == error(404, "No AI agent found")
    assert (
        client.get(mem(other_org, f"{AGENTS}/{theirs['id']}"), headers=org.headers()).get_json() == NO_ACCESS
    )
    assert client.get(mem(other_org, AGENTS), headers=org.headers()).get_json() == NO_ACCESS


def test_status_maps_presence(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, name="Bot", ai=True)
    for status, shown in (
        ("busy", "busy"),
        ("away", "away"),
        ("offline", "unavailable"),
        ("online", "available"),
    ):
        client.patch(
            mem(org, f"/members/{agent['id']}/status"), json={"status": status}, headers=org.headers()
        )
        assert _list(client, org)["agents"][0]["status"] == shown
