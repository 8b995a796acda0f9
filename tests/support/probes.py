"""Small routes, registered only in tests, that exercise the platform's mechanisms in each area's space
(auth, tenancy, validation, error bodies) before that area's real endpoints exist."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_openapi3 import APIBlueprint
from pydantic import BaseModel, Field
from sqlalchemy import select

from blueprints.organizations.models import Organization
from core import auth
from core.db import db
from core.environments import ENVIRONMENTS, environment_app
from core.errors import ApiError, not_found
from core.jobs import job
from core.openapi import AreaAPI
from core.validation import QueryModel, RequestModel


class OrgPath(BaseModel):
    organization_id: str


class ProbeBody(RequestModel):
    name: str = Field(min_length=1)
    amount: int = Field(ge=0)


class ProbeQuery(RequestModel):
    limit: int = Field(20, ge=1, le=100)


class ProbeListQuery(QueryModel):
    limit: int = Field(20, ge=1, le=100)


PROBE_JOB_RUNS: list[tuple[str, bool]] = []


@job(retries=0)
def probe_job(name: str) -> None:
    """Records whether the row its enqueuer wrote is visible when the job runs."""
    found = db.session.scalar(select(Organization).where(Organization.name == name)) is not None
    PROBE_JOB_RUNS.append((name, found))


def _blueprints() -> list[APIBlueprint]:
    crm = AreaAPI("probe_crm", __name__, url_prefix="/v1/crm/organizations/<organization_id>")
    auth.protect(crm, allow_jwt=True)

    @crm.get("/probe")
    def crm_probe(path: OrgPath, query: ProbeQuery) -> dict[str, object]:
        principal = auth.current_principal()
        return {
            "organization_id": str(principal.organization_id),
            "kind": principal.kind,
            "limit": query.limit,
        }

    @crm.post("/probe")
    def crm_create(path: OrgPath, body: ProbeBody) -> dict[str, object]:
        return body.model_dump()

    @crm.get("/probe/missing")
    def crm_missing(path: OrgPath) -> dict[str, object]:
        raise not_found("Deal")

    @crm.get("/probe/boom")
    def crm_boom(path: OrgPath) -> dict[str, object]:
        raise RuntimeError("unexpected")

    messaging = AreaAPI("probe_msg", __name__, url_prefix="/v2/messages/organizations/<organization_id>")
    auth.protect(messaging)

    @messaging.get("/probe")
    def msg_probe(path: OrgPath) -> dict[str, object]:
        return {"organization_id": str(auth.current_organization_id())}

    @messaging.post("/probe")
    def msg_create(path: OrgPath, body: ProbeBody) -> dict[str, object]:
        return body.model_dump()

    @messaging.post("/probe/unit")
    def msg_unit(path: OrgPath, body: ProbeBody) -> Any:
        """Writes an organization named ``body.name``, then behaves as the name says (unit-of-work tests)."""
        db.session.add(Organization(name=body.name, products=[]))
        db.session.flush()
        if body.amount:
            probe_job.enqueue(body.name)
        if body.name == "refused":
            raise ApiError(409, "name: refused after the row was flushed", param="name")
        if body.name == "crashed":
            raise RuntimeError("crashed after the row was flushed")
        if body.name == "answered-error":
            return {"statusCode": 422, "message": "answered by the view"}, 422
        return {"name": body.name}, 201

    @messaging.get("/probe/listed")
    def msg_listed(path: OrgPath, query: ProbeListQuery) -> dict[str, object]:
        return {"limit": query.limit}

    members = AreaAPI("probe_mem", __name__, url_prefix="/v1/members/organizations/<organization_id>")
    auth.protect(members)

    @members.get("/probe")
    def mem_probe(path: OrgPath) -> dict[str, object]:
        return {"ok": True}

    telecom = AreaAPI("probe_tel", __name__, url_prefix="/v1/partner")
    auth.protect(telecom)

    @telecom.get("/probe")
    def tel_probe() -> dict[str, object]:
        return {"organization_id": str(auth.current_organization_id())}

    @telecom.post("/probe/sim")
    def tel_sim() -> dict[str, object]:
        auth.require_product("SIM")
        return {"ok": True}

    @telecom.post("/probe/body")
    def tel_body(body: ProbeBody) -> dict[str, object]:
        if body.name == "taken":
            raise ApiError(409, "name: already used", code="name_taken", param="name")
        return body.model_dump()

    return [crm, messaging, members, telecom]


def install_probes(app: Flask) -> None:
    for environment in ENVIRONMENTS:
        target = environment_app(app, environment)
        if "probe_crm" in target.blueprints:
            continue  # a reused app keeps the probes it got the first time
        for blueprint in _blueprints():
            target.register_api(blueprint)  # type: ignore[attr-defined]
