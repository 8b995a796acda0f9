from tests.fakes.fixtures import app_config, connect, deliver, fb, ig, meta, meta_server, wa  # noqa: F401
