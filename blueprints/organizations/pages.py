"""The supervisors' API keys page (``/settings/keys``): the organization's keys, a new key shown once, and
revocation after a confirmation. Agents get the designed 403 on every URL, whatever the page shows.

| URL | What |
|---|---|
| ``GET /settings/keys`` | this environment's keys (prefix, name, environment, created, last use, state) |
| ``POST /settings/keys`` (``name``) | a new key: the list again with the key shown once and a copy button |
| ``GET /settings/keys/<id>/revoke`` | the row asking "Revoke?" (a confirmation in place, no script) |
| ``GET /settings/keys/<id>`` | the row as it is (the confirmation's "Cancel") |
| ``POST /settings/keys/<id>/revoke`` | revoke (``revoke_api_key``): the row again, revoked |

Each environment keeps its own keys in its own store (docs/architecture.md, "Environments"), so the page
manages the keys of the environment it is served in: ``/settings/keys`` the live keys,
``/sandbox/settings/keys`` the sandbox ones, each linking to the other. A page never writes to two stores
in one request. The verbs are the organizations area's (``issue_api_key``, ``revoke_api_key``), the same
as the ``keys`` commands, so both are in the audit log with the desk user as actor.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, make_response, render_template, request, url_for
from flask_babel import lazy_gettext

from blueprints.desk.errors import refuse_with_alerts, register_refusals
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import protect_pages, require_role, signed_in
from blueprints.organizations import services
from blueprints.organizations.models import ApiKey
from core.db import utcnow
from core.environments import KEY_PREFIXES, LIVE, SANDBOX, current_environment
from core.errors import ApiError

pages = Blueprint("organizations_pages", __name__)
protect_pages(pages)
refuse_with_alerts(pages)

register_refusals({"api_key_not_found": lazy_gettext("This key is not here any more.")})
# The words for a refused field, by the verb's code (the rule itself is the service's).
FIELD_REFUSALS = {"name_too_long": lazy_gettext("At most %(limit)s characters.")}


def key_state(key: ApiKey) -> str:
    """``active``, ``revoked`` or ``expired``, as authentication would judge the key now."""
    if not key.active:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= utcnow():
        return "expired"
    return "active"


def _other_environment_url(environment: str) -> str:
    """The same page in the other environment: the sandbox app is mounted at ``/sandbox`` (its script
    root), the live one at the root."""
    path = url_for("organizations_pages.keys_page")
    if environment == LIVE:
        return f"{current_app.config['SANDBOX_PREFIX']}{path}"
    return path.removeprefix(request.script_root)


def _context(**extra: Any) -> dict[str, Any]:
    me = signed_in()
    environment = current_environment()
    keys = services.list_keys(me.organization_id)
    return {
        "me": me,
        # newest first: the key just made is at the top, next to the panel that shows it
        "keys": sorted(keys, key=lambda key: key.created_at, reverse=True),
        "key_state": key_state,
        "environment": environment,
        "other_environment": SANDBOX if environment == LIVE else LIVE,
        "other_url": _other_environment_url(environment),
        "key_prefix": KEY_PREFIXES[environment],
        "name_limit": services.KEY_NAME_MAX,
        "errors": {},
        "values": {},
        "issued": None,
        **extra,
    }


def _render(template: str, status: int = 200, **context: Any) -> Response:
    return vary_fragment(make_response(render_template(template, **context), status))


def _wants_pane() -> bool:
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
        and request.headers.get("HX-Target") == "keys-pane"
    )


@pages.get("/settings/keys")
@require_role("supervisor")
def keys_page() -> Response:
    context = _context()
    return _render("organizations/_keys_pane.html" if _wants_pane() else "organizations/keys.html", **context)


@pages.post("/settings/keys")
@require_role("supervisor")
def create_key() -> Response:
    me = signed_in()
    name = request.form.get("name") or ""
    organization = services.get_organization(me.organization_id)
    if organization is None:  # the signed-in user's organization always exists in its store
        raise ApiError(404, "organization not found")
    try:
        issued = services.issue_api_key(organization, current_environment(), name=name)
    except ApiError as refusal:
        if refusal.param != "name":
            raise
        words = FIELD_REFUSALS.get(refusal.code or "")
        message = str(words) % {"limit": services.KEY_NAME_MAX} if words else refusal.message
        return _render(
            "organizations/_keys_pane.html", 422, **_context(errors={"name": message}, values={"name": name})
        )
    # The plaintext is in this one response only (never stored, never logged): no-store keeps it out of
    # every cache, and the panel says so.
    return _render("organizations/_keys_pane.html", **_context(issued=issued))


def _row(key: ApiKey, *, confirm: bool = False) -> Response:
    return _render(
        "organizations/_key_row.html",
        key=key,
        key_state=key_state,
        confirm=confirm,
        environment=current_environment(),
    )


@pages.get("/settings/keys/<key_id>")
@require_role("supervisor")
def key_row(key_id: str) -> Response:
    return _row(services.get_api_key(signed_in().organization_id, key_id))


@pages.get("/settings/keys/<key_id>/revoke")
@require_role("supervisor")
def confirm_revoke(key_id: str) -> Response:
    return _row(services.get_api_key(signed_in().organization_id, key_id), confirm=True)


@pages.post("/settings/keys/<key_id>/revoke")
@require_role("supervisor")
def revoke_key(key_id: str) -> Response:
    key = services.revoke_api_key(signed_in().organization_id, key_id)
    return _row(key)
