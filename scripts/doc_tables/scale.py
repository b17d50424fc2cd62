"""Runs at scale: the scale corpora and their peers, MinHash signatures, encoders and Ray
(docs/scale.md), the index (docs/index-and-service.md), the HTML report (docs/report.md),
storage back ends (docs/storage.md) and the before/after runs of the benchmark log."""

from __future__ import annotations

from pathlib import Path

from doc_tables.formatting import Renderer, fixed, half_up, table, whole
from doc_tables.results import load_json, scale_row
from doc_tables.sources import SOURCES


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
        r = scale_row(source, method)
        rows.append([whole(r["docs"]), f"`{method}` {note}".strip(), fixed(r["cpu_s"], 1),
                     fixed(r["wall_s"], 1), whole(r["docs"] / r["wall_s"]), whole(r["peak_rss_mb"]),
                     fixed(r.get("ari_vs_truth"), 5)])
    header = ["documents", "method", "CPU s", "wall s", "docs/s (wall)", "peak RSS (MB)",
              "ARI against the corpus's truth"]
    return table(header, ["r", "l", "r", "r", "r", "r", "r"], rows), [s for s, _, _ in SCALE_ROWS]


def _peers() -> tuple[str, list[str]]:
    rows = []
    for source, tool in (("scale-100k", "neardup"), ("scale-100k", "rensa"),
                         ("scale-100k", "datasketch"), ("scale-100k-datatrove", "datatrove")):
        r = scale_row(source, "minhash", tool)
        rows.append([tool, fixed(r["cpu_s"], 1), fixed(r["wall_s"], 1), whole(r["peak_rss_mb"]),
                     fixed(r.get("ari_vs_truth"), 5)])
    header = ["MinHash + LSH at 100,000 documents", "CPU s", "wall s", "peak RSS (MB)",
              "ARI against the corpus's truth"]
    return table(header, ["l", "r", "r", "r", "r"], rows), ["scale-100k", "scale-100k-datatrove"]


def _signatures() -> tuple[str, list[str]]:
    data = load_json("minhash-signatures")
    rows_in = data["rows"]  # type: ignore[index]
    ours = rows_in["neardup"]["docs_per_s"]
    rows = [[name, whole(r["docs_per_s"]), f"{ours / r['docs_per_s']:.1f}x"]
            for name, r in sorted(rows_in.items(), key=lambda kv: -kv[1]["docs_per_s"])]
    header = [f"library ({data['docs']:,} stories, 128 permutations)", "docs/s",  # type: ignore[index]
              "neardup speed-up"]
    return table(header, ["l", "r", "r"], rows), ["minhash-signatures"]


def _embedders() -> tuple[str, list[str]]:
    rows = [[r["encoder"], fixed(r["docs_per_s"], 1), whole(r["peak_rss_mb"])]
            for r in load_json("embedders")["rows"]]  # type: ignore[index]
    return table(["encoder (CPU, 2 cores)", "docs/s", "peak RSS (MB)"], ["l", "r", "r"], rows), ["embedders"]


def _ray() -> tuple[str, list[str]]:
    rows = []
    for source in ("ray-1M", "ray-1M-2"):
        for r in load_json(source)["rows"]:  # type: ignore[index]
            rows.append([Path(SOURCES[source].path).stem, r["config"], fixed(r["cpu_s_sampled"], 1),
                         fixed(r["wall_s"], 1), f"{r['cpu_ratio_vs_local']:.2f}",
                         f"{r['wall_ratio_vs_local']:.2f}", whole(r["peak_rss_mb_tree"]),
                         "yes" if r.get("same_clusters_as_local", r["config"] == "local") else "no"])
    header = ["run", "engine", "CPU s", "wall s", "CPU / local", "wall / local",
              "peak RSS, whole tree (MB)", "same clusters as local"]
    return table(header, ["l", "l", *"r" * 5, "l"], rows), ["ray-1M", "ray-1M-2"]


def _index() -> tuple[str, list[str]]:
    data = load_json("index-10M")
    build, add, query = data["build"], data["add"], data["query"]  # type: ignore[index]
    rows = [
        ["bulk build (`index add --bulk`)", whole(build["docs"]), fixed(build["seconds"], 1),
         whole(build["docs_per_s"]), whole(build["peak_rss_mib"]), f"{build['disk_gib']:.1f} GiB on disk"],
        ["add to the built index (`index add`)", whole(add["docs"]), fixed(add["seconds"], 1),
         whole(add["docs_per_s"]), whole(add["peak_rss_mib"]), f"{add['joined']:,} joined a cluster"],
        ["query, one document per request", whole(query["queries"]), "", "",
         whole(query["peak_rss_mib"]), f"p50 {query['p50_ms']} ms, p99 {query['p99_ms']} ms"],
        ["query, batches of 1,000", "", "", whole(query["batch_1000_docs_per_s"]), "", ""],
    ]
    header = ["minhash index of 10M documents", "documents", "wall s", "docs/s", "peak RSS (MiB)", "notes"]
    return table(header, ["l", "r", "r", "r", "r", "l"], rows), ["index-10M"]


def _report() -> tuple[str, list[str]]:
    data = load_json("report-1M")
    build, browser = data["build"], data["browser"]  # type: ignore[index]
    rows = [[whole(data["docs"]), whole(data["pairs"]), fixed(build["seconds"], 1),  # type: ignore[index]
             whole(build["peak_rss_mb"]), f"{build['file_mb']:.1f}",
             fixed(browser["load_seconds_best_of_3"], 2), fixed(browser["search_seconds"], 2)]]
    header = ["documents", "pairs", "build s", "build peak RSS (MB)", "page (MB)",
              "Chromium load s (best of 3)", "search s"]
    return table(header, ["r"] * 7, rows), ["report-1M"]


def _storage() -> tuple[str, list[str]]:
    data = load_json("storage")
    runs, same = data["runs"], data["identical_clusters"]  # type: ignore[index]
    labels = {"local file -> local outputs": ("local JSON Lines -> local files", None),
              "s3 -> s3 outputs": ("`s3://` JSON Lines -> `s3://` outputs", "s3"),
              "saved dataset -> local outputs": ("saved Hugging Face dataset (Arrow) -> local files", "saved dataset")}
    rows = []
    for key, run in runs.items():
        label, check = labels[key]
        clusters = "reference" if check is None else ("identical" if same[check] else "differ")
        rows.append([label, f"{half_up(run['seconds'], 1)} s", f"{half_up(run['peak_rss_mib'])} MiB", clusters])
    return table(["input -> outputs", "wall time", "peak memory", "clusters"], ["l", "r", "r", "l"], rows), [
        "storage"]


def _spine() -> tuple[str, list[str]]:
    rows, names = [], ["spine-minhash-10M", "spine-rerank-20k", "spine-rerank-100k"]
    for name in names:
        r = load_json(name)
        before, after = (next(x for x in r["runs"] if x["checkout"] == c) for c in ("before", "after"))  # type: ignore[index]
        setting = " ".join([r["method"], *r["extra"]])  # type: ignore[index]
        label = f"`{setting}`{'' if r['extra'] else ' (defaults)'}, scale corpus (`{Path(SOURCES[name].path).name}`)"  # type: ignore[index]
        same = r["identical_clusters"] and before["clusters"] == after["clusters"]  # type: ignore[index]
        rows.append([label, whole(r["docs"]),  # type: ignore[index]
                     f"identical ({after['clusters']:,})" if same
                     else f"{before['clusters']:,} / {after['clusters']:,}",
                     f"{before['cpu_s']:.1f} / {after['cpu_s']:.1f}", f"{before['wall_s']:.1f} / {after['wall_s']:.1f}",
                     f"{whole(before['peak_rss_mb'])} / {whole(after['peak_rss_mb'])}"])
    header = ["run", "documents", "clusters", "CPU s before / after", "wall s before / after",
              "peak RSS MB before / after"]
    return table(header, ["l", "r", "l", "r", "r", "r"], rows), names


def _spine_code_lines() -> tuple[str, list[str]]:
    data = load_json("spine-code-lines")
    before, after = data["results"]  # type: ignore[index]

    def largest(files: dict[str, int]) -> str:
        if len(files) < 2:
            return ""
        name, lines = max(files.items(), key=lambda kv: kv[1])
        return f"`{name.removeprefix('neardup/')}` {whole(lines)}"

    rows = [[group, whole(before["groups"][group]["lines"]), whole(counted["lines"]),
             largest(before["groups"][group]["files"]), largest(counted["files"])]
            for group, counted in after["groups"].items()]
    rows.append(["total", whole(before["total"]), whole(after["total"]), "", ""])
    header = ["modules", f"`{before['commit']}`", f"`{after['commit']}`", "largest module before", "after"]
    return table(header, ["l", "r", "r", "l", "l"], rows), ["spine-code-lines"]


def _parquet_out() -> tuple[str, list[str]]:
    names = ["parquet-out-100k", "parquet-out-1M"]
    rows = []
    for name in names:
        r = load_json(name)
        rows.append([whole(r["docs"]), fixed(r["cpu_after_over_before"]), fixed(r["wall_after_over_before"]),
                     fixed(r["peak_rss_after_over_before"]), "yes" if r["identical_clusters"] else "no"])
    header = ["documents", "CPU after / before", "wall after / before", "peak RSS after / before",
              "identical clusters"]
    return table(header, ["r", "r", "r", "r", "l"], rows), names


TABLES: dict[str, Renderer] = {
    "parquet-out": _parquet_out,
    "scale-local": _scale,
    "peers-100k": _peers,
    "minhash-signatures": _signatures,
    "embedders": _embedders,
    "ray-1M": _ray,
    "index-10M": _index,
    "report-1M": _report,
    "storage": _storage,
    "spine-before-after": _spine,
    "spine-code-lines": _spine_code_lines,
}
