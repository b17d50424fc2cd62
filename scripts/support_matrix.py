"""Write the support matrix (which method runs on which executor, with which stage) into
the docs that show it, from what each method declares (neardup.engine.support).

    python scripts/support_matrix.py          # rewrite the blocks
    python scripts/support_matrix.py --check  # exit 1 if a block differs (tests run this)

A block sits between ``<!-- BEGIN support-matrix -->`` and ``<!-- END support-matrix -->``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's neardup, whatever is installed
#: The files holding a support-matrix block.
TARGETS = ("README.md", "docs/scale.md")
BLOCK = re.compile(r"(<!-- BEGIN support-matrix -->\n)(.*?)(<!-- END support-matrix -->)", re.S)


#: Settings besides the defaults that change where a method runs, shown as rows of their own.
VARIANTS = (
    ("minhash --verify exact", "minhash", {"verify": "exact"}),
    ("wminhash --verify exact", "wminhash", {"verify": "exact"}),
    ("retsim --param index=hnsw", "retsim", {"index": "hnsw"}),
    ("rerank --param candidates=retsim", "rerank", {"candidates": "retsim"}),
)


def matrix() -> str:
    from neardup.engine.support import support_matrix_markdown
    from neardup.methods import METHODS, make_method

    rows = [(f"`{name}`", make_method(name)) for name in METHODS]
    rows += [(f"`{label}`", make_method(name, **params)) for label, name, params in VARIANTS]
    return support_matrix_markdown(rows, algorithms=("components", "leiden", "hac"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is out of date")
    args = parser.parse_args(argv)
    table = matrix()
    stale = []
    for name in TARGETS:
        path = ROOT / name
        text = path.read_text(encoding="utf-8")
        if not BLOCK.search(text):
            print(f"{name}: no support-matrix block", file=sys.stderr)
            return 1
        updated = BLOCK.sub(lambda m: m.group(1) + table + m.group(3), text)
        if updated != text:
            stale.append(name)
            if not args.check:
                path.write_text(updated, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run python scripts/support_matrix.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
