"""A seeded, Reuters-derived corpus for scale runs (#14): Parquet shards of id, text.

Every document is built from one of the 21,578 Reuters-21578 stories:

* a *base* document is the story with 40% of its words replaced by words drawn from the
  collection's vocabulary (seeded by the base's number), so two bases of one story share
  few word 3-grams (Jaccard ~0.1) and count as different documents;
* a *copy* is its base with ~2% word edits (deletions, substitutions), the noise of the
  issue's measurements.

Cluster sizes: 70% of the documents are singletons; the rest form clusters whose sizes
follow a Zipf law capped at 500 copies; and one cluster holds ``--giant`` copies (default
100,000 when the corpus has at least 1M documents, 10% of it otherwise). The cluster of
each document is written in a ``cluster`` column, so a run can be checked.

    python bench/scale_corpus.py --docs 1000000 --out /tmp/neardup-scale/1M
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SHARD_DOCS = 100_000


def _stories() -> list[str]:
    import warnings

    from neardup.io import iter_records
    from neardup.io.reuters import find_reuters_dir

    files = sorted(str(p) for p in find_reuters_dir().glob("reut2-*.sgm"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stories = [r["text"] for r in iter_records(files)]
    return [s for s in stories if len(s.split()) >= 20]


def plan(n_docs: int, giant: int, seed: int) -> np.ndarray:
    """The base number of every document (documents sharing one form a cluster), in a
    seeded random order."""
    rng = np.random.default_rng(seed)
    singles = int(n_docs * 0.7)
    rest = n_docs - singles - giant
    sizes = []
    while rest > 0:
        size = int(min(rng.zipf(1.6) + 1, 500, rest if rest > 1 else 2))
        sizes.append(size)
        rest -= size
    sizes = np.array(sizes, np.int64)
    sizes[-1] += rest  # rest <= 0: trim the last cluster so the total is exact
    counts = np.concatenate(([giant] if giant else [], np.ones(singles, np.int64), sizes)).astype(np.int64)
    counts = counts[counts > 0]
    bases = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    return bases[rng.permutation(bases.size)]


_STORIES: list[str] = []
_VOCAB: np.ndarray | None = None


def _init() -> None:
    global _STORIES, _VOCAB
    _STORIES = _stories()
    words = " ".join(_STORIES[:5000]).split()
    _VOCAB = np.array(sorted(set(words)), dtype=object)


def _base_words(base: int, seed: int) -> list[str]:
    rng = np.random.default_rng([seed, base])
    words = _STORIES[base % len(_STORIES)].split()
    swap = rng.random(len(words)) < 0.4
    fresh = _VOCAB[rng.integers(0, _VOCAB.size, int(swap.sum()))]
    words = np.array(words, dtype=object)
    words[swap] = fresh
    return words.tolist()


def _shard(args: tuple[int, np.ndarray, int, str]) -> str:
    index, bases, seed, out = args
    if not _STORIES:
        _init()
    rng = np.random.default_rng([seed, 1_000_003, index])
    texts = []
    cache: dict[int, list[str]] = {}
    for base in bases.tolist():
        words = cache.get(base)
        if words is None:
            words = _base_words(base, seed)
            if len(cache) < 4096:
                cache[base] = words
        n = len(words)
        edit = rng.random(n)
        copy = [w for w, e in zip(words, edit) if e >= 0.01]  # 1% deleted
        sub = rng.random(len(copy)) < 0.01  # 1% substituted
        for i in np.flatnonzero(sub).tolist():
            copy[i] = _VOCAB[rng.integers(0, _VOCAB.size)]
        texts.append(" ".join(copy))
    start = index * SHARD_DOCS
    table = pa.table({
        "id": pa.array([f"d{start + i}" for i in range(len(texts))], pa.string()),
        "text": pa.array(texts, pa.string()),
        "cluster": pa.array(bases, pa.int64()),
    })
    path = Path(out) / f"part-{index:05d}.parquet"
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--giant", type=int, default=None,
                        help="copies in the one giant cluster (default: 100,000 from 1M docs, else 10%%)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    giant = args.giant if args.giant is not None else (100_000 if args.docs >= 1_000_000 else args.docs // 10)
    args.out.mkdir(parents=True, exist_ok=True)
    bases = plan(args.docs, giant, args.seed)
    jobs = [(i, bases[s:s + SHARD_DOCS], args.seed, str(args.out))
            for i, s in enumerate(range(0, bases.size, SHARD_DOCS))
            if not (args.out / f"part-{i:05d}.parquet").exists()]
    with ProcessPoolExecutor(args.workers, initializer=_init) as pool:
        for path in pool.map(_shard, jobs):
            print(path, flush=True)


if __name__ == "__main__":
    main()
