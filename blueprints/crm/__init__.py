"""CRM area: pipelines and currency, deals, tickets, tasks, contacts and accounts.

Other areas plug into the CRM through :mod:`blueprints.crm.hooks` (conversation transcripts, contact
merges, the summarizer).
"""

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.crm.x runs this package's __init__ first, and its API and pages import the whole area.
    from blueprints.crm.api import BLUEPRINTS
    from blueprints.crm.pages import pages

    for blueprint in BLUEPRINTS:
        app.register_api(blueprint)  # type: ignore[attr-defined]
    app.register_blueprint(pages)  # the desk's CRM fragments (docs/desk.md)
