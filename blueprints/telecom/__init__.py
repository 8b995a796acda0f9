"""Telecom partner area (``/v1/partner``): users and KYC, catalogues, balance, subscriptions and their
orders, behind a carrier interface with a simulator. Design: ``docs/telecom.md``."""

from flask import Flask


def init_app(app: Flask) -> None:
    from blueprints.telecom.api import BLUEPRINTS

    for blueprint in BLUEPRINTS:
        app.register_api(blueprint)  # type: ignore[attr-defined]
