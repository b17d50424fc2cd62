"""Every method on every evaluation set: default, validation-tuned and leave-one-set-out ARI.

    python -m experiments.method_comparison.compare_transfer [--only LABEL ...] [--sets NAME ...] [--neural]
    python -m experiments.method_comparison.compare_transfer --table-only

For each entry and set, the entry's threshold grid is swept on the set's validation
split, and the same grid points are run on its test split (clustering: connected
components unless the entry names another, no time window). From these curves:

* **default**: the method's default parameters, test ARI;
* **tuned**: the threshold with the best validation ARI of that set, its test ARI;
* **leave-one-set-out**: the threshold with the best *worst-case* validation ARI over the
  other sets (the defaults rule of issue 17, applied without the held-out set), its test
  ARI on the held-out set;
* **worst-case default**: the grid threshold that maximises the worst validation ARI over
  all sets (the candidate default), its test ARI per set.

Test ARIs are only ever looked up at thresholds chosen on validation splits; the test
curve is stored so that the lookups need no re-run. Results go to
experiments/method_comparison/results/transfer.json (resumable: finished (entry, set) cells are kept unless
re-run with --only/--sets) and the tables to docs/transfer.md.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from neardup.eval import evaluate, load_labeled, tune
from neardup.eval.evaluate import build_method
from neardup.eval.tuning import default_grid

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "transfer.json"
DOC = ROOT / "docs" / "transfer.md"
#: Everything in DOC after this line is written by hand and kept on regeneration.
HAND_WRITTEN = "<!-- generated tables end here; the rest is kept by experiments/method_comparison/compare_transfer.py -->"
CACHE = "/tmp/neardup-embedding-cache"

SETS = [
    ("reuters-news", "neardup noise model (standard benchmark)"),
    ("reuters-adversarial", "neardup adversarial noise"),
    ("indep-nlpaug", "nlpaug OCR/keyboard/random-char/spelling"),
    ("indep-augly", "AugLy text"),
    ("indep-noisocr", "noisocr OCR errors + line wrap"),
    ("indep-confusables", "UTS #39 confusables (adversarial)"),
    ("multi-latin", "de/fr/pl/cs man pages"),
    ("multi-cyrillic", "ru man pages"),
    ("multi-greek", "Faker el_GR words"),
    ("multi-cjk", "zh_CN/ja man pages"),
]
THRESHOLDS = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9]


@dataclass(frozen=True)
class Entry:
    label: str
    method: str
    params: dict = field(default_factory=dict)
    grid: dict | None = None  # None: the method's default grid
    neural: bool = False
    run: bool = True  # False: results kept from an earlier code version, not re-run
    cluster: dict | None = None  # ClusterConfig fields; None: its defaults ("auto")


CHAR5 = {"shingle": {"unit": "char", "n": 5}}
ENTRIES = [
    Entry("exact", "exact", grid={}),
    Entry("ngram", "ngram", grid={"threshold": THRESHOLDS}),
    Entry("ngram char-5", "ngram", CHAR5, grid={"threshold": THRESHOLDS}),
    Entry("minhash", "minhash", grid={"threshold": THRESHOLDS}),
    Entry("minhash char-5", "minhash", CHAR5, grid={"threshold": THRESHOLDS}),
    Entry("simhash", "simhash", grid={"threshold": list(range(0, 21, 2))}),
    Entry("wminhash", "wminhash", grid={"threshold": THRESHOLDS}),
    Entry("spotsigs", "spotsigs", grid={"threshold": [0.05, *THRESHOLDS]}),
    Entry("sanderson", "sanderson", grid={"threshold": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]}),
    Entry("retsim (off-the-shelf)", "retsim", {"cache_dir": CACHE}, neural=True),
    Entry("retsim (retsim-news)", "retsim", {"model": "retsim-news", "cache_dir": CACHE},
          neural=True),
    Entry("retsim-partial (retsim-news)", "retsim-partial",
          {"model": "retsim-news", "cache_dir": CACHE}, neural=True),
    Entry("biencoder (biencoder-news)", "biencoder", {"model": "biencoder-news", "cache_dir": CACHE},
          # Up to 0.99: on scripts its English WordPiece vocabulary barely covers, every
          # document sits at cosine >= 0.9 to every other (multi-greek), so the sweep must
          # reach the fine-tuned copies' 0.95-0.99 (see DEFAULT_GRIDS["biencoder"]).
          grid={"threshold": [0.5, 0.6, 0.62, 0.64, 0.66, 0.68, 0.7, 0.72, 0.75, 0.8, 0.85, 0.9,
                              0.92, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99]},
          neural=True),
    # Connected components, rerank's default clustering until "auto" (the row below).
    Entry("rerank (verifier)", "rerank", neural=True, cluster={"algorithm": "components"}),
    # The verifier model's recommended clustering (model.json recommended_cluster, chosen
    # on validation splits by experiments/verifier_transfer/verifier_clustering.py).
    Entry("rerank (verifier), Leiden 0.4", "rerank", neural=True,
          cluster={"algorithm": "leiden", "resolution": 0.4}),
    # The verifier before its mixture retraining (issue 17), over word-3-gram MinHash
    # candidates: kept for comparison (experiments/verifier_transfer/verifier_transfer.py has both).
    Entry("rerank (previous verifier, word candidates)", "rerank", neural=True, run=False),
]


def _key(values: dict) -> str:
    return json.dumps(values, sort_keys=True)


_MISSING = object()


def run_cell(entry: Entry, name: str) -> dict:
    """Sweep the grid on validation (tune) and the same points on test."""
    corpus = load_labeled([ROOT / "data" / name / f"{s}.jsonl.gz"
                           for s in ("validation", "test")])
    grid = entry.grid if entry.grid is not None else default_grid(entry.method)
    start, cpu_start = time.perf_counter(), time.process_time()
    tuned = tune(corpus, entry.method, split="validation", grid=grid, base_params=entry.params,
                 cluster=entry.cluster)
    test = corpus.select_split("test")
    validation = corpus.select_split("validation")
    del corpus
    sketches: dict = {}
    test_points = []
    for point in tuned.points:
        params = {**entry.params, **point["values"]}
        report = evaluate(test, entry.method, params=params, cluster=entry.cluster,
                          sketch_cache=sketches)
        test_points.append({"values": point["values"], "ari": report["ari"],
                            "precision": report["precision"], "recall": report["recall"]})
    default_params = build_method(entry.method, entry.params).get_params()
    # The default is usually a grid point: its validation ARI is then read from the sweep
    # instead of re-running the method (a neural scorer would score every pair again).
    swept = [p for p in tuned.points
             if all(default_params.get(k, _MISSING) == v for k, v in p["values"].items())]
    val_default = swept[0] if swept else evaluate(validation, entry.method,
                                                  params=entry.params, cluster=entry.cluster)
    test_default = evaluate(test, entry.method, params=entry.params, cluster=entry.cluster,
                            sketch_cache=sketches)
    return {
        "label": entry.label, "set": name, "method": entry.method, "params": entry.params,
        "cluster": entry.cluster,
        "default_threshold": default_params.get("threshold"),
        "validation": [{"values": p["values"], "ari": p["ari"], "precision": p["precision"],
                        "recall": p["recall"]} for p in tuned.points],
        "test": test_points,
        "default": {"validation_ari": val_default["ari"], "test_ari": test_default["ari"],
                    "test_precision": test_default["precision"],
                    "test_recall": test_default["recall"]},
        "tuned": {"values": tuned.best["values"], "validation_ari": tuned.best_score,
                  "test_ari": test_points[tuned.best_index]["ari"]},
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu_start,
    }


def _curve(cell: dict, split: str) -> dict[str, float]:
    return {_key(p["values"]): p["ari"] for p in cell[split]}


def maximin(cells: list[dict]) -> tuple[str | None, float]:
    """Grid point with the best worst-case validation ARI over ``cells``; ties (e.g. a set
    no threshold helps) broken by the next-worst ARI and so on (leximin), then grid order."""
    if not cells:
        return None, math.nan
    curves = [_curve(c, "validation") for c in cells]
    best, best_scores = None, None
    for key in curves[0]:
        scores = sorted(curve.get(key, -math.inf) for curve in curves)
        if best_scores is None or scores > best_scores:
            best, best_scores = key, scores
    return best, best_scores[0]


def analyse(results: dict) -> dict:
    """Leave-one-set-out and worst-case-default figures per entry."""
    out = {}
    for label in dict.fromkeys(c["label"] for c in results.values()):
        cells = {c["set"]: c for c in results.values() if c["label"] == label}
        if not cells or not next(iter(cells.values()))["validation"][0]["values"]:
            out[label] = {"logo": {}, "maximin": None}
            continue
        logo = {}
        for name, cell in cells.items():
            key, _ = maximin([c for s, c in cells.items() if s != name])
            if key is None:  # no other set run for this entry
                continue
            logo[name] = {"values": json.loads(key), "test_ari": _curve(cell, "test")[key]}
        key, worst = maximin(list(cells.values()))
        out[label] = {
            "logo": logo,
            "maximin": {"values": json.loads(key), "worst_validation_ari": worst,
                        "test_ari": {s: _curve(c, "test")[key] for s, c in cells.items()},
                        "validation_ari": {s: _curve(c, "validation")[key]
                                           for s, c in cells.items()}},
        }
    return out


def _fmt(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _values(values: dict) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values.values()) or "—"


def write_doc(results: dict, analysis: dict, command: str) -> None:
    names = [n for n, _ in SETS if any(c["set"] == n for c in results.values())]
    labels = [e.label for e in ENTRIES if any(c["label"] == e.label for c in results.values())]
    head = "| method | " + " | ".join(names) + " |"
    rule = "|---|" + "---:|" * len(names)

    def table(title: str, cell_text) -> list[str]:
        lines = [f"### {title}", "", head, rule]
        for label in labels:
            row = []
            for name in names:
                cell = results.get(f"{label}|{name}")
                row.append(cell_text(label, name, cell) if cell else "")
            lines.append(f"| {label} | " + " | ".join(row) + " |")
        return lines + [""]

    lines = [
        "# Accuracy that transfers: every method on every set",
        "",
        "Generated by `experiments/method_comparison/compare_transfer.py` (raw results: `experiments/method_comparison/results/transfer.json`).",
        "Test ARI, connected components (unless the row names another clustering), no time window. Sets: see data/README.md.",
        "An empty cell was not run (see docs/benchmarks.md, \"Accuracy on independent sets\", "
        "for what is missing); the leave-one-set-out and worst-case rows use the sets run "
        "for that method.",
        "",
        "    " + command,
        "",
        "| set | noise / source |",
        "|---|---|",
        *[f"| {n} | {d} |" for n, d in SETS if n in names],
        "",
        *table("Default parameters (test ARI)",
               lambda l, n, c: f"{_fmt(c['default']['test_ari'])}"),
        *table("Tuned on the set's own validation split (test ARI; threshold)",
               lambda l, n, c: f"{_fmt(c['tuned']['test_ari'])} ({_values(c['tuned']['values'])})"),
        *table("Leave-one-set-out: threshold maximising the worst validation ARI of the other "
               "sets (test ARI on the held-out set; threshold)",
               lambda l, n, c: (f"{_fmt(analysis[l]['logo'][n]['test_ari'])} "
                                f"({_values(analysis[l]['logo'][n]['values'])})")
               if analysis.get(l, {}).get("logo", {}).get(n) else ""),
        *table("Default minus tuned (test ARI; target: >= -0.03)",
               lambda l, n, c: f"{c['default']['test_ari'] - c['tuned']['test_ari']:+.3f}"),
        "### Worst-case (maximin) threshold over all validation splits",
        "",
        "| method | current default | maximin threshold | worst validation ARI | "
        "worst test ARI | sets where maximin test ARI is > 0.03 below tuned |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for label in labels:
        a = analysis.get(label, {}).get("maximin")
        cells = {c["set"]: c for c in results.values() if c["label"] == label}
        if not a:
            continue
        current = next(iter(cells.values()))["default_threshold"]
        gaps = [f"{n} ({a['test_ari'][n] - cells[n]['tuned']['test_ari']:+.3f})"
                for n in names if n in cells
                and a["test_ari"][n] < cells[n]["tuned"]["test_ari"] - 0.03]
        lines.append(f"| {label} | {current} | {_values(a['values'])} | "
                     f"{_fmt(a['worst_validation_ari'])} | {_fmt(min(a['test_ari'].values()))} | "
                     f"{', '.join(gaps) or 'none'} |")
    lines.append("")
    off, tuned = "retsim (off-the-shelf)", "retsim (retsim-news)"
    both = [n for n in names if f"{off}|{n}" in results and f"{tuned}|{n}" in results]
    if both:
        lines += ["### RETSim: fine-tuned retsim-news minus off-the-shelf (test ARI)", "",
                  "| | " + " | ".join(both) + " |", "|---|" + "---:|" * len(both)]
        for what, key in (("tuned on the set's validation split", "tuned"),
                          ("default threshold", "default")):
            lines.append(f"| {what} | " + " | ".join(
                f"{results[f'{tuned}|{n}'][key]['test_ari'] - results[f'{off}|{n}'][key]['test_ari']:+.3f}"
                for n in both) + " |")
        lines.append("")
    timed = [label for label in labels
             if any(results.get(f"{label}|{n}", {}).get("cpu_seconds") for n in names)]
    if timed:
        lines += ["### Cost per cell (CPU seconds: validation sweep, test sweep and defaults; "
                  "blank: not recorded)", "", head, rule]
        for label in timed:
            row = [f"{results[f'{label}|{n}']['cpu_seconds']:.0f}"
                   if results.get(f"{label}|{n}", {}).get("cpu_seconds") else "" for n in names]
            lines.append(f"| {label} | " + " | ".join(row) + " |")
        lines.append("")
    kept = DOC.read_text().split(HAND_WRITTEN, 1)[1] if DOC.exists() and HAND_WRITTEN in \
        DOC.read_text() else "\n"
    DOC.write_text("\n".join(lines) + HAND_WRITTEN + kept)
    print(f"wrote {DOC}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="entry labels to (re-)run")
    parser.add_argument("--sets", nargs="*", help="set names to (re-)run")
    parser.add_argument("--neural", action="store_true", help="also run the neural entries")
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--merge", nargs="*", type=Path, default=[],
                        help="also take the cells of these result files (parallel runs)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    for path in args.merge:
        results.update(json.loads(path.read_text()))
    if not args.table_only:
        for entry in ENTRIES:
            if (entry.neural and not args.neural) or not entry.run:
                continue
            if args.only and entry.label not in args.only:
                continue
            for name, _ in SETS:
                if args.sets and name not in args.sets:
                    continue
                key = f"{entry.label}|{name}"
                if key in results and not (args.only or args.sets):
                    continue
                cell = run_cell(entry, name)
                results[key] = cell
                args.results.write_text(json.dumps(results, indent=1, default=str) + "\n")
                print(f"{entry.label:28} {name:22} default {cell['default']['test_ari']:.3f} "
                      f"tuned {cell['tuned']['test_ari']:.3f} ({_values(cell['tuned']['values'])}) "
                      f"{cell['seconds']:.0f} s", flush=True)
    if args.merge:
        args.results.write_text(json.dumps(results, indent=1, default=str) + "\n")
    analysis = analyse(results)
    args.results.with_name("transfer_analysis.json").write_text(
        json.dumps(analysis, indent=1, default=str) + "\n")
    if args.results.resolve() != RESULTS.resolve():
        # A partial run (one set or entry in its own file): its tables would replace the
        # document's full ones, so they are left for the merge (--table-only --merge FILE).
        print(f"{DOC} not written: {args.results} is not {RESULTS}; merge it with --table-only --merge")
        return
    command = shlex.join(["python", "experiments/method_comparison/compare_transfer.py", *sys.argv[1:]])
    write_doc(results, analysis, command)


if __name__ == "__main__":
    main()
