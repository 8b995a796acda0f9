"""The studio's Knowledge tab: the documents an AI agent answers from, and "What would it find?".

Documents belong to the organization (``{mem}/knowledge``); a document with an ``agent_id`` is that
agent's alone, one without is shared by every agent. The tab lists what *this* agent answers from (its
own and the shared ones, each marked), adds (pasted text, or a ``.txt``/``.md`` file read as UTF-8),
edits and deletes them through the very functions the API calls (``blueprints/ai/knowledge.py``, which
audits each change), with the API's request models as the one copy of the length rules. The search box
runs the runtime's own search (``knowledge.search``, what the ``search_knowledge`` tool calls, with the
agent's stored ``sections.knowledge``) and shows the passages with their scores.

| URL | What |
|---|---|
| ``GET /agents/<id>/knowledge?q=`` | the tab (``HX-Target: knowledge-list``: the list alone) |
| ``GET /agents/<id>/knowledge?q=&after=<doc>`` | "Show more": the next documents after that one |
| ``POST /agents/<id>/knowledge`` | add a document (``title``, ``body`` or ``file``, ``scope``) |
| ``GET /agents/<id>/knowledge/<doc>`` / ``…/edit`` | one row / its edit form |
| ``POST /agents/<id>/knowledge/<doc>`` | save an edit |
| ``POST /agents/<id>/knowledge/<doc>/delete`` | delete (the page asks first) |
| ``GET /agents/<id>/knowledge/search?q=`` | "What would it find?": the runtime's search |
"""

from __future__ import annotations

import uuid
from pathlib import PurePath
from typing import Any

from flask import Response, abort, make_response, render_template, request
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from pydantic import ValidationError
from werkzeug.datastructures import FileStorage

from blueprints.ai import knowledge, views
from blueprints.ai.models import KnowledgeDocument
from blueprints.ai.pages import pages
from blueprints.ai.schemas import DocumentCreate, DocumentUpdate
from blueprints.desk.forms import field_errors
from blueprints.desk.fragments import vary_fragment
from blueprints.desk.security import DeskUser, require_role, signed_in
from blueprints.members.models import Member
from blueprints.members.services import agents as agent_service
from core.errors import ApiError

LIST_LIMIT = 100
# A file is read whole: 400 kB covers the 100,000 characters a document may hold in any language
# (UTF-8 takes up to 4 bytes a character, Spanish about 1.05), and stays under MAX_BODY_BYTES (1 MiB).
MAX_FILE_BYTES = 400_000
FILE_SUFFIXES = (".txt", ".md")
SEARCH_LIMIT = 5  # the API's knowledge/search; the tool itself takes the best 3 (marked in the page)
TOOL_LIMIT = 3

SCOPES = {"agent": _l("Only this agent"), "shared": _l("Every agent of the organization")}


def _agent(me: DeskUser, agent_id: str) -> Member:
    agent = views.find_agent(me.organization_id, agent_id)
    if agent is None:
        abort(404)
    return agent


def _document(me: DeskUser, agent: Member, document_id: str) -> KnowledgeDocument:
    """The organization's document this agent answers from, or 404 (another agent's own document is not
    this tab's, whatever its organization)."""
    try:
        document = knowledge.get_document(me.organization_id, document_id)
    except ApiError:
        abort(404)
    if document.agent_id not in (None, str(agent.id)):
        abort(404)
    return document


def _section(me: DeskUser, agent: Member) -> str | None:
    """The agent's stored ``sections.knowledge`` text, which the tool searches with the documents."""
    try:
        config = agent_service.get_config(me.organization_id, str(agent.id))
    except ApiError:
        return None
    value = (config.sections or {}).get("knowledge")
    return value if isinstance(value, str) else None


def _render(template: str, status: int = 200, **context: Any) -> Response:
    return vary_fragment(make_response(render_template(template, **context), status))


def _documents(me: DeskUser, agent: Member, q: str, after: uuid.UUID | None = None) -> Any:
    return knowledge.list_documents(
        me.organization_id,
        agent_id=None,
        used_by=str(agent.id),
        search_text=q or None,
        offset=0,
        limit=LIST_LIMIT,
        after=after,
    )


def _list_context(me: DeskUser, agent: Member, q: str, after: uuid.UUID | None = None) -> dict[str, Any]:
    page = _documents(me, agent, q, after)
    items = list(page.items)
    return {
        "me": me,
        "agent": agent,
        "q": q,
        "page": page,
        "scopes": SCOPES,
        # the last document shown is the next page's cursor ("Show more")
        "next_after": items[-1].id if page.total > len(items) and items else None,
    }


# ------------------------------------------------------------------------------------------ the form


def _read_file(upload: FileStorage) -> tuple[str | None, str | None]:
    """``(text, refusal)`` of an uploaded file: a .txt or .md file of UTF-8 text within the size limit."""
    name = PurePath(upload.filename or "").name
    if not name.lower().endswith(FILE_SUFFIXES):
        return None, _("Choose a .txt or .md file (this is %(name)s).", name=name)
    data = upload.stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return None, _("The file is larger than %(size)s kB.", size=MAX_FILE_BYTES // 1000)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, _("The file is not UTF-8 text. Save it as UTF-8 (plain text) and try again.")
    if "\x00" in text:
        return None, _("The file holds binary data, not text.")
    if not text.strip():
        return None, _("The file is empty.")
    return text, None


def _scope_of(agent: Member) -> str | None:
    return str(agent.id) if request.form.get("scope", "agent") != "shared" else None


def _form_values() -> dict[str, str]:
    return {
        "title": request.form.get("title", ""),
        "body": request.form.get("body", ""),
        "scope": "shared" if request.form.get("scope") == "shared" else "agent",
    }


# -------------------------------------------------------------------------------------------- routes


@pages.get("/agents/<agent_id>/knowledge")
@require_role("supervisor")
def studio_knowledge(agent_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    q = (request.args.get("q") or "").strip()[:500]
    if request.args.get("after"):
        try:
            after = uuid.UUID(request.args["after"])
        except ValueError:
            abort(400)
        # "Show more": the next documents after that one, with their own "Show more" while more are left
        return _render("ai/studio/_knowledge_rows.html", **_list_context(me, agent, q, after))
    context = _list_context(me, agent, q)
    if request.headers.get("HX-Target") == "knowledge-list":
        return _render("ai/studio/_knowledge_list.html", **context)
    form = {"values": {"scope": "agent"}, "errors": {}}
    return _render("ai/studio/_knowledge.html", form=form, **context)


@pages.post("/agents/<agent_id>/knowledge")
@require_role("supervisor")
def studio_knowledge_add(agent_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    values = _form_values()
    errors: dict[str, str] = {}
    source: str | None = None
    upload = request.files.get("file")
    if upload is not None and upload.filename:
        text, refusal = _read_file(upload)
        if refusal is not None:
            errors["file"] = refusal
        else:
            source = PurePath(upload.filename).name
            values["body"] = text or ""
            values["title"] = values["title"].strip() or PurePath(source).stem
    if not errors:
        try:
            draft = DocumentCreate.model_validate(
                {"title": values["title"], "body": values["body"], "source": source}
            )
        except ValidationError as error:
            errors = field_errors(error, {"title": "title", "body": "body", "source": "file"})
    if errors:
        if source is not None and "body" in errors:
            errors.setdefault("file", errors.pop("body"))
        form = {"values": values, "errors": errors}
        return _render("ai/studio/_knowledge_form.html", 422, me=me, agent=agent, form=form, scopes=SCOPES)
    fields = draft.model_dump(exclude_none=True)
    fields["agent_id"] = _scope_of(agent)
    document = knowledge.create_document(me.organization_id, fields)
    form = {"values": {"scope": values["scope"]}, "errors": {}}
    return _render(
        "ai/studio/_knowledge_added.html",
        me=me,
        agent=agent,
        form=form,
        scopes=SCOPES,
        added=document,
        **{k: v for k, v in _list_context(me, agent, "").items() if k not in ("me", "agent", "scopes")},
    )


@pages.get("/agents/<agent_id>/knowledge/search")
@require_role("supervisor")
def studio_knowledge_search(agent_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    q = (request.args.get("q") or "").strip()[:500]
    words = knowledge.query_words(q)
    hits = knowledge.search(
        me.organization_id, q, agent_id=str(agent.id), section=_section(me, agent), limit=SEARCH_LIMIT
    )
    rows = [{"hit": hit, "relevant": knowledge.relevant(hit.score, words)} for hit in hits]
    return _render(
        "ai/studio/_knowledge_hits.html",
        me=me,
        agent=agent,
        q=q,
        words=words,
        rows=rows,
        tool_limit=TOOL_LIMIT,
    )


@pages.get("/agents/<agent_id>/knowledge/<document_id>")
@require_role("supervisor")
def studio_knowledge_row(agent_id: str, document_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    document = _document(me, agent, document_id)
    return _render("ai/studio/_knowledge_row.html", me=me, agent=agent, document=document, scopes=SCOPES)


@pages.get("/agents/<agent_id>/knowledge/<document_id>/edit")
@require_role("supervisor")
def studio_knowledge_edit(agent_id: str, document_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    document = _document(me, agent, document_id)
    values = {
        "title": document.title,
        "body": document.body,
        "scope": "shared" if document.agent_id is None else "agent",
    }
    form = {"values": values, "errors": {}}
    return _render(
        "ai/studio/_knowledge_edit.html", me=me, agent=agent, document=document, form=form, scopes=SCOPES
    )


@pages.post("/agents/<agent_id>/knowledge/<document_id>")
@require_role("supervisor")
def studio_knowledge_save(agent_id: str, document_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    document = _document(me, agent, document_id)
    values = _form_values()
    try:
        changes = DocumentUpdate.model_validate({"title": values["title"], "body": values["body"]})
    except ValidationError as error:
        form = {"values": values, "errors": field_errors(error, {"title": "title", "body": "body"})}
        return _render(
            "ai/studio/_knowledge_edit.html",
            422,
            me=me,
            agent=agent,
            document=document,
            form=form,
            scopes=SCOPES,
        )
    fields = {"title": changes.title, "body": changes.body, "agent_id": _scope_of(agent)}
    document = knowledge.update_document(me.organization_id, str(document.id), fields)
    return _render(
        "ai/studio/_knowledge_row.html", me=me, agent=agent, document=document, scopes=SCOPES, saved=True
    )


@pages.post("/agents/<agent_id>/knowledge/<document_id>/delete")
@require_role("supervisor")
def studio_knowledge_delete(agent_id: str, document_id: str) -> Response:
    me = signed_in()
    agent = _agent(me, agent_id)
    document = _document(me, agent, document_id)
    title = document.title
    knowledge.delete_document(me.organization_id, str(document.id))
    q = (request.form.get("q") or "").strip()[:500]
    return _render("ai/studio/_knowledge_list.html", **_list_context(me, agent, q), deleted=title)
