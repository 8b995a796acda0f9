"""``POST {msg}/messages/send-template``: named templates looked up at the provider, every spec error,
Meta's 132000/132001 mapped, and pausing the AI agent."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect
from tests.fakes.meta_graph import FakeMetaGraph
from tests.messaging.helpers import CONTACT_E164

BODY_TEXT = "Hi {{customer_name}}, your order {{order_number}} has been confirmed!"


@pytest.fixture
def template(meta: FakeMetaGraph) -> dict[str, Any]:
    return meta.add_template(
        id="800001234567890",
        name="order_confirmation",
        language="en_US",
        components=[{"type": "BODY", "text": BODY_TEXT}],
    )


def params(**values: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "body",
            "parameters": [{"type": "text", "parameter_name": k, "text": v} for k, v in values.items()],
        }
    ]


def template_body(channel: Channel, template_id: str, **overrides: Any) -> dict[str, Any]:
    return {
        "organization_address": channel.address,
        "to": "+5215512345678",
        "meta_template_id": template_id,
        "components": params(customer_name="Jessica", order_number="SKBUP2-4CPIG9"),
        **overrides,
    }


def send_template(client: FlaskClient, channel: Channel, body: dict[str, Any], **headers: str) -> Any:
    return client.post(
        channel.path("/messages/send-template"), json=body, headers={**channel.org.headers(), **headers}
    )


def test_a_named_template_is_sent_outside_the_window(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    response = send_template(client, wa, template_body(wa, template["id"]))
    assert response.status_code == 201, response.get_json()
    message = response.get_json()
    assert message["template_name"] == "order_confirmation"
    assert message["template_language"] == "en_US"
    assert set(message["status"]) == {"pending", "accepted"}
    assert message["template"]["text"] == "Hi Jessica, your order SKBUP2-4CPIG9 has been confirmed!"
    assert message["data"]["components"][0]["parameters"][0]["parameter_name"] == "customer_name"
    assert message["contact_address"] == CONTACT_E164
    lookup, sent = meta.received
    assert lookup.method == "GET" and lookup.path == f"/v23.0/{template['id']}"
    assert sent.body == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "525512345678",
        "type": "template",
        "template": {
            "name": "order_confirmation",
            "language": {"code": "en_US"},
            "components": [
                {
                    "type": "body",
                    "parameters": [
                        {"type": "text", "text": "Jessica", "parameter_name": "customer_name"},
                        {"type": "text", "text": "SKBUP2-4CPIG9", "parameter_name": "order_number"},
                    ],
                }
            ],
        },
    }
    conversation = client.get(
        wa.path(f"/conversations/{message['conversation_id']}"), headers=wa.org.headers()
    ).get_json()
    assert conversation["ai_paused_at"] is not None  # do_not_pause defaults to false


def test_do_not_pause_keeps_the_agent_answering(
    client: FlaskClient, wa: Channel, template: dict[str, Any]
) -> None:
    response = send_template(client, wa, template_body(wa, template["id"], do_not_pause=True))
    assert response.status_code == 201
    conversation_id = response.get_json()["conversation_id"]
    conversation = client.get(
        wa.path(f"/conversations/{conversation_id}"), headers=wa.org.headers()
    ).get_json()
    assert conversation["ai_paused_at"] is None


def test_header_image_and_url_button_parameters(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    components = [
        {"type": "header", "parameters": [{"type": "image", "image": {"link": "https://x.test/h.png"}}]},
        *params(customer_name="Ana", order_number="A1"),
        {"type": "buttons", "parameters": [{"type": "text", "parameter_name": "tracking", "text": "A1"}]},
    ]
    response = send_template(client, wa, template_body(wa, template["id"], components=components))
    assert response.status_code == 201, response.get_json()
    sent = meta.sends()[0].body["template"]["components"]
    assert sent[0] == {
        "type": "header",
        "parameters": [{"type": "image", "image": {"link": "https://x.test/h.png"}}],
    }
    assert sent[2] == {
        "type": "button",
        "sub_type": "url",
        "index": "0",
        "parameters": [{"type": "text", "text": "A1", "parameter_name": "tracking"}],
    }


def test_parameters_without_names_are_400(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    unnamed = [{"type": "body", "parameters": [{"type": "text", "text": "Jessica"}]}]
    for components in (unnamed, [], params(customer_name="Jessica")):
        response = send_template(client, wa, template_body(wa, template["id"], components=components))
        assert response.status_code == 400
        assert response.get_json() == {"statusCode": 400, "message": "Parameter name is missing"}
    assert meta.sends() == []


def test_unknown_template_is_404(client: FlaskClient, wa: Channel, meta: FakeMetaGraph) -> None:
    response = send_template(client, wa, template_body(wa, "123456"))
    assert response.status_code == 404
    assert response.get_json() == {"statusCode": 404, "message": "Failed to get template from Meta"}
    assert meta.sends() == []


def test_template_lookup_is_retried_on_server_errors(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any], monkeypatch
) -> None:
    from blueprints.channels import meta as meta_module

    monkeypatch.setattr(meta_module, "RETRY_PAUSES", (0.0, 0.0))
    meta.server_errors = 2
    assert send_template(client, wa, template_body(wa, template["id"])).status_code == 201
    assert [r.method for r in meta.received] == ["GET", "GET", "GET", "POST"]


@pytest.mark.parametrize("status", ["REJECTED", "PAUSED", "PENDING"])
def test_only_approved_templates_are_sent(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, status: str
) -> None:
    template = meta.add_template(name="promo", status=status, components=[{"type": "BODY", "text": "Sale!"}])
    response = send_template(client, wa, template_body(wa, template["id"], components=[]))
    assert response.status_code == 400
    assert response.get_json() == {
        "statusCode": 400,
        "message": f"Template promo is not approved (status {status})",
    }
    assert meta.sends() == []


def test_meta_132000_is_mapped_and_the_message_kept_failed(
    client: FlaskClient, wa: Channel, template: dict[str, Any]
) -> None:
    components = params(customer_name="Jessica", order_number="X", extra_value="surplus")
    response = send_template(client, wa, template_body(wa, template["id"], components=components))
    assert response.status_code == 400
    assert response.get_json() == {"statusCode": 400, "message": "Message failed to send"}
    message = client.get(
        wa.path(f"/messages/{response.headers['X-Message-Id']}"), headers=wa.org.headers()
    ).get_json()
    assert message["current_status"] == "failed"
    assert message["status"]["error"]["code"] == 132000
    assert "localizable_params" in message["status"]["error"]["details"]


def test_meta_132001_at_send_is_404_failed_to_get_template(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph
) -> None:
    # approved when read, disabled by the time it is sent (Meta answers 132001)
    template = meta.add_template(
        name="vanishing", status_at_send="DISABLED", components=[{"type": "BODY", "text": "Hi"}]
    )
    failed = send_template(client, wa, template_body(wa, template["id"], components=[]))
    assert failed.status_code == 404
    assert failed.get_json() == {"statusCode": 404, "message": "Failed to get template from Meta"}
    error = client.get(
        wa.path(f"/messages/{failed.headers['X-Message-Id']}"), headers=wa.org.headers()
    ).get_json()
    assert error["status"]["error"]["code"] == 132001


def test_unknown_address_no_token_and_validation(
    client: FlaskClient, org: Org, wa: Channel, connect: Connect, template: dict[str, Any]
) -> None:
    unknown = send_template(client, wa, template_body(wa, template["id"], organization_address="42"))
    assert unknown.status_code == 404
    assert unknown.get_json() == {"statusCode": 404, "message": "Organization address not found"}
    connect(org, "whatsapp", "777", token=None)
    tokenless = send_template(client, wa, template_body(wa, template["id"], organization_address="777"))
    assert tokenless.get_json() == {
        "statusCode": 400,
        "message": "Organization address does not have an access token",
    }
    missing = send_template(client, wa, {"organization_address": wa.address, "to": "+525512345678"})
    assert missing.status_code == 400 and missing.get_json()["message"].startswith("meta_template_id:")
    bad_to = send_template(client, wa, template_body(wa, template["id"], to="555"))
    assert bad_to.get_json() == {"statusCode": 400, "message": "to: not a valid phone number"}
    bad_parameter = send_template(
        client,
        wa,
        template_body(wa, template["id"], components=[{"type": "body", "parameters": [{"type": "text"}]}]),
    )
    assert bad_parameter.status_code == 400
    assert bad_parameter.get_json()["message"].startswith("components.0.parameters.0:")


def test_templates_are_idempotent_too(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    body = template_body(wa, template["id"])
    first = send_template(client, wa, body, **{"Idempotency-Key": "tpl-1"})
    second = send_template(client, wa, body, **{"Idempotency-Key": "tpl-1"})
    assert first.get_json()["id"] == second.get_json()["id"]
    assert len(meta.sends()) == 1
