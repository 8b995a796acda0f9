"""What a page's form shows when a verb or its request model says no: the refusal under its field, in the
page's language. The rule stays where it is (the request model, the service): a page only finds the field
the refusal names and words it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from flask_babel import gettext as _
from pydantic import ValidationError

from blueprints.desk.errors import refusal_message
from core.errors import ApiError


def field_errors(error: ValidationError, fields: Mapping[str, str]) -> dict[str, str]:
    """The request model's refusals in the page's words, by form field (``fields``: the model's field
    name -> the form's; one not listed is ``body``)."""
    found: dict[str, str] = {}
    for item in error.errors(include_url=False):
        name = fields.get(str(item["loc"][0]) if item["loc"] else "", "body")
        context = item.get("ctx") or {}
        kind = item["type"]
        if kind == "string_too_short":
            message = _("Required.")
        elif kind == "string_too_long":
            message = _(
                "At most %(limit)s characters (this has %(count)s).",
                limit=f"{context.get('max_length', 0):,}",
                count=f"{len(str(item.get('input') or '')):,}",
            )
        else:
            message = _("This value is not valid.")
        found.setdefault(name, message)
    return found


def refusal_errors(error: ApiError, fields: Mapping[str, str]) -> dict[str, str] | None:
    """A service's refusal under the form field its ``param`` names (worded by its ``code``, see
    ``errors.register_refusals``), or None when it names no field of this form (an alert then)."""
    if error.param is None or error.param not in fields:
        return None
    return {fields[error.param]: refusal_message(error)}


T = TypeVar("T")


def attempt(call: Callable[[], T], fields: Mapping[str, str]) -> tuple[T | None, dict[str, str]]:
    """Run a form's verb: ``(its result, {})``, or ``(None, the refusals by form field)`` when the request
    model or the service refuses a field of ``fields`` (model or wire name -> the form's). A refusal that
    names no field of the form is raised: the page's alert, or its 404."""
    try:
        return call(), {}
    except ValidationError as error:
        return None, field_errors(error, fields)
    except ApiError as error:
        errors = refusal_errors(error, fields)
        if errors is None:
            raise
        return None, errors
