"""Property-based requests generated from /openapi.json (valid and invalid): whatever a client sends to
any published route, the answer is never a 5xx. ``FUZZ_EXAMPLES`` raises the number of cases per route
(``make fuzz`` runs 100); the default keeps the suite fast and deterministic.

The app is built at collection time (schemathesis parametrizes from its document) on stores of its own,
so the fuzzer's writes never meet the other tests' data: temporary SQLite files, or with
``TEST_DATABASE_URL`` the PostgreSQL databases ``<name>_fuzz`` and ``<name>_fuzz_sandbox`` (PostgreSQL
refuses what SQLite accepts, NUL characters for one, so CI fuzzes both).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from sqlalchemy.engine import make_url

from app import create_app
from core import jobs, realtime
from core.config import normalize_database_url
from tests.conftest import TEST_SECRET
from tests.support.stores import _postgres_stores, make_stores

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))

_folder = Path(tempfile.mkdtemp(prefix="agentdesk-fuzz-"))
if os.environ.get("TEST_DATABASE_URL"):
    _url = make_url(normalize_database_url(os.environ["TEST_DATABASE_URL"]))
    _stores = _postgres_stores(
        _url.set(database=f"{_url.database}_fuzz").render_as_string(hide_password=False)
    )
else:
    _stores = make_stores(_folder)
app = create_app(
    {
        "TESTING": True,
        "INSTANCE_PATH": str(_folder),
        "DATABASE_URL": _stores.live_url,
        "SANDBOX_DATABASE_URL": _stores.sandbox_url,
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
