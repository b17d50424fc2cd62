"""What the benchmarks and the experiments share: the machine they ran on, result files,
child-process measurements and the Reuters-21578 texts they read."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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

    texts: list[str] = []
    for batch in read_corpus(reuters_files(), ReaderConfig(limit=limit)):
        texts.extend(batch.texts)
    return texts


def peak_rss_mb(children: bool = False) -> float:
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024.0


def machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_json(path: Path, payload: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")
    return path


def results_saver(directory: Path) -> Callable[[str, dict], Path]:
    """``save(name, payload)`` writing ``directory/name.json``: an experiment keeps its raw
    results next to its code."""
    return lambda name, payload: write_json(Path(directory) / f"{name}.json", payload)


def measure_command(cmd: list[str]) -> dict:
    """Run ``cmd`` as a child process: wall seconds, CPU seconds (user + system) and peak
    RSS from ``os.wait4``; exits with the command on failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"command failed ({status}): {' '.join(cmd)}")
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024.0), "command": " ".join(cmd)}


def derived_corpus(path: Path, n_docs: int, seed: int = 0) -> Path:
    """Write ``n_docs`` noisy copies of Reuters stories as JSONL (cached by name)."""
    import numpy as np

    from neardup.datasets.noise import ocr_noise
    from neardup.io import iter_records

    if path.exists():
        return path
    stories = [r["text"] for r in iter_records(reuters_files())]
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as out:
        for i in range(n_docs):
            story = stories[i % len(stories)]
            text = story if i < len(stories) else ocr_noise(story, rng, severity=0.01)
            out.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")
    tmp.replace(path)
    return path


def run_cli(args: list[str]) -> dict:
    """``neardup dedup ARGS`` in a child process: wall seconds and peak RSS."""
    cmd = [sys.executable, "-m", "neardup", "dedup", *args]
    row = measure_command(cmd)
    return {"seconds": row["wall_s"], "peak_rss_mb": row["peak_rss_mb"], "command": " ".join(cmd[2:])}
