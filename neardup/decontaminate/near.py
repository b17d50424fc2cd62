"""Near-duplicate matching of evaluation items through the persistent index.

The n-gram rule misses an item whose every n-gram was touched: a paraphrase, an OCR-noised
copy, a re-typed question. Here the evaluation items are stored in a
:class:`neardup.index.Index` (built once; ``--eval-index DIR`` keeps it for the next run)
and every training document is queried against it. An item is usually much shorter than
a training document that contains it, and a document-to-item similarity would then be
small, so a long document is also queried as overlapping windows of about an item's
length (half a window apart): a copy of the item lies mostly inside one window.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from neardup.errors import InputError, setting

__all__ = ["EvalIndex", "windows"]


def windows(texts: Sequence[str], width: int) -> tuple[list[str], np.ndarray]:
    """The texts to query for each document: the document itself and, when it has more
    than ``1.5 * width`` words, its windows of ``width`` words every ``width // 2``
    words. Returns the query texts and the document of each (int64)."""
    queries, owners = [], []
    step = max(width // 2, 1)
    for doc, text in enumerate(texts):
        queries.append(text)
        owners.append(doc)
        if width <= 0:
            continue
        words = text.split()
        if len(words) * 2 <= width * 3:
            continue
        for start in range(0, len(words) - width + step, step):
            queries.append(" ".join(words[start:start + width]))
            owners.append(doc)
    return queries, np.asarray(owners, np.int64)


class EvalIndex:
    """An index over the evaluation items, queried with training batches.

    Parameters
    ----------
    keys : sequence of str
        One unique key per item (item number and id), in item order.
    texts : sequence of str
    directory : path or None
        Where the index lives: an existing index of exactly these keys is reused, an
        absent or empty directory gets a new one; None: a temporary directory, removed by
        :meth:`close`.
    method : str
        The index's method ("minhash", "simhash" or "exact").
    params : dict
        The method's parameters (e.g. ``threshold``).
    window : int
        Window width in words (see :func:`windows`; 0: whole documents only).
    """

    def __init__(self, keys: Sequence[str], texts: Sequence[str], directory: str | os.PathLike | None,
                 method: str, params: dict, window: int) -> None:
        from neardup.index import Index

        self._temporary = None
        if directory is None:
            self._temporary = tempfile.TemporaryDirectory(prefix="neardup-eval-index-")
            directory = Path(self._temporary.name) / "index"
        directory = Path(directory)
        self.reused = directory.exists() and any(directory.iterdir())
        self.window = window
        self._item = {key: i for i, key in enumerate(keys)}
        if self.reused:
            self.index = Index(directory)
            stored = self.index.clusters().column("id").to_pylist()
            if stored != list(keys):
                self.index.close()
                flag = setting("eval_index", "DecontaminationConfig(eval_index=...)")
                raise InputError(
                    f"{flag} {os.fspath(directory)!r} holds an index of {len(stored)} other "
                    f"items, not these {len(keys)} evaluation items; give a new or empty "
                    "directory to build one for them.")
        else:
            self.index = Index.create(directory, method, **params)
            if self.index.embedding:  # the bulk path is the keyed methods'
                self.index.add(list(texts), list(keys))
            else:
                self.index.bulk_add([(list(texts), list(keys))])

    def match(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """(document, item, score, type) of each item a document (or one of its windows)
        matches, best score per pair."""
        queries, owners = windows(texts, self.window)
        found = self.index.query(queries, top_k=16)
        if not len(found):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32), []
        doc = owners[found.query]
        item = np.array([self._item[k] for k in found.match_ids], np.int64)
        score = np.asarray(found.score, np.float32)
        order = np.lexsort((item, -score, doc))
        doc, item, score = doc[order], item[order], score[order]
        types = np.asarray(found.type, object)[order]
        first = np.ones(doc.size, bool)
        first[1:] = (doc[1:] != doc[:-1]) | (item[1:] != item[:-1])
        return doc[first], item[first], score[first], types[first].tolist()

    def close(self) -> None:
        self.index.close()
        if self._temporary is not None:
            self._temporary.cleanup()
