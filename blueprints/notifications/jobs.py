"""Jobs of the notifications area: writing a trigger's deliveries (for events heard after their commit),
sending one delivery, and the minute sweep that re-queues deliveries whose job was lost."""

from __future__ import annotations

import uuid
from typing import Any

from blueprints.notifications import services
from core.jobs import job, periodic


@job(retries=2, retry_delay=5)
def notify_job(organization_id: str, agent_id: str, trigger: str, payload: dict[str, Any]) -> int:
    """The deliveries of one trigger heard as an event (``ai.tool_called``); returns how many."""
    return len(services.notify(uuid.UUID(organization_id), agent_id, trigger, payload))


@job(retries=0)  # the delivery's own schedule retries (exponential backoff); the sweep catches lost jobs
def send_notification(organization_id: str, delivery_id: str) -> str | None:
    attempted = services.attempt(uuid.UUID(organization_id), delivery_id)
    return attempted.delivery.status if attempted else None


@periodic(minute="*")
def retry_due_notifications() -> None:
    services.retry_due()
