"""How long may two texts be for rerank's template guard to judge them? The guard's length
cap (``max_chars`` of :func:`neardup.methods.pair_types.figures_disagree`), swept:

* ``--sets``: ARI of ``--method rerank`` (guard on) on the validation split of every
  labelled set, per cap (one sketch and one scoring per set, shared by the caps);
* ``--reuters``: the ticker check of ``reuters_templates.py`` on Reuters-21578, per cap.

The cap is not a parameter of rerank, so this study sets the function's default.
``0`` stands for no cap.

    python -m experiments.reuters_templates.guard_length_cap --sets --reuters --caps 147 243 400 0

Raw results: ``experiments/reuters_templates/results/guard_length_cap.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import neardup.methods.pair_types as pair_types
from benchmarks.harness import machine, results_saver
from experiments.reuters_templates import reuters_templates as templates

save = results_saver(Path(__file__).resolve().parent / "results")


def set_cap(cap: int) -> None:
    value = cap or None
    pair_types.figures_disagree.__kwdefaults__["max_chars"] = value
    pair_types.comparable_length_pairs.__kwdefaults__["max_chars"] = value


def labelled_sets(caps: list[int]) -> dict:
    from neardup.eval import load_labeled
    from neardup.eval.evaluate import evaluate

    root = Path(__file__).resolve().parents[2] / "data"
    rows = {}
    for name in templates.SETS:
        corpus = load_labeled([root / name / "validation.jsonl.gz"])
        sketches: dict = {}
        row = {}
        for cap in caps:
            set_cap(cap)
            report = evaluate(corpus, "rerank", params={"template_guard": True},
                              sketch_cache=sketches)
            row[str(cap)] = {"ari": round(report["ari"], 4), "clusters": report["n_pred_clusters"]}
        rows[name] = row
        print(name, row, flush=True)
    return rows


def reuters(caps: list[int]) -> dict:
    records = templates.load_records(None)
    rows = {}
    for cap in caps:
        set_cap(cap)
        labels, cpu = templates.run_one(records, "rerank", {})
        check = templates.check(records, labels)
        rows[str(cap)] = {**{k: v for k, v in check.items() if k != "worst"},
                          "cpu_seconds": round(cpu, 1)}
        print(cap, {k: rows[str(cap)][k] for k in ("largest_clusters", "ticker_mixing_clusters",
                                                   "mixing_beyond_identical_clusters",
                                                   "identical_body_groups_split")}, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caps", nargs="+", type=int, default=[147, 243, 400, 0])
    parser.add_argument("--sets", action="store_true", help="validation splits of the labelled sets")
    parser.add_argument("--reuters", action="store_true", help="the ticker check on Reuters-21578")
    args = parser.parse_args()
    out = {"machine": machine(), "caps": args.caps, "window_hours": templates.WINDOW_HOURS}
    if args.sets:
        out["validation_sets"] = labelled_sets(args.caps)
    if args.reuters:
        out["reuters"] = reuters(args.caps)
    print(f"wrote {save('guard_length_cap', out)}")


if __name__ == "__main__":
    main()
