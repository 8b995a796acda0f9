"""Where the machine's CPU went during a benchmark phase: CPU seconds by component, read from ``/proc``.

On a machine where the load generator, nginx, the app processes, the job worker, PostgreSQL and Redis
share the cores, the rate a benchmark reaches is bounded by the CPU each message costs all of them
together. :class:`CpuMeter` reads every process's user + system time before and after a phase and sums
it by component, so a figure such as "messages/s" can be told apart into "CPU ms per message" for each
part. Processes that exit during the phase (the sender pool) are counted through the benchmark's own
``RUSAGE_CHILDREN``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _component(pid: int, command: str) -> str:
    if pid == os.getpid():
        return "bench (Socket.IO client)"
    if "gunicorn" in command:
        return "app processes (gunicorn)"
    if " jobs worker" in command or command.endswith("jobs worker"):
        return "job worker"
    if command.startswith("postgres") or "postgres:" in command:
        return "PostgreSQL"
    if "redis-server" in command:
        return "Redis"
    if "nginx" in command:
        return "nginx"
    if "py-spy" in command:
        return "profiler (py-spy)"
    return "other"


def _snapshot() -> dict[str, float]:
    """CPU seconds by component over every live process, plus reaped children of this process."""
    totals: dict[str, float] = defaultdict(float)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # the process ended between listing and reading
        fields = stat[stat.rindex(")") + 2 :].split()
        seconds = (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
        totals[_component(int(entry.name), command or stat.split()[1])] += seconds
    own = os.times()
    totals["load generator (senders)"] += own.children_user + own.children_system
    return totals


class CpuMeter:
    """``with CpuMeter() as meter: ...`` then ``meter.per_item(n)``: CPU ms per item by component."""

    def __enter__(self) -> CpuMeter:
        self.before = _snapshot()
        return self

    def __exit__(self, *_: object) -> None:
        self.after = _snapshot()

    def seconds(self) -> dict[str, float]:
        names = set(self.before) | set(self.after)
        spent = {name: self.after.get(name, 0.0) - self.before.get(name, 0.0) for name in names}
        return {name: value for name, value in spent.items() if value > 0.005}

    def report(self, items: int, wall_seconds: float) -> list[str]:
        """Lines: CPU ms per item for each component, the total, and the cores it kept busy."""
        spent = sorted(self.seconds().items(), key=lambda pair: -pair[1])
        total = sum(value for _, value in spent)
        lines = [f"    {name:<28} {value * 1000 / max(items, 1):6.2f} ms" for name, value in spent]
        lines.append(
            f"    {'all':<28} {total * 1000 / max(items, 1):6.2f} ms   "
            f"({total / max(wall_seconds, 1e-9):.2f} of {os.cpu_count()} cores busy)"
        )
        return lines
