"""Users, Mexican addresses and KYC verifications: CRUD, validation in the telecom error body, statuses."""

from __future__ import annotations

from collections.abc import Callable

from flask.testing import FlaskClient

from blueprints.telecom.mexico import curp_problem, luhn_valid, rfc_problem, state_code
from tests.conftest import Org
from tests.telecom.conftest import CURP, Partner


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.get_json()
    body = response.get_json()["error"]
    assert set(body) == {"type", "code", "message", "param", "request_id"}
    return body


def test_check_digit_rules() -> None:
    assert curp_problem("HEGG560427MVZRRL04") is None
    assert curp_problem("HEGG560427MVZRRL05") == "check digit does not match"
    assert curp_problem("HEGG560427") is not None
    assert rfc_problem("GODE561231GR8", company=False) is None  # the SAT's published example
    assert rfc_problem("GODE561231GR9", company=False) == "check digit does not match"
    assert rfc_problem("GODE561231GR8", company=True) is not None
    assert luhn_valid("79927398713") and not luhn_valid("79927398710")
    assert state_code("cdmx") == state_code("Ciudad de Mexico") == "CMX"
    assert state_code("Nuevo León") == "NLE" and state_code("Atlantis") is None


def test_user_crud_and_statuses(partner: Partner, commits: Callable) -> None:
    with commits() as counted:
        user = partner.ok(
            partner.post(
                "/users",
                {
                    "email": "Gloria@Example.mx",
                    "full_name": "Gloria Hernández",
                    "phone_number": "55 1234 5678",
                },
            ),
            201,
        )
    assert counted.count == 1
    assert user["id"].startswith("usr_") and user["object"] == "user"
    assert (user["email"], user["phone_number"], user["status"], user["kyc_status"]) == (
        "gloria@example.mx",
        "+525512345678",
        "active",
        "unverified",
    )
    assert user["livemode"] is True and user["created_at"].endswith("Z")
    with commits() as counted:
        assert partner.get(f"/users/{user['id']}").status_code == 200
    assert counted.count == 0

    blocked = partner.ok(partner.patch(f"/users/{user['id']}", {"status": "blocked", "full_name": "G. H."}))
    assert (blocked["status"], blocked["full_name"]) == ("blocked", "G. H.")
    assert partner.ok(partner.patch(f"/users/{user['id']}", {"status": "active"}))["status"] == "active"
    listed = partner.ok(partner.get("/users", status="active"))
    assert [u["id"] for u in listed["data"]] == [user["id"]] and listed["has_more"] is False

    deleted = partner.ok(partner.delete(f"/users/{user['id']}"))
    assert deleted["status"] == "deleted"
    refused = _error(partner.patch(f"/users/{user['id']}", {"full_name": "x"}), 409)
    assert refused["code"] == "user_not_active"


def test_user_validation_and_conflicts(partner: Partner) -> None:
    partner.user(email="a@example.mx")
    taken = _error(partner.post("/users", {"email": "A@example.mx", "full_name": "x"}), 409)
    assert (taken["code"], taken["param"], taken["type"]) == (
        "user_already_exists",
        "email",
        "conflict_error",
    )
    missing = _error(partner.post("/users", {"email": "b@example.mx"}), 400)
    assert (missing["param"], missing["code"]) == ("full_name", "parameter_invalid")
    phone = _error(
        partner.post("/users", {"email": "c@example.mx", "full_name": "x", "phone_number": "123"}), 400
    )
    assert (phone["param"], phone["code"]) == ("phone_number", "phone_number_invalid")
    unknown = _error(partner.get("/users", colour="red"), 400)
    assert unknown["param"] == "colour"


def test_cursor_pagination(partner: Partner) -> None:
    ids = [partner.user(email=f"p{i}@example.mx")["id"] for i in range(3)]
    first = partner.ok(partner.get("/users", limit=2))
    assert first["has_more"] is True and [u["id"] for u in first["data"]] == ids[::-1][:2]
    rest = partner.ok(partner.get("/users", limit=2, starting_after=first["data"][-1]["id"]))
    assert [u["id"] for u in rest["data"]] == [ids[0]] and rest["has_more"] is False


def test_addresses_validate_mexican_fields(partner: Partner) -> None:
    user = partner.user()
    base = f"/users/{user['id']}/addresses"
    address = partner.ok(
        partner.post(
            base,
            {
                "line1": "Av. Reforma 222",
                "neighborhood": "Juárez",
                "city": "Cuauhtémoc",
                "state": "Ciudad de México",
                "postal_code": "06600",
            },
        ),
        201,
    )
    assert (address["state"], address["state_name"], address["country"], address["user"]) == (
        "CMX",
        "Ciudad de México",
        "MX",
        user["id"],
    )
    for field, value, param in (
        ("postal_code", "6600", "postal_code"),
        ("postal_code", "0660A", "postal_code"),
        ("state", "Texas", "state"),
        ("country", "US", "country"),
    ):
        body = {"line1": "x", "city": "y", "state": "JAL", "postal_code": "44100", field: value}
        assert _error(partner.post(base, body), 400)["param"] == param
    updated = partner.ok(partner.patch(f"{base}/{address['id']}", {"state": "jal", "postal_code": "44100"}))
    assert (updated["state"], updated["postal_code"]) == ("JAL", "44100")
    assert partner.ok(partner.get(base))["data"][0]["id"] == address["id"]
    other = partner.user()
    assert (
        _error(partner.get(f"/users/{other['id']}/addresses/{address['id']}"), 404)["code"]
        == "resource_missing"
    )
    assert partner.ok(partner.delete(f"{base}/{address['id']}")) == {
        "id": address["id"],
        "object": "address",
        "deleted": True,
    }
    assert partner.ok(partner.get(base))["data"] == []


def test_kyc_verified_with_curp(partner: Partner) -> None:
    user = partner.user(full_name="Gloria Hernández García")
    response = partner.post(
        f"/users/{user['id']}/kyc_verifications",
        {
            "full_name": "Gloria Hernández García",
            "curp": CURP.lower(),
            "document": {"type": "ine", "number": "IDMEX123"},
        },
    )
    accepted = partner.ok(response, 202)
    assert accepted["status"] == "processing" and accepted["curp"] == CURP
    verification = partner.ok(partner.get(f"/users/{user['id']}/kyc_verifications/{accepted['id']}"))
    assert verification["status"] == "verified"
    assert (
        verification["validation"]["result"] == "match" and verification["validation"]["source"] == "RENAPO"
    )
    assert verification["folio"].startswith("KYC-") and verification["verified_at"].endswith("Z")
    assert partner.ok(partner.get(f"/users/{user['id']}"))["kyc_status"] == "verified"
    again = _error(
        partner.post(
            f"/users/{user['id']}/kyc_verifications",
            {"full_name": "x", "curp": CURP, "document": {"type": "ine", "number": "IDMEX123"}},
        ),
        409,
    )
    assert again["code"] == "kyc_already_verified"
    assert _error(partner.post(f"/users/{user['id']}/kyc_verifications/{accepted['id']}/cancel"), 409)[
        "code"
    ] == ("kyc_not_cancelable")


def test_kyc_company_rfc_and_refusals(partner: Partner) -> None:
    company = partner.user(person_type="company", full_name="ABC SA de CV")
    verification = partner.verify(company)
    assert (verification["status"], verification["rfc"], verification["validation"]["source"]) == (
        "verified",
        "ABC680524P73",
        "SAT",
    )
    person = partner.user()
    url = f"/users/{person['id']}/kyc_verifications"
    bad_digit = _error(
        partner.post(
            url, {"full_name": "x", "curp": CURP[:-1] + "9", "document": {"type": "ine", "number": "1234"}}
        ),
        400,
    )
    assert (bad_digit["code"], bad_digit["param"]) == ("curp_invalid", "curp")
    no_curp = _error(
        partner.post(url, {"full_name": "x", "document": {"type": "ine", "number": "1234"}}), 400
    )
    assert no_curp["param"] == "curp"
    selfie = _error(
        partner.post(url, {"full_name": "x", "curp": CURP, "document": {"type": "selfie", "number": "1234"}}),
        400,
    )
    assert selfie["param"] == "document.type"


def test_kyc_magic_values_and_attempts(partner: Partner) -> None:
    user = partner.user()
    failed = partner.verify(user, number="IDMEX0000")
    assert failed["status"] == "requires_input"
    assert failed["last_error"]["code"] == "document_unverified_other"
    assert partner.ok(partner.get(f"/users/{user['id']}"))["kyc_status"] == "requires_input"
    mismatch = partner.verify(user, number="IDMEX1111")
    assert (mismatch["last_error"]["code"], mismatch["validation"]["result"]) == (
        "id_number_mismatch",
        "mismatch",
    )
    canceled = partner.ok(partner.post(f"/users/{user['id']}/kyc_verifications/{mismatch['id']}/cancel"))
    assert canceled["status"] == "canceled"
    partner.verify(user, number="IDMEX0000")
    exhausted = _error(
        partner.post(
            f"/users/{user['id']}/kyc_verifications",
            {"full_name": "x", "curp": CURP, "document": {"type": "ine", "number": "IDMEX9"}},
        ),
        409,
    )
    assert exhausted["code"] == "kyc_attempts_exhausted"


def test_other_organization_ids_are_404(
    partner: Partner, other_org: Org, make_partner: Callable[..., Partner]
) -> None:
    user = partner.user()
    other = make_partner(other_org)
    for response in (
        other.get(f"/users/{user['id']}"),
        other.patch(f"/users/{user['id']}", {"full_name": "x"}),
        other.get(f"/users/{user['id']}/addresses"),
        other.get(f"/users/{user['id']}/kyc_verifications"),
    ):
        body = _error(response, 404)
        assert (body["type"], body["code"], body["message"]) == (
            "not_found_error",
            "resource_missing",
            "No User found",
        )


def test_sandbox_and_live_are_separate(
    partner: Partner, org: Org, client: FlaskClient, make_partner: Callable[..., Partner]
) -> None:
    sandbox = make_partner(org, "sandbox")
    user = sandbox.user()
    assert user["livemode"] is False
    assert _error(partner.get(f"/users/{user['id']}"), 404)["code"] == "resource_missing"
    wrong_env = client.get("/v1/partner/users", headers=org.headers("sandbox"))
    assert _error(wrong_env, 401)["code"] == "api_key_invalid"
    reverse = client.get("/sandbox/v1/partner/users", headers=org.headers("live"))
    assert _error(reverse, 401)["type"] == "authentication_error"
    bearer = client.get("/v1/partner/users", headers={"Authorization": f"Bearer {org.live_key}"})
    assert _error(bearer, 401)["code"] == "api_key_invalid"
