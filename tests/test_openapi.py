"""The OpenAPI document is generated from the route declarations and lists every JSON route."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_openapi3 import APIBlueprint, Tag

from app import create_app
from core.environments import SANDBOX, environment_app
from core.openapi import AreaAPI

API_PREFIXES = ("/v1/", "/v2/")


def _json_routes(app: Flask) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith(API_PREFIXES):
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            routes.add((path.rstrip("/") or "/", method.lower()))
    return routes


def test_every_json_route_is_documented(app: Flask, client: FlaskClient) -> None:
    document = client.get("/openapi.json").get_json()
    assert document["openapi"].startswith("3.1")
    documented = {(path.rstrip("/"), method) for path, item in document["paths"].items() for method in item}
    missing = _json_routes(app) - documented
    assert not missing, f"routes missing from /openapi.json: {sorted(missing)}"
    assert _json_routes(app), "no JSON routes found: the check would pass vacuously"


def test_document_describes_auth_and_errors(client: FlaskClient) -> None:
    document = client.get("/openapi.json").get_json()
    schemes = document["components"]["securitySchemes"]
    assert schemes["ApiKey"] == {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    operation = document["paths"]["/v1/organizations"]["get"]
    assert operation["security"] == [{"ApiKey": []}]
    assert {"200", "401", "403", "404"} <= set(operation["responses"])


def test_sandbox_serves_the_same_document(app: Flask, client: FlaskClient) -> None:
    live = client.get("/openapi.json").get_json()
    sandbox = client.get("/sandbox/openapi.json").get_json()
    assert live["paths"].keys() == sandbox["paths"].keys()
    assert _json_routes(app) == _json_routes(environment_app(app, SANDBOX))


def test_docs_page_is_served(client: FlaskClient) -> None:
    page = client.get("/docs/swagger")
    assert page.status_code == 200
    assert b"swagger" in page.data.lower()


def test_no_two_models_share_a_component_name(app: Flask, client: FlaskClient) -> None:
    """The document names components by class name: two areas' models with one name would silently
    describe one area's bodies with the other's schema."""
    import importlib
    import inspect
    from pathlib import Path

    from pydantic import BaseModel

    owners: dict[str, list[str]] = {}
    for schemas in sorted(Path("blueprints").glob("*/schemas.py")):
        module = importlib.import_module(".".join(schemas.with_suffix("").parts))
        for name, value in vars(module).items():
            defined_here = inspect.isclass(value) and value.__module__ == module.__name__
            if defined_here and issubclass(value, BaseModel):
                owners.setdefault(name, []).append(module.__name__)
    components = client.get("/openapi.json").get_json()["components"]["schemas"]
    shared = {name: where for name, where in owners.items() if len(where) > 1 and name in components}
    assert shared == {}


def test_the_document_is_written_on_first_request_not_at_start_up(app_config: dict[str, Any]) -> None:
    """Building the app (every CLI command, every worker) describes no route: the areas' descriptions are
    written when the document is first asked for, and a route declared later is described too."""
    fresh = create_app(app_config)
    sandbox = environment_app(fresh, SANDBOX)
    assert fresh.spec_json == {} and sandbox.spec_json == {}  # type: ignore[attr-defined]
    late = AreaAPI("late_area", __name__, url_prefix="/v2/late", abp_tags=[Tag(name="Late")])

    @late.get("/things")
    def list_things() -> dict[str, str]:
        """Things declared after start-up."""
        return {}

    assert late._undocumented  # declared, not yet described
    fresh.register_api(late)  # type: ignore[attr-defined]
    client = fresh.test_client()
    document = client.get("/openapi.json").get_json()
    assert document["paths"]["/v2/late/things"]["get"]["summary"] == "Things declared after start-up."
    assert not late._undocumented
    assert client.get("/sandbox/openapi.json").get_json()["paths"].keys() >= {"/v1/organizations"}


def test_a_plain_api_blueprint_is_refused(app: Flask) -> None:
    with pytest.raises(TypeError, match="AreaAPI"):
        app.register_api(APIBlueprint("plain", __name__, url_prefix="/v2/plain"))  # type: ignore[attr-defined]
