"""Step 2 of the verifier-cost study: CPU of the verifier's parts, per document and per pair.

    python -m experiments.verifier_cost.cost components [--docs N] [--data reuters|scale:PATH]
    python -m experiments.verifier_cost.cost models DIR ... [--docs N]

On the first ``--docs`` documents of Reuters-21578 (SGML, as the CLI reads it) or of a
scale corpus, with rerank's default candidates among them (char-5 MinHash at 0.1):

* ``components``: CPU of :func:`~neardup.methods.pair_features.document_profiles` per
  document for normalization alone and for each shingle set and the heads on their own,
  and of :func:`~neardup.methods.pair_features.profile_pair_features` per pair for each
  set's merge and each alignment (one thread, ``time.process_time``, best of
  ``--repeats``);
* ``models``: for each verifier model folder, what rerank's corpus stage does with it:
  its profiles (CPU per document) and ``VerifierScorer.decide_profiles`` (features, the
  tree bound that defers ``align_partial``, or the ``--defer`` features, prediction: CPU
  per pair).

Raw output: experiments/verifier_cost/results/cost-*.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def load(data: str, docs: int) -> tuple[list[str], np.ndarray | None]:
    """The first ``docs`` texts (and dates) of Reuters-21578 or a scale corpus."""
    if data == "reuters":
        from benchmarks.harness import reuters_files
        from neardup.io import ReaderConfig, read_corpus

        texts, dates = [], []
        for batch in read_corpus(reuters_files(), ReaderConfig()):
            texts += batch.texts
            dates.append(batch.dates)
            if len(texts) >= docs:
                break
        return texts[:docs], np.concatenate(dates)[:docs]
    import pyarrow.parquet as pq

    path = Path(data.removeprefix("scale:"))
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    texts = pq.read_table(files[0], columns=["text"]).column("text").to_pylist()[:docs]
    return texts, None


def rerank_candidates(texts: list[str], dates) -> tuple[np.ndarray, np.ndarray]:
    from neardup.io import DocumentBatch
    from neardup.methods.rerank import candidate_method
    from neardup.pipeline import sketch_corpus
    from neardup.text import ShingleConfig

    method = candidate_method("minhash", {"shingle": ShingleConfig("char", 5)})
    batch = DocumentBatch(ids=[str(i) for i in range(len(texts))], texts=texts, dates=dates,
                          source="<bench>", rows=np.arange(len(texts), dtype=np.int64))
    pairs = method.find_pairs(sketch_corpus([batch], method, progress=False).sketch).canonical()
    return pairs.left, pairs.right


def cpu(fn, repeats: int) -> float:
    """Smallest CPU seconds of ``repeats`` calls of ``fn`` (the others' noise is load)."""
    best = np.inf
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return float(best)


#: Feature groups measured on their own: per document, what its profile must hold;
#: per pair, the columns computed from it.
GROUPS = {
    "normalize (lengths only)": ["length_ratio"],
    "word1": ["word1_jaccard", "word1_containment"],
    "word2": ["word2_jaccard", "word2_containment"],
    "word3": ["word3_jaccard", "word3_containment"],
    "word5": ["word5_jaccard", "word5_containment"],
    "char4": ["char4_jaccard", "char4_containment"],
    "char8": ["char8_jaccard", "char8_containment"],
    "masked3": ["masked3_jaccard"],
    "numbers": ["numbers_jaccard"],
    "align_ratio": ["align_ratio"],
    "align_partial": ["align_partial"],
}


def components(texts, dates, left, right, repeats: int) -> dict:
    from neardup.methods.pair_features import document_profiles, profile_pair_features

    n, m = len(texts), left.size
    base = cpu(lambda: document_profiles(texts, features=GROUPS["normalize (lengths only)"]), repeats)
    out = {"documents": n, "pairs": m, "per_document_ms": {}, "per_pair_ms": {}}
    out["per_document_ms"]["normalize (lengths only)"] = 1e3 * base / n
    for name, feats in GROUPS.items():
        if name.startswith("normalize"):
            continue
        profiles = document_profiles(texts, features=feats)
        whole = cpu(lambda feats=feats: document_profiles(texts, features=feats), repeats)
        out["per_document_ms"][name] = 1e3 * max(whole - base, 0.0) / n
        pair = cpu(lambda feats=feats, p=profiles: profile_pair_features(
            p, left, right, dates=dates, features=feats, threads=1), repeats)
        out["per_pair_ms"][name] = 1e3 * pair / m
        print(f"{name:26s} {out['per_document_ms'][name]:.4f} ms/doc  "
              f"{out['per_pair_ms'][name]:.5f} ms/pair", flush=True)
    return out


def models(texts, dates, left, right, directories: list[str], repeats: int,
           defer: tuple[str, ...] | None = None) -> dict:
    from neardup.methods.rerank import VerifierScorer

    out = {"documents": len(texts), "pairs": int(left.size), "models": {}, "deferred": defer}
    for directory in directories:
        scorer = VerifierScorer(directory, threads=1)
        if defer is not None:
            scorer.deferred_features = defer  # features the tree bound leaves for later
        threshold = float(scorer.meta["threshold"])
        profiles = scorer.document_profiles(texts)
        scorer.decide_profiles(profiles, left, right, dates, threshold=threshold)  # load, compile
        per_doc = cpu(lambda s=scorer: s.document_profiles(texts), repeats)
        per_pair = cpu(lambda s=scorer, p=profiles: s.decide_profiles(
            p, left, right, dates, threshold=threshold), repeats)
        _, accepted = scorer.decide_profiles(profiles, left, right, dates, threshold=threshold)
        row = {"features": list(scorer.features), "threshold": threshold,
               "profile_ms_per_document": 1e3 * per_doc / len(texts),
               "decide_ms_per_pair": 1e3 * per_pair / left.size,
               "verifier_ms_per_document": 1e3 * (per_doc + per_pair) / len(texts),
               "profile_bytes_per_document": profiles.nbytes() / len(texts),
               "accepted": int(accepted.sum())}
        out["models"][directory] = row
        print(f"{directory}: {row['profile_ms_per_document']:.3f} ms/doc, "
              f"{row['decide_ms_per_pair']:.4f} ms/pair, "
              f"{row['verifier_ms_per_document']:.3f} verifier ms/doc, "
              f"{row['profile_bytes_per_document'] / 1e3:.1f} KB/doc, accepted {row['accepted']}",
              flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["components", "models"])
    parser.add_argument("models", nargs="*", help="verifier model folders (step models)")
    parser.add_argument("--data", default="reuters")
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--name", default=None)
    parser.add_argument("--defer", nargs="*", default=None,
                        help="features the tree bound defers (default: the scorer's, align_partial)")
    args = parser.parse_args()
    texts, dates = load(args.data, args.docs)
    left, right = rerank_candidates(texts, dates)
    print(f"{args.data}: {len(texts)} documents, {left.size} candidate pairs", flush=True)
    if args.step == "components":
        result = components(texts, dates, left, right, args.repeats)
    else:
        result = models(texts, dates, left, right, args.models, args.repeats,
                        None if args.defer is None else tuple(args.defer))
    result.update(data=args.data, step=args.step)
    name = args.name or f"cost-{args.step}-{args.data.replace(':', '-').replace('/', '_')}"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {RESULTS / name}.json")


if __name__ == "__main__":
    main()
