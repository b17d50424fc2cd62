"""Markdown tables of the segment-coverage round: ``python -m experiments.ocr_features.segment_tables``.

The baseline refits' numbers are those of the first round (results/*_ocr_features*.json,
bit-identical refits: ``baseline-s0`` was rerun with the segment models and reproduced every
ARI); the variants' come from results/*_segment_features*.json (``segments``, S = 4) and,
when present, results/*_segment6_features*.json (``segments6``, S = 6)."""

import json
import statistics as st
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SEEDS = (0, 1, 2, 3, 4)
LANGS = ("pl", "nl", "de", "cs", "fr", "en")
VARIANTS = {"segments": "segment_features", "segments6": "segment6_features"}


def _load(split: str) -> dict:
    rows: dict = {}
    files = [f"reuters_templates_sets_{split}_ocr_features{s}.json" for s in ("", "_s34")]
    files += [f"reuters_templates_sets_{split}_{tag}.json" for tag in VARIANTS.values()]
    for name in files:
        path = RESULTS / name
        if path.exists():
            for set_name, row in json.loads(path.read_text())["rows"].items():
                rows.setdefault(set_name, {}).update(row)
    return rows


def _variants(row: dict) -> list[str]:
    return [v for v in VARIANTS if all(f"{v}-s{s}" in row for s in SEEDS)]


def _f(x: float) -> str:
    return f"{x:+.3f}"


def split_table(rows: dict) -> str:
    variants = _variants(next(iter(rows.values())))
    head = "| validation split | docs | baseline mean (sd; min-max) | " + " | ".join(
        f"{v} mean | {v} - baseline, s0/s1/s2/s3/s4 | mean | seeds up/down" for v in variants) + " |\n"
    head += "|---|---:|---:|" + "---:|---|---:|---:|" * len(variants) + "\n"
    out = []
    for name, row in sorted(rows.items()):
        base = [row[f"baseline-s{s}"]["ari"] for s in SEEDS]
        cells = [name, str(row["documents"]),
                 f"{st.mean(base):.4f} ({st.stdev(base):.4f}; {min(base):.3f}-{max(base):.3f})"]
        for v in variants:
            var = [row[f"{v}-s{s}"]["ari"] for s in SEEDS]
            d = [a - b for a, b in zip(var, base)]
            cells += [f"{st.mean(var):.4f}", ", ".join(_f(x) for x in d), f"**{_f(st.mean(d))}**",
                      f"{sum(x > 0 for x in d)}/{sum(x < 0 for x in d)}"]
        out.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(out) + "\n"


def language_table(rows: dict, set_name: str) -> str:
    row = rows[set_name]
    langs = list(row["baseline-s0"]["ari_by_language"])
    head = f"| {set_name} | all | " + " | ".join(langs) + " |\n|---|---|" + "---|" * len(langs) + "\n"
    out = []
    for v in ("baseline", *_variants(row)):
        vals = [row[f"{v}-s{s}"] for s in SEEDS]
        out.append(f"| {v} mean | {st.mean(r['ari'] for r in vals):.4f} | " + " | ".join(
            f"{st.mean(r['ari_by_language'][g] for r in vals):.4f}" for g in langs) + " |")
    for v in _variants(row):
        def diffs(key):
            return [key(row[f"{v}-s{s}"]) - key(row[f"baseline-s{s}"]) for s in SEEDS]
        keys = [lambda r: r["ari"]] + [lambda r, g=g: r["ari_by_language"][g] for g in langs]
        out.append(f"| **mean({v} - baseline)** | " + " | ".join(_f(st.mean(diffs(k))) for k in keys) + " |")
        out.append(f"| {v} - baseline per seed | " + " | ".join(
            ", ".join(_f(x) for x in diffs(k)) for k in keys) + " |")
    return head + "\n".join(out) + "\n"


def diagnosis_table() -> str:
    head = ("| model | true pairs missed | of them with a reprint edit | false accepts | "
            "false accepts (update) | " + " | ".join(f"accepted {g}" for g in LANGS)
            + " |\n|---|---:|---:|---:|---:|" + "---:|" * len(LANGS) + "\n")
    out, totals = [], {}
    for v in ("baseline", *VARIANTS):
        for s in SEEDS:
            path = RESULTS / f"rerank-diagnosis-validation-ocr-features-{v}-s{s}.json"
            if not path.exists():
                continue
            d = json.loads(path.read_text())
            fa = sum(d[g]["false_accepts"] for g in LANGS)
            fu = sum(d[g]["false_accepts_update"] for g in LANGS)
            miss = d["verifier_misses"]
            totals.setdefault(v, []).append((miss["pairs"], fa))
            out.append(f"| {v} s{s} | {miss['pairs']} | {miss.get('with_a_reprint_edit', '')} | {fa} | {fu} | "
                       + " | ".join(f"{d[g]['verifier_recall_on_candidates']:.3f}" for g in LANGS) + " |")
    for v, t in totals.items():
        out.append(f"| **{v} mean** | {st.mean(m for m, _ in t):.1f} | | {st.mean(f for _, f in t):.1f} | |"
                   + " |" * len(LANGS))
    return head + "\n".join(out) + "\n"


def main() -> None:
    rows = _load("validation")
    print(split_table(rows))
    for name in ("multi-ocr", "multi-latin", "multi-cjk"):
        print(language_table(rows, name))
    lv = _load("language_validation")
    print(split_table(lv))
    for name in sorted(lv):
        print(language_table(lv, name))
    print(diagnosis_table())


if __name__ == "__main__":
    main()
