"""The AI agent configuration's rules, declared once: the values a configuration may hold, their ranges and
defaults as data a page can show, and the refusals they give.

Each rule is a pydantic type (a range, a pattern, a normaliser). Two readers use the same type: the
members API's request models (``schemas.py``), which refuse a request at the edge and document the rule
in OpenAPI, and the typed inputs of the configuration's verbs (``agent_config.py``), which every verb
checks whoever built them (the API, a desk page, the demo). A rule with a code of its own raises it
through ``PydanticCustomError`` with the words the API has always answered, so the API's 400 text is
unchanged while a page reads the stable code (and, for an item of a list, its index).

The runtime (``blueprints/ai``) reads the chat parameters' defaults from here too (:data:`CHAT_DEFAULTS`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from email_validator import EmailNotValidError, validate_email
from flask import current_app, has_app_context
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from blueprints.members.models import MEMBER_ID_PATTERN
from core.db import isoformat
from core.errors import ApiError
from core.outbound import UrlRefused, check_url, switch_on
from core.phones import InvalidPhoneNumber, normalize_phone


class Refusal(ApiError):
    """A refusal of the agent configuration's rules or verbs. The API renders ``status`` and ``message``
    as it always did (``{statusCode, message}``, the message starting with the field); ``code`` (stable,
    snake_case) and ``param`` (the field path in the wire's names: ``sections.chat.temperature``,
    ``notifications.end_of_call.email.1``, ``call_transfers.0.target``; None when the refusal concerns
    the whole configuration) are for pages and logs; ``detail`` holds the numbers of the rule (``le``,
    ``max_length``) or, for ``version_conflict``, who saved which version when."""

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


# ----------------------------------------------------------------------------------- chat parameters


@dataclass(frozen=True)
class ChatParameter:
    """One parameter of ``sections.chat``: its type, default and inclusive range (None: no bound)."""

    name: str
    type: type
    default: float | int | bool
    min: float | int | None
    max: float | int | None
    description: str


CHAT_PARAMETERS: tuple[ChatParameter, ...] = (
    ChatParameter(
        "temperature",
        float,
        default=0.7,
        min=0,
        max=1,
        description="How freely the model words its answers (0: the most predictable).",
    ),
    ChatParameter(
        "context_messages",
        int,
        default=50,
        min=0,
        max=100,
        description="Earlier messages of the conversation sent with each question (0: none).",
    ),
    ChatParameter(
        "context_days",
        int,
        default=7,
        min=1,
        max=30,
        description="Only earlier messages of the last this many days are sent.",
    ),
    ChatParameter(
        "split_long_messages",
        bool,
        default=False,
        min=None,
        max=None,
        description="Send an answer as one message per paragraph.",
    ),
)
# What a configuration that does not set a parameter uses (filled in on read, never stored).
CHAT_DEFAULTS: dict[str, Any] = {parameter.name: parameter.default for parameter in CHAT_PARAMETERS}

# ``sections.chat``: the parameters above and no other key.
ChatSection = create_model(  # type: ignore[call-overload]
    "ChatSection",
    __config__=ConfigDict(extra="forbid"),
    __doc__="The chat parameters; those not set take their defaults when read.",
    **{
        parameter.name: (
            parameter.type,
            Field(parameter.default, ge=parameter.min, le=parameter.max, description=parameter.description),
        )
        for parameter in CHAT_PARAMETERS
    },
)


def chat_settings(sections: Mapping[str, Any]) -> dict[str, Any]:
    """``sections.chat`` as it applies: the defaults for what the configuration does not set."""
    return {**CHAT_DEFAULTS, **(sections.get("chat") or {})}


def effective_sections(sections: Mapping[str, Any]) -> dict[str, Any]:
    """Sections as read: ``chat`` always present, with the defaults for what was not set."""
    return {**sections, "chat": chat_settings(sections)}


# ------------------------------------------------------------------------------------------ sections

# A section's name: letters, digits, ``_`` and ``-``, 1 to 64 (``chat`` holds the parameters above).
SECTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SECTION_TEXT_MAX_LENGTH = 20_000
# The sections the runtime puts first in the prompt, in this order (every other one follows by name).
COMMON_SECTIONS = ("identity", "rules", "tone", "knowledge", "escalation", "closing")
SectionText = Annotated[str, Field(max_length=SECTION_TEXT_MAX_LENGTH)]


def section_name_refused(name: str) -> PydanticCustomError | None:
    """Why ``name`` cannot name a section (``section_name_invalid``), or None."""
    if SECTION_NAME.match(name):
        return None
    return PydanticCustomError(
        "section_name_invalid",
        "invalid section name {quoted} (letters, digits, _ and -, at most 64)",
        {"quoted": repr(name), "section": name},
    )


class Sections(BaseModel):
    """Prompt sections: any name with a text value; ``chat`` holds the chat parameters."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, SectionText | None]

    chat: ChatSection | None = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _names(self) -> Sections:
        for name in self.__pydantic_extra__ or {}:
            refused = section_name_refused(name)
            if refused is not None:
                raise refused
        return self

    def sent(self) -> dict[str, Any]:
        """Sections as sent; ``None`` values mean "remove this section" in a PATCH."""
        return self.model_dump(exclude_unset=True)

    def texts(self) -> dict[str, str | None]:
        """The text sections by name (``chat`` left out)."""
        return dict(self.__pydantic_extra__ or {})


# ------------------------------------------------------------------------------------ section order

# ``section_order``: the text sections' names in the order the prompt gives them (a top-level field, not a
# key of ``sections``: every name there is a section a supervisor may use, ``order`` included). Names not
# in it follow in the default order: the common sections as listed above, then the others by name.
MAX_SECTION_ORDER = 200


def checked_section_order(value: list[str]) -> list[str]:
    """The order as stored, or ``section_order_duplicate`` naming the second mention (``index``). Whether
    each name is a section of the configuration is :func:`section_order_refused` (it needs the sections)."""
    seen: set[str] = set()
    for index, name in enumerate(value):
        if name in seen:
            raise PydanticCustomError(
                "section_order_duplicate",
                "section {quoted} is named twice (each section once)",
                {"quoted": repr(name), "index": index},
            )
        seen.add(name)
    return value


SectionOrder = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=64)]],
    Field(max_length=MAX_SECTION_ORDER),
    AfterValidator(checked_section_order),
]


def text_section_names(sections: Mapping[str, Any]) -> list[str]:
    """The names of the text sections (``chat`` and sections sent as null left out)."""
    return [name for name, value in sections.items() if name != "chat" and isinstance(value, str)]


def effective_section_order(sections: Mapping[str, Any], order: list[str] | None) -> list[str]:
    """Every text section's name in the order the prompt gives them: those ``order`` names first, in its
    order, then the others in the default order (the common sections, then the rest by name)."""
    names = set(text_section_names(sections))
    first = [name for name in order or [] if name in names]
    placed = set(first)
    common = [name for name in COMMON_SECTIONS if name in names and name not in placed]
    rest = sorted(name for name in names if name not in placed and name not in COMMON_SECTIONS)
    return first + common + rest


def section_order_refused(order: list[str], sections: Mapping[str, Any]) -> Refusal | None:
    """``section_order_unknown`` (400, path ``section_order.<n>``) for the first name that is not a text
    section of the configuration (``chat`` holds parameters, never text); None when every name is one."""
    names = set(text_section_names(sections))
    for index, name in enumerate(order):
        if name not in names:
            param = f"section_order.{index}"
            return Refusal(
                400,
                f"{param}: no text section named {name!r} (name only sections of the configuration)",
                code="section_order_unknown",
                param=param,
            )
    return None


# --------------------------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class Named:
    """A name the configuration accepts, with one line saying what it is."""

    name: str
    description: str


TOOLS: tuple[Named, ...] = (
    Named("transfer_to_human", "Hand the conversation to a person, or to a call-transfer rule's target."),
    Named("search_knowledge", "Look up the organization's knowledge before answering."),
    Named("send_product", "Send a product of the CRM catalogue to the customer."),
    Named("create_ticket", "Open a CRM support ticket for a problem that needs follow-up."),
    Named("schedule_meeting", "Book a meeting with the customer (a CRM task of type meeting)."),
)
TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in TOOLS)
ToolName = Literal[TOOL_NAMES]  # type: ignore[valid-type]


class ToolSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool


# ``tools``: a tool's name -> its setting (null removes it in a PATCH).
Tools = dict[ToolName, ToolSetting | None]  # type: ignore[valid-type]

# ------------------------------------------------------------------------------------- notifications

TRIGGERS: tuple[Named, ...] = (
    Named("end_of_call", "A call with the agent ends."),
    *(Named(tool.name, f"The agent uses the tool {tool.name}.") for tool in TOOLS),
)
TRIGGER_NAMES: tuple[str, ...] = tuple(trigger.name for trigger in TRIGGERS)
TriggerName = Literal[TRIGGER_NAMES]  # type: ignore[valid-type]
NOTIFICATION_CHANNELS = ("email", "whatsapp", "webhook")
MAX_TARGETS = 20  # e-mail addresses, WhatsApp numbers per trigger
WEBHOOK_MAX_LENGTH = 2048


def normalize_email(value: str, index: int = 0) -> str:
    """The address as stored (domain lower-cased), or ``email_invalid``; syntax only, no DNS, and the
    special-use ``.test`` domain is accepted."""
    try:
        return validate_email(value, check_deliverability=False, test_environment=True).normalized
    except EmailNotValidError:
        raise PydanticCustomError(
            "email_invalid", "not a valid e-mail address: {quoted}", {"quoted": repr(value), "index": index}
        ) from None


def normalize_whatsapp(value: str, index: int = 0) -> str:
    """The number in E.164 (libphonenumber, WhatsApp's 521/549 quirks folded), or ``phone_invalid``."""
    try:
        return normalize_phone(value)
    except InvalidPhoneNumber:
        raise PydanticCustomError(
            "phone_invalid",
            "not a valid E.164 phone number: {quoted}",
            {"quoted": repr(value), "index": index},
        ) from None


def _notifications_loopback() -> bool:
    """The notifications area delivers these webhooks and owns their test switch; it sits above this area,
    so its setting is read by name rather than imported. Off outside an application."""
    return has_app_context() and switch_on(current_app.config.get("NOTIFICATIONS_ALLOW_HTTP_LOOPBACK"))


def checked_webhook(value: str) -> str:
    """The webhook as stored, checked when saved by the very check every delivery repeats
    (``core.outbound``), with the notifications area's loopback switch: a URL its deliveries would refuse
    (a private or loopback address in any spelling, credentials, plain http) is refused now
    (``webhook_refused``), not a failed delivery a day later. No DNS here; a name is resolved and its
    addresses checked at delivery."""
    try:
        return check_url(value, allow_loopback=_notifications_loopback())
    except UrlRefused as refused:
        raise PydanticCustomError(
            "webhook_refused",
            "webhook must be an https URL to a public host: {reason}",
            {"reason": str(refused)},
        ) from None


class NotificationTargets(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: list[str] | None = Field(None, max_length=MAX_TARGETS)
    whatsapp: list[str] | None = Field(None, max_length=MAX_TARGETS)
    webhook: str | None = Field(None, max_length=WEBHOOK_MAX_LENGTH)

    @field_validator("email")
    @classmethod
    def _emails(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [normalize_email(v, i) for i, v in enumerate(value)]

    @field_validator("whatsapp")
    @classmethod
    def _phones(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [normalize_whatsapp(v, i) for i, v in enumerate(value)]

    @field_validator("webhook")
    @classmethod
    def _webhook(cls, value: str | None) -> str | None:
        return None if value is None else checked_webhook(value)


# ``notifications``: a trigger -> its targets (null removes it in a PATCH).
Notifications = dict[TriggerName, NotificationTargets | None]  # type: ignore[valid-type]

# ------------------------------------------------------------------------------------ call transfers

MAX_TRANSFERS = 50
_PHONE_LIKE = re.compile(r"^\+?[\d\s().-]{6,}$")


def transfer_target(value: str) -> str:
    """A call transfer's target as stored: a phone number in E.164, or a member id as written (whether a
    member has it is the verbs' check, :func:`agent_config.check_targets`); ``transfer_target_invalid``
    otherwise."""
    if _PHONE_LIKE.match(value):
        try:
            return normalize_phone(value)
        except InvalidPhoneNumber:
            raise PydanticCustomError(
                "transfer_target_invalid", "not a valid E.164 phone number: {quoted}", {"quoted": repr(value)}
            ) from None
    if not re.match(MEMBER_ID_PATTERN, value):
        raise PydanticCustomError(
            "transfer_target_invalid", "not an E.164 number or a member id: {quoted}", {"quoted": repr(value)}
        )
    return value


def target_type(target: str) -> Literal["phone", "member"]:
    """A stored target is a phone number (E.164, ``+`` first) or a member id (never starting with ``+``)."""
    return "phone" if target.startswith("+") else "member"


class CallTransfer(BaseModel):
    """A rule for handing a call over: when ``condition`` holds, transfer to ``target``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    condition: str = Field(min_length=1, max_length=2000)
    target: str = Field(min_length=1, max_length=64, description="E.164 number or a member id")
    announce_message: str | None = Field(None, max_length=1000)

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        return transfer_target(value)

    @property
    def target_type(self) -> str:
        return target_type(self.target)


CallTransfers = Annotated[list[CallTransfer], Field(max_length=MAX_TRANSFERS)]

# ------------------------------------------------------------------------------------- plain fields

Voice = Annotated[str, Field(max_length=120)]
DEFAULT_AGENT_TYPE = "generic"
AgentType = Annotated[str, Field(min_length=1, max_length=64)]
BusinessCategory = Annotated[str, Field(max_length=64)]

# ----------------------------------------------------------------------------------------- refusals

# pydantic's error types -> stable codes (the codes the rules above raise themselves pass through).
_CODES_BY_TYPE = {
    "missing": "value_required",
    "string_too_short": "value_too_short",
    "string_too_long": "value_too_long",
    "too_short": "too_few_items",
    "too_long": "too_many_items",
    "literal_error": "value_not_allowed",
    "greater_than": "value_out_of_range",
    "greater_than_equal": "value_out_of_range",
    "less_than": "value_out_of_range",
    "less_than_equal": "value_out_of_range",
    "string_pattern_mismatch": "value_malformed",
    "string_type": "value_not_text",
    "bool_type": "value_not_a_boolean",
    "bool_parsing": "value_not_a_boolean",
    "list_type": "value_not_a_list",
    "dict_type": "value_not_an_object",
    "model_type": "value_not_an_object",
    "model_attributes_type": "value_not_an_object",
    "extra_forbidden": "field_unknown",
}
_NUMBER_TYPES = ("int_", "float_", "finite_number")
# The codes the rules of this module raise under their own name.
RULE_CODES = frozenset(
    {
        "section_name_invalid",
        "email_invalid",
        "phone_invalid",
        "webhook_refused",
        "transfer_target_invalid",
        "section_order_duplicate",
    }
)
# An unknown key of these mappings is refused by its own code (the path names the key).
_KEY_CODES = {"tools": "tool_unknown", "notifications": "trigger_unknown"}

# Every code a refusal of the configuration may carry (docs/members.md, "Where the rules live; refusal
# codes and field paths"); the API's own ``if_match_malformed`` concerns its header, never a page.
CODES = frozenset(
    {
        *_CODES_BY_TYPE.values(),
        *RULE_CODES,
        *_KEY_CODES.values(),
        "value_not_a_number",
        "value_unstorable",
        "value_invalid",
        "transfer_target_unknown",
        "section_order_unknown",
        "version_conflict",
        "not_an_ai_agent",
    }
)


def code_of(error_type: str) -> str:
    if error_type in RULE_CODES:
        return error_type
    if error_type in _CODES_BY_TYPE:
        return _CODES_BY_TYPE[error_type]
    if error_type.startswith(_NUMBER_TYPES):
        return "value_not_a_number"
    return "value_invalid"


def words(problem: Mapping[str, Any]) -> str:
    """A problem's words as the API writes them (core.validation.describe_validation_error)."""
    if problem.get("type") == "extra_forbidden":
        return "unknown query parameter"
    return str(problem.get("msg", "Invalid value")).removeprefix("Value error, ")


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def refusal_from(problems: list[Mapping[str, Any]], prefix: tuple[str | int, ...] = ()) -> Refusal:
    """The first problem of a validation as a 400 in the API's words (``"<field>: <problem>"``, with the
    other fields in error named as the API names them), its code and the field path it concerns: a
    list item's index and an unknown key's name are part of the path (``notifications.end_of_call.email.1``,
    ``tools.hack``, ``sections.bad name``) even where the API's message names the list or the mapping."""
    first = problems[0]
    location = [str(part) for part in (*prefix, *first.get("loc", ()))]
    message = f"{'.'.join(location)}: {words(first)}" if location else words(first)
    others = sorted(
        {".".join(str(part) for part in (*prefix, *item.get("loc", ()))) for item in problems[1:]}
        - {".".join(location), ""}
    )
    if others:
        message += f" (also invalid: {', '.join(others)})"
    context = dict(first.get("ctx") or {})
    path = list(location)
    if path and path[-1] == "[key]":
        path.pop()
        code = _KEY_CODES.get(path[0], "value_not_allowed") if len(path) == 2 else "value_not_allowed"
    else:
        code = code_of(str(first.get("type")))
        if code == "section_name_invalid":
            path.append(str(context["section"]))
        elif code in ("email_invalid", "phone_invalid", "section_order_duplicate"):
            path.append(str(context["index"]))
    detail = {
        key: value for key, value in context.items() if _plain(value) and key not in ("quoted", "section")
    }
    return Refusal(400, message, code=code, param=".".join(path) or None, detail=detail)


def version_conflict(
    expected: int, current: int, changed_by: str | None, changed_at: datetime | None
) -> Refusal:
    """412 ``version_conflict``: the change was made on ``expected`` but the configuration is at
    ``current``, saved by ``changed_by`` at ``changed_at`` (``detail`` has all four, for a page to say
    "Laura saved version 7 while you were editing")."""
    if current == 0:
        message = (
            f"The agent configuration does not exist yet (version 0), not version {expected} as expected"
        )
    else:
        message = (
            f"The agent configuration changed meanwhile: it is at version {current}, saved by {changed_by} "
            f"at {isoformat(changed_at)}, not version {expected} as expected"
        )
    return Refusal(
        412,
        message,
        code="version_conflict",
        detail={
            "expected_version": expected,
            "current_version": current,
            "changed_by": changed_by,
            "changed_at": isoformat(changed_at) if changed_at else None,
        },
    )
