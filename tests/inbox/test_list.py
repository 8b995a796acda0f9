"""GET conversations: every filter of the spec alone and combined, defaults, limits and query counts."""

from __future__ import annotations

import uuid
from datetime import timedelta

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.inbox.conftest import T0, MakeConversation, msg


def ids(response) -> list[str]:
    assert response.status_code == 200, response.get_json()
    return [c["id"] for c in response.get_json()["data"]]


def get(client: FlaskClient, org: Org, query: str = ""):
    return client.get(msg(org, f"/conversations{query}"), headers=org.headers())


def test_wrapper_defaults_and_order(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    first = make_conversation(org, last_message_at=T0 + timedelta(hours=1), messages=1)
    second = make_conversation(org, last_message_at=T0 + timedelta(hours=2), messages=1)
    silent = make_conversation(org)  # no message yet: last in either direction
    body = get(client, org).get_json()
    assert {k: body[k] for k in ("total", "skip", "take")} == {"total": 3, "skip": 0, "take": 20}
    assert [c["id"] for c in body["data"]] == [second, first, silent]
    assert ids(get(client, org, "?order=asc")) == [first, second, silent]
    item = body["data"][0]
    assert set(item) >= {
        "id",
        "organization_id",
        "contact_id",
        "organization_address",
        "contact_address",
        "service",
        "status",
        "name",
        "extra",
        "last_message_at",
        "contact",
    }
    assert set(item["extra"]) >= {"member_id", "labels", "archived", "team_id", "team_name", "assignment"}
    assert "messages" not in item


def test_skip_take(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    made = [make_conversation(org, created_at=T0 + timedelta(minutes=i)) for i in range(5)]
    page = get(client, org, "?order_by=created_at&order=asc&skip=1&take=2").get_json()
    assert [c["id"] for c in page["data"]] == made[1:3]
    assert page["total"] == 5 and page["skip"] == 1 and page["take"] == 2
    assert get(client, org, "?take=0").status_code == 400
    assert get(client, org, "?skip=-1").get_json()["message"].startswith("skip:")


def test_status_filter_treats_archived_as_its_own_view(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    active = make_conversation(org)
    closed = make_conversation(org, status="closed")
    archived = make_conversation(org, archived=True)
    assert ids(get(client, org, "?status=active")) == [active]
    assert ids(get(client, org, "?status=closed")) == [closed]
    assert ids(get(client, org, "?status=archived")) == [archived]
    assert len(ids(get(client, org))) == 3
    archived_item = get(client, org, "?status=archived").get_json()["data"][0]
    assert archived_item["status"] == "active" and archived_item["extra"]["archived"] is not None
    assert get(client, org, "?status=deleted").status_code == 400


def test_search_contact_name_and_address(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    ana = make_conversation(org, contact_name="Ana López", address="+525511112222")
    make_conversation(org, contact_name="Bruno", address="+525533334444")
    assert ids(get(client, org, "?search=ana")) == [ana]
    assert ids(get(client, org, "?search=1111")) == [ana]
    assert ids(get(client, org, "?search=100%25")) == []  # a literal % matches nothing, not everything


def test_contact_service_address_member_crm_filters(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    wa = make_conversation(org, member_id="mem_1", crm_contact_id="crm-1")
    ig = make_conversation(org, service="instagram", organization_address="1784", address="igsid-1")
    fb = make_conversation(org, service="messenger", organization_address="1040", address="psid-1")
    assert ids(get(client, org, "?service=instagram")) == [ig]
    assert set(ids(get(client, org, "?service=instagram,messenger"))) == {ig, fb}
    assert get(client, org, "?service=telegram").get_json()["message"].startswith("service:")
    assert ids(get(client, org, "?organization_address=1040")) == [fb]
    assert ids(get(client, org, "?assigned_member_id=mem_1")) == [wa]
    assert ids(get(client, org, "?crm_contact_id=crm-1")) == [wa]
    conversation = client.get(msg(org, f"/conversations/{wa}"), headers=org.headers()).get_json()
    assert ids(get(client, org, f"?contact_id={conversation['contact_id']}")) == [wa]
    assert get(client, org, "?contact_id=nope").status_code == 400


def test_labels_any_of_and_no_labels_wins(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    vip = make_conversation(org, labels=["VIP"])
    lead = make_conversation(org, labels=["lead", "hot"])
    plain = make_conversation(org)
    assert set(ids(get(client, org, "?labels=vip,hot"))) == {vip, lead}
    assert ids(get(client, org, "?labels=lead")) == [lead]
    assert ids(get(client, org, "?no_labels=true")) == [plain]
    assert ids(get(client, org, "?no_labels=true&labels=vip")) == [plain]


def test_dates_on_either_field(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    old = make_conversation(org, created_at=T0, last_message_at=T0 + timedelta(days=5), messages=1)
    new = make_conversation(
        org, created_at=T0 + timedelta(days=3), last_message_at=T0 + timedelta(days=3), messages=1
    )
    since = (T0 + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert ids(get(client, org, f"?since={since}")) == [new]
    assert set(ids(get(client, org, f"?since={since}&date_field=last_message_timestamp"))) == {old, new}
    until = (T0 + timedelta(days=4)).isoformat().replace("+00:00", "Z")
    assert ids(get(client, org, f"?since={since}&until={until}&date_field=last_message_timestamp")) == [new]
    assert get(client, org, "?since=yesterday").get_json()["message"].startswith("since:")
    assert get(client, org, "?date_field=updated").status_code == 400


def test_broadcast_filters(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    broadcast = uuid.uuid4()
    from_broadcast = make_conversation(org, broadcast_id=broadcast)
    organic = make_conversation(org)
    assert ids(get(client, org, f"?broadcast_id={broadcast}")) == [from_broadcast]
    assert ids(get(client, org, "?is_broadcast=true")) == [from_broadcast]
    assert ids(get(client, org, "?is_broadcast=false")) == [organic]


def test_filters_combine(client: FlaskClient, org: Org, make_conversation: MakeConversation) -> None:
    match = make_conversation(org, contact_name="Carla", labels=["vip"], member_id="mem_9")
    make_conversation(org, contact_name="Carla", labels=["vip"])  # not assigned to mem_9
    make_conversation(org, contact_name="Carla", member_id="mem_9")  # no label
    make_conversation(org, contact_name="Dora", labels=["vip"], member_id="mem_9")  # other name
    make_conversation(org, contact_name="Carla", labels=["vip"], member_id="mem_9", archived=True)
    query = "?search=carl&labels=vip&assigned_member_id=mem_9&status=active&service=whatsapp"
    assert ids(get(client, org, query)) == [match]


def test_include_messages_gives_the_latest_oldest_first(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    make_conversation(org, messages=5)
    item = get(client, org, "?include_messages=3").get_json()["data"][0]
    assert [m["content"]["text"] for m in item["messages"]] == ["message 2", "message 3", "message 4"]
    response = get(client, org, "?include_messages=51")
    assert response.status_code == 400
    assert response.get_json()["message"].startswith("include_messages:")


def test_query_count_does_not_grow_with_take_or_messages(
    client: FlaskClient, org: Org, make_conversation: MakeConversation, queries
) -> None:
    for i in range(105):
        make_conversation(org, messages=3 if i % 10 == 0 else 1, labels=["vip"] if i % 2 else [])
    counts = []
    for query in ("?take=20&include_messages=50", "?take=100&include_messages=50", "?take=100"):
        with queries() as counted:
            response = get(client, org, query)
        assert response.status_code == 200 and response.get_json()["total"] == 105
        counts.append(counted.count)
    assert counts[0] == counts[1], counts
    assert counts[2] <= counts[1]


def test_other_organization(
    client: FlaskClient, org: Org, other_org: Org, make_conversation: MakeConversation
) -> None:
    make_conversation(other_org)
    assert get(client, org).get_json()["total"] == 0
    forbidden = client.get(msg(other_org, "/conversations"), headers=org.headers())
    assert forbidden.status_code == 403
    assert forbidden.get_json() == {
        "statusCode": 403,
        "message": "You do not have access to this organization",
    }
