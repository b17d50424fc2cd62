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

Outputs given as URLs (``s3://``, ``gs://``, ``memory://``: :mod:`neardup.io.locations`)
follow the same steps on an object store, which has no rename: :meth:`prepare` checks
the bucket and the credential by writing an empty temporary key
``.NAME.neardup-PID-XXXX.tmp`` beside the target; each output is written to a local
staging file; :meth:`commit` first uploads every staged file to its temporary key (no
final key changes while any upload can fail), then, output after output in the order
they were added, keeps the previous object as a ``.bak`` key and copies the temporary
key over the target (a server-side copy: each object appears whole or not at all), and
last deletes the temporary and backup keys. A copy that fails restores the targets
already replaced from their backups. So a run that fails before the commit leaves no
final key; the window in which some targets are new and others old is that of the
server-side copies (one request per output) instead of the renames; a run killed in it
leaves the ``.bak`` and ``.tmp`` keys, which no later run removes by itself.

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
from neardup.io.locations import Location, check_location, is_url, locate, storage_error
from neardup.io.writers import OUTPUT_EXTENSIONS, batches_to_file, output_kind, records_to_file, table_to_file

__all__ = ["OutputDirectory", "OutputSet", "is_output_temporary", "write_part"]

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
    backup: Path | str | None = None  # a remote output's: a key
    replaced: bool = False
    remote: Location | None = None  # an output on an object store (a URL)
    staging: str | None = None  # its temporary key, beside the target


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

    def __init__(self, inputs: Sequence[str | os.PathLike] = (), *,
                 storage_options: dict | None = None) -> None:
        self.storage_options = storage_options
        self.inputs = [Path(p) for p in inputs if not is_url(p)]
        self._remote_inputs = {locate(p, storage_options).key: os.fspath(p)
                               for p in inputs if is_url(p)}
        self._outputs: dict[str, _Output] = {}
        self._created: list[Path] = []
        self._staging_dir: Path | None = None
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
        given = Path(os.path.expanduser(locate(path).path))  # file:// removed
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
        if is_url(path):
            remote = locate(path, self.storage_options)
            self._outputs[name] = _Output(name, Path(remote.name), Path(remote.name), kind,
                                          max(0, int(estimate)), remote=remote)
            return
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
            if out.remote is not None:
                self._check_remote(out, outputs[:k])
                continue
            if out.target.is_dir():
                raise OutputError(
                    f"{out.name}: {os.fspath(out.given)!r} is a directory; give a file name."
                )
            for other in outputs[:k]:
                if other.remote is None and _same_file(out.given, other.given):
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

    def _check_remote(self, out: _Output, earlier: list[_Output]) -> None:
        """The checks of :meth:`_check_paths` for an output on an object store, and the
        bucket and credential (:func:`~neardup.io.locations.check_location`)."""
        location = out.remote
        for other in earlier:
            if other.remote is not None and other.remote.key == location.key:
                raise OutputError(
                    f"{other.name} and {out.name} name the same object ({location.url!r}); "
                    "one would overwrite the other. Give each output its own path.")
        if location.key in self._remote_inputs:
            raise OutputError(
                f"{out.name}: {location.url!r} is the input "
                f"{self._remote_inputs[location.key]!r}; writing it would replace the input. "
                "Give the output another path.")
        check_location(location, out.name, output=True)
        try:
            is_dir = location.is_dir()
        except Exception as exc:  # noqa: BLE001 - every storage failure is reported alike
            raise storage_error(exc, location, out.name, output=True) from None
        if is_dir:
            raise OutputError(f"{out.name}: {location.url!r} is a directory; give a file name.")

    def _reserve_remote(self, out: _Output) -> None:
        """Prove the target's bucket writable by creating the temporary key beside it, and
        give the output a local staging file."""
        import tempfile

        location = out.remote
        key = location.sibling(f".{location.name}{_TAG}{os.getpid()}-{secrets.token_hex(4)}.tmp")
        out.staging = key.path
        try:
            location.fs.pipe_file(key.path, b"")
        except Exception as exc:  # noqa: BLE001 - every storage failure is reported alike
            out.staging = None
            raise storage_error(exc, location, out.name, output=True) from None
        if self._staging_dir is None:
            self._staging_dir = Path(tempfile.mkdtemp(prefix="neardup-outputs-"))
        out.temporary = self._staging_dir / f"{len(list(self._staging_dir.iterdir()))}-{location.name}"
        out.temporary.touch()

    def _reserve(self, out: _Output) -> None:
        if out.remote is not None:
            self._reserve_remote(out)
            return
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
            if out.estimate and out.remote is None:
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

    def write_batches(self, name: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
        """Write Arrow record batches of ``schema`` to Parquet output ``name``'s temporary
        file; returns their rows."""
        return batches_to_file(self.temporary(name), self._outputs[name].kind, schema, batches)

    def write_text(self, name: str, text: str) -> None:
        """Write ``text`` (UTF-8) to output ``name``'s temporary file."""
        self.temporary(name).write_text(text, encoding="utf-8")

    # ------------------------------------------------------------------ commit

    def commit(self) -> None:
        """Rename every temporary file over its target (outputs on object stores: upload,
        then copy over the target); on failure, restore the targets already replaced and
        re-raise."""
        outputs = list(self._outputs.values())
        for out in outputs:
            if out.remote is not None:
                self._upload(out)
                continue
            with open(self.temporary(out.name), "rb") as handle:
                os.fsync(handle.fileno())
        try:
            for out in outputs:
                if out.remote is not None:
                    self._replace_remote(out)
                    continue
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
            if out.remote is not None:
                self._remove_keys(out.remote, out.staging, out.backup)
                continue
            if out.backup is not None:
                out.backup.unlink(missing_ok=True)
        for directory in {out.target.parent for out in outputs if out.remote is None}:
            _fsync_dir(directory)
        self._remove_staging()

    def _upload(self, out: _Output) -> None:
        try:
            out.remote.fs.put_file(os.fspath(self.temporary(out.name)), out.staging)
        except Exception as exc:  # noqa: BLE001 - every storage failure is reported alike
            raise storage_error(exc, out.remote, out.name, output=True) from None

    def _replace_remote(self, out: _Output) -> None:
        fs, target = out.remote.fs, out.remote.path
        try:
            if fs.exists(target):
                out.backup = out.staging[: -len(".tmp")] + ".bak"
                fs.copy(target, out.backup)
            fs.copy(out.staging, target)
        except Exception as exc:  # noqa: BLE001 - every storage failure is reported alike
            raise storage_error(exc, out.remote, out.name, output=True) from None
        out.replaced = True

    @staticmethod
    def _remove_keys(location: Location, *keys) -> None:
        for key in keys:
            if key is None:
                continue
            try:
                location.fs.rm_file(key)
            except Exception:  # noqa: BLE001 - a leftover key is named in docs/storage.md
                pass

    def _roll_back(self, outputs: list[_Output]) -> None:
        for out in reversed(outputs):
            if out.remote is not None:
                if out.replaced:
                    if out.backup is not None:
                        out.remote.fs.copy(out.backup, out.remote.path)
                    else:
                        self._remove_keys(out.remote, out.remote.path)
                    out.replaced = False
                self._remove_keys(out.remote, out.backup)
                out.backup = None
                continue
            if out.replaced:
                if out.backup is not None:
                    os.replace(out.backup, out.target)
                else:
                    out.target.unlink(missing_ok=True)
                out.replaced = False
            elif out.backup is not None:
                out.backup.unlink(missing_ok=True)
            out.backup = None

    def _remove_staging(self) -> None:
        if self._staging_dir is not None:
            shutil.rmtree(self._staging_dir, ignore_errors=True)
            self._staging_dir = None

    def discard(self) -> None:
        """Delete the temporary files and the directories :meth:`prepare` created (when
        empty); targets are left as they were."""
        for out in self._outputs.values():
            if out.remote is not None:
                self._remove_keys(out.remote, out.staging)
                out.staging = None
                continue
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
        self._remove_staging()


def write_part(location: Location, table: pa.Table) -> None:
    """Write ``table`` as one Parquet part file at ``location`` (a local path or a key
    on an object store), from whichever process holds it (a Ray worker)."""
    import pyarrow.parquet as pq

    if location.local:
        pq.write_table(table, location.path)
        return
    with location.open("wb") as handle:
        pq.write_table(table, handle)


class OutputDirectory:
    """An output that is a directory of part files written by many processes (the Ray
    engine's ``--clusters-out``, ``--pairs-out`` and ``--out``), committed as a whole.

    The parts are written under a temporary directory beside the target
    (``.NAME.neardup-PID-XXXX.tmp``; :meth:`part` names them). On the local disk,
    :meth:`commit` renames it over the target (the previous directory is moved aside
    first, then deleted). On an object store, which has no directories and no rename,
    :meth:`commit` copies each part over its final key, then deletes the final keys the
    new output does not have, then the temporary keys: a run that fails before the
    commit leaves the final prefix as it was; one killed during it can leave a mix of new
    and old parts, and the temporary keys. :meth:`discard` deletes the temporary parts.
    """

    def __init__(self, name: str, path: str | os.PathLike,
                 storage_options: dict | None = None) -> None:
        self.name = name
        self.final = locate(path, storage_options)
        self.temporary = self.final.sibling(
            f".{self.final.name}{_TAG}{os.getpid()}-{secrets.token_hex(4)}.tmp")

    def prepare(self) -> None:
        """Check the target (a missing bucket or a refused credential) and create the
        temporary directory; OutputError naming the output otherwise."""
        if not self.final.local:
            check_location(self.final, self.name, output=True)
            return
        try:
            Path(self.temporary.path).mkdir(parents=True)
        except OSError as exc:
            raise OutputError(f"{self.name}: cannot create {self.temporary.path!r} beside "
                              f"{self.final.url!r} ({exc.strerror or exc}).") from None

    def part(self, name: str) -> Location:
        """Where part file ``name`` is written before the commit."""
        return self.temporary.child(name)

    def commit(self) -> None:
        if self.final.local:
            _replace_directory(Path(self.temporary.path), Path(self.final.path))
            return
        fs = self.final.fs
        try:
            names = [_relative(part, self.temporary) for part in self.temporary.files()]
            for name in names:
                fs.copy(self.temporary.child(name).path, self.final.child(name).path)
            for old in self.final.files():
                if _relative(old, self.final) not in names:
                    fs.rm_file(old.path)
        except Exception as exc:  # noqa: BLE001 - every storage failure is reported alike
            raise storage_error(exc, self.final, self.name, output=True) from None
        self.discard()

    def discard(self) -> None:
        if self.temporary.local:
            shutil.rmtree(self.temporary.path, ignore_errors=True)
            return
        try:
            self.temporary.fs.rm(self.temporary.path, recursive=True)
        except Exception:  # noqa: BLE001 - nothing written yet, or already removed
            pass


def _relative(location: Location, directory: Location) -> str:
    return location.path[len(directory.path.rstrip("/")) + 1:]


def _replace_directory(temporary: Path, final: Path) -> None:
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
        os.replace(temporary, final)
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    else:
        os.replace(temporary, final)
