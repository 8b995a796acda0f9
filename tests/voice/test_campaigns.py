"""Voice campaigns through the API: validation naming the field, the rejected-rows report, the states and
their transitions (409 otherwise), another organization's ids, and a small campaign on the simulator
(retries, then exhausted) with its recipients' attempts (docs/voice.md, "Campaigns")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.voice.services import campaigns as service
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.voice.conftest import NUMBER, connect, voice
from tests.voice.fake_twilio import FakeTwilio

SIM_NUMBER = "+525550002000"
# Monday 2026-11-23 15:00 in Mexico City (UTC-6): inside a Monday-to-Friday 09:00-18:00 window
MONDAY_AFTERNOON = datetime(2026, 11, 23, 21, 0, tzinfo=UTC)
WINDOW = {
    "timezone": "America/Mexico_City",
    "days": ["mon", "tue", "wed", "thu", "fri"],
    "start": "09:00",
    "end": "18:00",
}


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    at = Clock(MONDAY_AFTERNOON)
    monkeypatch.setattr(service, "clock", at)
    return at


def agent(client: FlaskClient, org: Org) -> str:
    response = client.post(
        f"/v2/messages/organizations/{org.id}/members",
        json={"name": "Caller", "ai": True, "organization_id": org.id},
        headers=org.headers(),
    )
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["id"])


def body(agent: str, recipients: list[Any], **overrides: Any) -> dict[str, Any]:
    return {
        "name": "Renewals",
        "agent_id": agent,
        "from_number": SIM_NUMBER,
        "recipients": recipients,
        "window": WINDOW,
        "max_concurrent": 2,
        "max_attempts": 2,
        "retry_minutes": 30,
        **overrides,
    }


@pytest.fixture
def setup(client: FlaskClient, runner: FlaskCliRunner, org: Org) -> str:
    connect(runner, org, "--number", SIM_NUMBER, "--provider", "simulator")
    return agent(client, org)


def test_create_reports_rejected_rows_and_accepts_the_rest(client: FlaskClient, org: Org, setup: str) -> None:
    recipients = [
        {"number": "+52 55 1234 5678", "variables": {"name": "Ana"}},
        {"number": "not a number"},
        {"number": "+525512345678"},  # the first, written otherwise
        {"number": "+525512340001"},
        {"number": "+525512340002"},
    ]
    response = client.post(
        f"{voice(org)}/campaigns",
        json=body(setup, recipients, exclude_list=["+52 55 1234 0002"]),
        headers=org.headers(),
    )
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    assert created["status"] == "draft" and created["recipients_total"] == 2
    assert created["rejected"] == [
        {"row": 1, "number": "not a number", "reason": "invalid"},
        {"row": 2, "number": "+525512345678", "reason": "duplicate"},
        {"row": 4, "number": "+525512340002", "reason": "excluded"},
    ]
    assert created["progress"]["pending"] == 2 and created["window"] == WINDOW
    listed = client.get(
        f"{voice(org)}/campaigns/{created['id']}/recipients", headers=org.headers()
    ).get_json()
    assert [(r["number"], r["state"], r["attempts"]) for r in listed["data"]] == [
        ("+525512345678", "pending", []),
        ("+525512340001", "pending", []),
    ]
    assert listed["data"][0]["variables"] == {"name": "Ana"}


@pytest.mark.parametrize(
    ("overrides", "param"),
    [
        ({"window": {**WINDOW, "timezone": "Mars/Olympus"}}, "window.timezone"),
        ({"window": {**WINDOW, "start": "18:00", "end": "09:00"}}, "window.end"),
        ({"window": {**WINDOW, "start": "9am"}}, "window.start"),
        ({"window": {**WINDOW, "days": ["someday"]}}, "window.days"),
        ({"max_concurrent": 0}, "max_concurrent"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"retry_minutes": 0}, "retry_minutes"),
        ({"from_number": "+525550009999"}, "from_number"),
        ({"agent_id": "nobody"}, "agent_id"),
        ({"recipients": [{"number": "+525512345678", "contact_id": "nobody"}]}, "recipients.0.contact_id"),
        ({"recipients": [{"number": "garbage"}]}, "recipients"),
        ({"recipients": [{"number": "+525512345678"}] * 10_001}, "recipients"),
    ],
)
def test_bad_input_is_400_naming_the_field(
    client: FlaskClient, org: Org, setup: str, overrides: dict[str, Any], param: str
) -> None:
    response = client.post(
        f"{voice(org)}/campaigns",
        json={**body(setup, [{"number": "+525512345678"}]), **overrides},
        headers=org.headers(),
    )
    assert response.status_code == 400, response.get_json()
    assert param in response.get_json()["message"]
    assert client.get(f"{voice(org)}/campaigns", headers=org.headers()).get_json()["total"] == 0


def _post(client: FlaskClient, org: Org, campaign_id: str, action: str) -> Any:
    return client.post(f"{voice(org)}/campaigns/{campaign_id}/{action}", headers=org.headers())


def test_states_and_invalid_transitions(client: FlaskClient, org: Org, setup: str, clock: Clock) -> None:
    clock.now = MONDAY_AFTERNOON + timedelta(hours=4)  # 19:00 local: the window is closed
    created = client.post(
        f"{voice(org)}/campaigns", json=body(setup, [{"number": "+525512345678"}]), headers=org.headers()
    ).get_json()
    campaign_id = created["id"]
    for action in ("pause", "resume"):
        refused = _post(client, org, campaign_id, action)
        assert refused.status_code == 409 and "draft" in refused.get_json()["message"]
    started = _post(client, org, campaign_id, "start")
    assert started.status_code == 200 and started.get_json()["status"] == "scheduled"
    assert started.get_json()["progress"]["pending"] == 1  # nobody called outside the window
    assert _post(client, org, campaign_id, "start").status_code == 409
    assert _post(client, org, campaign_id, "pause").get_json()["status"] == "paused"
    assert _post(client, org, campaign_id, "pause").status_code == 409
    assert _post(client, org, campaign_id, "resume").get_json()["status"] == "scheduled"
    canceled = _post(client, org, campaign_id, "cancel").get_json()
    assert canceled["status"] == "canceled" and canceled["progress"]["canceled"] == 1
    for action in ("start", "pause", "resume", "cancel"):
        assert _post(client, org, campaign_id, action).status_code == 409
    assert client.get(f"{voice(org)}/calls", headers=org.headers()).get_json()["total"] == 0


def test_another_organizations_campaign_is_404(
    client: FlaskClient, org: Org, other_org: Org, setup: str
) -> None:
    created = client.post(
        f"{voice(org)}/campaigns", json=body(setup, [{"number": "+525512345678"}]), headers=org.headers()
    ).get_json()
    for method, suffix in (
        ("GET", ""),
        ("GET", "/recipients"),
        ("POST", "/start"),
        ("POST", "/pause"),
        ("POST", "/resume"),
        ("POST", "/cancel"),
    ):
        response = client.open(
            f"{voice(other_org)}/campaigns/{created['id']}{suffix}",
            method=method,
            headers=other_org.headers(),
        )
        assert response.status_code == 404 and response.get_json()["message"] == "No Campaign found"
    assert client.get(f"{voice(other_org)}/campaigns", headers=other_org.headers()).get_json()["total"] == 0
    assert client.get(f"{voice(org)}/campaigns", headers=other_org.headers()).status_code == 403
    assert client.get(f"{voice(org)}/campaigns/{created['id']}", headers=org.headers()).status_code == 200


def test_a_campaign_on_the_simulator_retries_busy_numbers_then_completes(
    app: Flask, client: FlaskClient, org: Org, setup: str, clock: Clock
) -> None:
    recipients = [{"number": "+525512345678"}, {"number": "+525512340486"}]  # the second is always busy
    created = client.post(
        f"{voice(org)}/campaigns", json=body(setup, recipients), headers=org.headers()
    ).get_json()
    campaign_id = created["id"]
    assert _post(client, org, campaign_id, "start").get_json()["status"] == "running"
    # the run starts once the start is committed; the simulator walks each call to its end at once (inline
    # jobs in tests)
    running = client.get(f"{voice(org)}/campaigns/{campaign_id}", headers=org.headers()).get_json()
    assert running["progress"] == {**running["progress"], "completed": 1, "pending": 1, "calling": 0}
    clock.now += timedelta(minutes=29)
    with in_environment(app, LIVE):
        assert campaign_id not in service.resume_due()  # the retry is not due yet
    clock.now += timedelta(minutes=1)
    with in_environment(app, LIVE):
        assert campaign_id in service.resume_due()
    done = client.get(f"{voice(org)}/campaigns/{campaign_id}", headers=org.headers()).get_json()
    assert done["status"] == "completed"
    assert done["progress"] == {**done["progress"], "completed": 1, "exhausted": 1, "pending": 0}
    listed = client.get(f"{voice(org)}/campaigns/{campaign_id}/recipients", headers=org.headers()).get_json()
    outcomes = {r["number"]: [a["outcome"] for a in r["attempts"]] for r in listed["data"]}
    assert outcomes == {"+525512345678": ["completed"], "+525512340486": ["busy", "busy"]}
    calls = client.get(
        f"{voice(org)}/calls", query_string={"campaign_id": campaign_id}, headers=org.headers()
    ).get_json()
    assert calls["total"] == 3 and {c["campaign_id"] for c in calls["data"]} == {campaign_id}
    assert {c["agent_id"] for c in calls["data"]} == {setup}


def test_a_call_the_provider_refuses_is_retried_then_exhausted(
    app: Flask,
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    clock: Clock,
) -> None:
    twilio.refused_numbers.add("+525512345678")
    created = client.post(
        f"{voice(org)}/campaigns",
        json=body(agent(client, org), [{"number": "+525512345678"}], from_number=NUMBER),
        headers=org.headers(),
    ).get_json()
    campaign_id = created["id"]
    assert _post(client, org, campaign_id, "start").status_code == 200
    clock.now += timedelta(minutes=30)
    with in_environment(app, LIVE):
        service.resume_due()
    done = client.get(f"{voice(org)}/campaigns/{campaign_id}", headers=org.headers()).get_json()
    assert done["status"] == "completed" and done["progress"]["exhausted"] == 1
    recipient = client.get(
        f"{voice(org)}/campaigns/{campaign_id}/recipients", headers=org.headers()
    ).get_json()["data"][0]
    assert [a["outcome"] for a in recipient["attempts"]] == ["failed", "failed"]
    assert len(twilio.requests_to("/Calls.json")) == 2
    calls = client.get(f"{voice(org)}/calls", headers=org.headers()).get_json()["data"]
    assert {(c["status"], c["provider_call_id"]) for c in calls} == {("failed", None)}
