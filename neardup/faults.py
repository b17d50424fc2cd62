"""Fault injection for the crash and retry tests: named checkpoints that do nothing unless a
test installs a hook.

Production code calls :func:`checkpoint` where a crash must leave its state whole: each
stage of ``neardup dedup`` and of its output set (``read``, ``checked``, ``clustered``,
``written``, ``committed``), each phase of an index add, delete, compact and bulk load
(``index-add-written``, ``bulk-link``, ...), and the Ray engine's linking and components
tasks (``ray-link``, ``ray-components``). With no hook installed a checkpoint costs a
function call, and nothing in this module reads the environment.

Tests install hooks explicitly:

* in their own process, ``with faults.installed(faults.kill_at("read")): ...``;
* in a subprocess or a Ray worker, through the plugin ``tests/fault_plugin/sitecustomize.py``:
  a test that puts that folder on the process's ``PYTHONPATH`` enables it, and it installs
  the hooks the process's environment names (see that module).

The hooks here are the ones the tests use: :func:`kill_at` (SIGKILL at one stage) and
:func:`kill_once` (SIGKILL at one stage in the first process to get there, which Ray must
then retry).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["checkpoint", "install", "installed", "kill_at", "kill_once", "remove"]

#: A hook: called with the name of every checkpoint passed.
Hook = Callable[[str], None]

_hooks: list[Hook] = []


def checkpoint(stage: str) -> None:
    """Pass the checkpoint ``stage``: call every installed hook with its name."""
    for hook in tuple(_hooks):
        hook(stage)


def install(hook: Hook) -> None:
    """Call ``hook`` at every checkpoint of this process from now on."""
    _hooks.append(hook)


def remove(hook: Hook) -> None:
    """Undo :func:`install` (a hook not installed is ignored)."""
    if hook in _hooks:
        _hooks.remove(hook)


@contextmanager
def installed(hook: Hook) -> Iterator[Hook]:
    """``hook`` installed for the duration of the block."""
    install(hook)
    try:
        yield hook
    finally:
        remove(hook)


def _kill_this_process() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def kill_at(stage: str) -> Hook:
    """A hook that SIGKILLs this process at the checkpoint ``stage``."""

    def hook(passed: str) -> None:
        if passed == stage:
            _kill_this_process()

    return hook


def kill_once(marker: str | os.PathLike) -> Hook:
    """The Ray retry drill: a hook that SIGKILLs its process at one checkpoint, once
    across all processes sharing the file system.

    The drill is armed while ``MARKER.armed`` exists; its text names the checkpoint
    (``ray-link`` when empty). The first process to reach that checkpoint creates
    ``MARKER`` (atomically, so only one does) and kills itself; later ones find it and go
    on, so the task that was killed succeeds when it is retried."""
    marker = Path(marker)
    armed = marker.with_name(marker.name + ".armed")

    def hook(passed: str) -> None:
        try:
            stage = armed.read_text().strip() or "ray-link"
        except FileNotFoundError:  # not armed
            return
        if stage != passed:
            return
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        _kill_this_process()

    return hook
