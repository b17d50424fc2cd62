"""Formatting a table and its figures as Markdown."""

from __future__ import annotations

import decimal
from collections.abc import Callable

#: What a renderer returns: its Markdown table and the ``SOURCES`` names it read.
Rendered = tuple[str, list[str]]
Renderer = Callable[[], Rendered]


def table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; ``align`` holds "r" for each right-aligned column."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fixed(value: float | None, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals; empty if it was not measured."""
    return "" if value is None else f"{value:.{digits}f}"


def whole(value: float | None) -> str:
    """``value`` rounded to a whole number, with thousands separators; empty if not measured."""
    return "" if value is None else f"{round(value):,}"


def half_up(value: float, digits: int = 0) -> str:
    """``value`` rounded half up, with thousands separators: 14.25 -> 14.3, 36.25 -> 36.3.

    The figures these tables took over were rounded by hand, half up; ``format`` rounds the
    binary value (14.25 -> 14.2), which would move them for no reason in the data.
    """
    quantum = decimal.Decimal(1).scaleb(-digits)
    rounded = decimal.Decimal(repr(float(value))).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
    return f"{rounded:,}"


def percent(share: float, digits: int = 0) -> str:
    """A share of one as a percentage, rounded half up."""
    return half_up(100 * share, digits) + "%"
