"""Exceptions and parameter validation shared by every public entry point.

Every message has one shape, so users learn to read it once:
``<caller>: parameter '<name>' must be <accepted>; got <value!r>.`` followed by a hint
when one helps. Validation happens once, at the public boundary (constructors, ``dedup``,
the CLI); inner functions trust their inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = [
    "NeardupError",
    "InputError",
    "OutputError",
    "ParameterError",
    "check_choice",
    "check_int",
    "check_float",
    "parameter_error",
    "setting",
    "short_repr",
    "spelled",
    "spelled_as",
]

# How the active front end names a parameter (the CLI: its flag); None = Python names.
_SPELLING: ContextVar[Callable[[str], str | None] | None] = ContextVar(
    "neardup_spelling", default=None
)


class NeardupError(Exception):
    """Base class of every error neardup raises on purpose."""


class InputError(NeardupError, ValueError):
    """The corpus cannot be read as given. The message names the file and the row or byte."""


class OutputError(NeardupError, ValueError):
    """An output cannot be written as asked (path, format, space); raised before any work."""


class ParameterError(NeardupError, ValueError):
    """A parameter is out of range or of the wrong type.

    Besides the message, it keeps its parts so that a front end can say it in its own
    words (the CLI names ``--max-df`` where Python says ``NGramOverlap: parameter 'max_df'``).

    Attributes
    ----------
    caller, parameter, accepted : str
    value : Any
    hint : str or None
    """

    def __init__(
        self, caller: str, parameter: str, accepted: str, value: Any, hint: str | None = None
    ) -> None:
        self.caller = caller
        self.parameter = parameter
        self.accepted = accepted
        self.value = value
        self.hint = hint
        super().__init__(self.render(f"{caller}: parameter '{parameter}'"))

    def render(self, subject: str) -> str:
        """The message with ``subject`` in place of "<caller>: parameter '<name>'"."""
        message = f"{subject} must be {self.accepted}; got {self.value!r}."
        return f"{message} {self.hint}" if self.hint else message


def parameter_error(
    caller: str, name: str, accepted: str, value: Any, hint: str | None = None
) -> ParameterError:
    """The :class:`ParameterError` for ``name`` (to ``raise``), in the shared shape."""
    return ParameterError(caller, name, accepted, value, hint)


def setting(name: str, python: str) -> str:
    """How a message should tell the user to set parameter ``name``: ``python`` (e.g.
    ``"ReaderConfig(text_field=...)"``), or the active front end's spelling (the CLI's
    ``--text-field``) inside :func:`spelled_as`."""
    spell = _SPELLING.get()
    spelled = spell(name) if spell is not None else None
    return spelled or python


def spelled(python: str, front_end: str) -> str:
    """``python`` (a phrase in Python's words: "or None", "Use None for ...", "True or
    False"), or ``front_end`` (the same said without Python values) inside
    :func:`spelled_as`, where the user does not write Python."""
    return front_end if _SPELLING.get() is not None else python


@contextmanager
def spelled_as(spell: Callable[[str], str | None]) -> Iterator[None]:
    """Within the block, messages name parameters as ``spell(name)`` says (None keeps
    the Python spelling). The CLI wraps each command in it."""
    token = _SPELLING.set(spell)
    try:
        yield
    finally:
        _SPELLING.reset(token)


def _fail(caller: str, name: str, accepted: str, value: Any, hint: str | None) -> None:
    raise ParameterError(caller, name, accepted, value, hint)


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
