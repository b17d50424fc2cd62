"""Exceptions and parameter validation shared by every public entry point.

Every message has one shape, so users learn to read it once:
``<caller>: parameter '<name>' must be <accepted>; got <value!r>.`` followed by a hint
when one helps. Validation happens once, at the public boundary (constructors, ``dedup``,
the CLI); inner functions trust their inputs.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = [
    "NeardupError",
    "InputError",
    "check_choice",
    "check_int",
    "check_float",
    "short_repr",
]


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""


class InputError(NeardupError, ValueError):
    """The corpus cannot be read as given. The message names the file and the row or byte."""


def _fail(caller: str, name: str, accepted: str, value: Any, hint: str | None) -> None:
    message = f"{caller}: parameter '{name}' must be {accepted}; got {value!r}."
    if hint:
        message += f" {hint}"
    raise ValueError(message)


def check_choice(
    caller: str, name: str, value: Any, choices: Collection[Any], hint: str | None = None
) -> Any:
    """Return ``value`` if it is one of ``choices``, else raise a ValueError listing them."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        _fail(caller, name, f"one of {listed}", value, hint)
    return value


def check_int(
    caller: str,
    name: str,
    value: Any,
    *,
    low: int | None = None,
    high: int | None = None,
    hint: str | None = None,
) -> int:
    """Return ``value`` if it is an int (not bool) within ``[low, high]``."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if ok and low is not None and value < low:
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if not ok:
        _fail(caller, name, _range_text("an integer", low, high), value, hint)
    return int(value)


def check_float(
    caller: str,
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    hint: str | None = None,
) -> float:
    """Return ``value`` as float if it is a real number within ``[low, high]``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and value != value:  # NaN
        ok = False
    if ok and low is not None and value < low:
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if not ok:
        _fail(caller, name, _range_text("a number", low, high), value, hint)
    return float(value)


def _range_text(kind: str, low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{kind} in [{low}, {high}]"
    if low is not None:
        return f"{kind} >= {low}"
    if high is not None:
        return f"{kind} <= {high}"
    return kind


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (ending in "...") for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
