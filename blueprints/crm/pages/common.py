"""What every CRM page shares: the blueprint (the inbox panel's fragments under ``/crm``, the deal kanban
at ``/deals``, the ticket board at ``/tickets``, tasks at ``/tasks``, contacts and accounts at
``/contacts`` and ``/accounts``), how a refusal is shown, and the template filters for money, due dates
and the CRM's named values in the page's language."""

from __future__ import annotations

from flask import Blueprint, Response
from flask_babel import format_currency, format_date, format_time
from flask_babel import gettext as _

from blueprints.crm.models import CrmTask, Deal
from blueprints.crm.refusals import message_for
from blueprints.desk.errors import refusal_message, refused
from blueprints.desk.security import protect_pages
from core.auth import reads_in_autocommit
from core.db import utcnow
from core.errors import ApiError
from core.timeutil import as_utc

pages = Blueprint("crm_pages", __name__)


@pages.before_request
def _reads_in_autocommit() -> None:
    """A CRM page's GET only reads (a read never writes, the CRM's services say): on PostgreSQL its
    statements run in autocommit, as the API's GETs do, which spares psycopg's BEGIN and the ROLLBACK, two
    of the deal drawer's twelve round trips. Registered before ``protect_pages`` so that it comes before
    the desk identity's statement (docs/benchmarks.md, "The deal pages")."""
    reads_in_autocommit()


protect_pages(pages)


# ---- errors and formatting --------------------------------------------------------------------------


@pages.errorhandler(ApiError)
def _refused(error: ApiError) -> Response:
    """A service's refusal that no form field explains: the desk's alert where the agent looks, worded by
    the CRM for its code (with the rule's numbers) in the page's language, else as the desk words it;
    nothing is kept. A record that is not the organization's is the desk's 404 (``refused``)."""
    return refused(error, message_for(error) or refusal_message(error))


@pages.app_template_filter("crm_money")
def crm_money(deal: Deal) -> str:
    """A deal's amount in its currency, written the way the page's language writes money (Babel)."""
    return format_currency(deal.amount, deal.currency)


@pages.app_template_filter("crm_due")
def crm_due(task: CrmTask) -> str:
    """A task's due moment in the organization's time zone: the date, and the time when it has one."""
    if task.due_date is None:
        return ""
    due = as_utc(task.due_date)
    if (due.hour, due.minute, due.second) == (0, 0, 0):
        # a date without a time (stored at 00:00Z): the calendar day as given, not shifted by a zone
        return format_date(due.date(), "medium")
    return f"{format_date(due, 'medium')} {format_time(due, 'short')}"


@pages.app_template_test("crm_overdue")
def crm_overdue(task: CrmTask) -> bool:
    return task.due_date is not None and as_utc(task.due_date) < utcnow()


def _labels() -> dict[str, dict[str, str]]:
    return {
        "priority": {
            "urgent": _("Urgent"),
            "high": _("High"),
            "normal": _("Normal"),
            "low": _("Low"),
        },
        "ticket_state": {
            "new": _("New"),
            "waiting_on_agent": _("Waiting on agent"),
            "waiting_on_customer": _("Waiting on customer"),
            "on_hold": _("On hold"),
            "closed": _("Closed (ticket)"),
        },
        "task_type": {
            "to_do": _("To do"),
            "call": _("Call"),
            "email": _("Email"),
            "meeting": _("Meeting"),
            "follow_up": _("Follow-up"),
        },
    }
