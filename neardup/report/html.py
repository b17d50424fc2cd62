"""Render the report data into one self-contained HTML file.

The page (``template.html``, shipped with the package) holds its CSS and JavaScript
inline and loads nothing from the network: the data from :func:`collect_report` is
embedded as one JSON block, which the page's script turns into the summary, the score
histogram (inline SVG), the threshold sweep, the searchable cluster list and the
aligned members of the selected cluster. Document text is inserted as text nodes, never
as markup, so a corpus cannot inject script into its report.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["render_html", "write_html"]

_PLACEHOLDER = "__NEARDUP_DATA__"


def _template() -> str:
    return resources.files("neardup.report").joinpath("template.html").read_text(encoding="utf-8")


def render_html(data: dict[str, Any]) -> str:
    """The report page for ``data`` (from :func:`neardup.report.collect_report`)."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    # "<" only occurs inside JSON strings, where \u003c reads back the same; this keeps
    # "</script>" or "<!--" in a document from ending the data block.
    payload = payload.replace("<", "\\u003c")
    template = _template()
    head, sep, tail = template.partition(_PLACEHOLDER)
    if not sep:  # pragma: no cover - the shipped template always has it
        raise RuntimeError("neardup.report: template.html lost its data placeholder.")
    return head + payload + tail


def write_html(path: str | os.PathLike, data: dict[str, Any]) -> int:
    """Write the report page atomically; returns its size in bytes."""
    from neardup.io.writers import atomic_path

    page = render_html(data).encode("utf-8")
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(page)
    return len(page)
