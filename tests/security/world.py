"""Two organizations with real data in both environments, for the isolation matrix.

Organization A is the demo organization (``flask demo seed``: every area's seeder, so every kind of object
a route can address exists), completed here with the few kinds the demo does not create (canned
responses, ticket types, projects, a deal-conversation link, a telecom address, a lifecycle webhook
endpoint and one of its deliveries, a notification delivery, a broadcast). Organization B is a fresh
organization with a desk user and a few objects of its own, so that its lists are not trivially empty.

``ParamValues`` maps each path parameter (named by where it sits in the route, see ``routes.param_kind``)
to A's value in one environment: the matrix builds A's paths from it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import Table, select

from blueprints.crm.services.pipelines import default_pipeline_id, default_stage_id
from core.db import db, utcnow
from core.demo import DEMO_ORGANIZATION_ID, DEMO_ORGANIZATION_NAME, derived_secret
from core.environments import ENVIRONMENTS, KEY_PREFIXES, environment_app
from core.tokens import issue_token
from tests.conftest import Org

PREFIX = {"live": "", "sandbox": "/sandbox"}
PASSWORD = "correct horse battery staple"
MERGED_CONTACT = "Contacto Fusión Quetzal"
SIGNIN_TOKEN = re.compile(r'name="csrf_token"[^>]*value="([^"]+)"')


@dataclass
class Tenant:
    """One organization as the matrix uses it: its keys, a JWT and a desk login per environment."""

    id: str
    name: str
    keys: dict[str, str]
    jwts: dict[str, str] = field(default_factory=dict)
    desk_emails: dict[str, str] = field(default_factory=dict)
    desk_passwords: dict[str, str] = field(default_factory=dict)


@dataclass
class World:
    a: Tenant
    b: Tenant
    params: dict[str, dict[str, str]]  # environment -> parameter kind -> A's value


def _table(name: str) -> Table:
    return db.metadata.tables[name]


def _first(table_name: str, order: str = "created_at", **where: Any) -> Any:
    """The first row of a table (oldest first, so the seeders' stable objects are chosen)."""
    table = _table(table_name)
    statement = select(table)
    for column, value in where.items():
        statement = statement.where(table.c[column] == value)
    if order in table.c:
        statement = statement.order_by(table.c[order])
    row = db.session.execute(statement.limit(1)).mappings().first()
    assert row is not None, f"the seeded world has no {table_name} row matching {where}"
    return row


def _text(value: Any) -> str:
    return str(uuid.UUID(hex=value.hex)) if isinstance(value, uuid.UUID) else str(value)


def _api(client: FlaskClient, method: str, path: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.open(path, method=method, json=body, headers={"X-API-Key": key})
    assert response.status_code < 300, (method, path, response.status_code, response.get_data(as_text=True))
    return response.get_json() or {}


def _complete_a(app: Flask, client: FlaskClient, env: str, key: str) -> None:
    """Objects the demo seeders leave out, created the way a partner would (the API), or as rows where
    only a background process creates them (deliveries, broadcasts)."""
    org = str(DEMO_ORGANIZATION_ID)
    crm = f"{PREFIX[env]}/v1/crm/organizations/{org}"
    msg = f"{PREFIX[env]}/v2/messages/organizations/{org}"
    partner = f"{PREFIX[env]}/v1/partner"
    _api(
        client,
        "POST",
        f"{msg}/canned-responses",
        key,
        {
            "short_code": "horario",
            "title": "Horario de Atención Ágata",
            "content": "Abrimos de 9 a 18 horas, Ágata.",
        },
    )
    _api(client, "POST", f"{crm}/ticket-types", key, {"name": "Garantía Quetzal"})
    _api(client, "POST", f"{crm}/projects", key, {"name": "Proyecto Quetzal"})
    _api(client, "POST", f"{crm}/contacts", key, {"name": MERGED_CONTACT})  # merged away by the matrix
    target = environment_app(app, env)
    with target.app_context():
        deal_id = _text(_first("crm_deals", organization_id=DEMO_ORGANIZATION_ID)["id"])
        conversation = _first("conversations", organization_id=DEMO_ORGANIZATION_ID)
        user_id = _first("telecom_users", organization_id=DEMO_ORGANIZATION_ID)["id"]
    _api(
        client,
        "POST",
        f"{crm}/deals/{deal_id}/conversations",
        key,
        {"conversation_id": _text(conversation["id"]), "channel": "whatsapp"},
    )
    _api(
        client,
        "POST",
        f"{partner}/users/{user_id}/addresses",
        key,
        {
            "line1": "Calle Quetzalcóatl 77",
            "neighborhood": "Centro",
            "city": "Puebla",
            "state": "PUE",
            "postal_code": "72000",
            "country": "MX",
            "type": "billing",
        },
    )
    endpoint = _api(
        client,
        "POST",
        f"{partner}/lifecycle-webhooks",
        key,
        {"url": "http://127.0.0.1:9/quetzal-hook", "enabled_events": ["*"]},
    )
    with target.app_context():
        now = utcnow()
        event = _first("telecom_events", organization_id=DEMO_ORGANIZATION_ID)
        agent = _first("members", organization_id=DEMO_ORGANIZATION_ID, ai=True)
        address = _first("organization_addresses", organization_id=DEMO_ORGANIZATION_ID)
        db.session.execute(
            _table("telecom_webhook_deliveries")
            .insert()
            .values(
                id=f"whd_quetzal{env}",
                organization_id=DEMO_ORGANIZATION_ID,
                endpoint_id=endpoint["id"],
                event_id=event["id"],
                event_type=event["type"],
                status="failed",
                attempts=1,
                automatic_attempts=1,
                history=[],
                created_at=now,
                updated_at=now,
            )
        )
        db.session.execute(
            _table("notification_deliveries")
            .insert()
            .values(
                id=uuid.uuid4(),
                organization_id=DEMO_ORGANIZATION_ID,
                agent_id=agent["id"],
                agent_name=agent["name"],
                notification_id="ntf_quetzal",
                trigger="handoff",
                channel="email",
                target="supervisora.quetzal@demo.test",
                status="failed",
                attempts=1,
                payload={},
                created_at=now,
                updated_at=now,
            )
        )
        db.session.execute(
            _table("broadcasts")
            .insert()
            .values(
                id=uuid.uuid4(),
                organization_id=DEMO_ORGANIZATION_ID,
                name="Promoción Quetzal",
                organization_address=address["address"],
                meta_template_id="tpl_quetzal",
                status="completed",
                rate_per_second=80,
                total=0,
                components=[],
                completed_at=now - timedelta(minutes=1),
                created_at=now,
                updated_at=now,
            )
        )
        db.session.commit()


def _voice_a(runner: FlaskCliRunner, client: FlaskClient, env: str, key: str) -> None:
    """A's voice number (the simulator) and one call through it (the demo seeds no voice data yet)."""
    org = str(DEMO_ORGANIZATION_ID)
    connected = runner.invoke(
        args=[
            "voice",
            "connect",
            "--org",
            org,
            "--number",
            "+525550009000",
            "--provider",
            "simulator",
            "--env",
            env,
        ]
    )
    assert connected.exit_code == 0, connected.output
    _api(client, "POST", f"{PREFIX[env]}/v2/voice/organizations/{org}/calls", key, {"to": "+525512345678"})
    with environment_app(runner.app, env).app_context():
        agent = _first("members", organization_id=DEMO_ORGANIZATION_ID, ai=True)
    campaign = {
        "name": "Renovaciones Quetzal",
        "agent_id": agent["id"],
        "from_number": "+525550009000",
        "recipients": [{"number": "+525512345678"}],
        "window": {"timezone": "America/Mexico_City", "days": ["mon"], "start": "09:00", "end": "18:00"},
        "max_concurrent": 1,
        "max_attempts": 1,
        "retry_minutes": 30,
    }
    _api(client, "POST", f"{PREFIX[env]}/v2/voice/organizations/{org}/campaigns", key, campaign)  # a draft


def _params(app: Flask, env: str) -> dict[str, str]:
    """A's value for every kind of path parameter, read back from the store."""
    a = DEMO_ORGANIZATION_ID
    with environment_app(app, env).app_context():
        first: Callable[..., Any] = lambda table, **where: _first(table, organization_id=a, **where)  # noqa: E731
        account = first("crm_accounts")
        linked = (
            db.session.execute(
                select(_table("crm_account_contacts")).where(
                    _table("crm_account_contacts").c.account_id == account["id"]
                )
            )
            .mappings()
            .first()
        )
        assert linked is not None
        identity = first("crm_contact_identities")
        deal = first("crm_deals")
        line_item = first("crm_deal_line_items", deal_id=deal["id"])
        rate = first("crm_exchange_rates")
        agent = first("members", ai=True)
        config = first("agent_configs", member_pk=agent["pk"])
        version = _first("agent_config_versions", config_id=config["id"])
        team = first("teams")
        team_member_pk = _first("team_members", team_id=team["id"])["member_pk"]
        team_member = first("members", pk=team_member_pk)
        human = first("members", ai=False)
        data_esim = first("telecom_data_esims")
        user = first("telecom_users")
        subscription = first("telecom_subscriptions")
        conversation = first("conversations")
        message = first("messages", conversation_id=conversation["id"])
        note = first("conversation_notes")
        contact_address = first("messaging_contact_addresses")
        stage = _first("crm_stages", "stage_order", pipeline_id=deal["pipeline_id"], status="won")
        values = {
            # Values for request bodies (matrix.BODIES), not path parameters.
            "body:other_crm_contact": first("crm_contacts", name=MERGED_CONTACT)["id"],
            "body:stage": stage["id"],
            "body:esim_offer": _first("telecom_esim_offers", "id")["id"],
            "body:topup": _first("telecom_topups", "id")["id"],
            "body:plan": _first("telecom_plans", "id", status="available")["id"],
            # Path parameters, by routes.param_kind
            "crm:*/accounts/<id>": account["id"],
            "crm:*/contacts/<contact_id>": linked["contact_id"],
            "crm:*/contacts/<id>": identity["contact_id"],
            "crm:*/identities/<identity_id>": identity["id"],
            "crm:currency/pipeline/<pipelineId>": deal["pipeline_id"],
            "crm:currency/rates/<from_currency>": rate["from_currency"],
            "crm:rates/<from_currency>/<to_currency>": rate["to_currency"],
            "crm:*/deals/<id>": deal["id"],
            "crm:*/conversations/<linkId>": first("crm_deal_conversations", deal_id=deal["id"])["id"],
            "crm:*/line-items/<itemId>": line_item["id"],
            "crm:*/pipelines/<id>": deal["pipeline_id"],
            "crm:pipelines/stages/<id>": first("crm_stages", pipeline_id=deal["pipeline_id"])["id"],
            "crm:*/products/<id>": first("crm_products")["id"],
            "crm:*/projects/<id>": first("crm_projects")["id"],
            "crm:*/tasks/<id>": first("crm_tasks")["id"],
            "crm:*/ticket-types/<id>": first("crm_ticket_types")["id"],
            "crm:*/tickets/<id>": first("crm_tickets")["id"],
            "crm:tickets/by-ref/<reference>": first("crm_tickets")["reference"],
            "members:*/knowledge/<document_id>": first("knowledge_documents")["id"],
            "members:*/members/<agent_id>": agent["id"],
            "members:agent-config/versions/<version>": version["version"],
            "members:notifications/deliveries/<delivery_id>": first("notification_deliveries")["id"],
            "members:*/members/<member_id>": human["id"],
            "members:members/ai-agents/<agent_id>": agent["id"],
            "members:members/unavailable-reasons/<reason_id>": first("unavailability_reasons")["id"],
            "members:*/teams/<team_id>": team["id"],
            "members:*/members/<member_id>@team": team_member["id"],
            "partner:balance/transactions/<transaction_id>": first("telecom_ledger_entries")["id"],
            "partner:partner/data_esims/<data_esim_id>": data_esim["id"],
            "partner:partner/events/<event_id>": first("telecom_events")["id"],
            "partner:partner/lifecycle-webhooks/<endpoint_id>": first("telecom_webhook_endpoints")["id"],
            "partner:lifecycle-webhooks/deliveries/<delivery_id>": first("telecom_webhook_deliveries")["id"],
            "partner:partner/plans/<plan_id>": subscription["plan_id"],
            "partner:partner/portings/<porting_id>": first("telecom_portings")["id"],
            "partner:partner/subscriptions/<subscription_id>": subscription["id"],
            "partner:partner/users/<user_id>": user["id"],
            "partner:*/addresses/<address_id>": first("telecom_addresses", user_id=user["id"])["id"],
            "partner:*/kyc_verifications/<kyc_id>": first("telecom_kyc_verifications", user_id=user["id"])[
                "id"
            ],
            "messages:*/addresses/<address>": first("organization_addresses")["address"],
            "messages:contacts/addresses/<address>": contact_address["address"],
            "messages:*/broadcasts/<broadcast_id>": first("broadcasts")["id"],
            "messages:*/canned-responses/<canned_response_id>": first("canned_responses")["id"],
            "messages:*/contacts/<contact_id>": contact_address["contact_id"],
            "messages:*/conversations/<conversation_id>": note["conversation_id"],
            "messages:*/notes/<note_id>": note["id"],
            "messages:*/flows/<flow_id>": first("flows")["id"],
            "messages:*/labels/<label_id>": first("labels")["id"],
            "messages:*/members/<member_id>": human["id"],
            "messages:*/messages/<message_id>": message["id"],
            "voice:*/numbers/<number_id>": first("voice_numbers")["id"],
            "voice:*/calls/<call_id>": first("voice_calls")["id"],
            "voice:*/campaigns/<campaign_id>": first("voice_campaigns")["id"],
            # Desk pages
            "pages:agents/<agent_id>": agent["id"],
            "pages:*/knowledge/<document_id>": first("knowledge_documents")["id"],
            "pages:*/versions/<version>": version["version"],
            "pages:crm/conversation/<conversation_id>": conversation["id"],
            "pages:inbox/c/<conversation_id>": conversation["id"],
            "pages:*/messages/<message_id>": message["id"],
            "pages:inbox/row/<conversation_id>": conversation["id"],
            "pages:accounts/<account_id>": account["id"],
            "pages:contacts/<contact_id>": linked["contact_id"],
            "pages:deals/<deal_id>": deal["id"],
            "pages:*/edit/<name>": "name",
            "pages:*/items/<item_id>": line_item["id"],
            "pages:deals/pipelines/<pipeline_id>": deal["pipeline_id"],
            "pages:deals/stages/<stage_id>": first("crm_stages", pipeline_id=deal["pipeline_id"])["id"],
            "pages:tasks/<task_id>": first("crm_tasks")["id"],
            "pages:*/tasks/<task_id>": first("crm_tasks")["id"],
            "pages:tickets/<ticket_id>": first("crm_tickets")["id"],
            "pages:tickets/column/<state>": "new",
            "pages:settings/people/<user_id>": first("users")["id"],
            "pages:settings/teams/<team_id>": team["id"],
            "pages:*/members/<member_id>": team_member["id"],
            "pages:settings/reasons/<reason_id>": first("unavailability_reasons")["id"],
            "pages:settings/channels/<address>": first("organization_addresses")["address"],
            "pages:broadcasts/<broadcast_id>": first("broadcasts")["id"],
            "pages:settings/keys/<key_id>": first("api_keys")["id"],
            "pages:settings/labels/<label_id>": first("labels")["id"],
            "pages:settings/canned/<canned_id>": first("canned_responses")["id"],
        }
    return {kind: _text(value) for kind, value in values.items()}


def _jwt(secret: str, tenant_id: str, subject: str, env: str) -> str:
    return issue_token(
        secret, organization_id=uuid.UUID(tenant_id), subject=subject, environment=env, ttl_seconds=3600
    )


def _desk_user(runner: FlaskCliRunner, org_id: str, env: str, email: str) -> None:
    result = runner.invoke(
        args=[
            *("users", "create", "--org", org_id, "--email", email, "--password", PASSWORD),
            *("--name", "Beatriz Outsider", "--role", "supervisor", "--env", env, "--json"),
        ]
    )
    assert result.exit_code == 0, result.output


def _seed_b(client: FlaskClient, b: Org) -> None:
    for env in ENVIRONMENTS:
        key = b.headers(env)["X-API-Key"]
        crm = f"{PREFIX[env]}/v1/crm/organizations/{b.id}"
        msg = f"{PREFIX[env]}/v2/messages/organizations/{b.id}"
        _api(client, "POST", f"{crm}/contacts", key, {"name": "Zacarías Beta"})
        # A deal persists B's default pipeline (reads show a transient one with the same stage names).
        organization = uuid.UUID(b.id)
        pipeline, stage = default_pipeline_id(organization), default_stage_id(organization, 0)
        _api(
            client,
            "POST",
            f"{crm}/deals",
            key,
            {"name": "Trato Beta", "pipeline_id": str(pipeline), "stage_id": str(stage)},
        )
        _api(client, "POST", f"{msg}/labels", key, {"name": "beta-etiqueta"})
        _api(
            client,
            "POST",
            f"{PREFIX[env]}/v1/partner/users",
            key,
            {"email": "zacarias.beta@beta-outsiders.mx", "full_name": "Zacarías Beta"},
        )


def build_world(app: Flask, runner: FlaskCliRunner, make_org: Callable[..., Org]) -> World:
    for env in ENVIRONMENTS:
        # Read at run time, restored after the test by the app fixture: lifecycle webhook receivers on
        # loopback (the seeded endpoint points at a closed local port, so nothing leaves the machine),
        # and the demo's simulated customers stay quiet.
        environment_app(app, env).config.update(
            TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK=True, DEMO_LIVE_MESSAGES=False
        )
    seeded = runner.invoke(args=["demo", "seed", "--quiet"])
    assert seeded.exit_code == 0, seeded.output
    client = app.test_client()
    keys: dict[str, str] = {}
    passwords: dict[str, str] = {}
    for env in ENVIRONMENTS:
        with environment_app(app, env).app_context():
            keys[env] = KEY_PREFIXES[env] + derived_secret(f"demo-api-key-{env}")
        passwords[env] = _demo_password(app, env)
    a = Tenant(str(DEMO_ORGANIZATION_ID), DEMO_ORGANIZATION_NAME, keys)
    a.desk_emails = {env: "supervisor@demo.test" for env in ENVIRONMENTS}
    a.desk_passwords = passwords
    for env in ENVIRONMENTS:
        _complete_a(app, client, env, keys[env])
        _voice_a(runner, client, env, keys[env])
    other = make_org("Beta Outsiders")
    _seed_b(client, other)
    b = Tenant(other.id, other.name, {"live": other.live_key, "sandbox": other.sandbox_key})
    for env in ENVIRONMENTS:
        b.desk_emails[env] = f"beatriz.{env}@beta-outsiders.mx"
        b.desk_passwords[env] = PASSWORD
        _desk_user(runner, other.id, env, b.desk_emails[env])
        secret = environment_app(app, env).config["SECRET_KEY"]  # what core.auth verifies JWTs with
        a.jwts[env] = _jwt(secret, a.id, "jwt-subject-a", env)
        b.jwts[env] = _jwt(secret, b.id, "jwt-subject-b", env)
    return World(a, b, {env: _params(app, env) for env in ENVIRONMENTS})


def _demo_password(app: Flask, env: str) -> str:
    from blueprints.members import demo

    with environment_app(app, env).app_context():  # derived from the environment's SECRET_KEY
        return demo._password("supervisor@demo.test")


def sign_in(app: Flask, env: str, email: str, password: str) -> FlaskClient:
    """A browser-like client signed in to one environment's desk."""
    client = app.test_client()
    token = SIGNIN_TOKEN.search(client.get(f"{PREFIX[env]}/signin").get_data(as_text=True))
    assert token is not None
    response = client.post(
        f"{PREFIX[env]}/signin", data={"email": email, "password": password, "csrf_token": token.group(1)}
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    return client


def csrf_token(client: FlaskClient, env: str) -> str:
    """The session's CSRF token, as a page would embed it."""
    page = client.get(f"{PREFIX[env]}/signin").get_data(as_text=True)
    found = SIGNIN_TOKEN.search(page) or re.search(r'name="csrf-token" content="([^"]+)"', page)
    if found is None:  # a signed-in user is redirected away from the sign-in page: read it from the desk
        desk = client.get(f"{PREFIX[env]}/desk").get_data(as_text=True)
        found = re.search(r'csrf[-_]token"?\s+content="([^"]+)"', desk) or SIGNIN_TOKEN.search(desk)
    assert found is not None
    return found.group(1)


__all__ = ["PREFIX", "Tenant", "World", "build_world", "csrf_token", "sign_in"]
