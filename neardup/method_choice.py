"""The default method, ``auto``: rerank when the input is small enough for its cost,
MinHash when it is not (decision 0053).

rerank is the most accurate method on every labelled set, but its CPU per document grows
with the corpus, while MinHash's stays flat (docs/rerank-cost.md). ``auto`` reads ahead at
most :data:`RERANK_MAX_DOCS` + 1 documents and :data:`RERANK_MAX_CHARS` characters of
text (at most a quarter of a memory limit the user sets), from the run's own read (a
stream is read once): an input that ends within both runs ``rerank``, a larger one ``minhash`` (whose ``--profile auto`` then reads the same
first documents). The run records the choice (``params.method_auto``) and the summary
says which ran and why. A method parameter (``--threshold``, ``--param``, ...) means one
method's setting, so it needs the method named: with ``auto`` it is an error
(:data:`neardup.params.RULES`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["AUTO", "LARGE_INPUT_METHOD", "RERANK_MAX_CHARS", "RERANK_MAX_DOCS",
           "SMALL_INPUT_METHOD", "MethodChoice", "choose_from_batches", "choose_method",
           "max_chars", "planning_method"]

#: The default value of ``method``.
AUTO = "auto"
#: The method ``auto`` runs on an input within both limits, and the one above them.
SMALL_INPUT_METHOD, LARGE_INPUT_METHOD = "rerank", "minhash"
#: The most documents on which ``auto`` runs rerank: the largest size of the scale corpus
#: at which rerank stayed within ten times MinHash's CPU per document (issue 37's bound;
#: the measurement is in docs/rerank-cost.md).
RERANK_MAX_DOCS = 10_000
#: The most characters of text on which ``auto`` runs rerank (10,000 documents of 5,000
#: characters): it bounds the look-ahead's memory and rerank's cost on long documents.
RERANK_MAX_CHARS = 50_000_000


@dataclass(frozen=True)
class MethodChoice:
    """The method a run uses: ``name``, the ``requested`` one, and for ``auto`` what it
    read: ``docs`` and ``chars`` (up to just past a limit) and whether the input ended
    within the limits (``small``)."""

    name: str
    requested: str
    docs: int = 0
    chars: int = 0
    small: bool = False
    max_chars: int = RERANK_MAX_CHARS

    @property
    def chosen(self) -> bool:
        """Whether ``auto`` chose the method."""
        return self.requested == AUTO

    def record(self) -> dict[str, Any]:
        """The run record's ``method_auto`` entry."""
        return {"name": self.name, "requested": self.requested, "docs_read": self.docs,
                "chars_read": self.chars, "within_limits": self.small,
                "rerank_max_docs": RERANK_MAX_DOCS, "rerank_max_chars": self.max_chars}

    def run_params(self) -> dict[str, Any]:
        """The entries a run's ``params`` record: ``method_auto`` when ``auto`` chose."""
        return {"method_auto": self.record()} if self.chosen else {}

    def describe(self) -> str:
        """One line for a summary: what ``auto`` chose and why; empty otherwise."""
        if not self.chosen:
            return ""
        if self.small:
            return (f"method auto chose rerank, the most accurate method: the input holds "
                    f"{self.docs:,} documents (rerank up to {RERANK_MAX_DOCS:,} documents and "
                    f"{self.max_chars:,} characters). --method minhash is the fast one.")
        return (f"method auto chose minhash, the fast method: the input holds more than "
                f"{RERANK_MAX_DOCS:,} documents or {self.max_chars:,} characters, where "
                f"rerank costs many times MinHash's CPU per document. --method rerank is the "
                f"most accurate (docs/rerank-cost.md).")

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> MethodChoice:
        """The choice a run record's ``method_auto`` entry describes."""
        return cls(record["name"], record["requested"], record["docs_read"],
                   record["chars_read"], record["within_limits"], record["rerank_max_chars"])


def planning_method(method: str) -> str:
    """The method to plan with before the input is read: ``method`` itself, or for
    ``auto`` the large-input method (both methods run on every executor)."""
    return LARGE_INPUT_METHOD if method == AUTO else method


def _text_chars(texts: Iterable[Any]) -> int:
    return sum(len(t) for t in texts if isinstance(t, str))


def max_chars(memory_limit: int | None = None) -> int:
    """The character limit: :data:`RERANK_MAX_CHARS`, or a quarter of ``memory_limit``
    (bytes; the user's budget, which the look-ahead's texts must not outgrow) when less."""
    return RERANK_MAX_CHARS if memory_limit is None else min(RERANK_MAX_CHARS, memory_limit // 4)


def _read_ahead(sizes: Iterable[tuple[int, int]], memory_limit: int | None) -> MethodChoice:
    """``auto``'s choice from ``sizes`` (documents and characters of each piece read),
    read until the input ends or passes a limit."""
    limit = max_chars(memory_limit)
    docs = chars = 0
    for n_docs, n_chars in sizes:
        docs += n_docs
        chars += n_chars
        if docs > RERANK_MAX_DOCS or chars > limit:
            return MethodChoice(LARGE_INPUT_METHOD, AUTO, docs, chars, False, limit)
    return MethodChoice(SMALL_INPUT_METHOD, AUTO, docs, chars, True, limit)


def choose_method(method: str, texts: Iterable[Any], *, memory_limit: int | None = None
                  ) -> MethodChoice:
    """The method a run on ``texts`` uses: ``method`` itself unless it is ``auto``; for
    ``auto``, rerank when ``texts`` ends within the limits (:func:`max_chars` of
    ``memory_limit``), minhash otherwise. At most :data:`RERANK_MAX_DOCS` + 1 of
    ``texts`` are read."""
    if method != AUTO:
        return MethodChoice(method, method)
    return _read_ahead(((1, _text_chars((text,))) for text in texts), memory_limit)


def choose_from_batches(method: str, batches: Iterable[Any], *, memory_limit: int | None = None
                        ) -> tuple[MethodChoice, Iterator[Any]]:
    """:func:`choose_method` over the first documents of ``batches`` (DocumentBatch
    objects), and an iterator over every batch from the first: a stream is read once.
    Nothing is read unless ``method`` is ``auto``."""
    if method != AUTO:
        return MethodChoice(method, method), iter(batches)
    batches = iter(batches)
    head: list[Any] = []

    def sizes():
        for batch in batches:
            head.append(batch)
            yield len(batch), _text_chars(batch.texts)

    return _read_ahead(sizes(), memory_limit), itertools.chain(head, batches)
