"""Real OCR per language: every method's ARI on data/multi-ocr, and why rerank lags.

    python -m experiments.ocr_languages.per_language --split validation [--entries NAME ...]
    python -m experiments.ocr_languages.per_language --split validation --diagnose
    python -m experiments.ocr_languages.per_language --set data/multi-ocr-es-bg --tag=-es-bg ...

Each entry runs once over the whole split (its recommended clustering, as ``neardup
dedup`` would) and is scored overall and per language
(:func:`neardup.eval.metrics.metrics_by_group`: the same clusters restricted to one
language's documents). ``--diagnose`` looks inside rerank at its defaults, per language:
the share of true pairs among its candidates (candidate recall), the verifier's misses
among those candidates (false negatives at its threshold) and its false accepts.

Results: experiments/ocr_languages/results/<split><tag>.json (entries, merged on re-runs) and
results/rerank-diagnosis-<split><tag>.json; give another ``--set`` a ``--tag`` of its own. Read the test split once, after every choice.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from neardup.eval import evaluate, load_labeled
from neardup.profiles import profile_settings

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
#: label -> (method, params). The noisy-profile entries use exactly profile="noisy"'s settings.
ENTRIES = {
    "rerank": ("rerank", {}),
    "minhash": ("minhash", {}),
    "ngram": ("ngram", {}),
    "minhash --profile noisy": ("minhash", profile_settings("noisy", "minhash")),
    "ngram --profile noisy": ("ngram", profile_settings("noisy", "ngram")),
    "retsim": ("retsim", {}),
    "static": ("static", {}),
}


def load_split(set_dir: Path, split: str):
    corpus, languages, _ = load_split_records(set_dir, split)
    return corpus, languages


def load_split_records(set_dir: Path, split: str):
    """The labelled corpus, each document's language and its record (kind, negative_of)."""
    path = set_dir / f"{split}.jsonl.gz"
    corpus = load_labeled(path).select_split(split)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    languages = np.array([r["lang"] for r in records], dtype=object)
    return corpus, languages, records


def run_entries(corpus, languages, names) -> dict:
    out = {}
    for name in names:
        method, params = ENTRIES[name]
        start = time.perf_counter()
        result = evaluate(corpus, method, params=params, groups=languages)
        out[name] = {"method": method, "params": result["params"], "cluster": result["cluster"],
                     "ari": result["ari"], "precision": result["precision"],
                     "recall": result["recall"], "n_pairs": result["n_pairs"],
                     "seconds": round(time.perf_counter() - start, 1),
                     "ari_by_language": {g: m["ari"] for g, m in result["groups"].items()},
                     "by_language": result["groups"]}
        print(f"{name:26s} ARI {result['ari']:.3f}  " + "  ".join(
            f"{g} {m['ari']:.3f}" for g, m in result["groups"].items()), flush=True)
    return out


def noise_hint(corpus, languages) -> dict:
    """Whether the CLI's clean-text hint (``looks_noisy``, which suggests --profile noisy
    to a lexical method at its defaults) fires, per language and overall."""
    from neardup.text.noise_signal import broken_token_share, looks_noisy

    out = {"all": {"broken_token_share": broken_token_share(corpus.texts),
                   "looks_noisy": looks_noisy(corpus.texts)}}
    for lang in sorted(set(languages.tolist())):
        texts = [t for t, g in zip(corpus.texts, languages) if g == lang]
        out[lang] = {"broken_token_share": broken_token_share(texts),
                     "looks_noisy": looks_noisy(texts)}
    return out


_EDITS = ("abridge", "drop_lead", "change_first_line")


def _false_accept_kind(a: dict, b: dict) -> str:
    updates = [r for r in (a, b) if r["kind"] != "reprint"]
    if any(u.get("negative_of") in (a["cluster"], b["cluster"]) for u in updates):
        return "a chunk and its own update"
    if updates:
        return "an update and another chunk of its page (e.g. the one that gave its second half)"
    return "two Reuters stories of one topic" if a["lang"] == "en" else "two chunks of one page"


def diagnose(corpus, languages, params=None, records=None) -> dict:
    """Rerank's candidate recall and verifier errors per language (in memory)."""
    from neardup.eval.evaluate import build_method

    method = build_method("rerank", params or {})
    sketch = method.sketch(corpus.texts)
    scored = method.scored_candidates(sketch)
    left, right, score = scored.left, scored.right, np.asarray(scored.score)
    labels = corpus.clusters
    true_pair = labels[left] == labels[right]
    accepted = score >= method.threshold
    out = {"threshold": method.threshold, "candidates": int(len(left))}
    if records is not None:
        wrong = np.flatnonzero(~true_pair & accepted).tolist()
        missed = np.flatnonzero(true_pair & ~accepted)
        edited = [any(n.split("(")[0] in _EDITS for r in (records[left[k]], records[right[k]])
                      for n in r["noise"]) for k in missed.tolist()]
        out["verifier_misses"] = {
            "pairs": int(missed.size),
            "score_quartiles": np.round(np.quantile(score[missed], [0.25, 0.5, 0.75]), 3).tolist()
            if missed.size else None,
            "with_a_reprint_edit": int(sum(edited))}
        out["false_accepts_by_kind"] = dict(Counter(
            _false_accept_kind(records[left[k]], records[right[k]]) for k in wrong))
    for lang in sorted(set(languages.tolist())):
        docs = np.flatnonzero(languages == lang)
        _, counts = np.unique(labels[docs], return_counts=True)
        positives = int((counts * (counts - 1) // 2).sum())
        mine = (languages[left] == lang) & (languages[right] == lang)
        found = int((mine & true_pair).sum())
        out[lang] = {
            "docs": int(docs.size), "true_pairs": positives, "candidates": int(mine.sum()),
            "true_pairs_in_candidates": found,
            "candidate_recall": found / positives if positives else None,
            "verifier_misses": int((mine & true_pair & ~accepted).sum()),
            "verifier_recall_on_candidates": float((mine & true_pair & accepted).sum() / found)
            if found else None,
            "false_accepts": int((mine & ~true_pair & accepted).sum()),
            "false_accepts_update": int((mine & ~true_pair & accepted & _update_pair(
                labels, left, right)).sum()),
            "cross_language_candidates": int(((languages[left] == lang)
                                              != (languages[right] == lang)).sum()),
        }
    return out


def _update_pair(labels, left, right) -> np.ndarray:
    """Pairs of a chunk and its update (a near-miss negative by construction)."""
    a, b = labels[left].astype(str), labels[right].astype(str)
    return (np.char.add(a, "~update") == b) | (np.char.add(b, "~update") == a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="validation", choices=["validation", "test"])
    parser.add_argument("--set", type=Path, default=ROOT / "data" / "multi-ocr")
    parser.add_argument("--entries", nargs="*", default=list(ENTRIES), choices=list(ENTRIES))
    parser.add_argument("--variant", nargs=3, action="append", default=[],
                        metavar=("LABEL", "METHOD", "PARAMS_JSON"),
                        help="also run METHOD with these parameters, labelled LABEL "
                             "(with --diagnose: rerank's parameters)")
    parser.add_argument("--diagnose", action="store_true")
    parser.add_argument("--tag", default="", help="suffix of the results file (a variant)")
    args = parser.parse_args()
    corpus, languages, records = load_split_records(args.set, args.split)
    for label, method, params in args.variant:
        ENTRIES[label] = (method, json.loads(params))
    if args.diagnose:
        path = RESULTS / f"rerank-diagnosis-{args.split}{args.tag}.json"
        params = json.loads(args.variant[0][2]) if args.variant else {}
        result = diagnose(corpus, languages, params, records)
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
        return
    path = RESULTS / f"{args.split}{args.tag}.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    names = [*args.entries, *(label for label, _, _ in args.variant)]
    kept.update(run_entries(corpus, languages, names))
    kept["noise_hint"] = noise_hint(corpus, languages)
    path.write_text(json.dumps(kept, indent=1) + "\n")


if __name__ == "__main__":
    main()
