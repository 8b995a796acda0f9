"""The CRM's rules about single values, declared once, and the refusals they give.

Each rule is a pydantic type: a length, a range, the allowed values, a currency code, a pipeline key's
pattern. Two readers use the same type: the API's request models (``schemas.py``), whose JSON schemas
document the rule in OpenAPI and refuse a request at the edge, and the verbs' typed inputs (``drafts.py``),
which every verb checks whoever calls it (the API, the desk's pages, the AI area's tools, the demo).

A verb says no with a :class:`Refusal`: the status and message the API has always answered, plus a
stable ``code`` and the ``param`` (the field, dotted for nested ones) it concerns, so that a page places
the refusal next to its field and words it in the page's language (``refusals.py``) without reading
English. A rule that has a code of its own (``currency_unknown``, ``money_invalid``) raises it through
``PydanticCustomError``, whose message is the one pydantic gave before: the API's 400 text is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from blueprints.crm.money import CURRENCIES
from core.errors import ApiError
from core.pagination import MAX_LIMIT
from core.timeutil import get_zone
from core.validation import INT_MAX, INT_MIN, MAX_YEAR, MIN_YEAR, find_unstorable_text

T = TypeVar("T")

# The request models' own configuration (core.validation.RequestModel), so that a verb reads a value the
# way the API does: text trimmed, no infinities.
CONFIG = ConfigDict(str_strip_whitespace=True, allow_inf_nan=False)


class Refusal(ApiError):
    """A CRM verb's refusal. The API renders ``status`` and ``message`` as always; ``code`` (stable,
    snake_case) and ``param`` (the field in the wire's name, ``line_items.0.quantity`` for a nested one;
    None when the refusal concerns the record rather than a field) are for pages and logs; ``detail``
    holds the numbers of the rule a message may quote (``max_length``, ``le`` ...)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(status, message, code=code, param=param)
        self.detail = dict(detail or {})


def missing(resource: str, param: str | None = None) -> Refusal:
    """404 ``No <Resource> found`` (the CRM's message) with the code ``<resource>_not_found``."""
    code = f"{resource.lower().replace(' ', '_')}_not_found"
    return Refusal(404, f"No {resource} found", code=code, param=param)


# --------------------------------------------------------------------------------------- coded rules


def _coded(code: str) -> WrapValidator:
    """The rule's refusal under its own code, with the message the inner validation gave (so the API's
    400 text stays what it was); the JSON schema is the inner type's."""

    def wrap(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            context = {key: item for key, item in (first.get("ctx") or {}).items() if _plain(item)}
            raise PydanticCustomError(code, "{reason}", {**context, "reason": first["msg"]}) from None

    return WrapValidator(wrap)


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | Decimal) and not isinstance(value, bool)


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


Currency = Literal[
    "MXN", "USD", "EUR", "COP", "ARS", "BRL", "CLP", "PEN", "UYU", "BOB",
    "PYG", "CRC", "DOP", "GTQ", "HNL", "NIO", "PAB", "GBP", "CAD",
]  # fmt: skip
assert set(Currency.__args__) == set(CURRENCIES)  # type: ignore[attr-defined]
# A currency as clients write it: any case, refused as ``currency_unknown`` when not one of the CRM's.
CurrencyIn = Annotated[Currency, BeforeValidator(_upper), _coded("currency_unknown")]

MAX_MONEY = Decimal("1000000000000000")  # 10^15, far above any deal and inside Numeric(20, 4)
# An amount or a price: 0 or more, exact (a Decimal parsed from its text); rounded half-up by the verbs
# (money.py), never refused for its precision.
Money = Annotated[Decimal, Field(ge=0, le=MAX_MONEY, allow_inf_nan=False), _coded("money_invalid")]
# A list filter's bound on amounts (any sign; compared, never stored).
Amount = Annotated[Decimal, Field(allow_inf_nan=False)]
Quantity = Annotated[Decimal, Field(gt=0, le=Decimal("100000000"), allow_inf_nan=False)]
Rate = Annotated[Decimal, Field(gt=0, le=Decimal("1000000000"), allow_inf_nan=False)]

StageStatus = Literal["open", "won", "lost"]
DealStatus = Literal["open", "won", "lost"]
DealSort = Literal["amount", "created_at", "updated_at", "name", "expected_close_date"]
SortDirection = Literal["asc", "desc"]
TicketState = Literal["new", "waiting_on_agent", "waiting_on_customer", "on_hold", "closed"]
TicketPriority = Literal["urgent", "high", "normal", "low"]
TicketSource = Literal["manual", "api", "automation", "form", "channel"]
TicketChannel = Literal["whatsapp", "voice", "email", "sms", "webchat", "messenger"]
LinkChannel = Literal["whatsapp", "voice", "email", "sms", "webchat", "messenger", "instagram"]
TaskType = Literal["to_do", "call", "email", "meeting", "follow_up"]
TaskStatus = Literal["pending", "in_progress", "completed"]
TaskPriority = Literal["low", "normal", "high", "urgent"]
IdentityKind = Literal["phone", "email"]

Name = Annotated[str, Field(min_length=1, max_length=200)]
LongName = Annotated[str, Field(min_length=1, max_length=500)]
ProductName = Annotated[str, Field(min_length=1, max_length=300)]
# An id the members area issued (a UUID or a custom id of up to 64 characters); the verbs check that it
# names a member of the organization.
MemberId = Annotated[str, Field(min_length=1, max_length=64)]
Role = Annotated[str, Field(max_length=120)]
JobTitle = Annotated[str, Field(max_length=200)]
Industry = Annotated[str, Field(max_length=120)]
Domain = Annotated[str, Field(max_length=255)]
Phone = Annotated[str, Field(max_length=40)]
Sku = Annotated[str, Field(min_length=1, max_length=100)]
ItemSku = Annotated[str, Field(max_length=100)]
Description = Annotated[str, Field(max_length=5000)]
ItemNotes = Annotated[str, Field(max_length=5000)]
Notes = Annotated[str, Field(max_length=10000)]
NoteText = Annotated[str, Field(min_length=1, max_length=10000)]
# Why a deal was lost, given when it moves to a lost stage (the desk asks for it).
LostReason = Annotated[str, Field(min_length=1, max_length=500)]
BodyHtml = Annotated[str, Field(max_length=200_000)]
IdentityValue = Annotated[str, Field(min_length=1, max_length=320)]
Search = Annotated[str, Field(max_length=200)]
ConversationId = Annotated[str, Field(min_length=1, max_length=100)]
ConversationIds = Annotated[tuple[ConversationId, ...], Field(max_length=50)]
TicketPrefix = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9]{0,9}$")]

StageOrder = Annotated[int, Field(ge=0)]
# A line item's 0-based place among its deal's items; the verb refuses one past the last
# (``position_out_of_range``), which only it knows.
ItemPosition = Annotated[int, Field(ge=0)]
Probability = Annotated[int, Field(ge=0, le=100)]
RottingDays = Annotated[int, Field(ge=1, le=3650)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
Offset = Annotated[int, Field(ge=0)]

_KEY = re.compile(r"^[A-Za-z]{2,5}$")


def _pipeline_key(value: str) -> str:
    if not _KEY.match(value):
        raise PydanticCustomError("pipeline_key_malformed", "must be 2 to 5 letters (A-Z)")
    return value.upper()


# 2 to 5 letters, stored upper-case.
PipelineKey = Annotated[str, AfterValidator(_pipeline_key)]


def _timezone(value: str | None) -> str | None:
    if value:
        try:
            get_zone(value)
        except ValueError as error:
            raise PydanticCustomError("timezone_unknown", "{reason}", {"reason": str(error)}) from None
    return value or None


# An IANA name (empty: none, which the lists read as UTC).
Timezone = Annotated[str | None, AfterValidator(_timezone)]


def _web_url(value: str | None) -> str | None:
    """An absolute http(s) URL, or None for an empty value."""
    if value is None or not value.strip():
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PydanticCustomError("url_malformed", "must be an absolute http(s) URL")
    return value.strip()


WebUrl = Annotated[str, Field(max_length=2048), AfterValidator(_web_url)]


def _primary_once(contacts: Any) -> Any:
    """A deal's contacts: at most one primary, none twice (request items and drafts alike)."""
    if contacts is not None:
        if sum(1 for c in contacts if c.is_primary) > 1:
            raise PydanticCustomError("contacts_primary_twice", "at most one contact can be primary")
        if len({c.contact_id for c in contacts}) != len(contacts):
            raise PydanticCustomError("contacts_duplicate", "a contact is listed twice")
    return contacts


# A deal's contacts, whatever the item type (the request's items or the drafts').
DealContacts = Annotated[tuple[T, ...], Field(max_length=100), AfterValidator(_primary_once)]
Identities = Annotated[tuple[T, ...], Field(max_length=50)]
AccountIds = Annotated[tuple[T, ...], Field(max_length=50)]


# ------------------------------------------------------------------------------- refusals from rules

# pydantic's error types -> the CRM's codes (the codes the rules above raise themselves pass through).
_CODES_BY_TYPE = {
    "missing": "value_required",
    "string_too_short": "value_too_short",
    "string_too_long": "value_too_long",
    "too_short": "too_few_items",
    "too_long": "too_many_items",
    "literal_error": "value_not_allowed",
    "enum": "value_not_allowed",
    "greater_than": "value_out_of_range",
    "greater_than_equal": "value_out_of_range",
    "less_than": "value_out_of_range",
    "less_than_equal": "value_out_of_range",
    "string_pattern_mismatch": "value_malformed",
    "string_type": "value_not_text",
    "bool_type": "value_not_a_boolean",
    "bool_parsing": "value_not_a_boolean",
    "uuid_type": "value_not_an_id",
    "uuid_parsing": "value_not_an_id",
    "uuid_version": "value_not_an_id",
    "list_type": "value_not_a_list",
    "tuple_type": "value_not_a_list",
    "dataclass_type": "value_not_an_object",
    "dict_type": "value_not_an_object",
    "model_type": "value_not_an_object",
}
_NUMBER_TYPES = ("int_", "float_", "decimal_", "finite_number")
_DATE_TYPES = ("date_", "datetime_", "time_")
# The codes the rules of this module raise under their own name.
RULE_CODES = frozenset(
    {
        "currency_unknown",
        "money_invalid",
        "pipeline_key_malformed",
        "timezone_unknown",
        "url_malformed",
        "contacts_primary_twice",
        "contacts_duplicate",
    }
)


def code_of(error_type: str) -> str:
    if error_type in RULE_CODES:
        return error_type
    if error_type in _CODES_BY_TYPE:
        return _CODES_BY_TYPE[error_type]
    if error_type.startswith(_NUMBER_TYPES):
        return "value_not_a_number"
    if error_type.startswith(_DATE_TYPES):
        return "value_not_a_date"
    return "value_invalid"


def refusal_from(error: ValidationError, prefix: tuple[str | int, ...] = ()) -> Refusal:
    """The first problem of a validation as a 400 in the API's words (``"<field>: <problem>"``)."""
    first = error.errors(include_url=False)[0]
    param = ".".join(str(part) for part in (*prefix, *first["loc"])) or None
    message = str(first["msg"]).removeprefix("Value error, ")
    detail = {key: value for key, value in (first.get("ctx") or {}).items() if _plain(value)}
    return Refusal(
        400,
        f"{param}: {message}" if param else message,
        code=code_of(first["type"]),
        param=param,
        detail=detail,
    )


def unstorable(value: Any) -> str | None:
    """Why a value as given cannot be stored (NUL, a lone surrogate, nesting or sizes beyond the API's
    bounds: core.validation's edge rule), or None."""
    return find_unstorable_text(value)


def out_of_bounds(value: Any) -> str | None:
    """Why a checked value is beyond what every store and client holds (core.validation's bounds on
    integers and dates), or None."""
    if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
        return f"must be between {INT_MIN} and {INT_MAX}"
    if isinstance(value, date) and not MIN_YEAR <= value.year <= MAX_YEAR:
        return f"must be a date between the years {MIN_YEAR} and {MAX_YEAR}"
    return None


def check_value(adapter: TypeAdapter[T], value: Any, param: str) -> T:
    """``value`` as ``adapter`` reads it, refused under ``param`` when a rule says no."""
    problem = unstorable(value)
    if problem:
        raise Refusal(400, f"{param}: {problem}", code="value_unstorable", param=param)
    try:
        checked = adapter.validate_python(value)
    except ValidationError as error:
        raise refusal_from(error, (param,)) from None
    problem = out_of_bounds(checked)
    if problem:
        raise Refusal(400, f"{param}: {problem}", code="value_out_of_range", param=param)
    return checked


class Rule(Generic[T]):
    """One value's rule, for a verb that takes the value plainly (``change_state(..., state)``)."""

    def __init__(self, annotation: Any) -> None:
        self._adapter: TypeAdapter[T] = TypeAdapter(annotation, config=CONFIG)

    def check(self, value: Any, param: str) -> T:
        """The value as the rule reads it (trimmed, upper-cased ...), or a :class:`Refusal` naming
        ``param``."""
        return check_value(self._adapter, value, param)
