"""The demo seed gives the demo organization the catalogue, a funded balance, a verified user with an
active line, a line waiting for its ported number (the porting in progress) and a travel eSIM; running it
twice adds nothing. Read through the partner API with the demo's own key."""

from __future__ import annotations

from flask.testing import FlaskClient, FlaskCliRunner


def test_demo_seed_is_idempotent(runner: FlaskCliRunner, client: FlaskClient) -> None:
    outputs = []
    for _ in range(2):
        result = runner.invoke(args=["demo", "seed"])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert outputs[0] == outputs[1]
    key = next(line.split(": ")[1] for line in outputs[0].splitlines() if "live API key" in line)
    headers = {"X-API-Key": key}

    def listed(path: str) -> list[dict]:
        response = client.get(f"/v1/partner{path}", headers=headers, query_string={"limit": 100})
        assert response.status_code == 200, response.get_json()
        return response.get_json()["data"]

    [user] = listed("/users")
    assert user["kyc_status"] == "verified"
    lines = sorted(listed("/subscriptions"), key=lambda line: line["type"])
    assert [(line["type"], line["status"]) for line in lines] == [("ESIM", "active"), ("SIM", "pending")]
    assert lines[0]["phone_number"].startswith("+5255")
    [porting] = listed("/portings")
    assert porting["status"] == "requested" and porting["phone_number"] == "+525587654321"
    assert porting["subscription"] == lines[1]["id"]
    [esim] = listed("/data_esims")
    assert esim["status"] == "not_active" and esim["activation_code"].startswith("LPA:1$")
    balance = client.get("/v1/partner/balance", headers=headers).get_json()
    assert balance["available"] != "0.00" and not balance["available"].startswith("-")
