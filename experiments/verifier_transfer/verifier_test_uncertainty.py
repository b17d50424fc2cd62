"""How far the verifier's test ARI cells move by chance: a block bootstrap of each cell,
beside the spread over training seeds.

    python -m experiments.verifier_transfer.verifier_test_uncertainty [--cache DIR] [--draws 1000]

For the held-out verifiers of ``experiments/verifier_transfer/verifier_clustering.py`` (training seeds 0, 1, 2;
each set's threshold the one its validation rule chose, read from that script's results
files) and for the shipped model at its threshold, clustered by connected components and
by Leiden at resolution 0.4 (rerank's default): each set's and each language's test ARI
with a 95% bootstrap interval.

The bootstrap draws **blocks** with replacement: the connected groups of "same true
cluster or same predicted cluster" (a false merge stays together with both its stories,
a split story with all its pieces), each drawn copy relabelled apart from the others, so
a draw is a test set of the same kind of stories and the same kinds of errors. Intervals
are percentiles of the draws' ARI. Nothing is chosen here: the test splits are read only
to measure how much a cell of their size moves. Results:
``experiments/verifier_transfer/results/verifier_test_uncertainty.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments.verifier_transfer.verifier_clustering import CLUSTERINGS, cluster, probabilities
from experiments.verifier_transfer.verifier_transfer import SETS
from experiments.verifier_transfer.verifier_variants import load_cache

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "verifier_test_uncertainty.json"
#: verifier_clustering.py's results per training seed (thresholds chosen on validation).
SEED_RESULTS = {0: "verifier_clustering.json", 1: "verifier_clustering_seed1.json",
                2: "verifier_clustering_seed2.json"}
NAMES = ("components", "leiden-r0.4")


def block_bootstrap(truth: np.ndarray, pred: np.ndarray, draws: int, seed: int = 0) -> np.ndarray:
    """ARI of ``draws`` block-bootstrap resamples of one labelling (see the module doc)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    from sklearn.metrics import adjusted_rand_score

    from neardup.engine.buckets import concat_ranges

    t = np.unique(truth, return_inverse=True)[1].astype(np.int64)
    p = np.unique(pred, return_inverse=True)[1].astype(np.int64)
    n_t, n_p = int(t.max()) + 1, int(p.max()) + 1
    graph = sp.coo_matrix((np.ones(t.size), (t, n_t + p)), shape=(n_t + n_p, n_t + n_p))
    block = connected_components(graph, directed=False)[1][t]
    order = np.argsort(block, kind="stable")
    sizes = np.bincount(block)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rng = np.random.default_rng(seed)
    out = np.empty(draws)
    for d in range(draws):
        pick = rng.integers(0, sizes.size, sizes.size)
        docs = order[concat_ranges(starts[pick], sizes[pick])]
        copy = np.repeat(np.arange(pick.size, dtype=np.int64), sizes[pick])
        out[d] = adjusted_rand_score(t[docs] + copy * n_t, p[docs] + copy * n_p)
    return out


def cells(data: dict, prob: np.ndarray, threshold: float, spec: dict, draws: int) -> dict:
    """Test ARI and its 95% interval, for the whole set and each of its languages."""
    from sklearn.metrics import adjusted_rand_score

    truth, lang = data["test_clusters"], data["test_lang"]
    labels = cluster(data["test_left"], data["test_right"], prob, len(truth), threshold, spec)
    languages = sorted(set(lang.tolist()) - {""})
    out = {}
    for code in ("test", *(languages if len(languages) > 1 else ())):
        docs = slice(None) if code == "test" else lang == code
        ari = float(adjusted_rand_score(truth[docs], labels[docs]))
        boot = block_bootstrap(truth[docs], labels[docs], draws)
        lo, hi = np.percentile(boot, [2.5, 97.5])
        out[code] = {"ari": round(ari, 4), "low": round(float(lo), 4), "high": round(float(hi), 4),
                     "documents": int(np.size(truth[docs]))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/neardup-verifier-transfer"))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="*", default=list(SEED_RESULTS))
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    data = load_cache(args.cache)
    results = {"draws": args.draws, "held_out": {}, "shipped": {}}
    for seed in args.seeds:
        cpu = time.process_time()
        chosen = json.loads((Path(__file__).resolve().parent / "results" / SEED_RESULTS[seed]).read_text())
        probs = probabilities(data, seed)
        for name in NAMES:
            row = results["held_out"].setdefault(name, {}).setdefault(str(seed), {})
            for s in SETS:
                t = chosen[name]["held_out_validation"][s]["threshold"]
                row[s] = {"threshold": t, **cells(data[s], probs["held-out"][s][s]["test"], t,
                                                  CLUSTERINGS[name], args.draws)}
            if seed == args.seeds[0]:  # the shipped model does not depend on the seed
                t = probs["shipped_default_threshold"]
                results["shipped"][name] = {s: {"threshold": t, **cells(
                    data[s], probs["shipped"][s]["test"], t, CLUSTERINGS[name], args.draws)} for s in SETS}
        print(f"seed {seed}: {time.process_time() - cpu:.0f} CPU s", flush=True)
        args.results.write_text(json.dumps(results, indent=1) + "\n")
    for name in NAMES:
        for seed, row in results["held_out"][name].items():
            print(name, "seed", seed, " ".join(
                f"{s}:{c['test']['ari']:.3f}[{c['test']['low']:.3f},{c['test']['high']:.3f}]"
                for s, c in row.items()))
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
