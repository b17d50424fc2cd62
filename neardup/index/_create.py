"""Creating an index: the method checked, the row layout and metadata recorded, the
database made (:func:`neardup.index._schema.create_database`)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from neardup.errors import setting
from neardup.index._methods import check_supported, params_json
from neardup.index._rerank import RERANK_METHODS, rerank_config
from neardup.index._schema import FORMAT, FORMAT_VERSION, TEXT_SCHEMA, create_database
from neardup.methods import make_method
from neardup.methods.base import Method

__all__ = ["create_index"]


def create_index(path: str | os.PathLike, method: str | Method, *, store_text: bool,
                 rerank: Any, params: dict[str, Any]) -> None:
    """Make an empty index in ``path`` (arguments as :meth:`Index.create`)."""
    # Any: embedding methods carry embedding_key, which the Method contract does not declare.
    method_obj: Any = method if isinstance(method, Method) else make_method(method, **params)
    if isinstance(method, Method) and params:
        raise ValueError("Index.create: give parameters in the Method or as keywords, not both.")
    stage = check_supported("Index.create", method_obj)
    rerank = rerank_config(rerank)
    if rerank is not None and method_obj.name not in RERANK_METHODS:
        raise ValueError(
            f"Index.create: rerank verification ({setting('rerank', 'rerank=')}) applies to the "
            f"methods {', '.join(RERANK_METHODS)}; got method {method_obj.name!r}.")
    probe = method_obj.sketch(["probe"])
    extra: dict[str, Any] = {}
    if stage == "vector":
        # Vectors live in faiss segment files (neardup.index._vectors), not in rows.
        layout = []
        extra = {"dim": int(probe.arrays[method_obj.embedding_key].shape[1]),
                 "vector_segments": []}
    else:
        layout = [[name, probe.arrays[name].dtype.str, list(probe.arrays[name].shape[1:])]
                  for name in method_obj.capabilities.reads.arrays]
    from neardup._version import __version__

    create_database(path, {
        **extra,
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "method": method_obj.name,
        "params": json.loads(params_json(method_obj)),
        "layout": layout,
        "store_text": bool(store_text),
        "rerank": rerank,
        "next_doc": 0,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "neardup_version": __version__,
    }, extra_tables=(TEXT_SCHEMA,) if rerank else ())
