"""Ids that reach a provider URL have the provider's form: a template id such as ``../../_ctl/stats``
never steers the organization's access token to another path of the Graph host.

Every way a client names a template (``send-template``, ``broadcasts``, the desk's template form and its
send) is tried with ids that would leave the versioned path, start a query string, hold a control
character or be huge: each is a 400 (the desk: its alert) naming the field, and the fake Graph server
receives no request at all, let alone one outside ``/<version>/``.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from blueprints.channels import meta as meta_provider
from blueprints.channels.meta import MetaProvider
from blueprints.channels.providers import ProviderError
from blueprints.channels.services import get_address
from core.db import db
from core.environments import LIVE, in_environment
from tests.conftest import Org
from tests.fakes.fixtures import Channel, Connect
from tests.fakes.meta_graph import VERSION, FakeMetaGraph
from tests.inbox.conftest import MakeConversation, msg
from tests.support.desk_users import create_desk_user, sign_in

STEERING_IDS = [
    "../../_ctl/stats",
    "..%2F..%2F_ctl%2Fstats",
    "800000000000001?fields=name,status",
    "800000000000001/owner",
    "8000\t0001",
    "8000\r0001",
    "8" * 70_000,
]
CSRF = re.compile(r'name="csrf-token" content="([^"]+)"')


@pytest.fixture
def template(meta: FakeMetaGraph) -> dict[str, Any]:
    return meta.add_template(
        id="800000000000001", name="promo", language="es_MX", components=[{"type": "BODY", "text": "Hola"}]
    )


@pytest.mark.parametrize("template_id", STEERING_IDS, ids=lambda v: repr(v[:24]))
def test_the_api_refuses_ids_that_would_steer_the_token(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any], template_id: str
) -> None:
    send = client.post(
        wa.path("/messages/send-template"),
        json={"organization_address": wa.address, "to": "+5215512345678", "meta_template_id": template_id},
        headers=wa.org.headers(),
    )
    broadcast = client.post(
        msg(wa.org, "/broadcasts"),
        json={
            "organization_address": wa.address,
            "meta_template_id": template_id,
            "recipients": [{"to": "+5215512345678"}],
        },
        headers=wa.org.headers(),
    )
    for response in (send, broadcast):
        assert response.status_code == 400, response.get_json()
        assert response.get_json()["message"].startswith("meta_template_id:")
    assert meta.received == []


def test_a_simulator_id_is_not_a_meta_id(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    """The request models take any provider's form (letters, digits, _); the Meta address then asks
    for its own: digits."""
    response = client.post(
        wa.path("/messages/send-template"),
        json={"organization_address": wa.address, "to": "+5215512345678", "meta_template_id": "sim_welcome"},
        headers=wa.org.headers(),
    )
    assert response.status_code == 400
    assert response.get_json() == {
        "statusCode": 400,
        "message": "meta_template_id: must be a Meta id (digits only)",
    }
    assert meta.received == []


def test_a_real_template_id_still_reaches_the_versioned_path(
    client: FlaskClient, wa: Channel, meta: FakeMetaGraph, template: dict[str, Any]
) -> None:
    response = client.post(
        wa.path("/messages/send-template"),
        json={"organization_address": wa.address, "to": "+5215512345678", "meta_template_id": template["id"]},
        headers=wa.org.headers(),
    )
    assert response.status_code == 201, response.get_json()
    assert [r.path for r in meta.received][:1] == [f"/{VERSION}/{template['id']}"]
    assert meta.outside_version() == []


@pytest.mark.parametrize("template_id", STEERING_IDS[:6], ids=lambda v: repr(v[:24]))
def test_the_desk_template_form_refuses_them_too(
    app: Flask,
    client: FlaskClient,
    runner: FlaskCliRunner,
    wa: Channel,
    meta: FakeMetaGraph,
    template: dict[str, Any],
    make_conversation: MakeConversation,
    template_id: str,
) -> None:
    conversation = make_conversation(wa.org, organization_address=wa.address, address="+5215512345678")
    user = create_desk_user(runner, wa.org.id, "ana@example.com")
    sign_in(client, user["email"])
    page = client.get(f"/inbox/c/{conversation}").get_data(as_text=True)
    token = CSRF.search(page)
    assert token is not None
    headers = {"HX-Request": "true", "X-CSRFToken": token.group(1)}

    form = client.get(f"/inbox/c/{conversation}/template", query_string={"template_id": template_id})
    sent = client.post(
        f"/inbox/c/{conversation}/template", data={"template_id": template_id}, headers=headers
    )
    for response in (form, sent):
        assert response.status_code == 422
        assert "does not belong to this number" in response.get_data(as_text=True)
    assert meta.received == []


def test_connecting_a_meta_address_needs_meta_ids(org: Org, runner: FlaskCliRunner) -> None:
    for option, value in (("--address", "../../_ctl"), ("--waba-id", "1/message_templates?x=")):
        args = [
            "channels",
            "connect",
            "--org",
            org.id,
            "--service",
            "whatsapp",
            "--address",
            "106540352242922",
        ]
        if option == "--address":
            args[-1] = value
        else:
            args += [option, value]
        result = runner.invoke(args=[*args, "--access-token", "EAAx", "--json"])
        assert result.exit_code != 0
        assert f"{option.removeprefix('--').replace('-', '_')}: must be a Meta id" in result.output


def test_url_segments_are_quoted_whole(app: Flask) -> None:
    provider = MetaProvider("https://graph.example/v23.0/", 5)
    assert provider.url("../../_ctl", "x?y=1") == "https://graph.example/v23.0/..%2F..%2F_ctl/x%3Fy%3D1"


@pytest.mark.parametrize("raised", [httpx.InvalidURL("bad"), httpx.CookieConflict("c"), httpx.ReadError("r")])
def test_every_client_exception_is_a_provider_error(
    app: Flask, monkeypatch: pytest.MonkeyPatch, raised: Exception
) -> None:
    class Failing:
        def request(self, *args: Any, **kwargs: Any) -> Any:
            raise raised

    monkeypatch.setattr(meta_provider, "_client", lambda: Failing())
    provider = MetaProvider("https://graph.example/v23.0", 5)
    with pytest.raises(ProviderError):
        provider._request("GET", ("1",), "token", safe=False)


def test_a_stored_bad_waba_id_cannot_leave_the_version_either(
    app: Flask, wa: Channel, meta: FakeMetaGraph, connect: Connect
) -> None:
    """A WABA id stored before ids were checked is quoted into one segment: the fake sees it under the
    version prefix (and refuses it), never ``/_ctl``."""
    with in_environment(app, LIVE):
        address = get_address(uuid.UUID(wa.org.id), wa.address)
        assert address is not None
        address.extra = {**(address.extra or {}), "waba_id": "../../_ctl/stats"}
        db.session.commit()
        with pytest.raises(ProviderError):
            MetaProvider.from_config().list_templates(address)
    assert meta.received and meta.outside_version() == []
