"""Telecom partner area (``/v1/partner``): users and KYC, catalogues, balance, subscriptions and their
orders, portings, travel eSIMs and lifecycle webhooks, behind a carrier interface with a simulator; and
the desk's read-only Telecom page. Design: ``docs/telecom.md``."""

import importlib

from flask import Flask

# Route modules of the area, each with a BLUEPRINTS tuple.
API_MODULES = ("api", "portings_api", "data_esims_api", "webhooks_api")


def init_app(app: Flask) -> None:
    from blueprints.telecom.pages import pages

    for name in API_MODULES:
        module = importlib.import_module(f"blueprints.telecom.{name}")
        for blueprint in module.BLUEPRINTS:
            app.register_api(blueprint)  # type: ignore[attr-defined]
    app.register_blueprint(pages)  # the desk's Telecom page (supervisors)
