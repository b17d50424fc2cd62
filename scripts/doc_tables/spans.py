"""Repeated spans and substrings removed from documents, against their peers and across
engines (docs/spans.md)."""

from __future__ import annotations

import re

from doc_tables.formatting import Renderer, half_up, percent, table, whole
from doc_tables.results import load_json, load_text


def _spans_100k() -> tuple[str, list[str]]:
    data = load_json("spans-100k")
    runs, agree = data["runs"], data["agreement"]  # type: ignore[index]
    spans, sub, chunked = (load_json(n)["summary"] for n in  # type: ignore[index]
                           ("spans-100k-spans", "spans-100k-substrings", "spans-100k-substrings-chunked"))
    docs = whole(data["documents"])  # type: ignore[index]

    def identical(key: str, whom: str) -> str:
        return f"{whole(agree[key]['identical_output_documents'])} of {docs} identical to {whom}"

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
        removed = whole(letters) + (f" ({percent(fraction, 1)} of bytes)" if fraction is not None else "")
        rows.append([label, f"{half_up(runs[key]['seconds'])} s", f"{half_up(runs[key]['peak_rss_mb'])} MB",
                     whole(changed), removed, same])
    header = ["run", "wall time", "peak RSS", "documents changed", "non-space characters removed",
              "outputs"]
    return table(header, ["l", "r", "r", "r", "r", "l"], rows), [
        "spans-100k", "spans-100k-spans", "spans-100k-substrings", "spans-100k-substrings-chunked"]


def _spans_1m() -> tuple[str, list[str]]:
    runs = load_json("spans-1M")["runs"]  # type: ignore[index]
    spans, sub = (load_json(n) for n in ("spans-1M-spans", "spans-1M-substrings"))
    s, t = spans["summary"], sub["summary"]  # type: ignore[index]

    def timed(key: str, report: dict) -> str:
        times = report["timings_seconds"]
        return (f"{half_up(runs[key]['seconds'])} s (count {half_up(times['count'])} s, "
                f"rewrite {half_up(times['rewrite'])} s)")

    def millions(n: int, digits: int) -> str:
        return f"{half_up(n / 1e6, digits)} M"

    spilled = f"{s['partitions']} partitions spilled to disk" if s["spilled_to_disk"] else "in memory"
    rows = [
        ["`neardup spans --unit sentences:3`", timed("neardup_spans", spans),  # type: ignore[arg-type]
         f"{half_up(runs['neardup_spans']['peak_rss_mb'])} MB",
         f"{millions(s['spans'], 2)} windows, {spilled}; {whole(s['repeated_spans'])} repeated windows; "
         f"{whole(s['documents_changed'])} documents changed; {percent(s['bytes_removed_fraction'], 1)} of bytes removed"],
        ["`neardup substrings --min-tokens 50`", timed("neardup_substrings", sub),  # type: ignore[arg-type]
         f"{half_up(runs['neardup_substrings']['peak_rss_mb'])} MB",
         f"{millions(t['tokens'], 0)} tokens in {t['chunks']} chunks; {millions(t['windows_removed_within_chunks'], 1)} "
         f"windows removed within chunks, {millions(t['window_hashes_shared_across_chunks'], 2)} window hashes "
         f"shared across chunks; {whole(t['documents_changed'])} documents changed; "
         f"{percent(t['bytes_removed_fraction'], 1)} of bytes removed"],
    ]
    return table(["run", "wall time", "peak RSS", "what it did"], ["l", "r", "r", "l"], rows), [
        "spans-1M", "spans-1M-spans", "spans-1M-substrings"]


def _spans_engines() -> tuple[str, list[str]]:
    text = load_text("spans-engines")
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
        rows.append([f"`{command}`", f"{half_up(local_s, 1)} s", f"{half_up(ray_s, 1)} s",
                     f"{half_up(local_kb / 1024)} / {half_up(ray_kb / 1024)} MiB",
                     "byte-identical" if same else "differ"])
    header = ["run", "local", "`--engine ray` (new local cluster)", "driver's peak memory, local / Ray",
              "`--out` and `--removed-out`"]
    return table(header, ["l", "r", "r", "r", "l"], rows), ["spans-engines"]


TABLES: dict[str, Renderer] = {
    "spans-100k": _spans_100k,
    "spans-1M": _spans_1m,
    "spans-engines": _spans_engines,
}
