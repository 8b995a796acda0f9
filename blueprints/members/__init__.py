"""People of the desk: members (human and AI), login users, teams, presence with history and
statistics, unavailability reasons, AI agents and their configuration. See docs/members.md."""

import os

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the area is: importing
    # blueprints.members.x runs this package's __init__ first, and its API imports the whole area.
    # Its Socket.IO hooks (connections, presence, ended sessions) are connected in blueprints/integrations.
    from blueprints.members import realtime
    from blueprints.members.api import api
    from blueprints.members.messaging_api import api as messaging_api
    from blueprints.members.pages import pages

    # Seconds a member stays as it was after its last connection drops (see docs/members.md).
    app.config.setdefault(
        "PRESENCE_GRACE_SECONDS",
        float(os.environ.get("PRESENCE_GRACE_SECONDS", realtime.DEFAULT_GRACE_SECONDS)),
    )
    app.register_api(api)  # type: ignore[attr-defined]
    app.register_api(messaging_api)  # type: ignore[attr-defined]
    app.register_blueprint(pages)  # the desk's /team and its people, teams and reasons settings (supervisors)
