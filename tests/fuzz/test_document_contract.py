"""The OpenAPI document states every error an operation can answer, in its area's body, and links the
create -> read -> update -> delete chains (``core.openapi.document_errors`` / ``link_operations``): what
the schema-checking fuzz run (tests/test_fuzz_api.py) holds the answers to."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

METHODS = {"get", "post", "put", "patch", "delete"}
AREA_SCHEMAS = {
    "/v1/crm/": "CrmError",
    "/v2/messages/": "PlainError",
    "/v1/members/": "PlainError",
    "/v1/organizations": "PlainError",
    "/v1/partner/": "TelecomError",
    "/v2/voice/": "PlainError",
}
ERRORS_OF_EVERY_OPERATION = ("400", "401", "403", "404", "413", "429", "500", "503")
ORG = "/v1/crm/organizations/{organization_id}"
MSG = "/v2/messages/organizations/{organization_id}"


@pytest.fixture
def document(client: FlaskClient) -> dict[str, Any]:
    return client.get("/openapi.json").get_json()


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def _refs(schema: dict[str, Any]) -> set[str]:
    options = schema.get("anyOf", [schema])
    return {option["$ref"].rsplit("/", 1)[-1] for option in options if "$ref" in option}


def test_every_operation_documents_its_errors_in_its_area_format(document: dict[str, Any]) -> None:
    checked = 0
    for path, method, operation in _operations(document):
        area = next((schema for prefix, schema in AREA_SCHEMAS.items() if path.startswith(prefix)), None)
        assert area, f"{path} is in no area: add its prefix to core.errors and to AREA_SCHEMAS"
        responses = operation["responses"]
        statuses = [*ERRORS_OF_EVERY_OPERATION, *(["409"] if method != "get" else [])]
        for status in statuses:
            assert status in responses, (method, path, status)
            schema = responses[status]["content"]["application/json"]["schema"]
            assert area in _refs(schema), (method, path, status, schema)
        checked += 1
    assert checked >= 200


def test_a_path_value_that_fits_no_route_may_answer_route_not_found(document: dict[str, Any]) -> None:
    members = "/v1/members/organizations/{organization_id}/members"
    restore = f"{members}/{{agent_id}}/agent-config/versions/{{version}}/restore"
    schema = document["paths"][restore]["post"]["responses"]["404"]["content"]["application/json"]["schema"]
    assert _refs(schema) == {"PlainError", "RouteNotFound"}
    assert document["components"]["schemas"]["RouteNotFound"]["required"] == ["error_msg"]


def test_retryable_errors_document_retry_after(document: dict[str, Any]) -> None:
    operation = document["paths"][f"{ORG}/deals"]["post"]
    assert "Retry-After" in operation["responses"]["503"]["headers"]
    assert "Retry-After" in operation["responses"]["429"]["headers"]


def _links(document: dict[str, Any], path: str, method: str) -> dict[str, dict[str, str]]:
    """Target path+method -> parameters, over the operation's success responses."""
    by_id = {op["operationId"]: (m, p) for p, m, op in _operations(document) if "operationId" in op}
    found = {}
    for response in document["paths"][path][method]["responses"].values():
        for link in response.get("links", {}).values():
            target_method, target_path = by_id[link["operationId"]]
            found[f"{target_method.upper()} {target_path}"] = link["parameters"]
    return found


@pytest.mark.parametrize(
    ("collection", "parameter", "chain"),
    [
        (f"{ORG}/contacts", "id", ("GET", "PATCH", "DELETE")),
        (f"{ORG}/deals", "id", ("GET", "PATCH", "DELETE")),
        (f"{ORG}/tickets", "id", ("GET", "PATCH")),
        (f"{ORG}/tasks", "id", ("GET", "PATCH", "DELETE")),
        (f"{MSG}/labels", "label_id", ("PATCH", "DELETE")),
        (f"{MSG}/conversations/{{conversation_id}}/notes", "note_id", ("DELETE",)),
        ("/v1/partner/users", "user_id", ("GET", "PATCH", "DELETE")),
    ],
)
def test_creates_link_their_new_object_to_its_read_update_and_delete(
    document: dict[str, Any], collection: str, parameter: str, chain: tuple[str, ...]
) -> None:
    links = _links(document, collection, "post")
    for method in chain:
        assert links[f"{method} {collection}/{{{parameter}}}"][parameter] == "$response.body#/id"


def test_lists_and_reads_link_onwards(document: dict[str, Any]) -> None:
    conversation = f"{MSG}/conversations/{{conversation_id}}"
    from_list = _links(document, f"{MSG}/conversations", "get")
    assert from_list[f"POST {conversation}/notes"]["conversation_id"] == "$response.body#/data/0/id"
    from_read = _links(document, f"{ORG}/contacts/{{id}}", "get")
    assert from_read[f"PATCH {ORG}/contacts/{{id}}"]["id"] == "$request.path.id"
    assert f"DELETE {ORG}/contacts/{{id}}" in from_read
