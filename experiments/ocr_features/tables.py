"""Markdown tables of this experiment: ``python -m experiments.ocr_features.tables``.

Reads results/reuters_templates_sets_validation_ocr_features.json (rerank end to end, its
recommended clustering, every validation split, per language where a set has several),
results/reuters_templates_sets_language_validation_ocr_features.json if present,
results/validation-ocr-features.json (per_language on multi-ocr validation) and the
rerank diagnoses results/rerank-diagnosis-validation-ocr-features-*.json."""

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SEEDS = (0, 1, 2, 3, 4)
VARIANTS = ("ocr", "fold-nospace")
LANGS = ("pl", "nl", "de", "cs", "fr", "en")


def _rows(name: str) -> dict:
    """Rows of results/NAME.json and NAME_s34.json (seeds 3 and 4), merged per set."""
    rows: dict = {}
    for suffix in ("", "_s34"):
        path = RESULTS / f"{name}{suffix}.json"
        if path.exists():
            for set_name, row in json.loads(path.read_text())["rows"].items():
                rows.setdefault(set_name, {}).update(row)
    return rows


def _seeds(row: dict) -> list[int]:
    return [s for s in SEEDS if f"baseline-s{s}" in row and all(f"{v}-s{s}" in row for v in VARIANTS)]


def _f(x: float) -> str:
    return f"{x:+.3f}"


def split_table(rows: dict) -> str:
    seeds = _seeds(next(iter(rows.values())))
    tag = "/".join(f"s{s}" for s in seeds)
    head = ("| validation split | docs | baseline mean (min-max) | " + " | ".join(
                f"{v} mean | {v} - baseline, {tag} | mean" for v in VARIANTS) + " |\n")
    head += "|---|---:|---:|" + "---:|---|---:|" * len(VARIANTS) + "\n"
    out = []
    for name, row in sorted(rows.items()):
        base = [row[f"baseline-s{s}"]["ari"] for s in seeds]
        k = len(seeds)
        cells = [name, str(row["documents"]), f"{sum(base) / k:.4f} ({min(base):.3f}-{max(base):.3f})"]
        for v in VARIANTS:
            var = [row[f"{v}-s{s}"]["ari"] for s in seeds]
            diff = [a - b for a, b in zip(var, base)]
            cells += [f"{sum(var) / k:.4f}", ", ".join(_f(d) for d in diff), f"**{_f(sum(diff) / k)}**"]
        out.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(out) + "\n"


def language_table(rows: dict, set_name: str) -> str:
    row = rows[set_name]
    langs = list(row["baseline-s0"]["ari_by_language"])
    head = f"| {set_name} | all | " + " | ".join(langs) + " |\n|---|---:|" + "---:|" * len(langs) + "\n"
    out = []
    seeds = _seeds(row)
    k = len(seeds)
    for v in ("baseline", *VARIANTS):
        for s in seeds:
            r = row[f"{v}-s{s}"]
            out.append(f"| {v} s{s} | {r['ari']:.4f} | " + " | ".join(
                f"{r['ari_by_language'][g]:.4f}" for g in langs) + " |")
    for v in VARIANTS:
        def mean_diff(key):
            return sum(key(row[f"{v}-s{s}"]) - key(row[f"baseline-s{s}"]) for s in seeds) / k
        out.append(f"| **mean({v} - baseline)** | {_f(mean_diff(lambda r: r['ari']))} | " + " | ".join(
            _f(mean_diff(lambda r, g=g: r["ari_by_language"][g])) for g in langs) + " |")
        out.append(f"| {v} - baseline per seed | " + ", ".join(
            _f(row[f"{v}-s{s}"]["ari"] - row[f"baseline-s{s}"]["ari"]) for s in seeds) + " | " + " | ".join(
            ", ".join(_f(row[f"{v}-s{s}"]["ari_by_language"][g] - row[f"baseline-s{s}"]["ari_by_language"][g])
                      for s in seeds) for g in langs) + " |")
    return head + "\n".join(out) + "\n"


def diagnosis_table() -> str:
    head = ("| model | true pairs missed | false accepts | " + " | ".join(f"accepted {g}" for g in LANGS)
            + " |\n|---|---:|---:|" + "---:|" * len(LANGS) + "\n")
    out = []
    for v in ("baseline", *VARIANTS):
        for s in SEEDS:
            path = RESULTS / f"rerank-diagnosis-validation-ocr-features-{v}-s{s}.json"
            if not path.exists():
                continue
            d = json.loads(path.read_text())
            fa = sum(d[g]["false_accepts"] for g in LANGS)
            out.append(f"| {v} s{s} | {d['verifier_misses']['pairs']} | {fa} | " + " | ".join(
                f"{d[g]['verifier_recall_on_candidates']:.3f}" for g in LANGS) + " |")
    return head + "\n".join(out) + "\n"


def main() -> None:
    rows = _rows("reuters_templates_sets_validation_ocr_features")
    print(split_table(rows))
    for name in ("multi-ocr", "multi-latin", "multi-cjk"):
        if name in rows and "ari_by_language" in rows[name]["baseline-s0"]:
            print(language_table(rows, name))
    lv = _rows("reuters_templates_sets_language_validation_ocr_features")
    if lv:
        print(split_table(lv))
        for name in lv:
            print(language_table(lv, name))
    print(diagnosis_table())


if __name__ == "__main__":
    main()
