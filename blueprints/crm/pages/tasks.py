"""The desk's task list: the signed-in member's tasks by default, grouped overdue, today, upcoming and
done in the organization's time zone, with every filter of the API's list (``TaskFilters``).

``GET /tasks?<filters>`` is the whole page to a plain request and the list alone to htmx (``HX-Target:
task-list``: a filter changed, or ``task.updated`` arrived from another browser). One click completes a
task (``POST /tasks/<id>/complete`` answers the list, the row now under "Done"); the drawer
(``templates/crm/tasks/_form.html``, loaded by ``/tasks/new`` and ``/tasks/<id>/edit``) creates and edits
through the same verbs as the API, a refusal shown under its field by ``param`` and worded by ``code``
(``refusals.form_errors``). A saved form asks the list to refresh itself and closes the drawer.

Reads and writes go through ``crm.services.tasks`` and ``members.services.members``; the grouping rule
is the service's (``tasks.agenda``, ``tasks.due_group``), the same the rail's overdue badge counts.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from flask import Response, abort, make_response, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import pgettext
from werkzeug.datastructures import MultiDict

from blueprints.crm.drafts import TaskChanges, TaskDraft, parse
from blueprints.crm.models import CrmTask
from blueprints.crm.pages.common import _labels, pages
from blueprints.crm.refusals import form_errors
from blueprints.crm.rules import Refusal
from blueprints.crm.services import tasks as task_service
from blueprints.crm.services.records import record_names
from blueprints.crm.services.tasks import AGENDA_GROUPS, Agenda, TaskFilters
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import DeskUser, signed_in
from blueprints.members.services.members import list_members, members_by_ids
from core import uow
from core.errors import ApiError
from core.timeutil import as_utc, get_zone

# The list's filters as the URL names them (the API's names, ``q`` for the search) and the choices.
TYPES = ("to_do", "call", "email", "meeting", "follow_up")
STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("low", "normal", "high", "urgent")
LINKS = ("deal_id", "ticket_id", "contact_id", "account_id")
# A refused filter is shown under its field: the filter's wire name -> the form's.
FILTER_FIELDS = {
    "owner_id": "owner",
    "status": "status",
    "type": "type",
    "priority": "priority",
    "due_after": "due_after",
    "due_before": "due_before",
    "search": "q",
    **{name: name for name in LINKS},
}
# The drawer's fields by the verbs' wire names (``due_date`` is the date and time inputs together).
FORM_FIELDS = {
    "title": "title",
    "type": "type",
    "priority": "priority",
    "status": "status",
    "due_date": "due_date",
    "owner_id": "owner_id",
    "notes": "notes",
    **{name: "links" for name in LINKS},
}
MEMBERS_SHOWN = 200  # the owner menus list this many members (an organization's agents)


# ---- the list's state (what the URL says) ----------------------------------------------------------------


@dataclass(frozen=True)
class TaskListState:
    """The list's filters as typed. ``owner``: ``me`` (the default), ``any`` or a member id."""

    owner: str = "me"
    status: str = ""
    type: str = ""
    priority: str = ""
    due_after: str = ""
    due_before: str = ""
    overdue: str = ""  # "1": only overdue ones
    q: str = ""
    deal_id: str = ""
    ticket_id: str = ""
    contact_id: str = ""
    account_id: str = ""

    @classmethod
    def from_args(cls, args: MultiDict[str, str]) -> TaskListState:
        values = {f.name: (args.get(f.name) or "").strip()[:100] for f in fields(cls)}
        values["owner"] = values["owner"] or "me"
        values["overdue"] = "1" if values["overdue"] in ("1", "true", "on") else ""
        return cls(**values)

    def params(self, **changes: str) -> dict[str, str]:
        """Non-empty parameters (for ``url_for``), with ``changes``; the default owner is left out."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return {key: value for key, value in values.items() if value and (key, value) != ("owner", "me")}

    @property
    def filtered(self) -> bool:
        """Something beyond the default (my tasks)."""
        return bool(self.params())

    @property
    def linked(self) -> bool:
        return any(getattr(self, name) for name in LINKS)

    def filters(self, me: DeskUser, skip: frozenset[str] = frozenset()) -> TaskFilters:
        """The service's filters (checked by the service: a refused one names its field). ``skip``: wire
        names to leave out (a filter refused once is shown with its message and not applied)."""
        owner = {"me": me.member_id, "any": None}.get(self.owner, self.owner)
        given: dict[str, Any] = {
            "owner_id": owner,
            "status": self.status or None,
            "type": self.type or None,
            "priority": self.priority or None,
            "due_after": self.due_after or None,
            "due_before": self.due_before or None,
            "overdue": True if self.overdue else None,
            "search": self.q or None,
            **{name: getattr(self, name) or None for name in LINKS},
        }
        for name in skip:
            given[name] = None
        return TaskFilters(timezone=me.organization_timezone, **given)


# ---- the view --------------------------------------------------------------------------------------------


@dataclass
class TaskListView:
    state: TaskListState
    agenda: Agenda
    owners: dict[str, str]  # member id -> name, for the rows
    errors: dict[str, str] = field(default_factory=dict)  # refused filters, by form field
    focus: str = ""  # the task whose row takes the focus (the one just saved)


def _agenda(me: DeskUser, state: TaskListState) -> tuple[Agenda, dict[str, str]]:
    """The agenda for the state's filters; a filter the service refuses is left out and its message kept
    for its field (at most one per filter, so this ends)."""
    errors: dict[str, str] = {}
    skipped: set[str] = set()
    while True:
        try:
            return task_service.agenda(me.organization_id, state.filters(me, frozenset(skipped))), errors
        except Refusal as refusal:
            if refusal.param not in FILTER_FIELDS or refusal.param in skipped:
                raise
            errors.update(form_errors(refusal, FILTER_FIELDS))
            skipped.add(refusal.param)
            if refusal.param == "due_after":  # an inverted range names its start; both are the range
                skipped.add("due_before")


def _list_view(me: DeskUser, state: TaskListState, focus: str = "") -> TaskListView:
    agenda, errors = _agenda(me, state)
    tasks = [task for name in AGENDA_GROUPS for task in agenda.groups[name]]
    owner_ids = sorted({task.owner_id for task in tasks if task.owner_id})
    owners = {key: member.name for key, member in members_by_ids(me.organization_id, owner_ids).items()}
    return TaskListView(state, agenda, owners, errors, focus)


def _members(me: DeskUser) -> list[Any]:
    """The people a task can be given to (the owner menus)."""
    return [m for m in list_members(me.organization_id, skip=0, take=MEMBERS_SHOWN) if not m.ai]


def _group_names() -> dict[str, str]:
    # headings of groups of tasks (plural in Spanish: "Vencidas"), not a task's badge ("Vencida")
    return {
        "overdue": pgettext("task group", "Overdue"),
        "today": pgettext("task group", "Today"),
        "upcoming": pgettext("task group", "Upcoming"),
        "done": pgettext("task group", "Done"),
    }


def _status_names() -> dict[str, str]:
    return {"pending": _("Pending"), "in_progress": _("In progress"), "completed": _("Completed")}


def _render(template: str, **context: Any) -> str:
    return render_template(
        template,
        labels=_labels(),
        groups=AGENDA_GROUPS,
        group_names=_group_names(),
        status_names=_status_names(),
        types=TYPES,
        statuses=STATUSES,
        priorities=PRIORITIES,
        **context,
    )


def _is_fragment_request() -> bool:
    # A history restore also says HX-Request but wants the whole page.
    return (
        request.headers.get("HX-Request") == "true"
        and request.headers.get("HX-History-Restore-Request") != "true"
    )


def _list_response(me: DeskUser, state: TaskListState, focus: str = "") -> Response:
    html = _render("crm/tasks/_list.html", me=me, view=_list_view(me, state, focus))
    return vary_fragment(make_response(html))


@pages.get("/tasks")
def tasks_page() -> Response:
    me = signed_in()
    state = TaskListState.from_args(request.args)
    if _is_fragment_request() and request.headers.get("HX-Target") == "task-list":
        return _list_response(me, state)
    html = _render(
        "crm/tasks/page.html",
        me=me,
        view=_list_view(me, state),
        members=_members(me),
        linked=_linked_names(me, state),
    )
    return vary_fragment(make_response(html))


def _linked_names(me: DeskUser, state: TaskListState) -> dict[str, str]:
    """What the link filters name, for their chips ("Contact: Rosa Pérez"): read through the services
    (one query per link given; the id alone when it names nothing of the organization)."""
    return record_names(me.organization_id, {name: getattr(state, name) for name in LINKS})


# ---- one click: complete, reopen --------------------------------------------------------------------------


def _task_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        abort(404)


def _own_task(me: DeskUser, task_id: str) -> CrmTask:
    """The organization's task, or the page's 404 (another organization's too)."""
    try:
        return task_service.get_task(me.organization_id, _task_id(task_id))
    except ApiError:
        abort(404)


@pages.post("/tasks/<task_id>/complete")
def task_complete(task_id: str) -> Response:
    """Complete, and answer the list (with the filters the page sent): the row is now under "Done"."""
    me = signed_in()
    task = _own_task(me, task_id)
    task_service.complete_task(me.organization_id, task.id)
    return _list_response(me, TaskListState.from_args(request.values), focus=str(task.id))


@pages.post("/tasks/<task_id>/reopen")
def task_reopen(task_id: str) -> Response:
    """Back to pending (the verb's ``status``), and the list."""
    me = signed_in()
    task = _own_task(me, task_id)
    task_service.update_task(me.organization_id, task.id, TaskChanges(status="pending"))
    return _list_response(me, TaskListState.from_args(request.values), focus=str(task.id))


# ---- the drawer: create and edit -------------------------------------------------------------------------


@dataclass
class TaskForm:
    """The drawer's form: the task being edited (None: a new one), its values as typed and the refusal
    under its field."""

    task: CrmTask | None
    values: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)  # link field -> the record's name

    @property
    def action(self) -> str:
        if self.task is None:
            return url_for("crm_pages.task_create")
        return url_for("crm_pages.task_update", task_id=self.task.id)


def _values_of(task: CrmTask, zone: str | None) -> dict[str, str]:
    """A task as the form shows it: the due moment split into the date and time in the organization's
    zone (a calendar day, stored at 00:00Z, keeps its date and no time)."""
    date, clock = "", ""
    if task.due_date is not None:
        due = as_utc(task.due_date)
        if (due.hour, due.minute, due.second) == (0, 0, 0):
            date = due.date().isoformat()
        else:
            local = due.astimezone(get_zone(zone))
            date, clock = local.date().isoformat(), local.strftime("%H:%M")
    return {
        "title": task.title,
        "type": task.type,
        "priority": task.priority,
        "status": task.status,
        "due_date": date,
        "due_time": clock,
        "owner_id": task.owner_id or "",
        "notes": task.notes or "",
        **{name: str(getattr(task, name) or "") for name in LINKS},
    }


def _form_response(me: DeskUser, form: TaskForm, status: int = 200) -> Response:
    form.links = _link_names(me, form.values)
    html = _render("crm/tasks/_form.html", me=me, form=form, members=_members(me))
    return vary_fragment(make_response(html, status))


def _link_names(me: DeskUser, values: dict[str, str]) -> dict[str, str]:
    if not any(values.get(name) for name in LINKS):
        return {}
    return record_names(me.organization_id, {name: values.get(name, "") for name in LINKS})


@pages.get("/tasks/new")
def task_new() -> Response:
    """An empty form, mine, linked to what the list is filtered by (a contact's tasks: that contact)."""
    me = signed_in()
    values = {"type": "to_do", "priority": "normal", "owner_id": me.member_id or ""}
    values.update({name: (request.args.get(name) or "").strip() for name in LINKS})
    return _form_response(me, TaskForm(None, values))


@pages.get("/tasks/<task_id>/edit")
def task_edit(task_id: str) -> Response:
    me = signed_in()
    task = _own_task(me, task_id)
    return _form_response(me, TaskForm(task, _values_of(task, me.organization_timezone)))


FORM_NAMES = ("title", "type", "priority", "status", "due_date", "due_time", "owner_id", "notes", *LINKS)


def _typed() -> dict[str, str]:
    return {name: (request.form.get(name) or "").strip() for name in FORM_NAMES}


def _due(values: dict[str, str], zone: str | None) -> str | None:
    """The due moment as the verb reads it: a date alone is a calendar day (00:00Z, never shifted); a
    date and a time are the organization's local time, sent with its offset. A date the verb cannot
    read is passed on as typed, for the verb to refuse under the field."""
    day, clock = values["due_date"], values["due_time"]
    if not day:
        return None
    if not clock:
        return day
    try:
        local = datetime.fromisoformat(f"{day}T{clock}").replace(tzinfo=get_zone(zone))
    except ValueError:
        return f"{day}T{clock}"
    return local.isoformat()


def _wire(me: DeskUser, values: dict[str, str]) -> dict[str, Any]:
    """The form's values under the verbs' names; an empty choice is no value (null clears on edit)."""
    return {
        "title": values["title"],
        "type": values["type"] or "to_do",
        "priority": values["priority"] or "normal",
        "due_date": _due(values, me.organization_timezone),
        "owner_id": values["owner_id"] or None,
        "notes": values["notes"] or None,
        **{name: values[name] or None for name in LINKS},
    }


def _saved(me: DeskUser, task: CrmTask, message: str) -> Response:
    """The form of the saved task (the drawer is closing), a success alert out of band, the list asked
    to refresh itself (its own URL keeps its filters) and the drawer's close button clicked: Bootstrap
    then closes the drawer as if the person had (backdrop, focus back to what opened it)."""
    form = TaskForm(task, _values_of(task, me.organization_timezone))
    form.links = _link_names(me, form.values)
    html = _render("crm/tasks/_form.html", me=me, form=form, members=_members(me), saved=message)
    response = vary_fragment(make_response(html))
    response.headers["HX-Trigger"] = json.dumps({"desk:tasks-changed": {"id": str(task.id)}})
    response.headers["HX-Trigger-After-Settle"] = json.dumps({"click": {"target": "#task-drawer-close"}})
    return response


def _refused(me: DeskUser, task: CrmTask | None, values: dict[str, str], refusal: ApiError) -> Response:
    """The form again, as typed, with the refusal under its field (nothing is kept); a refusal no field
    explains is the desk's alert."""
    errors = form_errors(refusal, FORM_FIELDS)
    if not errors:
        raise refusal
    uow.rollback()
    response = _form_response(me, TaskForm(task, values, errors), status=422)
    response.headers["HX-Retarget"] = "#task-form"
    response.headers["HX-Reswap"] = "outerHTML"
    return response


@pages.post("/tasks")
def task_create() -> Response:
    me = signed_in()
    values = _typed()
    try:
        task = task_service.create_task(me.organization_id, parse(TaskDraft, _wire(me, values)))
    except ApiError as refusal:
        return _refused(me, None, values, refusal)
    return _saved(me, task, _("Task created."))


@pages.post("/tasks/<task_id>")
def task_update(task_id: str) -> Response:
    me = signed_in()
    task = _own_task(me, task_id)
    values = _typed()
    wire = _wire(me, values)
    if values["status"]:
        wire["status"] = values["status"]
    try:
        task = task_service.update_task(me.organization_id, task.id, parse(TaskChanges, wire))
    except ApiError as refusal:
        return _refused(me, task, values, refusal)
    return _saved(me, task, _("Task saved."))


@pages.post("/tasks/<task_id>/delete")
def task_delete(task_id: str) -> Response:
    me = signed_in()
    task = _own_task(me, task_id)
    task_service.delete_task(me.organization_id, task.id)
    empty = TaskForm(None, {"type": "to_do", "priority": "normal", "owner_id": me.member_id or ""})
    html = _render("crm/tasks/_form.html", me=me, form=empty, members=_members(me), saved=_("Task deleted."))
    response = vary_fragment(make_response(html))
    response.headers["HX-Trigger"] = json.dumps({"desk:tasks-changed": {"id": str(task.id)}})
    response.headers["HX-Trigger-After-Settle"] = json.dumps({"click": {"target": "#task-drawer-close"}})
    return response


def list_url(state: TaskListState, **changes: str) -> str:
    return url_for("crm_pages.tasks_page", **state.params(**changes))


@pages.app_template_global()
def tasks_url(state: TaskListState, **changes: str) -> str:
    return list_url(state, **changes)
