"""neardup.faults: checkpoints do nothing until a test installs a hook; the kill hooks, and
the plugin that installs them in the processes a test starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from neardup import faults
from tests.fault_plugin import KILL_ENV, RAY_FAULT_ENV, plugin_env

ROOT = Path(__file__).resolve().parent.parent


def test_checkpoint_calls_installed_hooks_only_while_installed():
    seen: list[str] = []
    faults.checkpoint("read")  # no hook: nothing happens
    with faults.installed(seen.append):
        faults.checkpoint("read")
        faults.checkpoint("written")
    faults.checkpoint("committed")
    assert seen == ["read", "written"]
    faults.remove(seen.append)  # removing a hook not installed is ignored


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in (KILL_ENV, RAY_FAULT_ENV)}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), base.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", code], env=plugin_env({**base, **env}),
                          capture_output=True, text=True, timeout=120, check=False)


_PASS = "from neardup.faults import checkpoint; checkpoint('read'); print('after read')"


def test_plugin_kills_at_the_named_checkpoint_only():
    assert _python(_PASS, **{KILL_ENV: "read"}).returncode == -signal.SIGKILL
    other = _python(_PASS, **{KILL_ENV: "written"})
    assert other.returncode == 0 and other.stdout == "after read\n"
    plain = _python(_PASS)  # the plugin loaded, no variable set: no hook
    assert plain.returncode == 0 and plain.stdout == "after read\n"


def test_kill_once_kills_the_first_process_only(tmp_path):
    marker = tmp_path / "killed"
    code = "from neardup.faults import checkpoint; checkpoint('ray-link'); print('linked')"
    unarmed = _python(code, **{RAY_FAULT_ENV: str(marker)})
    assert unarmed.returncode == 0 and not marker.exists()
    marker.with_name("killed.armed").touch()  # empty: the linking tasks
    assert _python(code, **{RAY_FAULT_ENV: str(marker)}).returncode == -signal.SIGKILL
    assert marker.exists()
    again = _python(code, **{RAY_FAULT_ENV: str(marker)})  # the retry succeeds
    assert again.returncode == 0 and again.stdout == "linked\n"
