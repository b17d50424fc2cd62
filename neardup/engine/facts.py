"""The per-document facts a corpus stage keeps beside the method's sketch: id, length (for
choosing representatives), source file, date, text identity and the number of features
(status ``empty`` when 0). Written once per batch, the same way by every stage that
reads the corpus.

The text identity (:mod:`neardup.text.identity`) links identical texts whatever the
method, the engine or the size of a key group (:func:`identity_pairs`): a method that
never compares them (a text of symbols only has no shingles) or compares them only
through a chain over a large group still merges them. It is also the only way through a
time window.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from neardup.graph.edges import Pairs
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Sketch
from neardup.text.identity import text_identity

__all__ = ["DOC_SCHEMA", "batch_dates", "batch_identity", "document_facts", "identity_pairs",
           "require_dates", "time_window_without_dates"]

DOC_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("length", pa.int64()),
    ("source", pa.string()),
    ("date", pa.timestamp("s")),
    ("n_features", pa.int64()),
    ("identity", pa.uint64()),
])


def batch_dates(batch: DocumentBatch) -> np.ndarray:
    """The batch's dates as datetime64[s], NaT where unknown (all NaT without dates)."""
    if batch.dates is not None:
        return batch.dates.astype("datetime64[s]")
    return np.full(len(batch), np.datetime64("NaT"), "datetime64[s]")


def batch_identity(batch: DocumentBatch, sketch: Sketch | None = None) -> np.ndarray:
    """Each text's identity (:func:`~neardup.text.identity.text_identity`): identical
    texts are always linked (:func:`identity_pairs`), and only they pass a time window.
    Taken from the method's ``sketch`` when it computed them on the way."""
    if sketch is not None and sketch.identity is not None:
        return np.asarray(sketch.identity, np.uint64)
    return text_identity(batch.texts)


def document_facts(batch: DocumentBatch, sketch: Sketch) -> pa.Table:
    """One :data:`DOC_SCHEMA` row per document of ``batch``, whose method's sketch is
    ``sketch``."""
    n = len(batch)
    return pa.table({
        "id": pa.array(batch.ids, pa.string()),
        "length": pa.array(np.fromiter(map(len, batch.texts), np.int64, n)),
        "source": pa.array([batch.source] * n, pa.string()),
        "date": pa.array(batch_dates(batch), pa.timestamp("s")),
        "n_features": pa.array(np.asarray(sketch.n_features, np.int64)),
        "identity": pa.array(batch_identity(batch, sketch)),
    }, schema=DOC_SCHEMA)


def identity_pairs(identity: np.ndarray, docs: np.ndarray | None = None) -> Pairs:
    """Pairs that link the documents of identical texts, whatever the method makes of
    them: each document to the next of its identity (score 1), in position order, blank
    texts (identity 0) left out. ``docs``: the positions of ``identity``'s rows (default
    0..n-1). Linear after one sort; a group of m copies gives m - 1 pairs."""
    identity = np.asarray(identity, np.uint64)
    docs = np.arange(identity.size, dtype=np.int64) if docs is None else np.asarray(docs, np.int64)
    keep = identity != 0
    identity, docs = identity[keep], docs[keep]
    order = np.lexsort((docs, identity))
    identity, docs = identity[order], docs[order]
    same = identity[1:] == identity[:-1]
    left, right = docs[:-1][same], docs[1:][same]
    return Pairs(left, right, np.ones(left.size, np.float32))


def require_dates(time_window_hours: float | None, has_dates: bool) -> None:
    """ValueError when a time window is asked for and the input has no dates."""
    if time_window_hours is not None and not has_dates:
        raise ValueError(time_window_without_dates(time_window_hours))


def time_window_without_dates(hours: float) -> str:
    """The message for a time window over an input without dates, in the front end's
    words (the CLI's flags inside :func:`neardup.errors.spelled_as`)."""
    from neardup.errors import setting

    flag = setting("time_window_hours", "")
    if flag:
        return (f"{flag} {hours:g} needs document dates, and the input has none. Give the "
                f"documents' dates with {setting('date_field', '--date-field')} (Reuters SGML "
                f"inputs have them), or drop {flag}.")
    return (f"run: a time window (time_window_hours={hours!r}) needs document dates, and "
            "the input has none. Give the documents' dates (date_field= in neardup.dedup) "
            "or drop the window (time_window_hours=None).")
