"""Availability statistics and CSV exports against a hand-computed timeline.

America/New_York leaves daylight saving time on 2026-11-01 at 02:00 EDT (06:00 UTC): that local day lasts
25 hours, from 2026-11-01T04:00Z to 2026-11-02T05:00Z. Ana's timeline (UTC):

    2026-10-31 22:00  online            (before the range: her state at the range start)
    2026-11-01 06:30  away   (Lunch)    online 04:00-06:30        =  9000 s
    2026-11-01 07:30  busy   (Training) away   06:30-07:30        =  3600 s  (crosses the DST change)
    2026-11-01 10:00  online            busy   07:30-10:00        =  9000 s
    2026-11-02 03:00  offline           online 10:00-03:00        = 61200 s
    2026-11-02 07:00  online            offline 03:00-05:00 (cut) =  7200 s  -> 90000 s = 25 h

Ben's first change is inside the range (2026-11-01 12:00 online), so only 12:00Z-05:00Z counts (61200 s).
"""

from __future__ import annotations

import csv
import io
import uuid
from datetime import UTC, datetime

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blueprints.members.services import presence
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.members.conftest import NO_ACCESS, error, mem


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture
def timeline(app: Flask, client: FlaskClient, org: Org, make_member) -> dict[str, str]:
    ana = make_member(org, name="Ana")["id"]
    ben = make_member(org, name="Ben")["id"]
    reasons = {}
    for name in ("Lunch", "Training"):
        response = client.post(
            mem(org, "/members/unavailable-reasons"), json={"name": name}, headers=org.headers()
        )
        reasons[name] = uuid.UUID(response.get_json()["id"])
    organization_id = uuid.UUID(org.id)
    changes = [
        (ana, "online", None, "2026-10-31T22:00"),
        (ana, "away", "Lunch", "2026-11-01T06:30"),
        (ana, "busy", "Training", "2026-11-01T07:30"),
        (ana, "online", None, "2026-11-01T10:00"),
        (ben, "online", None, "2026-11-01T12:00"),
        (ana, "offline", None, "2026-11-02T03:00"),
        (ana, "online", None, "2026-11-02T07:00"),
    ]
    with in_environment(app, LIVE):  # one unit of work, committed when the block ends
        for member_id, status, reason, when in changes:
            presence.change_status(
                organization_id,
                member_id,
                status,
                reasons[reason] if reason else None,
                changed_by="test",
                at=at(when),
            )
    return {"ana": ana, "ben": ben}


def _get(client: FlaskClient, org: Org, path: str):
    response = client.get(mem(org, path), headers=org.headers())
    assert response.status_code == 200, response.get_json()
    return response


def test_member_availability_across_dst_and_range_edges(client: FlaskClient, org: Org, timeline) -> None:
    body = _get(
        client, org, "/stats/member-availability?from=2026-11-01&to=2026-11-01&timezone=America/New_York"
    ).get_json()
    assert body["range"] == {
        "from": "2026-11-01",
        "to": "2026-11-01",
        "timezone": "America/New_York",
        "start": "2026-11-01T04:00:00.000Z",
        "end": "2026-11-02T05:00:00.000Z",
    }
    rows = {row["member_id"]: row for row in body["members"]}
    assert rows[timeline["ana"]] == {
        "member_id": timeline["ana"],
        "name": "Ana",
        "ai": False,
        "online_seconds": 70200,
        "offline_seconds": 7200,
        "busy_seconds": 9000,
        "away_seconds": 3600,
        "tracked_seconds": 90000,
        "reasons": {"Lunch": 3600, "Training": 9000},
    }
    ben = rows[timeline["ben"]]
    assert (ben["online_seconds"], ben["tracked_seconds"], ben["reasons"]) == (61200, 61200, {})


def test_the_same_day_in_utc_is_24_hours(client: FlaskClient, org: Org, timeline) -> None:
    body = _get(client, org, "/stats/member-availability?from=2026-11-01&to=2026-11-01").get_json()
    ana = next(row for row in body["members"] if row["member_id"] == timeline["ana"])
    assert body["range"]["timezone"] == "UTC" and body["range"]["start"] == "2026-11-01T00:00:00.000Z"
    assert (ana["online_seconds"], ana["away_seconds"], ana["busy_seconds"], ana["offline_seconds"]) == (
        73800,
        3600,
        9000,
        0,
    )
    assert ana["tracked_seconds"] == 86400


def test_member_filter_and_team_filter(client: FlaskClient, org: Org, timeline) -> None:
    query = "/stats/member-availability?from=2026-11-01&to=2026-11-01&timezone=America/New_York"
    only_ben = _get(client, org, f"{query}&member_id={timeline['ben']}").get_json()
    assert [row["member_id"] for row in only_ben["members"]] == [timeline["ben"]]
    team = client.post(
        mem(org, "/teams"), json={"name": "Night", "member_ids": [timeline["ana"]]}, headers=org.headers()
    ).get_json()
    in_team = _get(client, org, f"{query}&team_id={team['id']}").get_json()
    assert [row["member_id"] for row in in_team["members"]] == [timeline["ana"]]
    unknown = client.get(mem(org, f"{query}&team_id={uuid.uuid4()}"), headers=org.headers())
    assert unknown.get_json() == error(404, "No Team found")


def test_member_status_counts(client: FlaskClient, org: Org, timeline) -> None:
    body = _get(
        client, org, "/stats/member-status?from=2026-11-01&to=2026-11-01&timezone=America/New_York"
    ).get_json()
    assert body["total_members"] == 2
    assert body["current"] == {"online": 2, "offline": 0, "busy": 0, "away": 0}
    assert body["members_with_status"] == {"online": 2, "offline": 1, "busy": 1, "away": 1}
    assert body["changes"] == {"online": 2, "offline": 1, "busy": 1, "away": 1}
    assert body["reasons"] == {"Lunch": 1, "Training": 1}


def test_availability_export_is_a_csv_spreadsheet(client: FlaskClient, org: Org, timeline) -> None:
    response = _get(
        client, org, "/stats/export/availability?from=2026-11-01&to=2026-11-01&timezone=America/New_York"
    )
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="member-availability_2026-11-01_2026-11-01.csv"'
    )
    rows = list(csv.DictReader(io.StringIO(response.data.decode("utf-8-sig"))))
    ana = next(row for row in rows if row["member_id"] == timeline["ana"])
    assert ana == {
        "member_id": timeline["ana"],
        "member_name": "Ana",
        "ai": "false",
        "online_seconds": "70200",
        "offline_seconds": "7200",
        "busy_seconds": "9000",
        "away_seconds": "3600",
        "tracked_seconds": "90000",
        "reason:Lunch": "3600",
        "reason:Training": "9000",
    }
    assert len(rows) == 2


def test_status_events_export(client: FlaskClient, org: Org, timeline) -> None:
    response = _get(
        client, org, "/stats/export/status-events?from=2026-11-01&to=2026-11-01&timezone=America/New_York"
    )
    assert response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    text = response.data.decode("utf-8-sig")
    assert "\r\n" in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["member_name"], r["from_status"], r["to_status"], r["reason"]) for r in rows] == [
        ("Ana", "online", "away", "Lunch"),
        ("Ana", "away", "busy", "Training"),
        ("Ana", "busy", "online", ""),
        ("Ben", "offline", "online", ""),
        ("Ana", "online", "offline", ""),
    ]
    # 06:30Z is 01:30 EDT; 07:30Z is 02:30 EST (after the clocks went back)
    assert rows[0]["at_utc"] == "2026-11-01T06:30:00.000Z"
    assert rows[0]["at_local (America/New_York)"] == "2026-11-01 01:30:00"
    assert rows[1]["at_local (America/New_York)"] == "2026-11-01 02:30:00"
    only_online = _get(
        client,
        org,
        "/stats/export/status-events?from=2026-11-01&to=2026-11-01&timezone=America/New_York&status=online",
    )
    assert len(list(csv.DictReader(io.StringIO(only_online.data.decode("utf-8-sig"))))) == 2


def test_export_neutralises_formulas(client: FlaskClient, org: Org, make_member) -> None:
    make_member(org, name='=HYPERLINK("http://evil.example")')
    response = _get(client, org, "/stats/export/availability")
    rows = list(csv.DictReader(io.StringIO(response.data.decode("utf-8-sig"))))
    assert rows[0]["member_name"].startswith("'=")


def test_default_range_is_the_last_seven_days(client: FlaskClient, org: Org, make_member) -> None:
    make_member(org, name="Bot", ai=True)
    body = _get(client, org, "/stats/member-availability").get_json()
    today = datetime.now(UTC).date()
    assert body["range"]["to"] == today.isoformat()
    assert (today - datetime.fromisoformat(body["range"]["from"]).date()).days == 6
    [bot] = body["members"]
    assert bot["online_seconds"] >= 0 and bot["offline_seconds"] == 0  # time before creation is not counted


@pytest.mark.parametrize(
    "path",
    [
        "/stats/member-availability",
        "/stats/member-status",
        "/stats/export/availability",
        "/stats/export/status-events",
    ],
)
def test_stats_validation_and_tenancy(client: FlaskClient, org: Org, other_org: Org, path: str) -> None:
    for query, message in (
        ("?from=2026-02-02&to=2026-02-01", "from: must not be after to"),
        ("?from=2024-01-01&to=2026-01-01", "to: a range covers at most 366 days"),
        ("?timezone=Nowhere/City", "timezone: "),
        ("?from=yesterday", "from: "),
    ):
        response = client.get(mem(org, path + query), headers=org.headers())
        assert response.status_code == 400, (path, query)
        assert response.get_json()["message"].startswith(message), response.get_json()
    assert client.get(mem(other_org, path), headers=org.headers()).get_json() == NO_ACCESS


def test_seconds_per_local_day_split_at_each_midnight(app: Flask, org: Org, timeline) -> None:
    """``by_day`` (the desk's chart) cuts the same intervals at the zone's midnights: 2026-11-01 has 25
    hours in New York, and each member's days add up to the member's totals."""
    from blueprints.members.services import stats

    with in_environment(app, LIVE):
        stats_range = stats.make_range(
            datetime(2026, 11, 1).date(), datetime(2026, 11, 2).date(), "America/New_York"
        )
        totals = {
            t.member.id: t for t in stats.availability_totals(uuid.UUID(org.id), stats_range, by_day=True)
        }
    ana = totals[timeline["ana"]]
    first, second = datetime(2026, 11, 1).date(), datetime(2026, 11, 2).date()
    assert ana.days[first] == {"online": 70200, "offline": 7200, "busy": 9000, "away": 3600}
    assert ana.days[second] == {"online": 79200, "offline": 7200, "busy": 0, "away": 0}
    for member in totals.values():
        for status in ("online", "offline", "busy", "away"):
            assert sum(day[status] for day in member.days.values()) == pytest.approx(member.seconds[status])
    assert stats.range_days(stats_range) == [first, second]
