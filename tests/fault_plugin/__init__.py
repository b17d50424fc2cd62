"""Helpers for tests that inject faults into the processes they start (see
``sitecustomize.py`` in this folder, the plugin those processes load)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.fault_plugin.sitecustomize import KILL_ENV, PAUSE_ENV, RAY_FAULT_ENV

__all__ = ["KILL_ENV", "PAUSE_ENV", "PLUGIN_DIR", "RAY_FAULT_ENV", "plugin_env", "with_plugin"]

#: The folder to put on a process's PYTHONPATH to load the plugin.
PLUGIN_DIR = Path(__file__).resolve().parent


def with_plugin(pythonpath: str | None) -> str:
    """``pythonpath`` with the plugin's folder first."""
    return os.pathsep.join(filter(None, [str(PLUGIN_DIR), pythonpath]))


def plugin_env(env: dict[str, str]) -> dict[str, str]:
    """A copy of ``env`` whose PYTHONPATH loads the plugin."""
    return {**env, "PYTHONPATH": with_plugin(env.get("PYTHONPATH"))}
