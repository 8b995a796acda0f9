"""Who is signed in to the desk, and the protections every page shares.

- Sessions: Flask-Login over the members area's users (Argon2id hashes, as ``users create`` stores them).
  Each environment has its own cookies (``/`` live, ``/sandbox`` sandbox), so signing in to one never
  signs out of the other. Cookies are ``HttpOnly`` and ``SameSite=Lax``, ``Secure`` behind TLS
  (``DESK_SECURE_COOKIES``). Each sign-in has a server-side record (``desk_sign_ins``) named by the
  session and the "remember me" cookie: signing out ends it, so a copy of either cookie is refused
  afterwards; it expires after ``DESK_REMEMBER_DAYS`` (remembered) or a day (not remembered). Sessions
  also carry the user's sign-in generation: deactivation, a password change and "sign out everywhere"
  end them all (:func:`identity_of_session`).
- CSRF: every unsafe request of a page blueprint needs the session's token, from the form field
  ``csrf_token`` or the ``X-CSRFToken`` header that htmx sends (``templates/base.html``). The JSON API
  authenticates with keys, never with cookies, so it is not checked.
- Brute force: failed sign-ins are limited per account and per source address (Flask-Limiter; memory,
  or Redis when ``REDIS_URL`` is set, so all processes share the count).
- Roles: ``agent`` and ``supervisor``; :func:`require_role` refuses with 403 whatever the page shows.
- A password someone else chose (``users.must_change_password``): every page but the change-password
  page, the language menu and sign-out sends the user to change it first, and the desk's Socket.IO
  refuses the session until then (blueprints/shell/realtime.py).
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from flask import Blueprint, Flask, Response, abort, current_app, make_response, redirect, request, url_for
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager, UserMixin, current_user
from flask_wtf.csrf import CSRFProtect

from blueprints.members.services.desk import DeskIdentity, desk_identity
from core.browser_headers import secure_cookies_enabled

csrf = CSRFProtect()


# How long "remember me" keeps a browser signed in: the cookie's lifetime and the sign-in record's.
DEFAULT_REMEMBER_DAYS = 30
# A sign-in without "remember me" ends with the browser, but browsers that restore their tabs keep
# session cookies for weeks, and a copied session cookie works until the record expires. A day covers any
# shift (the desk stays open all day) while a session forgotten on a shared computer, or a copy of its
# cookie, is dead by the next day.
UNREMEMBERED_SIGN_IN = timedelta(hours=24)


@dataclass(frozen=True)
class DeskUser(DeskIdentity, UserMixin):
    """The signed-in person as the pages see them: the user, their human member and organization."""

    def get_id(self) -> str:
        # Flask-Login keeps this in the session and signs it into the "remember me" cookie, so both name
        # the sign-in record (ended by signing out) and the user's sign-in generation (bumped when all
        # their sessions end).
        return f"{self.user_id}:{self.session_version}:{self.sign_in_id}"

    @property
    def is_supervisor(self) -> bool:
        return self.role == "supervisor"


def identity_of_session(session_user_id: str) -> DeskIdentity | None:
    """The active user a session (or remember cookie) names, while its sign-in is open (not signed out,
    not expired) and its generation is still the user's: deactivating a user, changing the password and
    "sign out everywhere" bump it (members' ``end_sessions``). One query. Used by the page loader and by
    the desk's Socket.IO connect handler (blueprints/shell/realtime.py).

    Ids from before sign-in records (``<user>`` or ``<user>:<version>``) name no sign-in and are
    refused: those browsers sign in once more."""
    parts = session_user_id.split(":")
    if len(parts) != 3:
        return None
    try:
        user_id, version, sign_in_id = uuid.UUID(parts[0]), int(parts[1]), uuid.UUID(parts[2])
    except ValueError:
        return None
    identity = desk_identity(user_id, sign_in_id)
    if identity is None or identity.session_version != version:
        return None
    return identity


def _load_user(session_user_id: str) -> DeskUser | None:
    identity = identity_of_session(session_user_id)
    return DeskUser(**asdict(identity)) if identity else None


def remember_days(app: Flask) -> int:
    """``DESK_REMEMBER_DAYS`` from the configuration or the process environment (default 30)."""
    configured = app.config.get("DESK_REMEMBER_DAYS")
    if configured is None:
        configured = os.environ.get("DESK_REMEMBER_DAYS") or DEFAULT_REMEMBER_DAYS
    days = int(configured)
    if days < 1:
        raise ValueError(f"DESK_REMEMBER_DAYS must be at least 1, not {configured!r}")
    return days


def sign_in_lifetime(remember: bool) -> timedelta:
    """How long a new sign-in stays valid on the server: as long as its remember cookie, or a day."""
    if remember:
        return timedelta(days=current_app.config["DESK_REMEMBER_DAYS"])
    return UNREMEMBERED_SIGN_IN


def signed_in() -> DeskUser:
    user = current_user._get_current_object()  # type: ignore[attr-defined]
    if not getattr(user, "is_authenticated", False):
        abort(401)
    return user  # type: ignore[no-any-return]


def require_role(role: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorator(view: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if signed_in().role != role:
                abort(403)
            return view(*args, **kwargs)

        return guarded

    return decorator


# The blueprints protect_pages guards: tests/browser/test_page_security.py fails when a page blueprint is
# missing here, then checks CSRF on every unsafe route of each.
PROTECTED_BLUEPRINTS: set[str] = set()


def protect_pages(blueprint: Blueprint) -> None:
    """Every page of ``blueprint`` needs a signed-in user (sign-in page otherwise) and, for unsafe
    methods, the CSRF token."""
    PROTECTED_BLUEPRINTS.add(blueprint.name)

    @blueprint.before_request
    def _require_user() -> Any:
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            csrf.protect()
        if request.endpoint in _PUBLIC_ENDPOINTS:
            return None
        if not current_user.is_authenticated:
            return current_app.login_manager.unauthorized()  # type: ignore[attr-defined]
        if current_user.must_change_password and request.endpoint not in _WHILE_PASSWORD_MUST_CHANGE:
            return _to_password_change()
        return None


_PUBLIC_ENDPOINTS = {"desk.signin", "desk.static_asset"}
# What a user whose password was chosen by someone else may reach before changing it.
_WHILE_PASSWORD_MUST_CHANGE = {"desk.change_password", "desk.signout", "desk.choose_language"}


def _to_password_change() -> Response:
    """Every other page sends the user to change their password first (htmx follows HX-Redirect)."""
    target = url_for("desk.change_password")
    if request.headers.get("HX-Request") == "true":
        response = make_response("", 204)
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target)


limiter = Limiter(key_func=get_remote_address, default_limits=[], headers_enabled=True)


def init_app(app: Flask) -> None:
    environment = app.config["AGENTDESK_ENV"]
    # Both environments' cookies cover the whole site (the one Socket.IO endpoint at /socket.io must see
    # them); their names keep the two sessions apart.
    path = "/"
    # DESK_SECURE_COOKIES (configuration or environment) says the desk is served over TLS.
    secure = secure_cookies_enabled(app)
    days = remember_days(app)
    app.config.update(
        DESK_REMEMBER_DAYS=days,
        SESSION_COOKIE_NAME=f"agentdesk_{environment}",
        SESSION_COOKIE_PATH=path,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure,
        REMEMBER_COOKIE_NAME=f"agentdesk_{environment}_remember",
        REMEMBER_COOKIE_PATH=path,
        REMEMBER_COOKIE_HTTPONLY=True,
        REMEMBER_COOKIE_SAMESITE="Lax",
        REMEMBER_COOKIE_SECURE=secure,
        # The sign-in record expires at the same time (sign_in_lifetime), so a kept cookie gains nothing.
        REMEMBER_COOKIE_DURATION=timedelta(days=days),
        # Pages check CSRF in their own before_request; the key-authenticated JSON API is not cookie-based.
        WTF_CSRF_CHECK_DEFAULT=False,
        WTF_CSRF_TIME_LIMIT=None,  # the token lives as long as the session (a desk stays open all day)
        RATELIMIT_STORAGE_URI=app.config.get("RATELIMIT_STORAGE_URI")
        or app.config.get("REDIS_URL")
        or "memory://",
        RATELIMIT_KEY_PREFIX=f"agentdesk-{environment}",
    )
    login = LoginManager(app)
    login.login_view = "desk.signin"
    login.login_message = None  # the sign-in page needs no flash to say what it is for
    login.session_protection = "basic"
    login.user_loader(_load_user)
    csrf.init_app(app)
    limiter.init_app(app)
