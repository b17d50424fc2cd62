"""The sketch step of one batch, written once for every executor that keys documents:
the local out-of-core executor (:mod:`neardup.engine.local`), the Ray executor's sketch task
(:mod:`neardup.engine.ray.keyed`) and the persistent index (its
adds, queries and bulk load)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup.methods.base import CandidateKeys, Method, Sketch

__all__ = ["sketch_batch"]


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
