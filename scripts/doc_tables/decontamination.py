"""Decontamination: test items found in training data, against semhash and at a million
documents, and its memory before and after (docs/decontamination.md)."""

from __future__ import annotations

import re
from collections.abc import Callable

from doc_tables.formatting import Renderer, half_up, percent, table, whole
from doc_tables.results import load_json, load_text


_RECALL_KINDS = (("exact_inside", "exact copy inside a longer document"),
                 ("paraphrased", "paraphrased (10% word edits)"),
                 ("ocr", "OCR-noised (severity 0.03)"),
                 ("ocr_inside", "OCR-noised inside a longer document"))


def _decontaminate_100k() -> tuple[str, list[str]]:
    data = load_json("decontaminate-100k")
    ours, theirs, agree = data["neardup"], data["semhash"], data["agreement_on_items"]  # type: ignore[index]
    planted = data["data"]["planted"]  # type: ignore[index]
    rows = [
        ["wall time", f"{half_up(ours['seconds'])} s", f"{half_up(theirs['seconds'])} s"],
        ["peak memory", f"{half_up(ours['peak_rss_mib'])} MiB", f"{half_up(theirs['peak_rss_mib'])} MiB"],
        [f"planted items found (of {planted})", percent(ours["item_side"]["planted_recall"], 1),
         percent(theirs["item_side"]["planted_recall"], 1)],
        *([label, percent(ours["item_side"]["recall_by_kind"][kind]), percent(theirs["item_side"]["recall_by_kind"][kind])]
          for kind, label in _RECALL_KINDS),
        ["items flagged that were not planted", whole(ours["item_side"]["flagged_not_planted"]),
         whole(theirs["item_side"]["flagged_not_planted"])],
        ["agreement on leaked items", f"{whole(agree['both'])} flagged by both; {whole(agree['only_neardup'])} by "
         f"neardup only; {whole(agree['only_semhash'])} by semhash only", ""],
    ]
    return table(["", "neardup decontaminate", "semhash (train against test)"], ["l", "l", "l"], rows), [
        "decontaminate-100k"]


def _decontaminate_1m() -> tuple[str, list[str]]:
    data = load_json("decontaminate-1M")
    ours = data["neardup"]  # type: ignore[index]
    times = load_json("decontaminate-1M-report")["timings_seconds"]  # type: ignore[index]
    rss = re.findall(r"^\S+ rss_kb=(\d+) elapsed=(\d+):(\d+)$", load_text("decontaminate-1M-rss"), re.MULTILINE)
    kb, minutes, seconds = rss[-1]
    items = ours["item_side"]
    rows = [
        ["wall time", f"{half_up(ours['seconds'])} s ({half_up(ours['seconds'] / 60)} min): near-duplicate "
         f"matching {half_up(times['near'])} s, 13-grams {half_up(times['ngrams'])} s, reading "
         f"{half_up(times['read'])} s"],
        ["peak memory", f"{half_up(ours['peak_rss_mib'])} MiB (`ru_maxrss`), a brief peak not yet traced; "
         f"{half_up(int(kb) / 1000)} MB resident at {int(minutes)} min {int(seconds)} s (the last sample)"],
        [f"planted items found (of {data['data']['planted']})", percent(items["planted_recall"], 2)],  # type: ignore[index]
        *([label, percent(items["recall_by_kind"][kind])] for kind, label in _RECALL_KINDS),
        ["items leaked / flagged that were not planted",
         f"{whole(ours['items_leaked'])} / {whole(items['flagged_not_planted'])}"],
        ["training documents flagged", f"{whole(ours['train_flagged'])} "
         f"({whole(ours['train_side']['flagged_not_planted'])} of them not planted)"],
    ]
    docs = data["data"]  # type: ignore[index]
    header = ["", f"neardup decontaminate, {docs['train_docs'] // 10**6}M x {docs['eval_items'] // 1000}k"]
    return table(header, ["l", "l"], rows), ["decontaminate-1M", "decontaminate-1M-report", "decontaminate-1M-rss"]


def _decontaminate_trace() -> tuple[str, list[str]]:
    before, after = load_json("decontaminate-trace-before"), load_json("decontaminate-trace-after")
    docs = before["samples"][-1]["documents"]  # type: ignore[index]

    def both(fn: Callable[[dict], str]) -> list[str]:
        return [fn(before), fn(after)]  # type: ignore[arg-type]

    rows = [
        ["resident memory, KiB per document", *both(lambda d: f"{d['rss_kib_per_document']:.3f}")],
        ["Arrow's pool, KiB per document", *both(lambda d: f"{d['arrow_pool_kib_per_document']:.3f}")],
        ["Arrow's pool at the end", *both(lambda d: f"{half_up(d['samples'][-1]['arrow_pool_kib'] / 1024)} MiB")],
        ["highest resident memory sampled",
         *both(lambda d: f"{half_up(max(s['rss_kib'] for s in d['samples']) / 1024)} MiB")],
    ]
    return table([f"{docs:,} training documents", "before", "after"], ["l", "r", "r"], rows), [
        "decontaminate-trace-before", "decontaminate-trace-after"]


TABLES: dict[str, Renderer] = {
    "decontaminate-100k": _decontaminate_100k,
    "decontaminate-1M": _decontaminate_1m,
    "decontaminate-trace": _decontaminate_trace,
}
