"""Demo data: the shipped catalogue, a funded balance, a verified user with an active eSIM line, a line
waiting for its ported number (the porting in progress) and a travel eSIM for the demo organization.
Idempotent: the user is found by email and nothing is added when it exists."""

from __future__ import annotations

from sqlalchemy import select

from blueprints.organizations.services import get_organization
from blueprints.telecom.mexico import with_curp_check_digit
from blueprints.telecom.models import TelecomUser
from blueprints.telecom.services import catalogue, data_esims, kyc, ledger, portings, subscriptions, users
from core.db import db, utcnow
from core.demo import DEMO_ORGANIZATION_ID, seeder

DEMO_EMAIL = "jessica.ramirez@example.mx"


@seeder(order=60, name="telecom")
def seed_telecom(environment: str) -> list[str]:
    catalogue.load_catalogue()
    if get_organization(DEMO_ORGANIZATION_ID) is None:
        return []
    found = db.session.scalar(
        select(TelecomUser).where(
            TelecomUser.organization_id == DEMO_ORGANIZATION_ID, TelecomUser.email == DEMO_EMAIL
        )
    )
    if found is not None:
        return []
    ledger.credit(DEMO_ORGANIZATION_ID, 200_000, "Demo credit")
    user = users.create_user(
        DEMO_ORGANIZATION_ID,
        users.UserFields(email=DEMO_EMAIL, full_name="Jessica Ramírez", phone_number="+525512345678"),
    )
    verification = kyc.start_verification(
        DEMO_ORGANIZATION_ID,
        user.id,
        kyc.KycRequest(
            full_name="Jessica Ramírez",
            document_type="ine",
            document_number="IDMEX2001234",
            curp=with_curp_check_digit("RAJE900115MDFMSS0"),
        ),
    )
    # The seed runs as one unit of work: the identity check and the activation run here, not as jobs.
    kyc.check_identity(str(DEMO_ORGANIZATION_ID), verification.id)
    _line, order = subscriptions.create_subscription(
        DEMO_ORGANIZATION_ID,
        subscriptions.NewLine(type="ESIM", user_id=user.id, plan_id="pln_plus_20gb", area_code="55"),
    )
    subscriptions.process_order(str(DEMO_ORGANIZATION_ID), order.id)
    # Her old number comes over from another carrier: the port is requested and completes at the
    # carrier's next window (the simulator's business-day clock), which then activates this second line.
    porting = portings.create_porting(
        DEMO_ORGANIZATION_ID,
        portings.NewPorting(
            user_id=user.id,
            phone_number="+525587654321",
            nip="2468",
            nip_issued_at=utcnow(),
            holder=portings.Holder(
                full_name="Jessica Ramírez", curp=with_curp_check_digit("RAJE900115MDFMSS0")
            ),
        ),
    )
    subscriptions.create_subscription(
        DEMO_ORGANIZATION_ID,
        subscriptions.NewLine(type="SIM", user_id=user.id, plan_id="pln_basico_5gb", porting_id=porting.id),
    )
    portings.submit_porting(str(DEMO_ORGANIZATION_ID), porting.id)
    # and a travel eSIM for her trip to the United States, issued and waiting to be installed
    esim = data_esims.purchase(
        DEMO_ORGANIZATION_ID, data_esims.NewDataEsim(offer_id="off_us_5gb_15d", user_id=user.id)
    )
    data_esims.provision_data_esim(str(DEMO_ORGANIZATION_ID), esim.id)
    return []  # ids and the number are random per store: printing them would change every run
