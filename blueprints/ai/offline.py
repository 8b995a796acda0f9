"""The offline responder: what an agent does when no model is configured (``LLM_BASE_URL``/``LLM_MODEL``
unset). It answers the customer's messages with the best passage of the agent's knowledge
(``sections.knowledge`` and the organization's knowledge documents, searched exactly as the
``search_knowledge`` tool searches them) when that passage is relevant (it contains at least half of the
question's words), and otherwise hands the conversation to a person. Messages with nothing to look up
(greetings, thanks: only common words) get no answer and no hand-off (run outcome ``no_answer``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from blueprints.ai import knowledge

OFFLINE_MODEL = "offline"


@dataclass(frozen=True)
class OfflineAnswer:
    text: str | None  # None: nothing relevant, hand off (unless small talk)
    hit: knowledge.Hit | None
    small_talk: bool = False  # only greetings, thanks and such: no answer, no hand-off

    def tool_call(self, question: str) -> dict[str, Any]:
        """The search the responder made, recorded like a tool call of the run."""
        return {
            "name": "search_knowledge",
            "arguments": {"query": question},
            "result": {"results": [self.hit.as_dict()] if self.hit else []},
        }


def respond(
    organization_id: uuid.UUID, agent_id: str, sections: dict[str, Any], question: str
) -> OfflineAnswer:
    if not knowledge.query_words(question):
        return OfflineAnswer(None, None, small_talk=True)
    section = sections.get("knowledge") if isinstance(sections.get("knowledge"), str) else None
    hit = knowledge.best_relevant(organization_id, question, agent_id=agent_id, section=section)
    if hit is None:
        return OfflineAnswer(None, None)
    text = f"{hit.title}\n{hit.passage}" if hit.title and hit.title not in hit.passage else hit.passage
    return OfflineAnswer(text, hit)
