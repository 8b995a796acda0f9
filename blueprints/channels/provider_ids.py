"""The form of the ids a provider gives its objects, checked before any of them reaches a provider URL.

An id a client sends (a template id, a phone number id, a WhatsApp Business Account id) becomes a path
segment of the provider's URL, and the request carries the organization's stored access token. An id
such as ``../../other`` or ``123?fields=…`` would steer that token to another path of the provider's
host, so each provider says what its ids look like and every id is checked against that form, with a
400 naming the field, before it is used (the URL builder also quotes each segment: a second guard).

- Meta's Graph ids (templates, phone numbers, WABAs, pages, media) are decimal digits.
- The simulator's template ids are its own names (``sim_welcome``): letters, digits and ``_``.
- :data:`ID_FORM` is the form every provider id fits (the request models' pattern): letters, digits and
  ``_`` only, so no ``/``, ``.``, ``?``, ``%`` or white space ever reaches a URL. Twilio's SIDs
  (``CA`` + 32 hex digits) fit it too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.errors import ApiError

# What every provider's ids look like: the pattern request models use before the provider is known.
ID_PATTERN = r"^[A-Za-z0-9_]{1,64}$"
INVALID_PROVIDER_ID = "invalid_provider_id"


@dataclass(frozen=True)
class IdForm:
    """One provider's id form: a full-match pattern and how a refusal describes it to a person."""

    pattern: re.Pattern[str]
    description: str

    def check(self, value: str, field: str) -> str:
        """``value`` when it has this form; otherwise a 400 naming ``field``."""
        if not isinstance(value, str) or self.pattern.fullmatch(value) is None:
            raise ApiError(
                400,
                f"{field}: must be {self.description}",
                code=INVALID_PROVIDER_ID,
                param=field,
            )
        return value


# Graph ids are 64-bit integers written in decimal (at most 20 digits); 32 leaves room without letting
# a huge value through.
META_IDS = IdForm(re.compile(r"[0-9]{1,32}"), "a Meta id (digits only)")
SIMULATOR_IDS = IdForm(re.compile(r"[A-Za-z0-9_]{1,64}"), "an id of letters, digits and _ (at most 64)")

_FORMS = {"meta": META_IDS, "simulator": SIMULATOR_IDS}


def id_form(provider_name: str) -> IdForm:
    """The id form of the provider named ``provider_name`` (``meta`` or ``simulator``)."""
    return _FORMS[provider_name]
