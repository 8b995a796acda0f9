"""What the agent studio says for each refusal of the agent configuration's rules and verbs
(``blueprints.members.agent_config``: ``docs/members.md``, "Where the rules live; refusal codes and field
paths"), in the page's language. The studio places a refusal under the field its ``param`` names and
words it by its ``code`` with :func:`message_for`, never by matching the API's English; a code without
words here shows the API's English message. ``detail`` carries the rule's numbers (``ge``, ``le``,
``max_length``), which the words quote in the page's number format.

The strings are marked with ``lazy_gettext`` (imported as ``_`` so that the catalogue check extracts
them): each is translated when a page renders it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from flask_babel import format_decimal
from flask_babel import lazy_gettext as _
from flask_babel.speaklater import LazyString

from blueprints.members.agent_config import CHAT_PARAMETERS
from core.errors import ApiError

_PARAMETERS = {parameter.name: parameter for parameter in CHAT_PARAMETERS}

MESSAGES: dict[str, LazyString] = {
    "value_required": _("Fill in this field."),
    "value_too_short": _("Fill in this field."),
    "value_too_long": _("Too long: up to %(max_length)s characters."),
    "too_many_items": _("Too many: up to %(max_length)s."),
    "value_out_of_range": _("Out of range: between %(ge)s and %(le)s."),
    "value_not_a_number": _("Write a number, such as 0.5."),
    "value_not_text": _("Write text in this field."),
    "value_not_a_boolean": _("Choose on or off."),
    "value_not_a_list": _("This value is not valid."),
    "value_not_an_object": _("This value is not valid."),
    "value_not_allowed": _("Choose an option from the list."),
    "value_malformed": _("This value does not have the expected form."),
    "value_invalid": _("This value is not valid."),
    "value_unstorable": _("Remove the control characters from this text."),
    "field_unknown": _("This setting does not exist."),
    "section_name_invalid": _("Name sections with letters, digits, _ and - (up to 64)."),
    "tool_unknown": _("This tool does not exist."),
    "trigger_unknown": _("This notification trigger does not exist."),
    "email_invalid": _("Address %(position)s of the list is not a valid e-mail address."),
    "phone_invalid": _(
        "Number %(position)s of the list is not a valid phone number (write its country code)."
    ),
    "webhook_refused": _("Write an https:// address of a public server."),
    "transfer_target_invalid": _("Write a phone number with its country code, or a member's id."),
    "transfer_target_unknown": _("No member of the organization has this id."),
    "not_an_ai_agent": _("This member is not an AI agent."),
    "section_order_duplicate": _("Two sections have the same name: give each section its own name."),
    "section_order_unknown": _("The order of the sections names a section the agent does not have."),
}

# Bounds of a range the rule may give alone (a lower bound only, an upper bound only).
_BOUND_ONLY = {
    "ge": _("Too small: %(ge)s or more."),
    "le": _("Too large: up to %(le)s."),
}


def _quoted(value: Any) -> Any:
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return format_decimal(value)
    return value


def message_for(error: ApiError) -> str:
    """The page's words for a refusal: the translation of its code with the rule's numbers, else the
    API's English message."""
    words = MESSAGES.get(error.code or "")
    detail = {key: _quoted(value) for key, value in getattr(error, "detail", {}).items()}
    if error.code == "value_out_of_range" and not ("ge" in detail and "le" in detail):
        bound = next((key for key in ("ge", "le") if key in detail), None)
        words = _BOUND_ONLY[bound] if bound else words
    parameter = _PARAMETERS.get((error.param or "").removeprefix("sections.chat."))
    if (
        error.code == "value_out_of_range"
        and parameter is not None
        and (error.param or "").startswith("sections.chat.")
    ):
        words = MESSAGES["value_out_of_range"]
        detail.update(ge=_quoted(parameter.min), le=_quoted(parameter.max))
    if "index" in detail:
        detail["position"] = _quoted(int(getattr(error, "detail", {})["index"]) + 1)
    if words is None:
        return error.message or str(_("This value is not valid."))
    try:
        return str(words) % detail
    except (KeyError, TypeError, ValueError):
        return str(words).split(":", 1)[0].rstrip(".") + "."
