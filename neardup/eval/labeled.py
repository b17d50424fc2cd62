"""Labeled corpora: documents with ground-truth duplicate clusters and optional splits.

Two ways to give the ground truth, both read through :mod:`neardup.io` (JSON Lines,
Parquet, CSV/TSV):

1. a ``cluster`` field on every record: documents sharing a label are duplicates of
   each other, and a singleton has a label of its own;
2. a corpus plus a *pairs file* of ground-truth duplicate edges ``(id_a, id_b)``, the form
   NEWS-COPY (Silcock et al. 2022, section 3) ships: clusters are the connected components
   of the pairs (duplication is transitive), and every document in no pair is a
   singleton.

A ``split`` field (e.g. ``"validation"`` / ``"test"``, as NEWS-COPY's full-day samples)
lets thresholds be tuned on one part and reported on another; see
:mod:`neardup.eval.tuning`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup.errors import InputError
from neardup.graph import Pairs, connected_components
from neardup.io import ReaderConfig, detect_format, iter_records, read_corpus
from neardup.io import as_datetime64, field_epoch_seconds

__all__ = ["LabeledCorpus", "load_labeled"]

PAIR_FIELDS = ("id_a", "id_b")
_MISSING = object()
_READ_BATCH = 50_000


@dataclass(frozen=True, eq=False)
class LabeledCorpus:
    """Documents with their ground-truth clusters, in input order.

    Attributes
    ----------
    ids : ndarray of object (str), shape (n_docs,)
        Unique document ids.
    texts : list of str, length n_docs
        Raw texts.
    clusters : ndarray of object (str), shape (n_docs,)
        Ground-truth cluster label of each document; documents with the same label are
        duplicates. Only which documents share a label matters.
    splits : ndarray of object (str), shape (n_docs,), or None
        Split of each document (e.g. "validation", "test"); None when the data has no
        split field.
    dates : ndarray of datetime64[s], shape (n_docs,), or None
        Document dates (NaT where missing); None when the data has no date field.
    """

    ids: np.ndarray
    texts: list[str]
    clusters: np.ndarray
    splits: np.ndarray | None = None
    dates: np.ndarray | None = None

    def __post_init__(self) -> None:
        ids = np.asarray(self.ids, dtype=object)
        clusters = np.asarray(self.clusters, dtype=object)
        texts = list(self.texts)
        splits = None if self.splits is None else np.asarray(self.splits, dtype=object)
        dates = None if self.dates is None else np.asarray(self.dates, dtype="datetime64[s]")
        n = len(texts)
        for name, arr in (("ids", ids), ("clusters", clusters), ("splits", splits),
                          ("dates", dates)):
            if arr is not None and arr.shape != (n,):
                raise ValueError(
                    f"LabeledCorpus: parameter '{name}' must have one entry per text ({n}); "
                    f"got shape {arr.shape}."
                )
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "texts", texts)
        object.__setattr__(self, "clusters", clusters)
        object.__setattr__(self, "splits", splits)
        object.__setattr__(self, "dates", dates)

    def __len__(self) -> int:
        return len(self.texts)

    def __repr__(self) -> str:
        info = self.summary()
        splits = f", splits={info['splits']}" if "splits" in info else ""
        return f"LabeledCorpus(documents={info['documents']}, clusters={info['clusters']}{splits})"

    @property
    def split_names(self) -> list[str]:
        """The distinct split names, sorted (empty when there are no splits)."""
        if self.splits is None:
            return []
        return sorted(set(self.splits.tolist()))

    def select(self, positions: Any) -> LabeledCorpus:
        """The documents at ``positions`` (int array-like, or a bool mask of length n_docs),
        in that order."""
        index = np.asarray(positions)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        index = index.astype(np.int64, copy=False)
        return LabeledCorpus(
            ids=self.ids[index],
            texts=[self.texts[i] for i in index.tolist()],
            clusters=self.clusters[index],
            splits=None if self.splits is None else self.splits[index],
            dates=None if self.dates is None else self.dates[index],
        )

    def select_split(self, name: str) -> LabeledCorpus:
        """The documents of split ``name``, in input order.

        Raises
        ------
        ValueError
            When the corpus has no splits, or no document is in split ``name`` (the
            message lists the splits there are).
        """
        if self.splits is None:
            raise ValueError(
                f"select_split: the corpus has no split field, so there is no split {name!r}. "
                "Add a 'split' field to every record (e.g. 'validation' / 'test'), or name "
                "the field that holds it (split_field=..., --split-field)."
            )
        mask = self.splits == name
        if not mask.any():
            available = ", ".join(repr(s) for s in self.split_names)
            raise ValueError(
                f"select_split: parameter 'name' must be one of {available}; got {name!r}."
            )
        return self.select(mask)

    def content_hash(self) -> str:
        """SHA-256 (hex) of the ids, texts and cluster labels, in order.

        Two corpora hash alike exactly when they hold the same documents with the same
        labels in the same order; tuning files record it to identify the data they were
        tuned on.
        """
        digest = hashlib.sha256()
        for values in (self.ids.tolist(), self.texts, self.clusters.tolist()):
            for value in values:
                data = str(value).encode("utf-8", "surrogatepass")
                digest.update(len(data).to_bytes(8, "little"))
                digest.update(data)
        return digest.hexdigest()

    def summary(self) -> dict[str, Any]:
        """Counts: documents, true clusters, duplicate clusters, documents per split."""
        sizes = np.unique(self.clusters.astype(str), return_counts=True)[1]
        out: dict[str, Any] = {
            "documents": len(self),
            "clusters": int(sizes.size),
            "duplicate_clusters": int((sizes > 1).sum()),
            "documents_in_duplicate_clusters": int(sizes[sizes > 1].sum()),
        }
        if self.splits is not None:
            names, counts = np.unique(self.splits.astype(str), return_counts=True)
            out["splits"] = {str(n): int(c) for n, c in zip(names, counts)}
        return out


def load_labeled(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    pairs_path: str | os.PathLike | None = None,
    text_field: str = "text",
    id_field: str | None = "id",
    cluster_field: str = "cluster",
    split_field: str | None = "split",
    date_field: str | None = "date",
    errors: str = "strict",
) -> LabeledCorpus:
    """Read a labeled corpus.

    Parameters
    ----------
    paths : path or sequence of paths
        JSON Lines (optionally .gz), Parquet or CSV/TSV files, read in order (see
        :func:`neardup.io.read_corpus`).
    pairs_path : path or None, default None
        Ground-truth duplicate pairs: a JSON Lines / Parquet / CSV / TSV file with columns
        ``id_a`` and ``id_b``, or a ``.json`` file holding one array of ``[id_a, id_b]``
        pairs (the shape of NEWS-COPY's ground-truth edge lists). Clusters are then the
        connected components of the pairs, every document in no pair is a singleton,
        and ``cluster_field`` is not read. None reads ``cluster_field`` instead.
    text_field : str, default "text"
    id_field : str or None, default "id"
        Field with unique document ids (strings or integers). The pairs file refers to
        documents by these ids. None numbers documents "0", "1", ... by position.
    cluster_field : str, default "cluster"
        Field with the ground-truth cluster label (string or integer) of every record;
        give each singleton a label of its own (its id will do).
    split_field : str or None, default "split"
        Field naming each record's split. When no record has it, the corpus has no
        splits; when some records have it, all must. None reads no splits.
    date_field : str or None, default "date"
        Field with each document's date (ISO 8601, epoch seconds...); optional per
        record. None reads no dates.
    errors : {"strict", "replace"}, default "strict"
        Invalid UTF-8 handling, as in :class:`neardup.io.ReaderConfig`.

    Returns
    -------
    LabeledCorpus

    Raises
    ------
    InputError
        For unreadable input, a record without a text, id or cluster label, a label or
        split of the wrong type, a split given on some records only, an unparseable
        date, a pairs file without ``id_a``/``id_b``, or pairs naming ids that are not in
        the corpus.

    Warns
    -----
    UserWarning
        When a ground-truth cluster spans more than one split (per-split scores then
        ignore the links that cross splits).

    Examples
    --------
    >>> corpus = load_labeled("news.jsonl")  # doctest: +SKIP
    >>> corpus = load_labeled("articles.jsonl", pairs_path="gt_edges.csv")  # doctest: +SKIP
    >>> validation = corpus.select_split("validation")  # doctest: +SKIP
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("load_labeled: parameter 'paths' must name at least one file; got [].")
    config = ReaderConfig(
        text_field=text_field, id_field=id_field, errors=errors, batch_size=_READ_BATCH
    )
    ids: list[str] = []
    texts: list[str] = []
    places: list[tuple[str, int, int]] = []  # (source, first position, first row) per batch
    for batch in read_corpus(paths, config):
        places.append((batch.source, len(ids), int(batch.rows[0]) if len(batch) else 0))
        ids.extend(batch.ids)
        texts.extend(batch.texts)

    def where(position: int) -> str:
        for source, start, first_row in reversed(places):
            if position >= start:
                return f"{source}, record {first_row + position - start} (0-based)"
        return f"record {position}"  # pragma: no cover - every position has a batch

    clusters, splits, dates = _extra_fields(
        paths,
        config,
        len(ids),
        where,
        cluster_field=None if pairs_path is not None else cluster_field,
        split_field=split_field,
        date_field=date_field,
    )
    id_array = np.array(ids, dtype=object)
    if pairs_path is not None:
        clusters = _clusters_from_pairs(os.fspath(pairs_path), id_array, errors)
    corpus = LabeledCorpus(id_array, texts, clusters, splits, dates)
    _warn_cross_split(corpus)
    return corpus


def _label(value: Any, what: str, field: str, place: Callable[[], str]) -> str | None:
    """A cluster label, split name or id as str; None when absent (missing, null, empty).

    ``place`` describes the record for an error message (called only on error)."""
    if value is _MISSING or value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InputError(
        f"{place()}: {what} field {field!r} must be a string or an integer; got "
        f"{type(value).__name__} {value!r:.60}."
    )


def _extra_fields(paths, config, n_docs, where, *, cluster_field, split_field, date_field):
    clusters: list[str] = []
    splits: list[str | None] = []
    seconds: list[int | None] = []
    has_split = has_date = False
    count = 0
    for position, record in enumerate(iter_records(paths, config)):
        count += 1
        if cluster_field is not None:
            value = record.get(cluster_field, _MISSING)
            label = _label(value, "cluster", cluster_field, lambda: where(position))
            if label is None:
                fields = ", ".join(repr(k) for k in list(record)[:20])
                state = "has no" if value is _MISSING else "has an empty"
                raise InputError(
                    f"{where(position)}: the record {state} ground-truth cluster field "
                    f"{cluster_field!r} (its fields: {fields}). Give every record a cluster "
                    "label (a singleton can use its own id), set cluster_field / "
                    "--cluster-field to the field that holds it, or give the duplicate "
                    "pairs instead (pairs_path= / --pairs)."
                )
            clusters.append(label)
        if split_field is not None:
            name = _label(record.get(split_field, _MISSING), "split", split_field,
                          lambda: where(position))
            has_split = has_split or name is not None
            splits.append(name)
        if date_field is not None:
            has_date = has_date or record.get(date_field) is not None
            seconds.append(field_epoch_seconds(record, date_field, where(position)))
    if count != n_docs:  # iter_records mirrors read_corpus; a mismatch is a bug, not bad data
        raise RuntimeError(
            f"load_labeled: read {n_docs} documents but {count} records; please report this."
        )
    split_array = None
    if has_split:
        missing = [i for i, s in enumerate(splits) if s is None]
        if missing:
            raise InputError(
                f"{where(missing[0])}: the record has no split field {split_field!r}, but "
                f"other records do ({len(missing)} of {n_docs} lack it). Give every record "
                "a split, or none."
            )
        split_array = np.array(splits, dtype=object)
    date_array = as_datetime64(seconds) if has_date else None
    cluster_array = np.array(clusters, dtype=object) if cluster_field is not None else None
    return cluster_array, split_array, date_array


def _pair_records(path: str, errors: str):
    """Yield (place, id_a, id_b) from a pairs file."""
    kind = detect_format(path)
    if kind == "jsonl" and _starts_with_array(path):
        with (gzip.open(path, "rt", encoding="utf-8") if path.lower().endswith(".gz")
              else open(path, encoding="utf-8")) as handle:
            try:
                items = json.load(handle)
            except ValueError as exc:
                raise InputError(f"{path}: not valid JSON ({exc}).") from None
        for index, item in enumerate(items):
            place = f"{path}, pair {index} (0-based)"
            if isinstance(item, dict):
                yield place, item.get(PAIR_FIELDS[0], _MISSING), item.get(PAIR_FIELDS[1],
                                                                          _MISSING)
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                yield place, item[0], item[1]
            else:
                raise InputError(
                    f"{place}: expected [id_a, id_b] or an object with 'id_a' and 'id_b'; "
                    f"got {item!r:.60}."
                )
        return
    if kind not in ("jsonl", "parquet", "csv", "tsv"):
        raise InputError(
            f"{path}: a pairs file must be JSON Lines, JSON, Parquet, CSV or TSV; got {kind}."
        )
    for index, record in enumerate(iter_records([path], ReaderConfig(errors=errors))):
        yield (f"{path}, pair record {index} (0-based)", record.get(PAIR_FIELDS[0], _MISSING),
               record.get(PAIR_FIELDS[1], _MISSING))


def _starts_with_array(path: str) -> bool:
    opener = gzip.open if path.lower().endswith(".gz") else open
    with opener(path, "rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def _clusters_from_pairs(path: str, ids: np.ndarray, errors: str) -> np.ndarray:
    position = {doc_id: i for i, doc_id in enumerate(ids.tolist())}
    left: list[int] = []
    right: list[int] = []
    unknown: list[str] = []
    n_unknown = 0
    for place, a, b in _pair_records(path, errors):
        ends = []
        for field, value in zip(PAIR_FIELDS, (a, b)):
            doc_id = _label(value, "pair", field, lambda: place)
            if doc_id is None:
                raise InputError(
                    f"{place}: no id in field {field!r}. A pairs file needs the columns "
                    f"'id_a' and 'id_b', one ground-truth duplicate pair per record."
                )
            ends.append(doc_id)
        missing = [d for d in ends if d not in position]
        if missing:
            n_unknown += 1
            unknown.extend(m for m in missing if len(unknown) < 5 and m not in unknown)
            continue
        left.append(position[ends[0]])
        right.append(position[ends[1]])
    if n_unknown:
        shown = ", ".join(repr(u) for u in unknown)
        raise InputError(
            f"{path}: {n_unknown} pair(s) name ids that are not in the corpus (e.g. {shown}). "
            "Load the documents of every id the pairs mention (several corpus files may be "
            "given), filter the pairs to the loaded documents, or check id_field / "
            "--id-field."
        )
    pairs = Pairs(np.array(left, np.int64), np.array(right, np.int64),
                  np.ones(len(left), np.float32))
    components = connected_components(pairs, len(ids))
    # Name each cluster after its first member, so labels are readable and stable.
    _, first = np.unique(components, return_index=True)
    return ids[first][components] if len(ids) else np.zeros(0, dtype=object)


def _warn_cross_split(corpus: LabeledCorpus) -> None:
    if corpus.splits is None:
        return
    seen: dict[str, str] = {}
    crossing: set[str] = set()
    for label, split in zip(corpus.clusters.tolist(), corpus.splits.tolist()):
        if seen.setdefault(label, split) != split:
            crossing.add(label)
    if crossing:
        example = min(crossing)
        warnings.warn(
            f"load_labeled: {len(crossing)} ground-truth cluster(s) span more than one split "
            f"(e.g. {example!r}); scores on one split ignore the duplicates in the other.",
            UserWarning,
            stacklevel=3,
        )
