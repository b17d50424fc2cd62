"""Reading the raw result files named in ``SOURCES``, and the benchmark sets their tables
cover. A missing file is an error: a published figure always comes from a file in the
repository."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from doc_tables.sources import ROOT, SOURCES

# The benchmark sets, in the column order of every accuracy table (benchmarks/README.md).
SETS = ("reuters-news", "reuters-adversarial", "indep-nlpaug", "indep-augly", "indep-noisocr",
        "indep-confusables", "multi-latin", "multi-cyrillic", "multi-greek", "multi-cjk")
# Column headers of the wide method table (docs/choosing-a-method.md defines each).
SET_HEADERS = ("news", "adversarial", "nlpaug", "augly", "noisocr", "confusables", "latin",
               "cyrillic", "greek", "cjk")


def load_json(name: str) -> object:
    """The JSON result file ``name`` (a benchmark suite run: the benchmark's own output)."""
    path = ROOT / SOURCES[name].path
    if not path.is_file():
        raise SystemExit(f"docs_tables: result file {SOURCES[name].path} (source {name!r}) is missing")
    data = _read(path)
    # A run of the benchmark suite (python -m benchmarks one ...) keeps the benchmark's own
    # output under "result", beside its command and commit.
    return data["result"] if isinstance(data, dict) and "result" in data else data


@functools.lru_cache(maxsize=None)
def _read(path: Path) -> object:
    # Cached: the accuracy tables read one cell of transfer.json at a time. Renderers only read.
    return json.loads(path.read_text(encoding="utf-8"))


def load_text(name: str) -> str:
    """The text result file ``name``."""
    path = ROOT / SOURCES[name].path
    if not path.is_file():
        raise SystemExit(f"docs_tables: result file {SOURCES[name].path} (source {name!r}) is missing")
    return path.read_text(encoding="utf-8")


def load_json_dir(name: str) -> dict[str, dict]:
    """Each JSON file of the result directory ``name``, by file name without its suffix."""
    path = ROOT / SOURCES[name].path
    if not path.is_dir():
        raise SystemExit(f"docs_tables: result directory {SOURCES[name].path} (source {name!r}) is missing")
    return {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in sorted(path.glob("*.json"))}


def scale_row(source: str, method: str, tool: str = "neardup") -> dict:
    """The row of ``tool`` running ``method`` in a scale or neural_dedup result file."""
    data = load_json(source)
    rows = data["rows"] if isinstance(data, dict) else data
    if isinstance(rows, dict):  # neural_dedup: rows keyed by name
        row = rows.get(method)
        if row is None:
            raise SystemExit(f"docs_tables: no row {method!r} in {SOURCES[source].path}")
        return {"docs": data["docs"], "wall_s": row["seconds"], "peak_rss_mb": row["peak_rss_mb"],
                "cpu_s": None}
    for row in rows:
        if row.get("method") == method and row.get("tool", "neardup") == tool:
            return row
    raise SystemExit(f"docs_tables: no {tool} {method!r} row in {SOURCES[source].path}")


def transfer_cell(label: str, set_name: str) -> dict | None:
    """transfer.json's result for method ``label`` on one benchmark set, if it was run there."""
    return load_json("transfer").get(f"{label}|{set_name}")  # type: ignore[union-attr]
