from tests.fakes.fixtures import app_config, connect, deliver, meta, meta_server, wa  # noqa: F401
from tests.inbox.conftest import make_conversation, make_member  # noqa: F401
