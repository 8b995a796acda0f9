"""What the edge refuses before any area code runs: oversize bodies, deep JSON, unstorable text, and
requests the HTTP server itself cannot read; every answer is JSON in the area's format."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.serving import make_server

from core.serving import JsonErrorRequestHandler
from tests.conftest import Org


def _probe(org: Org) -> str:
    return f"/v2/messages/organizations/{org.id}/probe"


def test_a_body_over_the_limit_is_413_in_the_area_format(client: FlaskClient, org: Org) -> None:
    oversize = b'{"name": "' + b"x" * (1024 * 1024 + 10) + b'", "amount": 1}'
    response = client.post(_probe(org), data=oversize, content_type="application/json", headers=org.headers())
    assert response.status_code == 413
    assert response.get_json()["statusCode"] == 413
    crm = client.post(
        f"/v1/crm/organizations/{org.id}/probe",
        data=oversize,
        content_type="application/json",
        headers=org.headers(),
    )
    assert crm.status_code == 413 and crm.get_json()["error"]["statusCode"] == 413


def test_json_nested_thousands_deep_is_a_400(client: FlaskClient, org: Org) -> None:
    deep = "[" * 5000 + "]" * 5000
    response = client.post(_probe(org), data=deep, content_type="application/json", headers=org.headers())
    assert response.status_code == 400
    assert response.get_json()["statusCode"] == 400


@pytest.mark.parametrize("bad", ["a\x00b", "lone \ud800 surrogate"])
def test_unstorable_text_in_a_body_is_a_400_naming_the_field(client: FlaskClient, org: Org, bad: str) -> None:
    body = json.dumps({"name": bad, "amount": 1})  # ensure_ascii keeps the surrogate as an escape
    response = client.post(_probe(org), data=body, content_type="application/json", headers=org.headers())
    assert response.status_code == 400
    assert response.get_json()["message"].startswith("name: must not contain")


def test_unstorable_text_in_a_path_or_query_is_a_400_naming_it(client: FlaskClient, org: Org) -> None:
    in_query = client.get(f"/v1/crm/organizations/{org.id}/probe?limit=5%00", headers=org.headers())
    assert in_query.status_code == 400
    assert "'limit': must not contain NUL" in in_query.get_json()["error"]["message"]
    in_path = client.get(f"/v1/members/organizations/{org.id}%00/probe", headers=org.headers())
    assert in_path.status_code in (400, 403)  # the organization check may refuse it first; never a 500


def test_every_answer_says_nosniff(client: FlaskClient, org: Org) -> None:
    for response in (
        client.get(_probe(org), headers=org.headers()),
        client.get(_probe(org)),
        client.get("/no/such/route"),
    ):
        assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.fixture
def server(app: Flask) -> Iterator[int]:
    httpd = make_server("127.0.0.1", 0, app, threaded=True, request_handler=JsonErrorRequestHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_port
    httpd.shutdown()


def test_the_server_refuses_oversize_request_lines_and_headers_in_json(server: int) -> None:
    for path, headers, status in (
        ("/v1/organizations?" + "a" * 70_000, {}, 414),
        ("/v1/organizations", {f"X-Filler-{i}": "x" for i in range(120)}, 431),
    ):
        connection = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        assert response.status == status
        assert response.getheader("Content-Type") == "application/json"
        assert json.loads(response.read())["statusCode"] == status
        connection.close()


def test_numbers_are_no_dates_and_bodies_use_real_booleans() -> None:
    from datetime import datetime

    from pydantic import ValidationError

    from core.validation import QueryModel, RequestModel

    class Window(QueryModel):
        until: datetime | None = None
        unread: bool | None = None

    class Body(RequestModel):
        split: bool = True

    for number in ("0", "0.5", "1700000000"):
        with pytest.raises(ValidationError, match="ISO 8601"):
            Window.model_validate({"until": number})
    assert Window.model_validate({"until": "2026-11-23T10:00:00Z", "unread": "true"}).unread is True
    for wrong in ("yes", 1, "true"):
        with pytest.raises(ValidationError, match="true or false"):
            Body.model_validate({"split": wrong})
    assert Body.model_validate({"split": False}).split is False


def test_free_form_json_is_bounded() -> None:
    from typing import Any

    from pydantic import ValidationError

    from core.validation import RequestModel

    class Body(RequestModel):
        document: dict[str, Any] = {}
        items: list[int] = []

    with pytest.raises(ValidationError, match="at most 1000 items"):
        Body.model_validate({"items": list(range(2_000_000))})
    with pytest.raises(ValidationError, match="at most 200 keys"):
        Body.model_validate({"document": {f"k{i}": i for i in range(201)}})
    with pytest.raises(ValidationError, match="at most 1000 items"):
        Body.model_validate({"document": {"nested": [0] * 1001}})
    assert len(Body.model_validate({"items": list(range(1000))}).items) == 1000
