"""The work directory of an out-of-core run: spilled stages, their markers, resumption.

Layout::

    WORK_DIR/
      manifest.json            what the run is (method, parameters, input fingerprint)
      sketch/                  stage 1, complete when sketch/_DONE.json exists
        docs.parquet           id, length, source, date, n_features (one row per document)
        arrays/NAME.bin        fixed-width per-document arrays for verification (raw, C order)
        keys/p-PPPP-CCCCC.arrow  candidate keys hashed into partitions by key bits
      prefix/                  (ngram, spotsigs) each document's prefix for the exchange:
        cut.npy, suffix.npy, unseen.npy, _DONE.json
      link/                    stage 2: one file per key partition (written atomically)
        p-PPPP.arrow, p-PPPP.json, _DONE.json
        p-PPPP.codes.bin, p-PPPP.shared.bin
                               (ngram, spotsigs) the partition's pair-count records
      exchange/                (ngram, spotsigs) the records summed per range of left
        r-RRRRR.arrow, r-RRRRR.json, _DONE.json   documents: one edge file per range
      components/              stage 3: forest, outside-window pairs and labels
        forest.arrow, outside.arrow, roots.npy, _DONE.json

A stage's ``_DONE.json`` records the key of the parameters it was computed with; a rerun
with ``resume=True`` skips every stage whose key still matches, redoes the rest, and
refuses a work directory that belongs to another input or method. Markers are written
last and atomically (temporary file + rename), so a killed stage is simply redone.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather

from neardup.errors import setting
from neardup.io.writers import atomic_path

__all__ = ["MappedArray", "WorkDir", "WorkDirError", "owned_by_work_dir", "stage_key"]

#: Changed with the layout of the stages' files (2: texts as raw bytes and offsets, read
#: with pread), so that a work directory of another layout is refused, not misread.
MANIFEST_VERSION = 2


class WorkDirError(ValueError):
    """The work directory cannot be used for this run (foreign, or used by another run)."""


def stage_key(*parts: Any) -> str:
    """A stage's completion key: its inputs and parameters as sorted JSON (a resumed run
    reuses a stage only when the key matches)."""
    return json.dumps(parts, sort_keys=True, default=str)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed into place."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_arrow(path: Path, table: pa.Table, *, durable: bool = True) -> None:
    """Write an Arrow IPC file atomically (uncompressed: these files are read once, soon).
    ``durable=False``: not flushed to disk yet; :meth:`WorkDir.finish` flushes the stage."""
    with atomic_path(path, durable=durable) as tmp:
        feather.write_feather(table, tmp, compression="uncompressed")


def read_arrow(path: Path) -> pa.Table:
    return feather.read_table(path, memory_map=False)


class MappedArray:
    """A saved ``.npy`` array whose header is read once and whose data is mapped anew on
    each :meth:`read`: the pages a read touches leave the process with the returned array,
    and no file stays open between reads (a run can hold thousands of range files)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, self.dtype = read_header(handle)
            self.offset = handle.tell()
        self.count = int(shape[0])

    def read(self) -> np.ndarray:
        # np.load(mmap_mode="r") per read parses the header and resolves the path each
        # time; at small memory limits a run makes tens of thousands of reads.
        with open(self.path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        return np.frombuffer(mapped, self.dtype, self.count, self.offset)


class WorkDir:
    """A run's work directory.

    Parameters
    ----------
    path : path
    identity : dict
        What the run reads and how it sketches (method sketch parameters, input
        fingerprint): a directory made for another identity is refused.
    resume : bool
        Reuse completed stages. Without it, a directory holding a previous run is
        refused rather than silently overwritten.
    """

    def __init__(self, path: str | os.PathLike, identity: dict[str, Any], *, resume: bool) -> None:
        self.path = Path(path)
        self.identity = identity
        self.path.mkdir(parents=True, exist_ok=True)
        manifest = self.path / "manifest.json"
        if manifest.exists():
            try:
                saved = json.loads(manifest.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise WorkDirError(
                    f"{setting('work_dir', 'work dir')} {self.path}: manifest.json is unreadable ({exc}); "
                    "use another (empty) work directory."
                ) from None
            if not resume:
                raise WorkDirError(
                    f"{setting('work_dir', 'work dir')} {self.path} holds a previous run; resume it "
                    f"({setting('resume', 'resume=True')}) or give an empty work directory."
                )
            if saved.get("version") != MANIFEST_VERSION:
                raise WorkDirError(
                    f"{setting('work_dir', 'work dir')} {self.path} was written by another version of neardup (work "
                    f"directory layout {saved.get('version')!r}, this one reads "
                    f"{MANIFEST_VERSION}); it cannot be resumed. Use another work directory"
                )
            if saved.get("identity") != _jsonable(identity):
                raise WorkDirError(
                    f"{setting('work_dir', 'work dir')} {self.path} belongs to a run with another input, method or "
                    "sketch parameters; it cannot be resumed for this one. Use another "
                    "work directory"
                )
        else:
            # The temporary files of outputs being written into the directory (an output
            # inside a new work directory) are not another run's files.
            leftovers = [p.name for p in self.path.iterdir() if not _output_temporary(p.name)]
            if leftovers:
                raise WorkDirError(
                    f"{setting('work_dir', 'work dir')} {self.path} is not empty and is not a neardup work directory "
                    f"(holds {', '.join(sorted(leftovers)[:3])}); give an empty or new directory"
                )
            atomic_write_text(
                manifest, json.dumps({"version": MANIFEST_VERSION, "identity": _jsonable(identity)},
                                     indent=1, sort_keys=True)
            )

    def stage_dir(self, name: str) -> Path:
        return self.path / name

    def done(self, stage: str, key: str) -> dict[str, Any] | None:
        """The stage's recorded facts if it completed with ``key``, else None."""
        marker = self.path / stage / "_DONE.json"
        if not marker.exists():
            return None
        try:
            saved = json.loads(marker.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return saved.get("facts") if saved.get("key") == key else None

    def start(self, stage: str, *, keep_files: bool = False) -> Path:
        """A stage directory ready to be (re)computed: its marker removed and, unless
        ``keep_files`` (a stage that resumes file by file), its contents cleared."""
        directory = self.path / stage
        if directory.exists() and not keep_files:
            shutil.rmtree(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "_DONE.json").unlink(missing_ok=True)
        return directory

    def start_keyed(self, stage: str, key: str) -> Path:
        """:meth:`start` for a stage that resumes file by file: the files an interrupted
        run left are kept only if it ran with the same ``key`` (stamped in ``_KEY``), so
        a run with other settings never mixes in their partitions."""
        stamp = self.path / stage / "_KEY"
        same = stamp.exists() and stamp.read_text() == key
        directory = self.start(stage, keep_files=same)
        stamp.write_text(key)
        return directory

    def finish(self, stage: str, key: str, facts: dict[str, Any]) -> None:
        """Mark the stage complete, after flushing its files to disk: a marker that
        survives a crash of the machine then never points at lost data."""
        for root, _, names in os.walk(self.path / stage):
            for name in names:
                with open(os.path.join(root, name), "rb") as handle:
                    os.fsync(handle.fileno())
        atomic_write_text(self.path / stage / "_DONE.json",
                           json.dumps({"key": key, "facts": facts}, sort_keys=True))


def _output_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file (or spill directory) of an output being
    written by :class:`~neardup.io.outputs.OutputSet`."""
    from neardup.io.outputs import is_output_temporary

    return is_output_temporary(name)


def owned_by_work_dir(work_dir: str | os.PathLike, path: str | os.PathLike) -> str | None:
    """What of work directory ``work_dir`` the file ``path`` would overwrite, in words
    ("the manifest manifest.json", ...), or None when ``path`` is not one of its files.

    A work directory owns its ``manifest.json`` and every directory in it (the stages'
    files, markers and spills); a new name directly inside it is free for an output.
    """
    root = Path(os.path.realpath(work_dir))
    target = Path(os.path.realpath(path))
    if target == root:
        return "the work directory itself"
    try:
        relative = target.relative_to(root)
    except ValueError:
        return None
    if len(relative.parts) > 1:
        return f"inside {relative.parts[0]}/, a directory of the run's stage files,"
    if relative.name == "manifest.json":
        return "the manifest (manifest.json)"
    return None


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))
