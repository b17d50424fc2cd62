"""Writers for tables and corpora: atomic, deterministic, chosen by extension.

Every output is written to a temporary file beside its destination and renamed into
place only when complete (:func:`atomic_path`), so a failed or interrupted write never
leaves a partial file and never clobbers an existing one. The same input always gives
the same bytes: JSON Lines keep column (or key) order, gzip headers carry no timestamp
or file name, and Parquet files carry no time-dependent metadata.
"""

from __future__ import annotations

import base64
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

from neardup.errors import OutputError, short_repr

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

__all__ = [
    "ANNOTATION_FIELDS",
    "OUTPUT_EXTENSIONS",
    "annotated_records",
    "annotation_columns",
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
#: The columns ``--annotate`` adds to every record (dolma's way: mark, remove nothing).
ANNOTATION_FIELDS = ("cluster", "cluster_size", "is_representative", "duplicate_of")
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
    structs are JSON. CSV quotes a value holding a comma, a double quote, a carriage
    return or a line feed (RFC 4180); TSV has no quoting and refuses a value holding a
    tab, a carriage return or a line feed.

    Raises
    ------
    ValueError
        For an unsupported extension, or (TSV) a value holding a tab or a line break.
        TypeError if ``table`` is not a pyarrow.Table.
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


def table_to_file(temporary: Path, kind: str, table: pa.Table, *, name: str | None = None) -> None:
    """The body of :func:`write_table`: write ``table`` as ``kind`` to ``temporary``, in
    place (no rename). :class:`~neardup.io.outputs.OutputSet` renames it later; ``name``
    (how the user named the output, e.g. ``--clusters-out``) starts error messages."""
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
            row = _DelimitedRows(handle, kind, name, "write_table")
            row.write(table.column_names, header=True)
            for batch in table.to_batches(max_chunksize=_CHUNK_ROWS):
                for record in batch.to_pylist():
                    row.write([_cell(value) for value in record.values()])


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
        a key holding values of several types (integers and strings, say) is written
        as text in CSV/TSV (which have no types) and as a string column in Parquet (with
        a warning naming it; integers still widen to floats). JSON Lines keep NaN and
        infinity as the ``NaN``/``Infinity`` tokens Python's json reads; CSV/TSV write
        them as those words. TSV has no quoting: a value holding a tab or a line break
        is refused (write CSV, which quotes it).

    Returns
    -------
    int
        The number of records written.

    Raises
    ------
    ValueError
        For an unsupported extension, or (TSV) a value holding a tab or a line break.
        TypeError for a record that is not a dict. No output is left behind in either
        case.
    """
    kind = _output_kind("write_records", path)
    with atomic_path(path) as temporary:
        return records_to_file(temporary, kind, records)


def records_to_file(temporary: Path, kind: str, records: Iterable[dict], *,
                    name: str | None = None) -> int:
    """The body of :func:`write_records`: write ``records`` as ``kind`` to ``temporary``,
    in place (no rename); spill files go to a temporary directory beside it. ``name``
    (how the user named the output, e.g. ``--out``) starts error messages and warnings."""
    if kind in ("jsonl", "jsonl.gz"):
        count = 0
        with _open_text(temporary, kind) as handle:
            for record in records:
                _check_record(record, count)
                # A NaN or infinity read from the input is written back as the NaN /
                # Infinity token it was read from (as Python's json does), not as null.
                try:
                    line = _json_line(record, keep_nan=True)
                except RecursionError:
                    raise OutputError(
                        f"{name or 'write_records'}: record {count + 1:,} holds values nested "
                        "too deeply to be written as JSON."
                    ) from None
                handle.write(line)
                count += 1
        return count
    temporary = Path(temporary)
    with tempfile.TemporaryDirectory(
        dir=temporary.parent, prefix=f"{temporary.name}.spill-"
    ) as spill_dir:
        if kind == "parquet":
            mixed: dict[str, set[str]] = {}
            chunks, count = _spill(records, Path(spill_dir), _typed_table(mixed))
            schema = _unify([schema for _, schema in chunks], mixed)
            with pq.ParquetWriter(temporary, schema, compression=_PARQUET_COMPRESSION) as writer:
                for file, _ in chunks:
                    writer.write_table(_conform(_load(file), schema))
            if mixed:
                _warn_mixed(name, mixed)
        else:
            # CSV and TSV have no types: every value is written as its text, so a field
            # holding integers in some records and strings in others is no problem.
            chunks, count = _spill(records, Path(spill_dir), _text_table)
            names = list(dict.fromkeys(n for _, schema in chunks for n in schema.names))
            with _open_text(temporary, kind) as handle:
                row = _DelimitedRows(handle, kind, name, "write_records")
                if names:
                    row.write(names, header=True)
                for file, _ in chunks:
                    table = _load(file)
                    columns = [table.column(n).to_pylist() if n in table.column_names
                               else [None] * table.num_rows for n in names]
                    for cells in zip(*columns):
                        row.write(["" if c is None else c for c in cells])
    return count


def batches_to_file(temporary: Path, kind: str, schema: pa.Schema,
                    batches: Iterable[pa.RecordBatch]) -> int:
    """Write Arrow record ``batches`` of ``schema`` as ``kind`` (Parquet only) to
    ``temporary``, in place; returns the number of rows. The columns keep their Arrow
    types: no row becomes a Python object."""
    if kind != "parquet":
        raise ValueError(f"batches_to_file: writes Parquet, not {kind}")
    count = 0
    with pq.ParquetWriter(temporary, schema, compression=_PARQUET_COMPRESSION) as writer:
        for batch in batches:
            writer.write_batch(batch)
            count += batch.num_rows
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


def _text_table(names: list[str], buffer: list[dict]) -> pa.Table:
    """A chunk of records for CSV/TSV: every value already rendered as its cell text."""
    return pa.Table.from_pydict({
        n: pa.array([None if n not in r else _record_cell(r[n]) for r in buffer], pa.string())
        for n in names
    })


def _typed_table(mixed: dict[str, set[str]]):
    """A chunk of records for Parquet: each column typed by Arrow; a column whose values
    have no common type (integers and strings, say) becomes strings, its name and types
    noted in ``mixed``."""

    def build(names: list[str], buffer: list[dict]) -> pa.Table:
        columns = {}
        for n in names:
            values = [r.get(n) for r in buffer]
            try:
                columns[n] = pa.array(values)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                mixed.setdefault(n, set()).update(_type_names(values))
                columns[n] = pa.array([_as_string(v) for v in values], pa.string())
        return pa.Table.from_pydict(columns)

    return build


def _type_names(values: Iterable[Any]) -> set[str]:
    return {_JSON_TYPES.get(type(v), type(v).__name__) for v in values if v is not None}


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object",
               list: "array"}


def _as_string(value: Any) -> str | None:
    """A value of a mixed-type column as a string: strings as they are, others as JSON."""
    if value is None or isinstance(value, str):
        return value
    return _record_cell(value)


def _spill(records: Iterable[dict], directory: Path,
           build) -> tuple[list[tuple[Path, pa.Schema]], int]:
    chunks: list[tuple[Path, pa.Schema]] = []
    buffer: list[dict] = []
    count = 0

    def flush() -> None:
        # Columns from every record of the chunk: pa.Table.from_pylist would take the
        # keys of the first record only and drop the rest.
        names = list(dict.fromkeys(key for record in buffer for key in record))
        table = build(names, buffer)
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


def _unify(schemas: list[pa.Schema], mixed: dict[str, set[str]]) -> pa.Schema:
    """One schema for every chunk; a field whose chunks disagree on its type (and cannot
    be promoted, as integers are to floats) becomes a string field, noted in ``mixed``."""
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    names = list(dict.fromkeys(n for schema in schemas for n in schema.names))
    fields = []
    for n in names:
        types = [schema.field(n).type for schema in schemas if n in schema.names]
        try:
            field = pa.unify_schemas([pa.schema([pa.field(n, t)]) for t in types],
                                     promote_options="permissive").field(n)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            mixed.setdefault(n, set()).update(str(t) for t in types if t != pa.null())
            field = pa.field(n, pa.string())
        fields.append(field)
    return pa.schema(fields)


def _warn_mixed(name: str | None, mixed: dict[str, set[str]]) -> None:
    import warnings

    listed = "; ".join(f"{n!r} ({', '.join(sorted(types))})" for n, types in mixed.items())
    warnings.warn(
        f"{name or 'write_records'}: field(s) {listed} hold values of several types, which "
        "a Parquet column cannot; they are written as strings (non-string values as their "
        "JSON text). Write .jsonl to keep every value's type.",
        UserWarning, stacklevel=2,
    )


def _load(file: Path) -> pa.Table:
    with pa.memory_map(str(file)) as source:
        return ipc.open_file(source).read_all()


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if field.type == pa.string() and column.type != pa.string():
            # A mixed-type field: this chunk's values as strings (JSON text).
            column = pa.array([_as_string(v) for v in column.to_pylist()], pa.string())
        columns.append(column.cast(field.type))
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


class DelimitedValueError(OutputError):
    """A value a TSV file cannot hold (a tab or a line break)."""


class _DelimitedRows:
    """Rows of a CSV or TSV file, one per line ending in LF.

    CSV follows RFC 4180: a field holding a comma, a double quote, a carriage return or
    a line feed is quoted (quotes doubled), so every value reads back as written. TSV
    has no quoting (a field is everything between two tabs): a value holding a tab, a
    carriage return or a line feed cannot be written, and is refused with its row and
    column rather than written so that it breaks the row; quotes are written as they
    are.
    """

    def __init__(self, handle: TextIO, kind: str, name: str | None, default: str) -> None:
        self.handle = handle
        self.tsv = kind == "tsv"
        self.name = name or default
        self.columns: list[str] = []
        self.rows = 0  # data rows written

    def write(self, cells: list[str], *, header: bool = False) -> None:
        if self.tsv:
            for position, cell in enumerate(cells):
                if "\t" in cell or "\n" in cell or "\r" in cell:
                    self._refuse(cells, position, header)
            if cells == [""]:  # an empty line, which readers skip as no record
                raise DelimitedValueError(
                    f"{self.name}: row {self.rows + 1:,} has one column, empty, which a TSV "
                    "line cannot hold (an empty line is no record). Write .csv, .jsonl or "
                    ".parquet instead."
                )
            self.handle.write("\t".join(cells) + "\n")
        elif cells == [""]:
            self.handle.write('""\n')  # quoted, so that the line is not empty
        else:
            self.handle.write(",".join(_csv_field(cell) for cell in cells) + "\n")
        if header:
            self.columns = list(cells)
        else:
            self.rows += 1

    def _refuse(self, cells: list[str], position: int, header: bool) -> None:
        cell = cells[position]
        what = "a tab" if "\t" in cell else "a line break"
        if header:
            where = f"the column name {short_repr(cell)}"
        else:
            where = f"row {self.rows + 1:,}"
            if position < len(self.columns):
                where += f", column {self.columns[position]!r}"
            if "id" in self.columns and self.columns.index("id") != position:
                where += f" (id {short_repr(cells[self.columns.index('id')])})"
            where += f", {short_repr(cell)},"
        raise DelimitedValueError(
            f"{self.name}: {where} holds {what}, which a TSV file cannot hold (TSV has no "
            "quoting). Write .csv (quoted), .jsonl or .parquet instead."
        )


def _csv_field(cell: str) -> str:
    if any(c in cell for c in ',"\r\n'):
        return '"' + cell.replace('"', '""') + '"'
    return cell


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


def _dumps(value: Any, *, allow_nan: bool = False) -> str:
    # The standard library on purpose: its output does not depend on optional packages.
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan,
        default=_json_default,
    )


def _json_line(record: dict, *, keep_nan: bool = False) -> str:
    """One JSON line. Tables (``keep_nan=False``) write NaN and infinity as null, which
    strict JSON parsers accept; records write them as the ``NaN``/``Infinity`` tokens
    Python's json reads and writes, so a value read from the input comes back as it was."""
    if keep_nan:
        return _dumps(record, allow_nan=True) + "\n"
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


_FLOAT_TOKENS = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _record_cell(value: Any) -> str:
    """A record's value as CSV/TSV text: as :func:`_cell`, except that NaN and infinity
    are written as the JSON tokens ``NaN``, ``Infinity`` and ``-Infinity`` (not as an
    empty, null field), inside lists and objects too."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else _FLOAT_TOKENS[value]
    if isinstance(value, (dict, list, tuple)):
        return _dumps(value, allow_nan=True)
    return _cell(value)


def annotation_columns(cluster: np.ndarray, size: np.ndarray, representative: np.ndarray,
                       duplicate_of: np.ndarray) -> dict[str, list]:
    """The :data:`ANNOTATION_FIELDS` of a run of documents as Python lists (``duplicate_of``:
    the kept member's id, None for the kept member itself)."""
    return {"cluster": np.asarray(cluster, np.int64).tolist(),
            "cluster_size": np.asarray(size, np.int64).tolist(),
            "is_representative": np.asarray(representative, bool).tolist(),
            "duplicate_of": list(duplicate_of)}


def annotated_records(records: Iterable[dict], columns: dict[str, list]) -> Iterator[dict]:
    """Each record with its annotation (``columns`` from :func:`annotation_columns`, one
    value per record, in order) appended; an OutputError for a record that already has
    one of those fields, which the annotation would overwrite."""
    rows = zip(*columns.values())
    for index, record in enumerate(records):
        clash = [name for name in columns if name in record]
        if clash:
            raise OutputError(
                f"--annotate: record {index} already has the field {clash[0]!r}, which the "
                f"annotation ({', '.join(ANNOTATION_FIELDS)}) would overwrite. Rename it in "
                "the input.")
        yield {**record, **dict(zip(columns, next(rows)))}
