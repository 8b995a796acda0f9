"""Organizations (tenants) and API keys: the lookup endpoint and the CLI that creates them."""

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.organizations.x runs this package's __init__ first, and the API imports the whole area.
    from blueprints.organizations.api import api

    app.register_api(api)  # type: ignore[attr-defined]
