"""Step 1 of the verifier-cost study: every set's labelled pairs and their features, cached.

    python -m experiments.verifier_cost.pairs [--sets NAME ...] [--cache DIR]

Per set of :data:`SETS`: the verifier's training pairs on the set's *train* split
(:func:`neardup.train.cross_encoder.training_pairs` over rerank's default candidates,
MinHash over character 5-grams at Jaccard 0.1, capped at 10,000 pairs, seed 0: the
shipped model's procedure, experiments/verifier_transfer) and rerank's candidates on its
*validation* split and language-balanced validation split. The test splits are not read.
Each pair's positions are kept (so that a new feature kind can be computed later from
the texts) with every lexical feature of :data:`neardup.methods.pair_features.LEXICAL_FEATURES`.
``--align-chars N``: also ``align_ratio`` over the first N normalized characters.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from neardup.datasets.independent import LANGUAGE_SPLIT
from neardup.text import ShingleConfig

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path("/tmp/neardup-verifier-cost")
SETS = ["reuters-news", "reuters-adversarial", "indep-nlpaug", "indep-augly", "indep-noisocr",
        "indep-confusables", "multi-latin", "multi-cyrillic", "multi-greek", "multi-cjk"]
#: rerank's default candidate method, as the shipped model was trained with.
CANDIDATES = {"shingle": ShingleConfig("char", 5)}
MAX_PAIRS = 10_000
VALIDATION_SPLITS = ("validation", LANGUAGE_SPLIT)


def candidates(corpus):
    """rerank's candidate pairs of a labelled corpus (canonical order)."""
    from experiments.verifier_transfer.verifier_transfer import candidates as of_kind

    return of_kind(corpus, "char5")  # rerank's default, CANDIDATES here


def languages(path: Path) -> np.ndarray:
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as f:
        return np.array([json.loads(line).get("lang") or "" for line in f], dtype=object)


def split_corpus(name: str, split: str):
    """The labelled corpus of ``data/NAME/SPLIT.jsonl.gz`` (train: with its hard negatives)."""
    from neardup.eval import load_labeled
    from neardup.train.data import load_training_corpus

    path = ROOT / "data" / name / f"{split}.jsonl.gz"
    if not path.exists():
        return None
    if split == "train":
        return load_training_corpus(path)
    return load_labeled(path), None


def compute(name: str, cache: Path, seed: int = 0) -> None:
    from neardup.methods.pair_features import LEXICAL_FEATURES, pair_features
    from neardup.train.cross_encoder import training_pairs

    features = list(LEXICAL_FEATURES)
    out: dict[str, np.ndarray] = {"features": np.array(features)}
    cpu0 = time.process_time()
    train = split_corpus(name, "train")
    if train is not None:
        corpus, negative_of = train
        data = training_pairs(corpus, negative_of=negative_of, max_pairs=MAX_PAIRS,
                              candidates="minhash", candidate_params=CANDIDATES, seed=seed,
                              threads=1)
        out["train_left"], out["train_right"] = data["left"], data["right"]
        out["train_x"] = pair_features(corpus.texts, data["left"], data["right"],
                                       dates=corpus.dates, features=features, threads=1)
        out["train_y"] = data["label"].astype(np.int8)
    for split in VALIDATION_SPLITS:
        loaded = split_corpus(name, split)
        if loaded is None:
            continue  # sets of one language have no language-balanced split
        corpus = loaded[0]
        pairs = candidates(corpus)
        out[f"{split}_x"] = pair_features(corpus.texts, pairs.left, pairs.right,
                                          dates=corpus.dates, features=features, threads=1)
        out[f"{split}_left"], out[f"{split}_right"] = pairs.left, pairs.right
        out[f"{split}_clusters"] = np.asarray(corpus.clusters).astype(str)
        out[f"{split}_lang"] = languages(ROOT / "data" / name / f"{split}.jsonl.gz").astype(str)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(cache / f"{name}.npz", **out)
    print(f"{name}: {len(out.get('train_y', []))} train pairs, "
          f"{len(out['validation_left'])} validation candidates, "
          f"{time.process_time() - cpu0:.0f} CPU s", flush=True)


def shorter_alignment(name: str, cache: Path, align_chars: int) -> None:
    """``align_ratio`` of the cached pairs over the first ``align_chars`` normalized
    characters of each text (the shipped model aligns 4,000), as ``NAME-align_ratio-N.npz``."""
    from neardup.methods.pair_features import pair_features

    cached = np.load(cache / f"{name}.npz", allow_pickle=False)
    out: dict[str, np.ndarray] = {}
    for split in ("train", *VALIDATION_SPLITS):
        if f"{split}_left" not in cached:
            continue
        corpus = split_corpus(name, split)[0]
        out[f"{split}_x"] = pair_features(corpus.texts, cached[f"{split}_left"],
                                          cached[f"{split}_right"], features=["align_ratio"],
                                          align_chars=align_chars, threads=1)
    np.savez_compressed(cache / f"{name}-align_ratio-{align_chars}.npz", **out)
    print(f"{name}: align_ratio over {align_chars} characters", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=SETS)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--align-chars", type=int, nargs="*", default=[],
                        help="after the pairs: align_ratio over this many characters too")
    args = parser.parse_args()
    for name in args.sets:
        if not (args.cache / f"{name}.npz").exists():
            compute(name, args.cache)
        for n in args.align_chars:
            shorter_alignment(name, args.cache, n)


if __name__ == "__main__":
    main()
