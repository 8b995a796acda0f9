"""The messaging area's member endpoints: CRUD, ids, PATCH semantics, pagination, errors, tenancy."""

from __future__ import annotations

import uuid

from flask.testing import FlaskClient

from blueprints.members.services import hooks
from tests.conftest import Org
from tests.members.conftest import INVALID_TOKEN, NO_ACCESS, ROUTE_NOT_FOUND, error, msg


def test_create_generates_uuid_ids_and_returns_every_field(client: FlaskClient, org: Org) -> None:
    user_id = str(uuid.uuid4())
    human = client.post(
        msg(org),
        json={
            "name": "Ana",
            "ai": False,
            "organization_id": org.id,
            "user_id": user_id,
            "picture": "https://cdn.example.test/ana.png",
            "extra": {"languages": ["es", "en"]},
        },
        headers=org.headers(),
    )
    assert human.status_code == 201
    body = human.get_json()
    # the "member UUID" the CRM's member fields speak of
    assert str(uuid.UUID(body["id"])) == body["id"]
    assert body["organization_id"] == org.id
    assert body["ai"] is False
    assert body["user_id"] == user_id
    assert body["picture"] == "https://cdn.example.test/ana.png"
    assert body["extra"] == {"languages": ["es", "en"]}
    assert body["created_at"].endswith("Z") and body["updated_at"].endswith("Z")
    bot = client.post(
        msg(org), json={"name": "Bot", "ai": True, "organization_id": org.id}, headers=org.headers()
    )
    assert str(uuid.UUID(bot.get_json()["id"])) == bot.get_json()["id"]
    assert bot.get_json()["id"] != body["id"]
    assert bot.get_json()["user_id"] is None and bot.get_json()["extra"] == {}


def test_custom_id_is_kept_and_unique_per_organization(client: FlaskClient, org: Org, other_org: Org) -> None:
    body = {"name": "Ana", "ai": False, "organization_id": org.id, "id": "agent-7"}
    assert client.post(msg(org), json=body, headers=org.headers()).get_json()["id"] == "agent-7"
    again = client.post(msg(org), json=body, headers=org.headers())
    assert again.status_code == 409
    assert again.get_json() == error(409, "id: a member with id 'agent-7' already exists")
    # Another organization may use the same id: ids are scoped to the organization.
    theirs = client.post(
        msg(other_org), json={**body, "organization_id": other_org.id}, headers=other_org.headers()
    )
    assert theirs.status_code == 201


def test_create_validation_names_the_field(client: FlaskClient, org: Org) -> None:
    base = {"name": "Ana", "ai": False, "organization_id": org.id}
    cases = [
        ({k: v for k, v in base.items() if k != "name"}, "name: Field required"),
        ({k: v for k, v in base.items() if k != "ai"}, "ai: Field required"),
        ({k: v for k, v in base.items() if k != "organization_id"}, "organization_id: Field required"),
        ({**base, "organization_id": "nope"}, "organization_id: "),
        ({**base, "user_id": "not-a-uuid"}, "user_id: "),
        ({**base, "picture": "ftp://x/y.png"}, "picture: picture must be an http(s) URL"),
        ({**base, "id": "bad id with spaces"}, "id: "),
        ({**base, "extra": [1, 2]}, "extra: "),
        ({**base, "name": ""}, "name: "),
    ]
    for body, message in cases:
        response = client.post(msg(org), json=body, headers=org.headers())
        assert response.status_code == 400, body
        payload = response.get_json()
        assert set(payload) == {"statusCode", "message"} and payload["statusCode"] == 400
        assert payload["message"].startswith(message), (body, payload)
    wrong_org = client.post(
        msg(org), json={**base, "organization_id": str(uuid.uuid4())}, headers=org.headers()
    )
    assert wrong_org.get_json() == error(400, "organization_id: must be the organization of the path")
    not_object = client.post(msg(org), json=[1], headers=org.headers())
    assert not_object.status_code == 400


def test_list_uses_skip_take_defaults_and_limits(client: FlaskClient, org: Org, make_member) -> None:
    created = [make_member(org, name=f"Member {i:02d}")["id"] for i in range(23)]
    first = client.get(msg(org), headers=org.headers())
    assert first.status_code == 200
    page = first.get_json()
    assert isinstance(page, list) and len(page) == 20
    assert [m["id"] for m in page] == created[:20]
    rest = client.get(msg(org, "?skip=20&take=20"), headers=org.headers()).get_json()
    assert [m["id"] for m in rest] == created[20:]
    assert len(client.get(msg(org, "?skip=5&take=3"), headers=org.headers()).get_json()) == 3
    for query, field in (("take=0", "take"), ("take=201", "take"), ("skip=-1", "skip"), ("take=x", "take")):
        response = client.get(msg(org, f"?{query}"), headers=org.headers())
        assert response.status_code == 400
        assert response.get_json()["message"].startswith(f"{field}: ")


def test_list_has_a_constant_query_count(client: FlaskClient, org: Org, make_member, queries) -> None:
    make_member(org, name="One")
    with queries() as few:
        client.get(msg(org), headers=org.headers())
    for i in range(8):
        make_member(org, name=f"N{i}")
    with queries() as many:
        client.get(msg(org), headers=org.headers())
    assert many.count == few.count


def test_get_patch_changes_only_fields_sent(client: FlaskClient, org: Org, make_member) -> None:
    member = make_member(org, name="Ana", picture="https://cdn.example.test/a.png", extra={"a": 1})
    path = msg(org, f"/{member['id']}")
    assert client.get(path, headers=org.headers()).get_json() == member
    patched = client.patch(path, json={"name": "Ana María"}, headers=org.headers())
    assert patched.status_code == 200
    body = patched.get_json()
    assert body["name"] == "Ana María"
    assert body["picture"] == member["picture"] and body["extra"] == {"a": 1} and body["ai"] is False
    cleared = client.patch(path, json={"picture": None, "extra": {"b": 2}}, headers=org.headers()).get_json()
    assert cleared["picture"] is None and cleared["extra"] == {"b": 2} and cleared["name"] == "Ana María"
    assert client.get(path, headers=org.headers()).get_json()["name"] == "Ana María"


def test_patch_validation(client: FlaskClient, org: Org, make_member) -> None:
    path = msg(org, f"/{make_member(org)['id']}")
    for body, message in (
        ({"name": None}, "name: must not be null"),
        ({"ai": "maybe"}, "ai: "),
        ({"id": "other-id"}, "id: a member's id cannot be changed"),
        ({"organization_id": str(uuid.uuid4())}, "organization_id: must be the organization of the path"),
    ):
        response = client.patch(path, json=body, headers=org.headers())
        assert response.status_code == 400
        assert response.get_json()["message"].startswith(message), response.get_json()


def test_delete_reports_active_conversations_still_held(client: FlaskClient, org: Org, make_member) -> None:
    member = make_member(org)
    calls: list[list[str]] = []

    def counter(*, organization_id: uuid.UUID, member_ids: list[str]) -> dict[str, int]:
        calls.append(member_ids)
        return {member["id"]: 3}

    hooks.active_conversation_counts.connect(counter)
    response = client.delete(msg(org, f"/{member['id']}"), headers=org.headers())
    assert response.status_code == 200
    assert response.get_json() == {"id": member["id"], "deleted": True, "active_conversations": 3}
    assert calls == [[member["id"]]]
    gone = client.get(msg(org, f"/{member['id']}"), headers=org.headers())
    assert gone.status_code == 404
    assert gone.get_json() == error(404, "No Member found")


def test_unknown_member_is_404_in_the_messaging_format(client: FlaskClient, org: Org) -> None:
    for method in ("get", "patch", "delete"):
        kwargs = {"json": {"name": "x"}} if method == "patch" else {}
        response = getattr(client, method)(msg(org, "/mem_missing"), headers=org.headers(), **kwargs)
        assert response.status_code == 404
        assert response.get_json() == error(404, "No Member found")


def test_other_organization_is_403_on_path_and_404_on_object(
    client: FlaskClient, org: Org, other_org: Org, make_member
) -> None:
    theirs = make_member(other_org, name="Theirs")
    assert client.get(msg(other_org), headers=org.headers()).get_json() == NO_ACCESS
    assert client.post(msg(other_org), json={}, headers=org.headers()).status_code == 403
    response = client.get(msg(org, f"/{theirs['id']}"), headers=org.headers())
    assert response.status_code == 404
    assert (
        client.patch(msg(org, f"/{theirs['id']}"), json={"name": "x"}, headers=org.headers()).status_code
        == 404
    )
    assert client.delete(msg(org, f"/{theirs['id']}"), headers=org.headers()).status_code == 404
    assert [m["id"] for m in client.get(msg(org), headers=org.headers()).get_json()] == []
    # still there for its owner
    assert client.get(msg(other_org, f"/{theirs['id']}"), headers=other_org.headers()).status_code == 200


def test_auth_and_unknown_routes(client: FlaskClient, org: Org) -> None:
    assert client.get(msg(org)).get_json() == INVALID_TOKEN
    assert client.put(msg(org, "/x"), headers=org.headers()).get_json() == ROUTE_NOT_FOUND
    # the sandbox is another store: a live member does not exist there
    member = client.post(
        msg(org), json={"name": "Live", "ai": False, "organization_id": org.id}, headers=org.headers()
    ).get_json()
    sandbox = client.get("/sandbox" + msg(org, f"/{member['id']}"), headers=org.headers("sandbox"))
    assert sandbox.status_code == 404
