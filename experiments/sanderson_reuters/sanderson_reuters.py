"""Sanderson's mutual-retrieval test on Reuters-21578, with duplicate types.

Runs ``--method sanderson`` with its defaults (BM25, 20-term queries, top 5, 48-hour
window) on all 21,578 stories (text = title + body), types every pair, and checks how many
of the collection's identical-body story pairs it links. Compare with Sanderson (1997):
322 candidate exact pairs (320 true), 283 expanded candidates (139 true), 33 template
candidates.

    python -m experiments.sanderson_reuters.sanderson_reuters
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.harness import identical_body_pairs, machine, results_saver, reuters_files
from neardup.io import ReaderConfig, read_corpus
from neardup.methods import Sanderson
from neardup.pipeline import run

save = results_saver(Path(__file__).resolve().parent / "results")


def main() -> None:
    files = reuters_files()
    config = ReaderConfig()
    start = time.perf_counter()
    method = Sanderson()
    result = run(read_corpus(files, config), method, reread=lambda: read_corpus(files, config))
    seconds = time.perf_counter() - start
    n_edges = len(result.pairs)
    types_in = Counter(result.pair_types[:n_edges].tolist())
    types_out = Counter(result.pair_types[n_edges:].tolist())

    same_body = set(identical_body_pairs(files, config, result.ids.tolist()))
    found = set(zip(result.pairs.left.tolist(), result.pairs.right.tolist()))
    found |= set(zip(result.outside_window.left.tolist(), result.outside_window.right.tolist()))
    linked = sum((min(a, b), max(a, b)) in found for a, b in same_body)
    same_cluster = sum(result.clusters[a] == result.clusters[b] for a, b in same_body)

    print(f"{len(result.ids):,} stories, {seconds:.1f} s; {machine()}\n")
    print("| pairs | total | exact | expanded | corrected | template | near |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, counts in (("mutual, within 48 h (edges)", types_in), ("mutual, outside 48 h", types_out)):
        row = [counts.get(t, 0) for t in ("exact", "expanded", "corrected", "template", "near")]
        print(f"| {name} | {sum(counts.values()):,} | " + " | ".join(f"{v:,}" for v in row) + " |")
    print(f"\nidentical-body pairs in the collection: {len(same_body):,}; linked directly: "
          f"{linked:,} ({100 * linked / len(same_body):.1f}%); in one cluster: {same_cluster:,} "
          f"({100 * same_cluster / len(same_body):.1f}%)")
    save("sanderson_reuters", {
        "seconds": seconds, "edges_by_type": dict(types_in), "outside_window_by_type": dict(types_out),
        "identical_body_pairs": len(same_body), "linked": linked, "same_cluster": int(same_cluster),
        "machine": machine(),
    })


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
