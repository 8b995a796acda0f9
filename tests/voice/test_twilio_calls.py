"""Outbound calls through the Twilio adapter (the fake Twilio on loopback) and Twilio's signed status
callbacks: the lifecycle, duplicates and out-of-order reports, busy and no-answer, bad signatures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient

from core import events
from core.events import subscribe
from tests.conftest import Org
from tests.voice.conftest import ACCOUNT_SID, AUTH_TOKEN, NUMBER, PUBLIC_BASE_URL, STATUS_PATH, sign, voice
from tests.voice.fake_twilio import FakeTwilio

TO = "+525512345678"


def _place(client: FlaskClient, org: Org, **body: Any) -> dict[str, Any]:
    response = client.post(f"{voice(org)}/calls", json={"to": TO, **body}, headers=org.headers())
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _call(client: FlaskClient, org: Org, call_id: str) -> dict[str, Any]:
    response = client.get(f"{voice(org)}/calls/{call_id}", headers=org.headers())
    assert response.status_code == 200
    return response.get_json()


def test_outbound_call_speaks_twilios_wire_format_and_completes_through_signed_callbacks(
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    callback: Callable[..., Any],
) -> None:
    assert twilio_number["has_auth_token"] is True and "auth_token" not in twilio_number
    call = _place(client, org, metadata={"order": "A-17"})
    assert call["status"] == "queued" and call["direction"] == "outbound"
    assert call["from"] == NUMBER and call["to"] == TO and call["metadata"] == {"order": "A-17"}

    [sent] = twilio.requests_to("/Calls.json")
    assert sent.path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Calls.json"
    assert sent.auth == (ACCOUNT_SID, AUTH_TOKEN)
    assert sent.content_type.startswith("application/x-www-form-urlencoded")
    assert sent.form["To"] == TO and sent.form["From"] == NUMBER
    assert sent.form["Twiml"].startswith("<Response>")
    assert sent.form["StatusCallback"] == f"{PUBLIC_BASE_URL}{STATUS_PATH}"
    assert sent.form.getlist("StatusCallbackEvent") == ["initiated", "ringing", "answered", "completed"]
    assert sent.form["StatusCallbackMethod"] == "POST"
    sid = call["provider_call_id"]
    assert sid in twilio.calls and sid.startswith("CA")

    assert callback(sid, "initiated", 0).status_code == 204
    assert callback(sid, "ringing", 1).status_code == 204
    assert _call(client, org, call["id"])["status"] == "ringing"
    assert callback(sid, "in-progress", 2).status_code == 204
    answered = _call(client, org, call["id"])
    assert answered["status"] == "in_progress" and answered["answered_at"] is not None
    assert callback(sid, "completed", 3, CallDuration="42").status_code == 204
    done = _call(client, org, call["id"])
    assert done["status"] == "completed" and done["duration_seconds"] == 42
    assert done["ended_reason"] == "completed" and done["ended_at"] is not None


def test_duplicate_and_out_of_order_callbacks_never_move_a_call_backwards(
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    callback: Callable[..., Any],
) -> None:
    call = _place(client, org)
    sid = call["provider_call_id"]
    assert callback(sid, "in-progress", 2).status_code == 204  # ringing (1) comes later
    assert callback(sid, "ringing", 1).status_code == 204
    assert callback(sid, "in-progress", 2).status_code == 204  # a duplicate
    assert _call(client, org, call["id"])["status"] == "in_progress"
    assert callback(sid, "completed", 4, CallDuration="17").status_code == 204
    assert callback(sid, "in-progress", 3).status_code == 204  # late, after the end
    assert callback(sid, "completed", 4, CallDuration="99").status_code == 204  # a duplicate
    done = _call(client, org, call["id"])
    assert done["status"] == "completed" and done["duration_seconds"] == 17


def test_a_completed_report_arriving_first_ends_the_call_with_its_duration(
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    callback: Callable[..., Any],
) -> None:
    call = _place(client, org)
    sid = call["provider_call_id"]
    assert callback(sid, "completed", 3, CallDuration="8").status_code == 204
    for status, sequence in (("ringing", 1), ("in-progress", 2), ("initiated", 0)):
        assert callback(sid, status, sequence).status_code == 204
    done = _call(client, org, call["id"])
    assert done["status"] == "completed" and done["duration_seconds"] == 8 and done["answered_at"] is not None


def test_busy_and_no_answer(
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    callback: Callable[..., Any],
) -> None:
    busy = _place(client, org)
    no_answer = _place(client, org, to="+525512340000")
    callback(busy["provider_call_id"], "ringing", 1)
    callback(busy["provider_call_id"], "busy", 2, CallDuration="0")
    callback(no_answer["provider_call_id"], "ringing", 1)
    callback(no_answer["provider_call_id"], "no-answer", 2, CallDuration="0")
    assert callback(busy["provider_call_id"], "completed", 3, CallDuration="5").status_code == 204  # ended
    first, second = _call(client, org, busy["id"]), _call(client, org, no_answer["id"])
    assert (first["status"], first["ended_reason"], first["duration_seconds"]) == ("busy", "busy", 0)
    assert (second["status"], second["ended_reason"]) == ("no_answer", "no_answer")
    assert second["answered_at"] is None
    listed = client.get(f"{voice(org)}/calls?status=busy", headers=org.headers()).get_json()
    assert [c["id"] for c in listed["data"]] == [busy["id"]] and listed["total"] == 1


def test_a_bad_or_missing_signature_is_403_and_changes_nothing(
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    callback: Callable[..., Any],
) -> None:
    call = _place(client, org)
    sid = call["provider_call_id"]
    assert callback(sid, "ringing", 1, token="0" * 32).status_code == 403  # signed with another token
    form = {"CallSid": sid, "AccountSid": ACCOUNT_SID, "CallStatus": "in-progress", "SequenceNumber": "2"}
    assert client.post(STATUS_PATH, data=form).status_code == 403  # unsigned
    tampered = {**form, "CallStatus": "completed", "CallDuration": "60"}
    signature = sign(form)
    assert (
        client.post(STATUS_PATH, data=tampered, headers={"X-Twilio-Signature": signature}).status_code == 403
    )
    unknown = {**form, "CallSid": "CA" + "f" * 32}
    assert (
        client.post(STATUS_PATH, data=unknown, headers={"X-Twilio-Signature": sign(unknown)}).status_code
        == 403
    )
    after = _call(client, org, call["id"])
    assert after["status"] == "queued" and after["updated_at"] == call["updated_at"]
    # The sequence number of a refused callback was not kept either: the real one applies.
    assert callback(sid, "ringing", 1).status_code == 204
    assert _call(client, org, call["id"])["status"] == "ringing"


def test_hang_up_tells_twilio_and_ends_the_call(
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    callback: Callable[..., Any],
) -> None:
    call = _place(client, org)
    sid = call["provider_call_id"]
    callback(sid, "in-progress", 2)
    response = client.post(f"{voice(org)}/calls/{call['id']}/hangup", headers=org.headers())
    assert response.status_code == 200, response.get_json()
    assert (
        response.get_json()["status"] == "completed" and response.get_json()["ended_reason"] == "hangup_api"
    )
    [hangup] = twilio.requests_to(f"/Calls/{sid}.json")
    assert hangup.form["Status"] == "completed" and hangup.auth == (ACCOUNT_SID, AUTH_TOKEN)
    again = client.post(f"{voice(org)}/calls/{call['id']}/hangup", headers=org.headers())
    assert again.status_code == 409 and again.get_json()["statusCode"] == 409


def test_twilio_refusing_the_call_is_a_502_and_stores_nothing(
    client: FlaskClient, org: Org, twilio: FakeTwilio, twilio_number: dict[str, Any]
) -> None:
    twilio.refused_numbers.add(TO)
    response = client.post(f"{voice(org)}/calls", json={"to": TO}, headers=org.headers())
    assert response.status_code == 502
    assert "13224" in response.get_json()["message"]
    assert client.get(f"{voice(org)}/calls", headers=org.headers()).get_json()["total"] == 0


def test_call_updated_events_follow_the_commit(
    client: FlaskClient,
    org: Org,
    twilio: FakeTwilio,
    twilio_number: dict[str, Any],
    callback: Callable[..., Any],
) -> None:
    seen: list[str] = []

    def follow(event: Any) -> None:
        seen.append(event.data["call"]["status"])

    subscribe("call.updated", follow)
    try:
        call = _place(client, org)
        callback(call["provider_call_id"], "ringing", 1)
        callback(call["provider_call_id"], "ringing", 1)  # a duplicate publishes nothing
    finally:
        events._subscribers["call.updated"].remove(follow)
    assert seen == ["queued", "ringing"]
