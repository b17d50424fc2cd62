"""Writers for tables and corpora: atomic, deterministic, chosen by extension.

Every output is written to a temporary file beside its destination and renamed into
place only when complete (:func:`atomic_path`), so a failed or interrupted write never
leaves a partial file and never clobbers an existing one. The same input always gives
the same bytes: JSON Lines keep column (or key) order, gzip headers carry no timestamp
or file name, and Parquet files carry no time-dependent metadata.
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import decimal
import gzip
import io
import json
import math
import os
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

__all__ = [
    "OUTPUT_EXTENSIONS",
    "atomic_path",
    "output_kind",
    "records_to_file",
    "table_to_file",
    "write_records",
    "write_table",
]

_KINDS = (
    (".jsonl.gz", "jsonl.gz"),
    (".jsonl", "jsonl"),
    (".parquet", "parquet"),
    (".csv", "csv"),
    (".tsv", "tsv"),
)
_ACCEPTED = "a path ending in " + ", ".join(repr(suffix) for suffix, _ in reversed(_KINDS))
_CHUNK_ROWS = 10_000
_PARQUET_COMPRESSION = "zstd"


@contextmanager
def atomic_path(path: str | os.PathLike, *, durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place if the block succeeds.

    Parameters
    ----------
    path : str or os.PathLike
        The final destination. Missing parent directories are created.
    durable : bool, default True
        Flush the file to disk before the rename. Scratch files written by the thousand
        (the corpus stage's spills) pass False and are flushed together when their stage
        is marked complete.

    Yields
    ------
    pathlib.Path
        A path that does not exist yet, in the same directory (so the final
        ``os.replace`` is atomic on POSIX file systems). The block must create it.

    Notes
    -----
    On success the temporary file is flushed to disk and renamed over ``path``. If
    the block raises, the temporary file is deleted, ``path`` is left as it was, and
    the exception propagates.

    Examples
    --------
    >>> with atomic_path("out/report.json") as tmp:  # doctest: +SKIP
    ...     tmp.write_text("{}")
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield temporary
        if not temporary.exists():
            raise FileNotFoundError(
                f"atomic_path: the block did not create {str(temporary)!r}, so there is "
                f"nothing to move to {str(target)!r}."
            )
        if durable:
            with open(temporary, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _output_kind(caller: str, path: str | os.PathLike) -> str:
    name = Path(path).name.lower()
    for suffix, kind in _KINDS:
        if name.endswith(suffix):
            return kind
    raise ValueError(f"{caller}: parameter 'path' must be {_ACCEPTED}; got {os.fspath(path)!r}.")


def write_table(path: str | os.PathLike, table: pa.Table) -> None:
    """Write an Arrow table atomically, in the format its extension names.

    Parameters
    ----------
    path : str or os.PathLike
        Destination: ``.parquet`` (zstd-compressed), ``.jsonl``, ``.jsonl.gz``,
        ``.csv`` or ``.tsv``.
    table : pyarrow.Table
        The data. JSON Lines objects and CSV/TSV headers follow the column order.

    Notes
    -----
    Writing the same table twice gives byte-identical files. In JSON Lines, dates and
    times become ISO 8601 strings, bytes become base64 and NaN/infinity become null. In
    CSV/TSV, null is an empty field, booleans are ``true``/``false``, and lists and
    structs are JSON.

    Raises
    ------
    ValueError
        For an unsupported extension. TypeError if ``table`` is not a pyarrow.Table.
    """
    kind = _output_kind("write_table", path)
    _check_table(table)
    with atomic_path(path) as temporary:
        table_to_file(temporary, kind, table)


def output_kind(path: str | os.PathLike) -> str | None:
    """The output format a path's extension names (``"parquet"``, ``"jsonl"``,
    ``"jsonl.gz"``, ``"csv"``, ``"tsv"``), or None when no writer takes it."""
    name = Path(path).name.lower()
    for suffix, kind in _KINDS:
        if name.endswith(suffix):
            return kind
    return None


#: The extensions :func:`write_table` and :func:`write_records` accept, for messages.
OUTPUT_EXTENSIONS = tuple(suffix for suffix, _ in reversed(_KINDS))


def table_to_file(temporary: Path, kind: str, table: pa.Table) -> None:
    """The body of :func:`write_table`: write ``table`` as ``kind`` to ``temporary``, in
    place (no rename). :class:`~neardup.io.outputs.OutputSet` renames it later."""
    _check_table(table)
    if kind == "parquet":
        pq.write_table(table, temporary, compression=_PARQUET_COMPRESSION)
        return
    with _open_text(temporary, kind) as handle:
        if kind in ("jsonl", "jsonl.gz"):
            for batch in table.to_batches(max_chunksize=_CHUNK_ROWS):
                for record in batch.to_pylist():
                    handle.write(_json_line(record))
        else:
            writer = _csv_writer(handle, kind)
            writer.writerow(table.column_names)
            for batch in table.to_batches(max_chunksize=_CHUNK_ROWS):
                for record in batch.to_pylist():
                    writer.writerow([_cell(value) for value in record.values()])


def write_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Write dict records (e.g. the kept documents from ``iter_records``) atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination: ``.jsonl`` / ``.jsonl.gz`` (streamed, each record as given, key
        order kept), ``.parquet``, ``.csv`` or ``.tsv`` (one column per key, in order of
        first appearance; a key a record lacks is null / an empty field).
    records : iterable of dict
        Consumed once. For Parquet/CSV/TSV, records are spilled in chunks of 10,000 to
        Arrow files in a temporary directory beside ``path``, so memory stays bounded;
        a key must keep compatible types throughout (integers may widen to floats).

    Returns
    -------
    int
        The number of records written.

    Raises
    ------
    ValueError
        For an unsupported extension, or (Parquet/CSV/TSV) a key whose values have
        incompatible types. TypeError for a record that is not a dict. No output is
        left behind in either case.
    """
    kind = _output_kind("write_records", path)
    with atomic_path(path) as temporary:
        return records_to_file(temporary, kind, records)


def records_to_file(temporary: Path, kind: str, records: Iterable[dict]) -> int:
    """The body of :func:`write_records`: write ``records`` as ``kind`` to ``temporary``,
    in place (no rename); spill files go to a temporary directory beside it."""
    if kind in ("jsonl", "jsonl.gz"):
        count = 0
        with _open_text(temporary, kind) as handle:
            for record in records:
                _check_record(record, count)
                handle.write(_json_line(record))
                count += 1
        return count
    temporary = Path(temporary)
    with tempfile.TemporaryDirectory(
        dir=temporary.parent, prefix=f"{temporary.name}.spill-"
    ) as spill_dir:
        chunks, count = _spill(records, Path(spill_dir))
        schema = _unify([schema for _, schema in chunks])
        if kind == "parquet":
            with pq.ParquetWriter(temporary, schema, compression=_PARQUET_COMPRESSION) as writer:
                for file, _ in chunks:
                    writer.write_table(_conform(_load(file), schema))
        else:
            with _open_text(temporary, kind) as handle:
                writer = _csv_writer(handle, kind)
                if schema.names:
                    writer.writerow(schema.names)
                for file, _ in chunks:
                    for record in _conform(_load(file), schema).to_pylist():
                        writer.writerow([_cell(value) for value in record.values()])
    return count


def _check_table(table: Any) -> None:
    if not isinstance(table, pa.Table):
        raise TypeError(
            f"write_table: parameter 'table' must be a pyarrow.Table; got {type(table).__name__}."
        )


def _check_record(record: Any, index: int) -> None:
    if not isinstance(record, dict):
        raise TypeError(
            f"write_records: parameter 'records' must yield dicts; record {index} is a "
            f"{type(record).__name__}."
        )


def _spill(records: Iterable[dict], directory: Path) -> tuple[list[tuple[Path, pa.Schema]], int]:
    chunks: list[tuple[Path, pa.Schema]] = []
    buffer: list[dict] = []
    count = 0

    def flush() -> None:
        # Columns from every record of the chunk: pa.Table.from_pylist would take the
        # keys of the first record only and drop the rest.
        names = list(dict.fromkeys(key for record in buffer for key in record))
        try:
            table = pa.Table.from_pydict({n: [r.get(n) for r in buffer] for n in names})
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            first = count - len(buffer)
            raise ValueError(
                f"write_records: records {first}-{count - 1} cannot form a table ({exc}). A "
                "key must hold one type in every record; write .jsonl to keep records "
                "exactly as they are."
            ) from None
        file = directory / f"{len(chunks):06d}.arrow"
        with ipc.new_file(file, table.schema) as writer:
            writer.write_table(table)
        chunks.append((file, table.schema))
        buffer.clear()

    for record in records:
        _check_record(record, count)
        buffer.append(record)
        count += 1
        if len(buffer) == _CHUNK_ROWS:
            flush()
    if buffer or not chunks:
        flush()
    return chunks, count


def _unify(schemas: list[pa.Schema]) -> pa.Schema:
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(
            f"write_records: the records' fields change type between records ({exc}). A "
            "key must hold one type in every record; write .jsonl to keep records exactly "
            "as they are."
        ) from None


def _load(file: Path) -> pa.Table:
    with pa.memory_map(str(file)) as source:
        return ipc.open_file(source).read_all()


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


@contextmanager
def _open_text(path: Path, kind: str) -> Iterator[TextIO]:
    if kind == "jsonl.gz":
        with open(path, "wb") as raw:
            # filename="" and mtime=0 keep the gzip header free of run-dependent bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as compressed:
                with io.TextIOWrapper(compressed, encoding="utf-8", newline="") as handle:
                    yield handle
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        yield handle


def _csv_writer(handle: TextIO, kind: str):
    dialect = "excel" if kind == "csv" else "excel-tab"
    return csv.writer(handle, dialect=dialect, lineterminator="\n")


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, np.generic):
        return value.item() if not isinstance(value, np.datetime64) else str(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"cannot write a value of type {type(value).__name__} as JSON")


def _without_nan(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _without_nan(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_nan(item) for item in value]
    return value


def _dumps(value: Any) -> str:
    # The standard library on purpose: its output does not depend on optional packages.
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default
    )


def _json_line(record: dict) -> str:
    try:
        return _dumps(record) + "\n"
    except ValueError:  # NaN or infinity, which JSON cannot express
        return _dumps(_without_nan(record)) + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    if isinstance(value, (int, decimal.Decimal)):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return _dumps(_without_nan(value))
