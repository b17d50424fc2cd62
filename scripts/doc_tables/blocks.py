"""The marker blocks of a doc: each ``<!-- BEGIN table:NAME -->`` ... ``<!-- END table:NAME -->``
holds the table its renderer makes, followed by the files it read and their commands."""

from __future__ import annotations

import re
from collections.abc import Iterable

from doc_tables.registry import RENDERERS
from doc_tables.sources import SOURCES

_BLOCK = re.compile(r"(<!-- BEGIN table:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- END table:(?P=name) -->)",
                    re.DOTALL)


def _provenance(names: Iterable[str]) -> str:
    """The line under every table: files read and the commands that rewrite them."""
    seen = list(dict.fromkeys(names))
    files = ", ".join(f"`{SOURCES[n].path}`" for n in seen)
    # Files one run writes together share its command: name it once.
    commands = "; ".join(f"`{c}`" for c in dict.fromkeys(SOURCES[n].command for n in seen))
    return f"Raw results: {files}. Rewritten by: {commands}. Table: `python scripts/docs_tables.py`."


def render(name: str) -> str:
    """The text between the markers of table ``name``."""
    if name not in RENDERERS:
        raise SystemExit(f"docs_tables: no renderer for table {name!r}; known: {', '.join(sorted(RENDERERS))}")
    table, sources = RENDERERS[name]()
    return f"{table}\n\n{_provenance(sources)}\n"


def regenerate(text: str) -> str:
    """``text`` with the table between each pair of markers rendered anew."""
    return _BLOCK.sub(lambda m: m.group(1) + render(m.group("name")) + m.group(4), text)
