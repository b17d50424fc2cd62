"""The sketch step of one batch, written once for every executor that keys documents:
the local out-of-core executor (:mod:`neardup.engine.local`), the Ray executor's sketch task
(:mod:`neardup.engine.ray.keyed`) and the persistent index (its
adds, queries and bulk load): the keyed sketch and candidate keys
(:func:`sketch_batch`), and what the method's verification reads of the batch
(:func:`verification_rows`), which each executor then stores its own way (files in the
work directory, arrays in Ray's object store).

The in-memory stage (:func:`neardup.pipeline.sketch_corpus`) keeps ``method.sketch``
alone: its ``find_pairs`` reads the whole sketch, and keys or a keyed sketch would be work
it does not use."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup.methods.base import SET_WEIGHTS, CandidateKeys, Method, Sketch
from neardup.text.shingle import ShingleSets

__all__ = ["SET_SIZES", "SET_VALUES", "SET_WEIGHT_VALUES", "sketch_batch", "verification_names",
           "verification_rows"]

#: The names :func:`verification_rows` gives a batch's shingle sets, in ragged form: each
#: document's set size (int64), the concatenated set elements (uint64) and, with
#: ``set_weights``, their weights (float64, aligned with the elements).
SET_SIZES, SET_VALUES, SET_WEIGHT_VALUES = "sets.sizes", "sets.values", "sets.weights"


def sketch_batch(method: Method, texts: Sequence[str], first_doc: int = 0
                 ) -> tuple[Sketch, CandidateKeys | None]:
    """A batch's keyed sketch (:meth:`~neardup.methods.Method.keyed_sketch` of its
    sketch) and its candidate-key rows, documents numbered from ``first_doc`` (int64);
    keys None for a method without keyed candidates (an embedding method)."""
    sketch = method.keyed_sketch(method.sketch(texts))
    if method.capabilities.keyed is None:
        return sketch, None
    keys = method.candidate_keys(sketch)
    return sketch, CandidateKeys(keys.docs.astype(np.int64) + first_doc, keys.keys, keys.payload)


def verification_names(method: Method) -> tuple[str, ...]:
    """The names :func:`verification_rows` gives for ``method``, in its order."""
    reads = method.capabilities.reads
    return reads.arrays + ((SET_SIZES, SET_VALUES) if reads.sets else ()) + (
        (SET_WEIGHT_VALUES,) if reads.set_weights else ())


def verification_rows(method: Method, sketch: Sketch, caller: str) -> dict[str, np.ndarray]:
    """What ``method``'s verification spec reads of one batch's keyed sketch, as contiguous
    arrays by name: each declared fixed-width array (one row per document) and, with
    ``sets``, the sets in ragged form (:data:`SET_SIZES`, :data:`SET_VALUES`,
    :data:`SET_WEIGHT_VALUES`). Texts and dates come from the batch, not the sketch; the
    caller stores them. ``caller`` names the front end in the error for a sketch without
    the sets the spec declares."""
    reads = method.capabilities.reads
    rows = {name: np.ascontiguousarray(sketch.arrays[name]) for name in reads.arrays}
    if not reads.sets:
        return rows
    if reads.multisets:  # term multisets: repeats are counts, not a malformed set
        sets = ShingleSets(np.ascontiguousarray(sketch.sets.hashes, np.uint64),
                           np.ascontiguousarray(sketch.sets.offsets, np.int64))
    else:
        sets = sketch.require_sets(caller, "shingle", f"{method.name}.sketch")
    rows[SET_SIZES] = sets.counts().astype(np.int64)
    rows[SET_VALUES] = sets.hashes
    if reads.set_weights:
        weights = np.ascontiguousarray(sketch.ragged[SET_WEIGHTS], np.float64)
        if weights.shape != sets.hashes.shape:
            raise ValueError(
                f"{method.name}.keyed_sketch: ragged[{SET_WEIGHTS!r}] must hold one "
                f"weight per set element; got {weights.shape[0]} weights for "
                f"{sets.hashes.shape[0]} elements."
            )
        rows[SET_WEIGHT_VALUES] = weights
    return rows
