"""The availability dashboard (``/team``), supervisors only.

| URL | What |
|---|---|
| ``GET /team?team_id=&member_id=&from=&to=`` | the dashboard (``HX-Target: team-pane``: the pane only) |
| ``GET /team/now?team_id=&member_id=`` | who is in which status now: fetched again when presence changes |
| ``GET /team/export/availability.csv?…`` | ``/stats/export/availability`` as a download, same service |
| ``GET /team/export/status-events.csv?…`` | ``/stats/export/status-events`` as a download, same service |

"Now" lists the members by status with their reason, since when and their active conversations (the
API's ``/members/availabilities``); it refreshes itself on ``presence.updated`` (and on conversation
changes, which move the counts) over the desk's Socket.IO. The range's charts and tables are the API's
statistics (``stats.availability_totals`` and ``stats.status_counts``, as ``/stats/member-availability``
and ``/stats/member-status`` compute them), in the organization's time zone; the charts' numbers travel in
a JSON data block that desk.js hands to Chart.js (the page's policy runs no inline script).
"""

from __future__ import annotations

from flask import Response, make_response, render_template, request

from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import require_role, signed_in
from blueprints.members import views
from blueprints.members.api import csv_download
from blueprints.members.pages.common import htmx, pages
from blueprints.members.services import stats


def _filters() -> views.DashboardFilters:
    return views.DashboardFilters.from_args(request.args)


@pages.get("/team")
@require_role("supervisor")
def team_page() -> Response:
    me = signed_in()
    board = views.dashboard(me.organization_id, me.organization_timezone, _filters())
    context = {
        "me": me,
        "board": board,
        "errors": board.scope.errors,
        "statuses": views.STATUS_ORDER,
        "chart": views.chart_data(board),
    }
    if htmx() and request.headers.get("HX-Target") == "team-pane":
        return vary_fragment(make_response(render_template("members/team/_pane.html", **context)))
    return vary_fragment(make_response(render_template("members/team/page.html", **context)))


@pages.get("/team/now")
@require_role("supervisor")
def team_now() -> Response:
    me = signed_in()
    filters = _filters()
    scope = views.scope_of(me.organization_id, me.organization_timezone, filters)
    _, now = views.now_by_status(me.organization_id, scope)
    html = render_template(
        "members/team/_now.html", me=me, filters=filters, now=now, statuses=views.STATUS_ORDER
    )
    return vary_fragment(make_response(html))


def _scope() -> views.Scope:
    me = signed_in()
    return views.scope_of(me.organization_id, me.organization_timezone, _filters())


@pages.get("/team/export/availability.csv")
@require_role("supervisor")
def availability_csv() -> Response:
    """The API's availability export for the dashboard's filters (AI agents included, as the API has them)."""
    scope = _scope()
    totals = stats.availability_totals(
        signed_in().organization_id,
        scope.stats_range,
        member_id=scope.member_id,
        team_id=scope.team.id if scope.team else None,
    )
    name = f"member-availability_{scope.stats_range.first_day}_{scope.stats_range.last_day}.csv"
    return csv_download(stats.availability_csv(totals), name)


@pages.get("/team/export/status-events.csv")
@require_role("supervisor")
def status_events_csv() -> Response:
    """Every status change of the range, oldest first (the API's export: a member filter applies, a team
    one does not, as in the API)."""
    scope = _scope()
    events = stats.events_in_range(signed_in().organization_id, scope.stats_range, member_id=scope.member_id)
    name = f"member-status-events_{scope.stats_range.first_day}_{scope.stats_range.last_day}.csv"
    return csv_download(stats.status_events_csv(events, scope.stats_range.zone), name)
