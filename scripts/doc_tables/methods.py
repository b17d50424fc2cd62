"""The method tables: what each `neardup dedup` setting scores on the benchmark sets and how
fast it runs (docs/choosing-a-method.md, README.md), the method comparisons, threshold
calibration (docs/calibrating-and-training.md) and the demo corpus (README.md)."""

from __future__ import annotations

from dataclasses import dataclass

from doc_tables.formatting import Renderer, fixed, table, whole
from doc_tables.results import SET_HEADERS, SETS, load_json, scale_row, transfer_cell


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
              "best accuracy on each of these ten sets: noisy copies (OCR, abridged), every script tried; "
              "what the default, `--method auto`, runs on inputs of up to 10,000 documents"),
    MethodRow("`minhash` (`--profile auto`)", "auto:minhash",
              Speed("scale-100k", "minhash"),
              "fast: word or character shingles as the input's first documents look clean or "
              "noisy (the scale corpus looks clean); what `--method auto` runs on larger inputs"),
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


# The rows of the accuracy tables, in order: transfer.json labels that are current settings.
ACCURACY_ROWS = ("exact", "ngram", "ngram char-5", "minhash", "minhash char-5", "simhash", "wminhash",
                 "spotsigs", "sanderson", "retsim (off-the-shelf)", "retsim (retsim-news)",
                 "retsim-partial (retsim-news)", "biencoder (biencoder-news)", "rerank (verifier)",
                 "rerank (verifier), Leiden 0.4")


def _profile_auto_aris(method: str) -> list[float | None]:
    """Test ARI per set of ``method`` with ``--profile auto``, as it ran on each test split."""
    rows = load_json("noisy-profile")["rows"]  # type: ignore[index]
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
            defaults = [transfer_cell(method.transfer_label, s) for s in SETS]
            aris = [c["default"]["test_ari"] if c else None for c in defaults]
        speed = docs_s = rss = ""
        if method.speed is not None:
            names.append(method.speed.source)
            r = scale_row(method.speed.source, method.speed.method, method.speed.tool)
            docs_s = whole(r["docs"] / r["wall_s"])
            rss = whole(r["peak_rss_mb"])
            speed = f"{whole(r['docs'])}"
        if full:
            rows.append([method.name, method.when, *(fixed(a) for a in aris), docs_s, rss, speed])
        else:
            known = [a for a in aris if a is not None]
            low = fixed(min(known)) if known else ""
            rows.append([method.name, fixed(aris[0]), fixed(aris[4]), low, docs_s, rss, method.when])
    if full:
        header = ["method", "when to use it", *SET_HEADERS, "docs/s", "peak RSS (MB)", "at documents"]
        align = ["l", "l", *"r" * len(SETS), "r", "r", "r"]
    else:
        header = ["method", "reuters-news", "indep-noisocr (light OCR noise)", "worst of 10 sets",
                  "docs/s", "peak RSS (MB)", "when to use it"]
        align = ["l", "r", "r", "r", "r", "r", "l"]
    return table(header, align, rows), names


def _accuracy(kind: str) -> tuple[str, list[str]]:
    rows = []
    for label in ACCURACY_ROWS:
        cells = []
        for set_name in SETS:
            c = transfer_cell(label, set_name)
            if c is None:
                cells.append("")
            elif kind == "default":
                cells.append(fixed(c["default"]["test_ari"]))
            elif kind == "tuned":
                values = c["tuned"]["values"]
                chosen = ", ".join(str(v) for v in values.values()) or "—"
                cells.append(f"{fixed(c['tuned']['test_ari'])} ({chosen})")
            else:  # default minus tuned
                cells.append(f"{c['default']['test_ari'] - c['tuned']['test_ari']:+.3f}")
        rows.append([label, *cells])
    return table(["method", *SETS], ["l", *"r" * len(SETS)], rows), ["transfer"]


def _comparison(source: str) -> tuple[str, list[str]]:
    rows = []
    for entry in load_json(source):  # type: ignore[union-attr]
        test = entry["test"]
        chosen = ", ".join(f"{k}={v}" for k, v in entry["chosen"].items()) or "—"
        rows.append([entry["label"], entry["clustering"], chosen, fixed(entry["validation_ari"]),
                     f"**{fixed(test['ari'])}**", fixed(test["precision"]), fixed(test["recall"]),
                     fixed(test["f1"]), fixed(test["seconds"], 1)])
    header = ["method", "clustering", "chosen on validation", "validation ARI", "test ARI",
              "test precision", "test recall", "test F1", "test time (s)"]
    return table(header, ["l", "l", "l", *"r" * 6], rows), [source]


def _calibrate_labels() -> tuple[str, list[str]]:
    entries = [*load_json("calibrate-labels"), *load_json("calibrate-labels-adversarial")]  # type: ignore[misc]
    budgets = sorted({e["labels"] for e in entries})
    cells: dict[tuple[str, str], dict[int, dict]] = {}
    for e in entries:
        cells.setdefault((e["set"], e["method"]), {})[e["labels"]] = e
    rows = []
    for (set_name, method), by_budget in cells.items():
        first = next(iter(by_budget.values()))
        default = f"{fixed(first['default']['ari'])} ({first['default']['threshold']})"
        row = [set_name, method, default]
        for b in budgets:
            e = by_budget.get(b)
            if e is None:
                row.append("")
                continue
            rule, best = e["rule"]["ari"], e["ari"]
            row.append(fixed(rule) if abs(rule - best) < 5e-4 else f"{fixed(rule)} ({fixed(best)})")
        rows.append(row)
    header = ["set", "method", "default (no labels)", *(f"{b} labels" for b in budgets)]
    return table(header, ["l", "l", *"r" * (1 + len(budgets))], rows), [
        "calibrate-labels", "calibrate-labels-adversarial"]


def _demo_accuracy() -> tuple[str, list[str]]:
    data = load_json("demo-accuracy")
    rows = [[r["setting"], fixed(r["ari"]), fixed(r["precision"]), fixed(r["recall"]),
             fixed(r["cpu_seconds"], 1)]
            for r in data["rows"]]  # type: ignore[index]
    header = ["command on the demo corpus", "ARI", "pairwise precision", "pairwise recall",
              "CPU (s)"]
    return table(header, ["l", *"r" * 4], rows), ["demo-accuracy"]


TABLES: dict[str, Renderer] = {
    "methods": lambda: _methods_table(full=True),
    "methods-summary": lambda: _methods_table(full=False),
    "accuracy-default": lambda: _accuracy("default"),
    "accuracy-tuned": lambda: _accuracy("tuned"),
    "accuracy-default-minus-tuned": lambda: _accuracy("gap"),
    "method-comparison": lambda: _comparison("comparison"),
    "method-comparison-window48h": lambda: _comparison("comparison-window48h"),
    "calibrate-labels": _calibrate_labels,
    "demo-accuracy": _demo_accuracy,
}
