"""The playground: an agent on a sample conversation, nothing sent and nothing written."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.ai.conftest import MakeAgent, mem
from tests.conftest import Org
from tests.support.fake_llm import FakeLLM


def _test(client: FlaskClient, org: Org, agent_id: str, body: dict[str, Any]) -> Any:
    return client.post(mem(org, f"/members/{agent_id}/agent-config/test"), json=body, headers=org.headers())


def test_the_playground_answers_and_describes_tool_calls_without_writing(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent, meta: Any, commits: Any
) -> None:
    agent = make_agent(
        {
            "sections": {"identity": "You are Bot.", "chat": {"context_messages": 1, "temperature": 0.2}},
            "tools": {"create_ticket": {"enabled": True}, "transfer_to_human": {"enabled": False}},
        },
        route=False,
    )
    llm.call_tools(("create_ticket", {"title": "Sin señal"})).reply("Abrí un ticket por ti.")
    with commits() as counted:
        response = _test(
            client,
            org,
            agent.id,
            {
                "messages": [
                    {"role": "customer", "text": "hola"},
                    {"role": "agent", "text": "¿En qué te ayudo?"},
                    {"role": "customer", "text": "no tengo señal"},
                ]
            },
        )
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["answer"] == ["Abrí un ticket por ti."]
    assert body["model"] == "fake-model-1" and body["latency_ms"] >= 0 and body["outcome"] == "answered"
    [call] = body["tool_calls"]
    assert call["name"] == "create_ticket" and call["result"]["dry_run"] is True
    assert counted.count == 0  # no ticket, no run, nothing at all
    assert meta.sends() == []
    # context_messages 1: the agent's last message, then the customer's
    assert llm.conversation(0) == [("assistant", "¿En qué te ayudo?"), ("user", "no tengo señal")]
    assert llm.requests[0]["temperature"] == 0.2
    assert llm.tool_names(0) == ["create_ticket"]
    runs = client.get(mem(org, f"/members/{agent.id}/runs"), headers=org.headers()).get_json()
    assert runs["total"] == 0


def test_the_playground_tries_an_unsaved_configuration(
    client: FlaskClient, org: Org, llm: FakeLLM, make_agent: MakeAgent
) -> None:
    agent = make_agent(route=False)
    llm.reply("Soy Max.")
    response = _test(
        client,
        org,
        agent.id,
        {
            "messages": [{"role": "customer", "text": "¿quién eres?"}],
            "config": {
                "sections": {"identity": "You are Max.", "tone": "Brief."},
                "tools": {"search_knowledge": {"enabled": True}},
            },
        },
    )
    assert response.status_code == 200, response.get_json()
    assert llm.system(0).startswith("## Identity\nYou are Max.\n\n## Tone\nBrief.")
    assert llm.tool_names(0) == ["search_knowledge"]
    saved = client.get(mem(org, f"/members/{agent.id}/agent-config"), headers=org.headers()).get_json()
    assert saved["sections"]["identity"] == "You are Bot."  # the stored configuration is untouched


def test_the_playground_offline_and_its_errors(
    client: FlaskClient, org: Org, make_agent: MakeAgent, offline: None, make_human: Any
) -> None:
    agent = make_agent(
        {"sections": {"identity": "Bot", "knowledge": "Opening hours: 9 to 18, Monday to Friday."}},
        route=False,
    )
    answered = _test(
        client, org, agent.id, {"messages": [{"role": "customer", "text": "What are your opening hours?"}]}
    )
    assert answered.status_code == 200
    assert answered.get_json()["answer"] == ["Opening hours: 9 to 18, Monday to Friday."]
    assert answered.get_json()["model"] == "offline"
    unknown = _test(
        client, org, agent.id, {"messages": [{"role": "customer", "text": "Do you sell bicycles?"}]}
    )
    assert unknown.get_json()["answer"] == [] and unknown.get_json()["outcome"] == "handed_off"
    last_is_agent = _test(client, org, agent.id, {"messages": [{"role": "agent", "text": "hola"}]})
    assert last_is_agent.status_code == 400 and last_is_agent.get_json()["message"].startswith("messages:")
    empty = _test(client, org, agent.id, {"messages": []})
    assert empty.status_code == 400 and empty.get_json()["statusCode"] == 400
    missing = _test(client, org, "nobody", {"messages": [{"role": "customer", "text": "hola"}]})
    assert missing.status_code == 404 and missing.get_json() == {
        "statusCode": 404,
        "message": "No Member found",
    }
    human = make_human("Ana")
    not_ai = _test(client, org, human, {"messages": [{"role": "customer", "text": "hola"}]})
    assert not_ai.status_code == 400
