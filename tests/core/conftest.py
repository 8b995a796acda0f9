from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from tests.support.probes import install_probes


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    # Probe routes can only be added to an app that has served nothing yet: ask for an app of our own.
    return {**app_config, "TEST_PROBES": True}


@pytest.fixture
def app(app: Flask) -> Iterator[Flask]:
    install_probes(app)
    yield app
