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
import decimal
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


_MAKE_TEST_CMD = "python scripts/time_make_test.py [--beside-shared] [--target test-fast]"

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
    **{name: Source(f"benchmarks/results/tests/{file}", _MAKE_TEST_CMD) for name, file in (
        ("make-test-1", "make-test-466b326.txt"), ("make-test-2", "make-test-60c2829.txt"),
        ("make-test-3", "make-test-cd69171.txt"), ("make-test-fast-1", "make-test-fast-3028850.txt"))},
    "rerank-before-after": Source(
        "benchmarks/results/rerank/s50-compare.json",
        "python benchmarks/rerank_cost.py compare --warmup --repeats 2 --data reuters --data scale:/tmp/neardup-scale/20k --env-variant 'before:PYTHONPATH=CHECKOUT_OF_ca3e8e1' --name s50-compare",
    ),
    "rerank-compare-1M": Source(
        "benchmarks/results/rerank/s50-compare-1M.json",
        "python benchmarks/rerank_cost.py compare --data scale:/tmp/neardup-scale/1M --name s50-compare-1M  (at 07952ae)",
    ),
    "rerank-compare": Source(
        "benchmarks/results/rerank/s50-compare.json",
        "python benchmarks/rerank_cost.py compare --warmup --repeats 2 --data reuters --data scale:/tmp/neardup-scale/20k --env-variant 'before:PYTHONPATH=CHECKOUT_OF_ca3e8e1' --name s50-compare",
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
    # Files one run writes together share its command: name it once.
    commands = "; ".join(f"`{c}`" for c in dict.fromkeys(SOURCES[n].command for n in seen))
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


def _rerank_before_after() -> tuple[str, list[str]]:
    """rerank and MinHash from the current code and from an earlier checkout (the
    ``before`` variant) in one invocation."""
    rows = []
    for data, (documents, cpu) in _rerank_cpu("rerank-before-after").items():
        if not {"minhash", "rerank", "minhash-before", "rerank-before"} <= set(cpu):
            raise SystemExit(f"docs_tables: {SOURCES['rerank-before-after'].path} has no "
                             f"before and after runs for {data!r}")
        rows.append([_rerank_data_label(data, documents),
                     _num(1000 * cpu["rerank-before"] / documents, 2),
                     _num(1000 * cpu["rerank"] / documents, 2),
                     f"{cpu['rerank-before'] / cpu['rerank']:.1f}x",
                     f"{cpu['rerank-before'] / cpu['minhash-before']:.1f}x",
                     f"{cpu['rerank'] / cpu['minhash']:.1f}x"])
    header = ["data", "rerank CPU ms a document, before", "after", "less CPU",
              "rerank / MinHash, before", "after"]
    return _table(header, ["l", *"r" * 5], rows), ["rerank-before-after"]


#: The compare runs of the "where rerank stands" table, in row order (each a whole
#: invocation: MinHash and rerank side by side on each of its data sets).
RERANK_STANDS = ("rerank-compare", "rerank-compare-1M")


def _rerank_stands() -> tuple[str, list[str]]:
    rows = []
    for source in RERANK_STANDS:
        for data, (documents, cpu) in _rerank_cpu(source).items():
            if "minhash" not in cpu or "rerank" not in cpu:
                raise SystemExit(f"docs_tables: no minhash and rerank runs for {data!r} in "
                                 f"{SOURCES[source].path}")
            rows.append([_rerank_data_label(data, documents), _int(documents),
                         _num(cpu["minhash"], 2), _num(cpu["rerank"], 2),
                         _num(1000 * cpu["rerank"] / documents, 2),
                         f"{cpu['rerank'] / cpu['minhash']:.1f}x"])
    header = ["data", "documents", "MinHash CPU s", "rerank CPU s", "rerank CPU ms a document",
              "rerank / MinHash"]
    return _table(header, ["l", *"r" * 5], rows), list(RERANK_STANDS)


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
    "rerank-before-after": _rerank_before_after,
    "rerank-profile": _rerank_profile,
    "rerank-options": _rerank_options,
}

# --- The figure tables of the pages on spans, decontamination, storage, neural speed, static
# embeddings, real OCR and the benchmark log (issue 39). A block of its own: its sources and
# renderers are added here so that other blocks merge beside it.

_SPANS_CMD = ("python benchmarks/peers_spans.py --corpus /tmp/neardup-scale/{n} --results "
              "benchmarks/results/spans/{n} --scratch /tmp/spans-bench-{n}{extra}")
_DECON_CMD = "python benchmarks/peers_decontaminate.py --train-docs {docs} --eval-items 10000 --planted 400{extra}"
_RERANK_CMD = "python benchmarks/rerank_cost.py compare --data DATA --clusters-dir DIR --name {name}"
_TEMPLATES_MIXING_CMD = "python -m experiments.reuters_templates.mixing_clusters OUT"
_SPINE_CMD = ("python -m benchmarks one before_after --before EXPORT_OF_5cf0f87 --input GLOB --method {m} "
              "--warmup /tmp/neardup-scale/5k/part-00000.parquet{extra}")

SOURCES.update({
    "spans-100k": Source("benchmarks/results/spans/100k/results.json", _SPANS_CMD.format(n="100k", extra="")),
    "spans-100k-spans": Source("benchmarks/results/spans/100k/neardup_spans_report.json",
                               _SPANS_CMD.format(n="100k", extra="")),
    "spans-100k-substrings": Source("benchmarks/results/spans/100k/neardup_substrings_report.json",
                                    _SPANS_CMD.format(n="100k", extra="")),
    "spans-100k-substrings-chunked": Source("benchmarks/results/spans/100k/neardup_substrings_chunked_report.json",
                                            _SPANS_CMD.format(n="100k", extra="")),
    "spans-1M": Source("benchmarks/results/spans/1M/results.json",
                       _SPANS_CMD.format(n="1M", extra=" --skip-peers --skip-chunked")),
    "spans-1M-spans": Source("benchmarks/results/spans/1M/neardup_spans_report.json",
                             _SPANS_CMD.format(n="1M", extra=" --skip-peers --skip-chunked")),
    "spans-1M-substrings": Source("benchmarks/results/spans/1M/neardup_substrings_report.json",
                                  _SPANS_CMD.format(n="1M", extra=" --skip-peers --skip-chunked")),
    "spans-engines": Source("benchmarks/results/spans/engines-reuters-workers-read.txt",
                            "the loop in the file's header: neardup spans and substrings with --engine local "
                            "and --engine ray under /usr/bin/time"),
    "decontaminate-100k": Source("benchmarks/results/decontaminate/100000-10000.json",
                                 _DECON_CMD.format(docs=100000, extra="")),
    "decontaminate-1M": Source("benchmarks/results/decontaminate/1000000-10000-neardup-reader-fix.json",
                               _DECON_CMD.format(docs=1000000, extra=" --tools neardup")),
    "decontaminate-1M-report": Source("benchmarks/results/decontaminate/1000000-10000-neardup-reader-fix-report.json",
                                      _DECON_CMD.format(docs=1000000, extra=" --tools neardup")),
    "decontaminate-1M-rss": Source("benchmarks/results/decontaminate/1000000-10000-neardup-reader-fix-rss.txt",
                                   "ps sampling the run's neardup process once a minute (the file's header)"),
    "decontaminate-trace-before": Source(
        "benchmarks/results/decontaminate/trace-200000-before.json",
        "python -m benchmarks.decontaminate_trace --docs 200000 --every 10 --label before (at 5733573)"),
    "decontaminate-trace-after": Source(
        "benchmarks/results/decontaminate/trace-200000-after.json",
        "python -m benchmarks.decontaminate_trace --docs 200000 --every 10 --label after"),
    "storage": Source("benchmarks/results/storage/storage.json", "HF_HUB_OFFLINE=1 python benchmarks/bench_storage.py"),
    "neural-retsim": Source("benchmarks/results/neural/neural_speed_retsim.json",
                            "python benchmarks/neural_speed.py retsim --docs 200 --repeat 2"),
    "neural-biencoder": Source("benchmarks/results/neural/neural_speed_biencoder.json",
                               "python benchmarks/neural_speed.py biencoder --docs 150 --repeat 1 --tokens 32,64,128 "
                               "--model /tmp/s51/student/models/student-2L-64 "
                               "--model /tmp/s51/student/models/student-3L-64 "
                               "--model /tmp/s51/student/models/student-3L-128"),
    "neural-biencoder-accuracy": Source(
        "benchmarks/results/neural/neural_speed_biencoder-accuracy.json",
        "python benchmarks/neural_speed.py biencoder-accuracy --tokens 32,64,128 --sets reuters-news,indep-noisocr "
        "--model /tmp/s51/student/models/student-2L-64 --model /tmp/s51/student/models/student-3L-64 "
        "--model /tmp/s51/student/models/student-3L-128"),
    "neural-static": Source("benchmarks/results/neural/neural_speed_static.json",
                            "python benchmarks/neural_speed.py static --docs 3000 --repeat 2"),
    "static-peers": Source("benchmarks/results/neural/peers_static_peers.json",
                           "python benchmarks/peers_static.py peers --sets indep-noisocr,reuters-news"),
    "static-rerank": Source("benchmarks/results/neural/peers_static_rerank.json",
                            "python benchmarks/peers_static.py rerank --sets indep-noisocr"),
    "static-rerank-candidates": Source(
        "benchmarks/results/neural/peers_static_rerank_candidates.json",
        "python benchmarks/peers_static.py rerank --candidates-only --sets reuters-news,indep-nlpaug,multi-latin"),
    "rerank-cost-base-reuters": Source("benchmarks/results/rerank/base-reuters.json",
                                       "cd EXPORT_OF_da29ed7 && " + _RERANK_CMD.format(name="base-reuters")),
    "rerank-cost-new-reuters": Source("benchmarks/results/rerank/new-reuters.json",
                                      _RERANK_CMD.format(name="new-reuters")),
    "rerank-cost-base-scale-20k": Source("benchmarks/results/rerank/base-scale-20k.json",
                                         "cd EXPORT_OF_da29ed7 && " + _RERANK_CMD.format(name="base-scale-20k")),
    "rerank-cost-new-scale-20k": Source("benchmarks/results/rerank/new-scale-20k.json",
                                        _RERANK_CMD.format(name="new-scale-20k")),
    "rerank-cache-base-scale-20k": Source(
        "benchmarks/results/rerank/base-c087433-scale-20k.json",
        "cd EXPORT_OF_c087433 && " + _RERANK_CMD.format(name="base-c087433-scale-20k")),
    "rerank-cache-new-scale-20k": Source("benchmarks/results/rerank/cache256-scale-20k.json",
                                         _RERANK_CMD.format(name="cache256-scale-20k")),
    "rerank-cache-base-reuters": Source(
        "benchmarks/results/rerank/base-c087433-reuters-body.json",
        "cd EXPORT_OF_c087433 && " + _RERANK_CMD.format(name="base-c087433-reuters-body")
        + " --extra --text-field body"),
    "rerank-cache-new-reuters": Source("benchmarks/results/rerank/cache256-reuters-body.json",
                                       _RERANK_CMD.format(name="cache256-reuters-body") + " --extra --text-field body"),
    "templates": Source("experiments/reuters_templates/results/reuters_templates.json",
                        "python -m experiments.reuters_templates.reuters_templates"),
    "templates-8fc84d2c": Source(
        "experiments/reuters_templates/results/reuters_templates_8fc84d2c.json",
        "python -m experiments.reuters_templates.reuters_templates at 8fc84d2c (the file as that commit "
        "holds it: git show 8fc84d2c:experiments/reuters_templates/results/reuters_templates.json)"),
    "templates-40b919e": Source("experiments/reuters_templates/results/mixing_clusters_40b919e.json",
                                _TEMPLATES_MIXING_CMD + " at 40b919e"),
    "templates-name-test": Source("experiments/reuters_templates/results/mixing_clusters_name_test.json",
                                  _TEMPLATES_MIXING_CMD + " at 390fe46"),
    "templates-opening-names": Source("experiments/reuters_templates/results/mixing_clusters_opening_names.json",
                                      _TEMPLATES_MIXING_CMD),
    "spine-minhash-10M": Source("benchmarks/results/spine/minhash-10M.json",
                                _SPINE_CMD.format(m="minhash", extra="")),
    "spine-rerank-20k": Source("benchmarks/results/spine/rerank-20k-guard-off.json",
                               _SPINE_CMD.format(m="rerank", extra=" --extra --param template_guard=false")),
    "spine-rerank-100k": Source("benchmarks/results/spine/rerank-100k-guard-off.json",
                                _SPINE_CMD.format(m="rerank", extra=" --extra --param template_guard=false")),
    "ocr-validation": Source("experiments/ocr_languages/results/validation.json",
                             "python -m experiments.ocr_languages.per_language --split validation"),
    "ocr-test": Source("experiments/ocr_languages/results/test.json",
                       "python -m experiments.ocr_languages.per_language --split test --entries rerank minhash "
                       "ngram \"minhash --profile noisy\" \"ngram --profile noisy\" retsim static"),
})


def _half_up(value: float, digits: int = 0) -> str:
    """``value`` rounded half up, with thousands separators: 14.25 -> 14.3, 36.25 -> 36.3.

    The figures these tables took over were rounded by hand, half up; ``format`` rounds the
    binary value (14.25 -> 14.2), which would move them for no reason in the data.
    """
    quantum = decimal.Decimal(1).scaleb(-digits)
    rounded = decimal.Decimal(repr(float(value))).quantize(quantum, rounding=decimal.ROUND_HALF_UP)
    return f"{rounded:,}"


def _pct(share: float, digits: int = 0) -> str:
    return _half_up(100 * share, digits) + "%"


def _text(name: str) -> str:
    path = ROOT / SOURCES[name].path
    if not path.is_file():
        raise SystemExit(f"docs_tables: result file {SOURCES[name].path} (source {name!r}) is missing")
    return path.read_text(encoding="utf-8")


def _spans_100k() -> tuple[str, list[str]]:
    data = _load("spans-100k")
    runs, agree = data["runs"], data["agreement"]  # type: ignore[index]
    spans, sub, chunked = (_load(n)["summary"] for n in  # type: ignore[index]
                           ("spans-100k-spans", "spans-100k-substrings", "spans-100k-substrings-chunked"))
    docs = _int(data["documents"])  # type: ignore[index]

    def identical(key: str, whom: str) -> str:
        return f"{_int(agree[key]['identical_output_documents'])} of {docs} identical to {whom}"

    rows = []
    for key, label, changed, letters, fraction, same in (
        ("neardup_spans", "`neardup spans --unit sentences:3 --memory-limit 1GB`",
         spans["documents_changed"], agree["spans_vs_datatrove"]["letters_removed"]["neardup"],
         spans["bytes_removed_fraction"], identical("spans_vs_datatrove", "datatrove's")),
        ("datatrove_sentence_dedup", "datatrove sentence dedup (3 steps, `n_sentences=3`)",
         agree["spans_vs_datatrove"]["documents_changed"]["peer"],
         agree["spans_vs_datatrove"]["letters_removed"]["peer"], None, ""),
        ("neardup_substrings", f"`neardup substrings --min-tokens 50 --memory-limit 1GB` ({sub['chunks']} chunks)",
         sub["documents_changed"], agree["substrings_vs_reference"]["letters_removed"]["neardup"],
         sub["bytes_removed_fraction"], identical("substrings_vs_reference", "the reference's")),
        ("neardup_substrings_chunked",
         f"`neardup substrings --min-tokens 50 --memory-limit 128MB` ({chunked['chunks']} chunks)",
         chunked["documents_changed"], agree["substrings_chunked_vs_one_chunk"]["letters_removed"]["neardup"],
         None, identical("substrings_chunked_vs_one_chunk", "the 1GB run's")),
        ("reference_suffix_array", "reference suffix-array script (whole corpus in memory)",
         agree["substrings_vs_reference"]["documents_changed"]["peer"],
         agree["substrings_vs_reference"]["letters_removed"]["peer"], None, ""),
    ):
        removed = _int(letters) + (f" ({_pct(fraction, 1)} of bytes)" if fraction is not None else "")
        rows.append([label, f"{_half_up(runs[key]['seconds'])} s", f"{_half_up(runs[key]['peak_rss_mb'])} MB",
                     _int(changed), removed, same])
    header = ["run", "wall time", "peak RSS", "documents changed", "non-space characters removed",
              "outputs"]
    return _table(header, ["l", "r", "r", "r", "r", "l"], rows), [
        "spans-100k", "spans-100k-spans", "spans-100k-substrings", "spans-100k-substrings-chunked"]


def _spans_1m() -> tuple[str, list[str]]:
    runs = _load("spans-1M")["runs"]  # type: ignore[index]
    spans, sub = (_load(n) for n in ("spans-1M-spans", "spans-1M-substrings"))
    s, t = spans["summary"], sub["summary"]  # type: ignore[index]

    def timed(key: str, report: dict) -> str:
        times = report["timings_seconds"]
        return (f"{_half_up(runs[key]['seconds'])} s (count {_half_up(times['count'])} s, "
                f"rewrite {_half_up(times['rewrite'])} s)")

    def millions(n: int, digits: int) -> str:
        return f"{_half_up(n / 1e6, digits)} M"

    spilled = f"{s['partitions']} partitions spilled to disk" if s["spilled_to_disk"] else "in memory"
    rows = [
        ["`neardup spans --unit sentences:3`", timed("neardup_spans", spans),  # type: ignore[arg-type]
         f"{_half_up(runs['neardup_spans']['peak_rss_mb'])} MB",
         f"{millions(s['spans'], 2)} windows, {spilled}; {_int(s['repeated_spans'])} repeated windows; "
         f"{_int(s['documents_changed'])} documents changed; {_pct(s['bytes_removed_fraction'], 1)} of bytes removed"],
        ["`neardup substrings --min-tokens 50`", timed("neardup_substrings", sub),  # type: ignore[arg-type]
         f"{_half_up(runs['neardup_substrings']['peak_rss_mb'])} MB",
         f"{millions(t['tokens'], 0)} tokens in {t['chunks']} chunks; {millions(t['windows_removed_within_chunks'], 1)} "
         f"windows removed within chunks, {millions(t['window_hashes_shared_across_chunks'], 2)} window hashes "
         f"shared across chunks; {_int(t['documents_changed'])} documents changed; "
         f"{_pct(t['bytes_removed_fraction'], 1)} of bytes removed"],
    ]
    return _table(["run", "wall time", "peak RSS", "what it did"], ["l", "r", "r", "l"], rows), [
        "spans-1M", "spans-1M-spans", "spans-1M-substrings"]


def _spans_engines() -> tuple[str, list[str]]:
    text = _text("spans-engines")
    # The header's loop names each command in full: for cmd in "spans --unit ..." "substrings ...".
    loop = text.split("for cmd in", 1)[1].splitlines()[0]
    commands = {name: command for command, name in re.findall(r'"((\w+) [^"]*)"', loop)}
    runs = {(m["name"], m["engine"]): (float(m["wall"]), int(m["kb"]))
            for m in re.finditer(r"^(?P<name>\w+) (?P<engine>local|ray) wall=(?P<wall>[\d.]+) s maxrss=(?P<kb>\d+) KB$",
                                 text, re.MULTILINE)}
    rows = []
    for name, command in commands.items():
        (local_s, local_kb), (ray_s, ray_kb) = runs[name, "local"], runs[name, "ray"]
        same = all(f"{name}: {out} identical" in text for out in ("--out", "--removed-out"))
        rows.append([f"`{command}`", f"{_half_up(local_s, 1)} s", f"{_half_up(ray_s, 1)} s",
                     f"{_half_up(local_kb / 1024)} / {_half_up(ray_kb / 1024)} MiB",
                     "byte-identical" if same else "differ"])
    header = ["run", "local", "`--engine ray` (new local cluster)", "driver's peak memory, local / Ray",
              "`--out` and `--removed-out`"]
    return _table(header, ["l", "r", "r", "r", "l"], rows), ["spans-engines"]


_RECALL_KINDS = (("exact_inside", "exact copy inside a longer document"),
                 ("paraphrased", "paraphrased (10% word edits)"),
                 ("ocr", "OCR-noised (severity 0.03)"),
                 ("ocr_inside", "OCR-noised inside a longer document"))


def _decontaminate_100k() -> tuple[str, list[str]]:
    data = _load("decontaminate-100k")
    ours, theirs, agree = data["neardup"], data["semhash"], data["agreement_on_items"]  # type: ignore[index]
    planted = data["data"]["planted"]  # type: ignore[index]
    rows = [
        ["wall time", f"{_half_up(ours['seconds'])} s", f"{_half_up(theirs['seconds'])} s"],
        ["peak memory", f"{_half_up(ours['peak_rss_mib'])} MiB", f"{_half_up(theirs['peak_rss_mib'])} MiB"],
        [f"planted items found (of {planted})", _pct(ours["item_side"]["planted_recall"], 1),
         _pct(theirs["item_side"]["planted_recall"], 1)],
        *([label, _pct(ours["item_side"]["recall_by_kind"][kind]), _pct(theirs["item_side"]["recall_by_kind"][kind])]
          for kind, label in _RECALL_KINDS),
        ["items flagged that were not planted", _int(ours["item_side"]["flagged_not_planted"]),
         _int(theirs["item_side"]["flagged_not_planted"])],
        ["agreement on leaked items", f"{_int(agree['both'])} flagged by both; {_int(agree['only_neardup'])} by "
         f"neardup only; {_int(agree['only_semhash'])} by semhash only", ""],
    ]
    return _table(["", "neardup decontaminate", "semhash (train against test)"], ["l", "l", "l"], rows), [
        "decontaminate-100k"]


def _decontaminate_1m() -> tuple[str, list[str]]:
    data = _load("decontaminate-1M")
    ours = data["neardup"]  # type: ignore[index]
    times = _load("decontaminate-1M-report")["timings_seconds"]  # type: ignore[index]
    rss = re.findall(r"^\S+ rss_kb=(\d+) elapsed=(\d+):(\d+)$", _text("decontaminate-1M-rss"), re.MULTILINE)
    kb, minutes, seconds = rss[-1]
    items = ours["item_side"]
    rows = [
        ["wall time", f"{_half_up(ours['seconds'])} s ({_half_up(ours['seconds'] / 60)} min): near-duplicate "
         f"matching {_half_up(times['near'])} s, 13-grams {_half_up(times['ngrams'])} s, reading "
         f"{_half_up(times['read'])} s"],
        ["peak memory", f"{_half_up(ours['peak_rss_mib'])} MiB (`ru_maxrss`), a brief peak not yet traced; "
         f"{_half_up(int(kb) / 1000)} MB resident at {int(minutes)} min {int(seconds)} s (the last sample)"],
        [f"planted items found (of {data['data']['planted']})", _pct(items["planted_recall"], 2)],  # type: ignore[index]
        *([label, _pct(items["recall_by_kind"][kind])] for kind, label in _RECALL_KINDS),
        ["items leaked / flagged that were not planted",
         f"{_int(ours['items_leaked'])} / {_int(items['flagged_not_planted'])}"],
        ["training documents flagged", f"{_int(ours['train_flagged'])} "
         f"({_int(ours['train_side']['flagged_not_planted'])} of them not planted)"],
    ]
    docs = data["data"]  # type: ignore[index]
    header = ["", f"neardup decontaminate, {docs['train_docs'] // 10**6}M x {docs['eval_items'] // 1000}k"]
    return _table(header, ["l", "l"], rows), ["decontaminate-1M", "decontaminate-1M-report", "decontaminate-1M-rss"]


def _decontaminate_trace() -> tuple[str, list[str]]:
    before, after = _load("decontaminate-trace-before"), _load("decontaminate-trace-after")
    docs = before["samples"][-1]["documents"]  # type: ignore[index]

    def both(fn: Callable[[dict], str]) -> list[str]:
        return [fn(before), fn(after)]  # type: ignore[arg-type]

    rows = [
        ["resident memory, KiB per document", *both(lambda d: f"{d['rss_kib_per_document']:.3f}")],
        ["Arrow's pool, KiB per document", *both(lambda d: f"{d['arrow_pool_kib_per_document']:.3f}")],
        ["Arrow's pool at the end", *both(lambda d: f"{_half_up(d['samples'][-1]['arrow_pool_kib'] / 1024)} MiB")],
        ["highest resident memory sampled",
         *both(lambda d: f"{_half_up(max(s['rss_kib'] for s in d['samples']) / 1024)} MiB")],
    ]
    return _table([f"{docs:,} training documents", "before", "after"], ["l", "r", "r"], rows), [
        "decontaminate-trace-before", "decontaminate-trace-after"]


def _storage() -> tuple[str, list[str]]:
    data = _load("storage")
    runs, same = data["runs"], data["identical_clusters"]  # type: ignore[index]
    labels = {"local file -> local outputs": ("local JSON Lines -> local files", None),
              "s3 -> s3 outputs": ("`s3://` JSON Lines -> `s3://` outputs", "s3"),
              "saved dataset -> local outputs": ("saved Hugging Face dataset (Arrow) -> local files", "saved dataset")}
    rows = []
    for key, run in runs.items():
        label, check = labels[key]
        clusters = "reference" if check is None else ("identical" if same[check] else "differ")
        rows.append([label, f"{_half_up(run['seconds'], 1)} s", f"{_half_up(run['peak_rss_mib'])} MiB", clusters])
    return _table(["input -> outputs", "wall time", "peak memory", "clusters"], ["l", "r", "r", "l"], rows), [
        "storage"]


_RETSIM_ROWS = (("unisim", "unisim 1.0.1 `TextSim.embed` (batch 128)"),
                ("neardup float32", "neardup RETSim float32 (batch 16, I/O binding)"),
                ("neardup int8", "neardup RETSim int8 (dense weights)"),
                ("neardup int8 + attention int8",
                 "int8 + attention products int8 (`MatMulConstBOnly=False`; not offered)"))


def _neural_retsim() -> tuple[str, list[str]]:
    rows_in = _load("neural-retsim")["rows"]  # type: ignore[index]
    rows = []
    for key, label in _RETSIM_ROWS:
        r = rows_in[key]
        # unisim is the reference the cosines are taken against: 1 by definition, not a measurement.
        mean, low = ("1", "1") if key == "unisim" else (f"{r['cosine_to_unisim_mean']:.4f}",
                                                        f"{r['cosine_to_unisim_min']:.4f}")
        rows.append([label, _half_up(r["docs_per_cpu_second"], 1), f"{r['speedup_vs_unisim']:.2f}x", mean, low])
    header = ["encoder", "docs / CPU s", "vs unisim", "cosine to unisim: mean", "min"]
    return _table(header, ["l", *"r" * 4], rows), ["neural-retsim"]


_BIENCODER_ROWS = (("before: biencoder-news, 128 tokens (base commit's default)", 128,
                    "before: biencoder-news, 128 tokens (default)"),
                   ("biencoder-news, 64 tokens", 64, "biencoder-news, 64 tokens"),
                   ("biencoder-news, 32 tokens", 32, "biencoder-news, 32 tokens"),
                   ("all-MiniLM-L6-v2 (torch), 256 tokens", None, "all-MiniLM-L6-v2 (torch, float32), 256 tokens"),
                   ("student-2L-64, 64 tokens", ("student-2L-64", 64),
                    "student: all-MiniLM-L6-v2 cut to layers 3, 5, fine-tuned at 64 tokens (not shipped)"),
                   ("student-3L-64, 64 tokens", ("student-3L-64", 64),
                    "student: all-MiniLM-L6-v2 cut to layers 1, 3, 5, fine-tuned at 64 tokens (not shipped)"),
                   ("student-3L-128, 128 tokens", ("student-3L-128", 128),
                    "student: all-MiniLM-L6-v2 cut to layers 1, 3, 5, fine-tuned at 128 tokens (not shipped)"))


def _neural_biencoder() -> tuple[str, list[str]]:
    speed = _load("neural-biencoder")["rows"]  # type: ignore[index]
    ari = {(r["set"], r.get("model", "biencoder-news"), r["max_tokens"]): r["ari"]
           for r in _load("neural-biencoder-accuracy")["rows"]}  # type: ignore[index]
    rows = []
    for key, tokens, label in _BIENCODER_ROWS:
        # tokens: biencoder-news's limit, or (another model's name, its limit); None: no ARI.
        model, limit = tokens if isinstance(tokens, tuple) else ("biencoder-news", tokens)
        rows.append([label, _half_up(speed[key]["docs_per_cpu_second"], 1),
                     *("" if tokens is None else _half_up(ari[s, model, limit], 3) for s in ("reuters-news", "indep-noisocr"))])
    static = _load("neural-static")
    static_key = "static-minilm, normalized text (the method's default)"
    static_ari = {r["set"]: r["validation_ari"] for r in _load("static-peers")["rows"]  # type: ignore[index]
                  if r["tool"] == "neardup static"}
    rows.append([f"`--method static` embedding (static-minilm, normalized text; {static['docs']:,} stories, "  # type: ignore[index]
                 "`neural_speed.py static --docs 3000 --repeat 2`; validation ARI from `peers_static.py peers`)",
                 _half_up(static["rows"][static_key]["docs_per_cpu_second"]),  # type: ignore[index]
                 *(_half_up(static_ari[s], 3) for s in ("reuters-news", "indep-noisocr"))])
    header = ["encoder", "docs / CPU s", "reuters-news validation ARI", "indep-noisocr validation ARI"]
    return _table(header, ["l", "r", "r", "r"], rows), [
        "neural-biencoder", "neural-biencoder-accuracy", "neural-static", "static-peers"]


def _neural_summary() -> tuple[str, list[str]]:
    retsim = _load("neural-retsim")["rows"]  # type: ignore[index]
    bienc = _load("neural-biencoder")["rows"]  # type: ignore[index]
    static = _load("neural-static")["rows"]  # type: ignore[index]
    peers = {(r["tool"], r["set"]): r["test_ari"] for r in _load("static-peers")["rows"]}  # type: ignore[index]

    def per_cpu(value: float) -> str:
        return _half_up(value, 1) if value < 100 else _half_up(value)

    int8 = retsim["neardup int8"]
    rows = [
        ["RETSim: unisim / ours float32 / ours int8",
         " / ".join(per_cpu(retsim[k]["docs_per_cpu_second"]) for k in ("unisim", "neardup float32", "neardup int8"))
         + f" ({int8['speedup_vs_unisim']:.2f}x unisim)", f"`{SOURCES['neural-retsim'].command}`"],
        ["bi-encoder at 128 / 64 / 32 tokens",
         " / ".join(per_cpu(bienc[k]["docs_per_cpu_second"]) for k, _, _ in _BIENCODER_ROWS[:3]),
         f"`{SOURCES['neural-biencoder'].command}`"],
        ["static (model2vec)", per_cpu(static["static-minilm, normalized text (the method's default)"]
                                       ["docs_per_cpu_second"]), f"`{SOURCES['neural-static'].command}`"],
        ["static vs semhash, same model, test ARI on reuters-news / indep-noisocr",
         " / ".join(f"{_half_up(peers['neardup static', s], 3)} vs {_half_up(peers['semhash', s], 3)}"
                    for s in ("reuters-news", "indep-noisocr")), f"`{SOURCES['static-peers'].command}`"],
    ]
    return _table(["what", "figure", "command"], ["l", "l", "l"], rows), [
        "neural-retsim", "neural-biencoder", "neural-static", "static-peers"]


_STATIC_TOOLS = {"semhash": "semhash 0.5.0 `self_deduplicate`", "neardup static": "neardup `--method static`"}
_STATIC_CANDIDATES = {"minhash (char-5, Jaccard 0.1; default)": "MinHash, char 5-grams, Jaccard 0.1 (default)",
                      "static (static-minilm, cosine 0.8, k 20)": "static-minilm, cosine 0.8, k 20"}


def _static_peers() -> tuple[str, list[str]]:
    rows = [[f"{r['set']} ({r['docs']:,})", _STATIC_TOOLS[r["tool"]], f"{r['threshold']:.2f}",
             _half_up(r["validation_ari"], 3), _half_up(r["test_ari"], 3), _half_up(r["docs_per_cpu_second"]),
             f"{_half_up(r['peak_rss_mb'])} MB"]
            for r in _load("static-peers")["rows"]]  # type: ignore[index]
    header = ["set (test docs)", "tool", "threshold", "validation ARI", "test ARI", "docs / CPU s", "peak RSS"]
    return _table(header, ["l", "l", *"r" * 5], rows), ["static-peers"]


def _static_rerank() -> tuple[str, list[str]]:
    rows = [[_STATIC_CANDIDATES[r["candidates"]], _half_up(r["candidate_pairs_per_doc"], 1),
             _pct(r["true_pairs_among_candidates"], 1).replace(".0%", "%"), f"{r['candidate_cpu_seconds']:.2f}",
             _half_up(r["validation_ari"], 3), _half_up(r["test_ari"], 3)]
            for r in _load("static-rerank")["rows"]]  # type: ignore[index]
    header = ["candidates", "pairs per doc", "true pairs among them", "candidate CPU s (1,179 docs)",
              "validation ARI", "test ARI"]
    return _table(header, ["l", *"r" * 5], rows), ["static-rerank"]


def _static_candidates() -> tuple[str, list[str]]:
    short = {"minhash (char-5, Jaccard 0.1; default)": "MinHash (default)",
             "static (static-minilm, cosine 0.8, k 20)": "static, cosine 0.8, k 20"}
    rows = [[r["set"], short[r["candidates"]], _half_up(r["candidate_pairs_per_doc"], 1),
             _pct(r["true_pairs_among_candidates"], 1)]
            for r in _load("static-rerank-candidates")["rows"]]  # type: ignore[index]
    return _table(["set", "candidates", "pairs per doc", "true pairs among them"], ["l", "l", "r", "r"], rows), [
        "static-rerank-candidates"]


def _rerank_run(source: str) -> dict:
    """The one data set of a ``rerank_cost.py compare`` file, with its name and documents."""
    data = _load(source)
    (key, result), = data["results"].items()  # type: ignore[index]
    name = "Reuters-21578" if key == "reuters" else "scale corpus"
    body = " (`--text-field body`)" if "--text-field" in data["argv"] else ""  # type: ignore[index]
    return {**result, "label": f"{name}, {result['documents']:,} documents{body}",
            "minhash": min(result["cpu_s"]["minhash"]), "rerank": min(result["cpu_s"]["rerank"])}


def _rerank_cost_first() -> tuple[str, list[str]]:
    rows, names = [], []
    for data in ("reuters", "scale-20k"):
        base, new = f"rerank-cost-base-{data}", f"rerank-cost-new-{data}"
        names += [base, new]
        b, n = _rerank_run(base), _rerank_run(new)
        rows.append([b["label"], f"{_half_up(b['rerank'], 1)} s", f"{_half_up(n['rerank'], 1)} s",
                     f"{_half_up(n['rerank_over_minhash'])}x"])
    header = ["data", "rerank CPU before", "after", "rerank / MinHash after"]
    return _table(header, ["l", "r", "r", "r"], rows), names


def _rerank_cost_cache() -> tuple[str, list[str]]:
    rows, names = [], []
    for data in ("scale-20k", "reuters"):
        base, new = f"rerank-cache-base-{data}", f"rerank-cache-new-{data}"
        names += [base, new]
        b, n = _rerank_run(base), _rerank_run(new)
        rows.append([n["label"], f"{_half_up(b['rerank'], 1)} s (MinHash {b['minhash']:.2f} s)",
                     f"{_half_up(n['rerank'], 1)} s (MinHash {n['minhash']:.2f} s)",
                     f"{_half_up(b['rerank_over_minhash'], 1)}x",
                     # MinHash's CPU moved with the load between the two runs (Reuters: 5.07 and
                     # 9.34 s), so the after ratio is also given against the before run's MinHash.
                     f"{_half_up(n['rerank_over_minhash'], 1)}x in its run; "
                     f"{_half_up(n['rerank'] / b['minhash'])}x against the before run's MinHash"])
    header = ["data", "rerank CPU before", "after", "rerank / MinHash before", "after"]
    return _table(header, ["l", *"r" * 4], rows), names


_TEMPLATE_ROWS = (
    ("templates", "minhash", "`minhash`"),
    ("templates-8fc84d2c", "rerank", "`rerank`, figures counted as sets (before, commit 8fc84d2c)"),
    ("templates-40b919e", None, "`rerank`, figures counted with their repeats (commit 40b919e)"),
    ("templates-name-test", None, "`rerank`, figures and names (the name test)"),
    ("templates-opening-names", None, "`rerank`, figures, names and the opening name (commit after 195ba66)"),
)


def _templates() -> tuple[str, list[str]]:
    rows = []
    for source, method, label in _TEMPLATE_ROWS:
        data = _load(source)
        r = data if method is None else data["rows"][method]  # type: ignore[index]
        rows.append([label, f"{r['ticker_mixing_clusters']} ({r['ticker_mixing_documents']})",
                     str(r["mixing_beyond_identical_clusters"]), str(r["largest_clusters"][0]),
                     f"{r['identical_body_groups_split']} of {r['identical_body_groups']}"])
    header = ["run", "clusters mixing tickers (stories)", "beyond identical bodies", "largest cluster",
              "identical-body groups split"]
    return _table(header, ["l", *"r" * 4], rows), [s for s, _, _ in _TEMPLATE_ROWS]


def _spine() -> tuple[str, list[str]]:
    rows, names = [], ["spine-minhash-10M", "spine-rerank-20k", "spine-rerank-100k"]
    for name in names:
        r = _load(name)
        before, after = (next(x for x in r["runs"] if x["checkout"] == c) for c in ("before", "after"))  # type: ignore[index]
        setting = " ".join([r["method"], *r["extra"]])  # type: ignore[index]
        label = f"`{setting}`{'' if r['extra'] else ' (defaults)'}, scale corpus (`{Path(SOURCES[name].path).name}`)"  # type: ignore[index]
        same = r["identical_clusters"] and before["clusters"] == after["clusters"]  # type: ignore[index]
        rows.append([label, _int(r["docs"]),  # type: ignore[index]
                     f"identical ({after['clusters']:,})" if same
                     else f"{before['clusters']:,} / {after['clusters']:,}",
                     f"{before['cpu_s']:.1f} / {after['cpu_s']:.1f}", f"{before['wall_s']:.1f} / {after['wall_s']:.1f}",
                     f"{_int(before['peak_rss_mb'])} / {_int(after['peak_rss_mb'])}"])
    header = ["run", "documents", "clusters", "CPU s before / after", "wall s before / after",
              "peak RSS MB before / after"]
    return _table(header, ["l", "r", "l", "r", "r", "r"], rows), names


_OCR_LANGUAGES = ("pl", "nl", "de", "cs", "fr", "en")


def _ocr(source: str) -> tuple[str, list[str]]:
    rows = [[method, _half_up(r["ari"], 3), *(_half_up(r["ari_by_language"][lang], 3) for lang in _OCR_LANGUAGES)]
            for method, r in _load(source).items()  # type: ignore[union-attr]
            if isinstance(r, dict) and "ari_by_language" in r]
    return _table(["method", "all", *_OCR_LANGUAGES], ["l", *"r" * (1 + len(_OCR_LANGUAGES))], rows), [source]


# -- the test suite: make test timed in fresh clones (scripts/time_make_test.py) ---------

#: The timed runs of the test-suite table, in row order (SOURCES names).
MAKE_TEST_RUNS: tuple[str, ...] = ("make-test-1", "make-test-2", "make-test-3", "make-test-fast-1")
_MAKE_TEST_HEADER = "# neardup make-test timing v1"
_MAKE_TEST_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?)")


def _minutes(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


def _make_test_runs() -> tuple[str, list[str]]:
    rows = []
    for name in MAKE_TEST_RUNS:
        lines = _text(name).splitlines()
        if not lines or lines[0] != _MAKE_TEST_HEADER:
            raise SystemExit(f"docs_tables: {SOURCES[name].path} was not written by "
                             "scripts/time_make_test.py")
        about = lines[1].lstrip("# ").split("; ")
        commit = about[0].removeprefix("commit ")
        target = about[1].split(" in a fresh clone")[0].removeprefix("make ")
        shared = about[2].removeprefix("../shared ").split(" ")[0]
        figures = dict(line.split(" ", 1) for line in lines[-2:])
        summary = next((line for line in reversed(lines) if " in " in line and "passed" in line), "")
        counts = ", ".join(f"{int(n):,} {word}" for n, word in _MAKE_TEST_COUNTS.findall(summary.split(" in ")[0]))
        pytest_seconds = figures["pytest"]
        rows.append([f"`make {target}`", f"`{commit}`", shared, counts or "—",
                     "—" if pytest_seconds == "none" else _minutes(float(pytest_seconds)),
                     _minutes(float(figures["whole"]))])
    header = ["command", "commit", "`../shared`", "tests", "pytest (m:ss)", "whole command (m:ss)"]
    return _table(header, ["l", "l", "l", "l", "r", "r"], rows), list(MAKE_TEST_RUNS)


RENDERERS.update({
    "spans-100k": _spans_100k,
    "spans-1M": _spans_1m,
    "spans-engines": _spans_engines,
    "decontaminate-100k": _decontaminate_100k,
    "decontaminate-1M": _decontaminate_1m,
    "decontaminate-trace": _decontaminate_trace,
    "storage": _storage,
    "neural-retsim": _neural_retsim,
    "neural-biencoder": _neural_biencoder,
    "neural-summary": _neural_summary,
    "static-peers": _static_peers,
    "static-rerank": _static_rerank,
    "static-rerank-candidates": _static_candidates,
    "rerank-cost-first-round": _rerank_cost_first,
    "rerank-cost-cache": _rerank_cost_cache,
    "reuters-templates": _templates,
    "spine-before-after": _spine,
    "ocr-validation": lambda: _ocr("ocr-validation"),
    "ocr-test": lambda: _ocr("ocr-test"),
    "make-test-runs": _make_test_runs,
})


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
