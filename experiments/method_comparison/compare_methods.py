"""Compare every method on the standard benchmark: tune on validation, report on test.

For each entry below and each of its clusterings (connected components, Leiden; also
average-linkage HAC for the neural methods, sweeping its distance threshold too), the
threshold (and any other listed parameter) is swept on the validation split only; the best point
by ARI is then run once on the test split. Writes a markdown table and a plot of
validation ARI against threshold per method.

    python -m experiments.method_comparison.compare_methods [--benchmark data/reuters-news] \
        [--out docs/method-comparison.md] [--plot docs/ari-vs-threshold.png] \
        [--time-window HOURS]

``--time-window 48`` runs every clustering with that time window (documents dated further
apart are never merged) and writes docs/method-comparison-window48h.md by default.

Adding a method to the comparison is one line in ENTRIES.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from experiments.method_comparison import anchors
from neardup.eval import evaluate, load_labeled, tune
from neardup.eval.tuning import default_grid

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Entry:
    label: str
    method: str
    params: dict = field(default_factory=dict)
    grid: dict | None = None  # None: the method's default grid
    clusterings: tuple[str, ...] = ("components", "leiden")


ALL_CLUSTERINGS = ("components", "leiden", "hac")
PAPER_MINHASH = {"num_perm": 10, "verify": "none"}
CACHE = "/tmp/neardup-embedding-cache"  # embeddings are reused across grid points and runs
ENTRIES = [
    Entry("exact (normalized hash)", "exact"),
    Entry("ngram: exact word 3-gram Jaccard", "ngram"),
    Entry("ngram: word 3-gram containment", "ngram", {"similarity": "containment"}),
    Entry("minhash: paper settings (10 perms, 3-grams, band collisions)", "minhash", PAPER_MINHASH),
    Entry("minhash: 128 perms, tuned", "minhash"),
    Entry("minhash: char 10-grams, tuned", "minhash", {"shingle": {"unit": "char", "n": 10}}),
    Entry("simhash: word 3-grams", "simhash"),
    Entry("wminhash: paper settings (7-word phrases, ln df, rare 50%)", "wminhash"),
    Entry("wminhash: 3-word phrases, ln df, rare 50%", "wminhash", {"phrase_length": 3}),
    Entry("spotsigs: antecedents is/the/said/was/there", "spotsigs"),
    Entry("sanderson: mutual retrieval (BM25, top-20 terms)", "sanderson"),
    Entry("retsim: near-duplicate embeddings (mean of chunks)", "retsim", {"cache_dir": CACHE},
          clusterings=ALL_CLUSTERINGS),
    Entry("retsim-partial: max cosine over 512-char chunks", "retsim-partial", {"cache_dir": CACHE},
          clusterings=ALL_CLUSTERINGS),
    Entry("biencoder: all-MiniLM-L6-v2 off the shelf", "biencoder", {"cache_dir": CACHE},
          clusterings=ALL_CLUSTERINGS),
    # Fine-tuned models shipped in neardup/models (trained on the train split only).
    Entry("retsim fine-tuned: retsim-news (multi-similarity loss)", "retsim",
          {"model": "retsim-news", "cache_dir": CACHE}, clusterings=ALL_CLUSTERINGS),
    Entry("retsim-partial fine-tuned: retsim-news", "retsim-partial",
          {"model": "retsim-news", "cache_dir": CACHE}),
    Entry("biencoder fine-tuned: biencoder-news (MNRL + hard negatives, int8 ONNX)", "biencoder",
          {"model": "biencoder-news", "cache_dir": CACHE}, clusterings=ALL_CLUSTERINGS,
          # its model card's grid: the fine-tuned cosines of copies sit around 0.6-0.8
          grid={"threshold": [0.6, 0.62, 0.64, 0.66, 0.68, 0.7, 0.72, 0.75, 0.8]}),
    Entry("rerank: minhash candidates + verifier-news", "rerank", {"scorer": "verifier"}),
    Entry("rerank: retsim candidates + cross-encoder-news", "rerank",
          {"scorer": "cross-encoder"}),
    # Loss ablation (Silcock et al. table A1): same base, data, steps and max_tokens; the
    # models come from `neardup train biencoder --loss L --epochs 1 --max-pairs 2000
    # --max-tokens 128 --no-hard-negatives --out out/ablation-biencoder-L` (MNRL: 2
    # epochs; not shipped; the online contrastive one is the first biencoder-news).
    Entry("ablation: biencoder fine-tuned, online contrastive loss", "biencoder",
          {"model": str(ROOT / "out/ablation-biencoder-online-contrastive/onnx"), "cache_dir": CACHE}),
    Entry("ablation: biencoder fine-tuned, MNRL loss", "biencoder",
          {"model": str(ROOT / "out/ablation-biencoder-mnrl/onnx"), "cache_dir": CACHE}),
    Entry("ablation: biencoder fine-tuned, SupCon loss", "biencoder",
          {"model": str(ROOT / "out/ablation-biencoder-supcon/onnx"), "cache_dir": CACHE}),
    Entry("datasketch MinHashLSH (paper anchor: 10 perms, 3-grams)", "datasketch-lsh",
          # datasketch cannot band 10 permutations for thresholds >= 0.9 (b < 2).
          grid={"threshold": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]}),
]
CLUSTERINGS = {
    "components": {"algorithm": "components"},
    "leiden": {"algorithm": "leiden"},
    "hac": {"algorithm": "hac", "linkage": "average"},
}
# HAC also sweeps its distance threshold (merge while average distance 1 - cosine <= d).
# Its candidate pairs come from a low cosine threshold: a pair left out counts as distance
# 1 in the averages, so the graph must hold the weak pairs too (as a dense matrix would).
CLUSTER_GRIDS = {"hac": {"threshold": [0.3, 0.5, 0.7],
                         "cluster.distance_threshold": [0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]}}


def _load(benchmark: Path):
    files = [benchmark / f"{split}.jsonl.gz" for split in ("validation", "test")]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise SystemExit(f"missing benchmark files: {missing}; see data/README.md")
    return load_labeled(files)


def _fmt_params(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "—"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", type=Path, default=ROOT / "data" / "reuters-news")
    parser.add_argument("--out", type=Path, default=None,
                        help="default docs/method-comparison.md (with --time-window H: "
                             "docs/method-comparison-windowHh.md)")
    parser.add_argument("--plot", type=Path, default=None,
                        help="default docs/ari-vs-threshold.png (with --time-window H: "
                             "docs/ari-vs-threshold-windowHh.png)")
    parser.add_argument("--time-window", type=float, default=None, metavar="HOURS",
                        help="cluster every method with this time window (hours)")
    parser.add_argument("--only", nargs="*",
                        help="run only entries whose label contains one of these; rows of the "
                             "other entries are kept from the previous run's JSON")
    args = parser.parse_args()
    suffix = f"-window{args.time_window:g}h" if args.time_window is not None else ""
    args.out = args.out or ROOT / "docs" / f"method-comparison{suffix}.md"
    args.plot = args.plot or ROOT / "docs" / f"ari-vs-threshold{suffix}.png"
    anchors.register()
    corpus = _load(args.benchmark)
    validation, test = corpus.select_split("validation"), corpus.select_split("test")
    rows = []
    for entry in ENTRIES:
        if args.only and not any(o in entry.label for o in args.only):
            continue
        grid = entry.grid if entry.grid is not None else default_grid(entry.method)
        for cname in entry.clusterings:
            cluster = {**CLUSTERINGS[cname], "time_window_hours": args.time_window}
            start = time.perf_counter()
            tuned = tune(corpus, entry.method, split="validation",
                         grid={**grid, **CLUSTER_GRIDS.get(cname, {})},
                         base_params=entry.params, cluster=cluster)
            tune_seconds = time.perf_counter() - start
            report = evaluate(test, entry.method, params=tuned.params, cluster=tuned.cluster)
            chosen = tuned.best["values"]
            rows.append({
                "label": entry.label, "clustering": cname, "chosen": chosen,
                "validation_ari": tuned.best_score, "test": report, "tune_seconds": tune_seconds,
                "points": [[p["values"], p["ari"]] for p in tuned.points],
            })
            print(f"{entry.label:60} {cname:10} val {tuned.best_score:.3f} test "
                  f"{report['ari']:.3f} ({_fmt_params(chosen)})", flush=True)
    if args.only:
        rows = _merge_previous(args.out.with_suffix(".json"), rows)
    _write_table(args, rows, validation, test)
    curves = [(r["label"], r["clustering"], [v for v, _ in r.get("points", [])],
               [a for _, a in r.get("points", [])])
              for r in rows]
    _plot(args.plot, curves)


def _merge_previous(path: Path, new_rows: list[dict]) -> list[dict]:
    """Previous rows, with the re-run entries replaced, in ENTRIES order."""
    previous = json.loads(path.read_text()) if path.exists() else []
    fresh = {(r["label"], r["clustering"]) for r in new_rows}
    merged = [r for r in previous if (r["label"], r["clustering"]) not in fresh] + new_rows
    order = {e.label: i for i, e in enumerate(ENTRIES)}
    return sorted(merged, key=lambda r: (order.get(r["label"], len(order)), r["clustering"]))


def _write_table(args, rows, validation, test) -> None:
    window = args.time_window
    # The command as run; with --only, the other rows come from an earlier run's JSON.
    command = shlex.join([".venv/bin/python", "experiments/method_comparison/compare_methods.py", *sys.argv[1:]])
    lines = [
        "# Method comparison on the standard benchmark"
        + (f", with a {window:g}-hour time window" if window is not None else ""),
        "",
        f"Benchmark: `{args.benchmark.relative_to(ROOT)}` — validation {len(validation):,} "
        f"documents / {len(set(validation.clusters.tolist())):,} true clusters; test "
        f"{len(test):,} documents / {len(set(test.clusters.tolist())):,} true clusters. "
        "Parameters are tuned on validation (max ARI), then run once on test.",
        *([
            "",
            f"Every clustering runs with `time_window_hours={window:g}` (`--time-window "
            f"{window:g}`): documents dated more than {window:g} hours apart are never "
            "merged. The window is fixed, not tuned.",
        ] if window is not None else []),
        "",
        "Regenerate (about 40 minutes on 2 cores with the neural entries; the "
        "`ablation:` entries need the models trained as in docs/benchmarks.md):",
        "",
        f"    make install-test && {command}",
        "",
        "| method | clustering | chosen on validation | validation ARI | test ARI | test precision | test recall | test F1 | test time (s) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        t = r["test"]
        lines.append(
            f"| {r['label']} | {r['clustering']} | {_fmt_params(r['chosen'])} | "
            f"{r['validation_ari']:.3f} | **{t['ari']:.3f}** | {t['precision']:.3f} | "
            f"{t['recall']:.3f} | {t['f1']:.3f} | {t['seconds']:.1f} |"
        )
    lines += ["", f"![validation ARI against threshold]({args.plot.name})", ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    raw = args.out.with_suffix(".json")
    raw.write_text(json.dumps(rows, indent=2, default=str) + "\n")
    print(f"wrote {args.out} and {raw}")


def _plot(path: Path, curves) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(14, 8), gridspec_kw={"width_ratios": [3, 1]})
    labels = list(dict.fromkeys(label for label, *_ in curves))
    colors = {label: plt.cm.tab20(i % 20) for i, label in enumerate(labels)}
    for label, cname, values, aris in curves:
        if not values or "threshold" not in values[0] or cname == "hac":
            continue
        thresholds = [v["threshold"] for v in values]
        ax = axes[1] if label.startswith("simhash") else axes[0]
        ax.plot(thresholds, aris, marker="o", markersize=3, color=colors[label],
                linestyle="-" if cname == "components" else "--",
                label=label if cname == "components" else None)
    axes[0].set_xlabel("similarity threshold (Jaccard, containment, normalized score or cosine)")
    axes[1].set_xlabel("max Hamming distance (bits)")
    for ax in axes:
        ax.set_ylabel("validation ARI")
        ax.grid(alpha=0.3)
    fig.legend(loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.subplots_adjust(bottom=0.3)
    fig.suptitle("ARI on the validation split against the threshold (solid: components, dashed: Leiden)")
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
