"""Build the independent evaluation sets under data/ (see data/README.md).

    python scripts/make_independent_sets.py [--only NAME ...] [--seed 2024]

Reuters-based sets (copies by a third-party augmenter, the standard benchmark's story,
split and hard-negative structure): indep-nlpaug, indep-augly, indep-noisocr,
indep-confusables. Multilingual sets (translated Debian man pages, Faker's Greek words):
multi-latin, multi-cyrillic, multi-greek, multi-cjk. Each directory gets
validation.jsonl.gz, test.jsonl.gz and info.json; indep-confusables' info.json also holds
the share of injected confusables that neardup's normalizer folds.

``--language-validation DOCS`` also writes language_validation.jsonl.gz for the sets of
more than one language (multi-latin, multi-cjk): a validation split with about DOCS
documents of each language, from pages no other split took (drawn after train, so the
other splits stay byte-identical).

``--train DOCS`` also writes train.jsonl.gz (about DOCS documents, for training the
learned methods on a mixture of generators); the train split is drawn after test and
validation from stories/pages they did not take, so those two stay byte-identical.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from neardup.datasets.benchmark_stats import benchmark_stats
from neardup.datasets.independent import (
    GENERATORS,
    LANGUAGE_SETS,
    LANGUAGE_SPLIT,
    confusable_fold_rate,
    make_independent_set,
    make_multilingual_set,
    write_set,
)
from neardup.io import ReaderConfig, find_reuters_dir, iter_records

ROOT = Path(__file__).resolve().parents[1]
REUTERS_SETS = {f"indep-{g}": g for g in GENERATORS}
MULTI_SETS = {f"multi-{name}": name for name in LANGUAGE_SETS}


def _reuters_stories() -> list[dict]:
    root = find_reuters_dir()
    if root is None:
        raise SystemExit("Reuters-21578 not found: set NEARDUP_REUTERS_DIR (see data/README.md)")
    stories = []
    for record in iter_records(sorted(root.glob("reut2-*.sgm")), ReaderConfig()):
        stories.append({"id": record.get("id"), "text": record.get("text"),
                        "date": record.get("date"), "topics": record.get("topics"),
                        "title": record.get("title"), "dateline": record.get("dateline"),
                        "body": record.get("body")})
    return stories


def _summary(records: list[dict]) -> dict:
    """Documents, clusters, pairs and mean word-3-gram Jaccard per split."""
    keep = ("docs", "clusters", "singletons", "positive_pairs", "negative_pairs",
            "jaccard_positive_mean", "hard_negative_pairs", "jaccard_hard_negative_mean",
            "jaccard_random_negative_mean", "kinds")
    return {split: {k: v for k, v in stats.items() if k in keep}
            for split, stats in benchmark_stats(records).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="set names to build (default: all)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", type=Path, default=ROOT / "data")
    parser.add_argument("--train", type=int, default=0, metavar="DOCS",
                        help="also build a train split of about DOCS documents (0: none)")
    parser.add_argument("--language-validation", type=int, default=0, metavar="DOCS",
                        help="also build, for sets of more than one language, a validation "
                             "split with about DOCS documents of each language (0: none)")
    args = parser.parse_args()
    names = args.only or [*REUTERS_SETS, *MULTI_SETS]
    stories = None
    for name in names:
        start = time.perf_counter()
        if name in REUTERS_SETS:
            stories = stories if stories is not None else _reuters_stories()
            splits = [("validation", 1500), ("test", 1500)]
            if args.train:
                splits.append(("train", args.train))
            records, info = make_independent_set(stories, REUTERS_SETS[name], seed=args.seed,
                                                  splits=splits)
            if REUTERS_SETS[name] == "confusables":
                info["normalizer_folds"] = confusable_fold_rate(records)
        elif name in MULTI_SETS:
            splits = ["test", "validation"] + (["train"] if args.train else [])
            if args.language_validation and len(LANGUAGE_SETS[MULTI_SETS[name]]) > 1:
                splits.append(LANGUAGE_SPLIT)
            records, info = make_multilingual_set(
                MULTI_SETS[name], seed=args.seed, splits=splits, docs_per_split=600,
                docs_per_language=args.language_validation or 300)
        else:
            raise SystemExit(f"unknown set {name!r}; choose from {[*REUTERS_SETS, *MULTI_SETS]}")
        info["command"] = (f"python scripts/make_independent_sets.py --only {name} --seed {args.seed}"
                           + (f" --train {args.train}" if args.train else "")
                           + (f" --language-validation {args.language_validation}"
                              if args.language_validation else ""))
        info["stats"] = _summary(records)
        sizes = write_set(records, args.out / name, info)
        print(f"{name}: {len(records)} docs, {sizes} bytes, {time.perf_counter() - start:.0f} s",
              flush=True)


if __name__ == "__main__":
    main()
