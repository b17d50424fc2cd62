"""The per-document facts a corpus stage keeps beside the method's sketch: id, length (for
choosing representatives), source file, date and text identity (for the time window),
and the number of features (status ``empty`` when 0). Written once per batch, the same
way by every stage that reads the corpus."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from neardup.io.batch import DocumentBatch
from neardup.text.identity import text_identity

__all__ = ["DOC_SCHEMA", "batch_dates", "batch_identity", "document_facts"]

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


def batch_identity(batch: DocumentBatch) -> np.ndarray:
    """Each text's identity (:func:`~neardup.text.identity.text_identity`) when the batch
    has dates, else zeros: only dated documents can be kept apart by a time window, which
    lets identical texts through, so undated ones never need it."""
    if batch.dates is None:
        return np.zeros(len(batch), np.uint64)
    return text_identity(batch.texts)


def document_facts(batch: DocumentBatch, n_features: np.ndarray) -> pa.Table:
    """One :data:`DOC_SCHEMA` row per document of ``batch``."""
    n = len(batch)
    return pa.table({
        "id": pa.array(batch.ids, pa.string()),
        "length": pa.array(np.fromiter(map(len, batch.texts), np.int64, n)),
        "source": pa.array([batch.source] * n, pa.string()),
        "date": pa.array(batch_dates(batch), pa.timestamp("s")),
        "n_features": pa.array(np.asarray(n_features, np.int64)),
        "identity": pa.array(batch_identity(batch)),
    }, schema=DOC_SCHEMA)
