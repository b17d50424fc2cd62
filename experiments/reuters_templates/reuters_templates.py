"""Templates on real wire copy: does a method keep different companies' notices apart
on Reuters-21578, while every group of identical bodies stays in one cluster?

Reuters-21578 carries no near-duplicate labels, but its headlines name the company: a
stock ticker in angle brackets (``BELL ATLANTIC CORP <BEL> SETS QTLY DIVIDEND``; 8,906 of
the 21,578 titles hold one). The bodies of recurring notices (dividends, earnings) share
one template and rarely name the company, so a method that merges templates puts
documents of different tickers into one cluster. The check runs ``neardup.dedup`` over the
stories' bodies (``text_field="body"``, ``date_field="date"``, ``time_window_hours=48``,
as ``neardup dedup --text-field body --date-field date --time-window 48``) and reports:

* **ticker-mixing clusters**: clusters holding two documents whose titles carry tickers
  and share none (count, documents, the worst few). Two companies' identical bodies
  (``Qtly div nine cts vs nine cts prior / Pay July 31 / Record June 30``) are always
  linked (identical texts are), so the clusters whose mixing survives once the members
  with identical bodies are counted as one (``mixing_beyond_identical``) are the ones a
  template guard can fix;
* **largest cluster** (and the five largest);
* **identical-body groups**: stories whose stripped bodies are equal, and how many of
  these groups end split over clusters (the copy side: should be 0).

The copy side on labelled data: ``--sets validation`` (or ``test``) runs ``--method rerank``
at its defaults, with and without ``template_guard``, on that split of every labelled set
(data/: reuters-*, indep-*, multi-*) and reports ARI (neardup.eval.evaluate, one
sketch per set shared by both variants).

Usage::

    python -m experiments.reuters_templates.reuters_templates                       # rerank, minhash, rerank + components
    python -m experiments.reuters_templates.reuters_templates --months 1987-06      # a subset, for iterating
    python -m experiments.reuters_templates.reuters_templates --runs rerank --param template_guard=false
    python -m experiments.reuters_templates.reuters_templates --sets validation     # labelled sets, guard on and off
    python -m experiments.reuters_templates.reuters_templates --sets validation --variant 'default:' --variant 'all:low_partners=null' --suffix screen

Raw results: ``experiments/reuters_templates/results/reuters_templates[_<suffix>].json`` and
``experiments/reuters_templates/results/reuters_templates_sets_<split>.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

import neardup
from benchmarks.harness import machine, results_saver, reuters_files
from neardup.io import ReaderConfig, iter_records

save = results_saver(Path(__file__).resolve().parent / "results")

#: A ticker in a headline: ``<BEL>``, ``<RDS.A>``, ``<BRK-A>``.
TICKER = re.compile(r"<([A-Z][A-Z0-9.&/-]{0,9})>")
#: The runs reported (name: method and parameters).
RUNS = {
    "rerank": {"method": "rerank"},
    "minhash": {"method": "minhash"},
    "rerank, components": {"method": "rerank", "cluster": "components"},
}
WINDOW_HOURS = 48.0
#: The labelled sets of data/ (experiments/verifier_transfer/verifier_transfer.py's list).
SETS = ["reuters-news", "reuters-adversarial", "indep-nlpaug", "indep-augly", "indep-noisocr",
        "indep-confusables", "multi-latin", "multi-cyrillic", "multi-greek", "multi-cjk",
        "multi-ocr"]


def load_records(months: list[str] | None) -> list[dict]:
    """Reuters stories with a non-empty body (``id``, ``body``, ``date``, ``title``),
    optionally those dated in ``months`` (``"1987-03"``)."""
    out = []
    for r in iter_records(reuters_files(), ReaderConfig()):
        body = r.get("body") or ""
        if not body.strip():
            continue
        if months and not any((r.get("date") or "").startswith(m) for m in months):
            continue
        out.append({"id": r["id"], "body": body, "date": r.get("date"),
                    "title": r.get("title") or ""})
    return out


def tickers_of(titles: list[str]) -> list[frozenset[str]]:
    return [frozenset(TICKER.findall(t)) for t in titles]


def _mixes(members: list[int], tickers: list[frozenset[str]]) -> bool:
    """Two members with tickers and none in common."""
    sets = {tickers[m] for m in members if tickers[m]}
    return any(not (a & b) for a, b in itertools.combinations(sets, 2))


def check(records: list[dict], labels: np.ndarray, *, worst: int = 5) -> dict:
    """The ticker and identical-body figures of one clustering (``labels`` aligned with
    ``records``)."""
    tickers = tickers_of([r["title"] for r in records])
    bodies = [r["body"].strip() for r in records]
    clusters: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(labels.tolist()):
        clusters[c].append(i)
    mixing, beyond = [], []
    for members in clusters.values():
        if len(members) < 2 or not _mixes(members, tickers):
            continue
        mixing.append(members)
        # One representative per identical body, its tickers the union of the group's:
        # mixing that identical texts force is not counted here.
        by_body: dict[str, set[str]] = defaultdict(set)
        for m in members:
            by_body[bodies[m]] |= tickers[m]
        merged = [frozenset(s) for s in by_body.values()]
        if _mixes(list(range(len(merged))), merged):
            beyond.append(members)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, b in enumerate(bodies):
        groups[b].append(i)
    same = [g for g in groups.values() if len(g) > 1]
    split = [g for g in same if len(set(labels[g].tolist())) > 1]
    sizes = np.bincount(labels)

    def show(members: list[int]) -> dict:
        distinct = sorted({t for m in members for t in tickers[m]})
        return {"size": len(members), "tickers": len(distinct),
                "ids": [records[m]["id"] for m in members[:12]],
                "titles": [records[m]["title"] for m in members[:4]],
                "bodies": [bodies[m][:90] for m in members[:4]]}

    rank = sorted(beyond or mixing, key=lambda ms: -len({t for m in ms for t in tickers[m]}))
    return {
        "documents": len(records),
        "clusters": int(sizes.size),
        "largest_clusters": sorted(sizes.tolist(), reverse=True)[:5],
        "ticker_mixing_clusters": len(mixing),
        "ticker_mixing_documents": int(sum(map(len, mixing))),
        "mixing_beyond_identical_clusters": len(beyond),
        "mixing_beyond_identical_documents": int(sum(map(len, beyond))),
        "identical_body_groups": len(same),
        "identical_body_groups_split": len(split),
        "split_groups": [[records[m]["id"] for m in g] for g in split[:10]],
        "worst": [show(ms) for ms in rank[:worst]],
    }


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the engine's workers)."""
    import resource

    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                     resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_one(records: list[dict], method: str, params: dict) -> tuple[np.ndarray, float]:
    cpu = _cpu()
    result = neardup.dedup(records, method, text_field="body", id_field="id",
                           date_field="date", time_window_hours=WINDOW_HOURS, **params)
    return np.asarray(result.clusters), _cpu() - cpu


#: The variants :func:`labelled_sets` compares by default: the template guard off and on.
GUARD_VARIANTS = {"guard=False": {"template_guard": False}, "guard=True": {"template_guard": True}}


def labelled_sets(split: str, variants: dict[str, dict] | None = None) -> dict:
    """ARI of ``--method rerank`` at its defaults with and without the template guard on
    ``split`` of every labelled set that has it (per language where the set has
    several), and the guard's firings
    (:func:`guard_firings`); or, with ``variants`` (label: parameters), those variants
    instead of the guard's (``change``: the last one's ARI minus the first one's)."""
    from pathlib import Path

    from experiments.verifier_cost.pairs import languages
    from neardup.eval import load_labeled
    from neardup.eval.evaluate import evaluate

    root = Path(__file__).resolve().parents[2] / "data"
    guard = variants is None
    variants = GUARD_VARIANTS if guard else variants
    rows = {}
    for name in SETS:
        path = root / name / f"{split}.jsonl.gz"
        if not path.exists():  # language_validation: the multilingual sets only
            continue
        corpus = load_labeled([path])
        # Per language too, where the set says (the multilingual sets).
        lang = languages(path)
        groups = lang if (lang != "").all() and len(set(lang)) > 1 else None
        sketches: dict = {}
        row = {"documents": len(corpus)}
        for label, params in variants.items():
            cpu = time.process_time()
            report = evaluate(corpus, "rerank", params=params, sketch_cache=sketches,
                              groups=groups)
            row[label] = {"params": params, "ari": round(report["ari"], 4),
                          "precision": round(report["precision"], 4),
                          "recall": round(report["recall"], 4),
                          "clusters": report["n_pred_clusters"],
                          "cpu_seconds": round(time.process_time() - cpu, 1)}
            if groups is not None:
                row[label]["ari_by_language"] = {
                    name: round(m["ari"], 4) for name, m in report["groups"].items()}
        first, last = list(variants)[0], list(variants)[-1]
        row["change"] = round(row[last]["ari"] - row[first]["ari"], 4)
        if guard:
            row["guard_firings"] = guard_firings(next(iter(sketches.values())), corpus.clusters)
        rows[name] = row
        print(name, row, flush=True)
    return rows


def guard_firings(corpus_sketch, true_labels) -> dict:
    """The pairs rerank's verifier accepts (its default threshold) that the template guard
    turns down, split by the labels: true copies (what the guard costs) and pairs of
    different clusters (what it saves)."""
    from neardup.methods.rerank import RerankMethod

    method = RerankMethod()
    guarded = method.scored_candidates(corpus_sketch.sketch, corpus_sketch.dates)
    plain = RerankMethod(template_guard=False).scored_candidates(corpus_sketch.sketch,
                                                                 corpus_sketch.dates)
    fired = (plain.score >= method.threshold) & (guarded.score < method.threshold)
    labels = np.asarray(true_labels)
    same = labels[plain.left] == labels[plain.right]
    return {"accepted_pairs": int((plain.score >= method.threshold).sum()),
            "true_copies_turned_down": int((fired & same).sum()),
            "other_pairs_turned_down": int((fired & ~same).sum())}


def _parse(values: list[str]) -> dict:
    out = {}
    for v in values:
        key, _, raw = v.partition("=")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--months", nargs="*", help="only stories dated in these months (1987-03)")
    parser.add_argument("--runs", nargs="*", default=list(RUNS), choices=list(RUNS))
    parser.add_argument("--param", action="append", default=[],
                        help="extra method parameter for every run, key=value (JSON value)")
    parser.add_argument("--suffix", default="", help="results file suffix")
    parser.add_argument("--sets", choices=["validation", "language_validation", "test"],
                        help="instead: ARI on this split of every labelled set, guard on and off")
    parser.add_argument("--variant", action="append", default=[],
                        help="--sets: compare these rerank variants instead of the guard's, "
                             "LABEL:key=value[;key=value] (JSON values; LABEL: alone = defaults)")
    args = parser.parse_args()
    if args.sets:
        variants = {label: _parse([v for v in params.split(";") if v])
                    for label, _, params in (v.partition(":") for v in args.variant)} or None
        path = save(f"reuters_templates_sets_{args.sets}" + (f"_{args.suffix}" if args.suffix else ""),
                    {"machine": machine(), "split": args.sets,
                     "rows": labelled_sets(args.sets, variants)})
        print(f"wrote {path}")
        return
    records = load_records(args.months)
    extra = _parse(args.param)
    rows = {}
    for name in args.runs:
        spec = dict(RUNS[name])
        method = spec.pop("method")
        params = {**spec, **(extra if method == "rerank" else {})}
        labels, cpu = run_one(records, method, params)
        rows[name] = {"params": params, **check(records, labels), "cpu_seconds": round(cpu, 1)}
        r = rows[name]
        print(f"{name}: largest {r['largest_clusters']}, ticker-mixing clusters "
              f"{r['ticker_mixing_clusters']} ({r['ticker_mixing_documents']} docs), beyond "
              f"identical {r['mixing_beyond_identical_clusters']} "
              f"({r['mixing_beyond_identical_documents']} docs), identical-body groups split "
              f"{r['identical_body_groups_split']} of {r['identical_body_groups']}, "
              f"{cpu:.0f} CPU s", flush=True)
    name = "reuters_templates" + (f"_{args.suffix}" if args.suffix else "")
    path = save(name, {"machine": machine(), "months": args.months, "window_hours": WINDOW_HOURS,
                       "extra_params": extra, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
