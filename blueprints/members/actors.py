"""Who is making a change, as written into the status history and configuration versions."""

from __future__ import annotations

from blueprints.organizations.models import ApiKey
from core import auth
from core.db import db


def current_actor() -> str:
    """``api_key:sk_live_ab12cd34`` (the key's shown prefix) or ``member:<id>`` for a JWT subject."""
    principal = auth.current_principal()
    if principal.kind == "jwt":
        return f"member:{principal.subject}"
    key = db.session.get(ApiKey, principal.key_id) if principal.key_id else None  # already in the session
    return f"api_key:{key.prefix}" if key else "api_key"
