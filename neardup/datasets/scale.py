"""A seeded, Reuters-derived corpus for scale runs (#14): Parquet shards of id, text.

Every document is built from one of the 21,578 Reuters-21578 stories:

* a *base* document is the story with 40% of its words replaced by words drawn from the
  collection's vocabulary (seeded by the base's number), so two bases of one story share
  few word 3-grams (Jaccard ~0.1) and count as different documents;
* a *copy* is its base with ~2% word edits (deletions, substitutions), the noise of the
  issue's measurements.

Cluster sizes: 70% of the documents are singletons; the rest form clusters whose sizes
follow a Zipf law capped at 500 copies; and one cluster holds ``giant`` copies (default
100,000 when the corpus has at least 1M documents, 10% of it otherwise). The cluster of
each document is written in a ``cluster`` column, so a run can be checked.

    >>> make_scale_corpus(1_000_000, "/tmp/neardup-scale/1M")  # doctest: +SKIP

or from a shell: ``python scripts/make_scale_corpus.py --docs 1000000 --out /tmp/neardup-scale/1M``.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.errors import InputError, check_int

SHARD_DOCS = 100_000


def _stories() -> list[str]:
    import warnings

    from neardup.io import iter_records
    from neardup.io.reuters import find_reuters_dir

    root = find_reuters_dir()
    if root is None:
        raise InputError("make_scale_corpus: Reuters-21578 was not found (expected ../shared/data/reuters21578 "
                         "or $NEARDUP_REUTERS_DIR); the scale corpus is built from its stories.")
    files = sorted(str(p) for p in root.glob("reut2-*.sgm"))
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


def make_scale_corpus(n_docs: int, out: str | Path, *, giant: int | None = None, seed: int = 0,
                      workers: int | None = None) -> list[Path]:
    """Write the scale corpus of ``n_docs`` documents to ``out`` as Parquet shards of
    100,000 documents (``part-00000.parquet``, ...; columns id, text, cluster) and return
    their paths. Shards already there are kept, so an interrupted build resumes.

    ``giant`` is the size of the one giant cluster (default: 100,000 from 1M documents,
    else 10% of them); ``workers`` the processes that write shards (default: every CPU).
    """
    caller = "make_scale_corpus"
    n_docs = check_int(caller, "n_docs", n_docs, low=1)
    if giant is None:
        giant = 100_000 if n_docs >= 1_000_000 else n_docs // 10
    giant = check_int(caller, "giant", giant, low=0, high=n_docs)
    seed = check_int(caller, "seed", seed, low=0)
    workers = check_int(caller, "workers", workers if workers is not None else os.cpu_count() or 1, low=1)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bases = plan(n_docs, giant, seed)
    jobs = [(i, bases[s:s + SHARD_DOCS], seed, str(out))
            for i, s in enumerate(range(0, bases.size, SHARD_DOCS))
            if not (out / f"part-{i:05d}.parquet").exists()]
    if jobs:
        if workers == 1 or len(jobs) == 1:
            _init()
            for job in jobs:
                _shard(job)
        else:
            with ProcessPoolExecutor(min(workers, len(jobs)), initializer=_init) as pool:
                list(pool.map(_shard, jobs))
    return sorted(out.glob("part-*.parquet"))
