from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask

from tests.support.probes import install_probes


@pytest.fixture
def app(app: Flask) -> Iterator[Flask]:
    install_probes(app)
    yield app
