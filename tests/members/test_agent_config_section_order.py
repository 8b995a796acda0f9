"""The prompt sections' order (``section_order``, a top-level field of the agent configuration): accepted by
POST (replace) and PATCH, returned by GET, checked (each name once, each a text section of the
configuration; stable codes and field paths), versioned with a diff, pruned when a section goes, and put
back by a restore."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from blueprints.members.agent_config import (
    CODES,
    AgentConfigChanges,
    AgentConfigDraft,
    Refusal,
    check_section_order,
    effective_section_order,
    parse,
)
from tests.conftest import Org
from tests.members.conftest import error, mem

SECTIONS = {"identity": "You are Sofía.", "rules": "Be brief.", "faq": "Shipping: 48 h.", "chat": {}}


def cfg(org: Org, agent_id: str, suffix: str = "") -> str:
    return mem(org, f"/members/{agent_id}/agent-config{suffix}")


def test_post_get_and_patch_carry_the_order(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, name="Sofía", ai=True)
    created = client.post(
        cfg(org, agent["id"]),
        json={"sections": SECTIONS, "section_order": ["faq", "identity"]},
        headers=org.headers(),
    )
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["section_order"] == ["faq", "identity"]
    body = client.get(cfg(org, agent["id"]), headers=org.headers()).get_json()
    assert body["section_order"] == ["faq", "identity"]

    # PATCH replaces the order as a whole, checked against the sections as merged
    patched = client.patch(
        cfg(org, agent["id"]),
        json={"sections": {"tone": "warm"}, "section_order": ["tone", "rules", "faq", "identity"]},
        headers={**org.headers(), "If-Match": '"1"'},
    )
    assert patched.status_code == 200, patched.get_json()
    assert patched.get_json()["section_order"] == ["tone", "rules", "faq", "identity"]
    assert patched.headers["ETag"] == '"2"'

    # null: the default order again
    cleared = client.patch(cfg(org, agent["id"]), json={"section_order": None}, headers=org.headers())
    assert cleared.get_json()["section_order"] == []

    # a configuration without one answers []; POST without one returns to the default order
    client.patch(cfg(org, agent["id"]), json={"section_order": ["faq"]}, headers=org.headers())
    replaced = client.post(cfg(org, agent["id"]), json={"sections": SECTIONS}, headers=org.headers())
    assert replaced.get_json()["section_order"] == []


def test_refusals_name_the_item(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    client.post(cfg(org, agent["id"]), json={"sections": SECTIONS}, headers=org.headers())
    cases = [
        (
            {"section_order": ["faq", "identity", "faq"]},
            "section_order: section 'faq' is named twice (each section once)",
        ),
        (
            {"section_order": ["identity", "closing"]},
            "section_order.1: no text section named 'closing' (name only sections of the configuration)",
        ),
        (
            {"section_order": ["chat"]},
            "section_order.0: no text section named 'chat' (name only sections of the configuration)",
        ),
        # a section removed by the same PATCH cannot be named
        (
            {"sections": {"faq": None}, "section_order": ["faq"]},
            "section_order.0: no text section named 'faq' (name only sections of the configuration)",
        ),
        ({"section_order": "faq"}, None),
        ({"section_order": [""]}, None),
    ]
    for body, message in cases:
        answer = client.patch(cfg(org, agent["id"]), json=body, headers=org.headers())
        assert answer.status_code == 400, body
        if message is not None:
            assert answer.get_json() == error(400, message)
        assert answer.get_json()["message"].startswith("section_order"), answer.get_json()
    # POST is checked against its own sections
    posted = client.post(
        cfg(org, agent["id"]),
        json={"sections": {"identity": "x"}, "section_order": ["faq"]},
        headers=org.headers(),
    )
    assert posted.get_json() == error(
        400, "section_order.0: no text section named 'faq' (name only sections of the configuration)"
    )
    # nothing of the above was stored
    versions = client.get(cfg(org, agent["id"], "/versions"), headers=org.headers()).get_json()
    assert versions["total"] == 1


def test_the_domain_refusals_carry_a_code_and_the_item_path() -> None:
    with pytest.raises(Refusal) as caught:
        parse(AgentConfigChanges, {"section_order": ["faq", "tone", "faq"]})
    assert (caught.value.code, caught.value.param) == ("section_order_duplicate", "section_order.2")
    with pytest.raises(Refusal) as caught:
        parse(AgentConfigDraft, {"sections": {"identity": "x"}, "section_order": ["identity", "faq"]})
    assert (caught.value.code, caught.value.param) == ("section_order_unknown", "section_order.1")
    assert {"section_order_duplicate", "section_order_unknown"} <= CODES
    with pytest.raises(Refusal) as caught:
        check_section_order(["identity"], {"identity": None, "chat": {}})  # removed in a PATCH
    assert caught.value.param == "section_order.0"
    check_section_order(None, {})
    draft = parse(AgentConfigDraft, {"sections": {"b": "2", "a": "1"}, "section_order": ["b"]})
    assert draft.values()["section_order"] == ["b"]


def test_the_effective_order_puts_the_named_sections_first() -> None:
    sections = {"zeta": "z", "faq": "f", "rules": "r", "identity": "i", "chat": {}}
    assert effective_section_order(sections, None) == ["identity", "rules", "faq", "zeta"]
    assert effective_section_order(sections, ["zeta", "rules"]) == ["zeta", "rules", "identity", "faq"]
    assert effective_section_order(sections, ["gone", "faq"]) == ["faq", "identity", "rules", "zeta"]


def test_versions_diff_restore_and_pruning(client: FlaskClient, org: Org, make_member) -> None:
    agent = make_member(org, ai=True)
    client.post(cfg(org, agent["id"]), json={"sections": SECTIONS}, headers=org.headers())
    client.patch(cfg(org, agent["id"]), json={"section_order": ["faq", "rules"]}, headers=org.headers())
    versions = client.get(cfg(org, agent["id"], "/versions"), headers=org.headers()).get_json()
    assert versions["data"][0]["diff"] == {"section_order": {"from": [], "to": ["faq", "rules"]}}

    # the same order again is no change and no version
    same = client.patch(
        cfg(org, agent["id"]), json={"section_order": ["faq", "rules"]}, headers=org.headers()
    )
    assert same.get_json()["version"] == 2

    # a section removed leaves the stored order too (the order only ever names sections)
    pruned = client.patch(cfg(org, agent["id"]), json={"sections": {"faq": None}}, headers=org.headers())
    assert pruned.get_json()["section_order"] == ["rules"]
    diff = client.get(cfg(org, agent["id"], "/versions"), headers=org.headers()).get_json()["data"][0]["diff"]
    assert diff["section_order"] == {"from": ["faq", "rules"], "to": ["rules"]}
    assert diff["sections.faq"] == {"from": "Shipping: 48 h.", "to": None}

    # restore version 2: its sections and its order come back, as a new version
    restored = client.post(cfg(org, agent["id"], "/versions/2/restore"), headers=org.headers())
    assert restored.status_code == 200
    assert restored.get_json()["section_order"] == ["faq", "rules"]
    assert restored.get_json()["sections"]["faq"] == "Shipping: 48 h."
    assert restored.get_json()["version"] == 4
    # restoring a version saved before the order existed (no key in its snapshot): the default order
    again = client.post(cfg(org, agent["id"], "/versions/1/restore"), headers=org.headers())
    assert again.get_json()["section_order"] == []


def test_another_organization_cannot_order_the_agent(
    client: FlaskClient, org: Org, other_org: Org, make_member
) -> None:
    agent = make_member(org, ai=True)
    client.post(cfg(org, agent["id"]), json={"sections": SECTIONS}, headers=org.headers())
    answer = client.patch(
        mem(other_org, f"/members/{agent['id']}/agent-config"),
        json={"section_order": ["faq"]},
        headers=other_org.headers(),
    )
    assert answer.status_code == 404
    assert client.get(cfg(org, agent["id"]), headers=org.headers()).get_json()["section_order"] == []
