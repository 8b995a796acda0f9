"""Organizations (tenants) and API keys: the lookup endpoint and the CLI that creates them."""

from flask import Flask


def init_app(app: Flask) -> None:
    from blueprints.organizations.api import api

    app.register_api(api)  # type: ignore[attr-defined]
