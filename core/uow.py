"""The unit of work: services change rows and flush; the boundary commits once.

A request, a job, a periodic sweep and a CLI command are each one unit of work. Service functions add,
change and flush rows and publish events; they never commit. The boundary that called them commits once
when the work succeeded (:func:`commit`) and otherwise lets the session roll back, so a refused request
leaves nothing behind. Boundaries:

- API and page routes: :class:`core.openapi.AgentDeskOpenAPI` commits after the view returned, inside
  Flask's error handling (a failing commit is answered in the area's error format);
- jobs, periodic sweeps and CLI blocks: :func:`core.environments.in_environment` commits on a clean exit;
- CLI commands on the live app: wrapped by ``app.py`` when they are registered.

A read never commits: when nothing was flushed, changed or published the transaction is just closed.

Where durability before an outside call is the point, a service calls :func:`checkpoint` with a name
from :data:`CHECKPOINTS`; ``docs/architecture.md`` lists each with its reason.

Work that must only happen once the data is durable (events to listeners, jobs on the queue) waits in the
session until after the commit (:func:`after_commit`) and is dropped on rollback.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import click
from flask import has_app_context
from flask.cli import ScriptInfo
from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session
from sqlalchemy.sql.elements import TextClause

from core.db import db

log = logging.getLogger(__name__)

_WROTE = "agentdesk.wrote"
_AFTER_COMMIT = "agentdesk.after_commit"

# Every place where a service commits before its boundary, and why (docs/architecture.md repeats them).
CHECKPOINTS: dict[str, str] = {
    "send.pending": "an outbound message is stored as pending before the provider is called, so a crash "
    "between the provider's answer and our commit can be reconciled instead of sending twice",
    "send.accepted": "the provider's acceptance is stored before statuses that raced it are applied",
    "send.refused": "a provider's refusal is stored (the message kept as failed, with the reason) before the "
    "error is answered, so the request's rollback cannot erase what was sent to the provider",
    "idempotency.claim": "an Idempotency-Key is reserved before the work so a concurrent duplicate sees it",
    "idempotency.release": "a claimed key is released or answered even though the work itself failed",
    "webhook.item": "each item of a provider delivery is stored on its own, so one bad item never "
    "drops the good ones of its batch",
    "broadcast.progress": "a broadcast records each paced batch, so a resumed worker never sends twice",
    "campaign.progress": "a campaign (core/campaigns.py) records each claim and each outcome, so a resumed "
    "worker never acts on a recipient twice",
    "presence.connection": "a Socket.IO connection is registered before the socket is told it is online",
    "ticket.number": "a per-organization counter row is created before the ticket that takes a number",
}


def _mark(session: Session) -> None:
    session.info[_WROTE] = True


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, flush_context: Any) -> None:
    _mark(session)


@event.listens_for(Session, "do_orm_execute")
def _after_execute(state: ORMExecuteState) -> None:
    if state.is_insert or state.is_update or state.is_delete:
        _mark(state.session)
    elif isinstance(state.statement, TextClause):
        verb = state.statement.text.lstrip().split(None, 1)[0].upper() if state.statement.text.strip() else ""
        if verb in {"INSERT", "UPDATE", "DELETE", "MERGE"}:
            _mark(state.session)


_DELIVERING = "agentdesk.delivering"


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.get_nested_transaction() is not None:
        return  # a SAVEPOINT was released (SQLAlchemy fires this event for it too): the unit goes on
    session.info.pop(_WROTE, None)
    callbacks = session.info.pop(_AFTER_COMMIT, None) or ()
    # Followers often read (which opens a new transaction); what they enqueue in turn must still go out
    # now, not wait for a commit that may never come.
    session.info[_DELIVERING] = True
    try:
        for callback in callbacks:
            try:
                callback()
            except Exception:  # one failing follower must not keep the others from running
                log.exception("after-commit callback %r failed", callback)
    finally:
        session.info.pop(_DELIVERING, None)


@event.listens_for(Session, "after_soft_rollback")
def _after_rollback(session: Session, previous_transaction: Any) -> None:
    if previous_transaction.parent is None:  # the outermost transaction: nothing of it happened
        session.info.pop(_WROTE, None)
        session.info.pop(_AFTER_COMMIT, None)


def has_work(session: Session | None = None) -> bool:
    """True when the unit of work changed or published anything that a commit would make durable."""
    session = session or db.session()
    return bool(
        session.new
        or session.dirty
        or session.deleted
        or session.info.get(_WROTE)
        or session.info.get(_AFTER_COMMIT)
    )


def defers() -> bool:
    """Whether :func:`after_commit` would wait for a commit now (false: it would run the callback at once)."""
    if not has_app_context():
        return False
    session = db.session()
    return bool(session.in_transaction() and not session.info.get(_DELIVERING))


def after_commit(callback: Callable[[], Any]) -> Any:
    """Run ``callback`` once the current unit of work has committed; never when it rolls back.

    Outside a transaction (no app context, or called from another after-commit callback) it runs now and
    its result is returned.
    """
    if not has_app_context():
        return callback()
    session = db.session()
    if session.info.get(_DELIVERING) or not session.in_transaction():
        return callback()
    db.session().info.setdefault(_AFTER_COMMIT, []).append(callback)
    return None


def commit() -> None:
    """The boundary's one commit; a unit of work that only read ends without a COMMIT."""
    session = db.session()
    if has_work(session):
        session.commit()
    elif session.in_transaction():
        session.rollback()


def rollback() -> None:
    db.session.rollback()


def checkpoint(name: str) -> None:
    """Commit now, before the boundary, for one of the documented reasons in :data:`CHECKPOINTS`."""
    if name not in CHECKPOINTS:
        raise ValueError(f"undocumented checkpoint {name!r}: add it to core.uow.CHECKPOINTS and the docs")
    db.session.commit()


def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` as one unit of work: commit when it returns, roll back when it raises."""
    try:
        result = fn(*args, **kwargs)
    except BaseException:
        rollback()
        raise
    commit()
    return result


def command(cli_command: click.Command) -> click.Command:
    """Make a CLI command (and every subcommand of a group) one unit of work in the live app's context."""
    if isinstance(cli_command, click.Group):
        for sub in cli_command.commands.values():
            command(sub)
        return cli_command
    callback = cli_command.callback
    if callback is None or getattr(callback, "_unit_of_work", False):
        return cli_command

    @functools.wraps(callback)
    def run_as_unit(*args: Any, **kwargs: Any) -> Any:
        app = click.get_current_context().ensure_object(ScriptInfo).load_app()
        with app.app_context():
            return run(callback, *args, **kwargs)

    run_as_unit._unit_of_work = True  # type: ignore[attr-defined]
    cli_command.callback = run_as_unit
    return cli_command
