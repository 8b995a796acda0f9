"""Telecom partner area (``/v1/partner``): users and KYC, catalogues, balance, subscriptions and their
orders, portings, travel eSIMs and lifecycle webhooks, behind a carrier interface with a simulator; and
the desk's read-only Telecom page. Design: ``docs/telecom.md``."""

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.telecom.x runs this package's __init__ first, and its API and pages import the whole area.
    from blueprints.telecom import api, data_esims_api, portings_api, webhooks_api
    from blueprints.telecom.pages import pages

    # one route module per part of the area, each with a BLUEPRINTS tuple
    for module in (api, portings_api, data_esims_api, webhooks_api):
        for blueprint in module.BLUEPRINTS:
            app.register_api(blueprint)  # type: ignore[attr-defined]
    app.register_blueprint(pages)  # the desk's Telecom page (supervisors)
