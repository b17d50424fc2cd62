"""Where rerank's candidate pairs come from, and what two routes to fewer would do
(issues #41 item 3, #37: a candidate generator with fewer low-similarity pairs).

rerank's candidates are MinHash signatures of character 5-grams (128 values) banded
64 x 2, every band collision checked by the signature estimate >= 0.1; the pairs that
pass go to the verifier. Per data set this measures, in memory and in batches:

* the candidates as shipped: band collisions and pairs passing the check per document,
  the share of collisions made by buckets past ``max_bucket_pairs`` (chained), the
  estimate of the passing pairs, and, with labels, how many are true pairs;
* route (a): the same candidates with the *common* shingles left out of the sketch,
  those whose document frequency in a seeded sample of ``--sample`` documents is above
  a fraction ``f`` (documents left with fewer than ``MIN_KEPT`` shingles keep all of
  theirs), checked at the shipped estimate 0.1 or at 0.07;
* route (d): the shipped candidates, each document keeping its ``k`` highest estimates;
  (d'): the same cap on the pairs estimated below ``LOW_ESTIMATE`` only.

Per variant: pairs passing per document, true pairs kept, the extra components the true
pairs among the candidates fall into (a true cluster its candidates no longer connect),
and on labelled sets up to ``ARI_UPTO`` documents the ARI of rerank's decisions on those
candidates (the shipped verifier with the documents' dates, the template guard, the
model's threshold and Leiden at its resolution, as :class:`_Clusterer` does; on the
shipped candidates this reproduces ``neardup eval``'s figure on the four independent sets).
``--quick`` runs only the shipped candidates, ``drop_df>0.2`` and route (d).

Validation splits only (``data/NAME/validation.jsonl.gz``), ``reuters`` (unlabelled) and
``scale:PATH`` (the seeded scale corpus; its ``cluster`` column as labels).

    python benchmarks/rerank_candgen.py --data indep-nlpaug --data scale:/tmp/neardup-scale/20k --name candgen-NAME

Raw results: ``benchmarks/results/rerank/NAME.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.rerank_routes import _load, run_sets  # noqa: E402

#: (document-frequency fraction above which a shingle is left out, estimate the pairs must
#: reach): None keeps every shingle (the shipped candidates).
VARIANTS = ((None, 0.1), (0.02, 0.1), (0.05, 0.1), (0.1, 0.1), (0.2, 0.1), (0.5, 0.1),
            (0.05, 0.07), (0.1, 0.07), (0.2, 0.07))
#: Route (d): at most k partners a document, its k highest estimates (a pair stays when it
#: is among the k of either document), on the shipped candidates.
TOP_K = (5, 10, 20, 40)
#: Route (d'): the cap on the pairs estimated below ``LOW_ESTIMATE`` only (pairs above it
#: all stay, so a cluster of close copies keeps its edges), k per document.
LOW_K = (3, 5, 10)
LOW_ESTIMATE = 0.3
MIN_KEPT = 8  # shingles a document keeps at least (short texts keep every shingle)
BATCH = 4096
#: Labelled sets up to this size are clustered as rerank clusters them (verifier, template
#: guard, Leiden at the model's resolution) for each variant, for its ARI.
ARI_UPTO = 5000


def _sets(minhash, texts):
    return minhash.shingle_sets(texts).unique()


def common_shingles(minhash, texts: list[str], sample: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Distinct shingle hashes of a seeded sample of ``texts`` and their document
    frequency as a fraction of the sample, most frequent first."""
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(texts), size=min(sample, len(texts)), replace=False))
    sets = _sets(minhash, [texts[i] for i in pick])
    hashes, df = np.unique(sets.hashes, return_counts=True)
    order = np.argsort(-df, kind="stable")
    return hashes[order], df[order] / pick.size


def filtered_signatures(minhash, texts: list[str], drop: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Signatures and kept-shingle counts of ``texts`` without the shingles in ``drop``
    (sorted), batch by batch."""
    from neardup.text.shingle import ShingleSets

    sigs, counts = [], []
    for start in range(0, len(texts), BATCH):
        sets = _sets(minhash, texts[start:start + BATCH])
        if drop is not None and drop.size:
            where = np.searchsorted(drop, sets.hashes).clip(max=drop.size - 1)
            keep = drop[where] != sets.hashes
            doc = np.repeat(np.arange(len(sets)), sets.counts())
            kept = np.bincount(doc[keep], minlength=len(sets))
            keep |= (kept < MIN_KEPT)[doc]  # short texts keep every shingle
            new_counts = np.bincount(doc[keep], minlength=len(sets))
            offsets = np.zeros(len(sets) + 1, np.int64)
            np.cumsum(new_counts, out=offsets[1:])
            sets = ShingleSets(sets.hashes[keep], offsets)
        sigs.append(minhash.signatures_from_sets(sets))
        counts.append(sets.counts())
    return np.concatenate(sigs), np.concatenate(counts)


def candidates(signature: np.ndarray, counts: np.ndarray, bands: int, rows: int, cap: int,
               estimate_at: float) -> dict:
    """rerank's candidate pairs from ``signature``: band collisions, then the estimate."""
    from neardup.methods.lsh import band_keys, bucket_pairs
    from neardup.methods.minhash import jaccard_from_signatures

    valid = np.flatnonzero(counts > 0)
    keys = band_keys(signature[valid], bands, rows)
    lefts, rights, chained = [], [], 0
    for band in range(bands):
        left, right, _ = bucket_pairs(keys[band], valid, cap)
        _, sizes = np.unique(keys[band], return_counts=True)
        big = sizes[sizes > cap]
        chained += int((big - 1).sum())  # a chained bucket of s documents makes s - 1 edges
        lefts.append(left)
        rights.append(right)
    left, right = np.concatenate(lefts), np.concatenate(rights)
    raw = left.size
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    pair = np.unique(lo.astype(np.int64) * signature.shape[0] + hi)
    lo, hi = pair // signature.shape[0], pair % signature.shape[0]
    estimate = jaccard_from_signatures(signature, lo, hi)
    passed = estimate >= estimate_at
    return {"collisions": raw, "chained_edges": chained, "distinct_pairs": int(pair.size),
            "left": lo[passed], "right": hi[passed], "estimate": estimate[passed]}


def top_k_partners(n: int, left: np.ndarray, right: np.ndarray, estimate: np.ndarray, k: int) -> np.ndarray:
    """Mask of the pairs among the ``k`` highest estimates of either document (ties by
    partner position, so the choice is deterministic)."""
    doc = np.concatenate((left, right))
    partner = np.concatenate((right, left))
    est = np.concatenate((estimate, estimate))
    order = np.lexsort((partner, -est, doc))
    sorted_doc = doc[order]
    first = np.searchsorted(sorted_doc, sorted_doc, side="left")
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size) - first
    kept = rank < k
    return kept[: left.size] | kept[left.size:]


def extra_components(labels: np.ndarray, left: np.ndarray, right: np.ndarray) -> int:
    """Components the true pairs among the candidates split the labelled clusters into,
    beyond one per cluster."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = labels.size
    true = labels[left] == labels[right]
    graph = coo_matrix((np.ones(int(true.sum())), (left[true], right[true])), shape=(n, n))
    n_comp, _ = connected_components(graph, directed=False)
    return int(n_comp - np.unique(labels).size)


class _Clusterer:
    """rerank's decisions and clusters on given candidate pairs: the shipped verifier
    (every feature, the documents' dates), the template guard, the model's threshold, and
    Leiden at the model's resolution; each pair scored once across variants."""

    def __init__(self, method, texts, dates):
        self.method, self.texts, self.dates, self.prob = method, texts, dates, {}

    def ari(self, labels: np.ndarray, left: np.ndarray, right: np.ndarray) -> float:
        from neardup.eval.metrics import adjusted_rand_index
        from neardup.graph.cluster import cluster_pairs
        from neardup.graph.edges import Pairs
        from neardup.methods.rerank import _template_pairs

        n = len(self.texts)
        key = left * n + right
        new = np.array([k not in self.prob for k in key.tolist()], bool)
        if new.any():
            prob = self.method._get_scorer().score_positions(self.texts, left[new], right[new], self.dates)
            prob[_template_pairs(self.texts, left[new], right[new])] = 0.0
            self.prob.update(zip(key[new].tolist(), prob.tolist()))
        prob = np.array([self.prob[k] for k in key.tolist()], np.float32)
        pairs = Pairs(left, right, prob).above(self.method.threshold)
        cluster = self.method.recommended_cluster()
        labels_pred = cluster_pairs(pairs, n, method=cluster["algorithm"],
                                    resolution=cluster.get("resolution", 1.0)).labels
        return adjusted_rand_index(labels, labels_pred)


def measure(data: str, sample: int, full: bool = True) -> dict:
    from neardup.methods.rerank import RerankMethod

    texts, dates, labels = _load(data)
    method = RerankMethod()
    lsh = method.candidate
    clusterer = _Clusterer(method, texts, dates) if labels is not None and len(texts) <= ARI_UPTO else None
    minhash, (bands, rows) = lsh._minhash, lsh.banding
    start = time.process_time()
    common, df = common_shingles(minhash, texts, sample)
    result = {"documents": len(texts), "bands": bands, "rows": rows,
              "max_bucket_pairs": lsh.max_bucket_pairs, "sample": min(sample, len(texts)),
              "sample_cpu_s": time.process_time() - start, "variants": {}}
    result["common_shingles"] = {str(f): int((df > f).sum()) for f, _ in VARIANTS if f}
    baseline_true, sketched = None, {}
    variants = [(f, e, None) for f, e in VARIANTS] if full else [(None, 0.1, None), (0.2, 0.1, None)]
    capped = [(None, 0.1, (k, None)) for k in TOP_K] + [(None, 0.1, (k, LOW_ESTIMATE)) for k in LOW_K]
    for f, estimate_at, cap in variants + capped:
        start = time.process_time()
        drop = None if f is None else np.sort(common[df > f])
        if f not in sketched:
            sketched[f] = filtered_signatures(minhash, texts, drop)
        signature, counts = sketched[f]
        c = candidates(signature, counts, bands, rows, lsh.max_bucket_pairs, estimate_at)
        if cap is not None:
            k, below = cap
            if below is None:
                keep = top_k_partners(len(texts), c["left"], c["right"], c["estimate"], k)
            else:
                low = np.flatnonzero(c["estimate"] < below)
                keep = np.ones(c["estimate"].size, bool)
                keep[low] = top_k_partners(len(texts), c["left"][low], c["right"][low],
                                           c["estimate"][low], k)
            c.update(left=c["left"][keep], right=c["right"][keep], estimate=c["estimate"][keep])
        n_pass = int(c["left"].size)
        row = {"cpu_s": time.process_time() - start,
               "collisions_per_doc": c["collisions"] / len(texts),
               "chained_share": c["chained_edges"] / max(c["collisions"], 1),
               "distinct_pairs_per_doc": c["distinct_pairs"] / len(texts),
               "passed_per_doc": n_pass / len(texts),
               "passed_estimate_quartiles": [float(q) for q in np.quantile(c["estimate"], [0.25, 0.5, 0.75])]
               if n_pass else []}
        if labels is not None:
            true = labels[c["left"]] == labels[c["right"]]
            keys = set((c["left"][true] * len(texts) + c["right"][true]).tolist())
            if baseline_true is None:
                baseline_true = keys
            row.update({"true_passed": int(true.sum()), "false_passed_per_doc": int((~true).sum()) / len(texts),
                        "true_kept_of_baseline": len(keys & baseline_true) / max(len(baseline_true), 1),
                        "extra_components": extra_components(labels, c["left"], c["right"])})
        if clusterer is not None:
            row["rerank_ari"] = clusterer.ari(labels, c["left"], c["right"])
        name = f"drop_df>{f}" if f is not None else "shipped" if cap is None else (
            f"top{cap[0]}" if cap[1] is None else f"top{cap[0]}_below{cap[1]}")
        result["variants"][name if estimate_at == 0.1 else f"{name},estimate>={estimate_at}"] = row
    return result


def show(data: str, r: dict) -> None:
    print(f"{data}: {r['documents']} docs; common shingles by df {r['common_shingles']}")
    for name, v in r["variants"].items():
        lab = (f" true {v['true_passed']} kept {v['true_kept_of_baseline']:.4f} false/doc "
               f"{v['false_passed_per_doc']:.2f} extra comps {v['extra_components']}") if "true_passed" in v else ""
        if "rerank_ari" in v:
            lab += f" ARI {v['rerank_ari']:.4f}"
        print(f"  {name:27s} collisions/doc {v['collisions_per_doc']:7.1f} chained {v['chained_share']:.2f} "
              f"passed/doc {v['passed_per_doc']:6.2f} est q {np.round(v['passed_estimate_quartiles'], 2)}{lab} "
              f"cpu {v['cpu_s']:.1f}s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", action="append", required=True,
                        help="a data/ set name (its validation split), reuters, or scale:PATH")
    parser.add_argument("--sample", type=int, default=5000, help="documents the frequencies are counted on")
    parser.add_argument("--quick", action="store_true",
                        help="only the shipped candidates, drop_df>0.2 and the top-k routes")
    parser.add_argument("--name", default=None, help="results file name (no extension)")
    args = parser.parse_args()
    run_sets(args.data, lambda d: measure(d, args.sample, not args.quick), show, args.name)


if __name__ == "__main__":
    main()
