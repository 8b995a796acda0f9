"""The agent studio (``/agents/<agent_id>``): one page where a supervisor shapes an AI agent.

Tabs: Prompt, Chat parameters, Tools, Notifications, Call transfers, Voice (one form, one Save), Versions
(the list, a side-by-side diff of any two, restore), Knowledge (``knowledge.py``, loaded into
``#studio-knowledge``) and a Test chat pane beside the editor (``test_chat.py``, ``#studio-test-chat``),
which runs the form's unsaved configuration (``blueprints.ai.studio_form.config_from_form``).

| URL | What |
|---|---|
| ``GET /agents/<agent_id>?tab=`` | the studio |
| ``POST /agents/<agent_id>/config`` | Save: the form's changes against the version it was loaded from |
| | (``base_version``) as a PATCH (``agents.update_config``) made only on ``expected_version`` |
| ``POST /agents/<agent_id>/preview`` | the system prompt the runtime would build from the form |
| ``GET /agents/<agent_id>/versions?a=&b=`` | the versions and the diff of two (the last two by default) |
| ``GET /agents/<agent_id>/versions?before=<n>`` | "Show more": the next versions older than ``n`` |
| ``POST /agents/<agent_id>/versions/<n>/restore`` | restore (a new version), on ``expected_version`` |

Refusals come from the members area's rules and verbs (``Refusal`` with ``code`` and ``param``): the
form is answered again as typed, the words (``blueprints.ai.pages.refusals``) under the field the
``param`` names, nothing saved. ``version_conflict``: the form as typed, a diff of the edits against the
version now stored and who saved it; saving again applies the same edits on top of that version.

Supervisors only (403 for agents); another organization's agent, a person or an unknown id is the 404.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from flask import Response, abort, make_response, render_template, request, url_for
from flask_babel import format_decimal, pgettext
from flask_babel import gettext as _

from blueprints.ai import prompt, views
from blueprints.ai.pages import pages
from blueprints.ai.pages.refusals import message_for
from blueprints.ai.studio_form import config_from_form
from blueprints.desk.errors import alert
from blueprints.desk.fragments import vary_fragment as _vary
from blueprints.desk.security import DeskUser, require_role, signed_in
from blueprints.members.agent_config import (
    CHAT_PARAMETERS,
    COMMON_SECTIONS,
    MAX_TARGETS,
    NOTIFICATION_CHANNELS,
    SECTION_TEXT_MAX_LENGTH,
    TOOLS,
    TRIGGERS,
    AgentConfigChanges,
    Refusal,
    chat_settings,
    effective_section_order,
    parse,
)
from blueprints.members.services import agents as agent_services
from core.auth import actor as make_actor
from core.errors import ApiError

TABS = ("prompt", "chat", "tools", "notifications", "transfers", "voice", "versions", "knowledge")
VERSIONS_SHOWN = 50  # rows per page of the versions' table: "Show more" fetches the older ones
_PARAMETERS = {parameter.name: parameter for parameter in CHAT_PARAMETERS}


def studio_agent(me: DeskUser, agent_id: str) -> Any:
    """The organization's AI agent (``AgentView``: member and configuration) or the page's 404."""
    try:
        return agent_services.get_agent(me.organization_id, agent_id)
    except ApiError:
        abort(404)


def _actor(me: DeskUser) -> str:
    return make_actor("user", str(me.user_id))


# -------------------------------------------------------------------------------------------- values


def stored(config: Any) -> dict[str, Any]:
    """The stored configuration in the wire's shape (``snapshot``), or an empty one."""
    if config is None:
        return {"sections": {}, "tools": {}, "notifications": {}, "call_transfers": [], "section_order": []}
    return agent_services.snapshot(config)


def _texts(values: dict[str, Any]) -> list[tuple[str, str]]:
    """The text sections to edit: as the form had them, else in the order the prompt gives them (the
    stored ``section_order``, then the default order)."""
    sections = values.get("sections") or {}
    if values.get("_from_form"):
        return [(name, text) for name, text in sections.items() if name != "chat" and isinstance(text, str)]
    return [(name, sections[name]) for name in effective_section_order(sections, values.get("section_order"))]


def _shown(value: Any) -> str:
    """A value as a field shows it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def form_values(values: dict[str, Any]) -> dict[str, Any]:
    """What the editor's template needs from a configuration (stored or as typed)."""
    sections = values.get("sections") or {}
    chat = {**chat_settings({}), **{k: v for k, v in (sections.get("chat") or {}).items()}}
    tools = values.get("tools") or {}
    notifications = values.get("notifications") or {}
    return {
        "sections": _texts(values),
        "chat": {name: _shown(value) for name, value in chat.items()},
        "tools": {tool.name: bool((tools.get(tool.name) or {}).get("enabled")) for tool in TOOLS},
        "notifications": {
            trigger.name: {
                "email": "\n".join((notifications.get(trigger.name) or {}).get("email") or []),
                "whatsapp": "\n".join((notifications.get(trigger.name) or {}).get("whatsapp") or []),
                "webhook": (notifications.get(trigger.name) or {}).get("webhook") or "",
            }
            for trigger in TRIGGERS
        },
        "call_transfers": list(values.get("call_transfers") or []),
        "voice": values.get("voice") or "",
        "agent_type": values.get("agent_type") or "",
        "business_category": values.get("business_category") or "",
    }


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return _("On") if value else _("Off")
    if isinstance(value, int | float):
        return format_decimal(value)
    return "—" if value in (None, "") else str(value)


def parameters() -> list[dict[str, Any]]:
    """The chat parameters with their range and default as the page's language writes them."""
    shown = []
    for parameter in CHAT_PARAMETERS:
        shown.append(
            {
                "name": parameter.name,
                "kind": "bool" if parameter.type is bool else "int" if parameter.type is int else "float",
                "min": parameter.min,
                "max": parameter.max,
                "range": (
                    _("%(min)s to %(max)s", min=_number(parameter.min), max=_number(parameter.max))
                    if parameter.min is not None and parameter.max is not None
                    else None
                ),
                "default": _number(parameter.default),
                "label": PARAMETER_LABELS().get(parameter.name, parameter.name),
                "help": PARAMETER_HELP().get(parameter.name, parameter.description),
            }
        )
    return shown


def PARAMETER_LABELS() -> dict[str, str]:
    return {
        "temperature": _("Temperature"),
        "context_messages": _("Earlier messages sent"),
        "context_days": _("Days of history"),
        "split_long_messages": _("Split long answers"),
    }


def PARAMETER_HELP() -> dict[str, str]:
    return {
        "temperature": _("How freely the model words its answers (0: the most predictable)."),
        "context_messages": _("Earlier messages of the conversation sent with each question (0: none)."),
        "context_days": _("Only earlier messages of the last this many days are sent."),
        "split_long_messages": _("Send an answer as one message per paragraph."),
    }


def TOOL_HELP() -> dict[str, tuple[str, str]]:
    return {
        "transfer_to_human": (
            _("Hand over to a person"),
            _("Hand the conversation to a person, or to a call-transfer rule's target."),
        ),
        "search_knowledge": (
            _("Search the knowledge"),
            _("Look up the organization's knowledge before answering."),
        ),
        "send_product": (_("Send a product"), _("Send a product of the CRM catalogue to the customer.")),
        "create_ticket": (
            _("Create a ticket"),
            _("Open a CRM support ticket for a problem that needs follow-up."),
        ),
        "schedule_meeting": (
            _("Schedule a meeting"),
            _("Book a meeting with the customer (a CRM task of type meeting)."),
        ),
    }


def TRIGGER_LABELS() -> dict[str, str]:
    labels = {"end_of_call": _("When a call with the agent ends")}
    for name, (title, _help) in TOOL_HELP().items():
        labels[name] = _("When the agent uses “%(tool)s”", tool=title)
    return labels


# ------------------------------------------------------------------------------------------ changes


def _targets_of(value: Any) -> dict[str, Any]:
    return {key: item for key, item in (value or {}).items() if item not in (None, [], "")}


def _rules_of(rules: Any) -> list[dict[str, Any]]:
    return [{key: value for key, value in rule.items() if value not in (None, "")} for rule in rules or []]


def changes_between(base: dict[str, Any], typed: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The PATCH that applies what the person changed in the form (``typed``) against the version the
    page was loaded from (``base``): changed or new sections, removed ones as null; the chat parameters
    changed, over those stored now (``current``: someone else's change of another parameter is kept);
    tools and notification triggers by key; call transfers, voice, type and category when changed."""
    changes: dict[str, Any] = {}
    sections: dict[str, Any] = {}
    old_sections, new_sections = base.get("sections") or {}, typed.get("sections") or {}
    for name, text in new_sections.items():
        if name != "chat" and old_sections.get(name) != text:
            sections[name] = text
    for name in old_sections:
        if name != "chat" and name not in new_sections:
            sections[name] = None
    old_chat = chat_settings(old_sections)
    changed = {
        name: value
        for name, value in (new_sections.get("chat") or {}).items()
        if name not in old_chat or old_chat[name] != value
    }
    if changed:
        sections["chat"] = {**chat_settings(current.get("sections") or {}), **changed}
    if sections:
        changes["sections"] = sections
    order = _order_change(base, typed, current, sections)
    if order is not None:
        changes["section_order"] = order
    tools = {}
    for tool in TOOLS:
        before = bool(((base.get("tools") or {}).get(tool.name) or {}).get("enabled"))
        after = bool(((typed.get("tools") or {}).get(tool.name) or {}).get("enabled"))
        if before != after:
            tools[tool.name] = {"enabled": after}
    if tools:
        changes["tools"] = tools
    notifications: dict[str, Any] = {}
    old_n, new_n = base.get("notifications") or {}, typed.get("notifications") or {}
    for trigger in sorted(set(old_n) | set(new_n)):
        before, after = _targets_of(old_n.get(trigger)), _targets_of(new_n.get(trigger))
        if before != after:
            notifications[trigger] = after or None
    if notifications:
        changes["notifications"] = notifications
    if _rules_of(base.get("call_transfers")) != _rules_of(typed.get("call_transfers")):
        changes["call_transfers"] = typed.get("call_transfers") or []
    for name in ("voice", "business_category"):
        if (base.get(name) or None) != (typed.get(name) or None):
            changes[name] = typed.get(name) or None
    if (base.get("agent_type") or "generic") != (typed.get("agent_type") or "generic"):
        changes["agent_type"] = typed.get("agent_type") or None
    return changes


def _order_change(
    base: dict[str, Any], typed: dict[str, Any], current: dict[str, Any], sections: dict[str, Any]
) -> list[str] | None:
    """The sections' order to save, or None when the page shows the order the prompt would give them
    anyway (the typed sections under the order the page was loaded with). What is saved is the page's
    whole order, limited to the sections the configuration will have once the edits are applied on top of
    ``current`` (someone else's removal of a section meanwhile drops it from the order, never refuses)."""
    typed_order = typed.get("section_order")
    if typed_order is None:
        return None
    new_sections = typed.get("sections") or {}
    shown = effective_section_order(new_sections, typed_order)
    if shown == effective_section_order(new_sections, base.get("section_order")):
        return None
    merged = {**(current.get("sections") or {}), **sections}
    kept = {name for name, text in merged.items() if name != "chat" and isinstance(text, str)}
    return [name for name in shown if name in kept]


# ------------------------------------------------------------------------------------------- refusals


def field_of(param: str | None) -> str | None:
    """The form field a refusal's path concerns: the path itself, or the list an item belongs to
    (``notifications.end_of_call.email.1`` is the e-mail list's field)."""
    if not param:
        return None
    parts = param.split(".")
    if parts[0] == "notifications" and len(parts) == 4 and parts[3].isdigit():
        return ".".join(parts[:3])
    if parts[0] in ("notifications", "tools") and len(parts) < 3:
        return None
    if parts[0] == "call_transfers" and len(parts) < 3:
        return None
    if parts[0] == "section_order":
        return None  # the cards' order has no field of its own: the words go above the form
    return param


def tab_of(name: str | None) -> str:
    if not name:
        return "prompt"
    if name.startswith("sections.chat"):
        return "chat"
    head = name.split(".", 1)[0]
    return {
        "sections": "prompt",
        "tools": "tools",
        "notifications": "notifications",
        "call_transfers": "transfers",
        "section_order": "prompt",
    }.get(head, "voice")


# -------------------------------------------------------------------------------------------- diffs


@dataclass
class DiffEntry:
    """One changed field between two configurations: a text (side-by-side line rows) or a value."""

    path: str
    label: str
    old: str = ""
    new: str = ""
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, left, right)

    @property
    def is_text(self) -> bool:
        return bool(self.rows)


def _line_rows(old: str, new: str) -> list[tuple[str, str, str]]:
    """Side-by-side rows of a line diff (difflib): ``same``, ``changed``, ``removed``, ``added``."""
    left, right = old.splitlines() or [""], new.splitlines() or [""]
    rows: list[tuple[str, str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if tag == "equal":
            rows.extend(("same", line, line) for line in left[i1:i2])
        elif tag == "delete":
            rows.extend(("removed", line, "") for line in left[i1:i2])
        elif tag == "insert":
            rows.extend(("added", "", line) for line in right[j1:j2])
        else:
            a, b = left[i1:i2], right[j1:j2]
            for index in range(max(len(a), len(b))):
                kind = (
                    "changed"
                    if index < len(a) and index < len(b)
                    else "removed"
                    if index < len(a)
                    else "added"
                )
                rows.append((kind, a[index] if index < len(a) else "", b[index] if index < len(b) else ""))
    return rows


def _rule_text(rule: dict[str, Any]) -> str:
    text = f"{rule.get('name')}: {rule.get('condition')} → {rule.get('target')}"
    if rule.get("announce_message"):
        text += f" («{rule['announce_message']}»)"
    return text


def diff_entries(old: dict[str, Any], new: dict[str, Any], only: set[str] | None = None) -> list[DiffEntry]:
    """What differs between two configurations, as a supervisor reads it: text sections as line diffs,
    chat parameters (defaults filled in), tools, notifications, transfers and plain fields as
    ``old → new``. ``only``: the top-level paths to compare (a conflict shows the fields edited)."""
    entries: list[DiffEntry] = []
    labels = PARAMETER_LABELS()
    tool_labels = {name: title for name, (title, _help) in TOOL_HELP().items()}
    old_s, new_s = old.get("sections") or {}, new.get("sections") or {}
    names = [n for n in dict.fromkeys([*old_s, *new_s]) if n != "chat"]
    for name in names:
        path = f"sections.{name}"
        if only is not None and path not in only:
            continue
        a, b = old_s.get(name), new_s.get(name)
        if a == b:
            continue
        entry = DiffEntry(path, _("Section “%(name)s”", name=name))
        if a is None:
            entry.old = _("(no section)")
        if b is None:
            entry.new = _("(removed)")
        entry.rows = _line_rows(a or "", b or "")
        entries.append(entry)
    if only is None or "section_order" in only:
        old_order = effective_section_order(old_s, old.get("section_order"))
        new_order = effective_section_order(new_s, new.get("section_order"))
        if (old.get("section_order") or []) != (new.get("section_order") or []) and old_order != new_order:
            entries.append(
                DiffEntry(
                    "section_order",
                    _("Order of the sections"),
                    ", ".join(old_order) or "—",
                    ", ".join(new_order) or "—",
                )
            )
    old_chat, new_chat = chat_settings(old_s), chat_settings(new_s)
    for name in dict.fromkeys([*old_chat, *new_chat]):
        path = f"sections.chat.{name}"
        if only is not None and path not in only and "sections.chat" not in only:
            continue
        if old_chat.get(name) != new_chat.get(name):
            entries.append(
                DiffEntry(
                    path, labels.get(name, name), _number(old_chat.get(name)), _number(new_chat.get(name))
                )
            )
    for tool in TOOLS:
        path = f"tools.{tool.name}"
        if only is not None and path not in only:
            continue
        a = bool(((old.get("tools") or {}).get(tool.name) or {}).get("enabled"))
        b = bool(((new.get("tools") or {}).get(tool.name) or {}).get("enabled"))
        if a != b:
            entries.append(
                DiffEntry(path, _("Tool “%(tool)s”", tool=tool_labels[tool.name]), _number(a), _number(b))
            )
    old_n, new_n = old.get("notifications") or {}, new.get("notifications") or {}
    trigger_labels = TRIGGER_LABELS()
    for trigger in TRIGGERS:
        path = f"notifications.{trigger.name}"
        if only is not None and path not in only:
            continue
        for channel in NOTIFICATION_CHANNELS:
            a = (old_n.get(trigger.name) or {}).get(channel)
            b = (new_n.get(trigger.name) or {}).get(channel)
            if (a or None) != (b or None):
                shown = [", ".join(v) if isinstance(v, list) else (v or "—") for v in (a, b)]
                entries.append(
                    DiffEntry(
                        f"{path}.{channel}",
                        f"{trigger_labels[trigger.name]} · {CHANNEL_LABELS()[channel]}",
                        shown[0] or "—",
                        shown[1] or "—",
                    )
                )
    if (only is None or "call_transfers" in only) and _rules_of(old.get("call_transfers")) != _rules_of(
        new.get("call_transfers")
    ):
        entry = DiffEntry("call_transfers", _("Call transfers"))
        entry.rows = _line_rows(
            "\n".join(_rule_text(r) for r in old.get("call_transfers") or []),
            "\n".join(_rule_text(r) for r in new.get("call_transfers") or []),
        )
        entries.append(entry)
    plain = {"voice": _("Voice"), "agent_type": _("Agent type"), "business_category": _("Business category")}
    for name, label in plain.items():
        if only is not None and name not in only:
            continue
        a, b = old.get(name) or None, new.get(name) or None
        if name == "agent_type":
            a, b = a or "generic", b or "generic"
        if a != b:
            entries.append(DiffEntry(name, label, _number(a), _number(b)))
    return entries


def CHANNEL_LABELS() -> dict[str, str]:
    return {"email": _("E-mail"), "whatsapp": _("WhatsApp"), "webhook": _("Webhook")}


def who(organization_id: Any, actor: str | None, names: dict[str, str] | None = None) -> str:
    """Who saved a version, as a person reads it."""
    if not actor:
        return _("System")
    names = names if names is not None else views.actor_names(organization_id, [actor])
    kind, _colon, identifier = actor.partition(":")
    if kind in ("user", "member"):
        return names.get(actor, _("A former member"))
    if kind == "api_key":
        return _("API key %(prefix)s…", prefix=identifier)
    return _("System")


# --------------------------------------------------------------------------------------------- pages


def _editor_context(
    me: DeskUser,
    view: Any,
    values: dict[str, Any],
    *,
    base_version: int,
    expected_version: int,
    errors: dict[str, str] | None = None,
    general: str | None = None,
    general_kind: str = "danger",
    tab: str = "prompt",
    conflict: dict[str, Any] | None = None,
    saved: int | None = None,
) -> dict[str, Any]:
    return {
        "me": me,
        "agent": view.member,
        "view": view,
        "form": form_values(values),
        "parameters": parameters(),
        "tools": [(tool.name, *TOOL_HELP()[tool.name]) for tool in TOOLS],
        "triggers": [(trigger.name, TRIGGER_LABELS()[trigger.name]) for trigger in TRIGGERS],
        "channels": CHANNEL_LABELS(),
        "max_targets": MAX_TARGETS,
        "section_max": SECTION_TEXT_MAX_LENGTH,
        "section_max_text": format_decimal(SECTION_TEXT_MAX_LENGTH),
        "common_sections": COMMON_SECTIONS,
        "base_version": base_version,
        "expected_version": expected_version,
        "errors": errors or {},
        "general": general,
        "general_kind": general_kind if general else "",
        "tab": tab if tab in TABS else "prompt",
        "conflict": conflict,
        "saved": saved,
        "config_id": str(view.config.id) if view.config is not None else "",
    }


@pages.get("/agents/<agent_id>")
@require_role("supervisor")
def studio_page(agent_id: str) -> Response:
    me = signed_in()
    view = studio_agent(me, agent_id)
    version = view.config.version if view.config is not None else 0
    context = _editor_context(
        me,
        view,
        stored(view.config),
        base_version=version,
        expected_version=version,
        tab=request.args.get("tab") or "prompt",
    )
    return _vary(make_response(render_template("ai/studio/page.html", **context)))


@pages.post("/agents/<agent_id>/config")
@require_role("supervisor")
def save_config(agent_id: str) -> Response:
    me = signed_in()
    view = studio_agent(me, agent_id)
    typed = {**config_from_form(request.form), "_from_form": True}
    try:
        base_version = int(request.form.get("base_version") or 0)
        expected_version = int(request.form.get("expected_version") or 0)
    except ValueError:
        abort(400)
    tab = request.form.get("studio_tab") or "prompt"
    current = stored(view.config)
    base_row = (
        views.config_version(me.organization_id, view.config.id, base_version)
        if view.config is not None
        else None
    )
    base = base_row.snapshot if base_row is not None else current
    changes = changes_between(base, typed, current)

    def again(status: int, **extra: Any) -> Response:
        extra.setdefault("tab", tab)
        context = _editor_context(
            me, view, typed, base_version=base_version, expected_version=expected_version, **extra
        )
        return _vary(make_response(render_template("ai/studio/_editor.html", **context), status))

    if not changes:
        return again(
            200, general=_("Nothing changed since version %(n)s.", n=base_version), general_kind="secondary"
        )
    try:
        checked = parse(AgentConfigChanges, changes, organization_id=me.organization_id)
        config = agent_services.update_config(
            me.organization_id, agent_id, checked, changed_by=_actor(me), expected_version=expected_version
        )
    except Refusal as refusal:
        if refusal.code == "version_conflict":
            return _conflict(me, view, typed, base_version, refusal, changes, tab)
        name = field_of(refusal.param)
        words = message_for(refusal)
        if name is None:
            return again(422, general=words)
        return again(422, errors={name: words}, tab=tab_of(name))
    view = agent_services.get_agent(me.organization_id, agent_id)
    context = _editor_context(
        me,
        view,
        stored(config),
        base_version=config.version,
        expected_version=config.version,
        tab=tab,
        saved=config.version,
    )
    response = _vary(make_response(render_template("ai/studio/_editor.html", **context)))
    response.headers["HX-Trigger-After-Settle"] = "studio:saved"
    return response


def _conflict(
    me: DeskUser,
    view: Any,
    typed: dict[str, Any],
    base_version: int,
    refusal: Refusal,
    changes: dict[str, Any],
    tab: str,
) -> Response:
    """Someone saved meanwhile: the form as typed, who saved which version, and the edits against it."""
    detail = refusal.detail
    current_version = int(detail.get("current_version") or 0)
    now = agent_services.get_config(me.organization_id, view.member.id)
    edited: set[str] = set()
    for name, value in changes.items():
        if isinstance(value, dict):
            edited.update(f"{name}.{key}" for key in value)
        else:
            edited.add(name)
    conflict = {
        "author": who(me.organization_id, detail.get("changed_by")),
        "version": current_version,
        "entries": diff_entries(stored(now), typed, only=edited),
    }
    context = _editor_context(
        me,
        view,
        typed,
        base_version=base_version,
        expected_version=current_version,
        tab=tab,
        conflict=conflict,
    )
    return _vary(make_response(render_template("ai/studio/_editor.html", **context), 422))


@pages.post("/agents/<agent_id>/preview")
@require_role("supervisor")
def preview(agent_id: str) -> Response:
    me = signed_in()
    view = studio_agent(me, agent_id)
    typed = config_from_form(request.form)
    sections = {k: v for k, v in (typed.get("sections") or {}).items() if isinstance(v, str)}
    enabled = [name for name, setting in (typed.get("tools") or {}).items() if setting.get("enabled")]
    text = prompt.system_prompt(
        sections, enabled, typed.get("call_transfers") or [], None, typed.get("section_order")
    )
    return _vary(make_response(render_template("ai/studio/_preview.html", agent=view.member, text=text)))


@pages.get("/agents/<agent_id>/versions")
@require_role("supervisor")
def versions_pane(agent_id: str) -> Response:
    me = signed_in()
    view = studio_agent(me, agent_id)
    try:
        before = int(request.args["before"]) if request.args.get("before") else None
    except ValueError:
        abort(400)
    if before is not None and view.config is not None:
        rows = _version_rows(me, view, before)
        return _vary(make_response(render_template("ai/studio/_version_rows.html", **rows)))
    return _vary(make_response(render_template("ai/studio/_versions.html", **_versions_context(me, view))))


def _version_rows(me: DeskUser, view: Any, before: int | None) -> dict[str, Any]:
    """A page of the versions' table (newest first, older than ``before``), with the next page's cursor."""
    page = agent_services.list_versions(
        me.organization_id, view.member.id, offset=0, limit=VERSIONS_SHOWN, before=before
    )
    versions = list(page.items)
    names = views.actor_names(me.organization_id, [v.changed_by for v in versions])
    return {
        "me": me,
        "agent": view.member,
        "config": view.config,
        "versions": [
            {
                "row": v,
                "author": who(me.organization_id, v.changed_by, names),
                "action": ACTION_LABELS().get(v.action, v.action),
            }
            for v in versions
        ],
        # the oldest version shown is the next page's cursor
        "next_before": versions[-1].version if page.total > len(versions) and versions else None,
    }


def _versions_context(me: DeskUser, view: Any) -> dict[str, Any]:
    if view.config is None:
        return {"me": me, "agent": view.member, "versions": [], "entries": [], "a": None, "b": None}
    context = _version_rows(me, view, None)
    # any two versions can be compared, shown in the table or not (the numbers: one query)
    numbers = agent_services.version_numbers(view.config)

    def chosen(name: str, fallback: int | None) -> int | None:
        try:
            value = int(request.args.get(name) or 0)
        except ValueError:
            value = 0
        return value if value in numbers else fallback

    newest = numbers[0] if numbers else None
    previous = numbers[1] if len(numbers) > 1 else None
    a, b = chosen("a", previous), chosen("b", newest)
    entries: list[DiffEntry] = []
    if a is not None and b is not None:
        by_number = agent_services.versions_by_number(view.config, [a, b])
        entries = diff_entries(by_number[a].snapshot, by_number[b].snapshot)
    return {**context, "numbers": numbers, "entries": entries, "a": a, "b": b}


def ACTION_LABELS() -> dict[str, str]:
    return {
        "create": pgettext("version", "Created"),
        "replace": _("Replaced"),
        "update": _("Edited"),
        "restore": _("Restored"),
    }


@pages.post("/agents/<agent_id>/versions/<int:version>/restore")
@require_role("supervisor")
def restore(agent_id: str, version: int) -> Response:
    me = signed_in()
    view = studio_agent(me, agent_id)
    try:
        expected = int(request.form.get("expected_version") or 0) or None
    except ValueError:
        abort(400)
    try:
        config = agent_services.restore_version(
            me.organization_id, view.member.id, version, changed_by=_actor(me), expected_version=expected
        )
    except Refusal as refusal:
        if refusal.code == "version_conflict":
            detail = refusal.detail
            return alert(
                _(
                    "%(author)s saved version %(version)s meanwhile: look at it before restoring.",
                    author=who(me.organization_id, detail.get("changed_by")),
                    version=detail.get("current_version"),
                ),
            )
        return alert(message_for(refusal))
    target = url_for("ai_pages.studio_page", agent_id=view.member.id, tab="versions", restored=config.version)
    response = make_response("", 204)
    response.headers["HX-Redirect"] = target
    return response
