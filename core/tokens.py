"""Signed JWTs for callers that act for a person (a member or a login user) rather than a partner key.

HS256 with the service's ``SECRET_KEY``. Claims: ``sub`` (member or user id), ``org`` (organization id),
``env`` (live or sandbox), ``iss``, ``aud``, ``iat``, ``exp`` and a unique ``jti``.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import jwt

from core.db import utcnow

ISSUER = "agent-desk"
AUDIENCE = "agent-desk-api"
ALGORITHM = "HS256"


class InvalidToken(Exception):
    pass


def issue_token(
    secret: str, *, organization_id: uuid.UUID, subject: str, environment: str, ttl_seconds: int
) -> str:
    now = utcnow()
    claims = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": subject,
        "org": str(organization_id),
        "env": environment,
        "iat": now,
        "exp": now + timedelta(seconds=ttl_seconds),
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def decode_token(secret: str, token: str, *, environment: str) -> dict[str, Any]:
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=ISSUER,
            options={"require": ["exp", "iat", "sub", "org", "env"]},
        )
    except jwt.PyJWTError as exc:
        raise InvalidToken(str(exc)) from exc
    if claims.get("env") != environment:
        raise InvalidToken("token issued for another environment")
    try:
        claims["org"] = uuid.UUID(str(claims["org"]))
    except ValueError as exc:
        raise InvalidToken("malformed organization claim") from exc
    return claims
