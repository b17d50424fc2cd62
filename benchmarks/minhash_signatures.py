"""MinHash signature throughput: neardup vs datasketch (update_batch) vs rensa.

Same texts (Reuters-21578 stories), same shingles (word 5-grams), 128 permutations, in one
run, each measured from raw text to signature, best of ``--repeat`` runs. The ratio columns
are what to compare across machines; absolute docs/s depend on the machine's load.

    python -m benchmarks one minhash_signatures [--docs 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from benchmarks.harness import machine, reuters_texts

NUM_PERM = 128
N = 5


def _word_shingles(text: str) -> list[str]:
    words = text.lower().split()
    if len(words) < N:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + N]) for i in range(len(words) - N + 1)]


def run_neardup(texts):
    from neardup import MinHash, ShingleConfig

    mh = MinHash(num_perm=NUM_PERM, shingle=ShingleConfig(unit="word", n=N))
    mh.signatures(texts[:10])  # compile outside the timing (numba caches to disk anyway)
    return lambda: mh.signatures(texts)


def run_datasketch(texts):
    from datasketch import MinHash

    def go():
        out = []
        for t in texts:
            m = MinHash(num_perm=NUM_PERM, seed=1)
            m.update_batch([s.encode("utf-8") for s in _word_shingles(t)])
            out.append(m.hashvalues)
        return out

    return go


def run_rensa(texts):
    from rensa import RMinHash

    def go():
        out = []
        for t in texts:
            m = RMinHash(num_perm=NUM_PERM, seed=1)
            m.update(_word_shingles(t))
            out.append(m.digest())
        return out

    return go


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000, help="number of Reuters stories")
    parser.add_argument("--repeat", type=int, default=3, help="runs per library; best is kept")
    parser.add_argument("--peers", nargs="*", default=["rensa", "datasketch"], choices=["rensa", "datasketch"],
                        help="peers timed on the same texts (default: both)")
    args = parser.parse_args(argv)
    texts = reuters_texts(limit=args.docs)
    words = sum(len(t.split()) for t in texts)
    rows = {}
    makers = {"neardup": run_neardup, "rensa": run_rensa, "datasketch": run_datasketch}
    for name in ["neardup", *args.peers]:
        make = makers[name]
        seconds = best_time(make(texts), args.repeat)
        rows[name] = {"seconds": seconds, "docs_per_s": len(texts) / seconds}
    base = rows["neardup"]["docs_per_s"]
    print(f"{len(texts)} Reuters stories, {words / len(texts):.0f} words on average, "
          f"word {N}-grams, {NUM_PERM} permutations; {machine()}\n")
    print("| library | docs/s | neardup speed-up |")
    print("|---|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['docs_per_s']:,.0f} | {base / row['docs_per_s']:.1f}x |")
    return {"docs": len(texts), "rows": rows, "machine": machine()}

