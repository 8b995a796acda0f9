"""Start-up: what every CLI command, test module and worker pays before doing anything.

Times, over ``BENCH_STARTUP_RUNS`` runs (default 5) in fresh processes on a throwaway instance folder:

- ``import app`` and ``create_app()`` (both environments built, no request served);
- ``flask --app app orgs list`` and ``flask --app app channels list --org <id>``, wall and CPU, with
  ``/usr/bin/time`` when it is there;
- the first ``GET /openapi.json`` (the document is written then, not at start-up).

Then the ten slowest imports by cumulative time from ``python -X importtime`` (one run).
``BENCH_ROOT`` measures another tree (an export of an earlier commit) with this venv.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("BENCH_ROOT") or PROJECT_ROOT)
RUNS = int(os.environ.get("BENCH_STARTUP_RUNS", "5"))
FLASK = [sys.executable, "-m", "flask", "--app", "app"]

CREATE_APP = """
import time
started = time.perf_counter()
import app
imported = time.perf_counter()
built = app.create_app()
created = time.perf_counter()
response = built.test_client().get("/openapi.json")
documented = time.perf_counter()
assert response.status_code == 200
print(f"{imported - started:.3f} {created - imported:.3f} {documented - created:.3f}")
"""


def _environment(instance: Path) -> dict[str, str]:
    environment = {**os.environ, "INSTANCE_PATH": str(instance), "LOG_LEVEL": "ERROR"}
    for name in ("DATABASE_URL", "SANDBOX_DATABASE_URL", "REDIS_URL", "JOBS_MODE"):
        environment.pop(name, None)
    return environment


def _timed(command: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, user + system CPU seconds) of one run, from /usr/bin/time -f when present."""
    time_binary = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    if time_binary is None:
        started = os.times()
        subprocess.run(command, cwd=ROOT, env=environment, check=True, capture_output=True)
        ended = os.times()
        return ended.elapsed - started.elapsed, (
            ended.children_user + ended.children_system - started.children_user - started.children_system
        )
    done = subprocess.run(
        [time_binary, "-f", "TIMED %e %U %S", *command],
        cwd=ROOT,
        env=environment,
        check=True,
        capture_output=True,
        text=True,
    )
    match = re.search(r"TIMED ([\d.]+) ([\d.]+) ([\d.]+)", done.stderr)
    assert match is not None, done.stderr
    return float(match.group(1)), float(match.group(2)) + float(match.group(3))


def _line(label: str, walls: list[float], cpus: list[float] | None = None) -> str:
    text = f"  {label:<34} median {statistics.median(walls):6.2f} s  min {min(walls):6.2f} s"
    if cpus:
        text += f"  (CPU median {statistics.median(cpus):.2f} s)"
    return text


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="agentdesk-bench-startup-") as folder:
        instance = Path(folder)
        environment = _environment(instance)
        subprocess.run([*FLASK, "setup"], cwd=ROOT, env=environment, check=True, capture_output=True)
        made = subprocess.run(
            [*FLASK, "orgs", "create", "--name", "Start-up", "--json"],
            cwd=ROOT,
            env=environment,
            check=True,
            capture_output=True,
            text=True,
        )
        organization_id = re.search(r'"organization_id": "([^"]+)"', made.stdout).group(1)  # type: ignore[union-attr]

        imports, creates, documents = [], [], []
        for _ in range(RUNS):
            done = subprocess.run(
                [sys.executable, "-c", CREATE_APP],
                cwd=ROOT,
                env=environment,
                check=True,
                capture_output=True,
                text=True,
            )
            imported, created, documented = (float(x) for x in done.stdout.split()[-3:])
            imports.append(imported)
            creates.append(created)
            documents.append(documented)
        commands = {
            "flask --app app orgs list": [*FLASK, "orgs", "list"],
            "flask --app app channels list": [*FLASK, "channels", "list", "--org", organization_id],
        }
        print(f"start-up of {ROOT} ({RUNS} runs each, load average {os.getloadavg()[0]:.2f})")
        print(_line("import app", imports))
        print(_line("create_app()", creates))
        print(_line("import app + create_app()", [a + b for a, b in zip(imports, creates, strict=True)]))
        print(_line("first GET /openapi.json", documents))
        for label, command in commands.items():
            runs = [_timed(command, environment) for _ in range(RUNS)]
            print(_line(label, [wall for wall, _ in runs], [cpu for _, cpu in runs]))

        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import app; app.create_app()"],
            cwd=ROOT,
            env=environment,
            check=True,
            capture_output=True,
            text=True,
        )
        rows = []
        for line in done.stderr.splitlines():
            parts = line.removeprefix("import time:").split("|")
            if len(parts) == 3 and parts[1].strip().isdigit():
                rows.append((int(parts[1]), parts[2].strip()))
        print("  slowest imports (cumulative, one run of python -X importtime):")
        for micros, name in sorted(rows, reverse=True)[:10]:
            print(f"    {micros / 1000:8.0f} ms  {name}")


if __name__ == "__main__":
    main()
