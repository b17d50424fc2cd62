"""Pairs over the threshold that ngram's chains find, under a chaining rule (issue 36).

    python -m experiments.chain_rule.pair_recall --rule one-chain             # this checkout
    python -m experiments.chain_rule.pair_recall --rule two-chain --data DIR  # a copy of 9e47cf8

A pair at or above the threshold that shares a shingle in at most ``max_df`` documents is
always found; one sharing only shingles over ``max_df`` is found only if the chains put
its two documents next to each other. With ``max_df`` at the corpus size nothing is
chained and the search returns every pair at or above the threshold (``all``); at a
smaller ``max_df`` it returns a subset (every returned pair is exact), so
``missed = all - found`` are the pairs the chains did not find. ``chained_candidates``
is what the rule cost (pairs it proposed). Same corpora and settings as measure.py; the
rule is whatever the imported ``neardup`` does. Writes results/pairs-<rule>.json.
"""

from __future__ import annotations

from experiments.chain_rule.measure import MAX_DFS, SETTINGS, arguments, corpora, write_rows
from neardup.eval.evaluate import build_method


def main() -> None:
    args = arguments(__doc__)
    rows = []
    for corpus_name, corpus in corpora(args.data).items():
        texts = corpus.texts
        for label, params in SETTINGS.items():
            method = build_method("ngram", {**params, "max_df": len(texts)})
            sketch = method.sketch(texts)
            every = len(method.find_pairs(sketch))
            for max_df in MAX_DFS:
                method = build_method("ngram", {**params, "max_df": max_df})
                found = len(method.find_pairs(sketch))
                stats = method.stats_
                rows.append({"corpus": corpus_name, "setting": label, "max_df": max_df,
                             "all": every, "found": found, "missed": every - found,
                             "chained_candidates": stats["chained_candidates"],
                             "chained_pairs": stats["chained_pairs"],
                             "frequent_shingles": stats["frequent_shingles"]})
                print(f"{corpus_name:32s} {label:24s} max_df={max_df:5d} all {every:8d} "
                      f"missed {every - found:7d} chained candidates {stats['chained_candidates']:8d}",
                      flush=True)
    write_rows(args.out / f"pairs-{args.rule}.json", "experiments.chain_rule.pair_recall", rows)


if __name__ == "__main__":
    main()
