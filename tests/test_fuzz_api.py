"""Property-based requests generated from /openapi.json (valid and invalid), authenticated with the
organization's live key: every answer of every published operation must

- never be a 5xx (``not_a_server_error``);
- have a status the document lists for that operation, errors included (``status_code_conformance``);
- have the documented content type, headers and body (``content_type_conformance``,
  ``response_headers_conformance``, ``response_schema_conformance``): an error body in its area's format.

A second, stateful phase walks the document's links (create -> read -> update -> delete, added in
``core.openapi``), so reads and updates also meet objects that exist.

``FUZZ_EXAMPLES`` sets the cases per operation (default 3, ``make fuzz`` runs 100) and
``FUZZ_STATEFUL_EXAMPLES`` the stateful scenarios; generation is derandomized, so a run is repeatable.
The end of the run prints how many operations, cases and stateful steps were covered.

The app is built at collection time (schemathesis parametrizes from its document) on stores of its own,
so the fuzzer's writes never meet the other tests' data: temporary SQLite files, or with
``TEST_DATABASE_URL`` the PostgreSQL databases ``<name>_fuzz`` and ``<name>_fuzz_sandbox`` (PostgreSQL
refuses what SQLite accepts, NUL characters for one, so CI fuzzes both).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis.errors import FlakyStrategyDefinition
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.engine import make_url

from app import create_app
from core import jobs, realtime
from core.config import normalize_database_url
from tests.conftest import TEST_SECRET
from tests.fakes.meta_graph import FakeMetaGraph
from tests.support.stores import _postgres_stores, make_stores

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "3"))
STATEFUL_EXAMPLES = int(os.environ.get("FUZZ_STATEFUL_EXAMPLES", str(max(EXAMPLES * 8, 24))))
STATEFUL_STEPS = int(os.environ.get("FUZZ_STATEFUL_STEPS", "6"))


def no_graph_path_escape(ctx: Any, response: Any, case: Any) -> bool | None:
    """No request may make the product call the Graph host outside its version prefix (with the
    organization's token): whatever a client sends, ids are checked and quoted into one segment."""
    escaped = GRAPH.outside_version()
    if escaped:
        paths = sorted({r.path for r in escaped})
        COVERAGE.escapes += len(escaped)
        GRAPH.received.clear()
        raise AssertionError(f"{case.operation.label} made the product call Graph outside /v*/: {paths}")
    GRAPH.received.clear()
    return None


CHECKS = [
    no_graph_path_escape,
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

# A fake Graph API on loopback behind a Meta-provider number of the demo organization: generated bodies
# that name an address are steered to it every other case, so generated template ids reach the provider
# code, and every answer is checked for a Graph request outside the versioned path (no_graph_path_escape).
GRAPH = FakeMetaGraph().start()
GRAPH_TOKEN = "EAAfuzzToken0123456789"
GRAPH.tokens.add(GRAPH_TOKEN)
GRAPH_TEMPLATE = GRAPH.add_template(
    id="800000000000001", name="fuzz_promo", language="es_MX", components=[{"type": "BODY", "text": "Hola"}]
)
META_ADDRESS = "106540352242922"
# Template ids that would leave the versioned path or start a query string if sent as written.
STEERING_IDS = ("../../_ctl/stats", "800000000000001?fields=name", "..", "800000000000001/../../x", "%2e%2e")

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
        # The fuzzer sends hundreds of requests a second with one key; the limits have their own tests
        # (tests/core/test_rate_limits.py) and their 429 is documented on every operation.
        "RATE_LIMIT_ENABLED": False,
        "META_GRAPH_URL": GRAPH.graph_url,
        "META_HTTP_TIMEOUT": 5,
    }
)
_runner = app.test_cli_runner()
_runner.invoke(args=["setup"], catch_exceptions=False)
# The demo organization (every product enabled) with every area's demo data: pipelines, deals, tickets,
# contacts, a simulator WhatsApp number and its conversations, so that reads, updates and the stateful
# links (a list's first row -> its read/update/delete) reach stored objects, not only 404s.
_seeded = _runner.invoke(args=["demo", "seed"], catch_exceptions=False).output
ORGANIZATION_ID = re.search(r"Demo organization: .* \(([0-9a-f-]{36})\)", _seeded).group(1)  # type: ignore[union-attr]
HEADERS = {"X-API-Key": re.search(r"live API key: (\S+)", _seeded).group(1)}  # type: ignore[union-attr]
_connected = _runner.invoke(
    args=[
        *("channels", "connect", "--org", ORGANIZATION_ID, "--service", "whatsapp", "--provider", "meta"),
        *("--address", META_ADDRESS, "--waba-id", "102290129340398", "--access-token", GRAPH_TOKEN),
    ],
    catch_exceptions=False,
)
assert _connected.exit_code == 0, _connected.output

schema = schemathesis.openapi.from_wsgi("/openapi.json", app).include(path_regex="^/v")
# CI runs the explicit examples, the fuzzing phase (positive and negative data) and the stateful walk.
# The coverage phase (boundary values of every parameter, ~50 cases per operation) is too slow for CI:
# FUZZ_PHASES=examples,coverage,fuzzing,stateful adds it.
schema.config.phases.update(phases=os.environ.get("FUZZ_PHASES", "examples,fuzzing,stateful").split(","))
# The walk follows links from successful answers: valid data only, so creates and updates succeed and
# the chains go deep (invalid data is the fuzzing phase's part).
schema.config.phases.stateful.generation.update(modes=[GenerationMode.POSITIVE])
# Only the document's own links: Schemathesis would also infer links from any response that names an
# organization to every operation under it, with the other path values random (404s that the fuzzing
# phase already covers), and those took most of the walk's steps.
schema.config.phases.stateful.inference.algorithms = []


class Coverage:
    """What the run reached, printed at the end of the session (visible in CI's output)."""

    def __init__(self) -> None:
        self.operations: set[str] = set()
        self.cases = 0
        self.statuses: Counter[int] = Counter()
        self.stateful_scenarios = 0
        self.stateful_steps = 0
        self.stateful_operations: set[str] = set()
        self.linked_steps = 0
        self.linked_statuses: Counter[int] = Counter()
        # every check that failed in the stateful walk, kept apart from Hypothesis' own reporting (below)
        self.stateful_failures: list[str] = []
        self.stateful_ended_early = False
        self.steered = 0  # bodies naming an address (every other one steered to the Meta number)
        self.hostile = 0  # of those, bodies given a path-steering template id
        self.escapes = 0  # Graph requests outside the versioned path (each fails its case)

    def record(self, case: Any, status: int) -> None:
        self.operations.add(case.operation.label)
        self.cases += 1
        self.statuses[status] += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.cases and not self.stateful_steps:
            return
        total = len(list(schema.get_all_operations()))
        statuses = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        write = terminalreporter.write_line
        terminalreporter.section("API fuzzing (schemathesis)")
        write(f"operations: {len(self.operations)} of {total} published, {self.cases} cases ({statuses})")
        write(
            f"stateful: {self.stateful_scenarios} scenarios, {self.stateful_steps} steps "
            f"over {len(self.stateful_operations)} operations; {self.linked_steps} followed a link "
            f"({', '.join(f'{code}: {n}' for code, n in sorted(self.linked_statuses.items()))})"
        )
        if self.stateful_ended_early:
            write(
                "stateful: Hypothesis stopped the walk early (a replayed scenario met the server's changed "
                "data: FlakyStrategyDefinition); every step it ran was checked"
            )
        write(
            f"Graph: {self.steered // 2 + self.steered % 2} bodies steered to the Meta number, "
            f"{self.hostile} with a path-steering template id; "
            f"{self.escapes} Graph requests outside the version prefix"
        )
        write(f"checks: {', '.join(check.__name__ for check in CHECKS)}")


COVERAGE = Coverage()


@pytest.fixture(scope="module", autouse=True)
def _report_coverage(request: pytest.FixtureRequest) -> Iterator[None]:
    manager = request.config.pluginmanager
    if not manager.is_registered(COVERAGE):
        manager.register(COVERAGE, "agentdesk-fuzz-coverage")
    yield


def _prepare(case: Any) -> None:
    """The organization's own id in the path (another one is a documented 403, tried by the isolation
    matrix) and its live key."""
    realtime.activate(app)  # other tests' apps may have been the last to bind the shared servers
    jobs.init_app(app)
    if case.path_parameters and "organization_id" in case.path_parameters:
        case.path_parameters["organization_id"] = ORGANIZATION_ID
    # A generated `Authorization` header is always validated as a JWT and refused (401) before the
    # operation runs; the refusal is the isolation matrix's subject, the fuzzer's is the operation.
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    case.headers = {**headers, **HEADERS}
    # Every other body that names an address names the Meta number (with a deliverable recipient), so
    # its ids meet the provider code; every other one of those with a template id carries a
    # path-steering id instead of the generated one.
    if isinstance(case.body, dict) and "organization_address" in case.body:
        COVERAGE.steered += 1
        if COVERAGE.steered % 2:
            case.body["organization_address"] = META_ADDRESS
            if "to" in case.body:
                case.body["to"] = "+5215512345678"
            if "recipients" in case.body:
                case.body["recipients"] = [{"to": "+5215512345678"}]
            if "meta_template_id" in case.body and (COVERAGE.steered // 2) % 2 == 0:
                case.body["meta_template_id"] = STEERING_IDS[COVERAGE.hostile % len(STEERING_IDS)]
                COVERAGE.hostile += 1


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_response_conforms_to_the_document(case: Any) -> None:
    _prepare(case)
    response = case.call()
    COVERAGE.record(case, response.status_code)
    case.validate_response(response, checks=CHECKS)


class _Walk(schema.as_state_machine()):  # type: ignore[misc]
    """Stateful phase: schemathesis chains calls through the document's links (a created object's id
    fed into its read, update and delete) and checks every response like the test above."""

    def setup(self) -> None:
        COVERAGE.stateful_scenarios += 1

    def before_call(self, case: Any) -> None:
        _prepare(case)

    def step(self, input: Any) -> Any:
        COVERAGE.stateful_steps += 1
        COVERAGE.stateful_operations.add(input.case.operation.label)
        output = super().step(input)
        if input.transition is not None:
            COVERAGE.linked_steps += 1
            COVERAGE.linked_statuses[output.response.status_code] += 1
            if os.environ.get("FUZZ_VERBOSE"):
                transition = input.transition
                print(
                    "LINK",
                    input.case.operation.label,
                    output.response.status_code,
                    f"via {transition.id}; applied {input.applied_parameters}",
                    input.case.path_parameters,
                    output.response.text[:160] if output.response.status_code >= 400 else "",
                )
        elif os.environ.get("FUZZ_VERBOSE"):
            print("ROOT", input.case.operation.label, output.response.status_code)
        return output

    def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
        try:
            case.validate_response(response, checks=CHECKS)
        except Exception as failure:
            COVERAGE.stateful_failures.append(f"{case.operation.label}: {failure}")
            raise


def test_stateful_chains_conform_to_the_document() -> None:
    """The walk's scenarios share one database, so a scenario Hypothesis replays (to shrink a failure or
    to explore from a known prefix) can find an object an earlier scenario deleted, and the rules it
    could choose differ: Hypothesis then raises FlakyStrategyDefinition about its own generation. That
    ends the walk without being a finding; a failed check is recorded where it happens and fails the test
    whatever Hypothesis raises afterwards."""
    try:
        _Walk.run(
            settings=settings(
                max_examples=STATEFUL_EXAMPLES,
                stateful_step_count=STATEFUL_STEPS,
                derandomize=True,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
        )
    except FlakyStrategyDefinition:
        COVERAGE.stateful_ended_early = True
    assert not COVERAGE.stateful_failures, "\n".join(COVERAGE.stateful_failures[:5])
