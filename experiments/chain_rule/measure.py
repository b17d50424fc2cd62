"""ARI of ngram under a chaining rule for shingles over ``max_df`` (issue 36, decision 0038).

    python -m experiments.chain_rule.measure --rule one-chain             # this checkout
    python -m experiments.chain_rule.measure --rule two-chain --data DIR  # run from a copy of 9e47cf8

Shingles in more than ``max_df`` documents are linked by chains over their posting
lists; the rule decides which near-duplicates that share only such shingles are found.
``two-chain`` is the in-memory rule before issue 36 (each list sorted by two MinHash
values, every document paired with its successor in both); ``one-chain`` is the rule every
path follows since (one chain per list, in the order of a MinHash value picked by the
shingle among eight, then a digest of the set). The rule is whatever the imported
``neardup`` does, so the two are measured by running this script on each code
(``--rule`` only names the result file).

Measured, in memory (connected components): each labelled set's **validation** split, and
the demo corpus's first 2,500 documents (the case of issue 36), with ngram on character
5-grams at Jaccard 0.3 (the noisy profile) and at containment 0.8, and on word 3-grams at
Jaccard 0.5 (the clean profile); each at the default ``max_df`` (1000), where only the
demo's and reuters-news' commonest shingles are over it, and at ``max_df=20``, where most
character 5-grams of a set are, so the chains carry most matches.

Writes experiments/chain_rule/results/<rule>.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

import neardup
from neardup.data import demo_corpus_path
from neardup.eval import evaluate, load_labeled
from neardup.eval.labeled import LabeledCorpus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SETS = ["reuters-news", "reuters-adversarial", "indep-nlpaug", "indep-augly", "indep-noisocr",
        "indep-confusables", "multi-latin", "multi-cyrillic", "multi-greek", "multi-cjk"]
CHAR5 = {"shingle": {"unit": "char", "n": 5}}
SETTINGS = {
    "char-5 jaccard 0.3": {**CHAR5, "threshold": 0.3},
    "char-5 containment 0.8": {**CHAR5, "similarity": "containment", "threshold": 0.8},
    "word-3 jaccard 0.5": {"threshold": 0.5},
}
MAX_DFS = (1000, 20)
DEMO_DOCS = 2500


def demo_corpus() -> LabeledCorpus:
    return load_labeled([demo_corpus_path()]).select(np.arange(DEMO_DOCS))


def arguments(doc: str) -> argparse.Namespace:
    """The options both scripts take (``doc``: the script's docstring)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rule", required=True, help="names the result file")
    parser.add_argument("--data", type=Path, default=ROOT / "data", help="the labelled sets")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    return parser.parse_args()


def corpora(data: Path) -> dict[str, LabeledCorpus]:
    """The demo's first documents, then each labelled set's validation split."""
    found = {"demo (first 2,500)": demo_corpus()}
    for name in SETS:
        found[f"{name} validation"] = load_labeled([data / name / "validation.jsonl.gz"])
    return found


def write_rows(path: Path, module: str, rows: list[dict]) -> None:
    """The rows, the command that made them and the neardup that ran."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "command": f"python -m {module} " + shlex.join(sys.argv[1:]),
        "neardup": str(Path(neardup.__file__).parent), "rows": rows}, indent=1) + "\n")


def main() -> None:
    args = arguments(__doc__)
    rows = []
    for corpus_name, corpus in corpora(args.data).items():
        for label, params in SETTINGS.items():
            for max_df in MAX_DFS:
                start = time.perf_counter()
                report = evaluate(corpus, "ngram", params={**params, "max_df": max_df},
                                  cluster={"algorithm": "components"})
                rows.append({"corpus": corpus_name, "setting": label, "max_df": max_df,
                             "ari": report["ari"], "precision": report["precision"],
                             "recall": report["recall"], "seconds": time.perf_counter() - start})
                print(f"{corpus_name:32s} {label:24s} max_df={max_df:5d} ARI {report['ari']:.4f}",
                      flush=True)
    write_rows(args.out / f"{args.rule}.json", "experiments.chain_rule.measure", rows)


if __name__ == "__main__":
    main()
