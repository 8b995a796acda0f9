"""The ``simulator`` provider: the sandbox's and the offline default. A placed call walks through
ringing → in_progress → completed in the job queue, through the same lifecycle as Twilio's callbacks
(docs/voice.md, "Simulator"). A ``to`` ending in 0486 is busy, one ending in 0404 is not answered."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from flask import current_app
from sqlalchemy import select

from blueprints.voice import lifecycle
from blueprints.voice.models import Call, VoiceNumber
from blueprints.voice.provider import PlacedCall, StatusUpdate
from core.db import db
from core.jobs import job

BUSY_SUFFIX = "0486"
NO_ANSWER_SUFFIX = "0404"
DURATION_SECONDS = 3


def script(to_number: str) -> list[str]:
    """The statuses a simulated call to ``to_number`` goes through, after ``queued``."""
    if to_number.endswith(BUSY_SUFFIX):
        return ["ringing", "busy"]
    if to_number.endswith(NO_ANSWER_SUFFIX):
        return ["ringing", "no_answer"]
    return ["ringing", "in_progress", "completed"]


class SimulatorProvider:
    name = "simulator"

    def place_call(self, number: VoiceNumber, call: Call) -> PlacedCall:
        sid = f"SIM{uuid.uuid4().hex}"
        _schedule(sid, 0)
        return PlacedCall(sid, "queued")

    def hang_up(self, number: VoiceNumber, call: Call) -> None:
        """Nothing to tell: the call's own state ends it, and later steps find it ended."""

    def parse_status(self, form: Mapping[str, str]) -> StatusUpdate:
        return StatusUpdate(
            form.get("CallSid", ""), form.get("CallStatus"), int(form.get("SequenceNumber", -1))
        )


def _schedule(sid: str, step: int) -> None:
    simulate_step.schedule(current_app.config["VOICE_SIMULATOR_STEP_SECONDS"], sid, step)


@job(retries=2, retry_delay=5)
def simulate_step(provider_call_id: str, step: int) -> None:
    """One step of a simulated call; schedules the next one until the call ends."""
    call = db.session.scalars(select(Call).where(Call.provider_call_id == provider_call_id)).first()
    if call is None:
        return
    statuses = script(call.to_number)
    if step >= len(statuses):
        return
    status = statuses[step]
    duration = DURATION_SECONDS if status == "completed" else None
    changed = lifecycle.apply_update(
        call, StatusUpdate(provider_call_id, status, step, duration_seconds=duration)
    )
    if changed and status == "in_progress" and call.agent_id and _answered:
        _answered[0](call)
    if call.status not in ("completed", "busy", "no_answer", "failed", "canceled"):
        _schedule(provider_call_id, step + 1)


# What happens when an AI agent's simulated call is answered: ``playback.play_answered`` (its
# ``metadata.script`` said over the agent's relay), set by the area's ``init_app`` because the relay sits
# above this module (it reaches the AI runtime, and the calls' services that place calls through here).
_answered: list[Callable[[Call], None]] = []


def on_answered(handler: Callable[[Call], None]) -> None:
    _answered[:] = [handler]
