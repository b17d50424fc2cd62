"""Which member of each cluster is kept: the keep policies, one rule for every engine.

A policy is a pure function of per-document keys (:class:`KeepKeys`: input position,
text length, date, one numeric value), so the in-memory, out-of-core and Ray engines,
which all hold these keys, choose the same record. Every policy ends its order with the
input position, so ties always break the same way: the member that comes first in the
input wins.

=================  =====================================================================
policy             the kept member of each cluster
=================  =====================================================================
``first``          the first in input order
``last``           the last in input order
``longest``        the longest raw text (characters); ties: first in input order
``earliest``       the oldest date; undated members only when none is dated; ties: first
``latest``         the newest date; undated members only when none is dated; ties: first
``most-complete``  the most non-empty fields (a field is empty when missing, null, an
                   empty or blank string, or an empty list or mapping); ties: the longest
                   text, then first in input order
``by field``       (``keep_by=FIELD``) the largest value of the numeric field; members
                   without a value only when none has one; ties: first in input order
=================  =====================================================================
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from neardup.errors import InputError, ParameterError

__all__ = [
    "KEEP_RULES",
    "KeepKeys",
    "KeepPolicy",
    "choose_representatives",
    "filled_fields",
    "record_values",
    "table_values",
]

KEEP_RULES = ("longest", "first", "last", "earliest", "latest", "most-complete")


@dataclass(frozen=True)
class KeepPolicy:
    """A keep rule, or the largest value of a numeric field (``field``; then ``rule`` is
    ignored and reported as ``"by-field"``)."""

    rule: str = "longest"
    field: str | None = None

    @classmethod
    def make(cls, caller: str, keep: str | None, keep_by: str | None) -> KeepPolicy:
        """The checked policy of a front end's ``keep`` and ``keep_by`` (None: unset)."""
        if keep is not None and keep not in KEEP_RULES:
            raise ParameterError(caller, "keep", f"one of {', '.join(map(repr, KEEP_RULES))}", keep)
        if keep_by is not None:
            if not isinstance(keep_by, str) or not keep_by:
                raise ParameterError(caller, "keep_by", "a field name", keep_by)
            if keep is not None:
                raise ParameterError(
                    caller, "keep", "unset when keep_by is given", keep,
                    f"keep_by={keep_by!r} already chooses the member with the largest value.")
        return cls(rule=keep or "longest", field=keep_by)

    @property
    def name(self) -> str:
        return f"by-field:{self.field}" if self.field is not None else self.rule

    @property
    def needs_values(self) -> bool:
        """Whether the policy reads a value per record (:func:`record_values`)."""
        return self.field is not None or self.rule == "most-complete"

    @property
    def needs_dates(self) -> bool:
        return self.field is None and self.rule in ("earliest", "latest")


@dataclass(frozen=True)
class KeepKeys:
    """Per-document keys of the documents being assigned, all of shape (n,).

    positions : int64, global input positions (the tie-break)
    lengths : int64, raw text length in characters
    dates : datetime64[s] (NaT unknown), or None when the policy reads none
    values : float64 (NaN unknown): the field's value (``by field``) or the number of
        filled fields (``most-complete``), or None when the policy reads none
    """

    positions: np.ndarray
    lengths: np.ndarray
    dates: np.ndarray | None = None
    values: np.ndarray | None = None


def _sort_keys(keys: KeepKeys, policy: KeepPolicy) -> list[np.ndarray]:
    """Keys for ``np.lexsort`` (least significant first) putting each cluster's kept
    member first; the position always comes first in the list (the final tie-break)."""
    position = np.asarray(keys.positions, np.int64)
    n = position.size
    if policy.field is not None or policy.rule == "most-complete":
        values = _required(keys.values, n, policy)
        missing = np.isnan(values)
        best_first = -np.where(missing, 0.0, values)
        if policy.field is not None:
            return [position, best_first, missing]
        return [position, -np.asarray(keys.lengths, np.int64), best_first, missing]
    if policy.rule == "first":
        return [position]
    if policy.rule == "last":
        return [-position]
    if policy.rule == "longest":
        return [position, -np.asarray(keys.lengths, np.int64)]
    dates = keys.dates
    if dates is None:  # no dates at all: every member undated, the first wins
        return [position]
    dates = np.asarray(dates, "datetime64[s]")
    missing = np.isnat(dates)
    seconds = np.where(missing, 0, dates.astype(np.int64))
    return [position, seconds if policy.rule == "earliest" else -seconds, missing]


def _required(values: np.ndarray | None, n: int, policy: KeepPolicy) -> np.ndarray:
    if values is None or np.shape(values) != (n,):
        raise ValueError(f"keep policy {policy.name!r} needs one value per document")
    return np.asarray(values, np.float64)


def choose_representatives(labels: np.ndarray, keys: KeepKeys | np.ndarray,
                           policy: KeepPolicy | str = "longest") -> np.ndarray:
    """One representative per cluster (bool, shape (n_docs,)) by ``policy``.

    ``labels``: a cluster id per document (any integers). ``keys``: the documents' keys
    (a bare array is taken as the lengths, positions 0..n-1). Linear after one sort.
    """
    labels = np.asarray(labels)
    if not isinstance(keys, KeepKeys):
        keys = KeepKeys(positions=np.arange(labels.size, dtype=np.int64), lengths=np.asarray(keys))
    if isinstance(policy, str):
        policy = KeepPolicy(rule=policy)
    out = np.zeros(labels.size, dtype=bool)
    if labels.size == 0:
        return out
    order = np.lexsort((*_sort_keys(keys, policy), labels))
    first = np.ones(labels.size, dtype=bool)
    first[1:] = labels[order][1:] != labels[order][:-1]
    out[order[first]] = True
    return out


def filled_fields(record: Mapping) -> int:
    """The number of non-empty fields of ``record`` (``most-complete``'s count)."""
    count = 0
    for value in record.values():
        if value is None:
            continue
        if isinstance(value, float) and math.isnan(value):
            continue
        if isinstance(value, str) and not value.strip():
            continue
        if isinstance(value, (list, tuple, dict)) and not value:
            continue
        count += 1
    return count


def _field_value(record: Mapping, field: str, row: int, flag: str) -> float:
    value = record.get(field) if isinstance(record, Mapping) else None
    if value is None or value == "":
        return math.nan
    if isinstance(value, bool):
        value = int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"record {row}: field {field!r} ({flag}) must hold a number; got "
            f"{type(value).__name__} {value!r:.60}.") from None


def record_values(records: Iterable[Mapping], policy: KeepPolicy, n: int | None = None,
                  flag: str = "keep_by") -> np.ndarray:
    """Each record's value for ``policy`` (float64, NaN unknown), in order: the named
    field's number, or :func:`filled_fields`. One pass; 8 bytes per record kept."""
    if policy.field is not None:
        field = policy.field
        values = (_field_value(r, field, row, flag) for row, r in enumerate(records))
    else:
        values = (float(filled_fields(r)) if isinstance(r, Mapping) else 1.0 for r in records)
    out = np.fromiter(values, np.float64, -1 if n is None else n)
    if policy.field is not None and out.size and np.isnan(out).all():
        raise InputError(
            f"no record has a number in field {policy.field!r} ({flag}), so no cluster could "
            "be decided by it. Name the numeric field that ranks the copies.")
    return out


def table_values(table, policy: KeepPolicy) -> np.ndarray:
    """:func:`record_values` of a pyarrow Table's rows, column by column (no Python object
    per cell): the named numeric column, or each row's count of non-empty columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if policy.field is not None:
        if policy.field not in table.column_names:
            raise InputError(f"the table has no column {policy.field!r} (keep_by); its columns "
                             f"are {', '.join(map(repr, table.column_names))}.")
        column = table.column(policy.field)
        if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
                or pa.types.is_boolean(column.type)):
            raise InputError(f"column {policy.field!r} (keep_by) must hold numbers; it holds "
                             f"{column.type}.")
        return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    filled = np.zeros(table.num_rows, np.float64)
    for column in table.columns:
        present = pc.is_valid(column)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            present = pc.and_(present, pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(column)), 0))
        elif pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            present = pc.and_(present, pc.greater(pc.list_value_length(column), 0))
        elif pa.types.is_floating(column.type):
            present = pc.and_(present, pc.invert(pc.is_nan(column)))
        filled += pc.fill_null(present, False).to_numpy(zero_copy_only=False)
    return filled
