"""One unit of work per request, job and CLI block: one commit when it succeeds, nothing kept when it
fails, no commit at all for a read, jobs and events only after the commit."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from blueprints.organizations.models import Organization
from core import uow
from core.db import db
from core.environments import LIVE, in_environment
from core.events import publish, subscribe
from tests.conftest import Org
from tests.support.probes import PROBE_JOB_RUNS


def _unit(client: FlaskClient, org: Org, name: str, amount: int = 0) -> Any:
    return client.post(
        f"/v2/messages/organizations/{org.id}/probe/unit",
        json={"name": name, "amount": amount},
        headers=org.headers(),
    )


def _exists(app: Flask, name: str) -> bool:
    with app.app_context():
        return db.session.scalar(select(Organization).where(Organization.name == name)) is not None


def test_a_write_commits_once_and_is_kept(app: Flask, client: FlaskClient, org: Org, commits: Any) -> None:
    with commits() as counted:
        response = _unit(client, org, "kept")
    assert response.status_code == 201
    assert counted.count == 1
    assert _exists(app, "kept")


@pytest.mark.parametrize(("name", "status"), [("refused", 409), ("crashed", 500), ("answered-error", 422)])
def test_a_failed_request_keeps_nothing_it_flushed(
    app: Flask, client: FlaskClient, org: Org, commits: Any, name: str, status: int
) -> None:
    with commits() as counted:
        response = _unit(client, org, name, amount=1)
    assert response.status_code == status
    assert counted.count == 0
    assert not _exists(app, name)
    assert (name, True) not in PROBE_JOB_RUNS and (name, False) not in PROBE_JOB_RUNS  # its job never ran


def test_a_job_runs_after_the_commit_and_sees_the_row(app: Flask, client: FlaskClient, org: Org) -> None:
    PROBE_JOB_RUNS.clear()
    assert _unit(client, org, "with-job", amount=1).status_code == 201
    assert PROBE_JOB_RUNS == [("with-job", True)]


def test_a_read_sends_no_commit(client: FlaskClient, org: Org, commits: Any) -> None:
    with commits() as counted:
        assert (
            client.get(f"/v2/messages/organizations/{org.id}/probe", headers=org.headers()).status_code == 200
        )
        assert client.get("/v1/organizations", headers=org.headers()).status_code == 200
    assert counted.count == 0


def test_in_environment_commits_on_exit_and_rolls_back_on_error(app: Flask) -> None:
    with in_environment(app, LIVE):
        db.session.add(Organization(name="block-ok", products=[]))
    with pytest.raises(RuntimeError), in_environment(app, LIVE):
        db.session.add(Organization(name="block-failed", products=[]))
        db.session.flush()
        raise RuntimeError("boom")
    assert _exists(app, "block-ok")
    assert not _exists(app, "block-failed")


def test_events_wait_for_the_commit_and_die_with_a_rollback(app: Flask) -> None:
    heard: list[str] = []
    subscribe("probe.unit", lambda event: heard.append(event.data["name"]))
    with app.app_context():
        publish("probe.unit", uuid.uuid4(), {"name": "dropped"})
        uow.rollback()
        publish("probe.unit", uuid.uuid4(), {"name": "delivered"})
        assert heard == []
        uow.commit()
    assert heard == ["delivered"]


def test_checkpoints_must_be_documented(app: Flask) -> None:
    with app.app_context(), pytest.raises(ValueError, match="undocumented checkpoint"):
        uow.checkpoint("somewhere.new")
    assert all(reason for reason in uow.CHECKPOINTS.values())


def test_unknown_query_parameters_are_refused_naming_them(client: FlaskClient, org: Org) -> None:
    base = f"/v2/messages/organizations/{org.id}"
    with_model = client.get(f"{base}/probe/listed?limit=5&lmit=3", headers=org.headers())
    assert with_model.status_code == 400
    assert with_model.get_json()["message"].startswith("lmit: unknown query parameter")
    without_model = client.get(f"{base}/probe?status=open", headers=org.headers())
    assert without_model.status_code == 400
    assert without_model.get_json()["message"].startswith("status: unknown query parameter")
    assert client.get(f"{base}/probe/listed?limit=5", headers=org.headers()).get_json() == {"limit": 5}


def test_a_savepoint_before_any_write_is_no_early_commit(app: Flask, commits: Any) -> None:
    """On SQLite too: the writes inside a SAVEPOINT are kept only if the unit of work commits."""
    with app.app_context():
        with commits() as counted:
            with db.session.begin_nested():
                db.session.add(Organization(name="inside-savepoint", products=[]))
            uow.rollback()
        assert counted.count == 0
    assert not _exists(app, "inside-savepoint")


def test_a_released_savepoint_keeps_the_unit_of_work_going(app: Flask, commits: Any) -> None:
    heard: list[str] = []
    subscribe("probe.savepoint", lambda event: heard.append(event.data["name"]))
    with app.app_context():
        with commits() as counted:
            db.session.add(Organization(name="before-savepoint", products=[]))
            publish("probe.savepoint", uuid.uuid4(), {"name": "published"})
            with db.session.begin_nested():
                db.session.add(Organization(name="in-savepoint", products=[]))
            assert heard == []  # releasing the savepoint is no commit: nothing delivered yet
            uow.commit()
        assert counted.count == 1
    assert heard == ["published"]
    assert _exists(app, "before-savepoint") and _exists(app, "in-savepoint")
