"""Regenerate every results table in README.md and docs/*.md from the raw result files.

    python scripts/docs_tables.py          # rewrite the tables in place
    python scripts/docs_tables.py --check  # exit 1, naming each table, if a doc differs

A table lives between two marker comments in a Markdown file::

    <!-- BEGIN table:NAME -->
    ...generated, do not edit...
    <!-- END table:NAME -->

Each NAME has one renderer in scripts/doc_tables/ (a module per docs page or family of
pages), which reads only the result files named in doc_tables/sources.py (the one place
that says where raw results live: remap a path there when result files move) and ends its
table with the files it read and the commands that rewrite them.
A marker pair whose NAME has no renderer is an error, and so is a renderer whose source
file is missing: a published figure always comes from a file in the repository.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Run as a file, Python puts scripts/ on the path; loaded by path (tests/test_docs.py), not.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from doc_tables.blocks import regenerate, render  # noqa: E402
from doc_tables.registry import RENDERERS  # noqa: E402
from doc_tables.sources import ROOT, SOURCES, Source  # noqa: E402

__all__ = ["RENDERERS", "SOURCES", "Source", "documents", "main", "regenerate", "render"]


def documents() -> list[Path]:
    """The files whose tables are generated: README.md and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if any table differs from its raw results")
    args = parser.parse_args(argv)
    stale = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        new = regenerate(text)
        if new == text:
            continue
        stale.append(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        if not args.check:
            path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print("docs_tables: tables differ from their raw results in: "
              + ", ".join(map(str, stale)) + "; run python scripts/docs_tables.py", file=sys.stderr)
        return 1
    for path in stale:
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
