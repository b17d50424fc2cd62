"""The methods an index supports, rebuilding a method from recorded parameters, and
small helpers shared by the index modules."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any

import numpy as np

from neardup.engine.support import responsible_parameters
from neardup.errors import InputError, setting, short_repr
from neardup.methods import make_method
from neardup.methods.base import Method

__all__ = [
    "DuplicateIdError",
    "check_ids",
    "check_supported",
    "i64",
    "index_plan",
    "method_from_params",
    "params_json",
    "serial_if_small",
    "split_rows",
    "supported_methods",
]


class DuplicateIdError(InputError):
    """An added document's id is already in the index."""


def check_ids(caller: str, ids: Any, n: int | None = None) -> list[str]:
    """``ids`` as strings: each must be a string or an integer (None, floats, bytes and
    booleans are refused, never stored as their ``str``), and encodable as UTF-8."""
    if isinstance(ids, (str, bytes)):
        raise InputError(f"{caller}: pass a sequence of ids, not a single string.")
    out: list[str] = []
    for k, value in enumerate(ids):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"{caller}: id {k} ({short_repr(value)}) contains a lone surrogate "
                    f"({value[exc.start:exc.end].encode('unicode_escape').decode()}), which "
                    "is not valid Unicode and cannot be stored; give ids as valid text."
                ) from None
            out.append(value)
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            out.append(str(int(value)))
        else:
            what = "None" if value is None else f"{type(value).__name__} {short_repr(value)}"
            raise InputError(
                f"{caller}: id {k} is {what}; ids must be strings or integers. Give every "
                "document an id, or give no ids at all to name documents by their index "
                "position."
            )
    if n is not None and len(out) != n:
        raise InputError(f"{caller}: got {n} texts but {len(out)} ids.")
    return out


def index_plan(method: Method):
    """The :func:`neardup.plan.plan` of holding ``method`` in an index (the "index"
    executor: connected components, as each add joins clusters)."""
    from neardup.graph.config import ClusterConfig
    from neardup.plan import RunSpec, plan

    return plan(RunSpec(method, ClusterConfig(algorithm="components"), executor="index"))


def supported_methods() -> tuple[str, ...]:
    """The methods an index can hold with their default parameters (planned by
    :func:`index_plan`, from what each method declares)."""
    from neardup.methods import METHODS

    return tuple(name for name in METHODS if index_plan(make_method(name)).supported)


def method_from_params(name: str, params: dict[str, Any]) -> Method:
    p = dict(params)
    if name == "minhash" and "signature_scheme" not in p:
        # Recorded before minhash had signature schemes: its signatures are "perm64" ones
        # (64-bit permutations, 32-bit values their top halves), whatever hash_bits says.
        p["signature_scheme"] = "perm64"
    return make_method(name, **p)  # recorded shingle/normalize dicts: built by make_method


def params_json(method: Method) -> str:
    return json.dumps(method.get_params(), sort_keys=True, default=str)


def check_supported(caller: str, method: Method) -> str:
    """The index stage that holds ``method`` ("keyed" or "vector"); a ValueError saying
    why (the plan's reason), with the alternatives, when the index cannot hold it."""
    placed = index_plan(method)
    if placed.supported:
        return placed.stage
    culprits, fixable = responsible_parameters(method, "components", "index")
    given = ", ".join(f"{setting(k, k)} {v!r}" for k, v in culprits.items())
    if fixable:
        hint = f" Leave out {given}."
    elif method.capabilities.reads.text_chars is not None:  # rerank: a pair classifier
        hint = (" Create a minhash index verified by the pair classifier instead "
                f"({setting('rerank', 'rerank=')} 'verifier'), or use neardup dedup.")
    else:
        hint = " Use neardup dedup for it."
    raise ValueError(
        f"{caller}: the index cannot hold {setting('method', 'method')} {method.name!r}"
        f"{' with ' + given if given else ''}: {placed.reason}. Methods it holds: "
        f"{', '.join(map(repr, supported_methods()))}.{hint}"
    )


@contextmanager
def serial_if_small(n: int):
    """One numba thread for a handful of documents: waking the parallel pool costs more
    than the work (milliseconds on a loaded machine). numba's setting is per thread."""
    if n > 64:
        yield
        return
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64) if a.dtype == np.uint64 else a.astype(np.int64)


def split_rows(raw: np.ndarray, layout) -> dict[str, np.ndarray]:
    """Candidate arrays from stored rows (uint8, shape (n, row_bytes)): the inverse of
    concatenating each array's bytes per row, in ``layout`` order ((name, dtype, tail))."""
    out, offset = {}, 0
    for name, dtype, tail in layout:
        dtype = np.dtype(dtype)
        width = dtype.itemsize * int(np.prod(tail or (1,)))
        out[name] = np.ascontiguousarray(raw[:, offset : offset + width]).view(dtype) \
            .reshape((raw.shape[0], *tail))
        offset += width
    return out
