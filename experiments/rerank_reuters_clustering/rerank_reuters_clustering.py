"""``--method rerank`` on all of Reuters-21578, clustered by connected components and by
Leiden (the shipped verifier's recommended clustering), with and without a time window.

Reuters has no near-duplicate labels, but two checks need none: the identical-body story
pairs (copies re-sent unchanged; Sanderson 1997 counted 322 candidates) should end in
one cluster, and recurring reports that share a template (daily market figures, weekly
notices) should not form huge clusters. The verifier with connected components and no
window merged templates into one 342-document cluster (issue 17).

    python -m experiments.rerank_reuters_clustering.rerank_reuters_clustering     # raw: experiments/rerank_reuters_clustering/results/rerank_reuters_clustering.json
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchmarks.harness import identical_body_pairs, machine, results_saver, reuters_files
from neardup.io import ReaderConfig, read_corpus
from neardup.methods import make_method
from neardup.pipeline import ClusterConfig, run_on_sketch, sketch_corpus

save = results_saver(Path(__file__).resolve().parent / "results")

SETTINGS = {
    "components": {"algorithm": "components"},
    "leiden, resolution 0.4": {"algorithm": "leiden", "resolution": 0.4},
}


def main() -> None:
    files = reuters_files()
    config = ReaderConfig()
    method = make_method("rerank")
    start = time.process_time()
    corpus = sketch_corpus(read_corpus(files, config), method, progress=False)
    same_body = np.array(identical_body_pairs(files, config, corpus.ids.tolist()))
    rows = {}
    for window in (None, 48.0):
        for name, setting in SETTINGS.items():
            cpu = time.process_time()
            result = run_on_sketch(corpus, method, cluster=ClusterConfig(
                **setting, time_window_hours=window))
            sizes = np.bincount(result.clusters)
            together = result.clusters[same_body[:, 0]] == result.clusters[same_body[:, 1]]
            key = f"{name}, {'no window' if window is None else f'{window:g} h window'}"
            rows[key] = {
                "largest_clusters": sorted(sizes.tolist(), reverse=True)[:5],
                "clusters_over_50": int(np.count_nonzero(sizes > 50)),
                "documents_in_clusters_over_50": int(sizes[sizes > 50].sum()),
                "duplicates_removed": int(len(result.clusters) - sizes.size),
                "identical_body_pairs": int(len(same_body)),
                "identical_body_pairs_together": int(np.count_nonzero(together)),
                "cpu_seconds": round(time.process_time() - cpu, 1),
            }
            print(key, rows[key], flush=True)
    print("\n| clustering | largest clusters | clusters > 50 docs (docs) | duplicates removed | "
          "identical-body pairs in one cluster |\n|---|---|---:|---:|---:|")
    for key, r in rows.items():
        print(f"| {key} | {', '.join(map(str, r['largest_clusters']))} | "
              f"{r['clusters_over_50']} ({r['documents_in_clusters_over_50']:,}) | "
              f"{r['duplicates_removed']:,} | {r['identical_body_pairs_together']:,} of "
              f"{r['identical_body_pairs']:,} |")
    save("rerank_reuters_clustering", {"machine": machine(), "documents": len(corpus.ids),
                                       "rows": rows,
                                       "cpu_seconds": round(time.process_time() - start, 1)})


if __name__ == "__main__":
    main()
