"""The study's result table (markdown) from its raw results.

    python -m experiments.verifier_cost.table

Each variant at its maximin threshold (Leiden at resolution 0.4, every validation split
and language), the shipped model at its default 0.9; CPU per document (profiles) and per
pair (``decide_profiles``) from ``cost.py models``, where measured.
"""

from __future__ import annotations

import json
from pathlib import Path

from experiments.verifier_cost.ablate import slug

RESULTS = Path(__file__).resolve().parent / "results"
SETS = ["reuters-news", "reuters-adversarial", "indep-nlpaug", "indep-augly", "indep-noisocr",
        "indep-confusables", "multi-latin", "multi-cyrillic", "multi-greek", "multi-cjk"]
SHIPPED = "shipped verifier-news"


def read(*names: str) -> dict:
    out: dict = {}
    for name in names:
        data = json.loads((RESULTS / f"{name}.json").read_text())
        out.update(data["variants"] if "variants" in data else data["models"])
    return out


def main() -> None:
    variants = read("ablation", "ablation-align-chars")
    reuters = read("cost-models-reuters", "cost-models-reuters-align-chars")
    scale = read("cost-models-scale20k", "cost-models-scale20k-align-chars")

    def cost(table: dict, label: str) -> str:
        key = ("neardup/models/verifier-news" if label == SHIPPED
               else f"/tmp/vc-models/{slug(label)}")
        row = table.get(key)
        return "—" if row is None else (f"{row['profile_ms_per_document']:.3f} + "
                                        f"{row['decide_ms_per_pair']:.3f}")

    short = [s.replace("indep-", "").replace("multi-", "m-").replace("reuters-", "r-") for s in SETS]
    print("| variant | threshold | worst | " + " | ".join(short)
          + " | Reuters: ms a doc + ms a pair | scale 20k: ms a doc + ms a pair |")
    print("|---|" + "---:|" * (len(SETS) + 4))
    for label, row in variants.items():
        leiden = row["leiden"]
        t = 0.9 if label == SHIPPED else leiden["maximin_threshold"]
        scores = leiden["at_default"] if label == SHIPPED else leiden["at_maximin"]
        worst = leiden["worst_at_default"] if label == SHIPPED else leiden["worst_at_maximin"]
        print(f"| {label} | {t} | {worst:.4f} | " + " | ".join(f"{scores[s]:.4f}" for s in SETS)
              + f" | {cost(reuters, label)} | {cost(scale, label)} |")


if __name__ == "__main__":
    main()
