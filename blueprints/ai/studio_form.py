"""The agent studio's form read as a configuration (the desk's ``/agents/<agent_id>`` page).

Every field of the studio's form is named by its configuration path, as the API's refusals name it:
``sections.identity``, ``sections.chat.temperature``, ``tools.create_ticket.enabled``,
``notifications.end_of_call.email``, ``call_transfers.0.target``, ``voice``, ``agent_type``,
``business_category``, and ``section_order`` (one hidden input per section card, in the cards' order: the
drag and the Move up / Move down buttons move the cards, so the form posts the order shown).
:func:`config_from_form` turns such a form into the configuration in the wire's
shape (what ``POST agent-config`` and the playground's ``config`` take). It reads and converts, and
checks nothing: the rules are the members area's (``blueprints.members.agent_config.parse``), so a value
the rules refuse (``1.5`` for the temperature, ``abc`` for a number) is handed over as typed and refused
there, with its code and field path.

Form conventions:

- a switch (a boolean) is a hidden ``false`` followed by a checkbox ``true`` of the same name: the last
  value wins;
- a number left empty is left out (its default applies); one that is not a number goes as typed;
- e-mail addresses and WhatsApp numbers are one per line (commas also separate); an empty list, an empty
  webhook and a trigger without targets are left out;
- a call-transfer row is ``call_transfers.<n>.<field>``; rows go in the order of ``n``, a row left
  entirely empty is dropped, an empty ``announce_message`` is left out;
- ``section_order`` values are read in the form's order (empty ones left out); without any, the
  configuration has no ``section_order`` (the default order);
- ``voice`` and ``business_category`` left empty are null; ``agent_type`` left empty is left out
  (``generic``).

The other fields of the page (``expected_version``, the CSRF token) are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from werkzeug.datastructures import MultiDict

from blueprints.members.agent_config import CHAT_PARAMETERS, NOTIFICATION_CHANNELS

_PARAMETERS = {parameter.name: parameter for parameter in CHAT_PARAMETERS}
_TRUE = {"true", "on", "1", "yes"}
_SEPARATORS = re.compile(r"[\n,;]+")
TRANSFER_FIELDS = ("name", "condition", "target", "announce_message")


def _last(form: MultiDict[str, str], name: str) -> str:
    values = form.getlist(name)
    return values[-1] if values else ""


def _boolean(value: str) -> bool:
    return value.strip().lower() in _TRUE


def _number(value: str, kind: type) -> Any:
    """The typed text as a number of ``kind``, or as typed when it is not one (the rules refuse it)."""
    text = value.strip().replace(",", ".") if kind is float else value.strip()
    try:
        if kind is int:
            number = float(text)
            return int(number) if number.is_integer() else number
        return float(text)
    except ValueError:
        return value


def _chat_value(name: str, value: str) -> Any:
    parameter = _PARAMETERS.get(name)
    if parameter is None:
        return value  # an unknown parameter: refused as field_unknown by the rules
    if parameter.type is bool:
        return _boolean(value)
    return _number(value, parameter.type)


def _targets(value: str) -> list[str]:
    return [item.strip() for item in _SEPARATORS.split(value) if item.strip()]


def config_from_form(form: Mapping[str, Any] | MultiDict[str, str]) -> dict[str, Any]:
    """The studio's form as a whole configuration in the wire's shape (see the module's docstring).
    Sections keep the order of the form."""
    if not isinstance(form, MultiDict):
        form = MultiDict(form)
    sections: dict[str, Any] = {}
    chat: dict[str, Any] = {}
    tools: dict[str, Any] = {}
    notifications: dict[str, dict[str, Any]] = {}
    transfers: dict[int, dict[str, str]] = {}
    config: dict[str, Any] = {}
    for name in form:  # each name once, in the order of the form
        value = _last(form, name)
        path = name.split(".")
        head = path[0]
        if head == "sections" and len(path) == 3 and path[1] == "chat":
            if value.strip() != "" or _PARAMETERS.get(path[2]) is None:
                chat[path[2]] = _chat_value(path[2], value)
        elif head == "sections" and len(path) >= 2:
            sections[".".join(path[1:])] = value.replace("\r\n", "\n")
        elif head == "tools" and len(path) == 3 and path[2] == "enabled":
            tools[path[1]] = {"enabled": _boolean(value)}
        elif head == "notifications" and len(path) == 3 and path[2] in NOTIFICATION_CHANNELS:
            trigger = notifications.setdefault(path[1], {})
            if path[2] == "webhook":
                if value.strip():
                    trigger["webhook"] = value.strip()
            else:
                found = _targets(value)
                if found:
                    trigger[path[2]] = found
        elif head == "call_transfers" and len(path) == 3 and path[1].isdigit() and path[2] in TRANSFER_FIELDS:
            transfers.setdefault(int(path[1]), {})[path[2]] = value.strip()
        elif name in ("voice", "business_category"):
            config[name] = value.strip() or None
        elif name == "agent_type" and value.strip():
            config[name] = value.strip()
        elif name == "section_order":
            config[name] = [item.strip() for item in form.getlist(name) if item.strip()]
    if chat:
        sections["chat"] = chat
    rules = []
    for index in sorted(transfers):
        row = transfers[index]
        if not any(row.values()):
            continue
        rule = {key: row.get(key, "") for key in ("name", "condition", "target")}
        if row.get("announce_message"):
            rule["announce_message"] = row["announce_message"]
        rules.append(rule)
    return {
        "sections": sections,
        "tools": tools,
        "notifications": {trigger: targets for trigger, targets in notifications.items() if targets},
        "call_transfers": rules,
        **config,
    }
