"""Shared helpers for the benchmarks: corpus loading, peak memory, result files."""

from __future__ import annotations

import json
import platform
import resource
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def reuters_files() -> list[str]:
    """The Reuters-21578 SGML files, or exit with a message if they are absent."""
    from neardup.io.reuters import find_reuters_dir

    root = find_reuters_dir()
    if root is None:
        sys.exit("Reuters-21578 not found (expected ../shared/data/reuters21578 or $NEARDUP_REUTERS_DIR)")
    return sorted(str(p) for p in root.glob("reut2-*.sgm"))


def identical_body_pairs(files: list[str], config, ids) -> list[tuple[int, int]]:
    """Pairs of positions (in ``ids``, the run's document ids in input order) of Reuters
    stories whose bodies are identical after stripping: copies re-sent unchanged."""
    from collections import defaultdict

    from neardup.io import iter_records

    position = {doc_id: i for i, doc_id in enumerate(ids)}
    groups = defaultdict(list)
    for record in iter_records(files, config):
        body = (record["body"] or "").strip()
        if body:
            groups[body].append(position[record["id"]])
    return [(a, b) for members in groups.values() for k, a in enumerate(members)
            for b in members[k + 1:]]


def reuters_texts(limit: int | None = None) -> list[str]:
    """Texts of Reuters-21578 (title + body), or exit with a message if it is absent."""
    from neardup.io import ReaderConfig, read_corpus

    files = reuters_files()
    texts: list[str] = []
    for batch in read_corpus(files, ReaderConfig(limit=limit)):
        texts.extend(batch.texts)
    return texts


def peak_rss_mb(children: bool = False) -> float:
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024.0


def machine() -> str:
    import os

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def save(name: str, payload: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return path


def measure_command(cmd: list[str]) -> dict:
    """Run ``cmd`` as a child process: wall seconds, CPU seconds (user + system) and peak
    RSS from ``os.wait4``; exits with the command on failure."""
    import os
    import subprocess
    import time

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"command failed ({status}): {' '.join(cmd)}")
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024.0), "command": " ".join(cmd)}
