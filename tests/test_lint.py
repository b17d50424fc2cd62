"""`ruff check` over the repository, with the rules in pyproject.toml's [tool.ruff]: no
undefined names, unused imports or syntax errors anywhere (package, tests, bench, scripts)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    """The ruff command: the module in this interpreter, else a ruff on PATH."""
    try:
        import ruff  # noqa: F401  (ships the binary; `python -m ruff` runs it)
    except ImportError:
        binary = shutil.which("ruff")
        if binary is None:
            pytest.skip("ruff is not installed (it is in the test extra: pip install -e '.[test]')")
        return [binary]
    return [sys.executable, "-m", "ruff"]


def test_ruff_finds_nothing():
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", str(ROOT)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"ruff check found problems:\n{result.stdout}{result.stderr}"
