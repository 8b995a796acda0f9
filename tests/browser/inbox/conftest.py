"""The inbox's browser tests get the fake Meta (Graph API and signed webhooks) and a connected WhatsApp
number, the same fixtures the messaging tests use."""

from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401
