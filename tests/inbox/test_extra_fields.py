"""A conversation's ``extra`` keeps the client's own keys like the spec's, within bounds."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.conftest import Org
from tests.inbox.conftest import MakeConversation, msg


def _patch(client: FlaskClient, org: Org, cid: str, extra: dict) -> object:
    return client.patch(msg(org, f"/conversations/{cid}"), json={"extra": extra}, headers=org.headers())


def test_unknown_keys_are_stored_returned_and_removed_with_null(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    cid = make_conversation(org)
    response = _patch(client, org, cid, {"order_id": "A-17", "vip": {"tier": 2}, "labels": ["VIP"]})
    assert response.status_code == 200
    extra = response.get_json()["extra"]
    assert (extra["order_id"], extra["vip"], extra["labels"]) == ("A-17", {"tier": 2}, ["VIP"])
    again = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"]
    assert again["order_id"] == "A-17" and again["member_id"] is None
    removed = _patch(client, org, cid, {"order_id": None}).get_json()["extra"]
    assert "order_id" not in removed and removed["vip"] == {"tier": 2}


def test_bounds_are_400_naming_the_field_and_change_nothing(
    client: FlaskClient, org: Org, make_conversation: MakeConversation
) -> None:
    cid = make_conversation(org)
    too_big = _patch(client, org, cid, {"notes": "x" * 3000, "labels": ["Kept?"]})
    assert too_big.status_code == 400
    assert too_big.get_json()["message"].startswith("extra.notes: at most 2048 bytes")
    too_many = _patch(client, org, cid, {f"k{i}": i for i in range(60)})
    assert too_many.status_code == 400 and "at most 50 keys" in too_many.get_json()["message"]
    nul = _patch(client, org, cid, {"note": "a\u0000b"})
    assert nul.status_code == 400 and "NUL" in nul.get_json()["message"]
    extra = client.get(msg(org, f"/conversations/{cid}"), headers=org.headers()).get_json()["extra"]
    assert extra["labels"] == [] and "notes" not in extra and "k0" not in extra
