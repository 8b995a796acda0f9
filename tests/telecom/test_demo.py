"""The demo seed gives the demo organization the catalogue, a funded balance, a verified user and an
active line, and running it twice adds nothing."""

from __future__ import annotations

from flask.testing import FlaskClient, FlaskCliRunner

from core.demo import DEMO_ORGANIZATION_ID


def test_demo_seed_is_idempotent(runner: FlaskCliRunner, client: FlaskClient) -> None:
    for _ in range(2):
        result = runner.invoke(args=["demo", "seed"])
        assert result.exit_code == 0, result.output
    from blueprints.telecom.models import Subscription, TelecomUser
    from core.db import db

    with client.application.app_context():
        lines = db.session.scalars(
            db.select(Subscription).where(Subscription.organization_id == DEMO_ORGANIZATION_ID)
        ).all()
        users = db.session.scalars(
            db.select(TelecomUser).where(TelecomUser.organization_id == DEMO_ORGANIZATION_ID)
        ).all()
        assert len(users) == 1 and users[0].kyc_status == "verified"
        assert [(line.status, line.type) for line in lines] == [("active", "ESIM")]
        assert lines[0].phone_number.startswith("+5255")
