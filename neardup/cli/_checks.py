"""What every command besides ``dedup``, ``index`` and ``serve`` shares to fail cleanly.

* :func:`command_errors`: the block a command runs its work in. Library errors become one
  line naming the flags (not Python parameters); an ``OSError`` names its file; Ctrl-C
  and SIGTERM exit with 130 and 143 without a traceback, after the ``with`` blocks inside
  (an :class:`~neardup.io.outputs.OutputSet`) have deleted their temporary files.
* :func:`output_set`: a command's output files as one
  :class:`~neardup.io.outputs.OutputSet`, so they are checked before any work (format
  from the extension, writable directory, not an input, not each other, symbolic and
  hard links included) and written as a set.
* :func:`given`: whether the user typed an option (not its default), for the rule that a
  field the user named must exist in the input.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import click

from neardup.cli.errors import cli_message, spell_flag
from neardup.errors import NeardupError, spelled_as

__all__ = ["EXIT_INTERRUPTED", "EXIT_TERMINATED", "NOTHING_WRITTEN", "exit_for_signal", "check_directory_output", "command_errors",
           "given", "message", "output_set", "tuning_text"]

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that transactions roll back and temporary
    files are deleted (a BaseException: library code catching Exception lets it pass)."""


@contextmanager
def termination_as_exception() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (SIGINT already raises
    KeyboardInterrupt), so ``with``/``finally`` blocks delete temporary files."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: What an interrupted command that writes its outputs as a set can say of them.
NOTHING_WRITTEN = "; no output was written, previous files are as they were."


def exit_for_signal(stop: BaseException, said: str) -> NoReturn:
    """One line for Ctrl-C (exit 130) or SIGTERM (exit 143), ``said`` after it, no
    traceback."""
    what, code = (("interrupted", EXIT_INTERRUPTED) if isinstance(stop, KeyboardInterrupt)
                  else ("terminated (SIGTERM)", EXIT_TERMINATED))
    click.echo(f"neardup: {what}{said}", err=True)
    sys.exit(code)


_TEMPORARY = re.compile(r"^(.*/)?\.(.+)\.neardup-\d+-[0-9a-f]+\.(?:tmp|bak)$")


def message(exc: BaseException, flags: dict[str, str] | None = None,
            words: Sequence[tuple[str, str]] = ()) -> str:
    """A library error in the command line's words: this command's ``flags`` first, then
    :func:`neardup.cli.errors.cli_message`'s, then the literal ``words``."""
    text = cli_message(exc, _speller(flags or {}))
    for old, new in words:
        text = text.replace(old, new)
    return text


def _speller(flags: dict[str, str]):
    def spell(name: str) -> str | None:
        return flags.get(name) or spell_flag(name)

    return spell


@contextmanager
def command_errors(flags: dict[str, str] | None = None,
                   catch: tuple[type[BaseException], ...] = (),
                   words: Sequence[tuple[str, str]] = ()) -> Iterator[None]:
    """Run a command's work: errors in the user's words, interrupts without a traceback.

    Parameters
    ----------
    flags : dict, optional
        Parameter names this command spells with a flag of its own (e.g.
        ``{"label_field": "--label-field"}``), on top of :data:`neardup.cli.errors.FLAGS`.
    catch : tuple of exception types
        Further exception types reported as a plain error (e.g. ``TypeError``).
    words : sequence of (str, str)
        Literal replacements turning a library message's Python wording into the
        command's (e.g. ``("split_field=..., --split-field", "--split-field")``).
    """
    try:
        with spelled_as(_speller(flags or {})), termination_as_exception():
            yield
    except click.ClickException:
        raise
    except (KeyboardInterrupt, Terminated) as stop:
        exit_for_signal(stop, NOTHING_WRITTEN)
    except (NeardupError, ValueError, *catch) as exc:
        raise click.ClickException(message(exc, flags, words)) from exc
    except RecursionError as exc:  # e.g. JSON nested thousands deep in a file we parse
        raise click.ClickException(
            "an input is nested too deeply to be read (JSON deeper than Python's recursion "
            "limit); no output was written, previous files are as they were."
        ) from exc
    except OSError as exc:
        # A temporary file of an OutputSet is named after its target: name the target.
        target = _TEMPORARY.sub(r"\1\2", str(exc.filename)) if exc.filename else ""
        where = f"{target}: " if target else ""
        raise click.ClickException(
            f"{where}{exc.strerror or exc}; no output was written, previous files are as they "
            "were."
        ) from exc


def output_set(inputs: Iterable[str | os.PathLike | None],
               outputs: Sequence[tuple[str, str | os.PathLike | None, tuple[str, ...] | None]]):
    """An :class:`~neardup.io.outputs.OutputSet` of ``(flag, path, kinds)`` (path None:
    not asked for; kinds None: the table formats), refusing an output on any of
    ``inputs``. Enter it (``with``) before any work: that is when the paths are checked."""
    from neardup.io.outputs import OutputSet

    result = OutputSet([Path(p) for p in inputs if p is not None])
    for flag, path, kinds in outputs:
        if path is not None:
            result.add(flag, path, kinds=kinds)
    return result


def check_directory_output(flag: str, directory: str | os.PathLike,
                           inputs: Iterable[str | os.PathLike | None]) -> None:
    """Before any work, for an output that is a directory (``train --out``): not a file,
    holding none of ``inputs``, and creatable and writable (proved by creating a probe
    beside it, removed at once). Raises :class:`~neardup.errors.OutputError`."""
    import tempfile

    from neardup.errors import OutputError

    target = Path(os.path.realpath(os.path.expanduser(os.fspath(directory))))
    given_path = os.fspath(directory)
    if target.exists() and not target.is_dir():
        raise OutputError(f"{flag}: {given_path!r} is a file; give a directory (it holds "
                          "several files).")
    for source in inputs:
        if source is None:
            continue
        resolved = Path(os.path.realpath(source))
        if resolved == target or target in resolved.parents:
            raise OutputError(
                f"{flag}: the input {os.fspath(source)!r} is inside {given_path!r}, where the "
                "run writes its files; it could be replaced. Give the output another "
                "directory, or move the input."
            )
    probe = target
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(f"{flag}: cannot create {given_path!r}: {os.fspath(probe)!r} is a "
                          "file, not a directory.")
    try:
        Path(tempfile.mkdtemp(prefix=".neardup-probe-", dir=probe)).rmdir()
    except OSError as exc:
        raise OutputError(f"{flag}: cannot write in {os.fspath(probe)!r} "
                          f"({exc.strerror or exc}), so {given_path!r} cannot be written. "
                          "Choose a directory you can write to.") from None


def given(name: str) -> bool:
    """Whether the current command's option ``name`` was given by the user."""
    from click.core import ParameterSource

    context = click.get_current_context(silent=True)
    if context is None:
        return False
    return context.get_parameter_source(name) not in (
        None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)



def tuning_text(tuning) -> str:
    """What :meth:`neardup.eval.tuning.TuningResult.save` writes, as text, for an
    :class:`~neardup.io.outputs.OutputSet` to write."""
    return tuning.to_json()
