"""Pipelines and stages: the default pipeline, keys, one default, ordering, deletion rules."""

from __future__ import annotations

import uuid

import pytest

from tests.crm.conftest import Crm, crm_error, not_found_body


def test_first_list_shows_general_vnt_with_won_and_lost_stages(crm: Crm) -> None:
    body = crm.ok(crm.get("/pipelines"))
    assert body["total"] == 1
    [pipeline] = body["data"]
    assert (pipeline["name"], pipeline["key"], pipeline["is_default"], pipeline["deal_counter"]) == (
        "General",
        "VNT",
        True,
        0,
    )
    stages = pipeline["stages"]
    assert [s["stage_order"] for s in stages] == list(range(len(stages)))
    assert [s["status"] for s in stages].count("won") == 1
    assert [s["status"] for s in stages].count("lost") == 1
    assert all(0 <= s["probability"] <= 100 for s in stages)
    assert set(stages[0]) >= {"id", "name", "stage_order", "probability", "status"}
    # the second read does not create another
    again = crm.ok(crm.get("/pipelines"))
    assert again["total"] == 1 and again["data"][0]["id"] == pipeline["id"]


def test_create_pipeline_upper_cases_key_and_refuses_duplicates(crm: Crm) -> None:
    crm.pipeline()
    created = crm.ok(crm.post("/pipelines", {"name": "Renewals", "key": "ren"}), 201)
    assert created["key"] == "REN" and created["is_default"] is False and created["stages"] == []
    duplicate = crm.post("/pipelines", {"name": "Other", "key": "REN"})
    assert duplicate.status_code == 409
    assert duplicate.get_json()["error"]["message"].startswith("key:")
    assert duplicate.get_json()["error"]["error"] == "Conflict"
    # other organizations may use the same key
    assert crm.ok(crm.get("/pipelines"))["total"] == 2


@pytest.mark.parametrize("key", ["A", "ABCDEF", "AB1", "A-B", ""])
def test_bad_pipeline_key_is_400_naming_key(crm: Crm, key: str) -> None:
    response = crm.post("/pipelines", {"name": "X", "key": key})
    assert response.status_code == 400
    body = response.get_json()
    assert body["statusCode"] == 400 and body["error"]["error"] == "Bad Request"
    assert body["error"]["message"].startswith("key:")


def test_pipeline_name_required(crm: Crm) -> None:
    response = crm.post("/pipelines", {"key": "ABC"})
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith("name:")


def test_one_default_pipeline_at_a_time(crm: Crm) -> None:
    general = crm.pipeline()
    second = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB", "is_default": True}), 201)
    assert second["is_default"] is True
    listed = {p["key"]: p["is_default"] for p in crm.ok(crm.get("/pipelines"))["data"]}
    assert listed == {"VNT": False, "BB": True}
    # back to General through an update
    crm.ok(crm.patch(f"/pipelines/{general['id']}", {"is_default": True}))
    listed = {p["key"]: p["is_default"] for p in crm.ok(crm.get("/pipelines"))["data"]}
    assert listed == {"VNT": True, "BB": False}
    # the default cannot simply be switched off: there is always one
    response = crm.patch(f"/pipelines/{general['id']}", {"is_default": False})
    assert response.status_code == 409


def test_first_created_pipeline_keeps_general_as_the_default(crm: Crm) -> None:
    # General is the organization's pipeline from the start (reads show it before it is stored), so a
    # pipeline created first joins it instead of replacing it, whether or not General was read before.
    created = crm.ok(crm.post("/pipelines", {"name": "Only", "key": "ONL"}), 201)
    assert created["is_default"] is False
    listed = {p["key"]: p["is_default"] for p in crm.ok(crm.get("/pipelines"))["data"]}
    assert listed == {"VNT": True, "ONL": False}
    asked = crm.ok(crm.post("/pipelines", {"name": "Main", "key": "MAIN", "is_default": True}), 201)
    assert asked["is_default"] is True


def test_update_pipeline_name_and_key(crm: Crm) -> None:
    pipeline = crm.ok(crm.post("/pipelines", {"name": "Old", "key": "OLD"}), 201)
    updated = crm.ok(crm.patch(f"/pipelines/{pipeline['id']}", {"name": "New", "key": "new"}))
    assert (updated["name"], updated["key"]) == ("New", "NEW")
    assert crm.ok(crm.get(f"/pipelines/{pipeline['id']}"))["name"] == "New"
    crm.ok(crm.post("/pipelines", {"name": "Z", "key": "ZZ"}), 201)
    assert crm.patch(f"/pipelines/{pipeline['id']}", {"key": "ZZ"}).status_code == 409
    assert crm.patch(f"/pipelines/{pipeline['id']}", {"key": "Z1"}).status_code == 400


def test_key_change_refused_once_the_pipeline_has_deals(crm: Crm) -> None:
    pipeline = crm.pipeline()
    crm.deal()
    response = crm.patch(f"/pipelines/{pipeline['id']}", {"key": "ABC"})
    assert response.status_code == 409
    assert "deals" in response.get_json()["error"]["message"]
    # a rename is fine
    assert crm.ok(crm.patch(f"/pipelines/{pipeline['id']}", {"name": "Sales"}))["name"] == "Sales"


def test_delete_pipeline_refused_while_live_deals_use_it(crm: Crm) -> None:
    general = crm.pipeline()
    other = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    deal = crm.deal()
    response = crm.delete(f"/pipelines/{general['id']}")
    assert response.status_code == 409
    assert response.get_json() == crm_error(409, "The pipeline has deals; move or delete them first")
    crm.ok(crm.delete(f"/deals/{deal['id']}"))
    assert crm.ok(crm.delete(f"/pipelines/{general['id']}")) == {"id": general["id"], "deleted": True}
    assert crm.get(f"/pipelines/{general['id']}").get_json() == not_found_body("Pipeline")
    # the default went away: the remaining pipeline took over
    [remaining] = crm.ok(crm.get("/pipelines"))["data"]
    assert remaining["id"] == other["id"] and remaining["is_default"] is True


def test_pipeline_404s(crm: Crm, other_crm: Crm) -> None:
    foreign = other_crm.pipeline()
    for call in (
        lambda: crm.get(f"/pipelines/{foreign['id']}"),
        lambda: crm.patch(f"/pipelines/{foreign['id']}", {"name": "x"}),
        lambda: crm.delete(f"/pipelines/{foreign['id']}"),
        lambda: crm.post(f"/pipelines/{foreign['id']}/stages", {"name": "x", "stage_order": 0}),
        lambda: crm.get(f"/pipelines/{uuid.uuid4()}"),
    ):
        response = call()
        assert response.status_code == 404
        assert response.get_json() == not_found_body("Pipeline")
    assert other_crm.ok(other_crm.get(f"/pipelines/{foreign['id']}"))["name"] == "General"


def test_create_stage_at_position_shifts_the_others(crm: Crm) -> None:
    pipeline = crm.pipeline()
    stage = crm.ok(
        crm.post(
            f"/pipelines/{pipeline['id']}/stages",
            {"name": "Demo", "stage_order": 1, "probability": 30, "rotting_days": 7},
        ),
        201,
    )
    assert (stage["stage_order"], stage["probability"], stage["status"], stage["rotting_days"]) == (
        1,
        30,
        "open",
        7,
    )
    names = [s["name"] for s in crm.ok(crm.get(f"/pipelines/{pipeline['id']}"))["stages"]]
    assert names[:3] == ["New", "Demo", "Qualified"]
    orders = [s["stage_order"] for s in crm.ok(crm.get(f"/pipelines/{pipeline['id']}"))["stages"]]
    assert orders == list(range(len(orders)))
    # beyond the end appends; won stages default to probability 100
    last = crm.ok(
        crm.post(
            f"/pipelines/{pipeline['id']}/stages", {"name": "Closed", "stage_order": 99, "status": "won"}
        ),
        201,
    )
    assert last["stage_order"] == len(orders) and last["probability"] == 100


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"stage_order": 0}, "name"),
        ({"name": "x"}, "stage_order"),
        ({"name": "x", "stage_order": -1}, "stage_order"),
        ({"name": "x", "stage_order": 0, "probability": 101}, "probability"),
        ({"name": "x", "stage_order": 0, "status": "done"}, "status"),
    ],
)
def test_stage_validation(crm: Crm, body: dict, field: str) -> None:
    pipeline = crm.pipeline()
    response = crm.post(f"/pipelines/{pipeline['id']}/stages", body)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith(f"{field}:")


def test_update_and_reorder_stage(crm: Crm) -> None:
    pipeline = crm.pipeline()
    lost = crm.stage(pipeline, "Lost")
    updated = crm.ok(crm.patch(f"/pipelines/stages/{lost['id']}", {"stage_order": 0, "name": "Dropped"}))
    assert (updated["stage_order"], updated["name"], updated["status"]) == (0, "Dropped", "lost")
    stages = crm.ok(crm.get(f"/pipelines/{pipeline['id']}"))["stages"]
    assert [s["name"] for s in stages][:2] == ["Dropped", "New"]
    assert [s["stage_order"] for s in stages] == list(range(len(stages)))
    assert crm.patch(f"/pipelines/stages/{lost['id']}", {"probability": 150}).status_code == 400
    assert crm.ok(crm.patch(f"/pipelines/stages/{lost['id']}", {"probability": 5}))["probability"] == 5


def test_delete_stage_refused_with_deals_unless_moved(crm: Crm) -> None:
    pipeline = crm.pipeline()
    new, qualified = crm.stage(pipeline, "New"), crm.stage(pipeline, "Qualified")
    deal = crm.deal(stage_id=new["id"])
    refused = crm.delete(f"/pipelines/stages/{new['id']}")
    assert refused.status_code == 409
    assert "move_to_stage_id" in refused.get_json()["error"]["message"]
    other = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    foreign_stage = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "S", "stage_order": 0}), 201)
    wrong = crm.delete(f"/pipelines/stages/{new['id']}", move_to_stage_id=foreign_stage["id"])
    assert wrong.status_code == 400
    assert crm.ok(crm.delete(f"/pipelines/stages/{new['id']}", move_to_stage_id=qualified["id"]))["deleted"]
    moved = crm.ok(crm.get(f"/deals/{deal['id']}"))
    assert moved["stage_id"] == qualified["id"]
    stages = crm.ok(crm.get(f"/pipelines/{pipeline['id']}"))["stages"]
    assert new["id"] not in [s["id"] for s in stages]
    assert [s["stage_order"] for s in stages] == list(range(len(stages)))
    # the history keeps the deleted stage under its old name
    times = crm.ok(crm.get(f"/deals/{deal['id']}/stage-times"))["stages"]
    assert [t["stage_name"] for t in times] == ["New", "Qualified"]


def test_last_stage_cannot_be_deleted(crm: Crm) -> None:
    pipeline = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    only = crm.ok(crm.post(f"/pipelines/{pipeline['id']}/stages", {"name": "Only", "stage_order": 0}), 201)
    assert crm.delete(f"/pipelines/stages/{only['id']}").status_code == 409


def test_stage_404s(crm: Crm, other_crm: Crm) -> None:
    foreign = other_crm.pipeline()["stages"][0]
    for response in (
        crm.patch(f"/pipelines/stages/{foreign['id']}", {"name": "x"}),
        crm.delete(f"/pipelines/stages/{foreign['id']}"),
        crm.patch(f"/pipelines/stages/{uuid.uuid4()}", {"name": "x"}),
    ):
        assert response.status_code == 404
        assert response.get_json() == not_found_body("Stage")
