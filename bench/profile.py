"""Sampling profiles of server processes while a benchmark loads them (py-spy, a PyPI wheel in the dev
extra): ``BENCH_PROFILE=<folder>`` makes ``bench ingest`` and ``bench single_get`` record every app
worker (and the job worker) during their measured phase, write one collapsed-stack file per process
(``<name>.folded``, readable by flamegraph tools and speedscope) and print where the wall time went.

py-spy samples from outside the process (no instrumentation in the request path), so the figures of the
run it profiles stay comparable. It needs ptrace rights over the processes (root, or
``kernel.yama.ptrace_scope=0``); without them the benchmark runs unprofiled and says so.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import TracebackType

# Threads parked in these frames wait for work rather than serve it: left out of the shares.
_IDLE = ("wait (threading.py", "select (selectors.py", "accept (socket.py", "poll (selectors.py")
_LINE = re.compile(r":\d+\)$")
_PROJECT = ("blueprints/", "core/", "app.py")


def folder() -> Path | None:
    value = os.environ.get("BENCH_PROFILE")
    return Path(value) if value else None


class Sampler:
    """Records each ``{name: pid}`` with ``py-spy record`` from entering to leaving the block."""

    def __init__(self, pids: dict[str, int], out: Path, rate: int = 100) -> None:
        self.pids, self.out, self.rate = pids, out, rate
        self.children: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Sampler:
        spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        if not Path(spy).exists():
            print("profile: py-spy is not installed (pip install -e '.[dev]'); running unprofiled")
            return self
        self.out.mkdir(parents=True, exist_ok=True)
        for name, pid in self.pids.items():
            command = [spy, "record", "-p", str(pid), "-r", str(self.rate), "--nonblocking"]
            command += ["--format", "raw", "-o", str(self.out / f"{name}.folded")]
            self.children.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for child in self.children:
            child.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
        for child in self.children:
            try:
                _, stderr = child.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                continue
            if child.returncode not in (0, -signal.SIGINT) and b"ermission" in stderr:
                print("profile: py-spy was refused ptrace rights; running unprofiled")
        for path in sorted(self.out.glob("*.folded")):
            print(summary(path))


def shares(path: Path) -> tuple[int, Counter[str], Counter[str]]:
    """(busy samples, inclusive samples per frame, self samples per frame) of one collapsed-stack file."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    busy = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or (any(idle in stack for idle in _IDLE) and "handle" not in stack):
            continue
        samples = int(count)
        busy += samples
        frames = [_LINE.sub(")", frame) for frame in stack.split(";")]
        for frame in set(frames):
            inclusive[frame] += samples
        own[frames[-1]] += samples
    return busy, inclusive, own


def summary(path: Path, top: int = 18) -> str:
    busy, inclusive, own = shares(path)
    if not busy:
        return f"profile {path.name}: no busy samples"
    lines = [f"profile {path.stem}: {busy} busy samples; inclusive share of the project's frames, then self"]
    ours = [
        (f, n)
        for f, n in inclusive.most_common()
        if "/blueprints/" in f or "(core/" in f or "blueprints/" in f
    ]
    lines += [f"  {100 * n / busy:5.1f}%  {frame[:110]}" for frame, n in ours[:top]]
    lines += ["  self:"] + [f"  {100 * n / busy:5.1f}%  {frame[:110]}" for frame, n in own.most_common(8)]
    return "\n".join(lines)
