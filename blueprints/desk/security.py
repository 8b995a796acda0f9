"""Who is signed in to the desk, and the protections every page shares.

- Sessions: Flask-Login over the members area's users (Argon2id hashes, as ``users create`` stores them).
  Each environment has its own cookies (``/`` live, ``/sandbox`` sandbox), so signing in to one never
  signs out of the other. Cookies are ``HttpOnly`` and ``SameSite=Lax``, ``Secure`` behind TLS
  (``DESK_SECURE_COOKIES``). Sessions carry the user's sign-in generation: deactivation and a password
  change end them (:func:`identity_of_session`).
- CSRF: every unsafe request of a page blueprint needs the session's token, from the form field
  ``csrf_token`` or the ``X-CSRFToken`` header that htmx sends (``templates/base.html``). The JSON API
  authenticates with keys, never with cookies, so it is not checked.
- Brute force: failed sign-ins are limited per account and per source address (Flask-Limiter; memory,
  or Redis when ``REDIS_URL`` is set, so all processes share the count).
- Roles: ``agent`` and ``supervisor``; :func:`require_role` refuses with 403 whatever the page shows.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from flask import Blueprint, Flask, abort, current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager, UserMixin, current_user
from flask_wtf.csrf import CSRFProtect

from blueprints.members.services.desk import DeskIdentity, desk_identity
from core.browser_headers import secure_cookies_enabled

csrf = CSRFProtect()


@dataclass(frozen=True)
class DeskUser(DeskIdentity, UserMixin):
    """The signed-in person as the pages see them: the user, their human member and organization."""

    def get_id(self) -> str:
        # Flask-Login keeps this in the session and signs it into the "remember me" cookie, so both
        # carry the user's sign-in generation and stop working once it is bumped.
        return f"{self.user_id}:{self.session_version}"

    @property
    def is_supervisor(self) -> bool:
        return self.role == "supervisor"


def identity_of_session(session_user_id: str) -> DeskIdentity | None:
    """The active user a session (or remember cookie) names, when its sign-in generation is still the
    user's: deactivating a user or changing the password bumps it (members' ``end_sessions``), which
    ends every page session, remember cookie and Socket.IO connection made before. Used by the page
    loader and by the desk's Socket.IO connect handler (blueprints/desk/realtime.py)."""
    raw_id, _, raw_version = session_user_id.partition(":")
    try:
        user_id = uuid.UUID(raw_id)
        # A session from before generations existed names only the user: generation 1, the first.
        version = int(raw_version) if raw_version else 1
    except ValueError:
        return None
    identity = desk_identity(user_id)
    if identity is None or identity.session_version != version:
        return None
    return identity


def _load_user(session_user_id: str) -> DeskUser | None:
    identity = identity_of_session(session_user_id)
    return DeskUser(**asdict(identity)) if identity else None


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
        return None


_PUBLIC_ENDPOINTS = {"desk.signin", "desk.static_asset"}


limiter = Limiter(key_func=get_remote_address, default_limits=[], headers_enabled=True)


def init_app(app: Flask) -> None:
    environment = app.config["AGENTDESK_ENV"]
    # Both environments' cookies cover the whole site (the one Socket.IO endpoint at /socket.io must see
    # them); their names keep the two sessions apart.
    path = "/"
    # DESK_SECURE_COOKIES (configuration or environment) says the desk is served over TLS.
    secure = secure_cookies_enabled(app)
    app.config.update(
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
