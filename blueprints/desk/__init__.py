"""The desk kit: what every area's pages share, and nothing that depends on an area's pages.

- ``security``: sign-in sessions (Flask-Login over the members area's users), CSRF on every form and HTMX
  request (Flask-WTF), the brute-force limit on sign-in (Flask-Limiter), roles;
- ``errors``: the designed 403 and 404 pages and the refusal fragments of a page (a verb's ``ApiError``
  shown where the person looks, translated by its code);
- ``fragments``: the HTMX fragment response and the conversation-or-404 of a page;
- ``formats``, ``i18n``: dates, numbers and money in the user's language and the organization's zone;
- ``memo``: per-request memoisation of the shell's reads.

Each area serves its pages from its ``pages.py`` (templates under ``templates/<area>/``) calling the same
services as its ``api.py``; the frame around them is ``blueprints/shell``. See docs/desk.md.
"""

from __future__ import annotations

from flask import Flask

from blueprints.desk import errors, i18n, security


def init_app(app: Flask) -> None:
    security.init_app(app)
    i18n.init_app(app)
    errors.init_app(app)
