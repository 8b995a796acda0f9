"""Browser security of the desk pages, generated from the URL map so that a new page is covered at once.

- Every page blueprint is guarded by ``protect_pages`` (sign-in and CSRF).
- CSRF: every POST/PUT/PATCH/DELETE route of the page blueprints, in both environments, is refused
  (400, "CSRF token") without the token or with a wrong one while signed in, and passes the check with it.
- Headers: the desk policy on pages, fragments and static files, the restrictive one on the JSON API,
  frames refused, the referrer kept to this site, HSTS only behind TLS; cookies HttpOnly, SameSite and,
  with ``DESK_SECURE_COOKIES``, Secure.
- Templates carry no inline script, event handler, ``style=`` attribute or ``javascript:`` URL.
- In Chromium (marker ``chromium``): every GET page of the page blueprints, those with path parameters
  filled with the demo's ids, in both languages and both environments, raises no Content-Security-Policy
  violation, console error or script error.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, Flask
from flask.testing import FlaskClient, FlaskCliRunner
from flask_openapi3 import APIBlueprint
from sqlalchemy import func, select
from werkzeug.routing import Rule

from blueprints.ai.models import KnowledgeDocument
from blueprints.crm.models import CrmAccount, CrmContact, CrmTask, Deal, Ticket
from blueprints.desk.security import PROTECTED_BLUEPRINTS
from blueprints.inbox.models import Label
from blueprints.members.models import Member
from blueprints.messaging.models import CannedResponse, Conversation, Message
from blueprints.organizations.models import ApiKey
from core.browser_headers import secure_cookies_enabled
from core.environments import ENVIRONMENTS, LIVE, SANDBOX, environment_app, in_environment
from tests.conftest import Org
from tests.support.desk_users import create_desk_user, sign_in

ROOT = Path(__file__).resolve().parents[2]
PREFIX = {LIVE: "", SANDBOX: "/sandbox"}
UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
# Plain (non-API) blueprints that are not desk pages, and why they need no session or CSRF.
NOT_PAGES = {
    "swagger": "the API reference UI: static, no session",
    "openapi": "the API reference document",
    "meta_webhooks": "Meta's deliveries: signed with X-Hub-Signature-256, never sent by a browser",
    "voice_webhooks": "Twilio's callbacks: signed with X-Twilio-Signature, never sent by a browser",
    "voice_incoming": "Twilio's inbound-call TwiML webhooks: signed with X-Twilio-Signature",
    "voice_relay": "Twilio's ConversationRelay WebSocket: a signed token of the call, no session",
}
SIGNIN_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
PAGE_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
PASSWORD = "correct horse battery"
DEMO_ORG = "5f0c6f7e-2d1b-4a8e-9c3d-0a1b2c3d4e5f"


# ---- the pages, from the URL map ----------------------------------------------------------------------


def page_blueprints(app: Flask) -> set[str]:
    """Blueprints that serve browser pages: every plain Flask blueprint except the few in NOT_PAGES
    (the JSON API's blueprints are flask-openapi3 ``APIBlueprint``s and authenticate with keys)."""
    return {
        name
        for name, blueprint in app.blueprints.items()
        if isinstance(blueprint, Blueprint)
        and not isinstance(blueprint, APIBlueprint)
        and name not in NOT_PAGES
    }


@dataclass(frozen=True)
class PageRoute:
    rule: str
    endpoint: str
    method: str
    arguments: tuple[str, ...]

    def url(self, environment: str, values: dict[str, str]) -> str:
        path = self.rule
        for argument in self.arguments:
            path = re.sub(rf"<(?:[a-z]+:)?{argument}>", values[argument], path)
        return PREFIX[environment] + path


def page_routes(app: Flask, methods: tuple[str, ...]) -> list[PageRoute]:
    names = page_blueprints(app)
    routes = []
    rule: Rule
    for rule in app.url_map.iter_rules():
        if rule.endpoint.split(".")[0] not in names and rule.endpoint != "index":
            continue
        for method in sorted((rule.methods or set()) & set(methods)):
            routes.append(PageRoute(rule.rule, rule.endpoint, method, tuple(sorted(rule.arguments))))
    # Signing out ends the session the other requests need: last.
    return sorted(routes, key=lambda r: (r.endpoint == "desk.signout", r.rule, r.method))


# ---- helpers ----------------------------------------------------------------------------------------


def _desk_user(runner: FlaskCliRunner, org: Org, environment: str, role: str = "supervisor") -> str:
    email = f"{role}.{environment}.{org.id[:6]}@example.test"
    create_desk_user(runner, org.id, email, password=PASSWORD, name="Sam", role=role, environment=environment)
    return email


def sign_in_client(client: FlaskClient, environment: str, email: str, password: str = PASSWORD) -> str:
    """Signs the test client in; returns the session's CSRF token."""
    prefix = PREFIX[environment]
    sign_in(client, email, password, prefix=prefix)
    page = client.get(f"{prefix}/desk").get_data(as_text=True)
    found = PAGE_TOKEN.search(page)
    assert found is not None, page[:300]
    return found.group(1)


def directives(policy: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


# ---- every page blueprint is protected, and CSRF on every unsafe page route -----------------------------


def test_every_page_blueprint_needs_a_session_and_the_csrf_token(app: Flask) -> None:
    for environment in ENVIRONMENTS:
        names = page_blueprints(environment_app(app, environment))
        assert names, "no page blueprint found"
        unguarded = names - PROTECTED_BLUEPRINTS
        assert unguarded == set(), f"page blueprints without protect_pages: {sorted(unguarded)}"


def test_every_state_changing_page_request_needs_the_csrf_token(
    app: Flask, runner: FlaskCliRunner, org: Org
) -> None:
    checked = 0
    for environment in ENVIRONMENTS:
        routes = page_routes(environment_app(app, environment), UNSAFE)
        assert len(routes) >= 10, routes  # the inbox alone has more: the map was read
        email = _desk_user(runner, org, environment)
        client = app.test_client()
        token = sign_in_client(client, environment, email)
        values: dict[str, str] = {}
        for route in routes:
            for argument in route.arguments:
                # a version is a number (<int:version>): any other value would not even match the route
                values.setdefault(argument, "1" if argument == "version" else str(uuid.uuid4()))
            url = route.url(environment, values)
            label = f"{route.method} {url} ({route.endpoint})"
            missing = client.open(url, method=route.method, data={"text": "x"})
            assert missing.status_code == 400, label
            assert "CSRF token is missing" in missing.get_data(as_text=True), label
            wrong = client.open(url, method=route.method, headers={"X-CSRFToken": "forged." + token[7:]})
            assert wrong.status_code == 400, label
            assert "CSRF token" in wrong.get_data(as_text=True), label
            accepted = client.open(url, method=route.method, headers={"X-CSRFToken": token})
            assert "CSRF token" not in accepted.get_data(as_text=True), label
            checked += 1
    print(f"CSRF: {checked} state-changing page routes x 3 cases (no token, wrong token, token)")


def test_a_token_of_another_session_is_refused(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    mine = app.test_client()
    sign_in_client(mine, LIVE, _desk_user(runner, org, LIVE))
    theirs = app.test_client()
    their_token = sign_in_client(theirs, LIVE, _desk_user(runner, org, LIVE, role="agent"))
    response = mine.post("/desk/presence", data={"status": "busy"}, headers={"X-CSRFToken": their_token})
    assert response.status_code == 400
    assert "CSRF" in response.get_data(as_text=True)


# ---- headers ---------------------------------------------------------------------------------------


def _assert_desk_policy(headers: Any, label: str) -> None:
    policy = directives(headers["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"], label
    assert policy["style-src"] == ["'self'"], label
    assert policy["object-src"] == ["'none'"], label
    assert policy["frame-ancestors"] == ["'none'"], label
    assert policy["base-uri"] == ["'self'"], label
    assert policy["form-action"] == ["'self'"], label
    assert policy["img-src"][:2] == ["'self'", "data:"], label
    assert policy["connect-src"][0] == "'self'", label
    text = headers["Content-Security-Policy"]
    assert "unsafe-inline" not in text and "unsafe-eval" not in text, label


def _assert_common(headers: Any, label: str) -> None:
    assert headers["X-Frame-Options"] == "DENY", label
    assert headers["Referrer-Policy"] == "same-origin", label
    assert headers["X-Content-Type-Options"] == "nosniff", label
    assert "camera=()" in headers["Permissions-Policy"] and "microphone=()" in headers["Permissions-Policy"]


def test_pages_fragments_and_static_files_get_the_desk_policy(
    app: Flask, runner: FlaskCliRunner, org: Org
) -> None:
    client = app.test_client()
    for url in ("/signin", "/sandbox/signin", "/static/desk.js", "/static/vendor/htmx.min.js"):
        response = client.get(url)
        assert response.status_code == 200, url
        _assert_desk_policy(response.headers, url)
        _assert_common(response.headers, url)
        response.close()
    sign_in_client(client, LIVE, _desk_user(runner, org, LIVE))
    for url in ("/desk", "/inbox/counts", "/telecom", "/agents", f"/inbox/c/{uuid.uuid4()}"):
        response = client.get(url, headers={"HX-Request": "true"} if "counts" in url else {})
        _assert_desk_policy(response.headers, url)
        _assert_common(response.headers, url)
    # The socket's own origin is named for engines where 'self' does not cover ws:/wss:.
    assert "ws://localhost" in client.get("/desk").headers["Content-Security-Policy"]


def test_api_answers_load_and_run_nothing(client: FlaskClient, org: Org) -> None:
    for url, headers in (
        ("/v1/organizations", org.headers()),
        ("/v1/organizations", {}),  # a 401 error body
        ("/sandbox/v1/organizations", org.headers("sandbox")),
        (f"/v1/organizations/{uuid.uuid4()}", org.headers()),  # a 404/403 error body
        ("/openapi.json", {}),
    ):
        response = client.get(url, headers=headers)
        policy = directives(response.headers["Content-Security-Policy"])
        assert policy["default-src"] == ["'none'"], url
        assert policy["frame-ancestors"] == ["'none'"], url
        _assert_common(response.headers, url)


def test_the_api_reference_page_runs_only_its_own_inline_script(client: FlaskClient) -> None:
    response = client.get("/docs/swagger")
    assert response.status_code == 200
    policy = directives(response.headers["Content-Security-Policy"])
    hashes = [source for source in policy["script-src"] if source.startswith("'sha256-")]
    assert len(hashes) == 1 and "'unsafe-inline'" not in policy["script-src"]
    assert policy["frame-ancestors"] == ["'none'"]


def test_hsts_only_behind_tls(client: FlaskClient) -> None:
    assert "Strict-Transport-Security" not in client.get("/signin").headers
    over_tls = client.get("/signin", base_url="https://desk.example.test")
    assert over_tls.headers["Strict-Transport-Security"].startswith("max-age=31536000")


def test_a_hostile_host_header_is_not_copied_into_the_policy(client: FlaskClient) -> None:
    response = client.get("/signin", headers={"Host": "evil.test;script-src *"})
    assert "evil" not in response.headers.get("Content-Security-Policy", "")


# ---- cookies --------------------------------------------------------------------------------------


@pytest.fixture
def app_config(app_config: dict[str, Any], request: pytest.FixtureRequest) -> dict[str, Any]:
    """Module override: tests parametrise it (indirectly) to build the app with more settings."""
    return {**app_config, **getattr(request, "param", {})}


def _set_cookies(response: Any) -> dict[str, str]:
    cookies = {}
    for header in response.headers.getlist("Set-Cookie"):
        cookies[header.split("=", 1)[0]] = header
    return cookies


def _signin_cookies(app: Flask, email: str, base_url: str) -> dict[str, str]:
    client = app.test_client()
    page = client.get("/signin", base_url=base_url).get_data(as_text=True)
    token = SIGNIN_TOKEN.search(page)
    assert token is not None
    response = client.post(
        "/signin",
        data={"email": email, "password": PASSWORD, "remember": "on", "csrf_token": token.group(1)},
        base_url=base_url,
        # Over HTTPS Flask-WTF also wants a same-origin Referer (the referrer policy keeps sending it).
        headers={"Referer": f"{base_url}/signin"},
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    return _set_cookies(response)


@pytest.mark.parametrize("app_config", [{"DESK_SECURE_COOKIES": True}], indirect=True)
def test_cookies_are_secure_behind_tls(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    cookies = _signin_cookies(app, _desk_user(runner, org, LIVE), "https://desk.example.test")
    for name in ("agentdesk_live", "agentdesk_live_remember"):
        flags = [part.strip().lower() for part in cookies[name].split(";")]
        assert "secure" in flags, cookies[name]
        assert "httponly" in flags, cookies[name]
        assert "samesite=lax" in flags, cookies[name]


def test_cookies_are_httponly_and_samesite_without_tls(app: Flask, runner: FlaskCliRunner, org: Org) -> None:
    cookies = _signin_cookies(app, _desk_user(runner, org, LIVE), "http://localhost")
    for name in ("agentdesk_live", "agentdesk_live_remember"):
        flags = [part.strip().lower() for part in cookies[name].split(";")]
        assert "httponly" in flags and "samesite=lax" in flags, cookies[name]
        assert "secure" not in flags, cookies[name]  # a plain-http development desk still signs in


def test_secure_cookies_follow_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    bare = Flask(__name__)
    monkeypatch.setenv("DESK_SECURE_COOKIES", "1")
    assert secure_cookies_enabled(bare)
    monkeypatch.setenv("DESK_SECURE_COOKIES", "0")
    assert not secure_cookies_enabled(bare)
    bare.config["DESK_SECURE_COOKIES"] = True  # configuration wins
    assert secure_cookies_enabled(bare)


# ---- templates ------------------------------------------------------------------------------------

INLINE = {
    "inline <script>": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE),
    "event handler attribute": re.compile(r"<[a-z][^<>]*\son[a-z]+\s*=", re.IGNORECASE),
    "hx-on attribute": re.compile(r"<[a-z][^<>]*\shx-on", re.IGNORECASE),
    "style attribute": re.compile(r"<[a-z][^<>]*\sstyle\s*=", re.IGNORECASE),
    "<style> element": re.compile(r"<style[\s>]", re.IGNORECASE),
    "javascript: URL": re.compile(r"javascript:", re.IGNORECASE),
}


JINJA_TAGS = re.compile(r"\{#.*?#\}|\{%.*?%\}", re.DOTALL)


def test_templates_have_no_inline_script_handler_or_style() -> None:
    found = []
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert len(templates) > 20
    for path in templates:
        # Jinja comments and statements are not markup (``{% set online = ... %}``): blanked, lines kept.
        text = JINJA_TAGS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), path.read_text(encoding="utf-8"))
        for what, pattern in INLINE.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert found == []


# ---- in Chromium: every page, both languages, both environments, no violation -------------------------


@dataclass(frozen=True)
class DemoIds:
    values: dict[str, dict[str, str]]  # environment -> path argument -> a demo id
    email: str
    password: str


def _demo_ids(app: Flask, runner: FlaskCliRunner) -> DemoIds:
    seeded = runner.invoke(args=["demo", "seed"])
    assert seeded.exit_code == 0, seeded.output
    login = next(line for line in seeded.output.splitlines() if "Desk login" in line and "supervisor" in line)
    email, password = login.split(": ", 1)[1].split(" (")[0].split(" / ")
    values = {}
    for environment in ENVIRONMENTS:
        with in_environment(app, environment):
            conversation_id, message_id = db_pick_conversation()
            agent = next(iter(_ai_members()))
            crm = _crm_ids()
            document = _knowledge_document(agent)
            settings = _settings_ids()
        values[environment] = {
            "conversation_id": conversation_id,
            "message_id": message_id,
            "agent_id": agent,
            "document_id": document,
            **crm,
            "state": "new",  # a ticket board column
            **settings,
            # the demo sends no broadcast: an id that names none (the designed 404, under the policy too)
            "broadcast_id": str(uuid.uuid4()),
        }
    return DemoIds(values, email, password)


def db_pick_conversation() -> tuple[str, str]:
    """The demo conversation with the most messages, and its newest message."""
    from core.db import db

    row = db.session.execute(
        select(Message.conversation_id, func.count())
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Conversation.organization_id == uuid.UUID(DEMO_ORG))
        .group_by(Message.conversation_id)
        .order_by(func.count().desc())
        .limit(1)
    ).first()
    assert row is not None
    message = db.session.scalar(
        select(Message.id)
        .where(Message.conversation_id == row[0])
        .order_by(Message.created_at.desc())
        .limit(1)
    )
    return str(row[0]), str(message)


def _crm_ids() -> dict[str, str]:
    """One demo record of each CRM kind a page URL names (deal, ticket, task, contact, account)."""
    from core.db import db

    organization = uuid.UUID(DEMO_ORG)
    ids = {}
    for argument, model in (
        ("deal_id", Deal),
        ("ticket_id", Ticket),
        ("task_id", CrmTask),
        ("contact_id", CrmContact),
        ("account_id", CrmAccount),
    ):
        found = db.session.scalar(select(model.id).where(model.organization_id == organization).limit(1))
        assert found is not None, f"the demo has no {model.__name__}"
        ids[argument] = str(found)
    return ids


def _settings_ids() -> dict[str, str]:
    """One demo record of each kind the settings pages name (an API key, a label, a canned reply)."""
    from core.db import db

    organization = uuid.UUID(DEMO_ORG)
    ids = {}
    for argument, model in (("key_id", ApiKey), ("label_id", Label), ("canned_id", CannedResponse)):
        found = db.session.scalar(select(model.id).where(model.organization_id == organization).limit(1))
        assert found is not None, f"the demo has no {model.__name__}"
        ids[argument] = str(found)
    return ids


def _knowledge_document(agent_id: str) -> str:
    """A demo knowledge document the agent's studio lists (its own or shared by every agent)."""
    from core.db import db

    document = db.session.scalar(
        select(KnowledgeDocument.id)
        .where(
            KnowledgeDocument.organization_id == uuid.UUID(DEMO_ORG),
            (KnowledgeDocument.agent_id == agent_id) | KnowledgeDocument.agent_id.is_(None),
        )
        .limit(1)
    )
    assert document is not None, "the demo has no knowledge document for its AI agent"
    return str(document)


def _ai_members() -> list[str]:
    from core.db import db

    return list(
        db.session.scalars(
            select(Member.id).where(Member.organization_id == uuid.UUID(DEMO_ORG), Member.ai.is_(True))
        )
    )


@pytest.fixture
def watched(new_context: Callable[..., Any]) -> Iterator[Callable[[str], tuple[Any, list[str]]]]:
    """A browser page that records every CSP violation, console error and uncaught script error."""

    def _open(locale: str) -> tuple[Any, list[str]]:
        problems: list[str] = []
        context = new_context(locale=locale)
        context.expose_function("__reportViolation", lambda text: problems.append(f"CSP: {text}"))
        context.add_init_script(
            """document.addEventListener('securitypolicyviolation', (e) => window.__reportViolation(
                 e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':'
                 + e.lineNumber + ' on ' + location.pathname));"""
        )
        page = context.new_page()
        # A fragment opened on its own (the studio's Knowledge tab answers 200) has no <link rel="icon">,
        # which base.html declares for every page, so Chromium asks for /favicon.ico: not a page's error.
        page.route("**/favicon.ico", lambda route: route.fulfill(status=204))
        page.on(
            "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
        return page, problems

    yield _open


def test_every_desk_page_runs_under_the_policy_without_violations(
    app: Flask, runner: FlaskCliRunner, watched: Callable[[str], tuple[Any, list[str]]]
) -> None:
    demo = _demo_ids(app, runner)
    visited = 0
    missing_policy = []
    for environment in ENVIRONMENTS:
        routes = page_routes(environment_app(app, environment), ("GET",))
        unknown = {a for r in routes for a in r.arguments} - set(demo.values[environment])
        assert unknown == set(), f"give these path parameters a demo id: {sorted(unknown)}"
        for locale, language in (("es-MX", "es"), ("en-US", "en")):
            page, problems = watched(locale)
            prefix = PREFIX[environment]
            page.goto(f"{prefix}/signin")
            page.locator("#email").fill(demo.email)
            page.locator("#password").fill(demo.password)
            with page.expect_navigation():
                page.locator("form button[type=submit]").click()
            # The language menu submits itself on change (desk.js, no inline handler).
            if page.locator("html").get_attribute("lang") != language:
                with page.expect_navigation():
                    page.locator("#language").select_option(language)
            assert page.locator("html").get_attribute("lang") == language
            for route in routes:
                if route.endpoint == "desk.signin" or route.endpoint.endswith("_csv"):
                    continue  # the sign-in page is left by signing in; an export is a download, not a page
                url = route.url(environment, demo.values[environment])
                response = page.goto(url)
                assert response is not None, url
                status = response.status
                if "content-security-policy" not in response.headers:
                    missing_policy.append(url)
                # A live page may keep polling; what loaded within the wait is checked.
                with contextlib.suppress(Exception):
                    page.wait_for_load_state("networkidle", timeout=3000)
                # A fragment opened on its own may answer 4xx (it wants the page's query); the browser
                # logs that load as an error, which is not a policy problem.
                problems[:] = [p for p in problems if not (status >= 400 and "Failed to load resource" in p)]
                assert problems == [], f"{environment} {language} {url}: {problems}"
                visited += 1
            page.goto(f"{prefix}/desk")  # the language held on every page
            assert page.locator("html").get_attribute("lang") == language
    assert missing_policy == []
    print(f"CSP: {visited} page loads (every GET page route x 2 languages x 2 environments), no violation")
