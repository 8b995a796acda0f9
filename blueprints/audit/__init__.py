"""The audit log of administrative actions (issue 15, item 7): keys issued and revoked, channels
connected, AI agent configurations changed, members and teams created, changed and deleted, and
deletions of the organization's objects. Each entry is written in the unit of work of the action it
records; supervisors read the log through the API and the desk's ``/audit`` page. See docs/audit.md."""

from __future__ import annotations

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.audit.x runs this package's __init__ first, and its API and pages import the whole area.
    from blueprints.audit import models  # noqa: F401  (the table, for the migrations' comparison)
    from blueprints.audit.api import api
    from blueprints.audit.pages import pages

    app.register_api(api)  # type: ignore[attr-defined]
    app.register_blueprint(pages)  # the desk: /audit, supervisors only
