"""Canned responses: an organization's saved replies, found by ``short_code`` while typing.

Modelled on Chatwoot's canned responses (a short code and a content, the agent types ``/`` to pick one)
with an optional title as in Intercom's and Zendesk's macros. ``short_code`` is unique per organization
(409 on a second one, also when two requests race: the unique constraint decides, inside a SAVEPOINT).

Variables: a content may say ``{{contact.first_name}}`` or ``{{contact.name}}``; :func:`fill_variables`
puts the contact's name in when the desk inserts the reply. Without a known name the placeholder is left
as it is, so the agent sees it in the composer and completes it instead of sending an odd blank.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import case, func, or_, select
from sqlalchemy.exc import IntegrityError

from blueprints.audit import services as audit_log
from blueprints.messaging.models import CannedResponse
from core.db import db, utcnow
from core.errors import ApiError
from core.pagination import Page, paginate
from core.tenancy import find_for_org
from core.text import LIKE_ESCAPE, contains_pattern, prefix_pattern

NOT_FOUND = "Canned response not found"
VARIABLE = re.compile(r"\{\{\s*contact\.(first_name|name)\s*\}\}")
SUGGESTIONS = 8  # what the composer's list shows at most
AUDITED = ("short_code", "title", "content")  # the fields whose before and after the audit log keeps


def _taken(short_code: str) -> ApiError:
    return ApiError(
        409,
        f"short_code: a canned response /{short_code} already exists",
        code="short_code_taken",
        param="short_code",
    )


@contextmanager
def _unique(short_code: str) -> Iterator[None]:
    """The statements inside are flushed in a SAVEPOINT; a second ``short_code`` of the organization
    (one that a concurrent request committed first included) is a 409, not a 500."""
    try:
        with db.session.begin_nested():
            yield
            db.session.flush()
    except IntegrityError:
        raise _taken(short_code) from None


def _code_taken(organization_id: uuid.UUID, short_code: str, exclude: uuid.UUID | None = None) -> bool:
    statement = select(CannedResponse.id).where(
        CannedResponse.organization_id == organization_id, CannedResponse.short_code == short_code
    )
    if exclude is not None:
        statement = statement.where(CannedResponse.id != exclude)
    return db.session.scalar(statement) is not None


def get_canned_response(organization_id: uuid.UUID, canned_response_id: str) -> CannedResponse:
    found = find_for_org(CannedResponse, canned_response_id, organization_id)
    if found is None:
        raise ApiError(404, NOT_FOUND)
    return found


def list_canned_responses(
    organization_id: uuid.UUID, *, q: str | None = None, skip: int = 0, take: int = 20
) -> Page[CannedResponse]:
    """The catalogue, by short code; ``q`` matches short code, title or content (case-insensitive,
    wildcards literal), short codes that start with ``q`` first: what the agent is typing."""
    statement = select(CannedResponse).where(CannedResponse.organization_id == organization_id)
    order = [CannedResponse.short_code, CannedResponse.id]
    text = (q or "").strip().lower()
    if text:
        pattern = contains_pattern(text)
        statement = statement.where(
            or_(
                func.lower(CannedResponse.short_code).like(pattern, escape=LIKE_ESCAPE),
                func.lower(CannedResponse.title).like(pattern, escape=LIKE_ESCAPE),
                func.lower(CannedResponse.content).like(pattern, escape=LIKE_ESCAPE),
            )
        )
        starts = CannedResponse.short_code.like(prefix_pattern(text), escape=LIKE_ESCAPE)
        order = [case((starts, 0), else_=1), *order]
    return paginate(statement.order_by(*order), offset=skip, limit=take)


def suggest_canned_responses(organization_id: uuid.UUID, typed: str) -> list[CannedResponse]:
    """What the composer offers after ``/<typed>``: at most :data:`SUGGESTIONS`, best first."""
    return list_canned_responses(organization_id, q=typed, take=SUGGESTIONS).items


def create_canned_response(
    organization_id: uuid.UUID, *, short_code: str, content: str, title: str | None = None
) -> CannedResponse:
    if _code_taken(organization_id, short_code):
        raise _taken(short_code)
    canned = CannedResponse(
        id=uuid.uuid4(), organization_id=organization_id, short_code=short_code, content=content, title=title
    )
    with _unique(short_code):
        db.session.add(canned)
    audit_log.record(
        "canned_response.created",
        "canned_response",
        canned.id,
        organization_id=organization_id,
        before_after={"short_code": (None, short_code), "title": (None, title), "content": (None, content)},
    )
    return canned


def update_canned_response(
    organization_id: uuid.UUID, canned_response_id: str, **changes: str | None
) -> CannedResponse:
    """Change the fields given (``short_code``, ``content``, ``title``; ``title=None`` clears it)."""
    canned = get_canned_response(organization_id, canned_response_id)
    before = {name: getattr(canned, name) for name in AUDITED}
    short_code = changes.get("short_code")
    if short_code and short_code != canned.short_code and _code_taken(organization_id, short_code, canned.id):
        raise _taken(short_code)
    with _unique(short_code or canned.short_code):
        for name in ("short_code", "content", "title"):
            if name in changes and (name == "title" or changes[name] is not None):
                setattr(canned, name, changes[name])
        canned.updated_at = utcnow()
    changed = {
        name: (old, getattr(canned, name)) for name, old in before.items() if getattr(canned, name) != old
    }
    if changed:  # a save that changes nothing records nothing
        audit_log.record(
            "canned_response.updated",
            "canned_response",
            canned.id,
            organization_id=organization_id,
            before_after=changed,
        )
    return canned


def delete_canned_response(organization_id: uuid.UUID, canned_response_id: str) -> None:
    canned = get_canned_response(organization_id, canned_response_id)
    db.session.delete(canned)
    db.session.flush()
    audit_log.record(
        "canned_response.deleted",
        "canned_response",
        canned_response_id,
        organization_id=organization_id,
        before_after={"short_code": (canned.short_code, None)},
    )


def first_name(name: str | None) -> str | None:
    words = (name or "").split()
    return words[0] if words else None


def fill_variables(content: str, contact_name: str | None) -> str:
    """``content`` with ``{{contact.first_name}}`` / ``{{contact.name}}`` replaced by the contact's
    name; placeholders stay when the name is not known."""
    name = (contact_name or "").strip()
    if not name:
        return content

    def value(match: re.Match[str]) -> str:
        return (first_name(name) or "") if match.group(1) == "first_name" else name

    return VARIABLE.sub(value, content)
