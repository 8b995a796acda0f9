"""Reads for the desk's Telecom page: the names a list shows beside ids, each in one query per list."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from blueprints.telecom.models import EsimOffer, Plan, TelecomUser
from core.db import db


def user_names(organization_id: uuid.UUID, user_ids: set[str]) -> dict[str, str]:
    if not user_ids:
        return {}
    rows = db.session.execute(
        select(TelecomUser.id, TelecomUser.full_name).where(
            TelecomUser.organization_id == organization_id, TelecomUser.id.in_(user_ids)
        )
    )
    return {row.id: row.full_name for row in rows}


def plan_names(plan_ids: set[str]) -> dict[str, str]:
    """Catalogue names (the catalogue is shared by the environment's organizations)."""
    if not plan_ids:
        return {}
    return {
        row.id: row.name
        for row in db.session.execute(select(Plan.id, Plan.name).where(Plan.id.in_(plan_ids)))
    }


def offer_names(offer_ids: set[str]) -> dict[str, str]:
    if not offer_ids:
        return {}
    rows = db.session.execute(select(EsimOffer.id, EsimOffer.name).where(EsimOffer.id.in_(offer_ids)))
    return {row.id: row.name for row in rows}
