"""An AI agent's configuration as the verbs take it: the typed inputs, the one check that reads raw values
into them, and the rules a page shows (re-exported from ``agent_config_rules``).

- :class:`AgentConfigDraft`: a whole configuration (POST ``agent-config`` replaces everything with it);
- :class:`AgentConfigChanges`: a PATCH; a field left at :data:`UNSET` was not sent and changes nothing,
  ``None`` was sent as null (sections, tools and notifications merge by key, and a key sent as null is
  removed; ``agent_type`` null returns to ``generic``).

Both are frozen dataclasses in the wire's field names, each field annotated with its rule
(``agent_config_rules``): the same types the API's request models declare, so a rule lives once.
:func:`parse` reads raw values (a request body, a page's form) into one, :func:`check` checks one
whoever built it (every verb does), and both refuse with a :class:`Refusal`: the API's status and
message, a stable ``code`` and the field path (``param``) it concerns. Whether a call transfer's member
target exists needs the database: :func:`check_targets` (also run by :func:`parse` / :func:`check` when
given the organization). Whether ``section_order`` names only sections needs the sections: a draft's are
its own (checked by :func:`parse` / :func:`check`), a PATCH's are those merged by the verb
(:func:`check_section_order`).

A page that edits a configuration also sends the version it started from (``expected_version``); a verb
that finds another version stored refuses with ``version_conflict`` (412), whose ``detail`` says which
version is stored, who saved it and when (:func:`agent_config_rules.version_conflict`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, fields, replace
from typing import (
    Any,
    TypeVar,
    get_type_hints,
)

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from blueprints.members.agent_config_rules import (
    CHAT_DEFAULTS,
    CHAT_PARAMETERS,
    CODES,
    COMMON_SECTIONS,
    DEFAULT_AGENT_TYPE,
    MAX_SECTION_ORDER,
    MAX_TARGETS,
    MAX_TRANSFERS,
    NOTIFICATION_CHANNELS,
    SECTION_NAME,
    SECTION_TEXT_MAX_LENGTH,
    TOOL_NAMES,
    TOOLS,
    TRIGGER_NAMES,
    TRIGGERS,
    AgentType,
    BusinessCategory,
    CallTransfer,
    CallTransfers,
    ChatParameter,
    ChatSection,
    Named,
    Notifications,
    NotificationTargets,
    Refusal,
    SectionOrder,
    Sections,
    Tools,
    ToolSetting,
    Voice,
    chat_settings,
    effective_section_order,
    effective_sections,
    refusal_from,
    section_order_refused,
    target_type,
    version_conflict,
)
from blueprints.members.services.members import members_by_ids
from core.validation import find_unstorable_text

__all__ = [
    "CHAT_DEFAULTS",
    "CHAT_PARAMETERS",
    "CODES",
    "COMMON_SECTIONS",
    "DEFAULT_AGENT_TYPE",
    "MAX_SECTION_ORDER",
    "MAX_TARGETS",
    "MAX_TRANSFERS",
    "NOTIFICATION_CHANNELS",
    "SECTION_NAME",
    "SECTION_TEXT_MAX_LENGTH",
    "TOOLS",
    "TOOL_NAMES",
    "TRIGGERS",
    "TRIGGER_NAMES",
    "UNSET",
    "AgentConfigChanges",
    "AgentConfigDraft",
    "CallTransfer",
    "ChatParameter",
    "ChatSection",
    "Named",
    "NotificationTargets",
    "Refusal",
    "Sections",
    "ToolSetting",
    "Unset",
    "chat_settings",
    "check",
    "check_section_order",
    "check_targets",
    "effective_section_order",
    "effective_sections",
    "given",
    "parse",
    "sent",
    "target_type",
    "version_conflict",
]

from core.changes import UNSET, Unset, given, sent, without_unset

T = TypeVar("T")
C = TypeVar("C", "AgentConfigDraft", "AgentConfigChanges")

# The request models' own configuration (core.validation.RequestModel): a verb reads a value as the API
# does (top-level text trimmed, no infinities).
CONFIG = ConfigDict(str_strip_whitespace=True, allow_inf_nan=False)


# Fields in the request models' order (tools ... call_transfers, then sections and agent_type): the first
# refusal of a body that breaks several rules is the one the API names.


@dataclass(frozen=True, kw_only=True)
class AgentConfigDraft:
    """A whole configuration: what is not given returns to its default."""

    tools: Tools | None = None
    voice: Voice | None = None
    business_category: BusinessCategory | None = None
    notifications: Notifications | None = None
    call_transfers: CallTransfers | None = None
    section_order: SectionOrder | None = None
    sections: Sections
    agent_type: AgentType = DEFAULT_AGENT_TYPE

    def values(self) -> dict[str, Any]:
        """Every field as JSON values in the wire's names (nested values as sent: a chat parameter or a
        notification channel not given is left out)."""
        return {field.name: _json(getattr(self, field.name)) for field in fields(self)}


@dataclass(frozen=True, kw_only=True)
class AgentConfigChanges:
    """A partial update: fields left at UNSET change nothing."""

    tools: Tools | Unset | None = UNSET
    voice: Voice | Unset | None = UNSET
    business_category: BusinessCategory | Unset | None = UNSET
    notifications: Notifications | Unset | None = UNSET
    call_transfers: CallTransfers | Unset | None = UNSET
    section_order: SectionOrder | Unset | None = UNSET
    sections: Sections | Unset | None = UNSET
    agent_type: AgentType | Unset | None = UNSET

    def values(self) -> dict[str, Any]:
        """The fields sent, as JSON values in the wire's names (null included)."""
        return {
            field.name: _json(getattr(self, field.name))
            for field in fields(self)
            if getattr(self, field.name) is not UNSET
        }


# ----------------------------------------------------------------------------------------- checking

_ADAPTERS: dict[tuple[type[Any], str], TypeAdapter[Any]] = {}


def _adapter(cls: type[Any], name: str) -> TypeAdapter[Any]:
    """The field's rule, built once per field (building a TypeAdapter costs far more than using it)."""
    found = _ADAPTERS.get((cls, name))
    if found is None:
        hint = without_unset(get_type_hints(cls, include_extras=True)[name])
        # A model brings its own configuration (pydantic refuses another one for it).
        own = isinstance(hint, type) and issubclass(hint, BaseModel)
        found = _ADAPTERS[(cls, name)] = TypeAdapter(hint, config=None if own else CONFIG)
    return found


def _json(value: Any) -> Any:
    """Checked values as JSON values: models as sent (``exclude_unset``), mappings and lists inside."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True)
    if isinstance(value, Mapping):
        return {key: _json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    return value


def _unstorable_at(value: Any, path: tuple[str, ...]) -> tuple[str, str] | None:
    """``(path, reason)`` of the innermost value that cannot be stored (NUL, a lone surrogate, nesting or
    sizes beyond core.validation's bounds), or None."""
    reason = find_unstorable_text(value)
    if reason is None:
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _unstorable_at(key, (*path, str(key))) or _unstorable_at(item, (*path, str(key)))
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _unstorable_at(item, (*path, str(index)))
            if found:
                return found
    return ".".join(path), reason


def _check_field(cls: type[Any], name: str, value: Any) -> Any:
    plain = _json(value)
    problem = find_unstorable_text(plain)
    if problem:
        # The API names the top-level field in its message (core.validation's edge rule); the path is
        # the value's own.
        found = _unstorable_at(plain, (name,))
        param = found[0] if found else name
        raise Refusal(400, f"{name}: {problem}", code="value_unstorable", param=param)
    try:
        return _adapter(cls, name).validate_python(plain)
    except ValidationError as error:
        raise refusal_from(error.errors(include_url=False), (name,)) from None


def check(config: C, *, organization_id: uuid.UUID | None = None) -> C:
    """``config`` with every field given read by its rule (addresses and numbers normalised, text of the
    top-level fields trimmed, sections, tools and notifications as their models), or the first field's
    :class:`Refusal`, fields in the request models' order. With ``organization_id``, a call transfer's
    member target must be a member of the organization (:func:`check_targets`)."""
    values: dict[str, Any] = {}
    for field in fields(config):
        value = getattr(config, field.name)
        if value is UNSET or value is field.default:
            continue
        values[field.name] = _check_field(type(config), field.name, value)
    checked = replace(config, **values) if values else config
    _check_draft_order(checked)
    if organization_id is not None and given(checked.call_transfers):
        check_targets(organization_id, checked.call_transfers)
    return checked


def parse(cls: type[C], values: Mapping[str, Any], *, organization_id: uuid.UUID | None = None) -> C:
    """A checked input from raw values in the wire's field names (a request body, a page's form); names
    the input does not have are ignored, as the request models ignore them. ``sections`` left out of a
    draft is refused as ``value_required``."""
    if not isinstance(values, Mapping):
        raise Refusal(400, "Request body must be a JSON object", code="value_not_an_object")
    checked: dict[str, Any] = {}
    for field in fields(cls):
        if field.name in values:
            value = values[field.name]
            checked[field.name] = value if value is field.default else _check_field(cls, field.name, value)
        elif field.default is MISSING and field.default_factory is MISSING:
            raise Refusal(400, f"{field.name}: Field required", code="value_required", param=field.name)
    config = cls(**checked)
    _check_draft_order(config)
    if organization_id is not None and given(config.call_transfers):
        check_targets(organization_id, config.call_transfers)
    return config


def check_section_order(order: list[str] | None, sections: Mapping[str, Any]) -> None:
    """Every name of ``order`` must be a text section of ``sections`` (the configuration's sections as
    they will be stored): ``section_order_unknown`` under ``section_order.<n>`` otherwise."""
    refused = section_order_refused(order or [], sections)
    if refused is not None:
        raise refused


def _check_draft_order(config: AgentConfigDraft | AgentConfigChanges) -> None:
    """A whole configuration carries its sections, so its order is checked against them here; a PATCH's
    order is checked by the verb against the sections it merges (``agents.update_config``)."""
    if isinstance(config, AgentConfigDraft) and config.section_order:
        check_section_order(config.section_order, _json(config.sections))


def check_targets(organization_id: uuid.UUID, transfers: Iterable[CallTransfer | Mapping[str, Any]]) -> None:
    """A call transfer's member target must be a member of the organization (one query):
    ``transfer_target_unknown`` under ``call_transfers.<n>.target`` otherwise. Phone targets pass."""
    targets = [t.target if isinstance(t, CallTransfer) else str(t["target"]) for t in transfers]
    known = members_by_ids(organization_id, [t for t in targets if target_type(t) == "member"])
    for index, target in enumerate(targets):
        if target_type(target) == "member" and target not in known:
            param = f"call_transfers.{index}.target"
            raise Refusal(
                400, f"{param}: no member with id {target!r}", code="transfer_target_unknown", param=param
            )
