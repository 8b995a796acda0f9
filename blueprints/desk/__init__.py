"""The desk: the browser side of the product for human agents and supervisors.

This package holds what every page shares: sign-in (Flask-Login over the members area's users), CSRF
protection of every form and HTMX request (Flask-WTF), the brute-force limit on sign-in (Flask-Limiter),
the language of the page (Flask-Babel) and the shell (top bar, navigation, presence). Each area serves its
own pages from its ``pages.py`` with templates under ``templates/<area>/``, calling the same services as its
``api.py``. See docs/desk.md.
"""

from __future__ import annotations

from flask import Flask

from blueprints.desk import i18n, security


def init_app(app: Flask) -> None:
    from blueprints.desk import realtime
    from blueprints.desk.pages import pages

    realtime.install()
    security.init_app(app)
    i18n.init_app(app)
    app.register_blueprint(pages)
