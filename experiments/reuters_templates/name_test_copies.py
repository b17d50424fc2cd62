"""The copy side of the template guard's name test, offline: the share of true-copy pairs
(every pair within one labelled cluster) of each labelled set's validation split that
:func:`neardup.methods.template_names.names_disagree` would call templates, for its body
test alone, its defaults and a looser body test. An upper bound on what the test can cost: rerank applies
it only to the pairs its verifier accepts.

Usage::

    python -m experiments.reuters_templates.name_test_copies > results/name_test_copies.txt
"""

from __future__ import annotations

import gzip
import itertools
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from experiments.reuters_templates.reuters_templates import SETS
from neardup.methods.template_names import CASED, names_disagree
from neardup.text import normalize_batch

#: The body test alone (decision 0029's defaults), the defaults (with the opening name
#: test, decision 0036), and 0029's rejected looser body test.
VARIANTS = {"body": {"lead_max_gap": 0}, "defaults": {},
            "loose": {"max_chars": 1000, "min_length_ratio": 0.6, "max_gap": 8, "lead_max_gap": 0}}


def main() -> None:
    root = Path(__file__).resolve().parents[2] / "data"
    print("set, true-copy pairs, " + ", ".join(f"{k} {v}" for k, v in VARIANTS.items()))
    for name in SETS:
        with gzip.open(root / name / "validation.jsonl.gz", "rt") as f:
            rows = [json.loads(line) for line in f]
        members = defaultdict(list)
        for i, r in enumerate(rows):
            members[r["cluster"]].append(i)
        pairs = [p for m in members.values() for p in itertools.combinations(m, 2)]
        left, right = (np.array(side, np.int64) for side in zip(*pairs))
        texts = normalize_batch([r["text"] for r in rows], CASED)
        shares = [names_disagree(texts, left, right, cased=True, **kw).mean()
                  for kw in VARIANTS.values()]
        print(name, len(pairs), " ".join(f"{s:.4f}" for s in shares), flush=True)


if __name__ == "__main__":
    main()
