"""rerank: its cost per document against MinHash, where the CPU goes and what each option
trades (docs/rerank-cost.md), and the earlier cost and template rounds of the benchmark log."""

from __future__ import annotations

import statistics

from doc_tables.formatting import Renderer, fixed, table, whole
from doc_tables.results import SETS, load_json, load_json_dir, scale_row, transfer_cell
from doc_tables.sources import SOURCES


def _rerank_data_label(data: str, documents: int) -> str:
    """A rerank_cost.py data name as the reader knows it."""
    if data == "reuters":
        return "Reuters-21578"
    if data.startswith("scale:"):
        return f"scale corpus, {documents:,} documents"
    return f"{data} validation" if data.startswith("indep-") else data


def _rerank_cpu(source: str) -> dict[str, tuple[int, dict[str, float]]]:
    """Each data set's documents and its median CPU seconds per run label."""
    results = load_json(source)["results"]  # type: ignore[index]
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
                     fixed(1000 * cpu["rerank-before"] / documents, 2),
                     fixed(1000 * cpu["rerank"] / documents, 2),
                     f"{cpu['rerank-before'] / cpu['rerank']:.1f}x",
                     f"{cpu['rerank-before'] / cpu['minhash-before']:.1f}x",
                     f"{cpu['rerank'] / cpu['minhash']:.1f}x"])
    header = ["data", "rerank CPU ms a document, before", "after", "less CPU",
              "rerank / MinHash, before", "after"]
    return table(header, ["l", *"r" * 5], rows), ["rerank-before-after"]


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
            rows.append([_rerank_data_label(data, documents), whole(documents),
                         fixed(cpu["minhash"], 2), fixed(cpu["rerank"], 2),
                         fixed(1000 * cpu["rerank"] / documents, 2),
                         f"{cpu['rerank'] / cpu['minhash']:.1f}x"])
    header = ["data", "documents", "MinHash CPU s", "rerank CPU s", "rerank CPU ms a document",
              "rerank / MinHash"]
    return table(header, ["l", *"r" * 5], rows), list(RERANK_STANDS)


def _rerank_by_size() -> tuple[str, list[str]]:
    """rerank against MinHash on the scale corpus at growing sizes, and what the default
    method (``auto``) runs at each size."""
    from neardup.method_choice import LARGE_INPUT_METHOD, RERANK_MAX_DOCS, SMALL_INPUT_METHOD

    rows = []
    for _, (documents, cpu) in sorted(_rerank_cpu("rerank-by-size").items(), key=lambda x: x[1][0]):
        rows.append([whole(documents), fixed(cpu["minhash"], 2), fixed(cpu["rerank"], 2),
                     f"{cpu['rerank'] / cpu['minhash']:.1f}x",
                     f"`{SMALL_INPUT_METHOD if documents <= RERANK_MAX_DOCS else LARGE_INPUT_METHOD}`"])
    header = ["scale corpus documents", "MinHash CPU s", "rerank CPU s", "rerank / MinHash",
              "`--method auto` runs"]
    return table(header, [*"r" * 4, "l"], rows), ["rerank-by-size"]


def _rerank_profile() -> tuple[str, list[str]]:
    results = load_json("rerank-profile")["results"]  # type: ignore[index]
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
            cells += [fixed(seconds, 1), "" if seconds is None else f"{100 * seconds / row['cpu_s']:.0f}%"]
        rows.append(cells)
    rows.append(["**whole command, under the profiler**",
                 *(c for row in results.values() for c in (f"**{fixed(row['cpu_s'], 1)}**", "100%"))])
    header = ["section"]
    for data, row in results.items():
        label = _rerank_data_label(data, row["documents"])
        header += [f"{label}: CPU s", "share"]
    return table(header, ["l", *"r" * (len(header) - 1)], rows), ["rerank-profile"]


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
        for name, row in load_json(source)["rows"].items():  # type: ignore[index]
            changes[name + suffix] = row[variant]["ari"] - row["default"]["ari"]
    return changes


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
    shipped = load_json("rerank-verifier-ablation")["variants"]["shipped verifier-news"]["leiden"]  # type: ignore[index]
    fast = next(iter(load_json("rerank-verifier-fast-ship")["variants"].values()))["leiden"]  # type: ignore[index]
    changes = {s: fast["at_maximin"][s] - shipped["at_default"][s] for s in SETS}
    rows.append(["`--param model=verifier-fast`",
                 f"a verifier without `align_partial`, `align_ratio` over 1,000 characters, threshold {fast['maximin_threshold']}",
                 ratios, _rerank_ari_changes(changes), "[0040](decisions/0040-verifier-fast-option.md)"])

    names.append("rerank-candidate-threshold")
    evals = load_json_dir("rerank-candidate-threshold")
    changes = {stem.removesuffix("-0.15"): evals[stem]["ari"] - evals[stem.replace("-0.15", "-0.1")]["ari"]
               for stem in evals if stem.endswith("-0.15")}
    rows.append(["`--param 'candidate_params={\"threshold\": 0.15}'`",
                 "a stricter candidate check (0.15 instead of 0.1), with its banding",
                 "not measured as a whole command", _rerank_ari_changes(changes),
                 "[0026](decisions/0026-rerank-cost-routes.md)"])

    names += ["scale-100k-rerank", "rerank-components-100k", "transfer"]
    leiden = scale_row("scale-100k-rerank", "rerank")
    components = scale_row("rerank-components-100k", "rerank")
    changes = {}
    for s in SETS:
        c, l = transfer_cell("rerank (verifier)", s), transfer_cell("rerank (verifier), Leiden 0.4", s)
        if c is not None and l is not None:
            changes[s] = c["default"]["validation_ari"] - l["default"]["validation_ari"]
    rows.append(["`--cluster components`",
                 "connected components instead of Leiden: edges between documents already joined are not scored",
                 f"scale corpus, {leiden['docs']:,} documents: {fixed(leiden['cpu_s'], 1)} → "
                 f"{fixed(components['cpu_s'], 1)} CPU s (two runs, not one invocation)",
                 _rerank_ari_changes(changes), "[0007](decisions/0007-leiden-for-the-verifier.md)"])

    header = ["option", "what it changes", "rerank / MinHash CPU, default → option",
              "validation ARI, option − default: lowest to highest", "record"]
    return table(header, ["l", "l", "l", "l", "l"], rows), names


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
        data = load_json(source)
        r = data if method is None else data["rows"][method]  # type: ignore[index]
        rows.append([label, f"{r['ticker_mixing_clusters']} ({r['ticker_mixing_documents']})",
                     str(r["mixing_beyond_identical_clusters"]), str(r["largest_clusters"][0]),
                     f"{r['identical_body_groups_split']} of {r['identical_body_groups']}"])
    header = ["run", "clusters mixing tickers (stories)", "beyond identical bodies", "largest cluster",
              "identical-body groups split"]
    return table(header, ["l", *"r" * 4], rows), [s for s, _, _ in _TEMPLATE_ROWS]


TABLES: dict[str, Renderer] = {
    "rerank-stands": _rerank_stands,
    "rerank-by-size": _rerank_by_size,
    "rerank-before-after": _rerank_before_after,
    "rerank-profile": _rerank_profile,
    "rerank-options": _rerank_options,
    "reuters-templates": _templates,
}
