"""Teams (``/settings/teams``), supervisors only: the organization's teams with their members; create a
team, add and remove members, delete a team (``services.teams``, as the API's ``/teams`` routes).

| URL | What |
|---|---|
| ``GET /settings/teams`` | the page |
| ``POST /settings/teams`` | create a team (name checked by the API's ``TeamCreate``) |
| ``POST /settings/teams/<team_id>/members`` | add a member (``teams.add_members``) |
| ``POST /settings/teams/<team_id>/members/<member_id>/remove`` | remove one (``teams.remove_member``) |
| ``POST /settings/teams/<team_id>/delete`` | delete the team (its memberships go with it) |
"""

from __future__ import annotations

from typing import Any

from flask import Response, render_template, request, url_for
from flask_babel import gettext as _

from blueprints.desk.forms import attempt
from blueprints.desk.security import require_role, signed_in
from blueprints.members import views
from blueprints.members.pages.common import pages, settings_answer
from blueprints.members.schemas import TeamCreate
from blueprints.members.services import teams

PAGE = "members/teams/page.html"
PANE = "members/teams/_pane.html"


def _context(form: dict[str, str] | None = None) -> dict[str, Any]:
    me = signed_in()
    return {"me": me, "cards": views.team_cards(me.organization_id), "form": form or {}}


def _answer(**kwargs: Any) -> Response:
    return settings_answer(PAGE, PANE, kwargs.pop("context", _context), back=url_for(".teams_page"), **kwargs)


@pages.get("/settings/teams")
@require_role("supervisor")
def teams_page() -> str:
    return render_template(PAGE, errors={}, **_context())


@pages.post("/settings/teams")
@require_role("supervisor")
def create_team() -> Response:
    me = signed_in()
    values = {name: request.form.get(name) or "" for name in ("name", "description")}
    team, errors = attempt(
        lambda: teams.create_team(
            me.organization_id,
            TeamCreate.model_validate(
                {"name": values["name"], "description": values["description"] or None}
            ).model_dump(exclude_unset=True, exclude_none=True),
        ),
        {"name": "name", "description": "description"},
    )
    if team is None:
        return _answer(context=lambda: _context(values), errors=errors)
    return _answer(saved=_("Team %(name)s created.", name=team.name))


@pages.post("/settings/teams/<team_id>/members")
@require_role("supervisor")
def add_team_member(team_id: str) -> Response:
    me = signed_in()
    member_id = request.form.get("member_id") or ""
    team, errors = attempt(
        lambda: teams.add_members(me.organization_id, team_id, [member_id]),
        {"member_ids": f"member-{team_id}"},
    )
    if team is None:
        return _answer(errors=errors)
    return _answer(saved=_("Added to %(team)s.", team=team.name))


@pages.post("/settings/teams/<team_id>/members/<member_id>/remove")
@require_role("supervisor")
def remove_team_member(team_id: str, member_id: str) -> Response:
    me = signed_in()
    team = teams.remove_member(me.organization_id, team_id, member_id)
    return _answer(saved=_("Removed from %(team)s.", team=team.name))


@pages.post("/settings/teams/<team_id>/delete")
@require_role("supervisor")
def delete_team(team_id: str) -> Response:
    me = signed_in()
    name = teams.get_team(me.organization_id, team_id).name
    teams.delete_team(me.organization_id, team_id)
    return _answer(saved=_("Team %(name)s deleted.", name=name))
