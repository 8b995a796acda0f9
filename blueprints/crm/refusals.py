"""What a desk page says for each refusal of the CRM's verbs, in the page's language.

A verb refuses with a stable ``code`` and the ``param`` it concerns, the field in the wire's name
(``rules.Refusal``); the API answers the English message it always did. A page finds its form field by
``param`` and words the refusal by ``code`` with :func:`message_for`, never by matching the API's
English. ``detail`` carries the numbers of the rule (``max_length``), which the words may quote.

The strings are marked with ``lazy_gettext`` (imported as ``_`` so that the catalogue check,
``tests/test_translations.py``, extracts them): each is translated when a page renders it.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from flask_babel import format_decimal
from flask_babel import lazy_gettext as _
from flask_babel.speaklater import LazyString

from core.errors import ApiError

MESSAGES: dict[str, LazyString] = {
    # a value's rules (rules.py): the field is the refusal's ``param``
    "value_required": _("Fill in this field."),
    "value_too_short": _("Fill in this field."),
    "value_too_long": _("Too long: up to %(max_length)s characters."),
    "value_null": _("This field cannot be empty."),
    "too_few_items": _("Add at least %(min_length)s."),
    "too_many_items": _("Too many: up to %(max_length)s."),
    "value_not_allowed": _("Choose an option from the list."),
    "value_out_of_range": _("This value is out of range."),
    "value_not_a_number": _("Write a number, such as 12.5."),
    "value_not_an_id": _("Choose an option from the list."),
    "value_not_a_date": _("Write a date, such as 2025-03-31."),
    "value_not_a_boolean": _("Choose yes or no."),
    "value_not_text": _("Write text in this field."),
    "value_not_a_list": _("This value is not valid."),
    "value_not_an_object": _("This value is not valid."),
    "value_malformed": _("This value does not have the expected form."),
    "value_invalid": _("This value is not valid."),
    "value_unstorable": _("Remove the control characters from this text."),
    "currency_unknown": _("Choose a currency from the list."),
    "money_invalid": _("Write an amount of 0 or more, such as 1500.00."),
    "pipeline_key_malformed": _("Use 2 to 5 letters (A-Z)."),
    "timezone_unknown": _("Choose a time zone from the list."),
    "url_malformed": _("Write a full web address that starts with http:// or https://."),
    "contacts_primary_twice": _("Only one contact can be the primary one."),
    "contacts_duplicate": _("A contact is listed twice."),
    "range_inverted": _("The start is later than the end."),
    # what a field names, looked up: the CRM's own words for a record that is not there
    "deal_not_found": _("No Deal found"),
    "pipeline_not_found": _("No Pipeline found"),
    "stage_not_found": _("No Stage found"),
    "line_item_not_found": _("No Line item found"),
    "conversation_not_found": _("No Conversation found"),
    "conversation_link_not_found": _("No Conversation link found"),
    "contact_not_found": _("No Contact found"),
    "account_not_found": _("No Account found"),
    "project_not_found": _("No Project found"),
    "ticket_type_not_found": _("No Ticket type found"),
    "ticket_not_found": _("No Ticket found"),
    "task_not_found": _("No Task found"),
    "identity_not_found": _("No Identity found"),
    "product_not_found": _("No Product found"),
    "exchange_rate_not_found": _("No Exchange rate found"),
    "member_unknown": _("No member of the organization has this id."),
    "product_unknown": _("No product of the catalogue has this id."),
    # the verbs' rules
    "stage_other_pipeline": _("Choose a stage of the deal's pipeline."),
    "pipeline_without_stages": _("The pipeline has no stages yet."),
    "stage_move_target_invalid": _("Choose another stage of the same pipeline."),
    "stage_last_of_pipeline": _("A pipeline keeps at least one stage."),
    "stage_has_deals": _("The stage has deals: choose a stage to move them to."),
    "pipeline_key_taken": _("Another pipeline already has this key."),
    "pipeline_key_locked": _("The key of a pipeline that has deals cannot change."),
    "pipeline_default_required": _("Make another pipeline the default instead."),
    "pipeline_has_deals": _("The pipeline has deals: move or delete them first."),
    "amount_from_line_items": _("The amount is the sum of the line items."),
    "currency_locked_by_line_items": _("The deal has line items in its currency."),
    "currency_not_deal_currency": _("Use the deal's currency (%(currency)s)."),
    "position_out_of_range": _("The deal has %(count)s line items: choose a place among them."),
    "conversation_already_linked": _("This conversation is already linked to the deal."),
    "identity_invalid": _("Write a valid phone number or email address."),
    "identity_taken": _("Another contact already has this phone number or email address."),
    "merge_into_itself": _("A contact cannot be merged into itself."),
    "sku_taken": _("Another product already has this SKU."),
    "rate_same_currency": _("Choose two different currencies."),
    "rate_busy": _("The exchange rate is being changed right now; try again."),
}


def _quoted(value: Any) -> Any:
    """A number of the rule as the page's language writes it (20,000 / 20.000)."""
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return format_decimal(value)
    return value


def message_for(error: ApiError) -> str | None:
    """The page's words for a refusal, or None when its code has none (a refusal from outside the CRM)."""
    words = MESSAGES.get(error.code or "")
    if words is None:
        return None
    detail = {key: _quoted(value) for key, value in getattr(error, "detail", {}).items()}
    try:
        return str(words) % detail
    except (KeyError, TypeError, ValueError):  # the rule did not say the number the words quote
        return str(words).split(":", 1)[0].rstrip(".") + "."


def form_errors(error: ApiError, fields: Mapping[str, str]) -> dict[str, str]:
    """``{form field: message}`` when the refusal concerns a field of the form (``fields`` maps the
    wire's names, as ``param`` carries them, to the form's); empty when no field of the form explains
    it. A nested ``param`` (``contacts.0.contact_id``) is looked up whole, then by its first part."""
    if not error.param:
        return {}
    name = fields.get(error.param) or fields.get(error.param.split(".", 1)[0])
    if name is None:
        return {}
    return {name: message_for(error) or error.message or str(_("This value is not valid."))}
