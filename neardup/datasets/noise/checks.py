"""Argument checks and small edit helpers shared by the noise functions."""

from __future__ import annotations

import numpy as np

from neardup.errors import check_choice

EDIT_OPS = ("substitute", "insert", "delete", "transpose")

def check_text(caller: str, text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{caller}: parameter 'text' must be a str; got {type(text).__name__}.")
    return text


def check_rng(caller: str, rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{caller}: parameter 'rng' must be a numpy.random.Generator; got "
            f"{type(rng).__name__}. Pass numpy.random.default_rng(seed)."
        )
    return rng


def check_strings(caller: str, name: str, values: object) -> tuple[str, ...]:
    if values is None:
        return ()
    ok = not isinstance(values, str)
    if ok:
        try:
            values = tuple(values)  # type: ignore[arg-type]
        except TypeError:
            ok = False
    if not ok or not all(isinstance(v, str) for v in values):  # type: ignore[union-attr]
        raise TypeError(
            f"{caller}: parameter '{name}' must be a sequence of str; got {values!r:.80}."
        )
    return tuple(v for v in values if v.strip())  # type: ignore[union-attr]


def check_ops(caller: str, ops: object) -> tuple[str, ...]:
    ops = (ops,) if isinstance(ops, str) else tuple(ops)  # type: ignore[arg-type]
    if not ops:
        raise ValueError(f"{caller}: parameter 'ops' must name at least one of {EDIT_OPS}; got ().")
    for op in ops:
        check_choice(caller, "ops", op, EDIT_OPS)
    return ops


def selected_indices(n: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Indices in ``range(n)`` chosen independently with probability ``rate``."""
    if n == 0:
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(rng.random(n) < rate)


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Replace ``text[start:end]`` by ``new`` for sorted, non-overlapping ``(start, end, new)``."""
    parts, prev = [], 0
    for start, end, new in edits:
        parts.append(text[prev:start])
        parts.append(new)
        prev = end
    parts.append(text[prev:])
    return "".join(parts)
