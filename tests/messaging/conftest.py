from collections.abc import Iterator

import pytest

from blueprints.messaging.threads import known_crm_contacts
from tests.fakes.fixtures import app_config, connect, deliver, fb, ig, meta, meta_server, wa  # noqa: F401


@pytest.fixture(autouse=True)
def _crm_not_wired() -> Iterator[None]:
    """Messaging on its own: a CRM contact id is kept as given (tests/integrations checks the wired rule)."""
    with known_crm_contacts.only(None):
        yield
