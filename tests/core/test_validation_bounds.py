"""Values a database or a calendar cannot hold are refused at the door with a 400 naming the field."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from core.validation import RequestModel


class Query(RequestModel):
    offset: int = 0
    day: date | None = None
    ratio: float = 0.0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("offset", 10**30),
        ("offset", -(2**40)),
        ("day", "0001-01-01"),
        ("day", "9999-12-31"),
        ("ratio", "inf"),
    ],
)
def test_out_of_range_values_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as raised:
        Query.model_validate({field: value})
    assert raised.value.errors()[0]["loc"] == (field,)


def test_ordinary_values_pass() -> None:
    query = Query.model_validate({"offset": 2**31 - 1, "day": "2026-11-23", "ratio": 0.5})
    assert query.offset == 2**31 - 1 and query.day.year == 2026


def test_an_api_answers_400_for_a_huge_offset(client, org) -> None:
    response = client.get(
        f"/v1/crm/organizations/{org.id}/probe?limit=5&offset={10**30}", headers=org.headers()
    )
    assert response.status_code in (200, 400)  # the probe has no offset; the real lists are checked below
    tasks = client.get(f"/v1/crm/organizations/{org.id}/tasks?offset={10**30}", headers=org.headers())
    assert tasks.status_code == 400 and tasks.get_json()["error"]["message"].startswith("offset:")
    conversations = client.get(
        f"/v2/messages/organizations/{org.id}/conversations?skip={10**30}", headers=org.headers()
    )
    assert conversations.status_code == 400 and conversations.get_json()["message"].startswith("skip:")
