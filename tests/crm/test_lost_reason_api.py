"""``PATCH deals/{id}/stage`` takes why a deal moved to a lost stage was lost (``lost_reason``), kept in the
move's ``stage_changed`` activity; a reason with any other stage is refused rather than dropped."""

from __future__ import annotations

import uuid
from typing import Any

from flask.testing import FlaskClient

from tests.crm.conftest import Crm, crm_error, not_found_body

NOT_LOST = "lost_reason: only a move to a stage whose status is lost takes a reason"


def _moves(crm: Crm, deal_id: str) -> list[dict[str, Any]]:
    activities = crm.ok(crm.get(f"/deals/{deal_id}/activities"))["data"]
    return [a for a in activities if a["type"] == "stage_changed"]


def _stage_id(crm: Crm, name: str) -> str:
    return str(crm.stage(crm.pipeline(), name)["id"])


def test_a_lost_move_keeps_the_trimmed_reason_in_its_activity(crm: Crm) -> None:
    deal = crm.deal()
    lost = _stage_id(crm, "Lost")
    moved = crm.ok(
        crm.patch(
            f"/deals/{deal['id']}/stage", {"stage_id": lost, "lost_reason": "  Eligió otro proveedor \n"}
        )
    )
    assert (moved["status"], moved["stage_id"]) == ("lost", lost)
    [move] = _moves(crm, deal["id"])
    assert move["data"] == {
        "from_stage_id": deal["stage_id"],
        "to_stage_id": lost,
        "to_stage_name": "Lost",
        "lost_reason": "Eligió otro proveedor",
    }


def test_a_lost_move_without_a_reason_is_still_taken(crm: Crm) -> None:
    deal = crm.deal()
    lost = _stage_id(crm, "Lost")
    for body in ({"stage_id": lost}, {"stage_id": lost, "lost_reason": None}):
        crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": deal["stage_id"]}))
        assert crm.ok(crm.patch(f"/deals/{deal['id']}/stage", body))["status"] == "lost"
        assert "lost_reason" not in _moves(crm, deal["id"])[0]["data"]


def test_the_reason_takes_500_characters_after_trimming(crm: Crm) -> None:
    deal = crm.deal()
    lost = _stage_id(crm, "Lost")
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": lost, "lost_reason": f"  {'x' * 500}  "}))
    assert _moves(crm, deal["id"])[0]["data"]["lost_reason"] == "x" * 500


def test_a_reason_too_long_empty_or_not_text_is_a_400_naming_it(crm: Crm) -> None:
    deal = crm.deal()
    lost = _stage_id(crm, "Lost")
    cases = (
        ("x" * 501, "lost_reason: String should have at most 500 characters"),
        ("   ", "lost_reason: String should have at least 1 character"),
        ("", "lost_reason: String should have at least 1 character"),
        (42, "lost_reason: Input should be a valid string"),
    )
    for reason, message in cases:
        response = crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": lost, "lost_reason": reason})
        assert response.status_code == 400, reason
        assert response.get_json() == crm_error(400, message)
    after = crm.ok(crm.get(f"/deals/{deal['id']}"))
    assert (after["status"], after["stage_id"]) == ("open", deal["stage_id"])
    assert _moves(crm, deal["id"]) == []


def test_a_reason_with_an_open_or_won_stage_is_refused_and_nothing_moves(crm: Crm) -> None:
    deal = crm.deal()
    times = crm.ok(crm.get(f"/deals/{deal['id']}/stage-times"))
    for name in ("Proposal", "Won", crm.pipeline()["stages"][0]["name"]):
        response = crm.patch(
            f"/deals/{deal['id']}/stage", {"stage_id": _stage_id(crm, name), "lost_reason": "Precio"}
        )
        assert response.status_code == 400, name
        assert response.get_json() == crm_error(400, NOT_LOST)
    after = crm.ok(crm.get(f"/deals/{deal['id']}"))
    assert (after["status"], after["stage_id"], after["closed_at"]) == ("open", deal["stage_id"], None)
    assert _moves(crm, deal["id"]) == []
    stays = crm.ok(crm.get(f"/deals/{deal['id']}/stage-times"))["stages"]
    assert [(s["stage_id"], s["visits"]) for s in stays] == [
        (s["stage_id"], s["visits"]) for s in times["stages"]
    ]


def test_the_stage_refusals_come_before_the_reasons(crm: Crm, other_crm: Crm) -> None:
    deal = crm.deal()
    other = crm.ok(crm.post("/pipelines", {"name": "B", "key": "BB"}), 201)
    elsewhere = crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "S", "stage_order": 0}), 201)
    response = crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": elsewhere["id"], "lost_reason": "Precio"})
    assert response.get_json() == crm_error(400, "stage_id: the stage belongs to another pipeline")
    foreign = _stage_id(other_crm, "Lost")
    response = crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": foreign, "lost_reason": "Precio"})
    assert response.get_json() == not_found_body("Stage")
    missing = crm.patch(f"/deals/{deal['id']}/stage", {"lost_reason": "Precio"})
    assert missing.status_code == 400 and missing.get_json()["error"]["message"].startswith("stage_id:")


def test_another_organizations_deal_is_404_whatever_the_reason(crm: Crm, other_crm: Crm) -> None:
    foreign = other_crm.deal()
    for deal_id in (foreign["id"], str(uuid.uuid4())):
        for stage in (_stage_id(other_crm, "Lost"), _stage_id(crm, "Lost"), _stage_id(crm, "Won")):
            for reason in ("Precio", "x" * 500):
                response = crm.patch(f"/deals/{deal_id}/stage", {"stage_id": stage, "lost_reason": reason})
                assert response.status_code == 404
                assert response.get_json() == not_found_body("Deal")
    untouched = other_crm.ok(other_crm.get(f"/deals/{foreign['id']}"))
    assert (untouched["status"], untouched["stage_id"]) == ("open", foreign["stage_id"])
    assert _moves(other_crm, foreign["id"]) == []


def test_the_lost_stage_again_changes_nothing_and_records_nothing(crm: Crm) -> None:
    """A retried request (the answer was lost on the way) must not record the move twice."""
    deal = crm.deal()
    lost = _stage_id(crm, "Lost")
    body = {"stage_id": lost, "lost_reason": "Sin presupuesto"}
    first = crm.ok(crm.patch(f"/deals/{deal['id']}/stage", body))
    again = crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {**body, "lost_reason": "Otra razón"}))
    assert again["closed_at"] == first["closed_at"] and again["status"] == "lost"
    assert [m["data"]["lost_reason"] for m in _moves(crm, deal["id"])] == ["Sin presupuesto"]


def test_each_lost_move_keeps_its_own_reason(crm: Crm) -> None:
    deal = crm.deal()
    lost, reopen = _stage_id(crm, "Lost"), _stage_id(crm, "Proposal")
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": lost, "lost_reason": "Precio"}))
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": reopen}))
    crm.ok(crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": lost, "lost_reason": "Plazo"}))
    assert [m["data"].get("lost_reason") for m in _moves(crm, deal["id"])] == ["Plazo", None, "Precio"]


def test_the_document_describes_the_reason(client: FlaskClient) -> None:
    document = client.get("/openapi.json").get_json()
    operation = document["paths"]["/v1/crm/organizations/{organization_id}/deals/{id}/stage"]["patch"]
    reference = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    assert body["required"] == ["stage_id"]
    reason = body["properties"]["lost_reason"]
    text = next(option for option in reason["anyOf"] if option.get("type") == "string")
    assert (text["minLength"], text["maxLength"]) == (1, 500)
    assert "lost" in reason["description"] and "lost_reason" in operation["description"]
