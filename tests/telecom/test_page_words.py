"""The telecom page writes the kinds of the balance's movements in the page's language: the ledger stores
them as the services wrote them (English, as the API gives them)."""

from __future__ import annotations

from flask import Flask

from blueprints.telecom.pages import ledger_description


def test_movement_kinds_read_in_spanish_and_names_are_kept(app: Flask) -> None:
    with app.test_request_context("/telecom", headers={"Accept-Language": "es-MX,es"}):
        assert ledger_description("line_purchase") == "Línea nueva"
        assert ledger_description("plan_change") == "Cambio de plan"
        assert ledger_description("Renewal Plan Ilimitado 20 GB") == "Renovación Plan Ilimitado 20 GB"
        assert ledger_description("Travel eSIM top-up Europa 5 GB") == "Recarga de eSIM de viaje Europa 5 GB"
        assert ledger_description("Travel eSIM Europa 5 GB") == "eSIM de viaje Europa 5 GB"
        assert ledger_description("Line Plan 10") == "Línea nueva Plan 10"
        assert ledger_description("Linea premium") == "Linea premium"  # a word that only starts alike
        assert ledger_description("Credit from the partner") == "Credit from the partner"  # a person's words
    with app.test_request_context("/telecom", headers={"Accept-Language": "en"}):
        assert ledger_description("line_purchase") == "New line"
