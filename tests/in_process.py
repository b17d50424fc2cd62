"""A command run in the test's own process (click's CliRunner), for the runs of a fault
drill that nothing kills or signals: the run after a kill, a refusal before any work.

A real ``python -m neardup`` process costs seconds of start-up (Python, neardup, numba's
cache, a model); the killed and signalled runs stay real processes, and each guarantee
keeps at least one real process in its drill (docs/testing.md, "Keeping the suite within
its time")."""

from __future__ import annotations

from click.testing import CliRunner, Result

from neardup.cli import main


def invoke(*args: object) -> Result:
    """``neardup ARGS`` in this process. An exception the command did not turn into an
    exit code fails the test, as a traceback on a real process's stderr would."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result
