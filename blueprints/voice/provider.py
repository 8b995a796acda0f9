"""The interface a voice provider implements (docs/voice.md, "Providers"): Twilio and the simulator now,
Telnyx later. The area's services speak only these terms; each adapter turns them into its wire format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from blueprints.voice.models import Call, VoiceNumber


class ProviderError(Exception):
    """The provider refused or could not be reached: ``status`` is the HTTP status we answer with."""

    def __init__(self, message: str, *, code: str = "provider_error", status: int = 502) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


@dataclass(frozen=True)
class PlacedCall:
    provider_call_id: str
    status: str  # ours: queued, ringing, ...


@dataclass(frozen=True)
class StatusUpdate:
    """One status report of a call in our terms (a Twilio status callback, a simulator step)."""

    provider_call_id: str
    status: str | None  # None: a status we do not know, which changes nothing
    sequence: int
    at: datetime | None = None
    duration_seconds: int | None = None
    recording_url: str | None = None


class VoiceProvider(Protocol):
    name: str

    def place_call(self, number: VoiceNumber, call: Call) -> PlacedCall: ...

    def hang_up(self, number: VoiceNumber, call: Call) -> None: ...

    def parse_status(self, form: Mapping[str, str]) -> StatusUpdate: ...
