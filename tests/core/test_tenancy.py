"""Tenancy by construction: every lookup of a tenant-owned row by id goes through ``core.tenancy``.

A static check over the areas' code: a ``session.get(Model, ...)`` on a model that carries an
``organization_id`` would return another organization's row to whoever knows its id, so it fails here,
naming the place. (Rows found by a query that filters on ``organization_id`` are fine.)
"""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest
from flask import Flask

from core.db import db
from core.errors import ApiError
from core.tenancy import find_for_org, get_for_org
from tests.conftest import Org

ROOT = Path(__file__).resolve().parents[2]


def _tenant_models() -> set[str]:
    return {
        mapper.class_.__name__ for mapper in db.Model.registry.mappers if "organization_id" in mapper.columns
    }


def _unscoped_lookups() -> list[str]:
    tenant = _tenant_models()
    found = []
    for path in sorted((ROOT / "blueprints").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ("get", "get_or_404") or not node.args:
                continue
            owner = node.func.value
            is_session = (isinstance(owner, ast.Attribute) and owner.attr == "session") or (
                isinstance(owner, ast.Name) and owner.id in ("session", "db")
            )
            model = node.args[0]
            if is_session and isinstance(model, ast.Name) and model.id in tenant:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} session.get({model.id}, ...)")
    return found


def test_tenant_owned_models_are_never_looked_up_by_id_alone(app: Flask) -> None:  # app: every area mapped
    assert len(_tenant_models()) > 10  # the check sees the areas' models
    assert _unscoped_lookups() == []


def test_get_for_org_refuses_another_organizations_row(app: Flask, org: Org, other_org: Org) -> None:
    from blueprints.organizations.models import ApiKey

    with app.app_context():
        key = db.session.query(ApiKey).filter_by(organization_id=uuid.UUID(org.id)).first()
        assert get_for_org(ApiKey, key.id, uuid.UUID(org.id)) is key
        assert get_for_org(ApiKey, str(key.id), uuid.UUID(org.id)) is key
        assert find_for_org(ApiKey, key.id, uuid.UUID(other_org.id)) is None
        assert find_for_org(ApiKey, "not-a-uuid", uuid.UUID(org.id)) is None
        with pytest.raises(ApiError) as refused:
            get_for_org(ApiKey, key.id, uuid.UUID(other_org.id), "API key")
        assert (refused.value.status, refused.value.message) == (404, "No API key found")
