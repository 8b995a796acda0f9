"""The end of an AI-answered call: its transcript, the transfer when the agent handed it off, the summary
and the agent's ``end_of_call`` notifications (docs/voice.md, "Transcript, summary and end of call").

The relay calls :func:`save_transcript` after every turn (so a crash loses at most the turn in flight) and
:func:`finish` once when the relay closes. The summary needs the model, which may take seconds or fail:
it is written by the job :func:`summarize_call` after the finish has committed, and the notifications go
out in that job's unit of work, with the summary in them."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from blueprints.ai.provider import ProviderError, chat_provider
from blueprints.ai.summaries import MAX_SUMMARY_CHARS, MAX_SUMMARY_TOKENS, SYSTEM_PROMPT, transcript_text
from blueprints.ai.voice_turns import VoiceEnd
from blueprints.members.agent_config_rules import target_type
from blueprints.notifications.services import notify
from blueprints.voice import lifecycle
from blueprints.voice.models import TERMINAL, Call
from blueprints.voice.services.calls import number_of
from blueprints.voice.services.inbound import member_phone
from core.db import db, isoformat, utcnow
from core.jobs import job

log = logging.getLogger(__name__)

SUMMARY_TEMPERATURE = 0.2
# The offline summary quotes the caller's first words up to this length.
OFFLINE_QUOTE_CHARS = 200


def save_transcript(call: Call, transcript: list[dict[str, Any]]) -> None:
    if call.transcript != transcript:
        call.transcript = list(transcript)
        db.session.flush()


def _transfer(call: Call, ended: VoiceEnd) -> dict[str, Any]:
    """``{target, target_type, rule, reason, dial, at}``: ``dial`` is the phone the action URL dials — the
    rule's number, the member's phone, or (no rule named) the phone of the number's person; None when
    no phone is known (the caller then hears an apology)."""
    assert ended.handoff is not None
    target = ended.handoff.target
    kind = target_type(target) if target else None
    if kind == "phone":
        phone: str | None = target
    elif kind == "member" and target:
        phone = member_phone(call.organization_id, target)
    else:
        number = number_of(call)
        phone = member_phone(call.organization_id, number.member_id) if number and number.member_id else None
    return {
        "target": target,
        "target_type": kind,
        "rule": ended.handoff.rule,
        "reason": ended.handoff.reason,
        "dial": phone,
        "at": isoformat(utcnow()),
    }


def finish(call: Call, ended: VoiceEnd) -> None:
    """The relay closed: store the transcript; a hand-off records ``transfer`` and leaves the call up
    (the action URL dials the target), otherwise the AI's call is over (``completed``). The summary and
    the notifications follow in :func:`summarize_call`."""
    save_transcript(call, ended.transcript)
    if ended.handoff is not None:
        call.transfer = _transfer(call, ended)
    elif call.status not in TERMINAL:
        lifecycle.end(call, "completed")
    db.session.flush()
    lifecycle.publish(call)
    summarize_call.enqueue(str(call.organization_id), str(call.id), ended.outcome)


def _offline_summary(transcript: list[dict[str, Any]]) -> str:
    """Without a model: who spoke how much and what the caller asked first (no invented content)."""
    caller = [line["text"] for line in transcript if line.get("speaker") == "caller" and line.get("text")]
    agent = [line for line in transcript if line.get("speaker") == "agent"]
    if not caller:
        return "The caller said nothing the agent could answer."
    first = caller[0] if len(caller[0]) <= OFFLINE_QUOTE_CHARS else caller[0][: OFFLINE_QUOTE_CHARS - 1] + "…"
    return f'The caller said: "{first}". {len(caller)} caller turns, {len(agent)} agent answers.'


def summary_of(call: Call) -> str:
    """The model's summary of the call's transcript (``ai/summaries.py``'s prompt), or the offline one
    when no model is configured or it failed."""
    transcript = list(call.transcript or [])
    started = call.answered_at or call.started_at or call.created_at
    lines = [
        (
            "inbound" if line.get("speaker") == "caller" else "outbound",
            str(line.get("text") or ""),
            started + timedelta(milliseconds=int(line.get("at_ms") or 0)) if started else None,
        )
        for line in transcript
    ]
    provider = chat_provider()
    text = transcript_text(lines) if lines else ""
    if provider is None or not text:
        return _offline_summary(transcript)
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Transcript (channel: phone call):\n{text}"},
    ]
    try:
        completion = provider.complete(
            messages, temperature=SUMMARY_TEMPERATURE, max_tokens=MAX_SUMMARY_TOKENS
        )
    except ProviderError as error:
        log.warning("summary of call %s by the model failed (%s): offline instead", call.id, error)
        return _offline_summary(transcript)
    summary = " ".join((completion.text or "").split())
    if not summary:
        return _offline_summary(transcript)
    return summary if len(summary) <= MAX_SUMMARY_CHARS else summary[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"


@job(retries=2, retry_delay=30)
def summarize_call(organization_id: str, call_id: str, outcome: str) -> None:
    """The summary, then the agent's ``end_of_call`` notifications with it, in one unit of work (a retry
    after a failure writes neither twice). A call already summarized is left alone."""
    call = db.session.scalars(
        select(Call).where(Call.id == uuid.UUID(call_id), Call.organization_id == uuid.UUID(organization_id))
    ).first()
    if call is None or call.summary is not None:
        return
    call.summary = summary_of(call)
    db.session.flush()
    lifecycle.publish(call)
    if call.agent_id:
        notify(call.organization_id, call.agent_id, "end_of_call", notification_payload(call, outcome))


def notification_payload(call: Call, outcome: str) -> dict[str, Any]:
    return {
        "call_id": str(call.id),
        "direction": call.direction,
        "contact_address": call.from_number if call.direction == "inbound" else call.to_number,
        "number": call.to_number if call.direction == "inbound" else call.from_number,
        "contact_id": call.contact_id,
        "status": call.status,
        "outcome": outcome,
        "duration_seconds": call.duration_seconds,
        "summary": call.summary,
        "transfer": call.transfer,
        "transcript": list(call.transcript or []),
    }
