"""Markdown tables of this experiment's results: ``python -m experiments.ocr_verifier.tables``.

Reads results/reuters_templates_sets_validation_ocr_train{,_seeds,_seeds34,_repeat4}.json (rerank,
its recommended clustering, on every validation split; per language where a set has
several), and the verifier diagnoses on multi-ocr validation."""

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
FILES = ["reuters_templates_sets_validation_ocr_train.json",
         "reuters_templates_sets_validation_ocr_train_seeds.json",
         "reuters_templates_sets_validation_ocr_train_seeds34.json",
         "reuters_templates_sets_validation_ocr_train_repeat4.json"]
#: column label -> variant label in the files
COLUMNS = {"shipped": "shipped", "baseline s0": "baseline", "ocr s0": "ocr",
           "baseline s1": "baseline-s1", "ocr s1": "ocr-s1",
           "baseline s2": "baseline-s2", "ocr s2": "ocr-s2", "baseline s3": "baseline-s3",
           "ocr s3": "ocr-s3", "baseline s4": "baseline-s4", "ocr s4": "ocr-s4",
           "ocr x4 s0": "ocr-repeat4"}
PAIRS = [(f"baseline s{k}", f"ocr s{k}") for k in range(5)]


def load() -> dict:
    rows: dict = {}
    for name in FILES:
        path = RESULTS / name
        if not path.exists():
            continue
        for set_name, row in json.loads(path.read_text())["rows"].items():
            merged = rows.setdefault(set_name, {"documents": row["documents"]})
            merged.update({k: v for k, v in row.items() if isinstance(v, dict) and "ari" in v})
    return rows


def main() -> None:
    rows = load()
    cols = [c for c in COLUMNS if all(COLUMNS[c] in r for r in rows.values())]
    pairs = [p for p in PAIRS if p[0] in cols and p[1] in cols]
    f = lambda x: f"{x:.4f}"  # noqa: E731
    print("| validation split | docs | " + " | ".join(cols) + " | ocr - baseline (per seed) | mean |")
    print("|---|---:|" + "---:|" * len(cols) + "---|---:|")
    for name, row in rows.items():
        d = [row[COLUMNS[b]]["ari"] - row[COLUMNS[a]]["ari"] for a, b in [(p[0], p[1]) for p in pairs]]
        print(f"| {name} | {row['documents']} | " + " | ".join(f(row[COLUMNS[c]]["ari"]) for c in cols)
              + " | " + ", ".join(f"{x:+.3f}" for x in d) + f" | {sum(d) / len(d):+.3f} |")
    for name, row in rows.items():
        if "ari_by_language" not in row[COLUMNS[cols[0]]]:
            continue
        langs = list(row[COLUMNS[cols[0]]]["ari_by_language"])
        print(f"\n| {name} validation | all | " + " | ".join(langs) + " |")
        print("|---|---:|" + "---:|" * len(langs))
        for c in cols:
            r = row[COLUMNS[c]]
            print(f"| {c} | {f(r['ari'])} | " + " | ".join(f(r["ari_by_language"][g]) for g in langs) + " |")
        print(f"| mean(ocr - baseline), {len(pairs)} seeds | "
              + " | ".join(f"{sum(row[COLUMNS[b]][k] - row[COLUMNS[a]][k] for a, b in pairs) / len(pairs):+.3f}"
                           for k in ["ari"]) + " | "
              + " | ".join(f"{sum(row[COLUMNS[b]]['ari_by_language'][g] - row[COLUMNS[a]]['ari_by_language'][g] for a, b in pairs) / len(pairs):+.3f}"
                           for g in langs) + " |")


def diagnoses() -> None:
    """Verifier misses / false accepts on multi-ocr validation per model and seed."""
    print("\n| model | seed | true pairs missed | false accepts | accepted pl | nl | de | cs | fr | en |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in ["baseline", "ocr"]:
        for k in range(5):
            name = f"rerank-diagnosis-validation-ocr-verifier-{m}" + (f"-s{k}" if k else "") + ".json"
            path = RESULTS / name
            if not path.exists():
                continue
            d = json.loads(path.read_text())
            print(f"| {m} | {k} | {d['verifier_misses']['pairs']} | {sum(d['false_accepts_by_kind'].values())} | "
                  + " | ".join(f"{d[g]['verifier_recall_on_candidates']:.3f}" for g in "pl nl de cs fr en".split())
                  + " |")


if __name__ == "__main__":
    main()
    diagnoses()
