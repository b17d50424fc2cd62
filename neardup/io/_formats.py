"""Per-format record streams: JSON Lines, CSV/TSV, Parquet and directories of .txt files.

Each stream yields ``(row, line, record)``: the record's index within its input (from 0),
the 1-based line it starts on (None for formats without lines), and the record as a
dict. Streams hold at most one line, one Parquet record batch or one .txt file in
memory. They raise :class:`InputError` for input they cannot read and never skip a
record; blank lines in line-based formats are not records.

UTF-8 is decoded one line (or file) at a time so that an error can name the byte
offset. Under ``errors="replace"`` invalid sequences become U+FFFD and one warning per
input counts them.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from neardup.errors import InputError, setting

try:  # orjson is optional and several times faster; both raise json.JSONDecodeError
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None
    _loads = json.loads

__all__ = [
    "Utf8Decoder",
    "delimited_records",
    "jsonl_records",
    "parquet_columns",
    "parquet_num_rows",
    "parquet_records",
    "txtdir_records",
]

Record = tuple[int, "int | None", dict[str, Any]]

_BOM = b"\xef\xbb\xbf"
_REPLACEMENT_BYTES = "\ufffd".encode()
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a \ud800-\udfff escape in JSON text
# csv's default limit (128 KiB) is too small for real documents; raised when a CSV is read.
_CSV_FIELD_LIMIT = 2**31 - 1


def _REPLACE() -> str:  # noqa: N802 - reads like the phrase it returns
    return setting("errors=replace", "ReaderConfig(errors='replace')")


def _FIELDS() -> str:  # noqa: N802
    return setting("fields", "the matching ReaderConfig field")


class Utf8Decoder:
    """Decode UTF-8 pieces of one input under a policy and count replacements.

    Parameters
    ----------
    path : str
        The input named in messages.
    errors : {"strict", "replace"}
        ``"strict"`` raises :class:`InputError` naming the byte offset; ``"replace"``
        substitutes U+FFFD and :meth:`finish` warns once with the count.
    """

    def __init__(self, path: str, errors: str) -> None:
        self.path = path
        self.errors = errors
        self.replaced = 0
        self.records = 0

    def decode(self, data: bytes, offset: int, where: str) -> str:
        """Decode ``data``, which starts at byte ``offset`` of the input, at ``where``."""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self.errors == "strict":
                bad = data[exc.start : exc.end]
                raise InputError(
                    f"{self.path}, {where}: invalid UTF-8 at byte offset {offset + exc.start} "
                    f"(bytes {bad.hex(' ')}). Convert the file to UTF-8 (e.g. with iconv), "
                    f"or pass {_REPLACE()} to substitute U+FFFD."
                ) from None
        text = data.decode("utf-8", "replace")
        self.replaced += text.count("\ufffd") - data.count(_REPLACEMENT_BYTES)
        self.records += 1
        return text

    def surrogates(self, text: str, where: str) -> str:
        """Handle unpaired surrogates (JSON ``\\ud800`` escapes) in an already decoded string."""
        found = _SURROGATE.findall(text)
        if not found:
            return text
        if self.errors == "strict":
            raise InputError(
                f"{self.path}, {where}: the escape \\u{ord(found[0]):04x} is an unpaired "
                "surrogate, which is not valid Unicode. Fix the producer of the file, or pass "
                f"{_REPLACE()} to substitute U+FFFD."
            )
        self.replaced += len(found)
        self.records += 1
        return _SURROGATE.sub("\ufffd", text)

    def finish(self) -> None:
        """Warn once if anything was replaced."""
        if self.replaced:
            warnings.warn(
                f"{self.path}: replaced {self.replaced} invalid UTF-8 sequence(s) in "
                f"{self.records} record(s) with U+FFFD (errors='replace').",
                UnicodeWarning,
                stacklevel=3,
            )


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _scrub_surrogates(value: Any, decoder: Utf8Decoder, where: str) -> Any:
    if isinstance(value, str):
        return decoder.surrogates(value, where)
    if isinstance(value, list):
        return [_scrub_surrogates(item, decoder, where) for item in value]
    if isinstance(value, dict):
        return {
            decoder.surrogates(key, where): _scrub_surrogates(item, decoder, where)
            for key, item in value.items()
        }
    return value


def _open_binary(path: str):
    if path.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def jsonl_records(path: str, errors: str) -> Iterator[Record]:
    """Stream the objects of a JSON Lines file (``.jsonl``, ``.json``, optionally ``.gz``).

    Byte offsets in messages count from the start of the (decompressed) data.
    """
    decoder = Utf8Decoder(path, errors)
    row = 0
    offset = 0
    lineno = 0
    try:
        with _open_binary(path) as handle:
            for lineno, raw in enumerate(handle, start=1):
                start, offset = offset, offset + len(raw)
                if lineno == 1 and raw.startswith(_BOM):
                    raw, start = raw[len(_BOM) :], start + len(_BOM)
                if not raw.strip():
                    continue
                where = f"line {lineno}"
                text = decoder.decode(raw, start, where)
                record = _parse_json(path, lineno, text)
                if not isinstance(record, dict):
                    raise InputError(
                        f"{path}, {where}: expected a JSON object ({{...}}); got a JSON "
                        f"{_json_kind(record)}. Each line must hold one object with a text field."
                    )
                if _SURROGATE_ESCAPE.search(text):  # only escapes can produce surrogates
                    record = _scrub_surrogates(record, decoder, where)
                yield row, lineno, record
                row += 1
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise InputError(
            f"{path}, line {lineno + 1}: cannot read the compressed data ({exc}); "
            "the file may be truncated or not gzip."
        ) from None
    finally:
        decoder.finish()


def _parse_json(path: str, lineno: int, text: str) -> Any:
    try:
        return _loads(text)
    except ValueError as exc:  # json.JSONDecodeError and orjson's subclass of it
        error = exc
    if orjson is not None and _SURROGATE_ESCAPE.search(text):
        # orjson refuses unpaired surrogate escapes, the standard library accepts them;
        # fall back so that both behave alike (the caller then applies ``errors``).
        try:
            return json.loads(text)
        except ValueError as exc:
            error = exc
    raise InputError(_bad_json_message(path, lineno, text, error))


def _bad_json_message(path: str, lineno: int, text: str, exc: ValueError) -> str:
    detail = getattr(exc, "msg", None) or str(exc)
    column = getattr(exc, "colno", None)
    where = f"line {lineno}" + (f", column {column}" if column else "")
    message = f"{path}, {where}: malformed JSON ({detail}): {text.strip()[:80]!r}."
    if lineno == 1 and text.lstrip().startswith("["):
        message += (
            " The file looks like one JSON array; neardup reads JSON Lines, one object "
            "per line."
        )
    else:
        message += " Each line must hold one complete JSON object."
    return message


def _decoded_lines(handle, decoder: Utf8Decoder, state: list[int]) -> Iterator[str]:
    """Yield decoded lines (with their endings), keeping ``state[0]`` = lines read."""
    offset = 0
    for lineno, raw in enumerate(handle, start=1):
        start, offset = offset, offset + len(raw)
        if lineno == 1 and raw.startswith(_BOM):
            raw, start = raw[len(_BOM) :], start + len(_BOM)
        state[0] = lineno
        yield decoder.decode(raw, start, f"line {lineno}")


def delimited_records(
    path: str, errors: str, delimiter: str, require: tuple[str, ...] = ()
) -> Iterator[Record]:
    """Stream the rows of a CSV or TSV file with a header line, as dicts of strings.

    Quoting follows the csv module's ``excel`` dialect (fields holding the delimiter,
    quotes or newlines are quoted), so a quoted field may span several lines; ``line``
    is where the record starts. ``require`` names columns that must be in the header.
    """
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    decoder = Utf8Decoder(path, errors)
    state = [0]
    try:
        with open(path, "rb") as handle:
            reader = csv.reader(
                _decoded_lines(handle, decoder, state), delimiter=delimiter, strict=True
            )
            try:
                header = next(reader, None)
                if header is None:
                    return
                _check_header(path, header, require)
                row = 0
                while True:
                    start = state[0] + 1
                    fields = next(reader, None)
                    if fields is None:
                        return
                    if not fields:
                        continue  # a blank line is not a record
                    if len(fields) != len(header):
                        raise InputError(
                            f"{path}, line {start}: the record has {len(fields)} field(s) but "
                            f"the header has {len(header)}. Quote fields that contain the "
                            f"delimiter {delimiter!r}, quotes or newlines."
                        )
                    yield row, start, dict(zip(header, fields))
                    row += 1
            except csv.Error as exc:
                kind = "TSV" if delimiter == "\t" else "CSV"
                raise InputError(
                    f"{path}, line {state[0]}: malformed {kind} ({exc}). Check the quoting "
                    "near this line."
                ) from None
    finally:
        decoder.finish()


def _check_header(path: str, header: list[str], require: tuple[str, ...]) -> None:
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise InputError(
                f"{path}, line 1: the header names column {name!r} twice; column names must "
                "be unique."
            )
        seen.add(name)
    for name in require:
        if name not in seen:
            raise InputError(
                f"{path}, line 1: no column {name!r} in the header; the columns are "
                f"{', '.join(repr(h) for h in header)}. Set {_FIELDS()} to the right column."
            )


def parquet_columns(path: str) -> list[str]:
    """Column names of a Parquet file (raises InputError if it is not readable Parquet)."""
    return list(_parquet_file(path).schema_arrow.names)


def _parquet_file(path: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc}).") from None


def parquet_records(
    path: str,
    columns: list[str] | None,
    batch_size: int,
    require: tuple[str, ...] = (),
    *,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[Record]:
    """Stream the rows of a Parquet file, reading only ``columns`` (None = all); with
    ``start``/``stop``, only rows ``start:stop`` (0-based row numbers), decoding only the
    row groups that hold them (a shard of a large file)."""
    import pyarrow as pa

    parquet = _parquet_file(path)
    names = parquet.schema_arrow.names
    for name in require:
        if name not in names:
            raise InputError(
                f"{path}: no column {name!r}, so no row has it; the columns are "
                f"{', '.join(repr(n) for n in names)}. Set {_FIELDS()} to the right column."
            )
    row = start
    try:
        for batch in _parquet_batches(parquet, columns, batch_size, start, stop):
            for record in batch.to_pylist():
                yield row, None, record
                row += 1
    except pa.ArrowException as exc:
        raise InputError(
            f"{path}, row {row} (0-based): cannot read the Parquet data ({exc})."
        ) from None
    finally:
        parquet.close()


def parquet_num_rows(path: str) -> int:
    """Rows of a Parquet file, from its footer."""
    parquet = _parquet_file(path)
    try:
        return int(parquet.metadata.num_rows)
    finally:
        parquet.close()


def _parquet_batches(parquet, columns, batch_size: int, start: int, stop: int | None):
    if start == 0 and stop is None:
        yield from parquet.iter_batches(batch_size=batch_size, columns=columns)
        return
    # Only the row groups holding rows start:stop, streamed in batches: reading a whole
    # group at once took ~40% more CPU on a 100,000-row group (its text allocated and
    # touched in one go).
    groups, first, row = [], 0, None
    for group in range(parquet.metadata.num_row_groups):
        n = parquet.metadata.row_group(group).num_rows
        if first + n > start and (stop is None or first < stop):
            row = first if row is None else row
            groups.append(group)
        first += n
    if not groups:
        return
    for batch in parquet.iter_batches(batch_size=batch_size, row_groups=groups, columns=columns):
        lo = max(start - row, 0)
        hi = batch.num_rows if stop is None else min(stop - row, batch.num_rows)
        if lo < hi:
            yield batch.slice(lo, hi - lo)
        row += batch.num_rows
        if stop is not None and row >= stop:
            return


def txtdir_records(path: str, errors: str) -> Iterator[Record]:
    """Stream the ``.txt`` files under a directory, recursively, sorted by relative path.

    Each record is ``{"id": relative POSIX path, "text": file content}``; one file is in
    memory at a time.
    """
    root = Path(path)
    files = sorted(
        (p.relative_to(root).as_posix(), p) for p in root.rglob("*.txt") if p.is_file()
    )
    sgm = sum(1 for p in root.rglob("*.sgm") if p.is_file())
    hint = (f" It holds {sgm} .sgm file(s), which a directory read skips: pass them "
            f"({path.rstrip('/')}/*.sgm) to read Reuters-21578 SGML.") if sgm else ""
    if not files:
        others = sum(1 for p in root.rglob("*") if p.is_file())
        warnings.warn(
            f"{path}: the directory holds no .txt files ({others} other file(s)), so it "
            f"yields no documents.{hint}",
            UserWarning,
            stacklevel=3,
        )
    elif sgm:
        warnings.warn(f"{path}: reading its {len(files)} .txt file(s) only.{hint}",
                      UserWarning, stacklevel=3)
    decoder = Utf8Decoder(path, errors)
    try:
        for row, (relative, file) in enumerate(files):
            data = file.read_bytes()
            offset = 0
            if data.startswith(_BOM):
                data, offset = data[len(_BOM) :], len(_BOM)
            text = decoder.decode(data, offset, f"file {relative!r}")
            yield row, None, {"id": relative, "text": text}
    finally:
        decoder.finish()

