"""Security headers that tell the browser what a response may do (docs/browser-security.md).

Three policies, chosen per response so that a new page, fragment or API route is covered without a list
to keep up to date:

- **desk**: every HTML answer (pages, HTMX fragments, redirects) and every static file. Scripts only from
  this origin (``static/desk.js`` and ``static/vendor``; no inline script, no eval), styles only from this
  origin (the templates carry no ``style=`` attribute and htmx is told not to inject its indicator CSS),
  images from this origin, ``data:`` (the favicon) and ``https:`` (customers' photos live on the
  providers' media hosts), fetches and the Socket.IO connection only to this origin.
- **docs**: the Swagger UI page of flask-openapi3 (``/docs``), which carries one inline script of its
  own; that script is allowed by its SHA-256 hash, computed from the body, so nothing else inline runs.
- **api**: everything else (JSON, CSV, plain text): ``default-src 'none'``. A browser that is tricked into
  rendering an API answer loads nothing and runs nothing.

Every answer also gets ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY`` (no clickjacking), a
referrer policy that sends nothing to other sites (``same-origin``: desk URLs carry conversation
ids), a Permissions-Policy that switches off the
powerful features the desk never uses, and, behind TLS, ``Strict-Transport-Security``.
``X-Content-Type-Options: nosniff`` is set by ``core.errors`` for every response.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

from flask import Flask, Response, current_app, request

# Browsers may only be told to use the origin the page came from; a Host header with anything but
# host characters is not copied into a header (it could add directives).
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)

API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

PERMISSIONS_POLICY = (
    "accelerometer=(), autoplay=(), camera=(), display-capture=(), geolocation=(), gyroscope=(), "
    "magnetometer=(), microphone=(), midi=(), payment=(), usb=(), serial=(), xr-spatial-tracking=()"
)

# One year, as HSTS preload lists expect; only ever sent over TLS (see _behind_tls).
HSTS = "max-age=31536000; includeSubDomains"

_TRUE = ("1", "true", "yes", "on")


def secure_cookies_enabled(app: Flask) -> bool:
    """Whether the operator says the desk is served over TLS (``DESK_SECURE_COOKIES``, from the app's
    configuration or the process environment)."""
    configured = app.config.get("DESK_SECURE_COOKIES")
    if configured is None:
        configured = os.environ.get("DESK_SECURE_COOKIES", "")
    if isinstance(configured, str):
        return configured.strip().lower() in _TRUE
    return bool(configured)


def _socket_origins() -> str:
    # CSP level 3 lets 'self' match ws:/wss: of the same host, but older engines do not: name them.
    host = request.host
    if not _HOST.match(host):
        return ""
    return f" ws://{host} wss://{host}"


def desk_policy() -> str:
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data: https:",
            "font-src 'self'",
            "connect-src 'self'" + _socket_origins(),
            "media-src 'self' https:",
            "object-src 'none'",
            "frame-src 'none'",
            "worker-src 'none'",
            "manifest-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'self'",
            "form-action 'self'",
        )
    )


def docs_policy(body: bytes) -> str:
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(script).digest()).decode() + "'"
        for script in _INLINE_SCRIPT.findall(body)
    )
    return "; ".join(
        (
            "default-src 'self'",
            f"script-src 'self' {hashes}".rstrip(),
            # Swagger UI styles itself with inline <style> and style attributes; it shows no user data.
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "frame-ancestors 'none'",
            "base-uri 'self'",
            "form-action 'self'",
        )
    )


def _is_docs() -> bool:
    return (request.endpoint or "").startswith("swagger.") or request.path.rstrip("/").endswith("/docs")


def _behind_tls() -> bool:
    return request.is_secure or secure_cookies_enabled(current_app)


def add_security_headers(response: Response) -> Response:
    if request.endpoint == "static" or (response.mimetype == "text/html" and not _is_docs()):
        policy = desk_policy()
    elif _is_docs() and response.mimetype == "text/html" and not response.direct_passthrough:
        policy = docs_policy(response.get_data())
    else:
        policy = API_POLICY
    headers = response.headers
    headers.setdefault("Content-Security-Policy", policy)
    headers.setdefault("X-Frame-Options", "DENY")
    headers.setdefault("Referrer-Policy", "same-origin")
    headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
    headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    if _behind_tls():
        headers.setdefault("Strict-Transport-Security", HSTS)
    return response


def init_app(app: Flask) -> None:
    app.after_request(add_security_headers)
