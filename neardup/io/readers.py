"""Corpus readers: stream documents from JSONL, Parquet, CSV/TSV, .txt directories and Reuters SGML.

Inputs may be local paths or fsspec URLs (``s3://``, ``gs://``, ``memory://``; options in
``ReaderConfig.storage_options``): :func:`input_files` expands them into
:class:`InputFile` s (a directory of Parquet or JSON Lines shards, a Hugging Face dataset
saved with ``save_to_disk``), which every engine reads the same way (docs/storage.md).

:func:`read_corpus` yields :class:`~neardup.io.batch.DocumentBatch` objects of at most
``batch_size`` documents, never mixing two inputs, with memory bounded by one batch
(plus one string per id when ids must be checked for uniqueness).
:func:`iter_records` is the second pass: it yields each document's full original record
in the same order, so kept documents can be written out with all their fields.

Nothing is dropped in silence. A record that cannot be read (no text field, a text
that is not a string, malformed JSON, a duplicate id, invalid UTF-8 under
``errors="strict"``, an unparseable date) raises :class:`~neardup.errors.InputError`
naming the file and the line (1-based, JSONL/CSV/TSV/SGML), the row (0-based, Parquet)
or the file (``.txt`` directories). Empty and whitespace-only texts are not errors:
they are returned as they are. Readers fail with no other exception type: operating-
system errors, JSON nested deeper than 200 levels, numbers too long to convert and
paths that are not valid UTF-8 are InputErrors too, and messages show undecodable bytes
of a path as ``\\xNN``.

TSV is plain TSV: one record per line, no quoting (a quote is an ordinary character), and
a line whose field count differs from the header's is an error. CSV has RFC 4180 quoting.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from neardup.errors import InputError, check_choice, check_int, parameter_error, setting, short_repr
from neardup.io._dates import as_datetime64, field_epoch_seconds, to_epoch_seconds
from neardup.io._formats import (
    Utf8Decoder,
    arrow_records,
    parquet_batches,
    parquet_schema,
    csv_records,
    escape_surrogates,
    jsonl_records,
    parquet_records,
    tsv_records,
    txtdir_records,
)
from neardup.io.batch import DocumentBatch
from neardup.io.locations import Location, check_location, is_url, locate, storage_error
from neardup.io.reuters import reuters_records

__all__ = ["SUPPORTED_FORMATS", "InputFile", "ReaderConfig", "detect_format", "input_files",
           "iter_record_batches", "iter_records", "kept_batches", "parquet_inputs_schema",
           "part_record_batches", "part_records", "read_corpus", "read_part"]

#: Format names returned by :func:`detect_format` and :func:`input_files`.
SUPPORTED_FORMATS = ("jsonl", "parquet", "csv", "tsv", "txtdir", "reuters", "arrow")

# Longest suffix first, so ".jsonl.gz" wins over ".gz".
_SUFFIXES = (
    (".jsonl.gz", "jsonl"),
    (".ndjson.gz", "jsonl"),
    (".json.gz", "jsonl"),
    (".jsonl", "jsonl"),
    (".ndjson", "jsonl"),
    (".json", "jsonl"),
    (".parquet", "parquet"),
    (".csv", "csv"),
    (".tsv", "tsv"),
    (".sgm", "reuters"),
)
_SUPPORTED_TEXT = (
    ".jsonl / .json / .ndjson (JSON Lines, optionally .gz), .parquet, .csv, .tsv, "
    ".sgm (Reuters-21578 SGML), a directory of .txt files, a directory of Parquet or JSON "
    "Lines shards, or a Hugging Face dataset saved with save_to_disk"
)
# Formats whose ids, texts and dates are fixed by the format rather than by ReaderConfig.
_NATIVE = frozenset({"txtdir", "reuters"})
_MISSING = object()
# Packs (input index, line or row) into one int for the duplicate-id table.
_LOCATION_BITS = 40


@dataclass(frozen=True)
class ReaderConfig:
    """How to read a corpus: which fields hold the text, id and date, and how strictly.

    Parameters
    ----------
    text_field : str, default "text"
        Field (JSONL key, CSV/TSV/Parquet column) holding the document text. Every
        record must have it, as a string.
    id_field : str or None, default None
        Field holding a unique document id (string or integer). None numbers documents
        by their global position: ``"0"``, ``"1"``, ... counted across all inputs in
        order. When given, ids must be unique across all inputs.
    date_field : str or None, default None
        Field holding the document date, parsed to ``datetime64[s]``: ISO 8601 strings
        (with an offset converted to UTC), plain dates, epoch seconds (integers, or
        strings of digits), or Reuters style ``26-FEB-1987 15:01:01.79``. Null, empty or
        (JSONL) absent means NaT; anything else that is not a date is an error. None
        reads no dates (``DocumentBatch.dates`` is None).
    errors : {"strict", "replace"}, default "strict"
        Invalid UTF-8: ``"strict"`` raises an InputError naming the file and byte
        offset; ``"replace"`` substitutes U+FFFD and warns once per input with the count.
    batch_size : int, default 10_000
        Maximum documents per batch; memory use grows with it. 1,000-100,000 is sensible.
    limit : int or None, default None
        Stop after this many documents in total (over all inputs). None reads everything.
    storage_options : mapping or None, default None
        Options of the fsspec filesystem of inputs given as URLs (``s3://``, ``gs://``,
        ``memory://``), e.g. ``{"endpoint_url": ..., "key": ..., "secret": ...}`` for S3;
        None takes credentials from the environment and fsspec's configuration.
        See docs/storage.md.

    Notes
    -----
    ``text_field``, ``id_field`` and ``date_field`` apply to JSONL, CSV/TSV and Parquet.
    Directories of ``.txt`` files always use the relative path as id and the file
    content as text (dates NaT when ``date_field`` is set); Reuters SGML always uses
    NEWID and DATE, and ``text_field`` picks one of its fields: ``"text"`` (TITLE +
    BODY, the default), ``"body"`` or ``"title"`` (missing parts read as "").
    """

    text_field: str = "text"
    id_field: str | None = None
    date_field: str | None = None
    errors: str = "strict"
    batch_size: int = 10_000
    limit: int | None = None
    #: fsspec options for inputs given as URLs (s3fs: ``endpoint_url``, ``key``, ...);
    #: left out of comparisons and ``repr``, since they may hold credentials.
    storage_options: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        caller = "ReaderConfig"
        _check_field(caller, "text_field", self.text_field, optional=False)
        _check_field(caller, "id_field", self.id_field, optional=True)
        _check_field(caller, "date_field", self.date_field, optional=True)
        check_choice(caller, "errors", self.errors, ("strict", "replace"))
        check_int(caller, "batch_size", self.batch_size, low=1)
        if self.limit is not None:
            check_int(caller, "limit", self.limit, low=0, hint="Use None for no limit.")
        if self.storage_options is not None and not isinstance(self.storage_options, Mapping):
            raise parameter_error(caller, "storage_options", "a mapping or None",
                                  self.storage_options)

    def params(self) -> dict[str, Any]:
        """The settings as a dict, without the storage options (which may hold
        credentials): what reports and resume records keep."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "storage_options"}


def _check_field(caller: str, name: str, value: Any, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        accepted = "a non-empty string" + (" or None" if optional else "")
        raise parameter_error(caller, name, accepted, value)


def detect_format(path: str | os.PathLike,
                  storage_options: Mapping[str, Any] | None = None) -> str:
    """Name the format of an input from its extension.

    Parameters
    ----------
    path : str or os.PathLike
        A file or directory: a local path or a URL (``s3://``, ``memory://``, ...). The
        extension is matched case-insensitively.
    storage_options : mapping or None
        fsspec options for a URL.

    Returns
    -------
    str
        ``"jsonl"`` (``.jsonl``, ``.json``, ``.ndjson``, each optionally ``.gz``),
        ``"parquet"``, ``"csv"``, ``"tsv"``, ``"txtdir"`` (a directory: see
        :func:`input_files` for what it stands for), ``"reuters"`` (``.sgm``) or
        ``"arrow"`` (``.arrow``, the Arrow stream files of a saved Hugging Face dataset).

    Raises
    ------
    InputError
        If the path does not exist, cannot be reached (a missing bucket, a refused
        credential) or the extension is not supported.
    """
    location = locate(path, storage_options)
    if location.local:
        return _local_format(path)
    check_location(location)
    try:
        is_dir = location.is_dir()
        exists = is_dir or location.exists()
    except Exception as exc:  # noqa: BLE001 - every storage failure is reported alike
        raise storage_error(exc, location, "") from None
    if not exists:
        raise InputError(f"{location.url}: no such file or directory.")
    return "txtdir" if is_dir else _format_of_name(location.url, location.name)


def _local_format(path: str | os.PathLike) -> str:
    candidate = Path(os.fspath(path).removeprefix("file://"))
    shown = escape_surrogates(os.fspath(path))
    try:
        exists = candidate.exists()
        is_dir = exists and candidate.is_dir()
    except OSError as exc:  # e.g. a name too long, a directory without search permission
        raise InputError(f"{shown}: cannot open it ({exc.strerror or exc}).") from None
    if not exists:
        raise InputError(f"{shown}: no such file or directory.")
    if shown != os.fspath(path):
        raise InputError(
            f"{shown}: the path is not valid UTF-8 (undecodable bytes shown as \\xNN). "
            "neardup names each document's input file in its outputs, which hold only "
            "UTF-8 text: rename the file or directory (e.g. with convmv)."
        )
    if is_dir:
        return "txtdir"
    return _format_of_name(shown, candidate.name)


def _format_of_name(shown: str, name: str) -> str:
    lower = name.lower()
    for suffix, kind in _SUFFIXES:
        if lower.endswith(suffix):
            return kind
    if lower.endswith(".arrow"):
        return "arrow"
    suffixes = Path(name).suffixes
    suffix = escape_surrogates("".join(suffixes[-2:])) or "(none)"
    raise InputError(
        f"{shown}: unknown extension {suffix!r}. Supported inputs: {_SUPPORTED_TEXT}."
    )


# A directory holding files of these formats stands for them (a sharded corpus).
_SHARD_FORMATS = ("parquet", "jsonl")


class InputFile(NamedTuple):
    """One file a corpus is read from: where it is (a local path or a URL, as messages
    and ``DocumentBatch.source`` name it) and its format (:data:`SUPPORTED_FORMATS`).

    :func:`input_files` turns the user's inputs into these, :func:`part_records` and
    :func:`read_part` read the rows of one, on any filesystem
    (:func:`neardup.io.locations.locate`): the whole of what every engine needs to read
    a corpus wherever it lives."""

    path: str
    kind: str


def input_files(paths: Sequence[str | os.PathLike] | str | os.PathLike,
                storage_options: Mapping[str, Any] | None = None) -> list[InputFile]:
    """The :class:`InputFile` of every file the inputs stand for, in reading order.

    A file is itself. A directory is, in this order of precedence:

    * a Hugging Face dataset saved with ``Dataset.save_to_disk`` (it holds
      ``state.json``): its ``.arrow`` files, in the order ``state.json`` lists them;
    * a directory of shards: its Parquet and JSON Lines files (any depth, hidden names
      left out), sorted by path;
    * otherwise (local only) a directory of ``.txt`` files, read as one input.

    Raises InputError, before anything is read, for a path that does not exist or cannot
    be reached (a missing bucket, a refused credential), an unsupported extension, or a
    ``DatasetDict`` saved to disk (give one split's directory).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[InputFile] = []
    for path in paths:
        kind = detect_format(path, storage_options)
        location = locate(path, storage_options)
        if kind != "txtdir":
            files.append(InputFile(location.native, kind))
            continue
        try:
            files.extend(_directory_files(location))
        except InputError:
            raise
        except OSError as exc:
            raise storage_error(exc, location, "") from None
    return files


def _directory_files(location: Location) -> list[InputFile]:
    from neardup.io.hfdatasets import saved_dataset_files

    saved = saved_dataset_files(location)
    if saved is not None:
        return [InputFile(f.native, "arrow") for f in saved]
    inside = location.files()
    shards = []
    for file in inside:
        try:
            kind = _format_of_name(file.url, file.name)
        except InputError:
            continue
        if kind in _SHARD_FORMATS:
            shards.append(InputFile(file.native, kind))
    if shards:
        return shards
    if not location.local:
        kinds = sorted({"".join(Path(f.name).suffixes[-2:]).lower() or "(no extension)"
                        for f in inside})
        raise InputError(
            f"{location.url}: a directory URL is read as a saved Hugging Face dataset or a "
            "directory of Parquet or JSON Lines shards, and this one holds neither"
            + (f" ({len(inside)} file(s): {', '.join(kinds[:5])})." if inside else
               " (it is empty).") + " Give the files themselves as inputs."
        )
    return [InputFile(location.native, "txtdir")]


def _sources(
    paths: Sequence[str | os.PathLike] | str | os.PathLike, caller: str,
    storage_options: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    try:
        listed = list(paths)
    except TypeError:
        raise TypeError(
            f"{caller}: parameter 'paths' must be a sequence of paths; got {paths!r}."
        ) from None
    return input_files(listed, storage_options)


def _check_config(caller: str, config: Any) -> ReaderConfig:
    if not isinstance(config, ReaderConfig):
        raise TypeError(f"{caller}: parameter 'config' must be a ReaderConfig; got {config!r}.")
    return config


def _record_stream(path: str, kind: str, config: ReaderConfig, *, full: bool):
    """The (row, line, record) stream of one input; ``full`` keeps every field."""
    fields = tuple(dict.fromkeys(
        f for f in (config.text_field, config.id_field, config.date_field) if f is not None))
    require = () if full else fields
    options = config.storage_options
    if kind == "jsonl":
        stream = jsonl_records(path, config.errors, fields, options)
    elif kind == "csv":
        stream = csv_records(path, config.errors, ",", require, options)
    elif kind == "tsv":
        stream = tsv_records(path, config.errors, require, options)
    elif kind == "parquet":
        columns = None if full else list(require)
        stream = parquet_records(path, columns, config.batch_size, require, options=options)
    elif kind == "arrow":
        columns = None if full else list(require)
        stream = arrow_records(path, columns, config.batch_size, require, options=options)
    elif kind == "txtdir":
        stream = txtdir_records(path, config.errors)
    else:
        stream = reuters_records(path)
    return _guarded(stream, path)


def _guarded(stream: Iterator, path: str | None) -> Iterator:
    """``stream``, failing only with :class:`InputError`: an operating-system error while
    reading ``path`` (permission denied, an I/O error, a file removed under the reader)
    becomes one naming it, and messages name undecodable paths with backslash escapes
    (else printing them would fail)."""
    try:
        yield from stream
    except InputError as exc:
        message = str(exc)
        safe = escape_surrogates(message)
        if safe == message:
            raise
        raise InputError(safe) from None
    except OSError as exc:
        if path is None:
            raise
        if is_url(path):
            raise storage_error(exc, locate(path), "") from None
        raise InputError(
            f"{escape_surrogates(path)}: cannot read it ({exc.strerror or exc})."
        ) from None
    except RecursionError:  # pragma: no cover - every format bounds its nesting
        where = f"{escape_surrogates(path)}: " if path is not None else ""
        raise InputError(f"{where}a record is nested too deeply to read.") from None
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def read_corpus(
    paths: Sequence[str | os.PathLike], config: ReaderConfig = ReaderConfig()
) -> Iterator[DocumentBatch]:
    """Stream the documents of one or more inputs as batches.

    Parameters
    ----------
    paths : sequence of str or os.PathLike
        Input files or directories, read in order; the format of each comes from
        :func:`detect_format`. A single path is accepted too.
    config : ReaderConfig, default ReaderConfig()
        Field names, UTF-8 policy, batch size and document limit.

    Returns
    -------
    iterator of DocumentBatch
        Batches of at most ``config.batch_size`` documents, each from one input, in
        input order. ``rows`` counts records within the input from 0. ``dates`` is
        ``datetime64[s]`` (NaT where missing) when ``config.date_field`` is set or the
        input is Reuters SGML, else None.

    Raises
    ------
    InputError
        At call time for a missing path or an unsupported extension; while iterating
        for unreadable records (see the module docstring). Documents already yielded
        stay valid.

    Warns
    -----
    UnicodeWarning
        Under ``errors="replace"``, once per input that had invalid UTF-8.

    Examples
    --------
    >>> for batch in read_corpus(["news.jsonl"], ReaderConfig(id_field="url")):  # doctest: +SKIP
    ...     print(batch.source, len(batch))
    """
    config = _check_config("read_corpus", config)
    sources = _sources(paths, "read_corpus", config.storage_options)
    return _guarded(_batches(sources, config), None)


def iter_records(
    paths: Sequence[str | os.PathLike], config: ReaderConfig = ReaderConfig()
) -> Iterator[dict]:
    """Stream the full original record of each document, in :func:`read_corpus` order.

    Use it for a second pass, e.g. to write the kept documents with all their fields.
    The n-th record belongs to the n-th document :func:`read_corpus` yields for the same
    ``paths`` and ``config`` (``limit`` applies alike).

    Parameters
    ----------
    paths : sequence of str or os.PathLike
        The same inputs given to :func:`read_corpus`.
    config : ReaderConfig, default ReaderConfig()
        The same configuration; only ``errors``, ``batch_size`` (Parquet read size) and
        ``limit`` matter here.

    Returns
    -------
    iterator of dict
        JSONL: the parsed object. CSV/TSV: column -> string. Parquet: column -> value
        (all columns). ``.txt`` directories: ``{"id", "text"}``. Reuters: see
        :func:`neardup.io.reuters.parse_story` (``id``, ``date``, ``title``, ``body``,
        ``text``, ``topics``, ...).

    Raises
    ------
    InputError
        As :func:`read_corpus`, for input that cannot be read at all. Field checks
        (text type, ids, dates) are made by :func:`read_corpus` only.
    """
    config = _check_config("iter_records", config)
    sources = _sources(paths, "iter_records", config.storage_options)
    return _guarded(_records(sources, config), None)


def parquet_inputs_schema(paths: Sequence[str | os.PathLike],
                          config: ReaderConfig = ReaderConfig()) -> Any:
    """The Arrow schema every input shares when each is a Parquet file and all have the
    same columns and types (read from their footers), else None: the inputs
    :func:`iter_record_batches` reads."""
    config = _check_config("parquet_inputs_schema", config)
    sources = _sources(paths, "parquet_inputs_schema", config.storage_options)
    if not sources or any(kind != "parquet" for _, kind in sources):
        return None
    schemas = [parquet_schema(path, config.storage_options) for path, _ in sources]
    first = schemas[0].remove_metadata()
    return first if all(s.remove_metadata().equals(first) for s in schemas[1:]) else None


def iter_record_batches(
    paths: Sequence[str | os.PathLike], config: ReaderConfig = ReaderConfig()
) -> Iterator[tuple[str, Any]]:
    """Stream Parquet inputs' full records as Arrow, in :func:`iter_records` order.

    The rows of each batch are the records :func:`iter_records` yields one by one, with
    every column, but they stay Arrow data: a second pass that writes the kept records to
    Parquet never makes a Python object of a row.

    Parameters
    ----------
    paths : sequence of str or os.PathLike
        The same inputs given to :func:`read_corpus`; each must be a Parquet file
        (:func:`parquet_inputs_schema` says whether they are).
    config : ReaderConfig, default ReaderConfig()
        The same configuration; only ``batch_size`` and ``limit`` matter here.

    Returns
    -------
    iterator of (str, pyarrow.RecordBatch)
        Each batch with the input it comes from.

    Raises
    ------
    InputError
        As :func:`iter_records`.
    ValueError
        For an input that is not a Parquet file.
    """
    config = _check_config("iter_record_batches", config)
    sources = _sources(paths, "iter_record_batches", config.storage_options)
    for path, kind in sources:
        if kind != "parquet":
            raise ValueError(f"iter_record_batches: {path!r} is {kind}, not Parquet; use iter_records.")
    return _guarded(_record_batches(sources, config), None)


def kept_batches(batches: Iterable[Any], keep: Any) -> Iterator[Any]:
    """Arrow record ``batches`` cut to the rows whose ``keep`` is true (one flag per row
    of all the batches, in order), schema metadata dropped; a batch that keeps no row is
    left out."""
    import pyarrow as pa

    keep = np.asarray(keep, dtype=bool)
    start = 0
    for batch in batches:
        mask = keep[start:start + batch.num_rows]
        start += batch.num_rows
        if mask.all():
            yield batch.replace_schema_metadata(None)
        elif mask.any():
            yield batch.filter(pa.array(mask)).replace_schema_metadata(None)


def _record_batches(sources: list[tuple[str, str]], config: ReaderConfig) -> Iterator[tuple[str, Any]]:
    remaining = config.limit
    for path, _kind in sources:
        if remaining == 0:
            return
        with closing(_guarded(parquet_batches(path, config.batch_size,
                                              options=config.storage_options), path)) as stream:
            for batch in stream:
                if remaining is not None and batch.num_rows >= remaining:
                    yield path, batch.slice(0, remaining)
                    return
                if remaining is not None:
                    remaining -= batch.num_rows
                yield path, batch


def _records(sources: list[tuple[str, str]], config: ReaderConfig) -> Iterator[dict]:
    remaining = config.limit
    for path, kind in sources:
        if remaining == 0:
            return
        with closing(_record_stream(path, kind, config, full=True)) as stream:
            for _row, _line, record in stream:
                yield record
                if remaining is not None:
                    remaining -= 1
                    if remaining == 0:
                        return


class _IdRegistry:
    """Remembers where each id was first seen, to report duplicates with both places.
    Checked a batch at a time in an :class:`~neardup.io.idset.IdSet` (about
    ``len(id) + 24`` bytes per id)."""

    def __init__(self, sources: list[tuple[str, str]], id_field: str | None) -> None:
        self.sources = sources
        self.id_field = id_field
        from neardup.io.idset import IdSet  # numba: imported when ids are checked

        self.seen = IdSet()

    def add_batch(self, ids: list[str], source: int, positions: list[int]) -> None:
        """``positions``: each id's line (line-based formats) or row."""
        codes = (np.int64(source) << _LOCATION_BITS) | np.asarray(positions, np.int64)
        repeat = self.seen.add(ids, codes)
        if repeat is None:
            return
        index, earlier = repeat
        doc_id = ids[index]
        first_source = earlier >> _LOCATION_BITS
        first_position = earlier & ((1 << _LOCATION_BITS) - 1)
        first_path, first_kind = self.sources[first_source]
        path, kind = self.sources[source]
        what = "NEWID" if kind == "reuters" and first_kind == "reuters" else "id"
        if self.id_field is None and kind in _NATIVE and first_kind in _NATIVE:
            hint = _native_duplicate_hint(path, kind, first_path, first_kind, source == first_source)
        elif self.id_field is None:
            hint = (
                "Ids numbered by position clash with the native ids of a .txt directory or "
                "Reuters file: give every input an id field, or read them separately."
            )
        else:
            hint = (
                f"Ids must be unique across all inputs: choose another "
                f"{setting('id_field', 'id_field')}, fix the data, or "
                f"{setting('id_field=None', 'set id_field=None')} to number documents by "
                "position."
            )
        raise InputError(
            f"{path}, {_where_code(kind, positions[index], doc_id)}: duplicate {what} {doc_id!r}, "
            f"first seen in {first_path}, {_where_code(first_kind, first_position, doc_id)}. "
            f"{hint}"
        )


def _native_duplicate_hint(path: str, kind: str, first_path: str, first_kind: str,
                           same_source: bool) -> str:
    """What to do about a repeated id that no setting chose: a Reuters NEWID or the
    relative path of a .txt file."""
    if not same_source and _same_file(path, first_path):
        return "The same input is given twice: pass it once."
    if kind == "reuters" and first_kind == "reuters":
        if same_source:
            return ("Two stories in this file carry the same NEWID, which must be unique: "
                    "deduplicate the input (remove the repeated story) and read it again.")
        return ("Two stories in these files carry the same NEWID, which must be unique "
                "across the .sgm files read together: deduplicate the input (remove the "
                "repeated story), or read the files in separate runs.")
    if kind == "txtdir" and first_kind == "txtdir":
        return ("Both directories hold a .txt file at this relative path, which is its id: "
                "read the directories in separate runs, or move one of the files.")
    return ("A .txt file's relative path (its id) equals a Reuters NEWID: read the directory "
            "and the .sgm files in separate runs.")


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _where(kind: str, row: int, line: int | None, doc_id: str | None = None) -> str:
    if line is not None:
        return f"line {line}"
    if kind == "txtdir" and doc_id is not None:
        return f"file {doc_id!r}"
    return f"row {row} (0-based)"


def _where_code(kind: str, position: int, doc_id: str) -> str:
    if kind in ("jsonl", "csv", "tsv", "reuters"):
        return f"line {position}"
    return _where(kind, position, None, doc_id)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _shown_value(value: Any) -> str:
    """A value for a message: strings and bytes quoted, other values as they print."""
    if value is None or isinstance(value, (str, bytes, bytearray)):
        return short_repr(value)
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fields_text(record: dict) -> str:
    names = [repr(k) for k in record]
    if not names:
        return "it has no fields"
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    return f"it has {shown}"


class _Extractor:
    """Pulls (id, text, date seconds) out of one input's records, validating each."""

    def __init__(self, path: str, kind: str, config: ReaderConfig) -> None:
        self.path = path
        self.kind = kind
        self.config = config
        self.binary = Utf8Decoder(path, config.errors)  # for Parquet binary text columns

    def text(self, record: dict, row: int, line: int | None) -> str:
        field = "text" if self.kind == "txtdir" else self.config.text_field
        value = record.get(field, _MISSING)
        if type(value) is str:
            return value
        if self.kind == "reuters" and value is None:  # e.g. body of a BRIEF story
            return ""
        where = _where(self.kind, row, line)
        if value is _MISSING:
            raise InputError(
                f"{self.path}, {where}: the record has no text field {field!r}; "
                f"{_fields_text(record)}. Set "
                f"{setting('text_field', 'ReaderConfig(text_field=...)')} to the field that "
                "holds the text."
            )
        if isinstance(value, str):  # a str subclass
            return str(value)
        if isinstance(value, bytes):  # Parquet binary column
            return self.binary.decode(value, 0, f"{where}, field {field!r}")
        raise InputError(
            f"{self.path}, {where}: text field {field!r} must be a string; got "
            f"{_type_name(value)} {_shown_value(value)}. Store texts as strings (an empty string "
            "for an empty document)."
        )

    def doc_id(self, record: dict, row: int, line: int | None, position: int) -> str:
        if self.kind in _NATIVE:
            return record["id"]
        field = self.config.id_field
        if field is None:
            return str(position)
        value = record.get(field, _MISSING)
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        where = _where(self.kind, row, line)
        if value is _MISSING:
            raise InputError(
                f"{self.path}, {where}: the record has no id field {field!r}; "
                f"{_fields_text(record)}. Every record needs an id when "
                f"{setting('id_field', 'id_field')} is set."
            )
        raise InputError(
            f"{self.path}, {where}: id field {field!r} must be a string or an integer; got "
            f"{_type_name(value)} {_shown_value(value)}."
        )

    def date(self, record: dict, row: int, line: int | None) -> int | None:
        if self.kind == "reuters":
            return to_epoch_seconds(record["date"])  # ISO string written by parse_story
        field = self.config.date_field
        if self.kind == "txtdir" or field is None:
            return None
        return field_epoch_seconds(record, field, f"{self.path}, {_where(self.kind, row, line)}")


def _batches(sources: list[tuple[str, str]], config: ReaderConfig) -> Iterator[DocumentBatch]:
    track_ids = config.id_field is not None or any(kind in _NATIVE for _, kind in sources)
    registry = _IdRegistry(sources, config.id_field) if track_ids else None
    # CSV/TSV/Parquet demand the date column in their header; JSON Lines records may lack
    # the key, and a misspelt date_field must not silently leave every date unknown.
    date_key = config.date_field
    dated = date_key is None or any(kind in ("csv", "tsv", "parquet", "arrow", "reuters")
                                    for _, kind in sources)
    first_fields: dict | None = None
    position = 0  # documents yielded so far, over all inputs
    limit = config.limit
    size = config.batch_size
    for index, (path, kind) in enumerate(sources):
        if limit is not None and position >= limit:
            return
        extractor = _Extractor(path, kind, config)
        with_dates = kind == "reuters" or config.date_field is not None
        ids: list[str] = []
        texts: list[str] = []
        seconds: list[int | None] = []
        rows: list[int] = []
        places: list[int] = []  # line or row of each id, for duplicate-id errors
        try:
            with closing(_record_stream(path, kind, config, full=False)) as stream:
                for row, line, record in stream:
                    if not dated:
                        dated = date_key in record
                        first_fields = record if first_fields is None else first_fields
                    text = extractor.text(record, row, line)
                    doc_id = extractor.doc_id(record, row, line, position)
                    if registry is not None:
                        places.append(row if line is None else line)
                    if with_dates:
                        seconds.append(extractor.date(record, row, line))
                    ids.append(doc_id)
                    texts.append(text)
                    rows.append(row)
                    position += 1
                    if len(texts) == size or position == limit:
                        if registry is not None:
                            registry.add_batch(ids, index, places)
                        yield _batch(path, ids, texts, seconds if with_dates else None, rows)
                        ids, texts, seconds, rows, places = [], [], [], [], []
                        if position == limit:
                            break
            if texts:
                if registry is not None:
                    registry.add_batch(ids, index, places)
                yield _batch(path, ids, texts, seconds if with_dates else None, rows)
        finally:
            extractor.binary.finish()
    if not dated and position:
        fields = _fields_text(first_fields or {}).removeprefix("it ")
        names = ", ".join(path for path, _ in sources[:3]) + (", ..." if len(sources) > 3 else "")
        raise InputError(
            f"{names}: date field {date_key!r}: none of the {position:,} records read has it, so every "
            f"date would be unknown (the first record {fields}). "
            f"Set {setting('date_field', 'ReaderConfig(date_field=...)')} to the field that "
            "holds the date, or leave it out."
        )


def _batch(
    path: str, ids: list[str], texts: list[str], seconds: list[int | None] | None, rows: list[int]
) -> DocumentBatch:
    return DocumentBatch(
        ids=ids,
        texts=texts,
        dates=None if seconds is None else as_datetime64(seconds),
        source=path,
        rows=np.asarray(rows, dtype=np.int64),
    )


def part_records(path: str, kind: str, config: ReaderConfig, *, start: int = 0,
                 stop: int | None = None, full: bool = True) -> Iterator[tuple[int, int | None, dict]]:
    """(row, line, record) of one input file of format ``kind`` (:func:`detect_format`),
    for an engine that reads the files of a corpus in parallel; Parquet only rows
    ``start:stop`` (decoding just the row groups that hold them). ``full`` keeps every
    field, else only the text, id and date fields (which must then exist). No field is
    checked here (:func:`read_part` does)."""
    if kind != "parquet":
        return _record_stream(path, kind, config, full=full)
    fields = (config.text_field, config.id_field, config.date_field)
    require = () if full else tuple(dict.fromkeys(f for f in fields if f is not None))
    return _guarded(parquet_records(path, None if full else list(require), config.batch_size,
                                    require, start=start, stop=stop,
                                    options=config.storage_options), path)


def part_record_batches(path: str, config: ReaderConfig, *, start: int = 0,
                        stop: int | None = None) -> Iterator[Any]:
    """:func:`part_records` of a Parquet file as Arrow record batches, every column: rows
    ``start:stop``, none made a Python object."""
    return _guarded(parquet_batches(path, config.batch_size, start=start, stop=stop,
                                    options=config.storage_options), path)


def read_part(path: str, kind: str, config: ReaderConfig, *, start: int = 0,
              stop: int | None = None) -> Iterator[DocumentBatch]:
    """One input file (Parquet: rows ``start:stop``) as :func:`read_corpus` reads it, in
    batches of ``config.batch_size``, for an engine that reads the files of a corpus in
    parallel: the same field checks and errors (naming the file and line), ``rows`` the
    file's row numbers. Ids are None when documents are numbered by their position in
    the whole corpus (no ``id_field``), which only the caller knows; ids are not checked
    for uniqueness across files, and ``limit`` does not apply."""
    return _guarded(_part_batches(path, kind, config, start, stop), None)


def _part_batches(path: str, kind: str, config: ReaderConfig, start: int,
                  stop: int | None) -> Iterator[DocumentBatch]:
    extractor = _Extractor(path, kind, config)
    with_dates = kind == "reuters" or config.date_field is not None
    numbered = config.id_field is None and kind not in _NATIVE
    ids: list[str] = []
    texts: list[str] = []
    seconds: list[int | None] = []
    rows: list[int] = []

    def batch() -> DocumentBatch:
        return DocumentBatch(ids=None if numbered else ids, texts=texts,
                             dates=as_datetime64(seconds) if with_dates else None,
                             source=path, rows=np.asarray(rows, np.int64))

    try:
        with closing(part_records(path, kind, config, start=start, stop=stop, full=False)) as stream:
            for row, line, record in stream:
                texts.append(extractor.text(record, row, line))
                if not numbered:
                    ids.append(extractor.doc_id(record, row, line, row))
                if with_dates:
                    seconds.append(extractor.date(record, row, line))
                rows.append(row)
                if len(texts) == config.batch_size:
                    yield batch()
                    ids, texts, seconds, rows = [], [], [], []
        if texts:
            yield batch()
    finally:
        extractor.binary.finish()
