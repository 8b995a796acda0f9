"""Prompt assembly: the system message from the configuration, then the conversation.

System message, in this order (each part only when present; headings in English, texts as configured):

1. the text sections in the configuration's ``section_order`` (what a supervisor set in the studio); the
   sections it does not name follow in the default order: ``identity``, ``rules``, ``tone``,
   ``knowledge``, ``escalation``, ``closing`` (the common sections), then every other section by name
   (alphabetical; ``chat`` holds parameters, never text). A section with blank text is left out;
2. ``Tools``: one line of guidance per *enabled* tool;
3. ``Transfers``: the ``call_transfers`` rules (name, condition, announce message) when
   ``transfer_to_human`` is enabled, so the model can name the rule whose condition holds;
4. ``Conversation``: the channel, the contact's name and the current time (UTC).

Then the history (``context_messages`` previous messages within ``context_days``; none when
``context_messages`` is 0), incoming messages as ``user`` and outgoing ones as ``assistant``, and last the
messages of the burst being answered (``user``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from blueprints.members.agent_config import COMMON_SECTIONS, chat_settings, effective_section_order

# The configuration's rules (section names, chat parameters and their defaults) are the members area's
# (blueprints/members/agent_config.py); the prompt only reads them.
SECTION_ORDER = COMMON_SECTIONS
TOOL_GUIDANCE = {
    "transfer_to_human": "transfer_to_human: hand the conversation to a person when the customer asks for "
    "one, when a transfer rule's condition holds (name the rule), or when you cannot help. Write a short "
    "hand-off note for the person.",
    "search_knowledge": "search_knowledge: look up the organization's knowledge before answering questions "
    "about policies, prices, schedules or procedures. Never invent facts that the knowledge does not give.",
    "send_product": "send_product: send a product of the catalogue to the customer (by its id, or by a "
    "search query) when they ask about a product.",
    "create_ticket": "create_ticket: open a support ticket when the customer reports a problem that needs "
    "follow-up.",
    "schedule_meeting": "schedule_meeting: book a meeting with the customer at an agreed date and time "
    "(ISO 8601, with the time zone).",
}
_HEADINGS = {name: name.replace("_", " ").capitalize() for name in SECTION_ORDER}


def chat_parameters(sections: dict[str, Any]) -> dict[str, Any]:
    """``sections.chat`` with the defaults for what is not set (``agent_config.CHAT_PARAMETERS``)."""
    return chat_settings(sections)


def ordered_sections(sections: dict[str, Any], order: list[str] | None = None) -> list[tuple[str, str]]:
    """(name, text) of the text sections with text, in ``order`` (the configuration's ``section_order``)
    and then the documented default order (``agent_config.effective_section_order``)."""
    return [
        (name, sections[name])
        for name in effective_section_order(sections, order)
        if str(sections[name]).strip()
    ]


@dataclass(frozen=True)
class ConversationFacts:
    service: str
    contact_name: str | None
    now: datetime


def system_prompt(
    sections: dict[str, Any],
    enabled_tools: list[str],
    call_transfers: list[dict[str, Any]],
    facts: ConversationFacts | None,
    section_order: list[str] | None = None,
) -> str:
    parts: list[str] = []
    for name, value in ordered_sections(sections, section_order):
        heading = _HEADINGS.get(name) or name.replace("_", " ").replace("-", " ").capitalize()
        parts.append(f"## {heading}\n{value.strip()}")
    if enabled_tools:
        lines = [f"- {TOOL_GUIDANCE[name]}" for name in enabled_tools if name in TOOL_GUIDANCE]
        parts.append("## Tools\n" + "\n".join(lines))
    if "transfer_to_human" in enabled_tools and call_transfers:
        lines = []
        for rule in call_transfers:
            line = f"- {rule.get('name')}: when {rule.get('condition')}"
            if rule.get("announce_message"):
                line += f' (tell the customer: "{rule["announce_message"]}")'
            lines.append(line)
        parts.append(
            "## Transfers\nWhen one of these conditions holds, call transfer_to_human with its rule name:\n"
            + "\n".join(lines)
        )
    if facts is not None:
        lines = [f"Channel: {facts.service}"]
        if facts.contact_name:
            lines.append(f"Customer name: {facts.contact_name}")
        lines.append(f"Current time (UTC): {facts.now.strftime('%Y-%m-%d %H:%M')}")
        parts.append("## Conversation\n" + "\n".join(lines))
    return "\n\n".join(parts)


def message_text(content: dict[str, Any] | None, template: dict[str, Any] | None) -> str:
    """What a stored message says, as text for the model (media as a bracketed mention)."""
    if template:
        return str(template.get("text") or f"[template {template.get('name')}]")
    content = content or {}
    kind = content.get("kind") or "text"
    text = content.get("text") or content.get("caption") or ""
    if kind == "text":
        return str(text)
    if kind == "location":
        location = content.get("location") or {}
        return (
            f"[location {location.get('name') or ''} {location.get('latitude')},{location.get('longitude')}]"
        )
    return f"[{kind}] {text}".strip()


def prompt_chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)
