"""Optimistic concurrency of an agent configuration: the version is the ``ETag``; a change sent with
``If-Match`` naming another version than the stored one is 412 naming the stored version, who saved it
and when, and writes nothing; a malformed ``If-Match`` is 400 naming the header; without the header
everything is as before. Two writers that started from the same version cannot both win."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.members.agent_config import AgentConfigChanges, Refusal, parse
from blueprints.members.services import agents
from core.db import db
from tests.conftest import Org
from tests.members.conftest import NO_ACCESS, error, mem

MakeMember = Callable[..., dict[str, Any]]


def cfg(org: Org, agent_id: str, suffix: str = "") -> str:
    return mem(org, f"/members/{agent_id}/agent-config{suffix}")


def second_key(runner: FlaskCliRunner, org: Org) -> dict[str, str]:
    """Another live key of the organization: a second writer with a name of its own."""
    created = runner.invoke(args=["keys", "create", "--org", org.id, "--name", "laura", "--json"])
    assert created.exit_code == 0, created.output
    issued = json.loads(created.stdout)
    return {"X-API-Key": issued["api_key"], "actor": f"api_key:{issued['prefix']}"}


@pytest.fixture
def agent(client: FlaskClient, org: Org, make_member: MakeMember) -> str:
    member = make_member(org, name="Sofía", ai=True)
    created = client.post(
        cfg(org, member["id"]), json={"sections": {"identity": "v1"}}, headers=org.headers()
    )
    assert created.status_code == 201 and created.headers["ETag"] == '"1"'
    return str(member["id"])


def test_reads_and_changes_answer_the_version_as_etag(client: FlaskClient, org: Org, agent: str) -> None:
    read = client.get(cfg(org, agent), headers=org.headers())
    assert read.headers["ETag"] == '"1"' and read.get_json()["version"] == 1
    patched = client.patch(cfg(org, agent), json={"voice": "alloy"}, headers=org.headers())
    assert patched.headers["ETag"] == '"2"' and patched.get_json()["version"] == 2
    replaced = client.post(cfg(org, agent), json={"sections": {"identity": "v3"}}, headers=org.headers())
    assert replaced.status_code == 200 and replaced.headers["ETag"] == '"3"'
    restored = client.post(cfg(org, agent, "/versions/1/restore"), headers=org.headers())
    assert restored.headers["ETag"] == '"4"' and restored.get_json()["version"] == 4
    # a PATCH that changes nothing keeps the version, and says so
    same = client.patch(cfg(org, agent), json={}, headers={**org.headers(), "If-Match": '"4"'})
    assert same.status_code == 200 and same.headers["ETag"] == '"4"'


@pytest.mark.parametrize("if_match", ['"1"', 'W/"1"', "1", " 1 ", "*"])
def test_a_matching_if_match_in_any_accepted_spelling_is_200(
    client: FlaskClient, org: Org, agent: str, if_match: str
) -> None:
    headers = {**org.headers(), "If-Match": if_match}
    patched = client.patch(cfg(org, agent), json={"sections": {"tone": "warm"}}, headers=headers)
    assert patched.status_code == 200 and patched.headers["ETag"] == '"2"'
    if if_match != "*":
        stale = client.patch(cfg(org, agent), json={"sections": {"tone": "cold"}}, headers=headers)
        assert stale.status_code == 412


def test_two_writers_the_second_is_told_who_saved_what_and_when(
    client: FlaskClient, runner: FlaskCliRunner, org: Org, agent: str
) -> None:
    laura = second_key(runner, org)
    # both start from version 1
    etag = client.get(cfg(org, agent), headers=org.headers()).headers["ETag"]
    assert client.get(cfg(org, agent), headers={"X-API-Key": laura["X-API-Key"]}).headers["ETag"] == etag
    saved = client.patch(
        cfg(org, agent),
        json={"sections": {"identity": "Laura's"}},
        headers={"X-API-Key": laura["X-API-Key"], "If-Match": etag},
    )
    assert saved.status_code == 200 and saved.headers["ETag"] == '"2"'
    versions = client.get(cfg(org, agent, "/versions"), headers=org.headers()).get_json()["data"]
    saved_at = versions[0]["changed_at"]
    assert versions[0]["changed_by"] == laura["actor"]

    for method, url, body in (
        (client.patch, cfg(org, agent), {"sections": {"identity": "mine"}}),
        (client.post, cfg(org, agent), {"sections": {"identity": "mine"}}),
        (client.post, cfg(org, agent, "/versions/1/restore"), None),
    ):
        stale = method(url, json=body, headers={**org.headers(), "If-Match": etag})
        assert stale.status_code == 412, stale.get_json()
        assert stale.get_json() == error(
            412,
            f"The agent configuration changed meanwhile: it is at version 2, saved by {laura['actor']} at "
            f"{saved_at}, not version 1 as expected",
        )
        assert "ETag" not in stale.headers
    # nothing of the refused changes was stored
    current = client.get(cfg(org, agent), headers=org.headers())
    assert current.headers["ETag"] == '"2"' and current.get_json()["sections"]["identity"] == "Laura's"
    assert client.get(cfg(org, agent, "/versions"), headers=org.headers()).get_json()["total"] == 2
    # starting again from what is stored now succeeds
    again = client.patch(
        cfg(org, agent), json={"sections": {"identity": "mine"}}, headers={**org.headers(), "If-Match": '"2"'}
    )
    assert again.status_code == 200 and again.headers["ETag"] == '"3"'


@pytest.mark.parametrize("if_match", ["abc", '"x"', '"1", "2"', "", "-1", '"1', "W/1", "1.0"])
def test_a_malformed_if_match_is_400_naming_the_header(
    client: FlaskClient, org: Org, agent: str, if_match: str
) -> None:
    headers = {**org.headers(), "If-Match": if_match}
    expected = error(
        400, 'If-Match: must be one configuration version, such as "7" (the ETag of the configuration)'
    )
    for response in (
        client.patch(cfg(org, agent), json={"voice": "x"}, headers=headers),
        client.post(cfg(org, agent), json={"sections": {}}, headers=headers),
        client.post(cfg(org, agent, "/versions/1/restore"), headers=headers),
    ):
        assert (response.status_code, response.get_json()) == (400, expected)
    assert client.get(cfg(org, agent), headers=org.headers()).headers["ETag"] == '"1"'


def test_a_first_save_with_if_match(client: FlaskClient, org: Org, make_member: MakeMember) -> None:
    member = make_member(org, ai=True)
    url = cfg(org, member["id"])
    missing = client.post(url, json={"sections": {}}, headers={**org.headers(), "If-Match": '"3"'})
    assert missing.get_json() == error(
        412, "The agent configuration does not exist yet (version 0), not version 3 as expected"
    )
    # PATCH and restore need a configuration first, whatever If-Match says
    for response in (
        client.patch(url, json={"voice": "x"}, headers={**org.headers(), "If-Match": '"0"'}),
        client.post(
            cfg(org, member["id"], "/versions/1/restore"), headers={**org.headers(), "If-Match": '"0"'}
        ),
    ):
        assert response.get_json() == error(404, "No Agent configuration found")
    created = client.post(url, json={"sections": {}}, headers={**org.headers(), "If-Match": '"0"'})
    assert created.status_code == 201 and created.headers["ETag"] == '"1"'
    again = client.post(url, json={"sections": {}}, headers={**org.headers(), "If-Match": '"0"'})
    assert again.status_code == 412 and "it is at version 1" in again.get_json()["message"]


def test_organizations_stay_apart(
    client: FlaskClient, org: Org, other_org: Org, make_member: MakeMember, agent: str
) -> None:
    theirs = make_member(other_org, ai=True)
    assert (
        client.post(
            cfg(other_org, theirs["id"]), json={"sections": {}}, headers=other_org.headers()
        ).status_code
        == 201
    )
    headers = {**org.headers(), "If-Match": '"1"'}
    for response in (
        client.get(cfg(org, theirs["id"]), headers=headers),
        client.patch(cfg(org, theirs["id"]), json={"voice": "x"}, headers=headers),
        client.post(cfg(org, theirs["id"]), json={"sections": {}}, headers=headers),
        client.post(cfg(org, theirs["id"], "/versions/1/restore"), headers=headers),
    ):
        assert response.get_json() == error(404, "No Member found")
        assert "ETag" not in response.headers
    assert (
        client.patch(cfg(other_org, theirs["id"]), json={"voice": "x"}, headers=headers).get_json()
        == NO_ACCESS
    )
    # their configuration was not touched
    theirs_now = client.get(cfg(other_org, theirs["id"]), headers=other_org.headers())
    assert theirs_now.headers["ETag"] == '"1"' and theirs_now.get_json()["voice"] is None


def test_the_verbs_refuse_with_the_conflict_s_detail(
    app: Flask, client: FlaskClient, runner: FlaskCliRunner, org: Org, agent: str
) -> None:
    laura = second_key(runner, org)
    client.patch(cfg(org, agent), json={"voice": "verse"}, headers={"X-API-Key": laura["X-API-Key"]})
    with app.app_context():
        organization = uuid.UUID(org.id)
        with pytest.raises(Refusal) as caught:
            agents.update_config(
                organization,
                agent,
                parse(AgentConfigChanges, {"voice": "alloy"}),
                changed_by="user:ana",
                expected_version=1,
            )
        refusal = caught.value
        stored = agents.current_version(agents.get_config(organization, agent))
        assert stored is not None
        assert (refusal.status, refusal.code, refusal.param) == (412, "version_conflict", None)
        assert refusal.detail == {
            "expected_version": 1,
            "current_version": 2,
            "changed_by": laura["actor"],
            "changed_at": refusal.detail["changed_at"],
        }
        assert (
            refusal.detail["changed_at"].endswith("Z")
            and refusal.detail["changed_at"][:19] == (stored.created_at.isoformat()[:19])
        )
        db.session.rollback()


# ------------------------------------------------------------------------------------ racing writers

WRITERS = 6


def _race(app: Flask, send: Callable[[FlaskClient, int], Any]) -> list[tuple[int, Any]]:
    barrier = threading.Barrier(WRITERS)
    results: list[Any] = [None] * WRITERS

    def worker(index: int) -> None:
        client = app.test_client()  # its own client, request contexts and database session
        barrier.wait()
        response = send(client, index)
        results[index] = (response.status_code, response.get_json())

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def test_racing_writers_from_one_version_one_wins(
    app: Flask, client: FlaskClient, org: Org, agent: str
) -> None:
    results = _race(
        app,
        lambda c, i: c.patch(
            cfg(org, agent),
            json={"sections": {"tone": f"t{i}"}},
            headers={**org.headers(), "If-Match": '"1"'},
        ),
    )
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [412] * (WRITERS - 1), results
    versions = client.get(cfg(org, agent, "/versions"), headers=org.headers()).get_json()
    assert versions["total"] == 2


def test_racing_writers_without_if_match_all_land_one_after_the_other(
    app: Flask, client: FlaskClient, org: Org, agent: str
) -> None:
    results = _race(
        app,
        lambda c, i: c.patch(cfg(org, agent), json={"sections": {"tone": f"t{i}"}}, headers=org.headers()),
    )
    assert all(status == 200 for status, _ in results), results
    assert sorted(body["version"] for _, body in results) == list(range(2, WRITERS + 2))


def test_racing_first_saves(app: Flask, client: FlaskClient, org: Org, make_member: MakeMember) -> None:
    first = make_member(org, ai=True)["id"]
    results = _race(
        app,
        lambda c, i: c.post(
            cfg(org, first), json={"sections": {"n": str(i)}}, headers={**org.headers(), "If-Match": "0"}
        ),
    )
    assert sorted(status for status, _ in results) == [201] + [412] * (WRITERS - 1), results
    second = make_member(org, ai=True)["id"]
    results = _race(
        app, lambda c, i: c.post(cfg(org, second), json={"sections": {"n": str(i)}}, headers=org.headers())
    )
    assert sorted(status for status, _ in results) == [200] * (WRITERS - 1) + [201], results
    assert sorted(body["version"] for _, body in results) == list(range(1, WRITERS + 1))
