"""The fault-injection plugin of neardup's crash tests, for the processes they start.

Python imports ``sitecustomize`` at start-up from the first folder of ``sys.path`` that has
one, so a test enables this plugin in a subprocess or a Ray worker by putting this folder
on its ``PYTHONPATH`` (:func:`tests.fault_plugin.plugin_env`). The plugin then installs
the :mod:`neardup.faults` hooks that the process's environment names:

* ``NEARDUP_TEST_KILL_AT=<stage>``: SIGKILL at that checkpoint
  (:func:`neardup.faults.kill_at`);
* ``NEARDUP_RAY_FAULT_ONCE=<marker path>``: the Ray retry drill
  (:func:`neardup.faults.kill_once`);
* ``NEARDUP_TEST_PAUSE_AT=<stage>:<marker path>``: at that checkpoint, create the marker
  and sleep (up to two minutes), so that a test can signal the process at a known point.

neardup itself reads none of these variables: without this plugin they do nothing.
"""

import os

KILL_ENV = "NEARDUP_TEST_KILL_AT"
RAY_FAULT_ENV = "NEARDUP_RAY_FAULT_ONCE"
PAUSE_ENV = "NEARDUP_TEST_PAUSE_AT"


def pause_at(stage: str, marker: str):
    """A hook: at checkpoint ``stage``, create ``marker`` and sleep (a signal interrupts
    the sleep, and its handler runs there)."""
    import time
    from pathlib import Path

    def hook(name: str) -> None:
        if name == stage:
            Path(marker).touch()
            time.sleep(120)

    return hook


def install_from_environment(environ=os.environ) -> None:
    """Install the hooks ``environ`` asks for (none when it names none)."""
    stage, marker, pause = environ.get(KILL_ENV), environ.get(RAY_FAULT_ENV), environ.get(PAUSE_ENV)
    if not stage and not marker and not pause:
        return
    from neardup import faults

    if stage:
        faults.install(faults.kill_at(stage))
    if marker:
        faults.install(faults.kill_once(marker))
    if pause:
        at, _, path = pause.partition(":")
        faults.install(pause_at(at, path))


install_from_environment()
