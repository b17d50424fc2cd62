"""`neardup report` on a synthetic 1,000,000-document run: build time, file size, load time.

Writes a run's outputs as `neardup dedup` would (clusters table, pairs table, summary JSON)
for a synthetic corpus of ``--docs`` documents, and the corpus itself (Parquet, id + text),
then times the whole `neardup report` command in a child process (wall time and peak RSS),
and opens the page in headless Chromium (Debian's ``chromium``, driven by playwright) to
time loading it until its script has rendered everything (``body[data-ready]``), selecting
the largest cluster, and a search over the shown clusters.

The synthetic run: 70% of documents are singletons; the rest fall into clusters with
Zipf-distributed sizes (2 to 2,000), plus three template clusters of 5,000 documents
(flagged as templates); members are their cluster's 40-word text with about 10% of
the words substituted; documents are shuffled so every cluster spans the whole input. The
pairs are a chain through each cluster's members plus an edge from each member to the
representative (scores 0.5-1.0, a third of them 1.0), and 1% extra pairs kept apart by the
time window.

    python -m benchmarks one report [--docs 1000000] [--work /tmp/neardup-bench/report]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.harness import machine

WORDS_PER_DOC = 40
VOCABULARY = 5000
CHUNK = 100_000
TYPES = np.array(["exact", "corrected", "expanded", "near", "template"], dtype=object)


def cluster_sizes(n_docs: int, rng: np.random.Generator) -> np.ndarray:
    """Sizes summing to ``n_docs``: three templates of 5,000, Zipf clusters, singletons."""
    templates = [5000, 5000, 5000]
    duplicated = int(0.3 * n_docs) - sum(templates)
    sizes = []
    total = 0
    while total < duplicated:
        s = int(min(2 + rng.zipf(1.8) - 1, 2000))
        s = min(s, duplicated - total) if duplicated - total >= 2 else 0
        if s < 2:
            break
        sizes.append(s)
        total += s
    singletons = n_docs - sum(templates) - total
    return np.array(templates + sizes + [1] * singletons, dtype=np.int64)


def synthesize(work: Path, n_docs: int, seed: int = 0) -> dict[str, Path]:
    """Write corpus.parquet, clusters.parquet, pairs.parquet and run.json (cached)."""
    paths = {name: work / f"{name}" for name in
             ("corpus.parquet", "clusters.parquet", "pairs.parquet", "run.json")}
    if all(p.exists() for p in paths.values()):
        return paths
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sizes = cluster_sizes(n_docs, rng)
    group = np.repeat(np.arange(sizes.size), sizes)  # synthetic group of each document
    group = group[rng.permutation(n_docs)]  # shuffle: clusters span the input
    # neardup numbers clusters by their first document in input order.
    _, first = np.unique(group, return_index=True)
    renumber = np.empty(sizes.size, dtype=np.int64)
    renumber[np.argsort(first)] = np.arange(sizes.size)
    cluster = renumber[group]
    size_of = np.bincount(cluster)
    representative = np.zeros(n_docs, dtype=bool)
    representative[np.sort(first)] = True  # the first member of each cluster
    template = np.isin(group, [0, 1, 2])
    ids = pa.array([f"d{i:07d}" for i in range(n_docs)], pa.string())
    pq.write_table(pa.table({
        "id": ids, "cluster": cluster, "cluster_size": size_of[cluster],
        "representative": representative,
        "status": pa.array(np.full(n_docs, "ok", dtype=object), pa.string()),
        "template": template,
    }), paths["clusters.parquet"])

    # Texts: each cluster's base words, about 10% substituted per member.
    vocab = pa.array([f"w{k}" for k in range(VOCABULARY)], pa.string())
    base = rng.integers(0, VOCABULARY, (sizes.size, WORDS_PER_DOC), dtype=np.int32)
    writer = None
    for start in range(0, n_docs, CHUNK):
        stop = min(start + CHUNK, n_docs)
        words = base[group[start:stop]].copy()
        noise = rng.random(words.shape) < 0.1
        words[noise] = rng.integers(0, VOCABULARY, int(noise.sum()), dtype=np.int32)
        flat = vocab.take(pa.array(words.ravel()))
        offsets = pa.array(np.arange(0, words.size + 1, WORDS_PER_DOC, dtype=np.int32))
        texts = pc.binary_join(pa.ListArray.from_arrays(offsets, flat), " ")
        chunk = pa.table({"id": ids[start:stop], "text": texts})
        if writer is None:
            writer = pq.ParquetWriter(paths["corpus.parquet"], chunk.schema)
        writer.write_table(chunk)
    writer.close()

    # Pairs: a chain through each cluster's members and an edge from each to its first member.
    order = np.lexsort((np.arange(n_docs), cluster))
    same = cluster[order][1:] == cluster[order][:-1]
    chain_a, chain_b = order[:-1][same], order[1:][same]
    rep_of = np.flatnonzero(representative)[np.argsort(cluster[representative])][cluster]
    star = np.flatnonzero(~representative & (size_of[cluster] > 2))
    left = np.concatenate([chain_a, star])
    right = np.concatenate([chain_b, rep_of[star]])
    n_outside = n_docs // 100
    out_a, out_b = rng.integers(0, n_docs, n_outside), rng.integers(0, n_docs, n_outside)
    keep = out_a != out_b
    left = np.concatenate([left, out_a[keep]])
    right = np.concatenate([right, out_b[keep]])
    n_pairs = left.size
    score = np.where(rng.random(n_pairs) < 1 / 3, 1.0, rng.uniform(0.5, 1.0, n_pairs))
    outside = np.zeros(n_pairs, dtype=bool)
    outside[n_pairs - int(keep.sum()):] = True
    pq.write_table(pa.table({
        "id_a": ids.take(pa.array(left)), "id_b": ids.take(pa.array(right)),
        "score": score.astype(np.float32),
        "method": pa.array(np.full(n_pairs, "minhash", dtype=object), pa.string()),
        "type": pa.array(TYPES[rng.integers(0, TYPES.size, n_pairs)], pa.string()),
        "outside_window": outside,
    }), paths["pairs.parquet"])
    n_clusters = int(sizes.size)
    summary = {
        "summary": {"documents": n_docs, "clusters": n_clusters,
                    "duplicates_removed": n_docs - n_clusters,
                    "largest_cluster": int(sizes.max()), "pairs": int((~outside).sum()),
                    "pairs_outside_time_window": int(outside.sum())},
        "method": "minhash",
        "params": {"method": {"threshold": 0.5, "num_perm": 128}, "cluster": {}, "keep": "first"},
        "timings_seconds": {},
        "inputs": [str(paths["corpus.parquet"])],
    }
    paths["run.json"].write_text(json.dumps(summary, indent=2) + "\n")
    return paths


def run_report(paths: dict[str, Path], out: Path) -> dict:
    cmd = [sys.executable, "-m", "neardup", "report", str(paths["clusters.parquet"]),
           str(paths["pairs.parquet"]), str(paths["run.json"]), "--id-field", "id",
           "--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        sys.exit(f"neardup report failed ({status})")
    return {"seconds": round(time.perf_counter() - start, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "file_mb": round(out.stat().st_size / 1e6, 2)}


def time_browser(page_path: Path, chromium: str) -> dict:
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=args)
        loads = []
        for _ in range(3):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            start = time.perf_counter()
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            loads.append(time.perf_counter() - start)
            page.close()
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(page_path.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=120_000)
        page.click("nav button[data-tab=clusters]")
        start = time.perf_counter()
        page.click("#cluster-list .cluster-row >> nth=1")
        page.wait_for_selector("#detail .member >> nth=1")
        select = time.perf_counter() - start
        start = time.perf_counter()
        page.fill("#search", "w4999 w1")
        page.wait_for_function("document.getElementById('list-count').textContent.includes('match')")
        search = time.perf_counter() - start
        rows = page.locator("#cluster-list .cluster-row").count()
        browser.close()
    return {"load_seconds_best_of_3": round(min(loads), 2),
            "load_seconds_all": [round(x, 2) for x in loads],
            "select_largest_cluster_seconds": round(select, 2),
            "search_seconds": round(search, 2), "rows_after_search": rows}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/neardup-bench/report"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    work = args.work / str(args.docs)
    start = time.perf_counter()
    paths = synthesize(work, args.docs)
    print(f"synthetic run in {work} ({time.perf_counter() - start:.1f} s)")
    out = work / "report.html"
    build = run_report(paths, out)
    print(f"neardup report: {build}")
    browser = time_browser(out, args.chromium) if Path(args.chromium).exists() else None
    print(f"chromium: {browser}")
    clusters = pq.read_metadata(paths["clusters.parquet"]).num_rows
    pairs = pq.read_metadata(paths["pairs.parquet"]).num_rows
    return {
        "machine": machine(), "docs": clusters, "pairs": pairs, "build": build,
        "browser": browser,
    }

