"""The must-show of voice campaigns (issue 27): 200 recipients called through Twilio (the fake server, with
signed status callbacks as Twilio sends them), a Monday-to-Friday 09:00-18:00 window in Mexico City,
``max_concurrent`` 5, retries (busy and no-answer first), paused and resumed, and a worker killed while
dialling. Time is the campaign's clock (``services.campaigns.clock``), moved by the test; every dial the
fake Twilio received is stamped with it. Asserted: nobody dialled more than their attempts allow (once
after the killed worker's call), nobody dialled outside the window, nobody above ``max_attempts``, never
more than 5 calls live at once, and every recipient settled."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from blueprints.voice.models import Call, VoiceCampaign
from blueprints.voice.services import campaigns as service
from blueprints.voice.twilio import TwilioProvider
from core import campaigns as engine
from core.db import db
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.voice.conftest import ACCOUNT_SID, NUMBER, STATUS_PATH, sign
from tests.voice.fake_twilio import FakeTwilio
from tests.voice.test_campaigns import WINDOW, Clock, agent, voice

ZONE = ZoneInfo(WINDOW["timezone"])
MONDAY_17_30 = datetime(2026, 11, 23, 17, 30, tzinfo=ZONE).astimezone(UTC)
TUESDAY_08_59 = datetime(2026, 11, 24, 8, 59, tzinfo=ZONE).astimezone(UTC)
MAX_ATTEMPTS = 3
RECIPIENTS = [f"+52551200{i:04d}" for i in range(200)]


def script(number: str) -> list[str]:
    """How each attempt of a call to ``number`` ends: most answer at once; some are busy, then answer;
    some do not answer twice, then answer; some never answer (exhausted after three attempts)."""
    i = int(number[-4:])
    if i % 10 == 3:
        return ["busy", "completed"]
    if i % 20 == 7:
        return ["no-answer", "no-answer", "completed"]
    if i % 20 == 17:
        return ["no-answer"] * MAX_ATTEMPTS
    return ["completed"]


class Killed(BaseException):
    """The worker's process dies: raised after the provider dialled, before our commit of its call id."""


class Harness:
    """Drives the campaign: ends live calls through signed callbacks and checks the invariants after
    every step (dials only happen inside a step, so the live count peaks at a step's end)."""

    def __init__(self, app: Flask, client: FlaskClient, org: Org, twilio: FakeTwilio, clock: Clock) -> None:
        self.app, self.client, self.org, self.twilio, self.clock = app, client, org, twilio, clock
        self.seen = 0  # dials already stamped
        self.dials: list[tuple[str, datetime]] = []  # (to, when)
        self.ended: set[str] = set()  # sids ended by a callback (or given up by the test)
        self.sids: list[str] = []
        self.max_live = 0
        self.campaign_id = ""

    def stamp(self) -> None:
        created = self.twilio.requests_to("/Calls.json")
        for request in created[self.seen :]:
            self.dials.append((request.form["To"], self.clock.now))
        self.seen = len(created)
        live = len(self.twilio.calls) - len(self.ended)
        assert live <= 5, f"{live} calls live at once"
        self.max_live = max(self.max_live, live)

    def live_calls(self) -> list[tuple[str, str]]:
        """(sid, to) of the campaign's calls still open, as our store knows them."""
        with in_environment(self.app, LIVE):
            rows = db.session.execute(
                select(Call.provider_call_id, Call.to_number).where(
                    Call.status.in_(("queued", "ringing", "in_progress")), Call.provider_call_id.is_not(None)
                )
            ).all()
        return [(sid, to) for sid, to in rows if sid not in self.ended]

    def end_live_calls(self) -> int:
        ended = 0
        for sid, to in self.live_calls():
            attempt = sum(1 for dialled, _ in self.dials if dialled == to)
            outcome = script(to)[min(attempt, len(script(to))) - 1]
            form = {
                "CallSid": sid,
                "AccountSid": ACCOUNT_SID,
                "From": NUMBER,
                "To": to,
                "CallStatus": outcome,
                "Direction": "outbound-api",
                "SequenceNumber": "3",
                **({"CallDuration": "20"} if outcome == "completed" else {}),
            }
            response = self.client.post(STATUS_PATH, data=form, headers={"X-Twilio-Signature": sign(form)})
            assert response.status_code == 204
            self.ended.add(sid)
            ended += 1
            self.stamp()  # its settling ran the next run, which may have dialled into the freed place
        return ended

    def resume_due(self) -> list[str]:
        with in_environment(self.app, LIVE):
            due = service.resume_due()
        self.stamp()
        return due

    def tick(self, minutes: int = 1) -> None:
        self.clock.now += timedelta(minutes=minutes)
        self.resume_due()
        self.end_live_calls()

    def campaign(self) -> dict[str, Any]:
        return dict(
            self.client.get(
                f"{voice(self.org)}/campaigns/{self.campaign_id}", headers=self.org.headers()
            ).get_json()
        )

    def post(self, action: str) -> dict[str, Any]:
        response = self.client.post(
            f"{voice(self.org)}/campaigns/{self.campaign_id}/{action}", headers=self.org.headers()
        )
        assert response.status_code == 200, response.get_json()
        self.stamp()
        return dict(response.get_json())


@pytest.fixture
def harness(
    app: Flask,
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Harness]:
    clock = Clock(MONDAY_17_30)
    monkeypatch.setattr(service, "clock", clock)
    yield Harness(app, client, org, twilio, clock)


def test_200_recipients_window_limit_retries_pause_resume_and_a_killed_worker(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    body = {
        "name": "Renewals",
        "agent_id": agent(h.client, h.org),
        "from_number": NUMBER,
        "recipients": [{"number": n} for n in RECIPIENTS],
        "window": WINDOW,
        "max_concurrent": 5,
        "max_attempts": MAX_ATTEMPTS,
        "retry_minutes": 10,
    }
    created = h.client.post(f"{voice(h.org)}/campaigns", json=body, headers=h.org.headers())
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["recipients_total"] == 200 and created.get_json()["rejected"] == []
    h.campaign_id = created.get_json()["id"]

    # Monday 17:30: running; five dialled at once, the limit
    assert h.post("start")["status"] == "running"
    assert len(h.dials) == 5
    for _ in range(10):
        h.tick()
    # paused at 17:40 with calls live: they end, nobody new is dialled
    assert h.post("pause")["status"] == "paused"
    before = len(h.dials)
    h.tick()
    h.tick()
    assert len(h.dials) == before and not h.live_calls()
    assert h.post("resume")["status"] == "running"
    while h.clock.now < datetime(2026, 11, 23, 18, 5, tzinfo=ZONE):
        h.tick()
    # 18:05: the window closed at 18:00; the campaign waits for Tuesday 09:00
    assert h.campaign()["status"] == "scheduled"
    monday = len(h.dials)
    assert 0 < monday < 200
    h.clock.now = TUESDAY_08_59
    assert h.campaign_id not in h.resume_due()  # not due before the window opens
    assert len(h.dials) == monday

    # Tuesday 09:00: the worker dies while dialling its third call (after the provider dialled, before
    # our commit of the call's id); its lease stays until it expires
    h.clock.now += timedelta(minutes=1)
    real_place_call = TwilioProvider.place_call
    dialled_by_dead: list[int] = []

    def dies_on_the_third(self: TwilioProvider, number: Any, call: Call) -> Any:
        placed = real_place_call(self, number, call)
        dialled_by_dead.append(1)
        if len(dialled_by_dead) == 3:
            raise Killed
        return placed

    monkeypatch.setattr(TwilioProvider, "place_call", dies_on_the_third)
    monkeypatch.setattr(
        engine.Lease, "release", lambda self, owner: None
    )  # a dead process hands nothing back
    with pytest.raises(Killed):
        h.resume_due()
    monkeypatch.undo()
    monkeypatch.setattr(service, "clock", h.clock)
    h.stamp()
    assert len(h.dials) == monday + 3
    ghost = h.twilio.requests_to("/Calls.json")[-1].form["To"]
    ghost_before = sum(1 for to, _ in h.dials[:-1] if to == ghost)
    # a resume beside the (presumed live) worker calls nobody: the lease is held
    with in_environment(h.app, LIVE):
        assert service.run_campaign(uuid.UUID(h.org.id), h.campaign_id).state == "busy"
    assert h.end_live_calls() == 2  # the two it stored end; their settling finds the lease held
    assert len(h.dials) == monday + 3
    # the killed worker's call rang out at Twilio (60 s); its lease expired meanwhile
    h.ended.update(sid for sid, call in h.twilio.calls.items() if call["to"] == ghost)
    h.tick()
    while h.campaign()["status"] != "completed":
        assert h.clock.now < TUESDAY_08_59 + timedelta(hours=2), h.campaign()
        h.tick()

    # ---- the invariants ---------------------------------------------------------------------------------
    per_number = Counter(to for to, _ in h.dials)
    assert set(per_number) == set(RECIPIENTS)  # everyone was called
    for number, count in per_number.items():
        allowed = ghost_before + 1 if number == ghost else len(script(number))
        assert count == allowed, (number, count)
        assert count <= MAX_ATTEMPTS
    for _, when in h.dials:
        local = when.astimezone(ZONE)
        assert local.weekday() < 5 and "09:00" <= local.strftime("%H:%M") < "18:00", local
    assert h.max_live == 5
    done = h.campaign()
    exhausted = sum(1 for n in RECIPIENTS if n != ghost and script(n) == ["no-answer"] * MAX_ATTEMPTS)
    assert done["progress"] == {
        "pending": 0,
        "calling": 0,
        "completed": 200 - exhausted - 1,
        "failed": 1,  # the killed worker's: it may have rung, so never dialled again
        "exhausted": exhausted,
        "canceled": 0,
    }
    recipients = h.client.get(
        f"{voice(h.org)}/campaigns/{h.campaign_id}/recipients",
        query_string={"take": 200},
        headers=h.org.headers(),
    ).get_json()["data"]
    attempts = {r["number"]: r["attempts"] for r in recipients}
    assert [a["outcome"] for a in attempts[RECIPIENTS[7]]] == ["no_answer", "no_answer", "completed"]
    assert len({a["call_id"] for r in recipients for a in r["attempts"]}) == sum(per_number.values())
    with in_environment(h.app, LIVE):
        campaign = db.session.get(VoiceCampaign, uuid.UUID(h.campaign_id))
        assert campaign is not None and campaign.lease_owner is None
