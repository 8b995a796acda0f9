"""The desk's shell: the frame around every area's pages (sign-in and sign-out, the desk's home, the
navigation, the language menu, the member's presence and the teammates' dots) and the desk's Socket.IO
sign-in. It sits on the areas' pages; the kit they all use is ``blueprints/desk``. See docs/desk.md.
"""

from __future__ import annotations

from flask import Flask


def init_app(app: Flask) -> None:
    # Imported when the app is built, not when a module of the package is: the shell's pages import every
    # area's pages. Its Socket.IO authentication is connected in blueprints/integrations.
    from blueprints.shell.pages import pages

    app.register_blueprint(pages)
