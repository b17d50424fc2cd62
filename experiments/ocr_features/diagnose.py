"""Which pair features are low for the true copies the shipped verifier rejects on
multi-ocr *validation* (never test), and what the texts show.

    python -m experiments.ocr_features.diagnose [--model DIR] [--examples N]

Runs rerank (shipped defaults, or ``--model``) over data/multi-ocr/validation, takes its
scored candidates, and splits them into true pairs accepted (TP), true pairs rejected
(FN: the misses), and false pairs (rejected / accepted). For each group it prints the
median of every lexical feature (:data:`LEXICAL_FEATURES`, plus the OCR-folded ones if
present), computed on the raw texts and on diacritic-folded texts, and a few aligned
snippets of the misses (normalized text), with the words that differ. Results:
results/diagnose-validation.json.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections import Counter
from pathlib import Path

import numpy as np

from experiments.ocr_languages.per_language import _EDITS, load_split_records
from neardup.eval.evaluate import build_method
from neardup.methods.pair_features import LEXICAL_FEATURES, pair_features
from neardup.text import NormalizeConfig, normalize_batch

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--examples", type=int, default=6)
    parser.add_argument("--out", type=Path, default=RESULTS / "diagnose-validation.json")
    args = parser.parse_args()
    corpus, languages, records = load_split_records(ROOT / "data" / "multi-ocr", "validation")
    params = {"model": args.model} if args.model else {}
    method = build_method("rerank", params)
    scored = method.scored_candidates(method.sketch(corpus.texts))
    left, right, score = scored.left, scored.right, np.asarray(scored.score)
    labels = corpus.clusters
    true = labels[left] == labels[right]
    acc = score >= method.threshold
    groups = {"TP": true & acc, "FN": true & ~acc, "FP": ~true & acc, "TN": ~true & ~acc}
    feats = [f for f in LEXICAL_FEATURES]
    try:
        from neardup.methods.pair_features import OCR_FEATURES
        feats += list(OCR_FEATURES)
    except ImportError:
        pass
    x = pair_features(corpus.texts, left, right, dates=corpus.dates, features=feats, threads=1)
    xf = pair_features(corpus.texts, left, right, dates=corpus.dates, features=feats, threads=1,
                       fold_diacritics=True)
    out: dict = {"threshold": method.threshold, "groups": {k: int(v.sum()) for k, v in groups.items()},
                 "median": {}, "median_folded": {}}
    for k, m in groups.items():
        out["median"][k] = {f: round(float(np.median(x[m, j])), 3) for j, f in enumerate(feats)} if m.any() else {}
        out["median_folded"][k] = {f: round(float(np.median(xf[m, j])), 3) for j, f in enumerate(feats)} if m.any() else {}
    print(json.dumps(out["groups"]))
    print(f"{'feature':24s}" + "".join(f"{k:>8s}" for k in groups) + "   FN(folded)")
    for j, f in enumerate(feats):
        print(f"{f:24s}" + "".join(f"{out['median'][k].get(f, float('nan')):8.3f}" for k in groups)
              + f"   {out['median_folded']['FN'].get(f, float('nan')):8.3f}")
    fn = np.flatnonzero(groups["FN"])
    miss = []
    norm = normalize_batch(list(corpus.texts), NormalizeConfig())
    subs: Counter = Counter()
    for k in fn.tolist():
        a, b = int(left[k]), int(right[k])
        ra, rb = records[a], records[b]
        ta, tb = norm[a], norm[b]
        sm = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "replace" and (i2 - i1) <= 3 and (j2 - j1) <= 3:
                subs[f"{ta[i1:i2]}->{tb[j1:j2]}"] += 1
        miss.append({"lang": ra["lang"], "score": round(float(score[k]), 3),
                     "noise_a": ra["noise"], "noise_b": rb["noise"],
                     "edited": any(n.split("(")[0] in _EDITS for r in (ra, rb) for n in r["noise"]),
                     "len_a": len(ta), "len_b": len(tb),
                     **{f: round(float(x[k, j]), 3) for j, f in enumerate(feats)
                        if f in ("char4_containment", "char8_containment", "word1_containment",
                                 "word3_containment", "nospace5_containment", "align_partial",
                                 "align_ratio", "length_ratio")},
                     "char4_containment_folded": round(float(xf[k, feats.index("char4_containment")]), 3)})
    out["misses"] = miss
    out["small_substitutions_in_misses"] = subs.most_common(60)
    out["misses_by_language"] = dict(Counter(m["lang"] for m in miss))
    out["misses_edited"] = sum(m["edited"] for m in miss)
    print("misses by language", out["misses_by_language"], "with a reprint edit", out["misses_edited"])
    print("noise kinds in misses", Counter(n.split("(")[0] for m in miss for n in m["noise_a"] + m["noise_b"]).most_common(20))
    print("most common small substitutions (a->b):", subs.most_common(60))
    for m, k in list(zip(miss, fn.tolist()))[: args.examples]:
        a, b = int(left[k]), int(right[k])
        print("----", {kk: m[kk] for kk in ("lang", "score", "noise_a", "noise_b", "len_a", "len_b",
                                            "char4_containment", "align_partial")})
        print("A:", norm[a][:400])
        print("B:", norm[b][:400])
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
