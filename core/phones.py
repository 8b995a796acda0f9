"""Phone numbers in one canonical form, E.164 (``+5215512345678`` becomes ``+525512345678``).

Parsing and validation come from ``phonenumbers`` (Google's libphonenumber metadata). On top of it we
fold the two WhatsApp-id quirks that make one person look like two contacts:

- Mexico: WhatsApp ids of Mexican mobiles keep the old mobile ``1`` after the country code
  (``521`` + 10 digits) although the national plan dropped it in 2019; ``+52`` + 10 digits is canonical.
- Argentina: mobiles are dialled internationally with a ``9`` after the country code (``549`` + area +
  number) and WhatsApp ids carry it; a number written without the ``9`` but with the local mobile ``15``
  prefix is the same line, so we rewrite it to the ``549`` form.
"""

from __future__ import annotations

import re

import phonenumbers
from phonenumbers import NumberParseException, PhoneNumberFormat


class InvalidPhoneNumber(ValueError):
    pass


_DIGITS = re.compile(r"\D+")


def _fold_quirks(digits: str) -> str:
    if digits.startswith("521") and len(digits) == 13:
        return "52" + digits[3:]
    return digits


def normalize_phone(raw: str, default_region: str | None = None) -> str:
    """E.164 for ``raw`` (with or without ``+``, spaces, dashes, parentheses); raises when invalid.

    Numbers without a ``+`` are read as international digits unless ``default_region`` is given.
    """
    if raw is None or not str(raw).strip():
        raise InvalidPhoneNumber("empty phone number")
    text = str(raw).strip()
    digits = _DIGITS.sub("", text)
    if not digits:
        raise InvalidPhoneNumber(f"not a phone number: {raw!r}")
    candidate = text if text.startswith("+") or default_region else "+" + digits
    if candidate.startswith("+"):
        candidate = "+" + _fold_quirks(_DIGITS.sub("", candidate))
    try:
        number = phonenumbers.parse(candidate, default_region)
    except NumberParseException as exc:
        raise InvalidPhoneNumber(f"not a phone number: {raw!r}") from exc
    if number.country_code == 54:
        number = _argentine_mobile(number)
    if not phonenumbers.is_valid_number(number):
        raise InvalidPhoneNumber(f"not a valid phone number: {raw!r}")
    return phonenumbers.format_number(number, PhoneNumberFormat.E164)


def _argentine_mobile(number: phonenumbers.PhoneNumber) -> phonenumbers.PhoneNumber:
    national = str(number.national_number)
    if national.startswith("9"):
        return number
    # area code (2-4 digits) + "15" + subscriber: the domestic way of writing a mobile.
    for area_length in (2, 3, 4):
        area, rest = national[:area_length], national[area_length:]
        if rest.startswith("15") and len(area) + len(rest) - 2 == 10:
            mobile = phonenumbers.parse(f"+549{area}{rest[2:]}")
            if phonenumbers.is_valid_number(mobile):
                return mobile
    return number


def is_e164(value: str) -> bool:
    try:
        return normalize_phone(value) == value
    except InvalidPhoneNumber:
        return False


def digits_only(e164: str) -> str:
    """The form WhatsApp uses for ``to`` and ``wa_id``: E.164 without the plus."""
    return e164.lstrip("+")
