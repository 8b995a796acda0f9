"""Cost of the platform path alone: routing, key resolution, tenancy check, serialisation."""

from __future__ import annotations

from bench.harness import make_app, make_org, measure


def main() -> None:
    app = make_app()
    org = make_org(app)
    client = app.test_client()
    live = {"X-API-Key": org["api_keys"]["live"]}
    sandbox = {"X-API-Key": org["api_keys"]["sandbox"]}
    measure("GET /v1/organizations (live key)", lambda: client.get("/v1/organizations", headers=live))
    measure(
        "GET /sandbox/v1/organizations (sandbox key)",
        lambda: client.get("/sandbox/v1/organizations", headers=sandbox),
    )
    measure("GET /v1/organizations (no key -> 401)", lambda: client.get("/v1/organizations"))
    measure("GET /v1/unknown (route not found)", lambda: client.get("/v1/unknown"))
