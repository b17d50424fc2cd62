"""Every table NAME a doc may hold, and the renderer of each, gathered from the page modules."""

from __future__ import annotations

from doc_tables import decontamination, methods, neural, noisy_text, rerank, scale, spans, suite_timings
from doc_tables.formatting import Renderer

_PAGES = (methods, noisy_text, scale, rerank, neural, spans, decontamination, suite_timings)


def _gather() -> dict[str, Renderer]:
    renderers: dict[str, Renderer] = {}
    for page in _PAGES:
        # A NAME given by two pages would silently render one page's table in the other's place.
        clash = renderers.keys() & page.TABLES.keys()
        if clash:
            raise SystemExit(f"docs_tables: tables {sorted(clash)} are defined twice (again in {page.__name__})")
        renderers.update(page.TABLES)
    return renderers


RENDERERS: dict[str, Renderer] = _gather()
