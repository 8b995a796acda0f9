"""Every URL rule of an environment, sorted into what the isolation matrix does with it.

Nothing is listed by hand except the few public routes (``PUBLIC``): every other rule is either an API
route (under an area's prefix) or a desk page (of a page blueprint), and a rule that is neither fails the
matrix, as does a path parameter the matrix has no value for (``param_kind`` names it). So a new route,
page or parameter cannot be added without the matrix covering it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flask import Flask
from werkzeug.routing import Rule

API_AREAS = {
    "/v1/crm/": "crm",
    "/v2/messages/": "messages",
    "/v1/members/": "members",
    "/v1/partner/": "partner",
    "/v2/voice/": "voice",
}
API_PREFIXES = (*API_AREAS, "/v1/organizations")
# Only CRM accepts a JWT as the caller's identity (spec: "CRM ... API key or JWT"; core.auth).
JWT_AREAS = {"crm"}

# Endpoints anyone may call, each with the reason; keep this list explicit and small.
PUBLIC: dict[str, str] = {
    "meta_webhooks.verify_subscription": "Meta's handshake: answers only the configured verify token",
    "meta_webhooks.receive": "Meta deliveries: refused unless X-Hub-Signature-256 verifies (META_APP_SECRET)",
    "voice_webhooks.status": "Twilio's status callbacks: 403 unless X-Twilio-Signature verifies",
    "voice_incoming.incoming_call": "Twilio's inbound calls: 403 unless X-Twilio-Signature verifies",
    "voice_incoming.relay_ended": "Twilio's <Connect action>: 403 unless X-Twilio-Signature verifies",
    "voice_relay.relay_socket": "the ConversationRelay WebSocket: 403 without the call's signed token",
    "openapi_document": "the published API description (/openapi.json)",
    "openapi.openapi": "API documentation (Swagger UI)",
    "openapi.doc_url": "API documentation",
    "openapi.static": "API documentation assets",
    "swagger.swagger": "API documentation",
    "swagger.static": "API documentation assets",
    "swagger.oauth2-redirect": "API documentation",
    "static": "static files (CSS, JavaScript, vendor libraries)",
    "desk.signin": "the sign-in page",
    "desk.choose_language": "the language switch (sets a cookie, shows no data)",
    "healthz": "liveness check (core/health.py): answers without touching any store",
    "readyz": "readiness check (core/health.py): says whether the stores answer, no data",
}
# Blueprints whose rules are desk pages (Flask-Login session + CSRF, blueprints/desk/security.py).
PAGE_BLUEPRINTS = {
    "desk",
    "inbox_pages",
    "crm_pages",
    "ai_pages",
    "telecom_pages",
    "audit_pages",
    "members_pages",
    "channels_pages",
    "broadcasts_pages",
    "organizations_pages",
}
PAGE_ENDPOINTS = {"index"}  # the front door: redirects to the desk

# Parameters whose value is shared by every organization (a catalogue), not owned by one.
SHARED_PARAMS = {"partner:partner/plans/<plan_id>"}
_PARAM = re.compile(r"<(?:[a-z]+:)?([A-Za-z_]+)>")


@dataclass(frozen=True)
class Route:
    rule: str
    endpoint: str
    method: str
    kind: str  # "api", "page" or "public"
    area: str  # crm, messages, members, partner, organizations, pages, public
    params: tuple[tuple[str, str], ...]  # (parameter name, kind) in path order, organization_id excluded

    @property
    def objects(self) -> tuple[tuple[str, str], ...]:
        """The parameters that name one organization's record (a ticket board's column state, a deal's
        field name are the same words for every organization)."""
        return tuple((name, kind) for name, kind in self.params if kind not in NOT_RECORDS)

    @property
    def has_organization(self) -> bool:
        return "<organization_id>" in self.rule

    @property
    def label(self) -> str:
        return f"{self.method} {self.rule}"

    def path(self, prefix: str, organization_id: str, values: dict[str, str]) -> str:
        """The rule with ``organization_id`` and each parameter replaced by its value."""
        path = self.rule.replace("<organization_id>", organization_id)
        for name, kind in self.params:
            path = re.sub(rf"<(?:[a-z]+:)?{name}>", values[kind], path, count=1)
        return prefix + path


# Path parameter kinds that are not records of an organization.
NOT_RECORDS = {"pages:tickets/column/<state>", "pages:*/edit/<name>"}


def area_of(rule: str) -> str:
    for prefix, area in API_AREAS.items():
        if rule.startswith(prefix):
            return area
    return "organizations" if rule.startswith("/v1/organizations") else "pages"


def _normalise(piece: str) -> str:
    match = _PARAM.fullmatch(piece)
    return f"<{match.group(1)}>" if match else piece


def param_kind(rule: str, name: str) -> str:
    """Where a parameter sits: the area and the two path pieces before it (``crm:*/deals/<id>``), so that
    the many ``<id>`` of the CRM and the two ``<address>`` of messaging are told apart."""
    pieces = [_normalise(p) for p in rule.split("/") if p]
    index = pieces.index(f"<{name}>")
    before = pieces[max(0, index - 2) : index]
    # Parameters two places back are just "some object" (*); one directly before keeps its name.
    if len(before) == 2 and before[0].startswith("<"):
        before[0] = "*"
    if before and before[-1] == "<organization_id>":
        before[-1] = "*"
    kind = f"{area_of(rule)}:{'/'.join(before)}/<{name}>"
    if kind == "members:*/members/<member_id>" and "/teams/" in rule:
        kind += "@team"
    return kind


def classify(app: Flask) -> list[Route]:
    """Every (rule, method) of one environment's app."""
    routes = []
    for rule in app.url_map.iter_rules():
        routes += _routes_of(rule)
    return sorted(routes, key=lambda r: (r.rule, r.method))


def _routes_of(rule: Rule) -> list[Route]:
    methods = sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})
    blueprint = rule.endpoint.rpartition(".")[0]
    if rule.endpoint in PUBLIC:
        kind = "public"
    elif rule.rule.startswith(API_PREFIXES):
        kind = "api"
    elif blueprint in PAGE_BLUEPRINTS or rule.endpoint in PAGE_ENDPOINTS:
        kind = "page"
    else:
        kind = "unclassified"  # fails the matrix: a new kind of route needs a decision
    names = [n for n in (rule.arguments or ()) if n != "organization_id"]
    ordered = sorted(names, key=lambda n: rule.rule.index(f"{n}>"))
    params = tuple((n, param_kind(rule.rule, n)) for n in ordered)
    area = area_of(rule.rule) if kind != "public" else "public"
    return [Route(rule.rule, rule.endpoint, method, kind, area, params) for method in methods]
