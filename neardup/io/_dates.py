"""Date values -> seconds since the Unix epoch, for ``DocumentBatch.dates`` (datetime64[s]).

Accepted values (anything else is reported by the caller as an :class:`InputError`):

* ``None``, ``""`` and float NaN: a missing date (NaT);
* ``int`` and finite ``float``: epoch seconds (floats are floored to the second);
* a string of only digits, optionally signed: epoch seconds (CSV has no integer type);
* ISO 8601 strings, as ``datetime.fromisoformat`` reads them: ``2024-05-01``,
  ``2024-05-01T12:00:00``, ``2024-05-01 12:00:00.5``, ``2024-05-01T12:00:00Z``,
  ``2024-05-01T12:00:00+02:00``;
* Reuters-21578 dates: ``26-FEB-1987 15:01:01.79`` (leading blanks and trailing noise allowed);
* ``datetime.datetime`` and ``datetime.date`` objects (Parquet timestamp and date columns).

Times with a UTC offset are converted to UTC; naive times are taken as UTC. Sub-second
parts are dropped, because the batch dtype is ``datetime64[s]``.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any

import numpy as np

from neardup.errors import InputError, short_repr

__all__ = ["NAT", "DATE_FORMATS_HINT", "to_epoch_seconds", "reuters_epoch_seconds", "as_datetime64"]

#: The int64 value numpy uses for NaT.
NAT = np.iinfo(np.int64).min

DATE_FORMATS_HINT = (
    "Accepted: ISO 8601 ('2024-05-01', '2024-05-01T12:00:00Z'), epoch seconds "
    "(1714564800), or Reuters style ('26-FEB-1987 15:01:01.79'); use null or an "
    "empty value for a missing date."
)

_EPOCH = _dt.datetime(1970, 1, 1)
_SECOND = _dt.timedelta(seconds=1)
_INTEGER = re.compile(r"[+-]?\d+")
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
        start=1,
    )
}
# Day-MON-year, then the time of day; Reuters <DATE> elements may carry noise after it.
_REUTERS = re.compile(
    r"\s*(\d{1,2})-([A-Za-z]{3})-(\d{4})\s+(\d{1,2}):(\d{2}):(\d{2})(?:\.\d+)?"
)
_INT64_MIN = -(2**63) + 1  # exclusive of NaT
_INT64_MAX = 2**63 - 1


def _datetime_seconds(value: _dt.datetime) -> int:
    offset = value.utcoffset() if value.tzinfo is not None else None
    seconds = (value.replace(tzinfo=None) - _EPOCH) // _SECOND
    # The offset subtracted as seconds: converting to UTC first overflows in years 1 and 9999.
    return seconds if offset is None else seconds - offset // _SECOND


def reuters_epoch_seconds(text: str) -> int | None:
    """Parse a Reuters-21578 date such as ``' 26-FEB-1987 15:01:01.79'``.

    Returns epoch seconds, or None when ``text`` does not start with such a date or
    names an impossible one (the collection has one story dated ``605:12:19.12``).
    """
    match = _REUTERS.match(text)
    if match is None:
        return None
    day, month, year, hour, minute, second = match.groups()
    month_number = _MONTHS.get(month.upper())
    if month_number is None:
        return None
    try:
        value = _dt.datetime(
            int(year), month_number, int(day), int(hour), int(minute), int(second)
        )
    except ValueError:
        return None
    return _datetime_seconds(value)


def to_epoch_seconds(value: Any) -> int | None:
    """Convert one date value (see the module docstring) to epoch seconds.

    Returns None for a missing date. Raises ValueError (with a short reason) when the
    value is present but is not a date.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a date")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            raise ValueError("an infinite number is not a date")
        seconds = math.floor(value)
    elif isinstance(value, _dt.datetime):
        seconds = _datetime_seconds(value)
    elif isinstance(value, _dt.date):
        seconds = _datetime_seconds(_dt.datetime(value.year, value.month, value.day))
    elif isinstance(value, str):
        seconds = _string_seconds(value)
        if seconds is None:
            return None
    else:
        raise ValueError(f"a value of type {type(value).__name__} is not a date")
    if not _INT64_MIN <= seconds <= _INT64_MAX:
        raise ValueError("out of the datetime64[s] range")
    return seconds


def _string_seconds(value: str) -> int | None:
    text = value.strip()
    if not text:
        return None
    if _INTEGER.fullmatch(text):
        if len(text.lstrip("+-").lstrip("0")) > 19:  # past int64 (and int()'s digit limit)
            raise ValueError("out of the datetime64[s] range")
        return int(text)
    if _REUTERS.match(text):
        seconds = reuters_epoch_seconds(text)
        if seconds is None:
            raise ValueError("not a valid Reuters-style date")
        return seconds
    try:
        parsed = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("not an ISO 8601 date") from None
    return _datetime_seconds(parsed)


def as_datetime64(seconds: list[int | None]) -> np.ndarray:
    """Turn a list of epoch seconds (None = missing) into a datetime64[s] array."""
    raw = np.fromiter((NAT if s is None else s for s in seconds), dtype=np.int64, count=len(seconds))
    return raw.view("datetime64[s]")


def field_epoch_seconds(record: Any, field: str, where: str) -> int | None:
    """The date in ``record[field]`` as epoch seconds (None when missing); an InputError
    naming ``where`` (file and row, or record number) when the value is not a date."""
    value = record.get(field)
    try:
        return to_epoch_seconds(value)
    except (ValueError, OverflowError) as exc:
        raise InputError(
            f"{where}: date field {field!r} holds {short_repr(value)}, which is not a date ({exc}). "
            f"{DATE_FORMATS_HINT}"
        ) from None
