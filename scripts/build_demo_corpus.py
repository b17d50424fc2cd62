"""Build neardup/data/demo.jsonl.gz: Reuters-21578 stories plus noisy reprints.

    python scripts/build_demo_corpus.py [--sources 2000] [--seed 20261122]

Deterministic for a given seed. Each source story yields ``k >= 1`` copies (k drawn from the
long-tailed reprint distribution of :func:`neardup.datasets.noise.reprint_cluster_sizes`), every
copy corrupted by :func:`neardup.datasets.noise.reprint` ("news" profile, or "adversarial" for
about one copy in ten). The ``cluster`` field is the source story's NEWID.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

from neardup.datasets.noise import reprint, reprint_cluster_sizes, split_sentences
from neardup.io import ReaderConfig, iter_records
from neardup.io.reuters import find_reuters_dir

OUT = Path(__file__).resolve().parents[1] / "neardup" / "data" / "demo.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--max-size", type=int, default=40, help="largest reprint cluster")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    root = find_reuters_dir()
    if root is None:
        raise SystemExit("Reuters-21578 not found")
    files = sorted(str(p) for p in root.glob("reut2-*.sgm"))
    stories = [r for r in iter_records(files, ReaderConfig()) if len(r["text"].split()) >= 40]
    rng = np.random.default_rng(args.seed)
    chosen = sorted(rng.choice(len(stories), size=args.sources, replace=False).tolist())
    sources = [stories[i] for i in chosen]
    donors = [s for st in rng.choice(stories, size=300).tolist() for s in split_sentences(st["text"])]
    sizes = reprint_cluster_sizes(len(sources), rng, mean=2.5, max_size=args.max_size)
    docs = []
    for story, size in zip(sources, sizes.tolist()):
        for _ in range(size):
            profile = "adversarial" if rng.random() < 0.1 else "news"
            text, applied = reprint(story["text"], rng, profile=profile, donor_sentences=donors)
            docs.append(
                {"text": text, "date": story.get("date"), "cluster": str(story["id"]),
                 "noise": ", ".join(applied)}
            )
    order = rng.permutation(len(docs))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0 keeps the gzip bytes identical across rebuilds.
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for n, i in enumerate(order.tolist()):
            record = {"id": f"demo-{n:05d}", **docs[i]}
            gz.write((json.dumps(record, ensure_ascii=False, default=str) + "\n").encode())
    print(f"wrote {len(docs)} documents from {len(sources)} stories to {args.out}")


if __name__ == "__main__":
    main()
