"""Write the scale corpus (:func:`neardup.datasets.make_scale_corpus`): Parquet shards of
id, text, cluster derived from Reuters-21578.

    python scripts/make_scale_corpus.py --docs 1000000 --out /tmp/neardup-scale/1M
"""

from __future__ import annotations

import argparse
from pathlib import Path

from neardup.datasets import make_scale_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--giant", type=int, default=None,
                        help="copies in the one giant cluster (default: 100,000 from 1M docs, else 10%%)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: every CPU)")
    args = parser.parse_args()
    for path in make_scale_corpus(args.docs, args.out, giant=args.giant, seed=args.seed, workers=args.workers):
        print(path)


if __name__ == "__main__":
    main()
