"""Sign-in, sign-out, the language menu and the desk's home. Each area's pages live in its own
``pages.py``; this module only holds what belongs to no area."""

from __future__ import annotations

from dataclasses import asdict
from urllib.parse import urlsplit

from flask import Blueprint, Response, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from flask_login import login_user, logout_user

from blueprints.desk.i18n import LANGUAGES
from blueprints.desk.security import DeskUser, limiter, protect_pages, signed_in
from blueprints.members.services.desk import desk_identity
from blueprints.members.services.users import authenticate

pages = Blueprint("desk", __name__)
protect_pages(pages)

# Failed attempts only: 10 a minute for one account (whoever tries it), 30 a minute from one address.
_ACCOUNT_LIMIT = "10 per minute"
_SOURCE_LIMIT = "30 per minute"


def _failed(response: Response) -> bool:
    return response.status_code != 302


def _account_key() -> str:
    return "account:" + (request.form.get("email") or "").strip().lower()


def _local_target(target: str | None) -> str | None:
    """Only a path of this site is a place to go back to after sign-in (no open redirect)."""
    if not target:
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return None
    return target


@pages.route("/signin", methods=["GET", "POST"])
@limiter.limit(_ACCOUNT_LIMIT, key_func=_account_key, methods=["POST"], deduct_when=_failed)
@limiter.limit(_SOURCE_LIMIT, methods=["POST"], deduct_when=_failed)
def signin() -> Response | str | tuple[str, int]:
    error = None
    email = ""
    if request.method == "POST":
        email = (request.form.get("email") or "").strip()
        user = authenticate(email, request.form.get("password") or "")
        identity = desk_identity(user.id) if user is not None else None
        if identity is not None:
            login_user(DeskUser(**asdict(identity)), remember=request.form.get("remember") == "on")
            return redirect(_local_target(request.args.get("next")) or url_for("desk.home"))
        error = _("Wrong e-mail or password.")
    status = 401 if error else 200
    return render_template("desk/signin.html", error=error, email=email), status


@pages.post("/signout")
def signout() -> Response:
    logout_user()
    return redirect(url_for("desk.signin"))


@pages.post("/language")
def choose_language() -> Response:
    chosen = request.form.get("language")
    if chosen in LANGUAGES:
        session["locale"] = chosen
    return redirect(_local_target(request.form.get("back")) or url_for("desk.home"))


@pages.get("/desk")
def home() -> str:
    return render_template("desk/home.html", me=signed_in())
