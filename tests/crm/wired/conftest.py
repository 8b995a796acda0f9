"""CRM tests with the other areas wired as in production: a connected WhatsApp channel (fake Meta
server) gives real conversations, the members API real members."""

from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401
