"""The demo seed creates the members area's people, agents, team, reasons and history, idempotently."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskCliRunner

from blueprints.members.services.users import authenticate
from core.demo import DEMO_ORGANIZATION_ID, derived_secret
from core.environments import SANDBOX, environment_app


def test_seed_is_idempotent_and_prints_a_working_login(app: Flask, runner: FlaskCliRunner) -> None:
    first = runner.invoke(args=["demo", "seed"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(args=["demo", "seed"])
    assert second.exit_code == 0, second.output
    line = next(line for line in second.output.splitlines() if "Desk login: supervisor@demo.test" in line)
    password = line.split(" / ")[1].split(" ")[0]
    client = app.test_client()
    live_key = next(
        line.split(": ")[1] for line in second.output.splitlines() if line.strip().startswith("live API key")
    )
    base = f"/v1/members/organizations/{DEMO_ORGANIZATION_ID}"
    headers = {"X-API-Key": live_key}
    agents = client.get(f"{base}/members/ai-agents", headers=headers).get_json()
    assert agents["total"] == 2 and all(a["has_config"] for a in agents["agents"])
    sofia = next(a for a in agents["agents"] if a["id"] == "ai_demo_sofia")
    assert sofia["teams"][0]["team_name"] == "Ventas" and sofia["business_category"] == "sales"
    teams = client.get(f"{base}/teams", headers=headers).get_json()
    assert teams["total"] == 1 and len(teams["data"][0]["members"]) == 3
    reasons = client.get(f"{base}/members/unavailable-reasons", headers=headers).get_json()
    assert [r["name"] for r in reasons["data"]] == ["Lunch", "Meeting", "Training"]
    history = client.get(f"{base}/members/status-history/organization?take=200", headers=headers).get_json()
    assert history["total"] == 14  # 5 creations + 9 changes, not doubled by the second run
    stats = client.get(f"{base}/stats/member-availability", headers=headers).get_json()
    ana = next(m for m in stats["members"] if m["member_id"] == "mem_demo_ana")
    assert ana["online_seconds"] > 0 and ana["reasons"]["Lunch"] == 3600
    with app.app_context():
        assert password == derived_secret("demo-desk-password-supervisor@demo.test", 16)
        user = authenticate("supervisor@demo.test", password)
        assert user is not None and user.role == "supervisor"
    with environment_app(app, SANDBOX).app_context():
        assert authenticate("supervisor@demo.test", password) is not None  # the sandbox has its own copy
