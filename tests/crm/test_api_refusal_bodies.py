"""The API's error bodies for the CRM verbs' refusals, byte for byte as they were before the verbs took
typed inputs and refused with codes: the codes and fields are for pages, the wire is unchanged.

(Only the HTTP API is used here, so this module runs unchanged against the code before that change.)
"""

from __future__ import annotations

from typing import Any

from tests.crm.conftest import Crm

OTHER_ORGANIZATION_STAGE = "6f1f3c52-8d0e-4d4e-9a43-2b7c5f0c9e11"


def _other_pipeline_stage(crm: Crm) -> dict[str, Any]:
    other = crm.ok(crm.post("/pipelines", {"name": "Renewals", "key": "REN"}), 201)
    return dict(crm.ok(crm.post(f"/pipelines/{other['id']}/stages", {"name": "Due", "stage_order": 0}), 201))


def test_a_stage_of_another_pipeline_answers_the_same_bytes(crm: Crm) -> None:
    pipeline = crm.pipeline()
    stage = _other_pipeline_stage(crm)
    response = crm.post("/deals", {"name": "Plan", "pipeline_id": pipeline["id"], "stage_id": stage["id"]})
    assert response.status_code == 400
    assert response.get_data() == (
        b'{"statusCode":400,"error":{"message":"stage_id: the stage belongs to another pipeline",'
        b'"error":"Bad Request","statusCode":400}}\n'
    )


def test_an_unknown_currency_answers_the_same_bytes(crm: Crm) -> None:
    pipeline = crm.pipeline()
    body = {"name": "Plan", "pipeline_id": pipeline["id"], "stage_id": pipeline["stages"][0]["id"]}
    response = crm.post("/deals", {**body, "currency": "XXX"})
    assert response.status_code == 400
    assert response.get_data() == (
        b"{\"statusCode\":400,\"error\":{\"message\":\"currency: Input should be 'MXN', 'USD', 'EUR', 'COP', "
        b"'ARS', 'BRL', 'CLP', 'PEN', 'UYU', 'BOB', 'PYG', 'CRC', 'DOP', 'GTQ', 'HNL', 'NIO', 'PAB', 'GBP' "
        b'or \'CAD\'","error":"Bad Request","statusCode":400}}\n'
    )


def test_an_amount_the_line_items_make_answers_the_same_bytes(crm: Crm) -> None:
    deal = crm.deal(name="Plan")
    crm.ok(crm.post(f"/deals/{deal['id']}/line-items", {"name": "Seat", "quantity": 1, "unit_price": 5}), 201)
    response = crm.patch(f"/deals/{deal['id']}", {"amount": 99})
    assert response.status_code == 409
    assert response.get_data() == (
        b'{"statusCode":409,"error":{"message":"amount: the amount is the sum of the line items",'
        b'"error":"Conflict","statusCode":409}}\n'
    )


def test_a_missing_stage_answers_the_same_bytes(crm: Crm) -> None:
    deal = crm.deal(name="Plan")
    response = crm.patch(f"/deals/{deal['id']}/stage", {"stage_id": OTHER_ORGANIZATION_STAGE})
    assert response.status_code == 404
    assert response.get_data() == (
        b'{"statusCode":404,"error":{"message":"No Stage found","error":"Not Found","statusCode":404}}\n'
    )
