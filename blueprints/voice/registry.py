"""Which provider places a number's calls: the sandbox always uses the simulator."""

from __future__ import annotations

from blueprints.voice import twilio
from blueprints.voice.models import VoiceNumber
from blueprints.voice.provider import VoiceProvider
from blueprints.voice.simulator import SimulatorProvider
from core.environments import SANDBOX, current_environment


def uses_simulator(number: VoiceNumber) -> bool:
    return number.provider == "simulator" or current_environment() == SANDBOX


def provider_for(number: VoiceNumber) -> VoiceProvider:
    return SimulatorProvider() if uses_simulator(number) else twilio.provider()
