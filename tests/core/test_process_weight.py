"""What an app process carries: the heavy libraries that only a set-up step or a configured model needs
are not loaded at start-up (each app process and job worker would otherwise hold them; the performance
issue's budget is 200 MB a process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
import app
app.create_app()
heavy = [m for m in ("phonenumbers.geodata", "openai") if m in sys.modules]
print(json.dumps({"modules": heavy}))
"""


def test_a_new_app_process_loads_neither_the_geocoder_nor_the_model_client(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=PROJECT_ROOT,
        env={"PATH": "/usr/bin:/bin", "INSTANCE_PATH": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # the geocoder alone is about 100 MB resident, the model client about 20 MB
    assert found["modules"] == [], found
