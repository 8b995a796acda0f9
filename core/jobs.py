"""Background jobs on Huey: SQLite storage under ``instance/`` by default, Redis in production, inline in
tests.

Areas declare jobs with :func:`job`; callers enqueue with ``some_job.enqueue(...)``. A job always runs in
the application context of the environment (live or sandbox) that enqueued it, so it reads the right store.
In the embedded mode the server process consumes the queue in two worker threads (``flask serve``);
with Redis, run ``flask --app app jobs worker`` as its own process.

The queue is made on first use, not by ``init_app``: Huey's import pulls in its Redis and PostgreSQL
storages (about 0.2 s), which a CLI command that queues nothing should not pay (docs/benchmarks.md).

The queue is named by ``JOBS_QUEUE_NAME`` (default: ``SOCKETIO_CHANNEL``, or ``agentdesk`` for the
default channel): a worker consumes only the queue of its own deployment, even on a Redis shared with
others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, current_app

from core import uow
from core.config import jobs_queue_name
from core.environments import ENVIRONMENTS, current_environment, in_environment

if TYPE_CHECKING:
    from huey import Huey
    from huey.consumer import Consumer

log = logging.getLogger(__name__)

_huey: Huey | None = None
_making = threading.Lock()
_app: Flask | None = None
_registry: dict[str, Job] = {}


class Job:
    def __init__(
        self, fn: Callable[..., Any], retries: int, retry_delay: int, name: str | None = None
    ) -> None:
        self.fn = fn
        self.name = name or f"{fn.__module__}.{fn.__qualname__}"
        self.retries = retries
        self.retry_delay = retry_delay
        self._task: Any = None

    def bind(self, huey: Huey) -> None:
        fn = self.fn

        def run_in_environment(environment: str, *args: Any, **kwargs: Any) -> Any:
            if _app is None:
                raise RuntimeError("jobs are not configured: create_app() first")
            with in_environment(_app, environment):
                return fn(*args, **kwargs)

        run_in_environment.__name__ = self.name.replace(".", "__")
        self._task = huey.task(retries=self.retries, retry_delay=self.retry_delay, name=self.name)(
            run_in_environment
        )

    def enqueue(self, *args: Any, **kwargs: Any) -> Any:
        """Queue the job once the caller's unit of work has committed (never when it rolls back), so the
        job reads what the caller wrote. Outside a transaction it is queued now and its result returned."""
        if self._task is None:
            queue()  # makes the queue and binds every declared job to it
        task, environment = self._task, current_environment()
        return uow.after_commit(lambda: task(environment, *args, **kwargs))

    def schedule(self, delay: float, *args: Any, **kwargs: Any) -> None:
        """Enqueue to run after ``delay`` seconds (after commit, like :meth:`enqueue`); inline mode (tests)
        runs it at once."""
        if queue().immediate:
            self.enqueue(*args, **kwargs)
            return
        task, environment = self._task, current_environment()
        uow.after_commit(lambda: task.schedule(args=(environment, *args), kwargs=kwargs, delay=delay))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def job(
    retries: int = 3, retry_delay: int = 10, name: str | None = None
) -> Callable[[Callable[..., Any]], Job]:
    """Declare a job. Its queue name is the function's dotted path unless ``name`` keeps an earlier one: a
    job queued before an upgrade is found by that name, so a job that moves module keeps its old name."""

    def decorator(fn: Callable[..., Any]) -> Job:
        declared = Job(fn, retries, retry_delay, name)
        _registry[declared.name] = declared
        if _huey is not None:
            declared.bind(_huey)
        return declared

    return decorator


_periodic: dict[str, tuple[Callable[[], Any], str]] = {}


def periodic(minute: str = "*", name: str | None = None) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """Run ``fn()`` in every environment on a cron minute pattern (``"*"``: every minute), from whichever
    consumer runs the queue. Useful for sweeps that repair what a dead worker left behind. ``name`` as
    for :func:`job`."""

    def decorator(fn: Callable[[], Any]) -> Callable[[], Any]:
        task_name = name or f"{fn.__module__}.{fn.__qualname__}"
        _periodic[task_name] = (fn, minute)
        if _huey is not None:
            _bind_periodic(_huey, task_name, fn, minute)
        return fn

    return decorator


def _bind_periodic(huey: Huey, name: str, fn: Callable[[], Any], minute: str) -> None:
    from huey import crontab  # with the queue, on first use (module docstring)

    def run_everywhere() -> None:
        if _app is None:
            return
        for environment in ENVIRONMENTS:
            with in_environment(_app, environment):
                fn()

    run_everywhere.__name__ = name.replace(".", "__")
    huey.periodic_task(crontab(minute=minute), name=name)(run_everywhere)


def queue_name(app: Flask) -> str:
    """``JOBS_QUEUE_NAME``, by default derived from ``SOCKETIO_CHANNEL`` (``core.config.jobs_queue_name``).
    Huey prefixes every key of the queue with it (``huey.redis.<name>``, ``huey.schedule.<name>``,
    ``huey.results.<name>``, the locks ``<name>.lock.*`` inside the results), so deployments sharing a
    Redis with different names never take each other's jobs."""
    return str(app.config.get("JOBS_QUEUE_NAME") or jobs_queue_name(app.config.get("SOCKETIO_CHANNEL")))


def _make_huey(app: Flask) -> Huey:
    from huey import MemoryHuey, RedisHuey, SqliteHuey  # on first use (module docstring)

    mode = app.config.get("JOBS_MODE", "embedded")
    name = queue_name(app)
    if mode == "inline":
        return MemoryHuey(name, immediate=True)
    if mode == "redis":
        # clean_name=False: Huey would otherwise strip everything but letters, digits and "_" from the
        # name, and "desk-1" and "desk1" (two distinct Socket.IO channels) would share one queue.
        return RedisHuey(name, url=app.config["REDIS_URL"], clean_name=False)
    # One file per instance folder, as before; deployments that share the folder still keep apart, since
    # the SQLite storage files every row under the queue's name.
    path = Path(app.config["INSTANCE_PATH"]) / "jobs.db"
    return SqliteHuey(name, filename=str(path))


def init_app(app: Flask) -> None:
    """Jobs of this app go to the queue chosen by ``JOBS_MODE`` (inline, embedded or redis), made when
    first used."""
    global _huey, _app
    with _making:
        _app, _huey = app, None
        for declared in _registry.values():
            declared._task = None  # bound again to this app's queue when it is made


def queue() -> Huey:
    """This app's queue, made (and every declared job bound to it) on first use."""
    global _huey
    with _making:
        if _huey is None:
            if _app is None:
                raise RuntimeError("jobs.init_app() has not run")
            huey = _make_huey(_app)
            for declared in _registry.values():
                declared.bind(huey)
            for name, (fn, minute) in _periodic.items():
                _bind_periodic(huey, name, fn, minute)
            _app.extensions["agentdesk.huey"] = huey
            _huey = huey
        return _huey


EMBEDDED_POLL_SECONDS = 0.25


def start_embedded_consumer(workers: int = 2) -> Consumer | None:
    huey = queue()
    if huey.immediate:
        return None
    # Polled every 0.25 s at most when idle (huey's default backs off to 10 s): simulated replies and the
    # events other processes relay to this server's Socket.IO clients (core.realtime) arrive promptly,
    # and an idle poll of the SQLite queue is one indexed read.
    from huey.consumer import Consumer  # with the queue, on first use (module docstring)

    class ThreadConsumer(Consumer):
        """A consumer that lives inside the web server process: no signal handlers of its own."""

        def _set_signal_handlers(self) -> None:
            return None

    consumer = ThreadConsumer(huey, workers=workers, worker_type="thread", max_delay=EMBEDDED_POLL_SECONDS)
    consumer.start()
    log.info("job consumer started with %d threads", workers)
    return consumer


def run_worker(workers: int) -> None:
    """Blocking consumer for a separate worker process (Redis mode), of this deployment's queue only."""
    consumer = queue().create_consumer(workers=workers, worker_type="thread")
    consumer.run()


def current_mode() -> str:
    return str(current_app.config.get("JOBS_MODE"))
