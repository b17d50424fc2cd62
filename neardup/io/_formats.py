"""Per-format record streams: JSON Lines, CSV, TSV, Parquet and directories of .txt files.

Each stream yields ``(row, line, record)``: the record's index within its input (from 0),
the 1-based line it starts on (None for formats without lines), and the record as a
dict. Streams hold at most one line, one Parquet record batch or one .txt file in
memory. They raise :class:`InputError` for input they cannot read and never skip a
record; blank lines in line-based formats are not records.

UTF-8 is decoded one line (or file) at a time so that an error can name the byte
offset. Under ``errors="replace"`` invalid sequences become U+FFFD and one warning per
input counts them.

TSV is plain TSV (the IANA ``text/tab-separated-values`` form): one record per line,
fields split at every tab, no quoting, so a quote is an ordinary character and a field
cannot hold a tab or a line break. CSV follows RFC 4180 (the csv module's ``excel``
dialect, strict): a quoted field may span lines.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import sys
import warnings
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from neardup.errors import InputError, setting
from neardup.io.locations import locate, storage_error

try:  # orjson is optional and several times faster; both raise json.JSONDecodeError
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None
    _loads = json.loads

__all__ = [
    "InvalidUtf8Warning",
    "MAX_JSON_DEPTH",
    "Utf8Decoder",
    "arrow_records",
    "delimited_records",
    "escape_surrogates",
    "jsonl_records",
    "parquet_batches",
    "parquet_columns",
    "parquet_num_rows",
    "parquet_records",
    "parquet_schema",
    "csv_records",
    "tsv_records",
    "txtdir_records",
]

Record = tuple[int, "int | None", dict[str, Any]]

_BOM = b"\xef\xbb\xbf"
_REPLACEMENT_BYTES = "\ufffd".encode()
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a \ud800-\udfff escape in JSON text
# csv's default limit (128 KiB) is too small for real documents; raised when a CSV is read.
_CSV_FIELD_LIMIT = 2**31 - 1
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_ANY_SURROGATE = re.compile("[\ud800-\udfff]")

#: JSON nested deeper than this (arrays and objects) is refused with an InputError: the
#: standard library's parser would fail with a RecursionError somewhere above 900, and
#: the writers must be able to write back every record the readers return.
MAX_JSON_DEPTH = 200


class InvalidUtf8Warning(UserWarning, UnicodeWarning):
    """Invalid UTF-8 was replaced with U+FFFD (``errors="replace"``). A UserWarning, so the
    command line shows it as one line about the input, and a UnicodeWarning."""


def escape_surrogates(text: str) -> str:
    """``text`` with every lone surrogate spelled as a backslash escape: a byte of an
    undecodable file name (``os.fsdecode`` keeps it as U+DC80-U+DCFF) as ``\\xe9``, any
    other surrogate as ``\\udXXX``. Messages naming such paths can then be printed."""
    if not _ANY_SURROGATE.search(text):
        return text

    def spell(match: re.Match[str]) -> str:
        code = ord(match.group(0))
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"

    return _ANY_SURROGATE.sub(spell, text)


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
                if offset == 0 and data.startswith(_UTF16_BOMS):
                    advice = ("The file starts with a UTF-16 byte-order mark, so it is UTF-16: "
                              "convert it to UTF-8 (e.g. iconv -f UTF-16 -t UTF-8).")
                else:
                    advice = (f"Convert the file to UTF-8 (e.g. with iconv), or pass "
                              f"{_REPLACE()} to substitute U+FFFD.")
                raise InputError(
                    f"{escape_surrogates(self.path)}, {where}: invalid UTF-8 at byte offset "
                    f"{offset + exc.start} (bytes {bad.hex(' ')}). {advice}"
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
                f"{escape_surrogates(self.path)}, {where}: the escape \\u{ord(found[0]):04x} is an unpaired "
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
                f"{escape_surrogates(self.path)}: replaced {self.replaced} invalid UTF-8 "
                f"sequence(s) in {self.records} record(s) with U+FFFD ({_REPLACE()}).",
                InvalidUtf8Warning,
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


def _open_binary(path: str, options: Mapping[str, Any] | None = None):
    """The input's bytes (decompressed for ``.gz``), from the local disk or a URL."""
    handle = locate(path, options).open("rb")
    if path.lower().endswith(".gz"):
        return _Gzip(handle)
    return handle


class _Gzip(gzip.GzipFile):
    """A gzip reader that closes the file it reads (GzipFile leaves a given one open)."""

    def __init__(self, handle) -> None:
        super().__init__(fileobj=handle, mode="rb")
        self._source = handle

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._source.close()


def jsonl_records(path: str, errors: str, keys: tuple[str, ...] = (),
                  options: Mapping[str, Any] | None = None) -> Iterator[Record]:
    """Stream the objects of a JSON Lines file (``.jsonl``, ``.json``, optionally ``.gz``).

    Byte offsets in messages count from the start of the (decompressed) data. An object
    that names one of ``keys`` (the text, id and date fields) twice is an error, as is
    JSON nested more than :data:`MAX_JSON_DEPTH` levels deep or an integer too long to
    convert (over 4,300 digits).
    """
    decoder = Utf8Decoder(path, errors)
    row = 0
    offset = 0
    lineno = 0
    quoted_keys = tuple((key, json.dumps(key, ensure_ascii=False)) for key in keys)
    try:
        with _open_binary(path, options) as handle:
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
                for key, quoted in quoted_keys:
                    if text.count(quoted) > 1:
                        _check_unique_keys(path, lineno, text, keys)
                        break
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
    if orjson is not None:
        try:
            record = orjson.loads(text)
        except ValueError:
            # orjson refuses what the standard library reads (unpaired surrogate escapes,
            # NaN, integers beyond 64 bits) and has its own depth limit: the standard
            # library decides, so that both environments read the same files.
            pass
        else:
            _check_depth(path, lineno, text, record)
            return record
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(_bad_json_message(path, lineno, text, exc)) from None
    except RecursionError:
        raise InputError(_too_deep_message(path, lineno)) from None
    except ValueError:  # the only other one: an integer too long to convert
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        raise InputError(
            f"{path}, line {lineno}: a number in the record has more than {limit:,} digits, "
            "which neardup does not read. Store such numbers as strings (in quotes)."
        ) from None
    _check_depth(path, lineno, text, record)
    return record


def _too_deep_message(path: str, lineno: int) -> str:
    return (f"{path}, line {lineno}: the JSON is nested more than {MAX_JSON_DEPTH} levels deep "
            "(arrays or objects inside each other), which neardup does not read. Flatten the "
            "record, or store the deep value as a string.")


def _check_depth(path: str, lineno: int, text: str, record: Any) -> None:
    """Refuse records nested deeper than MAX_JSON_DEPTH (only counted when the line holds
    enough brackets to be that deep)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return
    stack = [(record, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InputError(_too_deep_message(path, lineno))
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values()
                         if isinstance(item, (dict, list)))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value if isinstance(item, (dict, list)))


def _check_unique_keys(path: str, lineno: int, text: str, keys: tuple[str, ...]) -> None:
    """The record's top-level object must not name any of ``keys`` twice (JSON parsers
    keep the last value, silently)."""
    repeated: list[list[str]] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
        names = [name for name, _ in pairs]
        repeated.append([name for name in dict.fromkeys(names) if names.count(name) > 1])
        return dict(pairs)

    json.loads(text, object_pairs_hook=pairs_hook)  # parsed once already: cannot fail here
    twice = [name for name in repeated[-1] if name in keys] if repeated else []
    if twice:
        raise InputError(
            f"{path}, line {lineno}: the object names the key {twice[0]!r} twice, so one of "
            "its values would be lost. Keep one value per key."
        )


def _bad_json_message(path: str, lineno: int, text: str, exc: ValueError) -> str:
    detail = getattr(exc, "msg", None) or str(exc)
    column = getattr(exc, "colno", None)
    where = f"line {lineno}" + (f", column {column}" if column else "")
    message = f"{path}, {where}: malformed JSON ({detail}): {text.strip()[:80]!r}."
    stripped = text.strip()
    if lineno == 1 and stripped.startswith("["):
        message += (
            " The file looks like one JSON array; neardup reads JSON Lines, one object "
            "per line."
        )
    elif stripped == "{":
        message += (
            " The file looks like pretty-printed JSON; neardup reads JSON Lines, one "
            "complete object per line."
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
    path: str, errors: str, delimiter: str, require: tuple[str, ...] = (),
    options: Mapping[str, Any] | None = None,
) -> Iterator[Record]:
    """Stream the rows of a CSV file (or, with ``delimiter="\\t"``, a TSV file: see
    :func:`tsv_records`) with a header line, as dicts of strings."""
    if delimiter == "\t":
        return tsv_records(path, errors, require, options)
    return csv_records(path, errors, delimiter, require, options)


def csv_records(
    path: str, errors: str, delimiter: str = ",", require: tuple[str, ...] = (),
    options: Mapping[str, Any] | None = None,
) -> Iterator[Record]:
    """Stream the rows of a CSV file with a header line, as dicts of strings.

    Quoting follows RFC 4180 (the csv module's ``excel`` dialect, strict): fields holding
    the delimiter, quotes or line breaks are quoted, so a quoted field may span several
    lines; ``line`` is where the record starts. ``require`` names columns that must be in
    the header. A quote left open runs to the end of the file and is an error. Since a
    quote opened by mistake and closed by another mistake further down swallows the lines
    between, a warning counts the records that span several lines when a line inside
    their quotes has the shape of a record of its own (as many delimiters as the header).
    """
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    decoder = Utf8Decoder(path, errors)
    state = [0]
    kind = "CSV"
    suspicious: list[tuple[int, int]] = []  # (record start, the line inside it)
    try:
        with locate(path, options).open("rb") as handle:
            lines = _decoded_lines(handle, decoder, state)
            recent: list[str] = []  # the lines of the record being read

            def remembered() -> Iterator[str]:
                for line in lines:
                    recent.append(line)
                    yield line

            reader = csv.reader(remembered(), delimiter=delimiter, strict=True)
            try:
                header = next(reader, None)
                if header is None:
                    return
                _check_header(path, header, require)
                width = len(header)
                row = 0
                while True:
                    recent.clear()
                    start = state[0] + 1
                    fields = next(reader, None)
                    if fields is None:
                        return
                    if not fields:
                        continue  # a blank line is not a record
                    if len(fields) != width:
                        raise InputError(
                            f"{path}, line {start}: the record has {len(fields)} field(s) but "
                            f"the header has {width}. Quote fields that contain the "
                            f"delimiter {delimiter!r}, quotes or line breaks."
                        )
                    if len(recent) > 1 and width > 1:
                        for number, inner in enumerate(recent[1:], start=start + 1):
                            if inner.count(delimiter) == width - 1:
                                suspicious.append((start, number))
                                break
                    yield row, start, dict(zip(header, fields))
                    row += 1
            except csv.Error as exc:
                raise InputError(_csv_error_message(path, state[0], kind, exc)) from None
    finally:
        if suspicious:
            start, number = suspicious[0]
            warnings.warn(
                f"{escape_surrogates(path)}: {len(suspicious)} record(s) hold line breaks "
                "inside quotes where a line has the shape of a record of its own (first: "
                f"line {number}, inside the record that starts at line {start}). If the quote "
                f"that opens a field at line {start} is part of the text, the lines up to its "
                "closing quote were read as that one field: quote the field and double the "
                "quotes inside it.",
                UserWarning,
                stacklevel=3,
            )
        decoder.finish()


def _csv_error_message(path: str, lineno: int, kind: str, exc: Exception) -> str:
    detail = str(exc)
    if "new-line character" in detail:
        return (f"{path}, line {lineno}: malformed {kind}: a carriage return (\\r) inside an "
                "unquoted field. If the file ends its lines with a bare carriage return, "
                "convert them to line feeds (\\n or \\r\\n); otherwise quote the field.")
    if "unexpected end of data" in detail:
        return (f"{path}, line {lineno}: malformed {kind}: the file ends inside a quoted field. "
                "A quote opened a field and was never closed: quote the field and double the "
                "quotes inside it.")
    return f"{path}, line {lineno}: malformed {kind} ({detail}). Check the quoting near this line."


def tsv_records(path: str, errors: str, require: tuple[str, ...] = (),
                options: Mapping[str, Any] | None = None) -> Iterator[Record]:
    """Stream the rows of a plain TSV file with a header line, as dicts of strings.

    One record per line, fields split at every tab, nothing unquoted or unescaped: a
    quote is an ordinary character. A line ends with a line feed, optionally preceded
    by a carriage return (so LF, CRLF and a mix of both read alike); any other carriage
    return is an error. Every line after the header is one record, and a line
    whose field count differs from the header's is an error naming it, so no line is
    ever merged into another or dropped. A blank line is an empty text in a one-column
    file, and is skipped in a file of several columns (where it cannot be a record).
    """
    decoder = Utf8Decoder(path, errors)
    try:
        with locate(path, options).open("rb") as handle:
            header: list[str] | None = None
            row = 0
            offset = 0
            for lineno, raw in enumerate(handle, start=1):
                start, offset = offset, offset + len(raw)
                if lineno == 1 and raw.startswith(_BOM):
                    raw, start = raw[len(_BOM) :], start + len(_BOM)
                body = raw[:-1] if raw.endswith(b"\n") else raw
                if body.endswith(b"\r"):
                    body = body[:-1]
                if b"\r" in body:
                    raise InputError(
                        f"{path}, line {lineno}: a carriage return (\\r) inside the line. TSV "
                        "fields cannot hold line breaks. If the file ends its lines with a "
                        "bare carriage return, convert them to line feeds (\\n or \\r\\n)."
                    )
                if header is None:
                    fields = decoder.decode(body, start, f"line {lineno}").split("\t")
                    if body == b"":
                        raise InputError(
                            f"{path}, line 1: the first line is blank; it must be the header "
                            "naming the columns."
                        )
                    _check_header(path, fields, require)
                    header = fields
                    continue
                if not body and len(header) > 1:
                    continue  # a blank line cannot be a record of several fields
                fields = decoder.decode(body, start, f"line {lineno}").split("\t")
                if len(fields) != len(header):
                    raise InputError(
                        f"{path}, line {lineno}: the record has {len(fields)} field(s) but the "
                        f"header has {len(header)}. TSV has no quoting: a field cannot hold a "
                        "tab or a line break, and each line is one record. Remove them from "
                        "the texts, or write the corpus as CSV, JSON Lines or Parquet."
                    )
                yield row, lineno, dict(zip(header, fields))
                row += 1
    finally:
        decoder.finish()


def _check_header(path: str, header: list[str], require: tuple[str, ...]) -> None:
    if not header or header == [""]:
        raise InputError(
            f"{path}, line 1: the first line is blank; it must be the header naming the "
            "columns."
        )
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
            quoted = (" The names are in quotes, which TSV does not remove: write the header "
                      "without them." if f'"{name}"' in seen else "")
            raise InputError(
                f"{path}, line 1: no column {name!r} in the header; the columns are "
                f"{', '.join(repr(h) for h in header)}. Set {_FIELDS()} to the right column."
                f"{quoted}"
            )


def parquet_columns(path: str, options: Mapping[str, Any] | None = None) -> list[str]:
    """Column names of a Parquet file (raises InputError if it is not readable Parquet)."""
    parquet = _parquet_file(path, options)
    try:
        return list(parquet.schema_arrow.names)
    finally:
        _close(parquet)


def _parquet_file(path: str, options: Mapping[str, Any] | None = None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    location = locate(path, options)
    if location.local:
        source = location.path
    else:
        try:
            source = location.arrow_filesystem().open_input_file(location.path)
        except Exception as exc:  # noqa: BLE001 - storage failures are reported alike
            raise storage_error(exc, location, "") from None
    try:
        # No pre-buffering: Arrow's pre-buffer cache keeps every row group's bytes read so
        # far until the file is closed, so memory grew with the file (0.74 KiB per
        # document streaming the decontamination benchmark's train.parquet).
        return pq.ParquetFile(source, pre_buffer=False)
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
    options: Mapping[str, Any] | None = None,
) -> Iterator[Record]:
    """Stream the rows of a Parquet file, reading only ``columns`` (None = all); with
    ``start``/``stop``, only rows ``start:stop`` (0-based row numbers), decoding only the
    row groups that hold them (a shard of a large file)."""
    parquet = _parquet_file(path, options)
    yield from _table_records(path, parquet, parquet.schema_arrow.names, require,
                              _parquet_batches(parquet, columns, batch_size, start, stop), start)


def arrow_records(
    path: str,
    columns: list[str] | None,
    batch_size: int,
    require: tuple[str, ...] = (),
    *,
    options: Mapping[str, Any] | None = None,
) -> Iterator[Record]:
    """Stream the rows of an Arrow IPC stream file (the ``.arrow`` files of a Hugging Face
    dataset saved with ``save_to_disk``), reading only ``columns`` (None = all)."""
    import pyarrow as pa

    location = locate(path, options)
    try:
        handle = location.open("rb")
    except Exception as exc:  # noqa: BLE001 - storage failures are reported alike
        raise storage_error(exc, location, "") from None
    try:
        try:
            stream = pa.ipc.open_stream(handle)
        except pa.ArrowException as exc:
            raise InputError(f"{path}: not a readable Arrow stream file ({exc}).") from None
        names = stream.schema.names

        def batches():
            for batch in stream:
                if columns is not None:
                    batch = batch.select(columns)
                for offset in range(0, batch.num_rows, batch_size):
                    yield batch.slice(offset, batch_size)

        yield from _table_records(path, stream, names, require, batches(), 0)
    finally:
        handle.close()


def _table_records(path: str, source, names: list[str], require: tuple[str, ...], batches,
                   start: int) -> Iterator[Record]:
    """The rows of Arrow record ``batches`` (of a Parquet or Arrow file with columns
    ``names``) as records numbered from ``start``; ``source`` is closed at the end."""
    import pyarrow as pa

    for row, batch in _checked_batches(path, source, names, require, batches, start):
        try:
            records = batch.to_pylist()
        except (ValueError, OverflowError, ArithmeticError) as exc:
            # e.g. a timestamp or date outside the years 1-9999 Python can represent
            rows = (f"row {row}" if batch.num_rows == 1
                    else f"rows {row}-{row + batch.num_rows - 1}")
            raise InputError(
                f"{path}, {rows} (0-based): a value cannot "
                f"be converted ({exc}); for example a timestamp outside the years 1-9999."
            ) from None
        except pa.ArrowException as exc:
            raise InputError(f"{path}, row {row} (0-based): cannot read the data ({exc}).") from None
        for record in records:
            yield row, None, record
            row += 1


def parquet_batches(path: str, batch_size: int, *, start: int = 0, stop: int | None = None,
                    options: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """The record batches of a Parquet file (rows ``start:stop``), every column, in the
    order (and with the checks) of :func:`parquet_records`: the rows as Arrow, never as
    Python objects."""
    parquet = _parquet_file(path, options)
    for _row, batch in _checked_batches(path, parquet, parquet.schema_arrow.names, (),
                                        _parquet_batches(parquet, None, batch_size, start, stop),
                                        start):
        yield batch


def parquet_schema(path: str, options: Mapping[str, Any] | None = None) -> Any:
    """The Arrow schema of a Parquet file, from its footer."""
    parquet = _parquet_file(path, options)
    try:
        return parquet.schema_arrow
    finally:
        _close(parquet)


def _checked_batches(path: str, source, names: list[str], require: tuple[str, ...], batches,
                     start: int) -> Iterator[tuple[int, Any]]:
    """``(first row, batch)`` for each of ``batches`` (of a Parquet or Arrow file with
    columns ``names``), rows numbered from ``start``, after checking the columns;
    ``source`` is closed at the end."""
    import pyarrow as pa

    twice = [name for name in dict.fromkeys(names) if names.count(name) > 1]
    if twice:
        _close(source)
        raise InputError(
            f"{path}: the file has two columns named {twice[0]!r}; column names must be "
            "unique (a record could keep only one of them)."
        )
    for name in require:
        if name not in names:
            _close(source)
            raise InputError(
                f"{path}: no column {name!r}, so no row has it; the columns are "
                f"{', '.join(repr(n) for n in names)}. Set {_FIELDS()} to the right column."
            )
    row = start
    try:
        for batch in batches:
            yield row, batch
            row += batch.num_rows
    except pa.ArrowException as exc:
        raise InputError(
            f"{path}, row {row} (0-based): cannot read the data ({exc})."
        ) from None
    finally:
        _close(source)


def _close(source) -> None:
    """Close a ParquetFile (and the remote file it reads) or an Arrow stream reader."""
    import pyarrow.parquet as pq

    if isinstance(source, pq.ParquetFile):
        source.close(force=True)
    elif hasattr(source, "close"):
        source.close()


def parquet_num_rows(path: str, options: Mapping[str, Any] | None = None) -> int:
    """Rows of a Parquet file, from its footer."""
    parquet = _parquet_file(path, options)
    try:
        return int(parquet.metadata.num_rows)
    finally:
        _close(parquet)


def parquet_row_groups(path: str, options: Mapping[str, Any] | None = None) -> list[int]:
    """Rows of each row group of a Parquet file, from its footer."""
    parquet = _parquet_file(path, options)
    try:
        return [parquet.metadata.row_group(g).num_rows for g in range(parquet.metadata.num_row_groups)]
    finally:
        _close(parquet)


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
    """Stream the ``.txt`` files (``.TXT`` too) under a directory, recursively, sorted by
    relative path.

    Each record is ``{"id": relative POSIX path, "text": file content}``; one file is in
    memory at a time. A file name that is not valid UTF-8 cannot be an id (no output
    could write it): it is an error naming the directory and the name, its undecodable
    bytes spelled ``\\xNN``, before any file is read.
    """
    root = Path(path)
    try:
        every = list(root.rglob("*"))
        # Case-insensitive, as detect_format reads extensions: "A.TXT" is a text file too.
        found = [p for p in every if p.name.lower().endswith(".txt")]
        files = sorted((p.relative_to(root).as_posix(), p) for p in found if p.is_file())
        broken = sorted(p.relative_to(root).as_posix() for p in found
                        if p.is_symlink() and not p.exists())
        sgm = sum(1 for p in every if p.name.lower().endswith(".sgm") and p.is_file())
    except OSError as exc:
        raise InputError(
            f"{path}: cannot list the directory ({exc.strerror or exc}"
            f"{': ' + str(exc.filename) if exc.filename else ''})."
        ) from None
    if broken:
        raise InputError(
            f"{path}, file '{escape_surrogates(broken[0])}': a symbolic link to a file that "
            f"does not exist ({len(broken)} such link(s)), so its document cannot be read. "
            "Remove the link or restore its target."
        )
    for relative, _ in files:
        if _ANY_SURROGATE.search(relative):
            raise InputError(
                f"{path}: the file name '{escape_surrogates(relative)}' is not valid UTF-8 "
                "(undecodable bytes shown as \\xNN), so it cannot be the document's id. "
                "Rename the file (e.g. with convmv) to UTF-8."
            )
    shown = escape_surrogates(path)
    hint = (f" It holds {sgm} .sgm file(s), which a directory read skips: pass them "
            f"({shown.rstrip('/')}/*.sgm) to read Reuters-21578 SGML.") if sgm else ""
    if not files:
        others = [p for p in every if p.is_file()]
        if others:
            # Files of another kind (Parquet shards, JSON Lines parts): reading none of
            # them in silence would lose every document.
            kinds = sorted({"".join(p.suffixes[-2:]).lower() or "(no extension)" for p in others})
            example = next((k for k in kinds if k in (".parquet", ".jsonl", ".jsonl.gz", ".csv",
                                                      ".tsv", ".sgm")), None)
            shown_kinds = ", ".join(escape_surrogates(k) for k in kinds[:5])
            raise InputError(
                f"{shown}: a directory input is read as a directory of .txt files, and this "
                f"one holds none: {len(others)} other file(s) ({shown_kinds}). "
                + (f"Pass the files themselves as inputs, e.g. {shown.rstrip('/')}/*{example}."
                   if example else "Pass the files themselves as inputs.")
            )
        warnings.warn(f"{shown}: the directory is empty, so it yields no documents.",
                      UserWarning, stacklevel=3)
    elif sgm:
        warnings.warn(f"{shown}: reading its {len(files)} .txt file(s) only.{hint}",
                      UserWarning, stacklevel=3)
    decoder = Utf8Decoder(path, errors)
    try:
        for row, (relative, file) in enumerate(files):
            try:
                data = file.read_bytes()
            except OSError as exc:
                raise InputError(
                    f"{path}, file {relative!r}: cannot read it ({exc.strerror or exc})."
                ) from None
            offset = 0
            if data.startswith(_BOM):
                data, offset = data[len(_BOM) :], len(_BOM)
            text = decoder.decode(data, offset, f"file {relative!r}")
            yield row, None, {"id": relative, "text": text}
    finally:
        decoder.finish()
