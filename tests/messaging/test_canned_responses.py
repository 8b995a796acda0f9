"""``{msg}/canned-responses``: an organization's saved replies (CRUD, search, uniqueness, tenancy)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from blueprints.messaging.canned import fill_variables
from tests.conftest import Org
from tests.fakes.fixtures import msg

NOT_FOUND = {"statusCode": 404, "message": "Canned response not found"}


def create(client: FlaskClient, org: Org, **body: Any) -> Any:
    return client.post(msg(org, "/canned-responses"), json=body, headers=org.headers())


def test_create_read_update_delete(client: FlaskClient, org: Org, commits: Callable[[], Any]) -> None:
    with commits() as counted:
        response = create(client, org, short_code="hours", content="We open 9-18 h.", title="Hours")
    assert response.status_code == 201 and counted.count == 1
    created = response.get_json()
    assert {k: created[k] for k in ("short_code", "content", "title", "organization_id")} == {
        "short_code": "hours",
        "content": "We open 9-18 h.",
        "title": "Hours",
        "organization_id": org.id,
    }
    path = msg(org, f"/canned-responses/{created['id']}")
    with commits() as counted:
        assert client.get(path, headers=org.headers()).get_json() == created
    assert counted.count == 0

    with commits() as counted:
        changed = client.patch(path, json={"content": "We open 8-20 h."}, headers=org.headers())
    assert changed.status_code == 200 and counted.count == 1
    assert changed.get_json()["content"] == "We open 8-20 h." and changed.get_json()["title"] == "Hours"
    cleared = client.patch(path, json={"title": None, "short_code": "horario"}, headers=org.headers())
    assert cleared.get_json()["title"] is None and cleared.get_json()["short_code"] == "horario"

    with commits() as counted:
        assert client.delete(path, headers=org.headers()).status_code == 204
    assert counted.count == 1
    assert client.get(path, headers=org.headers()).get_json() == NOT_FOUND
    assert client.delete(path, headers=org.headers()).status_code == 404


def test_invalid_bodies_are_400_naming_the_field(client: FlaskClient, org: Org) -> None:
    cases = [
        ({"short_code": "Hola", "content": "x"}, "short_code:"),  # uppercase
        ({"short_code": "with space", "content": "x"}, "short_code:"),
        ({"short_code": "a" * 33, "content": "x"}, "short_code:"),
        ({"short_code": "", "content": "x"}, "short_code:"),
        ({"content": "x"}, "short_code:"),
        ({"short_code": "ok"}, "content:"),
        ({"short_code": "ok", "content": "   "}, "content:"),
        ({"short_code": "ok", "content": "x" * 4097}, "content:"),
        ({"short_code": "ok", "content": "x", "title": "t" * 201}, "title:"),
    ]
    for body, field in cases:
        response = create(client, org, **body)
        payload = response.get_json()
        assert response.status_code == 400, body
        assert payload["statusCode"] == 400 and payload["message"].startswith(field), (body, payload)
    assert create(client, org, short_code="a-b_9", content="x" * 4096).status_code == 201
    created = client.get(msg(org, "/canned-responses"), headers=org.headers()).get_json()["data"][0]
    path = msg(org, f"/canned-responses/{created['id']}")
    refused = client.patch(path, json={"content": None}, headers=org.headers())
    assert refused.status_code == 400 and refused.get_json()["message"].startswith("content:")
    refused = client.patch(path, json={"short_code": "NO"}, headers=org.headers())
    assert refused.status_code == 400 and refused.get_json()["message"].startswith("short_code:")


def test_a_short_code_is_unique_per_organization(client: FlaskClient, org: Org, other_org: Org) -> None:
    assert create(client, org, short_code="thanks", content="Thank you!").status_code == 201
    again = create(client, org, short_code="thanks", content="Another")
    assert again.status_code == 409
    assert again.get_json() == {
        "statusCode": 409,
        "message": "short_code: a canned response /thanks already exists",
    }
    # another organization has its own catalogue
    assert create(client, other_org, short_code="thanks", content="Gracias").status_code == 201
    # renaming onto a taken code is refused too, and nothing of the PATCH is kept
    other = create(client, org, short_code="bye", content="Bye!").get_json()
    path = msg(org, f"/canned-responses/{other['id']}")
    taken = client.patch(path, json={"short_code": "thanks", "content": "changed"}, headers=org.headers())
    assert taken.status_code == 409
    assert client.get(path, headers=org.headers()).get_json()["content"] == "Bye!"


def test_concurrent_creates_of_one_short_code_store_one(app: Flask, org: Org) -> None:
    """The unique constraint decides a race the pre-check cannot see: one 201, the rest 409, never 500."""
    statuses: list[int] = []
    barrier = threading.Barrier(4)

    def post() -> None:
        with app.test_client() as own:
            barrier.wait()
            statuses.append(create(own, org, short_code="race", content="same").status_code)

    threads = [threading.Thread(target=post) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201, 409, 409, 409]


def test_another_organizations_canned_response_is_404(client: FlaskClient, org: Org, other_org: Org) -> None:
    theirs = create(client, other_org, short_code="secret", content="Theirs").get_json()
    for method, body in (("GET", None), ("PATCH", {"content": "mine now"}), ("DELETE", None)):
        response = client.open(
            msg(org, f"/canned-responses/{theirs['id']}"), method=method, json=body, headers=org.headers()
        )
        assert (response.status_code, response.get_json()) == (404, NOT_FOUND), method
    malformed = client.get(msg(org, "/canned-responses/not-a-uuid"), headers=org.headers())
    assert malformed.status_code == 404
    # the path's organization must be the caller's
    assert client.get(msg(other_org, "/canned-responses"), headers=org.headers()).status_code == 403
    listed = client.get(msg(org, "/canned-responses"), headers=org.headers()).get_json()
    assert listed == {"data": [], "total": 0, "skip": 0, "take": 20}
    assert (
        client.get(
            msg(other_org, f"/canned-responses/{theirs['id']}"), headers=other_org.headers()
        ).get_json()["content"]
        == "Theirs"
    )


def test_list_searches_code_title_and_content_and_pages(client: FlaskClient, org: Org) -> None:
    for code, title, content in (
        ("shipping", "Shipping times", "Orders arrive in 3-5 days."),
        ("ship-intl", None, "International orders take 10 days."),
        ("refund", "Refunds", "We refund within 48 h of the return."),
        ("hello", "Greeting", "Hi {{contact.first_name}}, how can I help?"),
        ("pct", "100% cotton", "All our shirts are 100% cotton."),
    ):
        assert create(client, org, short_code=code, title=title, content=content).status_code == 201

    def codes(query: str) -> list[str]:
        response = client.get(msg(org, f"/canned-responses{query}"), headers=org.headers())
        assert response.status_code == 200, response.get_json()
        return [item["short_code"] for item in response.get_json()["data"]]

    assert codes("") == ["hello", "pct", "refund", "ship-intl", "shipping"]
    assert codes("?q=SHIP") == ["ship-intl", "shipping"]  # short codes starting with q first
    assert codes("?q=refund") == ["refund"]
    assert codes("?q=orders") == ["ship-intl", "shipping"]  # content
    assert codes("?q=greeting") == ["hello"]  # title
    assert codes("?q=days") == ["ship-intl", "shipping"]
    assert codes("?q=100%25") == ["pct"]  # % taken literally
    assert codes("?q=%25") == ["pct"]
    assert codes("?q=_") == ["hello"]  # {{contact.first_name}}: the one underscore
    assert codes("?q=p_") == []  # as a wildcard it would match "ship-intl" and "shipping"
    page = client.get(msg(org, "/canned-responses?skip=1&take=2"), headers=org.headers()).get_json()
    assert [item["short_code"] for item in page["data"]] == ["pct", "refund"]
    assert (page["total"], page["skip"], page["take"]) == (5, 1, 2)
    for query, field in (
        ("?take=0", "take:"),
        ("?take=201", "take:"),
        ("?skip=-1", "skip:"),
        ("?search=x", "search:"),
    ):
        bad = client.get(msg(org, f"/canned-responses{query}"), headers=org.headers())
        assert bad.status_code == 400 and bad.get_json()["message"].startswith(field), query


def test_fill_puts_the_contact_name_in_and_keeps_unknown_placeholders() -> None:
    text = "Hi {{contact.first_name}}! ({{ contact.name }}) {{agent.name}}"
    assert fill_variables(text, "Lucía Méndez") == "Hi Lucía! (Lucía Méndez) {{agent.name}}"
    assert fill_variables(text, None) == text and fill_variables(text, "  ") == text
