"""The outputs of one run, as a set: checked before any work, renamed into place together.

A run that writes several files (clusters, pairs, de-duplicated corpus, report) should
leave either all of its new files or none of them, and should fail *before* reading its
input when one of them cannot be written. :class:`OutputSet` does both:

1. :meth:`OutputSet.prepare` (on entering the ``with`` block) checks every output before
   any work: a known extension, no two outputs on the same file, no output on an input
   file (paths resolved, symbolic and hard links included), the target not a directory,
   its directory creatable and writable (proved by creating the temporary file the output
   will be written to, beside the target), and enough free space for an estimate of the
   size. Leftovers of killed runs (temporary files whose process is gone) are removed.
2. Each output is written to its temporary file (:meth:`OutputSet.write_table`,
   :meth:`~OutputSet.write_records`, :meth:`~OutputSet.write_text`).
3. :meth:`OutputSet.commit` flushes every temporary file to disk, then renames them over
   their targets one after the other. If a rename fails, the targets already replaced get
   their previous content back (kept as hard links until the end), so the set is all new
   or all old. Leaving the block without committing (an error, Ctrl-C, SIGTERM turned into
   an exception by the caller) deletes the temporary files and any directory
   :meth:`prepare` created; previous files are untouched.

Limits: the renames of step 3 are one system call per output, so a SIGKILL or power loss
*during* them (microseconds) can leave some outputs new and others old; the previous
versions are then still on disk as ``.NAME.neardup-PID-XXXX.bak`` beside them until the
next run with those outputs cleans them up.

The stages pass :func:`neardup.faults.checkpoint` (``read``, ``checked``, ``clustered``,
``written``, ``committed``), where tests kill the process to check what an abrupt end
leaves behind; a checkpoint does nothing otherwise.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from neardup.errors import OutputError
from neardup.io.writers import OUTPUT_EXTENSIONS, output_kind, records_to_file, table_to_file

__all__ = ["OutputSet", "is_output_temporary"]

_TAG = ".neardup-"
_LEFTOVER = re.compile(r"\.neardup-(\d+)-[0-9a-f]+\.(?:tmp|bak)")


def is_output_temporary(name: str) -> bool:
    """Whether a file name is an :class:`OutputSet` temporary file, backup or spill
    directory (``.NAME.neardup-PID-XXXX.tmp``, ``.bak``, ``.tmp.spill-...``)."""
    return name.startswith(".") and _LEFTOVER.search(name) is not None


def _size(number: int) -> str:
    value = float(number)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{number} bytes"  # pragma: no cover


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (ours counts as alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _same_file(a: Path, b: Path) -> bool:
    """True if ``a`` and ``b`` name one file: equal resolved paths, or (both existing) the
    same inode, which also catches hard links."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class _Output:
    name: str
    given: Path
    target: Path  # resolved: symbolic links point on to the file that is replaced
    kind: str
    estimate: int
    temporary: Path | None = None
    backup: Path | None = None
    replaced: bool = False


class OutputSet:
    """The output files of one run, checked up front and committed together.

    Parameters
    ----------
    inputs : sequence of path-like, default ()
        The run's inputs: an output on one of them is refused.

    Examples
    --------
    >>> outputs = OutputSet(inputs=["corpus.jsonl"])  # doctest: +SKIP
    >>> outputs.add("--clusters-out", "clusters.parquet")  # doctest: +SKIP
    >>> with outputs:  # checks every path before any work  # doctest: +SKIP
    ...     table = ...  # the work
    ...     outputs.write_table("--clusters-out", table)
    ...     outputs.commit()
    """

    def __init__(self, inputs: Sequence[str | os.PathLike] = ()) -> None:
        self.inputs = [Path(p) for p in inputs]
        self._outputs: dict[str, _Output] = {}
        self._created: list[Path] = []
        self._committed = False

    def __len__(self) -> int:
        return len(self._outputs)

    def __contains__(self, name: str) -> bool:
        return name in self._outputs

    def add(
        self,
        name: str,
        path: str | os.PathLike,
        *,
        kinds: Iterable[str] | None = None,
        estimate: int = 0,
    ) -> None:
        """Register an output under ``name`` (how the user gave it, e.g. a CLI flag).

        ``kinds`` restricts the formats (default: those :func:`~neardup.io.write_table`
        writes); ``"json"`` stands for a ``.json`` file written by :meth:`write_text`.
        ``estimate`` is the expected size in bytes, checked against free space.
        """
        given = Path(os.path.expanduser(os.fspath(path)))
        accepted = tuple(kinds) if kinds is not None else None
        lower = given.name.lower()
        kind = ("json" if lower.endswith(".json") else "html" if lower.endswith(".html")
                else output_kind(given))
        if kind is None or (accepted is not None and kind not in accepted):
            suffixes = (
                OUTPUT_EXTENSIONS
                if accepted is None
                else tuple(s for s in OUTPUT_EXTENSIONS + (".json", ".html")
                           if (s.lstrip(".") in accepted))
            )  # fmt: skip
            listed = ", ".join(suffixes)
            raise OutputError(
                f"{name}: cannot tell which format to write {os.fspath(path)!r} in; the path "
                f"must end in one of {listed}."
            )
        self._outputs[name] = _Output(
            name, given, Path(os.path.realpath(given)), kind, max(0, int(estimate))
        )

    # ------------------------------------------------------------------ checks

    def __enter__(self) -> OutputSet:
        self.prepare()
        return self

    def __exit__(self, *exc_info) -> None:
        if not self._committed:
            self.discard()

    def prepare(self) -> None:
        """Check every output and reserve its temporary file; OutputError on the first
        problem, after undoing what was reserved."""
        try:
            self._check_paths()
            for out in self._outputs.values():
                self._reserve(out)
            self._check_space()
        except BaseException:
            self.discard()
            raise

    def _check_paths(self) -> None:
        outputs = list(self._outputs.values())
        for k, out in enumerate(outputs):
            if out.target.is_dir():
                raise OutputError(
                    f"{out.name}: {os.fspath(out.given)!r} is a directory; give a file name."
                )
            for other in outputs[:k]:
                if _same_file(out.given, other.given):
                    raise OutputError(
                        f"{other.name} and {out.name} name the same file "
                        f"({os.fspath(out.target)!r}); one would overwrite the other. Give "
                        "each output its own path."
                    )
            for source in self.inputs:
                if _same_file(out.given, source):
                    raise OutputError(
                        f"{out.name}: {os.fspath(out.given)!r} is the input "
                        f"{os.fspath(source)!r}; writing it would replace the input. Give the "
                        "output another path."
                    )

    def _reserve(self, out: _Output) -> None:
        directory = out.target.parent
        missing = []
        probe = directory
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        if not probe.is_dir():
            raise OutputError(
                f"{out.name}: cannot create the directory of {os.fspath(out.given)!r}: "
                f"{os.fspath(probe)!r} is a file, not a directory."
            )
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:
                continue
            except OSError as exc:
                raise self._os_error(out, exc, f"cannot create the directory {str(folder)!r}")
            self._created.append(folder)
        self._remove_leftovers(out.target)
        temporary = directory / f".{out.target.name}{_TAG}{os.getpid()}-{secrets.token_hex(4)}.tmp"
        # Recorded before it exists: a signal between creating the file and recording it
        # would otherwise leave it behind (discard tolerates a missing file).
        out.temporary = temporary
        try:
            fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except OSError as exc:
            out.temporary = None
            raise self._os_error(out, exc, f"cannot write in {str(directory)!r}")
        os.close(fd)

    @staticmethod
    def _os_error(out: _Output, exc: OSError, what: str) -> OutputError:
        reason = exc.strerror or str(exc)
        hint = {
            errno.EROFS: " The file system is read-only; choose a writable directory.",
            errno.EACCES: " Choose a directory you can write to.",
            errno.EPERM: " Choose a directory you can write to.",
            errno.ENOSPC: " Free some space or choose another disk.",
        }.get(exc.errno or 0, "")
        return OutputError(f"{out.name}: {what} ({reason}), so {os.fspath(out.given)!r} cannot "
                           f"be written.{hint}")

    @staticmethod
    def _remove_leftovers(target: Path) -> None:
        """Delete temporary files and spill directories of killed runs beside ``target``."""
        prefix = f".{target.name}{_TAG}"
        try:
            entries = list(os.scandir(target.parent))
        except OSError:
            return
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            match = _LEFTOVER.match(entry.name, len(target.name) + 1)
            if match is None or process_alive(int(match.group(1))):
                continue
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def _check_space(self) -> None:
        needed: dict[int, list[_Output]] = {}
        for out in self._outputs.values():
            if out.estimate:
                needed.setdefault(os.stat(out.target.parent).st_dev, []).append(out)
        for outs in needed.values():
            total = sum(o.estimate for o in outs)
            directory = outs[0].target.parent
            free = shutil.disk_usage(directory).free
            if free < total:
                names = ", ".join(o.name for o in outs)
                raise OutputError(
                    f"{names}: not enough free space in {str(directory)!r}: "
                    f"{_size(free)} free, about {_size(total)} needed (estimated from the "
                    "inputs' size). Free some space or choose another disk."
                )

    # ------------------------------------------------------------------ writing

    def temporary(self, name: str) -> Path:
        """The temporary file ``name`` is written to until :meth:`commit`."""
        out = self._outputs[name]
        if out.temporary is None:
            raise RuntimeError("OutputSet: call prepare() (enter the with block) first.")
        return out.temporary

    def kind(self, name: str) -> str:
        """The format of output ``name`` (``"parquet"``, ``"jsonl"``, ..., ``"json"``)."""
        return self._outputs[name].kind

    def write_table(self, name: str, table: pa.Table) -> None:
        """Write an Arrow table to output ``name``'s temporary file, in its format."""
        table_to_file(self.temporary(name), self._outputs[name].kind, table, name=name)

    def write_records(self, name: str, records: Iterable[dict]) -> int:
        """Write dict records to output ``name``'s temporary file; returns their number."""
        return records_to_file(self.temporary(name), self._outputs[name].kind, records, name=name)

    def write_text(self, name: str, text: str) -> None:
        """Write ``text`` (UTF-8) to output ``name``'s temporary file."""
        self.temporary(name).write_text(text, encoding="utf-8")

    # ------------------------------------------------------------------ commit

    def commit(self) -> None:
        """Rename every temporary file over its target; on failure, restore the targets
        already replaced and re-raise."""
        outputs = list(self._outputs.values())
        for out in outputs:
            with open(self.temporary(out.name), "rb") as handle:
                os.fsync(handle.fileno())
        try:
            for out in outputs:
                if os.path.lexists(out.target):
                    out.backup = out.temporary.with_suffix(".bak")
                    try:
                        os.link(out.target, out.backup)
                    except OSError:  # no hard links here: keep a copy instead
                        shutil.copy2(out.target, out.backup)
                os.replace(out.temporary, out.target)
                out.replaced = True
        except BaseException:
            self._roll_back(outputs)
            raise
        self._committed = True
        for out in outputs:
            if out.backup is not None:
                out.backup.unlink(missing_ok=True)
        for directory in {out.target.parent for out in outputs}:
            _fsync_dir(directory)

    def _roll_back(self, outputs: list[_Output]) -> None:
        for out in reversed(outputs):
            if out.replaced:
                if out.backup is not None:
                    os.replace(out.backup, out.target)
                else:
                    out.target.unlink(missing_ok=True)
                out.replaced = False
            elif out.backup is not None:
                out.backup.unlink(missing_ok=True)
            out.backup = None

    def discard(self) -> None:
        """Delete the temporary files and the directories :meth:`prepare` created (when
        empty); targets are left as they were."""
        for out in self._outputs.values():
            if out.temporary is not None and not out.replaced:
                out.temporary.unlink(missing_ok=True)
                for spill in out.temporary.parent.glob(f"{out.temporary.name}.spill-*"):
                    shutil.rmtree(spill, ignore_errors=True)
        for folder in reversed(self._created):
            try:
                folder.rmdir()
            except OSError:
                pass
        self._created = []
