"""Regenerate every results table in README.md and docs/*.md from the raw result files.

    python scripts/docs_tables.py          # rewrite the tables in place
    python scripts/docs_tables.py --check  # exit 1, naming each table, if a doc differs

A table lives between two marker comments in a Markdown file::

    <!-- BEGIN table:NAME -->
    ...generated, do not edit...
    <!-- END table:NAME -->

Each NAME has one renderer below, which reads only the result files named in SOURCES
(the one place that says where raw results live: remap a path there when result files
move) and ends its table with the files it read and the commands that rewrite them.
A marker pair whose NAME has no renderer is an error, and so is a renderer whose source
file is missing: a published figure always comes from a file in the repository.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Source:
    """A raw result file and the command that rewrites it (run from the repository root)."""

    path: str
    command: str


# Every raw result file a table reads, by name. Paths are relative to the repository root.
# This is the only place that names them: when result files move, remap them here.
SOURCES: dict[str, Source] = {
    "transfer": Source(
        "experiments/method_comparison/results/transfer.json",
        "python experiments/method_comparison/compare_transfer.py --neural  (lexical only without --neural)",
    ),
    "comparison": Source("docs/method-comparison.json", "python experiments/method_comparison/compare_methods.py"),
    "comparison-window48h": Source(
        "docs/method-comparison-window48h.json",
        "python experiments/method_comparison/compare_methods.py --time-window 48",
    ),
    "scale-100k": Source(
        "benchmarks/results/archive/scale-100k.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods minhash exact simhash --peers rensa datasketch --name scale-100k",
    ),
    "scale-100k-datatrove": Source(
        "benchmarks/results/archive/scale-100k-datatrove.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods minhash --datatrove-python DT_VENV/bin/python --name scale-100k-datatrove",
    ),
    "scale-100k-ngram": Source(
        "benchmarks/results/archive/scale-100k-ngram-prefix.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods ngram --name scale-100k-ngram-prefix",
    ),
    "scale-100k-stats": Source(
        "benchmarks/results/archive/scale-100k-stats-keyed.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/100k --methods wminhash sanderson --name scale-100k-stats-keyed",
    ),
    "scale-100k-rerank": Source(
        "benchmarks/results/rerank/scale-100k-rerank.json",
        "python -m benchmarks one scale --corpus /tmp/neardup-scale/100k --methods rerank --extra --cluster auto (its default clustering, Leiden 0.4; copied from benchmarks/results/adhoc/scale.json)",
    ),
    "scale-1M": Source(
        "benchmarks/results/archive/scale-1M-minhash-pread.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods minhash --name scale-1M-minhash-pread",
    ),
    "scale-1M-exact-simhash": Source(
        "benchmarks/results/archive/scale-1M-v2.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods minhash exact simhash --name scale-1M-v2",
    ),
    "scale-1M-ngram": Source(
        "benchmarks/results/archive/scale-1M-ngram.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods ngram --name scale-1M-ngram",
    ),
    "scale-1M-wminhash": Source(
        "benchmarks/results/archive/scale-1M-wminhash-keyed.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods wminhash --name scale-1M-wminhash-keyed",
    ),
    "scale-1M-rerank": Source(
        "benchmarks/results/archive/scale-1M-rerank-final.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/1M --methods rerank --name scale-1M-rerank-final",
    ),
    "scale-10M": Source(
        "benchmarks/results/archive/scale-10M-pread.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/10M --methods minhash --name scale-10M-pread",
    ),
    "scale-10M-exact-simhash": Source(
        "benchmarks/results/archive/scale-10M-exact-simhash.json",
        "python benchmarks/scale.py --corpus /tmp/neardup-scale/10M --methods exact simhash --name scale-10M-exact-simhash",
    ),
    "neural-20k": Source(
        "benchmarks/results/archive/neural_dedup.json",
        "python benchmarks/neural_dedup.py --docs 20000 --only minhash retsim-news biencoder-news rerank-verifier",
    ),
    "minhash-signatures": Source(
        "benchmarks/results/archive/minhash_signatures.json",
        "cd bench && python bench_minhash_signatures.py --docs 5000 --repeat 3",
    ),
    "embedders": Source(
        "benchmarks/results/archive/embedders-shipped.json",
        "python benchmarks/embedders.py --docs 2000 --encoders retsim biencoder --model biencoder-news --name embedders-shipped",
    ),
    "ray-1M": Source(
        "benchmarks/results/archive/ray-1M-final-quiet.json",
        "python benchmarks/ray_engine.py --corpus /tmp/neardup-scale/1M --configs local ray1 ray2 --name ray-1M-final-quiet",
    ),
    "ray-1M-2": Source(
        "benchmarks/results/archive/ray-1M-final-quiet2.json",
        "python benchmarks/ray_engine.py --corpus /tmp/neardup-scale/1M --configs local ray1 ray2 --name ray-1M-final-quiet2",
    ),
    "index-10M": Source(
        "benchmarks/results/archive/index_10M_bulk_shipped.json",
        "python benchmarks/index.py --corpus /tmp/neardup-scale/10M --docs 10000000 --add-docs 100000 --bulk --out benchmarks/results/archive/index_10M_bulk_shipped.json",
    ),
    "report-1M": Source("benchmarks/results/archive/report_1m.json", "cd bench && python bench_report.py --docs 1000000"),
    "calibrate-labels": Source(
        "experiments/calibrate_labels/results/calibrate_labels.json",
        "python experiments/calibrate_labels/calibrate_labels.py --methods minhash ngram",
    ),
    "calibrate-labels-adversarial": Source(
        "experiments/calibrate_labels/results/calibrate_labels_adversarial.json",
        "python experiments/calibrate_labels/calibrate_labels.py --methods minhash ngram --sets reuters-adversarial --out experiments/calibrate_labels/results/calibrate_labels_adversarial.json",
    ),
    "noisy-profile": Source(
        "experiments/noisy_profile/results/profile_accuracy.json",
        "python -m experiments.noisy_profile.profile_accuracy",
    ),
    "noise-signal-test": Source(
        "experiments/noisy_profile/results/signal-test.json",
        "python -m experiments.noisy_profile.signal --split test",
    ),
    "noisy-profile-cost-100k": Source(
        "experiments/noisy_profile/results/cost-100k.json",
        "python -m experiments.noisy_profile.cost --corpus /tmp/neardup-scale/100k --methods minhash",
    ),
    "noisy-profile-cost-20k": Source(
        "experiments/noisy_profile/results/cost-20k.json",
        "python -m experiments.noisy_profile.cost --corpus /tmp/neardup-scale/20k",
    ),
    "demo-accuracy": Source(
        "experiments/demo_accuracy/results/demo_accuracy.json",
        "python -m experiments.demo_accuracy.run",
    ),
    # --- rerank's cost per document (docs/rerank-cost.md) ---
    # A rerank_cost.py compare file: results -> data -> cpu_s -> label -> [seconds].
    "rerank-compare": Source(
        "benchmarks/results/rerank/s49-final-compare.json",
        "python benchmarks/rerank_cost.py compare --warmup --data reuters --data scale:/tmp/neardup-scale/20k --data scale:/tmp/neardup-scale/100k --env-variant 'spin:OMP_WAIT_POLICY=ACTIVE' --name s49-final-compare",
    ),
    # A rerank_cost.py profile file: results -> data -> sections_cpu_s.
    "rerank-profile": Source(
        "benchmarks/results/rerank/s49-profile-reuters-trees.json",
        "python benchmarks/rerank_cost.py profile --data reuters --name s49-profile-reuters-trees",
    ),
    "rerank-every-candidate": Source(
        "benchmarks/results/rerank/final-compare.json",
        "python benchmarks/rerank_cost.py compare --warmup --data reuters --data scale:/tmp/neardup-scale/20k --data scale:/tmp/neardup-scale/100k --rerank-variant 'all:low_partners=null' --name final-compare",
    ),
    "rerank-every-candidate-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_validation_screen.json",
        "python -m experiments.reuters_templates.reuters_templates --sets validation --variant 'default:' --variant 'all:low_partners=null' --suffix screen",
    ),
    "rerank-every-candidate-language-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_language_validation_screen.json",
        "python -m experiments.reuters_templates.reuters_templates --sets language_validation --variant 'default:' --variant 'all:low_partners=null' --suffix screen",
    ),
    "rerank-accept-20k": Source(
        "benchmarks/results/rerank/accept-estimate-0.8-scale20k.json",
        "python benchmarks/rerank_cost.py compare --data scale:/tmp/neardup-scale/20k --rerank-param accept_estimate=0.8 --name accept-estimate-0.8-scale20k",
    ),
    "rerank-accept-100k": Source(
        "benchmarks/results/rerank/accept-estimate-0.8-scale100k.json",
        "python benchmarks/rerank_cost.py compare --data scale:/tmp/neardup-scale/100k --rerank-param accept_estimate=0.8 --name accept-estimate-0.8-scale100k",
    ),
    "rerank-accept-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_validation_accept.json",
        "python -m experiments.reuters_templates.reuters_templates --sets validation --variant 'default:' --variant 'accept0.8:accept_estimate=0.8' --suffix accept",
    ),
    "rerank-accept-language-validation": Source(
        "experiments/reuters_templates/results/reuters_templates_sets_language_validation_accept.json",
        "python -m experiments.reuters_templates.reuters_templates --sets language_validation --variant 'default:' --variant 'accept0.8:accept_estimate=0.8' --suffix accept",
    ),
    "rerank-fast-reuters": Source(
        "benchmarks/results/rerank/screen-compare-reuters-warm.json",
        "python benchmarks/rerank_cost.py compare --warmup --data reuters --rerank-variant 'all:low_partners=null' --rerank-variant 'fast:model=verifier-fast' --rerank-variant 'fast-all:model=verifier-fast;low_partners=null' --clusters-dir DIR --name screen-compare-reuters-warm",
    ),
    "rerank-fast-scale": Source(
        "benchmarks/results/rerank/screen-compare.json",
        "python benchmarks/rerank_cost.py compare --data reuters --data scale:/tmp/neardup-scale/20k --rerank-variant 'all:low_partners=null' --rerank-variant 'fast:model=verifier-fast' --rerank-variant 'fast-all:model=verifier-fast;low_partners=null' --clusters-dir DIR --name screen-compare",
    ),
    "rerank-verifier-ablation": Source(
        "experiments/verifier_cost/results/ablation.json",
        "python -m experiments.verifier_cost.ablate --save-models /tmp/vc-models --name ablation",
    ),
    "rerank-verifier-fast-ship": Source(
        "experiments/verifier_cost/results/ship.json",
        "python -m experiments.verifier_cost.ablate --variants 'no align_partial, align_ratio@1000' --seed 0 --ship neardup/models/verifier-fast --name ship",
    ),
    # A directory of `neardup eval --json` outputs named SET-THRESHOLD.json.
    "rerank-candidate-threshold": Source(
        "benchmarks/results/rerank/candidate-threshold-eval",
        "sh benchmarks/results/rerank/candidate-threshold-eval/command.sh (neardup eval data/SET/validation.jsonl.gz --method rerank --date-field date --param 'candidate_params={\"threshold\": T}' --json)",
    ),
    "rerank-components-100k": Source(
        "benchmarks/results/rerank/scale-100k-rerank-components.json",
        "python -m benchmarks one scale --corpus /tmp/neardup-scale/100k --methods rerank (at commit 41fcaca, when the scale benchmark clustered rerank by connected components: the row's command ends --cluster components)",
    ),
}

# The benchmark sets, in the column order of every accuracy table (benchmarks/README.md).
SETS = ("reuters-news", "reuters-adversarial", "indep-nlpaug", "indep-augly", "indep-noisocr",
        "indep-confusables", "multi-latin", "multi-cyrillic", "multi-greek", "multi-cjk")
# Column headers of the wide method table (docs/choosing-a-method.md defines each).
SET_HEADERS = ("news", "adversarial", "nlpaug", "augly", "noisocr", "confusables", "latin",
               "cyrillic", "greek", "cjk")


@dataclass(frozen=True)
class Speed:
    """Where a method's throughput was measured: a source and the row it wrote."""

    source: str
    method: str  # the row's "method" (scale runs) or its key (neural_dedup rows)
    tool: str = "neardup"


@dataclass(frozen=True)
class MethodRow:
    """One row of the method table: a setting of ``neardup dedup`` and where it was measured."""

    name: str  # as the reader types it
    transfer_label: str  # its row in transfer.json; "auto:METHOD": profile_accuracy.json's
    speed: Speed | None
    when: str


METHOD_ROWS = (
    MethodRow("`rerank`", "rerank (verifier), Leiden 0.4", Speed("scale-100k-rerank", "rerank"),
              "best accuracy on every set: noisy copies (OCR, abridged), every language tried"),
    MethodRow("`minhash` (the default: `--profile auto`)", "auto:minhash",
              Speed("scale-100k", "minhash"),
              "the default: fast, word or character shingles as the input's first documents "
              "look clean or noisy (the scale corpus looks clean)"),
    MethodRow("`minhash --profile clean`", "minhash", Speed("scale-100k", "minhash"),
              "fastest; copies sharing most words (web, LM data); tune the threshold"),
    MethodRow("`minhash --shingle char --ngram 5`", "minhash char-5", None,
              "as minhash, robust to character noise and any script"),
    MethodRow("`ngram --profile clean`", "ngram", Speed("scale-100k-ngram", "ngram"),
              "exact Jaccard or containment; short texts, one text inside another"),
    MethodRow("`ngram --shingle char --ngram 5`", "ngram char-5", None,
              "best lexical accuracy on unseen noise"),
    MethodRow("`exact`", "exact", Speed("scale-100k", "exact"),
              "identical texts after normalization; a first pass"),
    MethodRow("`simhash`", "simhash", Speed("scale-100k", "simhash"),
              "almost identical texts at web scale"),
    MethodRow("`wminhash`", "wminhash", Speed("scale-100k-stats", "wminhash"),
              "news with boilerplate (weights rare phrases)"),
    MethodRow("`spotsigs`", "spotsigs", None,
              "English web pages with navigation text"),
    MethodRow("`sanderson`", "sanderson", Speed("scale-100k-stats", "sanderson"),
              "clean wire copies, exact or expanded; not OCR noise"),
    MethodRow("`retsim`", "retsim (off-the-shelf)", None,
              "character noise, any script, no training"),
    MethodRow("`retsim --model retsim-news`", "retsim (retsim-news)", Speed("neural-20k", "retsim-news"),
              "as retsim, fine-tuned on news reprints"),
    MethodRow("`retsim-partial --model retsim-news`", "retsim-partial (retsim-news)", None,
              "one document contained in another"),
    MethodRow("`biencoder --model biencoder-news`", "biencoder (biencoder-news)",
              Speed("neural-20k", "biencoder-news"),
              "English paraphrase-level copies; not other scripts"),
)


def _load(name: str) -> object:
    path = ROOT / SOURCES[name].path
    if not path.is_file():
        raise SystemExit(f"docs_tables: result file {SOURCES[name].path} (source {name!r}) is missing")
    data = _read(path)
    # A run of the benchmark suite (python -m benchmarks one ...) keeps the benchmark's own
    # output under "result", beside its command and commit.
    return data["result"] if isinstance(data, dict) and "result" in data else data


@functools.lru_cache(maxsize=None)
def _read(path: Path) -> object:
    # Cached: the accuracy tables read one cell of transfer.json at a time. Renderers only read.
    return json.loads(path.read_text(encoding="utf-8"))


def _provenance(names: Iterable[str]) -> str:
    """The line under every table: files read and the commands that rewrite them."""
    seen = list(dict.fromkeys(names))
    files = ", ".join(f"`{SOURCES[n].path}`" for n in seen)
    commands = "; ".join(f"`{SOURCES[n].command}`" for n in seen)
    return f"Raw results: {files}. Rewritten by: {commands}. Table: `python scripts/docs_tables.py`."


def _table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _int(value: float | None) -> str:
    return "" if value is None else f"{round(value):,}"


def _scale_row(source: str, method: str, tool: str = "neardup") -> dict:
    data = _load(source)
    rows = data["rows"] if isinstance(data, dict) else data
    if isinstance(rows, dict):  # neural_dedup: rows keyed by name
        row = rows.get(method)
        if row is None:
            raise SystemExit(f"docs_tables: no row {method!r} in {SOURCES[source].path}")
        return {"docs": data["docs"], "wall_s": row["seconds"], "peak_rss_mb": row["peak_rss_mb"],
                "cpu_s": None}
    for row in rows:
        if row.get("method") == method and row.get("tool", "neardup") == tool:
            return row
    raise SystemExit(f"docs_tables: no {tool} {method!r} row in {SOURCES[source].path}")


def _transfer_cell(label: str, set_name: str) -> dict | None:
    return _load("transfer").get(f"{label}|{set_name}")  # type: ignore[union-attr]


# The rows of the accuracy tables, in order: transfer.json labels that are current settings.
ACCURACY_ROWS = ("exact", "ngram", "ngram char-5", "minhash", "minhash char-5", "simhash", "wminhash",
                 "spotsigs", "sanderson", "retsim (off-the-shelf)", "retsim (retsim-news)",
                 "retsim-partial (retsim-news)", "biencoder (biencoder-news)", "rerank (verifier)",
                 "rerank (verifier), Leiden 0.4")


# --- renderers: each returns (markdown table, source names it read) ----------------------

def _profile_auto_aris(method: str) -> list[float | None]:
    """Test ARI per set of ``method`` with ``--profile auto``, as it ran on each test split."""
    rows = _load("noisy-profile")["rows"]  # type: ignore[index]
    ari = {r["set"]: r["ari"] for r in rows if r["method"] == method and r["setting"] == "auto"}
    return [ari.get(s) for s in SETS]


def _methods_table(full: bool) -> tuple[str, list[str]]:
    names = ["transfer"]
    rows = []
    for method in METHOD_ROWS:
        if method.transfer_label.startswith("auto:"):
            if "noisy-profile" not in names:
                names.append("noisy-profile")
            aris = _profile_auto_aris(method.transfer_label.removeprefix("auto:"))
        else:
            defaults = [_transfer_cell(method.transfer_label, s) for s in SETS]
            aris = [c["default"]["test_ari"] if c else None for c in defaults]
        speed = docs_s = rss = ""
        if method.speed is not None:
            names.append(method.speed.source)
            r = _scale_row(method.speed.source, method.speed.method, method.speed.tool)
            docs_s = _int(r["docs"] / r["wall_s"])
            rss = _int(r["peak_rss_mb"])
            speed = f"{_int(r['docs'])}"
        if full:
            rows.append([method.name, method.when, *(_num(a) for a in aris), docs_s, rss, speed])
        else:
            known = [a for a in aris if a is not None]
            low = _num(min(known)) if known else ""
            rows.append([method.name, _num(aris[0]), _num(aris[4]), low, docs_s, rss, method.when])
    if full:
        header = ["method", "when to use it", *SET_HEADERS, "docs/s", "peak RSS (MB)", "at documents"]
        align = ["l", "l", *"r" * len(SETS), "r", "r", "r"]
    else:
        header = ["method", "reuters-news", "indep-noisocr (OCR)", "worst of 10 sets",
                  "docs/s", "peak RSS (MB)", "when to use it"]
        align = ["l", "r", "r", "r", "r", "r", "l"]
    return _table(header, align, rows), names


def _accuracy(kind: str) -> tuple[str, list[str]]:
    rows = []
    for label in ACCURACY_ROWS:
        cells = []
        for set_name in SETS:
            c = _transfer_cell(label, set_name)
            if c is None:
                cells.append("")
            elif kind == "default":
                cells.append(_num(c["default"]["test_ari"]))
            elif kind == "tuned":
                values = c["tuned"]["values"]
                chosen = ", ".join(str(v) for v in values.values()) or "—"
                cells.append(f"{_num(c['tuned']['test_ari'])} ({chosen})")
            else:  # default minus tuned
                cells.append(f"{c['default']['test_ari'] - c['tuned']['test_ari']:+.3f}")
        rows.append([label, *cells])
    return _table(["method", *SETS], ["l", *"r" * len(SETS)], rows), ["transfer"]


def _comparison(source: str) -> tuple[str, list[str]]:
    rows = []
    for entry in _load(source):  # type: ignore[union-attr]
        test = entry["test"]
        chosen = ", ".join(f"{k}={v}" for k, v in entry["chosen"].items()) or "—"
        rows.append([entry["label"], entry["clustering"], chosen, _num(entry["validation_ari"]),
                     f"**{_num(test['ari'])}**", _num(test["precision"]), _num(test["recall"]),
                     _num(test["f1"]), _num(test["seconds"], 1)])
    header = ["method", "clustering", "chosen on validation", "validation ARI", "test ARI",
              "test precision", "test recall", "test F1", "test time (s)"]
    return _table(header, ["l", "l", "l", *"r" * 6], rows), [source]


# neardup dedup on the scale corpora, local engine, defaults: (source, method, note).
SCALE_ROWS = (
    ("scale-100k", "exact", ""), ("scale-100k", "simhash", ""), ("scale-100k", "minhash", ""),
    ("scale-100k-ngram", "ngram", ""), ("scale-100k-stats", "wminhash", ""),
    ("scale-100k-stats", "sanderson", ""), ("scale-100k-rerank", "rerank", "Leiden 0.4 (its default)"),
    ("scale-1M-exact-simhash", "exact", ""), ("scale-1M-exact-simhash", "simhash", ""),
    ("scale-1M", "minhash", ""), ("scale-1M-ngram", "ngram", ""), ("scale-1M-wminhash", "wminhash", ""),
    ("scale-1M-rerank", "rerank", "connected components (run before Leiden became its default)"),
    ("scale-10M-exact-simhash", "exact", ""), ("scale-10M-exact-simhash", "simhash", ""),
    ("scale-10M", "minhash", ""),
)


def _scale() -> tuple[str, list[str]]:
    rows = []
    for source, method, note in SCALE_ROWS:
        r = _scale_row(source, method)
        rows.append([_int(r["docs"]), f"`{method}` {note}".strip(), _num(r["cpu_s"], 1),
                     _num(r["wall_s"], 1), _int(r["docs"] / r["wall_s"]), _int(r["peak_rss_mb"]),
                     _num(r.get("ari_vs_truth"), 5)])
    header = ["documents", "method", "CPU s", "wall s", "docs/s (wall)", "peak RSS (MB)",
              "ARI against the corpus's truth"]
    return _table(header, ["r", "l", "r", "r", "r", "r", "r"], rows), [s for s, _, _ in SCALE_ROWS]


def _peers() -> tuple[str, list[str]]:
    rows = []
    for source, tool in (("scale-100k", "neardup"), ("scale-100k", "rensa"),
                         ("scale-100k", "datasketch"), ("scale-100k-datatrove", "datatrove")):
        r = _scale_row(source, "minhash", tool)
        rows.append([tool, _num(r["cpu_s"], 1), _num(r["wall_s"], 1), _int(r["peak_rss_mb"]),
                     _num(r.get("ari_vs_truth"), 5)])
    header = ["MinHash + LSH at 100,000 documents", "CPU s", "wall s", "peak RSS (MB)",
              "ARI against the corpus's truth"]
    return _table(header, ["l", "r", "r", "r", "r"], rows), ["scale-100k", "scale-100k-datatrove"]


def _signatures() -> tuple[str, list[str]]:
    data = _load("minhash-signatures")
    rows_in = data["rows"]  # type: ignore[index]
    ours = rows_in["neardup"]["docs_per_s"]
    rows = [[name, _int(r["docs_per_s"]), f"{ours / r['docs_per_s']:.1f}x"]
            for name, r in sorted(rows_in.items(), key=lambda kv: -kv[1]["docs_per_s"])]
    header = [f"library ({data['docs']:,} stories, 128 permutations)", "docs/s",  # type: ignore[index]
              "neardup speed-up"]
    return _table(header, ["l", "r", "r"], rows), ["minhash-signatures"]


def _embedders() -> tuple[str, list[str]]:
    rows = [[r["encoder"], _num(r["docs_per_s"], 1), _int(r["peak_rss_mb"])]
            for r in _load("embedders")["rows"]]  # type: ignore[index]
    return _table(["encoder (CPU, 2 cores)", "docs/s", "peak RSS (MB)"], ["l", "r", "r"], rows), ["embedders"]


def _ray() -> tuple[str, list[str]]:
    rows = []
    for source in ("ray-1M", "ray-1M-2"):
        for r in _load(source)["rows"]:  # type: ignore[index]
            rows.append([Path(SOURCES[source].path).stem, r["config"], _num(r["cpu_s_sampled"], 1),
                         _num(r["wall_s"], 1), f"{r['cpu_ratio_vs_local']:.2f}",
                         f"{r['wall_ratio_vs_local']:.2f}", _int(r["peak_rss_mb_tree"]),
                         "yes" if r.get("same_clusters_as_local", r["config"] == "local") else "no"])
    header = ["run", "engine", "CPU s", "wall s", "CPU / local", "wall / local",
              "peak RSS, whole tree (MB)", "same clusters as local"]
    return _table(header, ["l", "l", *"r" * 5, "l"], rows), ["ray-1M", "ray-1M-2"]


def _index() -> tuple[str, list[str]]:
    data = _load("index-10M")
    build, add, query = data["build"], data["add"], data["query"]  # type: ignore[index]
    rows = [
        ["bulk build (`index add --bulk`)", _int(build["docs"]), _num(build["seconds"], 1),
         _int(build["docs_per_s"]), _int(build["peak_rss_mib"]), f"{build['disk_gib']:.1f} GiB on disk"],
        ["add to the built index (`index add`)", _int(add["docs"]), _num(add["seconds"], 1),
         _int(add["docs_per_s"]), _int(add["peak_rss_mib"]), f"{add['joined']:,} joined a cluster"],
        ["query, one document per request", _int(query["queries"]), "", "",
         _int(query["peak_rss_mib"]), f"p50 {query['p50_ms']} ms, p99 {query['p99_ms']} ms"],
        ["query, batches of 1,000", "", "", _int(query["batch_1000_docs_per_s"]), "", ""],
    ]
    header = ["minhash index of 10M documents", "documents", "wall s", "docs/s", "peak RSS (MiB)", "notes"]
    return _table(header, ["l", "r", "r", "r", "r", "l"], rows), ["index-10M"]


def _report() -> tuple[str, list[str]]:
    data = _load("report-1M")
    build, browser = data["build"], data["browser"]  # type: ignore[index]
    rows = [[_int(data["docs"]), _int(data["pairs"]), _num(build["seconds"], 1),  # type: ignore[index]
             _int(build["peak_rss_mb"]), f"{build['file_mb']:.1f}",
             _num(browser["load_seconds_best_of_3"], 2), _num(browser["search_seconds"], 2)]]
    header = ["documents", "pairs", "build s", "build peak RSS (MB)", "page (MB)",
              "Chromium load s (best of 3)", "search s"]
    return _table(header, ["r"] * 7, rows), ["report-1M"]


def _calibrate_labels() -> tuple[str, list[str]]:
    entries = [*_load("calibrate-labels"), *_load("calibrate-labels-adversarial")]  # type: ignore[misc]
    budgets = sorted({e["labels"] for e in entries})
    cells: dict[tuple[str, str], dict[int, dict]] = {}
    for e in entries:
        cells.setdefault((e["set"], e["method"]), {})[e["labels"]] = e
    rows = []
    for (set_name, method), by_budget in cells.items():
        first = next(iter(by_budget.values()))
        default = f"{_num(first['default']['ari'])} ({first['default']['threshold']})"
        row = [set_name, method, default]
        for b in budgets:
            e = by_budget.get(b)
            if e is None:
                row.append("")
                continue
            rule, best = e["rule"]["ari"], e["ari"]
            row.append(_num(rule) if abs(rule - best) < 5e-4 else f"{_num(rule)} ({_num(best)})")
        rows.append(row)
    header = ["set", "method", "default (no labels)", *(f"{b} labels" for b in budgets)]
    return _table(header, ["l", "l", *"r" * (1 + len(budgets))], rows), [
        "calibrate-labels", "calibrate-labels-adversarial"]


def _noisy_profile() -> tuple[str, list[str]]:
    data = _load("noisy-profile")
    ari = {(r["method"], r["setting"], r["set"]): r["ari"] for r in data["rows"]}  # type: ignore[index]
    signal = {r["text"].removesuffix(" test"): r
              for r in _load("noise-signal-test")["rows"]}  # type: ignore[index]
    rows = []
    for method in dict.fromkeys(r["method"] for r in data["rows"]):  # type: ignore[index]
        for setting, name in (("default", f"`{method} --profile clean`"),
                              ("noisy", f"`{method} --profile noisy`"),
                              ("auto", f"`{method}` (default: `--profile auto`)")):
            if any((method, setting, s) in ari for s in SETS):
                rows.append([name, *(_num(ari.get((method, setting, s))) for s in SETS)])
    rows.append(["auto chooses noisy (broken tokens / stuck punctuation)",
                 *(f"{'yes' if signal[s]['flagged'] else 'no'} "
                   f"({100 * signal[s]['broken_token_share']:.2f}% / "
                   f"{100 * signal[s]['stuck_punctuation_share']:.2f}%)" for s in SETS)])
    return (_table(["setting", *SET_HEADERS], ["l", *"r" * len(SETS)], rows),
            ["noisy-profile", "noise-signal-test"])


def _noisy_profile_cost() -> tuple[str, list[str]]:
    sources = ["noisy-profile-cost-100k", "noisy-profile-cost-20k"]
    rows = [[f"`{r['method']}{' --profile noisy' if r['setting'] == 'noisy' else ''}`",
             _int(r["docs"]), _num(r["cpu_s"], 1), _num(r["cpu_ms_per_doc"], 2),
             _num(r.get("candidate_pairs_per_doc"), 1),
             _num(r["corpus_stage"]["verified_edges"] / r["docs"], 1)
             if (r.get("corpus_stage") or {}).get("verified_edges") is not None else "",
             _int(r["peak_rss_mb"]), _num(r.get("ari_vs_truth"))]
            for name in sources for r in _load(name)["rows"]]  # type: ignore[index]
    header = ["setting", "documents", "CPU (s)", "CPU per doc (ms)", "candidate pairs per doc",
              "verified pairs per doc", "peak RSS (MB)", "ARI vs the corpus's clusters"]
    return _table(header, ["l", *"r" * 7], rows), sources


def _demo_accuracy() -> tuple[str, list[str]]:
    data = _load("demo-accuracy")
    rows = [[r["setting"], _num(r["ari"]), _num(r["precision"]), _num(r["recall"]),
             _num(r["cpu_seconds"], 1)]
            for r in data["rows"]]  # type: ignore[index]
    header = ["command on the demo corpus", "ARI", "pairwise precision", "pairwise recall",
              "CPU (s)"]
    return _table(header, ["l", *"r" * 4], rows), ["demo-accuracy"]


# --- rerank's cost per document (docs/rerank-cost.md) ----------------------------------

def _rerank_data_label(data: str, documents: int) -> str:
    """A rerank_cost.py data name as the reader knows it."""
    if data == "reuters":
        return "Reuters-21578"
    if data.startswith("scale:"):
        return f"scale corpus, {documents:,} documents"
    return f"{data} validation" if data.startswith("indep-") else data


def _rerank_cpu(source: str) -> dict[str, tuple[int, dict[str, float]]]:
    """Each data set's documents and its median CPU seconds per run label."""
    results = _load(source)["results"]  # type: ignore[index]
    return {data: (row["documents"], {label: statistics.median(seconds)
                                      for label, seconds in row["cpu_s"].items()})
            for data, row in results.items()}


def _rerank_stands() -> tuple[str, list[str]]:
    rows = []
    for data, (documents, cpu) in _rerank_cpu("rerank-compare").items():
        if "minhash" not in cpu or "rerank" not in cpu:
            raise SystemExit(f"docs_tables: no minhash and rerank runs for {data!r} in "
                             f"{SOURCES['rerank-compare'].path}")
        rows.append([_rerank_data_label(data, documents), _int(documents), _num(cpu["minhash"], 2),
                     _num(cpu["rerank"], 2), _num(1000 * cpu["rerank"] / documents, 2),
                     f"{cpu['rerank'] / cpu['minhash']:.1f}x"])
    header = ["data", "documents", "MinHash CPU s", "rerank CPU s", "rerank CPU ms a document",
              "rerank / MinHash"]
    return _table(header, ["l", *"r" * 5], rows), ["rerank-compare"]


def _rerank_profile() -> tuple[str, list[str]]:
    results = _load("rerank-profile")["results"]  # type: ignore[index]
    sections: list[str] = []
    for row in results.values():
        # A sub-section ("of which ...") goes under the section before it.
        for name in row["sections_cpu_s"]:
            if name not in sections:
                sections.insert(1 if name.startswith("of which") else len(sections), name)
    rows = []
    for name in sections:
        cells = [f"&nbsp;&nbsp;{name}" if name.startswith("of which") else name]
        for row in results.values():
            seconds = row["sections_cpu_s"].get(name)
            cells += [_num(seconds, 1), "" if seconds is None else f"{100 * seconds / row['cpu_s']:.0f}%"]
        rows.append(cells)
    rows.append(["**whole command, under the profiler**",
                 *(c for row in results.values() for c in (f"**{_num(row['cpu_s'], 1)}**", "100%"))])
    header = ["section"]
    for data, row in results.items():
        label = _rerank_data_label(data, row["documents"])
        header += [f"{label}: CPU s", "share"]
    return _table(header, ["l", *"r" * (len(header) - 1)], rows), ["rerank-profile"]


def _rerank_ratios(default: str, option: str, option_label: str) -> str:
    """'data: default -> option' as rerank / MinHash CPU, each ratio within its own invocation
    (the default's from source ``default``, the option's from source ``option``)."""
    base = _rerank_cpu(default)
    cells = []
    for data, (documents, cpu) in _rerank_cpu(option).items():
        if option_label not in cpu or data not in base:
            continue
        before = base[data][1]
        cells.append(f"{_rerank_data_label(data, documents)}: {before['rerank'] / before['minhash']:.1f}x"
                     f" → {cpu[option_label] / cpu['minhash']:.1f}x")
    return "; ".join(cells)


def _rerank_ari_changes(changes: dict[str, float]) -> str:
    """The lowest and highest change of ARI over the splits measured."""
    low = min(changes, key=changes.__getitem__)
    high = max(changes, key=changes.__getitem__)
    return (f"{changes[low]:+.4f} ({low}) to {changes[high]:+.4f} ({high}); "
            f"{len(changes)} splits")


def _rerank_variant_changes(sources: list[str], variant: str) -> dict[str, float]:
    changes = {}
    for source in sources:
        suffix = " (language-balanced)" if "language" in source else ""
        for name, row in _load(source)["rows"].items():  # type: ignore[index]
            changes[name + suffix] = row[variant]["ari"] - row["default"]["ari"]
    return changes


def _rerank_eval_dir(name: str) -> dict[str, dict]:
    path = ROOT / SOURCES[name].path
    if not path.is_dir():
        raise SystemExit(f"docs_tables: result directory {SOURCES[name].path} (source {name!r}) is missing")
    return {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in sorted(path.glob("*.json"))}


def _rerank_options() -> tuple[str, list[str]]:
    rows = []
    names: list[str] = []

    every = ["rerank-every-candidate-validation", "rerank-every-candidate-language-validation"]
    names += ["rerank-every-candidate", *every]
    rows.append(["`--param low_partners=null`", "scores every candidate: no Screen step",
                 _rerank_ratios("rerank-every-candidate", "rerank-every-candidate", "rerank-all"),
                 _rerank_ari_changes(_rerank_variant_changes(every, "all")),
                 "[0041](decisions/0041-rerank-screens-low-estimate-pairs.md)"])

    accept = ["rerank-accept-validation", "rerank-accept-language-validation"]
    names += ["rerank-accept-20k", "rerank-accept-100k", *accept]
    ratios = "; ".join(_rerank_ratios("rerank-every-candidate", s, "rerank")
                       for s in ("rerank-accept-20k", "rerank-accept-100k"))
    rows.append(["`--param accept_estimate=0.8`",
                 "accepts pairs estimated at 0.8 or more without the classifier (the template guard still runs)",
                 ratios + " (the default's ratio from `final-compare.json`)",
                 _rerank_ari_changes(_rerank_variant_changes(accept, "accept0.8")),
                 "[0043](decisions/0043-rerank-accept-estimate-option.md)"])

    names += ["rerank-fast-reuters", "rerank-fast-scale", "rerank-verifier-ablation",
              "rerank-verifier-fast-ship"]
    ratios = _rerank_ratios("rerank-fast-reuters", "rerank-fast-reuters", "rerank-fast")
    # screen-compare.json's Reuters runs compiled numba's kernels (no --warmup): its scale rows only.
    scale = {d: v for d, v in _rerank_cpu("rerank-fast-scale").items() if d.startswith("scale:")}
    for data, (documents, cpu) in scale.items():
        ratios += (f"; {_rerank_data_label(data, documents)}: {cpu['rerank'] / cpu['minhash']:.1f}x"
                   f" → {cpu['rerank-fast'] / cpu['minhash']:.1f}x")
    shipped = _load("rerank-verifier-ablation")["variants"]["shipped verifier-news"]["leiden"]  # type: ignore[index]
    fast = next(iter(_load("rerank-verifier-fast-ship")["variants"].values()))["leiden"]  # type: ignore[index]
    changes = {s: fast["at_maximin"][s] - shipped["at_default"][s] for s in SETS}
    rows.append(["`--param model=verifier-fast`",
                 f"a verifier without `align_partial`, `align_ratio` over 1,000 characters, threshold {fast['maximin_threshold']}",
                 ratios, _rerank_ari_changes(changes), "[0040](decisions/0040-verifier-fast-option.md)"])

    names.append("rerank-candidate-threshold")
    evals = _rerank_eval_dir("rerank-candidate-threshold")
    changes = {stem.removesuffix("-0.15"): evals[stem]["ari"] - evals[stem.replace("-0.15", "-0.1")]["ari"]
               for stem in evals if stem.endswith("-0.15")}
    rows.append(["`--param 'candidate_params={\"threshold\": 0.15}'`",
                 "a stricter candidate check (0.15 instead of 0.1), with its banding",
                 "not measured as a whole command", _rerank_ari_changes(changes),
                 "[0026](decisions/0026-rerank-cost-routes.md)"])

    names += ["scale-100k-rerank", "rerank-components-100k", "transfer"]
    leiden = _scale_row("scale-100k-rerank", "rerank")
    components = _scale_row("rerank-components-100k", "rerank")
    changes = {}
    for s in SETS:
        c, l = _transfer_cell("rerank (verifier)", s), _transfer_cell("rerank (verifier), Leiden 0.4", s)
        if c is not None and l is not None:
            changes[s] = c["default"]["validation_ari"] - l["default"]["validation_ari"]
    rows.append(["`--cluster components`",
                 "connected components instead of Leiden: edges between documents already joined are not scored",
                 f"scale corpus, {leiden['docs']:,} documents: {_num(leiden['cpu_s'], 1)} → "
                 f"{_num(components['cpu_s'], 1)} CPU s (two runs, not one invocation)",
                 _rerank_ari_changes(changes), "[0007](decisions/0007-leiden-for-the-verifier.md)"])

    header = ["option", "what it changes", "rerank / MinHash CPU, default → option",
              "validation ARI, option − default: lowest to highest", "record"]
    return _table(header, ["l", "l", "l", "l", "l"], rows), names


RENDERERS: dict[str, Callable[[], tuple[str, list[str]]]] = {
    "methods": lambda: _methods_table(full=True),
    "methods-summary": lambda: _methods_table(full=False),
    "accuracy-default": lambda: _accuracy("default"),
    "accuracy-tuned": lambda: _accuracy("tuned"),
    "accuracy-default-minus-tuned": lambda: _accuracy("gap"),
    "method-comparison": lambda: _comparison("comparison"),
    "method-comparison-window48h": lambda: _comparison("comparison-window48h"),
    "scale-local": _scale,
    "peers-100k": _peers,
    "minhash-signatures": _signatures,
    "embedders": _embedders,
    "ray-1M": _ray,
    "index-10M": _index,
    "report-1M": _report,
    "calibrate-labels": _calibrate_labels,
    "noisy-profile": _noisy_profile,
    "noisy-profile-cost": _noisy_profile_cost,
    "demo-accuracy": _demo_accuracy,
    # --- rerank's cost per document (docs/rerank-cost.md) ---
    "rerank-stands": _rerank_stands,
    "rerank-profile": _rerank_profile,
    "rerank-options": _rerank_options,
}

_BLOCK = re.compile(r"(<!-- BEGIN table:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- END table:(?P=name) -->)",
                    re.DOTALL)


def render(name: str) -> str:
    """The text between the markers of table ``name``."""
    if name not in RENDERERS:
        raise SystemExit(f"docs_tables: no renderer for table {name!r}; known: {', '.join(sorted(RENDERERS))}")
    table, sources = RENDERERS[name]()
    return f"{table}\n\n{_provenance(sources)}\n"


def documents() -> list[Path]:
    """The files whose tables are generated: README.md and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def regenerate(text: str) -> str:
    return _BLOCK.sub(lambda m: m.group(1) + render(m.group("name")) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if any table differs from its raw results")
    args = parser.parse_args(argv)
    stale = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        new = regenerate(text)
        if new == text:
            continue
        stale.append(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        if not args.check:
            path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print("docs_tables: tables differ from their raw results in: "
              + ", ".join(map(str, stale)) + "; run python scripts/docs_tables.py", file=sys.stderr)
        return 1
    for path in stale:
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
