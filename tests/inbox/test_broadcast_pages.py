"""The broadcasts pages without a browser: supervisors only (403 for agents on every URL); recipients read
from a CSV (normalised by core.phones, duplicates and invalid rows reported with row, value and reason,
at most 1,000) or from a label; a broadcast created on the page goes through the service the API uses
(audited, sent through the simulator) and its progress shows sent, delivered, read and failed per
recipient; cancel; another organization's broadcast is the 404; both languages."""

from __future__ import annotations

import io
import re
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.inbox.services import recipient_lists
from tests.ai.test_studio_knowledge_pages import desk_of
from tests.conftest import Org

NUMBER = "5215550001"
# 10 rows: 7 distinct valid numbers, 2 invalid rows, 1 duplicate (row 6 repeats row 2 in another form).
CSV = "\n".join(
    [
        "phone,name",
        "+52 55 1000 0001,Ana",
        "+525510000002",
        "not a number",
        "+52 55 1000 0003",
        "+52 1 55 1000 0001",
        "+525510000004",
        "12",
        "+525510000005",
        "+525510000006",
        "+525510000007",
    ]
)


def msg(org: Org, path: str) -> str:
    return f"/v2/messages/organizations/{org.id}{path}"


@pytest.fixture
def sim(runner: FlaskCliRunner, org: Org) -> str:
    """A simulator WhatsApp number of the organization (sends stay on the machine)."""
    result = runner.invoke(
        args=[
            "channels",
            "connect",
            "--org",
            org.id,
            "--service",
            "whatsapp",
            "--address",
            NUMBER,
            "--provider",
            "simulator",
            "--phone-number",
            "+525555550001",
            "--env",
            "live",
        ]
    )
    assert result.exit_code == 0, result.output
    return NUMBER


def form(**extra: Any) -> dict[str, Any]:
    return {
        "name": "Promo noviembre",
        "organization_address": NUMBER,
        "template_id": "sim_welcome",
        "param.name": "cliente",
        "source": "csv",
        "numbers": CSV,
        **extra,
    }


def test_a_csv_of_ten_rows_is_seven_recipients_with_the_rest_reported() -> None:
    found = recipient_lists.from_csv(CSV)
    assert len(found.numbers) == 7 and found.rows == 10
    assert found.numbers[0] == "+525510000001"
    assert [(r.row, r.reason) for r in found.rejected] == [
        (4, recipient_lists.INVALID),
        (6, recipient_lists.DUPLICATE),
        (8, recipient_lists.INVALID),
    ]
    assert found.rejected[1].duplicate_of == 2 and found.rejected[1].value == "+52 1 55 1000 0001"


def test_more_than_a_thousand_numbers_are_cut_at_the_limit() -> None:
    text = "\n".join(f"+5255{index:08d}" for index in range(1003))
    found = recipient_lists.from_csv(text)
    assert len(found.numbers) == 1000
    assert [r.reason for r in found.rejected] == [recipient_lists.OVER_LIMIT] * 3
    assert found.rejected[0].row == 1001


def test_agents_get_403_on_every_broadcasts_url(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    desk = desk_of(app, runner, org, role="agent", name="Ana")
    for url in ("/broadcasts", "/broadcasts/new", "/broadcasts/new/templates", "/broadcasts/x"):
        assert desk.client.get(url).status_code == 403, url
    for url in ("/broadcasts", "/broadcasts/new/recipients", "/broadcasts/x/cancel"):
        assert desk.post(url, form()).status_code == 403, url


def test_the_report_lists_rejected_rows_in_both_languages(
    app: Flask, runner: FlaskCliRunner, org: Org, sim: str
) -> None:
    desk = desk_of(app, runner, org)
    english = desk.post("/broadcasts/new/recipients", {"source": "csv", "numbers": CSV}).get_data(
        as_text=True
    )
    assert 'data-recipient-count="7"' in english and 'data-rejected-count="3"' in english
    assert "Same number as row 2" in english and "Not a valid phone number" in english
    assert re.search(r'data-rejected-row="4".*?not a number', english, re.S)
    spanish = desk.post(
        "/broadcasts/new/recipients", {"source": "csv", "numbers": CSV}, **{"Accept-Language": "es"}
    ).get_data(as_text=True)
    assert "Mismo número que la fila 2" in spanish and "Destinatarios: 7" in spanish


def test_an_uploaded_file_is_read_into_the_box(
    app: Flask, runner: FlaskCliRunner, org: Org, sim: str
) -> None:
    desk = desk_of(app, runner, org)
    response = desk.client.post(
        "/broadcasts/new/recipients",
        data={"source": "csv", "csv_file": (io.BytesIO(CSV.encode("utf-8-sig")), "numeros.csv")},
        headers={"HX-Request": "true", "X-CSRFToken": desk.csrf},
        content_type="multipart/form-data",
    )
    html = response.get_data(as_text=True)
    assert 'data-recipient-count="7"' in html
    assert 'id="broadcast-numbers"' in html and "hx-swap-oob" in html and "+525510000002" in html


def test_a_broadcast_made_on_the_page_is_sent_and_its_progress_shown(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org, sim: str
) -> None:
    desk = desk_of(app, runner, org)
    new = desk.client.get("/broadcasts/new").get_data(as_text=True)
    assert 'value="sim_welcome"' in new and 'value="5215550001" selected' in new
    params = desk.get("/broadcasts/new/template", organization_address=NUMBER, template_id="sim_welcome")
    assert 'name="param.name"' in params.get_data(as_text=True)

    created = desk.post("/broadcasts", form())
    assert created.status_code == 200, created.get_data(as_text=True)[:800]
    target = created.headers["HX-Redirect"]
    broadcast_id = target.rsplit("/", 1)[1]

    detail = client.get(msg(org, f"/broadcasts/{broadcast_id}"), headers=org.headers()).get_json()
    assert detail["total"] == 7 and detail["name"] == "Promo noviembre"

    page = desk.client.get(target).get_data(as_text=True)
    assert page.count("data-recipient=") == 7
    assert 'data-count="total"' in page
    # the simulator advanced every message to read (at once: the tests' queue runs jobs inline)
    assert re.findall(r'data-state="([a-z]+)"', page) == ["read"] * 7
    assert re.search(r'data-count="read">\s*<span[^>]*>Read</span>\s*<span[^>]*>7</span>', page)
    only_pane = desk.client.get(target, headers={"HX-Request": "true", "HX-Target": "broadcast-progress"})
    assert "<html" not in only_pane.get_data(
        as_text=True
    ) and 'id="broadcast-progress"' in only_pane.get_data(as_text=True)

    listed = desk.client.get("/broadcasts").get_data(as_text=True)
    assert "Promo noviembre" in listed
    log = client.get(f"/v1/members/organizations/{org.id}/audit-log", headers=org.headers()).get_json()[
        "data"
    ]
    entry = next(e for e in log if e["action"] == "broadcast.created")
    assert entry["actor"].startswith("user:")

    # finished: cancel says so
    assert desk.post(f"/broadcasts/{broadcast_id}/cancel").status_code == 422


def test_refusals_land_under_their_field(app: Flask, runner: FlaskCliRunner, org: Org, sim: str) -> None:
    desk = desk_of(app, runner, org)
    missing = desk.post("/broadcasts", form(**{"param.name": " ", "numbers": "abc"}))
    assert missing.status_code == 422 and missing.headers["HX-Retarget"] == "#broadcast-form"
    html = missing.get_data(as_text=True)
    assert 'id="bparam-name-error"' in html and "Fill in this parameter." in html
    assert 'id="broadcast-recipients-error"' in html and "Add at least one valid number." in html
    unknown = desk.post("/broadcasts", form(template_id="sim_nope"))
    assert unknown.status_code == 422
    assert 'id="broadcast-template-error"' in unknown.get_data(as_text=True)


def test_cancel_and_another_organizations_broadcast(
    app: Flask,
    runner: FlaskCliRunner,
    client: FlaskClient,
    org: Org,
    sim: str,
    make_org: Any,
    monkeypatch: Any,
) -> None:
    from blueprints.inbox.services import broadcasts

    # the job is not run: the broadcast stays sending with every recipient queued
    monkeypatch.setattr(broadcasts.run_broadcast_job, "enqueue", lambda *args: None)
    desk = desk_of(app, runner, org)
    created = desk.post("/broadcasts", form())
    target = created.headers["HX-Redirect"]
    broadcast_id = target.rsplit("/", 1)[1]
    page = desk.client.get(target).get_data(as_text=True)
    assert page.count('data-state="queued"') == 7 and "Cancel broadcast" in page

    other = desk_of(app, runner, make_org(), name="Otra")
    assert other.client.get(target).status_code == 404
    assert other.post(f"/broadcasts/{broadcast_id}/cancel").status_code == 404

    canceled = desk.post(f"/broadcasts/{broadcast_id}/cancel", **{"HX-Target": "broadcast-progress"})
    assert canceled.status_code == 200
    assert canceled.get_data(as_text=True).count('data-state="canceled"') == 7
    detail = client.get(msg(org, f"/broadcasts/{broadcast_id}"), headers=org.headers()).get_json()
    assert detail["status"] == "canceled"
    log = client.get(f"/v1/members/organizations/{org.id}/audit-log", headers=org.headers()).get_json()[
        "data"
    ]
    assert any(e["action"] == "broadcast.canceled" for e in log)


def test_recipients_from_a_label(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org, sim: str
) -> None:
    desk = desk_of(app, runner, org)
    report = desk.post("/broadcasts/new/recipients", {"source": "label", "label": "vip"}).get_data(
        as_text=True
    )
    assert 'data-recipient-count="0"' in report
    refused = desk.post("/broadcasts", form(source="label", label="vip"))
    assert refused.status_code == 422 and "No contact carries this label." in refused.get_data(as_text=True)


def test_a_scheduled_broadcast_waits_for_its_time(
    app: Flask, runner: FlaskCliRunner, client: FlaskClient, org: Org, sim: str
) -> None:
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import update

    from blueprints.inbox.models import Broadcast
    from blueprints.inbox.services import broadcasts
    from core.db import db
    from core.environments import LIVE, in_environment

    desk = desk_of(app, runner, org)
    # the organization's zone is UTC here: the form's local time is UTC
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    created = desk.post("/broadcasts", form(when="later", scheduled_at=tomorrow))
    assert created.status_code == 200, created.get_data(as_text=True)[:600]
    target = created.headers["HX-Redirect"]
    broadcast_id = target.rsplit("/", 1)[1]
    # the tests' queue ran its job at once: not due, nothing sent
    detail = client.get(msg(org, f"/broadcasts/{broadcast_id}"), headers=org.headers()).get_json()
    assert detail["status"] == "scheduled" and detail["counts"]["queued"] == 7
    assert detail["scheduled_at"].startswith(tomorrow[:13])
    page = desk.client.get(target).get_data(as_text=True)
    assert "data-scheduled-at" in page and "Cancel broadcast" in page

    with in_environment(app, LIVE):  # its time comes: the periodic resume starts it
        db.session.execute(
            update(Broadcast)
            .where(Broadcast.id == uuid.UUID(broadcast_id))
            .values(scheduled_at=datetime.now(UTC) - timedelta(seconds=5))
        )
        assert broadcast_id in broadcasts.resume_stalled()
    detail = client.get(msg(org, f"/broadcasts/{broadcast_id}"), headers=org.headers()).get_json()
    assert detail["status"] == "completed" and detail["counts"]["sent"] == 7

    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    past = desk.post("/broadcasts", form(when="later", scheduled_at=yesterday))
    assert past.status_code == 422
    assert 'id="broadcast-scheduled-at-error"' in past.get_data(as_text=True)
    empty = desk.post("/broadcasts", form(when="later", scheduled_at=""))
    assert empty.status_code == 422 and "Choose the day and time to send it." in empty.get_data(as_text=True)
