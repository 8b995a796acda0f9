"""The demo data: one idempotent command, ``flask --app app demo seed``, to which each area adds a part.

An area registers a seeder with :func:`seeder`; seeders run in ``order`` inside each environment's
application context and must be idempotent (look up before creating). A seeder may return lines to
print (logins, keys) for the person running the command.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from flask import current_app

DEMO_ORGANIZATION_ID = uuid.UUID("5f0c6f7e-2d1b-4a8e-9c3d-0a1b2c3d4e5f")
DEMO_ORGANIZATION_NAME = "Demo Company"


@dataclass(frozen=True)
class Seeder:
    order: int
    name: str
    run: Callable[[str], list[str] | None]


_seeders: list[Seeder] = []


def seeder(order: int, name: str) -> Callable[[Callable[[str], list[str] | None]], Callable[..., object]]:
    """Register ``fn(environment) -> lines to print`` as part of the demo data."""

    def decorator(fn: Callable[[str], list[str] | None]) -> Callable[[str], list[str] | None]:
        if all(s.name != name for s in _seeders):
            _seeders.append(Seeder(order, name, fn))
        return fn

    return decorator


def seeders() -> list[Seeder]:
    return sorted(_seeders, key=lambda s: s.order)


def derived_secret(purpose: str, length: int = 40) -> str:
    """A stable secret for demo credentials, derived from SECRET_KEY so it differs per installation."""
    digest = hmac.new(current_app.config["SECRET_KEY"].encode(), purpose.encode(), hashlib.sha256).digest()
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    number = int.from_bytes(digest + hashlib.sha256(digest).digest(), "big")
    chars = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        chars.append(alphabet[index])
    return "".join(chars)
