"""The planted decontamination case (tests/decontaminate/planted.py) as a fixture."""

from __future__ import annotations

import pytest

from tests.decontaminate.planted import make_planted


@pytest.fixture(scope="session")
def planted():
    return make_planted()
