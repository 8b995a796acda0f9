"""Which provider serves an address: the offline simulator (the sandbox, simulator addresses) or Meta.

Kept apart from ``providers.py`` (the interface and its types, which both providers import) so that the
choice can name both providers without a circle between them and the interface.
"""

from __future__ import annotations

from blueprints.channels.meta import MetaProvider
from blueprints.channels.models import OrganizationAddress
from blueprints.channels.providers import Provider, uses_simulator
from blueprints.channels.simulator import SimulatorProvider


def provider_for(address: OrganizationAddress) -> Provider:
    if uses_simulator(address):
        return SimulatorProvider()
    return MetaProvider.from_config()
