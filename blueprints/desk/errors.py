"""How the desk's pages say no: the designed 403 and 404 pages, and a verb's refusal shown where the
person looks. One copy for every area's pages (they used to carry one each).

- A refusal (``ApiError`` from a service) inside a page request rolls the unit of work back and answers
  422 with an alert fragment; an htmx request gets it retargeted to the page's ``#desk-alerts``. Its text
  is the translation registered for its ``code`` (:func:`register_refusals`, by each area's pages), else
  the service's own message.
- A browser that asks for a desk path that does not exist, or that it may not see, gets a page in the
  desk's style (``templates/desk/error.html``) instead of Werkzeug's bare text; API paths and clients
  that do not ask for HTML keep the API's JSON bodies (``core.errors``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Flask, Response, make_response, render_template, request
from flask_babel import gettext as _

from core import errors as api_errors
from core import uow
from core.errors import ApiError

_REFUSALS: dict[str, Any] = {}
# Paths that are never pages, whatever the client accepts.
_NOT_PAGES = (
    "/v1/",
    "/v2/",
    "/webhooks/",
    "/socket.io",
    "/openapi.json",
    "/docs",
    "/healthz",
    "/readyz",
    "/static/",
)


def register_refusals(messages: Mapping[str, Any]) -> None:
    """Translated messages (lazy strings) for refusal codes, shown instead of the service's English."""
    _REFUSALS.update(messages)


def refusal_message(error: ApiError) -> str:
    if error.code and error.code in _REFUSALS:
        return str(_REFUSALS[error.code])
    return error.message or _("That did not work.")


def alert(message: str, *, status: int = 422, kind: str = "danger") -> Response:
    """An alert for the page's alert area, keeping nothing of the request (the unit of work is rolled
    back: a refusal never half-writes)."""
    if kind == "danger":
        uow.rollback()
    response = make_response(render_template("desk/_alert.html", message=message, kind=kind), status)
    if request.headers.get("HX-Request") == "true":
        response.headers["HX-Retarget"] = "#desk-alerts"
        response.headers["HX-Reswap"] = "afterbegin"
    return response


def refused(error: ApiError, message: str | None = None) -> Response:
    """A verb's refusal as a page answers it. Not found and forbidden keep their status (a record of another
    organization is a 404, whatever the route: the designed page, or an alert for htmx), so a page never
    tells another organization's id from an unknown one; any other refusal is a 422 alert."""
    text = message or refusal_message(error)
    if error.status in (403, 404):
        uow.rollback()
        if request.headers.get("HX-Request") != "true" and (page := _error_page(error.status)) is not None:
            return page
        # htmx swaps a 403/404 into the alert area like a 422 (templates/base.html, responseHandling)
        return alert(text, status=error.status)
    return alert(text, status=422 if error.status < 500 else error.status)


def refuse_with_alerts(blueprint: Blueprint) -> None:
    """A refusal no form field explains, raised by any route of ``blueprint``: an alert (422), or the 404
    and 403 of :func:`refused`."""

    @blueprint.errorhandler(ApiError)
    def _refused(error: ApiError) -> Response:
        return refused(error)


def _wants_page() -> bool:
    if request.path.startswith(_NOT_PAGES) or "/v1/" in request.path or "/v2/" in request.path:
        return False
    accepted = request.accept_mimetypes
    return accepted.accept_html and accepted.quality("text/html") >= accepted.quality("application/json")


def _error_page(status: int) -> Response | None:
    """The designed page for ``status`` when a browser asked for a desk path, else None (the API's)."""
    if status not in (403, 404, 405) or not _wants_page():
        return None
    if request.headers.get("HX-Request") == "true":
        # a fragment's refusal: an alert, not a whole page inside the pane
        message = _("You do not have access to this.") if status == 403 else _("That is no longer here.")
        return alert(message, status=status)
    response = make_response(render_template("desk/error.html", status=404 if status == 405 else status))
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    api_errors.render_pages_with(app, _error_page)
