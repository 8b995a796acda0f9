"""KYC verifications: Mexican line registration (CURP for a person, RFC for a company) with Stripe
Identity's statuses. The identity check is the carrier's (the simulator in the sandbox) and runs as a job,
so a verification answers ``processing`` first. No biometrics are taken or stored."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select

from blueprints.telecom.carrier import carrier_for
from blueprints.telecom.mexico import curp_problem, rfc_problem
from blueprints.telecom.models import KycVerification, TelecomUser
from blueprints.telecom.services.common import conflict, invalid, publish
from blueprints.telecom.services.users import active_user, get_user
from core.db import db, utcnow
from core.errors import not_found
from core.jobs import job
from core.tenancy import find_for_org, get_for_org

MAX_FAILED_ATTEMPTS = 3
PERSON_DOCUMENTS = ("ine", "passport", "curp_biometrica", "fm_migratoria")
COMPANY_DOCUMENTS = ("acta_constitutiva", "ine", "passport")


@dataclass
class KycRequest:
    full_name: str
    document_type: str
    document_number: str
    curp: str | None = None
    rfc: str | None = None


def _identifier(user: TelecomUser, request: KycRequest) -> tuple[str | None, str | None]:
    """The CURP (person) or RFC (company), validated with its check digit."""
    if user.person_type == "company":
        if not request.rfc:
            raise invalid("rfc", "required for a company (persona moral)")
        problem = rfc_problem(request.rfc, company=True)
        if problem:
            raise invalid("rfc", problem, "rfc_invalid")
        if request.document_type not in COMPANY_DOCUMENTS:
            raise invalid("document.type", f"a company presents one of {', '.join(COMPANY_DOCUMENTS)}")
        return None, request.rfc
    if not request.curp:
        raise invalid("curp", "required for a person (persona física)")
    problem = curp_problem(request.curp)
    if problem:
        raise invalid("curp", problem, "curp_invalid")
    if request.document_type not in PERSON_DOCUMENTS:
        raise invalid("document.type", f"a person presents one of {', '.join(PERSON_DOCUMENTS)}")
    return request.curp, None


def start_verification(organization_id: uuid.UUID, user_id: str, request: KycRequest) -> KycVerification:
    user = active_user(organization_id, user_id)
    curp, rfc = _identifier(user, request)
    rows = db.session.execute(
        select(KycVerification.status, KycVerification.validation_result).where(
            KycVerification.organization_id == organization_id, KycVerification.user_id == user.id
        )
    ).all()
    statuses = [status for status, _ in rows]
    if "verified" in statuses:
        raise conflict("kyc_already_verified", "The user's identity is already verified")
    if "processing" in statuses:
        raise conflict("kyc_in_progress", "A verification of this user is being processed")
    # failed checks count even once canceled, so canceling cannot buy more attempts
    if sum(result == "mismatch" for _, result in rows) >= MAX_FAILED_ATTEMPTS:
        raise conflict(
            "kyc_attempts_exhausted",
            f"{MAX_FAILED_ATTEMPTS} verifications failed: the user must be identified in person",
        )
    verification = KycVerification(
        organization_id=organization_id,
        user_id=user.id,
        person_type=user.person_type,
        curp=curp,
        rfc=rfc,
        full_name=request.full_name,
        document_type=request.document_type,
        document_number=request.document_number,
        status="processing",
    )
    db.session.add(verification)
    user.kyc_status = "processing"
    db.session.flush()
    publish("kyc_verification.processing", organization_id, {"id": verification.id, "user": user.id})
    check_identity.enqueue(str(organization_id), verification.id)
    return verification


@job(retries=3, retry_delay=30)
def check_identity(organization_id: str, verification_id: str) -> None:
    """Ask the carrier (RENAPO/SAT through it) and settle the verification."""
    org = uuid.UUID(organization_id)
    verification = find_for_org(KycVerification, verification_id, org)
    if verification is None or verification.status != "processing":
        return  # canceled meanwhile, or already settled by an earlier run
    kind, identifier = ("rfc", verification.rfc) if verification.rfc else ("curp", verification.curp)
    result = carrier_for().verify_identity(
        kind, identifier or "", verification.full_name, verification.document_number
    )
    now = utcnow()
    verification.validation_source = result.source
    verification.validated_at = now
    user = get_for_org(TelecomUser, verification.user_id, org, "User")
    if result.verified:
        verification.status = "verified"
        verification.validation_result = "match"
        verification.verified_at = now
        verification.folio = f"KYC-{now:%Y%m%d}-{uuid.uuid4().hex[:8].upper()}"
        verification.last_error_code = verification.last_error_reason = None
    else:
        verification.status = "requires_input"
        verification.validation_result = "mismatch"
        verification.last_error_code = result.error_code
        verification.last_error_reason = result.error_reason
    user.kyc_status = verification.status
    db.session.flush()
    publish(f"kyc_verification.{verification.status}", org, {"id": verification.id, "user": user.id})


def list_verifications(organization_id: uuid.UUID, user_id: str) -> list[KycVerification]:
    user = get_user(organization_id, user_id)
    return list(
        db.session.scalars(
            select(KycVerification)
            .where(KycVerification.organization_id == organization_id, KycVerification.user_id == user.id)
            .order_by(KycVerification.created_at.desc(), KycVerification.id.desc())
        )
    )


def get_verification(organization_id: uuid.UUID, user_id: str, verification_id: str) -> KycVerification:
    user = get_user(organization_id, user_id)
    verification = find_for_org(KycVerification, verification_id, organization_id)
    if verification is None or verification.user_id != user.id:
        raise not_found("KYC verification")
    return verification


def cancel_verification(organization_id: uuid.UUID, user_id: str, verification_id: str) -> KycVerification:
    verification = get_verification(organization_id, user_id, verification_id)
    if verification.status not in ("requires_input", "processing"):
        raise conflict("kyc_not_cancelable", f"A {verification.status} verification cannot be canceled")
    verification.status = "canceled"
    verification.canceled_at = utcnow()
    user = get_user(organization_id, user_id)
    user.kyc_status = "canceled"
    db.session.flush()
    publish("kyc_verification.canceled", organization_id, {"id": verification.id, "user": user.id})
    return verification


def verified_for(organization_id: uuid.UUID, user: TelecomUser) -> KycVerification | None:
    return db.session.scalar(
        select(KycVerification).where(
            KycVerification.organization_id == organization_id,
            KycVerification.user_id == user.id,
            KycVerification.status == "verified",
        )
    )
