"""Property-based requests generated from /openapi.json (valid and invalid): whatever a client sends to
any published route, the answer is never a 5xx. ``FUZZ_EXAMPLES`` raises the number of cases per route
(``make fuzz`` runs 100); the default keeps the suite fast and deterministic.

The app is built at collection time (schemathesis parametrizes from its document) on its own temporary
SQLite stores, so the fuzzer's writes never meet the other tests' data.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings

from app import create_app
from core import jobs, realtime
from tests.conftest import TEST_SECRET

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))

_folder = Path(tempfile.mkdtemp(prefix="agentdesk-fuzz-"))
app = create_app(
    {
        "TESTING": True,
        "INSTANCE_PATH": str(_folder),
        "DATABASE_URL": f"sqlite:///{_folder / 'live.db'}",
        "SANDBOX_DATABASE_URL": f"sqlite:///{_folder / 'sandbox.db'}",
        "SECRET_KEY": TEST_SECRET,
        "JOBS_MODE": "inline",
        "REDIS_URL": None,
    }
)
_runner = app.test_cli_runner()
_runner.invoke(args=["setup"], catch_exceptions=False)
_created = json.loads(
    _runner.invoke(
        args=["orgs", "create", "--name", "Fuzz", "--products", "SIM,ESIM,TRAVEL_ESIM", "--json"]
    ).output
)
ORGANIZATION_ID = _created["organization_id"]
HEADERS = {"X-API-Key": _created["api_keys"]["live"]}

schema = schemathesis.openapi.from_wsgi("/openapi.json", app)


@schema.include(path_regex="^/v").parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case: Any) -> None:
    realtime.activate(app)  # other tests' apps may have been the last to bind the shared servers
    jobs.init_app(app)
    if case.path_parameters and "organization_id" in case.path_parameters:
        case.path_parameters["organization_id"] = ORGANIZATION_ID
    case.headers = {**(case.headers or {}), **HEADERS}
    response = case.call()
    assert response.status_code < 500, (
        case.method,
        case.formatted_path,
        case.query,
        case.body,
        response.text[:300],
    )
