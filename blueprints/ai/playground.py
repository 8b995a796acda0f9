"""The playground: an agent (its stored configuration, or an unsaved one) on a sample conversation.

Nothing reaches a customer and nothing is written: tools run in dry run (``search_knowledge`` really
searches; the others describe what they would do), the run is not recorded and no event is published.
The sample's trailing ``customer`` messages are the burst being answered; the messages before them are
the history (``context_messages`` of them; ``context_days`` does not apply to a sample).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from blueprints.ai import offline, prompt, splitting, tools
from blueprints.ai.provider import ProviderError, chat_provider
from blueprints.ai.runtime import AgentSetup, agent_setup, converse
from blueprints.members.services import agents
from core.db import utcnow
from core.errors import ApiError


@dataclass
class PlaygroundResult:
    answer: list[str]
    tool_calls: list[dict[str, Any]]
    model: str
    latency_ms: int
    outcome: str
    error: str | None = None
    prompt_chars: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _setup(organization_id: uuid.UUID, agent_id: str, config: dict[str, Any] | None) -> AgentSetup:
    if config is None:
        setup = agent_setup(organization_id, agent_id)
        if setup is None:
            agents.get_config(organization_id, agent_id)  # 404/400 in the members area's words
            raise ApiError(404, "No Agent configuration found")
        return setup
    agents.get_agent(organization_id, agent_id)  # the agent must exist (404 otherwise)
    return AgentSetup(
        agent_id=agent_id,
        sections=dict(config.get("sections") or {}),
        tools={k: v for k, v in (config.get("tools") or {}).items() if v is not None},
        call_transfers=list(config.get("call_transfers") or []),
        version=None,
        section_order=list(config.get("section_order") or []),
    )


def run_test(
    organization_id: uuid.UUID,
    agent_id: str,
    sample: list[dict[str, str]],
    config: dict[str, Any] | None,
    service: str = "whatsapp",
) -> PlaygroundResult:
    setup = _setup(organization_id, agent_id, config)
    split = 0
    for index in range(len(sample), 0, -1):
        if sample[index - 1]["role"] != "customer":
            split = index
            break
    earlier, burst = sample[:split], sample[split:]
    if not burst:
        raise ApiError(400, "messages: the last message must be the customer's", param="messages")
    count = int(setup.chat.get("context_messages") or 0)
    earlier = earlier[-count:] if count > 0 else []
    context = tools.ToolContext(
        organization_id=organization_id,
        agent_id=agent_id,
        sections=setup.sections,
        call_transfers=setup.call_transfers,
        enabled=setup.enabled,
        conversation=None,
        dry_run=True,
    )
    split_long = bool(setup.chat.get("split_long_messages"))
    provider = chat_provider()
    question = "\n".join(m["text"] for m in burst)
    started = time.perf_counter()
    if provider is None:
        answer = offline.respond(organization_id, agent_id, setup.sections, question)
        latency = int((time.perf_counter() - started) * 1000)
        if answer.small_talk:
            return PlaygroundResult(
                [], [answer.tool_call(question)], offline.OFFLINE_MODEL, latency, "no_answer"
            )
        if answer.text is None:
            return PlaygroundResult(
                [],
                [
                    answer.tool_call(question),
                    {"name": "transfer_to_human", "arguments": {}, "result": {"dry_run": True}},
                ],
                offline.OFFLINE_MODEL,
                latency,
                "handed_off",
            )
        parts = splitting.answer_parts(answer.text, service, split_long)
        return PlaygroundResult(
            parts, [answer.tool_call(question)], offline.OFFLINE_MODEL, latency, "answered"
        )
    system = prompt.system_prompt(
        setup.sections,
        setup.enabled,
        setup.call_transfers,
        prompt.ConversationFacts(service, None, utcnow()),
        setup.section_order,
    )
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for item in [*earlier, *burst]:
        messages.append(
            {"role": "user" if item["role"] == "customer" else "assistant", "content": item["text"]}
        )
    try:
        result = converse(provider, setup, messages, context)
    except ProviderError as error:
        latency = int((time.perf_counter() - started) * 1000)
        return PlaygroundResult([], [], provider.model, latency, "failed_handed_off", f"model {error.reason}")
    parts = [p for text in result.answer for p in splitting.answer_parts(text, service, split_long)]
    return PlaygroundResult(
        parts,
        result.tool_calls,
        result.model or provider.model,
        result.latency_ms,
        result.outcome,
        prompt_chars=result.prompt_chars,
    )
