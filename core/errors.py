"""One error mechanism for the whole service; each area says only how its error body looks.

Views and services raise :class:`ApiError`. The handlers below pick the area from the request path and
render the body in that area's format (the spec gives CRM, messaging/members and telecom their own),
so the same rule ("the organization does not match") reads right in every area.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app, g, jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound

from core.db import db

log = logging.getLogger(__name__)

ROUTE_NOT_FOUND_BODY = {"error_msg": "404 Route Not Found"}


class ApiError(Exception):
    """An error a client should see: its status, a message naming what is wrong, and optional detail."""

    def __init__(
        self,
        status: int,
        message: str | None = None,
        *,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = headers or {}


def not_found(resource: str) -> ApiError:
    """404 with the CRM's message shape ``No <Resource> found``, readable in every area."""
    return ApiError(404, f"No {resource} found", code="resource_missing")


def status_name(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


@dataclass(frozen=True)
class ErrorFormat:
    """How one area writes its errors: default messages per status and the body's shape."""

    name: str
    render: Callable[[ApiError, str], dict[str, Any]]
    default_messages: dict[int, str] = field(default_factory=dict)

    def message_for(self, error: ApiError) -> str:
        return error.message or self.default_messages.get(error.status) or status_name(error.status)

    def body(self, error: ApiError) -> dict[str, Any]:
        return self.render(error, self.message_for(error))


def _crm_body(error: ApiError, message: str) -> dict[str, Any]:
    return {
        "statusCode": error.status,
        "error": {"message": message, "error": status_name(error.status), "statusCode": error.status},
    }


def _plain_body(error: ApiError, message: str) -> dict[str, Any]:
    return {"statusCode": error.status, "message": message}


TELECOM_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    424: "carrier_error",
}
TELECOM_CODES = {
    401: "api_key_invalid",
    403: "permission_denied",
    404: "resource_missing",
    429: "rate_limited",
    500: "internal_error",
}


def _telecom_body(error: ApiError, message: str) -> dict[str, Any]:
    return {
        "error": {
            "type": TELECOM_TYPES.get(error.status, "api_error"),
            "code": error.code or TELECOM_CODES.get(error.status, "invalid_request"),
            "message": message,
            "param": error.param,
            "request_id": getattr(g, "request_id", None),
        }
    }


ACCESS_DENIED = "You do not have access to this organization"

CRM = ErrorFormat(
    "crm",
    _crm_body,
    {401: "Invalid API key or JWT", 403: ACCESS_DENIED, 500: "Internal server error"},
)
MESSAGING = ErrorFormat(
    "messaging",
    _plain_body,
    {401: "Invalid or expired token", 403: ACCESS_DENIED, 500: "Internal server error"},
)
TELECOM = ErrorFormat(
    "telecom",
    _telecom_body,
    {
        401: "Invalid API key provided",
        403: "This organization has no access to this resource",
        500: "Internal server error",
    },
)

# Path prefix -> format, as the spec assigns them. Longest prefix wins. Paths outside every area (desk
# pages, docs) keep Flask's own error pages.
_FORMATS_BY_PREFIX: dict[str, ErrorFormat] = {
    "/v1/crm/": CRM,
    "/v2/messages/": MESSAGING,
    "/v1/members/": MESSAGING,
    "/v2/voice/": MESSAGING,
    "/v1/organizations": MESSAGING,
    "/v1/partner/": TELECOM,
    # Inbound provider webhooks (Meta): JSON errors like the messaging area they feed.
    "/webhooks/": MESSAGING,
}


def format_for_path(path: str) -> ErrorFormat | None:
    for prefix in sorted(_FORMATS_BY_PREFIX, key=len, reverse=True):
        if path == prefix.rstrip("/") or path.startswith(prefix):
            return _FORMATS_BY_PREFIX[prefix]
    return None


def error_response(error: ApiError) -> Response:
    error_format = format_for_path(request.path) or MESSAGING
    response = jsonify(error_format.body(error))
    response.status_code = error.status
    for name, value in error.headers.items():
        response.headers[name] = value
    return response


def route_not_found() -> Response:
    response = jsonify(ROUTE_NOT_FOUND_BODY)
    response.status_code = 404
    return response


def _handle_api_error(error: ApiError) -> Response:
    _rollback()
    return error_response(error)


PageRenderer = Callable[[int], Response | None]
_PAGES = "agentdesk.error_pages"


def render_pages_with(app: Flask, renderer: PageRenderer) -> None:
    """Let the desk answer a browser's 403/404 with a page of its own: ``renderer(status)`` returns the
    page, or None when the request is not a browser's page request (then the API's body stands)."""
    app.extensions[_PAGES] = renderer


def _page_for(status: int) -> Response | None:
    renderer = current_app.extensions.get(_PAGES)
    return renderer(status) if renderer is not None else None


def _handle_http_exception(error: HTTPException) -> Response | HTTPException:
    if (page := _page_for(error.code or 500)) is not None:
        return page
    # No rule matched the path, or the path exists without this method: the route is not published.
    if request.url_rule is None and isinstance(error, NotFound | MethodNotAllowed):
        return route_not_found()
    if format_for_path(request.path) is None:
        return error
    return error_response(ApiError(error.code or 500, error.description if error.code != 404 else None))


def _handle_unexpected(error: Exception) -> Response:
    if _lost_database_connection(error):
        # The database closed this connection under the request (a restart, pg_terminate_backend, a
        # failover) after the pool handed it out. SQLAlchemy has already invalidated the pool, so the
        # next request gets a fresh connection: a retryable 503, not a 500. Nothing was committed.
        log.warning("database connection lost on %s %s: %s", request.method, request.path, error)
        _rollback()
        return error_response(
            ApiError(503, DATABASE_UNAVAILABLE, code="database_unavailable", headers={"Retry-After": "1"})
        )
    if _database_busy_or_unreachable(error):
        # Nothing this request wrote was committed, and the next attempt may well succeed: a retryable
        # 503 in the area's format, never a 500 (tests/reliability).
        log.warning("database unavailable on %s %s: %s", request.method, request.path, error)
        _rollback()
        return error_response(
            ApiError(503, DATABASE_BUSY, code="database_unavailable", headers={"Retry-After": "1"})
        )
    log.exception("unhandled error on %s %s", request.method, request.path)
    _rollback()
    return error_response(ApiError(500))


DATABASE_UNAVAILABLE = "The database connection was lost; retry the request"


def _lost_database_connection(error: BaseException) -> bool:
    from sqlalchemy.exc import DBAPIError

    return isinstance(error, DBAPIError) and bool(error.connection_invalidated)


DATABASE_BUSY = "The database is unavailable; retry the request"
_SQLITE_BUSY = ("database is locked", "database table is locked")


def _database_busy_or_unreachable(error: BaseException) -> bool:
    """Transient database conditions: no pooled connection free in time; PostgreSQL refusing or failing
    the connection (``ALLOW_CONNECTIONS false``, too many clients, shutting down) or a retryable conflict
    (psycopg's ``OperationalError`` family: serialization failure, deadlock, query canceled); SQLite's
    write lock still held after ``busy_timeout``. Programming errors (a missing table, bad SQL) are other
    classes, or other SQLite messages, and stay 500."""
    from sqlalchemy.exc import OperationalError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    if isinstance(error, PoolTimeout):  # every pooled connection busy for pool_timeout seconds
        return True
    if not isinstance(error, OperationalError):
        return False
    original = error.orig
    if type(original).__module__.startswith("sqlite3"):
        return str(original).startswith(_SQLITE_BUSY)
    try:
        import psycopg
    except ImportError:  # no PostgreSQL driver: the error came from another database
        return False
    return isinstance(original, psycopg.OperationalError)


def _rollback() -> None:
    try:
        db.session.rollback()
    except Exception:  # the session may be unusable; the request is failing anyway
        log.exception("rollback after error failed")


def _assign_request_id() -> None:
    g.request_id = request.headers.get("X-Request-Id") or f"req_{uuid.uuid4().hex[:24]}"


def _echo_request_id(response: Response) -> Response:
    if rid := getattr(g, "request_id", None):
        response.headers["X-Request-Id"] = rid
    # Browsers must take every answer for the type it declares (no sniffing JSON or uploads into HTML).
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    return response


def init_app(app: Flask) -> None:
    app.register_error_handler(ApiError, _handle_api_error)
    app.register_error_handler(HTTPException, _handle_http_exception)
    app.register_error_handler(Exception, _handle_unexpected)
    app.before_request(_assign_request_id)
    app.after_request(_echo_request_id)
