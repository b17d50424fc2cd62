"""mypy over the public API, with the configuration in pyproject.toml's [tool.mypy]: the
package's front door, the Python API, its errors and the index's public class."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_finds_nothing_in_the_public_api():
    pytest.importorskip("mypy", reason="mypy is not installed (it is in the test extra: pip install -e '.[test]')")
    # The cache lives outside the checkout (nothing to ignore in git) and makes reruns fast.
    cache = Path(tempfile.gettempdir()) / "neardup-mypy-cache"
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
