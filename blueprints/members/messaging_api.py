"""The messaging area's member endpoints: ``/v2/messages/organizations/{organization_id}/members``."""

from __future__ import annotations

from flask_openapi3 import Tag

from blueprints.members.schemas import (
    MemberCreate,
    MemberDeleted,
    MemberList,
    MemberListQuery,
    MemberOut,
    MemberPath,
    MemberUpdate,
    OrgPath,
)
from blueprints.members.services import members
from core import auth
from core.auth import current_actor
from core.openapi import API_KEY_ONLY, AreaAPI, PlainError, error_responses

TAG = Tag(name="Messaging: members", description="Human and AI members of the organization")

api = AreaAPI(
    "messaging_members_api",
    __name__,
    url_prefix="/v2/messages/organizations/<organization_id>/members",
    abp_tags=[TAG],
    abp_security=API_KEY_ONLY,
    abp_responses=error_responses(PlainError),
)
auth.protect(api)


@api.get("", responses={200: MemberList}, strict_slashes=False)
def list_members(path: OrgPath, query: MemberListQuery) -> list[dict[str, object]]:
    """Members of the organization, oldest first (``skip`` 0, ``take`` 20 by default)."""
    rows = members.list_members(auth.current_organization_id(), skip=query.skip, take=query.take)
    return MemberList.dump(rows)


@api.post("", responses={201: MemberOut, 409: PlainError}, strict_slashes=False)
def create_member(path: OrgPath, body: MemberCreate) -> tuple[dict[str, object], int]:
    """Create a member; ``id`` is generated (a UUID) when not given."""
    member = members.create_member(
        auth.current_organization_id(), body.sent_fields(), changed_by=current_actor()
    )
    return MemberOut.dump(member), 201


@api.get("/<member_id>", responses={200: MemberOut})
def get_member(path: MemberPath) -> dict[str, object]:
    return MemberOut.dump(members.get_member(auth.current_organization_id(), path.member_id))


@api.patch("/<member_id>", responses={200: MemberOut})
def update_member(path: MemberPath, body: MemberUpdate) -> dict[str, object]:
    """Change only the fields sent (``extra`` is replaced as a whole)."""
    member = members.update_member(auth.current_organization_id(), path.member_id, body.sent_fields())
    return MemberOut.dump(member)


@api.delete("/<member_id>", responses={200: MemberDeleted})
def delete_member(path: MemberPath) -> dict[str, object]:
    """Delete a member. Its conversations are not reassigned: ``active_conversations`` says how many it
    still holds."""
    remaining = members.delete_member(auth.current_organization_id(), path.member_id)
    return MemberDeleted.dump({"id": path.member_id, "deleted": True, "active_conversations": remaining})
