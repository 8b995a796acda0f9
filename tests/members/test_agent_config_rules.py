"""The agent configuration's rules in one place (``blueprints.members.agent_config``): each refusal's stable
code and field path, the normalisations, the ranges at and beyond their bounds, section names, tools and
triggers; and the API refusing with exactly the domain's words."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from blueprints.ai import prompt
from blueprints.members import agent_config as rules
from blueprints.members import schemas
from blueprints.members.agent_config import (
    UNSET,
    AgentConfigChanges,
    AgentConfigDraft,
    Refusal,
    check,
    check_targets,
    parse,
)
from tests.conftest import Org
from tests.members.conftest import mem


def refused(values: dict[str, Any], cls: type[Any] = AgentConfigDraft) -> Refusal:
    with pytest.raises(Refusal) as caught:
        parse(cls, values)
    assert caught.value.status == 400 and caught.value.code in rules.CODES, caught.value.code
    return caught.value


def draft(**values: Any) -> AgentConfigDraft:
    return parse(AgentConfigDraft, {"sections": {}, **values})


# ------------------------------------------------------------------------------- the rules as data


def test_chat_parameters_are_data_with_the_current_ranges_and_defaults() -> None:
    table = {p.name: (p.type, p.min, p.max, p.default) for p in rules.CHAT_PARAMETERS}
    assert table == {
        "temperature": (float, 0, 1, 0.7),
        "context_messages": (int, 0, 100, 50),
        "context_days": (int, 1, 30, 7),
        "split_long_messages": (bool, None, None, False),
    }
    assert all(p.description for p in rules.CHAT_PARAMETERS)
    assert rules.CHAT_DEFAULTS == {
        "temperature": 0.7,
        "context_messages": 50,
        "context_days": 7,
        "split_long_messages": False,
    }
    schema = rules.ChatSection.model_json_schema()["properties"]
    assert (schema["temperature"]["minimum"], schema["temperature"]["maximum"]) == (0, 1)
    assert (schema["context_days"]["minimum"], schema["context_days"]["maximum"]) == (1, 30)
    # the runtime reads the same defaults
    assert prompt.chat_parameters({"chat": {"temperature": 0.2}}) == {
        **rules.CHAT_DEFAULTS,
        "temperature": 0.2,
    }
    assert rules.effective_sections({"tone": "warm"}) == {"tone": "warm", "chat": rules.CHAT_DEFAULTS}


def test_tools_and_triggers_are_named_with_a_line_each() -> None:
    assert rules.TOOL_NAMES == (
        "transfer_to_human",
        "search_knowledge",
        "send_product",
        "create_ticket",
        "schedule_meeting",
    )
    assert all(tool.description.endswith(".") for tool in rules.TOOLS)
    assert rules.TRIGGER_NAMES[0] == "end_of_call" and rules.TRIGGER_NAMES[1:] == rules.TOOL_NAMES
    assert all(trigger.description for trigger in rules.TRIGGERS)
    # the runtime has guidance for every tool the configuration accepts, and no other
    assert set(prompt.TOOL_GUIDANCE) == set(rules.TOOL_NAMES)
    assert prompt.SECTION_ORDER == rules.COMMON_SECTIONS


def test_no_rule_is_left_in_the_api_models() -> None:
    for old in (
        "CHAT_DEFAULTS",
        "ChatSection",
        "NotificationTargets",
        "CallTransfer",
        "NOTIFICATION_TRIGGERS",
    ):
        assert not hasattr(schemas, old), old
    # the request models are made of the domain's types
    assert schemas.AgentConfigReplace.model_fields["sections"].annotation is rules.Sections


# ------------------------------------------------------------------------------- ranges and codes


@pytest.mark.parametrize(
    ("name", "accepted", "beyond"),
    [
        ("temperature", (0, 0.0, 0.5, 1, 1.0), (-0.1, -0.0001, 1.0001, 1.5)),
        ("context_messages", (0, 1, 100), (-1, 101)),
        ("context_days", (1, 30), (0, 31, 10**12)),
    ],
)
def test_chat_ranges_at_and_beyond_their_bounds(
    name: str, accepted: tuple[Any, ...], beyond: tuple[Any, ...]
) -> None:
    parameter = next(p for p in rules.CHAT_PARAMETERS if p.name == name)
    for value in accepted:
        checked = draft(sections={"chat": {name: value}})
        assert getattr(checked.sections.chat, name) == value
        assert checked.values()["sections"] == {"chat": {name: value}}  # only what was sent is stored
    for value in beyond:
        refusal = refused({"sections": {"chat": {name: value}}})
        assert (refusal.code, refusal.param) == ("value_out_of_range", f"sections.chat.{name}"), value
        assert refusal.message.startswith(f"sections.chat.{name}: Input should be ")
        bound = refusal.detail.get("ge", refusal.detail.get("le"))
        assert bound in (parameter.min, parameter.max)


@pytest.mark.parametrize(
    ("values", "code", "param", "message"),
    [
        ({}, "value_required", "sections", "sections: Field required"),
        (
            {"sections": "text"},
            "value_not_an_object",
            "sections",
            "sections: Input should be a valid dictionary",
        ),
        ({"sections": {"identity": 5}}, "value_not_text", "sections.identity", "sections.identity: "),
        (
            {"sections": {"identity": "x" * 20_001}},
            "value_too_long",
            "sections.identity",
            "sections.identity: String should have at most 20000 characters",
        ),
        (
            {"sections": {"note": "a\x00b"}},
            "value_unstorable",
            "sections.note",
            "sections: must not contain NUL characters",
        ),
        (
            {"sections": {"bad name!": "x"}},
            "section_name_invalid",
            "sections.bad name!",
            "sections: invalid section name 'bad name!' (letters, digits, _ and -, at most 64)",
        ),
        ({"sections": {"a" * 65: "x"}}, "section_name_invalid", "sections." + "a" * 65, "sections: invalid"),
        ({"sections": {"": "x"}}, "section_name_invalid", "sections.", "sections: invalid section name ''"),
        ({"sections": {"chat": "hot"}}, "value_not_an_object", "sections.chat", "sections.chat: "),
        (
            {"sections": {"chat": {"temperature": "hot"}}},
            "value_not_a_number",
            "sections.chat.temperature",
            "sections.chat.temperature: Input should be a valid number",
        ),
        (
            {"sections": {"chat": {"context_messages": 1.5}}},
            "value_not_a_number",
            "sections.chat.context_messages",
            "sections.chat.context_messages: Input should be a valid integer",
        ),
        (
            {"sections": {"chat": {"split_long_messages": "often"}}},
            "value_not_a_boolean",
            "sections.chat.split_long_messages",
            "sections.chat.split_long_messages: Input should be a valid boolean",
        ),
        (
            {"sections": {"chat": {"mood": 1}}},
            "field_unknown",
            "sections.chat.mood",
            "sections.chat.mood: unknown query parameter",
        ),
        (
            {"sections": {}, "tools": {"hack_the_planet": {"enabled": True}}},
            "tool_unknown",
            "tools.hack_the_planet",
            "tools.hack_the_planet.[key]: Input should be 'transfer_to_human', ",
        ),
        (
            {"sections": {}, "tools": {"create_ticket": {}}},
            "value_required",
            "tools.create_ticket.enabled",
            "tools.create_ticket.enabled: Field required",
        ),
        (
            {"sections": {}, "tools": {"create_ticket": {"enabled": "often"}}},
            "value_not_a_boolean",
            "tools.create_ticket.enabled",
            "tools.create_ticket.enabled: ",
        ),
        (
            {"sections": {}, "notifications": {"on_lunch": {}}},
            "trigger_unknown",
            "notifications.on_lunch",
            "notifications.on_lunch.[key]: Input should be 'end_of_call', ",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"email": ["a@b.test", "nope"]}}},
            "email_invalid",
            "notifications.end_of_call.email.1",
            "notifications.end_of_call.email: not a valid e-mail address: 'nope'",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"email": ["a@b.test"] * 21}}},
            "too_many_items",
            "notifications.end_of_call.email",
            "notifications.end_of_call.email: List should have at most 20 items after validation, not 21",
        ),
        (
            {"sections": {}, "notifications": {"create_ticket": {"whatsapp": ["+52 55 1234 5678", "12"]}}},
            "phone_invalid",
            "notifications.create_ticket.whatsapp.1",
            "notifications.create_ticket.whatsapp: not a valid E.164 phone number: '12'",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"webhook": "http://hooks.example.test/x"}}},
            "webhook_refused",
            "notifications.end_of_call.webhook",
            "notifications.end_of_call.webhook: webhook must be an https URL to a public host: "
            "must use https",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"webhook": "https://10.0.0.1/x"}}},
            "webhook_refused",
            "notifications.end_of_call.webhook",
            "notifications.end_of_call.webhook: webhook must be an https URL to a public host: "
            "must not point",
        ),
        (
            {"sections": {}, "notifications": {"end_of_call": {"sms": ["x"]}}},
            "field_unknown",
            "notifications.end_of_call.sms",
            "notifications.end_of_call.sms: unknown query parameter",
        ),
        (
            {"sections": {}, "call_transfers": [{"name": "x", "condition": "y"}]},
            "value_required",
            "call_transfers.0.target",
            "call_transfers.0.target: Field required",
        ),
        (
            {
                "sections": {},
                "call_transfers": [{"name": "x", "condition": "y", "target": "+1 (212) 555-01"}],
            },
            "transfer_target_invalid",
            "call_transfers.0.target",
            "call_transfers.0.target: not a valid E.164 phone number: '+1 (212) 555-01'",
        ),
        (
            {"sections": {}, "call_transfers": [{"name": "x", "condition": "y", "target": "bad target!"}]},
            "transfer_target_invalid",
            "call_transfers.0.target",
            "call_transfers.0.target: not an E.164 number or a member id: 'bad target!'",
        ),
        (
            {
                "sections": {},
                "call_transfers": [{"name": "x", "condition": "y", "target": "+12125550100"}] * 51,
            },
            "too_many_items",
            "call_transfers",
            "call_transfers: List should have at most 50 items after validation, not 51",
        ),
        (
            {"sections": {}, "agent_type": ""},
            "value_too_short",
            "agent_type",
            "agent_type: String should have",
        ),
        ({"sections": {}, "agent_type": None}, "value_not_text", "agent_type", "agent_type: Input should be"),
        (
            {"sections": {}, "voice": "x" * 121},
            "value_too_long",
            "voice",
            "voice: String should have at most 120",
        ),
        (
            {"sections": {}, "business_category": "x" * 65},
            "value_too_long",
            "business_category",
            "business_category: String should have at most 64 characters",
        ),
    ],
)
def test_each_refusal_has_a_stable_code_and_the_field_path(
    values: dict[str, Any], code: str, param: str, message: str
) -> None:
    refusal = refused(values)
    assert (refusal.code, refusal.param) == (code, param)
    assert refusal.message.startswith(message), refusal.message


def test_the_numbers_of_a_rule_come_with_its_refusal() -> None:
    assert refused({"sections": {"chat": {"context_days": 31}}}).detail == {"le": 30}
    assert refused({"sections": {"identity": "x" * 20_001}}).detail == {"max_length": 20_000}
    assert refused(
        {"sections": {}, "notifications": {"end_of_call": {"email": ["a@b.test", "no"]}}}
    ).detail == {"index": 1}


def test_the_first_field_in_the_request_models_order_is_named_with_the_others() -> None:
    refusal = refused({"sections": {"chat": {"temperature": 5}}, "agent_type": "", "tools": {"x": {}}})
    assert (refusal.code, refusal.param) == ("tool_unknown", "tools.x")
    assert refusal.message.startswith("tools.x.[key]: Input should be")
    assert refusal.message.endswith("(also invalid: tools.x.enabled)")  # within the field, as the API says


# ---------------------------------------------------------------------------------- normalisations


def test_values_are_normalised_as_stored() -> None:
    checked = draft(
        voice="  alloy  ",
        agent_type=" sales ",
        business_category=" shop ",
        sections={
            "identity": "  kept as written  ",
            "chat": {"temperature": "0.5", "split_long_messages": True},
        },
        notifications={
            "end_of_call": {"email": ["Ops@Example.TEST"], "webhook": "https://Hooks.Example.com"},
            "transfer_to_human": {"whatsapp": ["+52 1 55 1234 5678", "5215512345679"]},
        },
        call_transfers=[
            {"name": "Billing", "condition": "invoices", "target": "+1 (212) 555-0100"},
            {"name": "Boss", "condition": "angry", "target": "mem_boss", "announce_message": None},
        ],
    )
    assert (checked.voice, checked.agent_type, checked.business_category) == ("alloy", "sales", "shop")
    values = checked.values()
    assert values["sections"] == {
        "chat": {"temperature": 0.5, "split_long_messages": True},
        "identity": "  kept as written  ",
    }
    assert values["notifications"] == {
        "end_of_call": {"email": ["Ops@example.test"], "webhook": "https://Hooks.Example.com/"},
        "transfer_to_human": {"whatsapp": ["+525512345678", "+525512345679"]},
    }
    assert values["call_transfers"] == [
        {"name": "Billing", "condition": "invoices", "target": "+12125550100"},
        {"name": "Boss", "condition": "angry", "target": "mem_boss", "announce_message": None},
    ]
    assert [t.target_type for t in checked.call_transfers or []] == ["phone", "member"]
    # the defaults of a draft: everything not given returns to them
    assert draft().values() == {
        "tools": None,
        "voice": None,
        "business_category": None,
        "notifications": None,
        "call_transfers": None,
        "section_order": None,
        "sections": {},
        "agent_type": "generic",
    }
    # normalising again changes nothing (the verbs check what the API already checked)
    assert check(checked).values() == values


def test_changes_tell_unsent_from_null() -> None:
    changes = parse(AgentConfigChanges, {"voice": None, "tools": {"create_ticket": None}, "unknown": 1})
    assert changes.voice is None and changes.sections is UNSET and changes.agent_type is UNSET
    assert rules.sent(changes.voice) and not rules.given(changes.voice) and not rules.sent(changes.sections)
    assert changes.values() == {"voice": None, "tools": {"create_ticket": None}}
    assert parse(AgentConfigChanges, {}).values() == {}
    refusal = refused({"agent_type": ""}, AgentConfigChanges)
    assert (refusal.code, refusal.param) == ("value_too_short", "agent_type")


def test_a_verb_checks_an_input_whoever_built_it() -> None:
    built = AgentConfigDraft(sections={"chat": {"temperature": 2}})  # type: ignore[arg-type]
    with pytest.raises(Refusal) as caught:
        check(built)
    assert (caught.value.code, caught.value.param) == ("value_out_of_range", "sections.chat.temperature")
    changes = AgentConfigChanges(notifications={"end_of_call": {"email": ["nope"]}})  # type: ignore[arg-type]
    with pytest.raises(Refusal) as caught:
        check(changes)
    assert (caught.value.code, caught.value.param) == ("email_invalid", "notifications.end_of_call.email.0")
    with pytest.raises(Refusal) as caught:
        parse(AgentConfigDraft, ["not", "a", "mapping"])  # type: ignore[arg-type]
    assert caught.value.code == "value_not_an_object"


def test_a_member_target_must_be_a_member_of_the_organization(
    app: Flask, org: Org, other_org: Org, make_member: Callable[..., dict[str, Any]]
) -> None:
    mine = make_member(org, name="Supervisor")
    theirs = make_member(other_org, name="Theirs")
    transfers = [
        {"name": "Phone", "condition": "c", "target": "+12125550100"},
        {"name": "Mine", "condition": "c", "target": mine["id"]},
        {"name": "Theirs", "condition": "c", "target": theirs["id"]},
    ]
    with app.app_context():
        organization = uuid.UUID(org.id)
        with pytest.raises(Refusal) as caught:
            parse(
                AgentConfigDraft, {"sections": {}, "call_transfers": transfers}, organization_id=organization
            )
        assert (caught.value.code, caught.value.param) == (
            "transfer_target_unknown",
            "call_transfers.2.target",
        )
        assert caught.value.message == f"call_transfers.2.target: no member with id {theirs['id']!r}"
        check_targets(organization, transfers[:2])  # a phone and a member of the organization pass
        # without the organization only the form of the target is checked
        assert parse(AgentConfigDraft, {"sections": {}, "call_transfers": transfers}).call_transfers


# ------------------------------------------------------------------------------ the API's refusals

SINGLE_FIELD_REFUSALS = [
    {"sections": {"chat": {"temperature": 1.5}}},
    {"sections": {"chat": {"context_days": 0}}},
    {"sections": {"chat": {"mood": 1, "temperature": 9}}},
    {"sections": {"bad name!": "x"}},
    {"sections": {"identity": "a\x00b"}},
    {"sections": {}, "tools": {"hack_the_planet": {"enabled": True}}},
    {"sections": {}, "notifications": {"end_of_call": {"email": ["a@b.test", "nope"]}}},
    {"sections": {}, "notifications": {"end_of_call": {"whatsapp": ["12"]}}},
    {"sections": {}, "notifications": {"end_of_call": {"webhook": "https://127.0.0.1/"}}},
    {"sections": {}, "call_transfers": [{"name": "x", "condition": "y", "target": "bad target!"}]},
    {"sections": {}, "call_transfers": [{"name": "x", "condition": "y", "target": "mem_nobody"}]},
    {"sections": {}, "agent_type": ""},
]


def test_the_api_refuses_with_the_domain_s_words(
    app: Flask, client: FlaskClient, org: Org, make_member: Callable[..., dict[str, Any]]
) -> None:
    agent = make_member(org, ai=True)
    url = mem(org, f"/members/{agent['id']}/agent-config")
    for body in SINGLE_FIELD_REFUSALS:
        response = client.post(url, json=body, headers=org.headers())
        assert response.status_code == 400, body
        with app.test_request_context(), pytest.raises(Refusal) as caught:
            parse(AgentConfigDraft, body, organization_id=uuid.UUID(org.id))
        assert response.get_json() == {"statusCode": 400, "message": caught.value.message}, body
        assert response.get_json()["message"].startswith(caught.value.param.split(".")[0])
