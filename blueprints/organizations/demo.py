"""Demo organization with all products and one stable API key per environment."""

from __future__ import annotations

from blueprints.organizations import services
from blueprints.organizations.models import PRODUCTS
from core.demo import DEMO_ORGANIZATION_ID, DEMO_ORGANIZATION_NAME, derived_secret, seeder
from core.environments import KEY_PREFIXES

DEMO_TIMEZONE = "America/Mexico_City"  # the demo company sells in Mexico: its desk shows Mexico City time


@seeder(order=0, name="organizations")
def seed_organization(environment: str) -> list[str]:
    organization = services.get_organization(DEMO_ORGANIZATION_ID) or services.create_organization(
        DEMO_ORGANIZATION_NAME,
        list(PRODUCTS),
        organization_id=DEMO_ORGANIZATION_ID,
        timezone=DEMO_TIMEZONE,
    )
    plaintext = KEY_PREFIXES[environment] + derived_secret(f"demo-api-key-{environment}")
    key = services.find_key(plaintext)
    if key is None:
        services.issue_api_key(organization, environment, name="demo", plaintext=plaintext)
    elif not key.active:
        return [f"{environment} API key: (the demo key was revoked)"]
    return [f"{environment} API key: {plaintext}"]
