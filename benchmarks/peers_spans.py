"""Side by side, in one run on the same data: span and substring de-duplication.

* ``neardup spans --unit sentences:3`` against datatrove's sentence dedup (its three
  pipeline steps SentenceDedupSignature, SentenceFindDedups, SentenceDedupFilter, run by
  its LocalPipelineExecutor). datatrove's English sentence splitter needs spaCy, which is
  not installed; both tools get the same splitter (neardup's, handed to datatrove as a
  ``WordTokenizer``), and datatrove normalizes as neardup does (case and whitespace; its
  number and punctuation folding off) and keeps every document (``min_doc_words=0``,
  ``min_num_sentences=0``), so the comparison is of the de-duplication itself. Its
  hash is SHA-1 (64 bits): its default, xxhash, fails on strings with the installed
  xxhash package.
* ``neardup substrings --min-tokens 50`` against a reference exact-substring script
  (below, :func:`reference_substrings`): the whole corpus in memory, one suffix array
  (pydivsufsort), Python tokenization. Google's and datatrove's ExactSubstr need a Rust
  binary that is not installed here. neardup runs twice: with a memory limit that holds
  the corpus in one chunk, and with one that cuts it into several.

Each tool runs in its own process; time is wall-clock and peak memory the process's
maximum resident set (``ru_maxrss`` of the child). Agreement is measured per document on
non-whitespace characters removed (whitespace placement differs by design).

    python benchmarks/peers_spans.py --corpus /tmp/neardup-scale/100k \\
        --results benchmarks/results/spans/100k --scratch /tmp/spans-bench-100k

The corpus is scripts/make_scale_corpus.py's (Parquet shards with ``id`` and ``text``).
Results: ``results.json`` (figures), ``commands.txt`` (every command run), ``logs/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

PYTHON = sys.executable


# --------------------------------------------------------------------------- measuring

def measure(command: list[str], log: Path, env: dict | None = None) -> dict:
    """Run ``command`` in a child process of a fresh measuring process; wall seconds and
    the child's peak resident memory."""
    wrapper = [PYTHON, __file__, "measure", "--log", str(log), "--", *command]
    done = subprocess.run(wrapper, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure_main(args) -> None:
    start = time.perf_counter()
    with open(args.log, "w") as log:
        code = subprocess.call(args.command, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    if code != 0:
        sys.stderr.write(Path(args.log).read_text()[-3000:])
        raise SystemExit(code)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"seconds": round(seconds, 2), "peak_rss_mb": round(peak_kib / 1024, 1)}))


# --------------------------------------------------------------------------- datatrove

def _datatrove_main(args) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.sentence_dedup import (
        SentDedupConfig,
        SentenceDedupFilter,
        SentenceDedupSignature,
        SentenceFindDedups,
    )
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.hashing import HashConfig
    from datatrove.utils.text import TextNormConfig
    from datatrove.utils.word_tokenizers import WordTokenizer

    from neardup.spans import SpanUnit, split_spans

    sentence = SpanUnit("sentences", 1)

    class Sentences(WordTokenizer):
        """neardup's sentence splitter, for datatrove (its English one needs spaCy)."""

        def word_tokenize(self, text: str) -> list[str]:
            return text.split()

        def sent_tokenize(self, text: str) -> list[str]:
            return [text[s:e] for s, e, _ in split_spans(text, sentence)]

        def span_tokenize(self, text: str) -> list[tuple[int, int]]:
            return [(s, e) for s, e, _ in split_spans(text, sentence)]

    config = SentDedupConfig(
        n_sentences=3, split_sentences=True, min_doc_words=0, min_num_sentences=0,
        norm_config=TextNormConfig(lowercase=True, norm_whitespace=True, remove_punctuation=False,
                                   norm_unicode_diacritics=False, norm_numbers=False),
        # Its default, xxhash, fails on str with the installed xxhash (it wants bytes).
        hash_config=HashConfig(precision=64, hash_fc="sha1"))
    work = Path(args.work)
    tokenizer = Sentences()

    def reader():
        return ParquetReader(str(args.corpus), text_key="text", id_key="id", glob_pattern="*.parquet")

    for name, pipeline in (
        ("signatures", [reader(), SentenceDedupSignature(output_folder=str(work / "sigs"),
                                                         config=config, language=tokenizer)]),
        ("find", [SentenceFindDedups(data_folder=str(work / "sigs"), output_folder=str(work / "dups"),
                                     config=config)]),
        ("filter", [reader(), SentenceDedupFilter(data_folder=str(work / "dups"), config=config,
                                                  language=tokenizer),
                    JsonlWriter(str(work / "out"), compression=None)]),
    ):
        LocalPipelineExecutor(pipeline=pipeline, tasks=1, workers=1,
                              logging_dir=str(work / "logs" / name)).run()


# --------------------------------------------------------------------------- reference

def reference_substrings(texts: list[str], n: int) -> list[str]:
    """Exact substrings of >= n whitespace tokens, later occurrences removed: the whole
    corpus as one token sequence (unique separators between documents), one suffix
    array, runs of LCP >= n. Written independently of neardup (Python tokens, a dict for
    the vocabulary) to check it."""
    import numpy as np
    from pydivsufsort import divsufsort, kasai

    vocabulary: dict[str, int] = {}
    lengths = np.fromiter((len(t.split()) for t in texts), np.int64, count=len(texts))
    ids = np.fromiter((vocabulary.setdefault(w, len(vocabulary)) for t in texts for w in t.split()),
                      np.int64, count=int(lengths.sum()))
    doc_start = np.concatenate(([0], np.cumsum(lengths + 1)))  # + 1: the separator
    sequence = np.empty(int(doc_start[-1]), np.uint32)
    token_doc = np.repeat(np.arange(len(texts)), lengths)
    within = np.arange(ids.shape[0]) - np.repeat(doc_start[:-1] - np.arange(len(texts)), lengths)
    token_position = doc_start[token_doc] + within
    sequence[token_position] = ids
    sequence[doc_start[1:] - 1] = len(vocabulary) + np.arange(len(texts))
    del ids
    suffixes = divsufsort(sequence)
    lcp = kasai(sequence, suffixes)
    removed_windows = []
    joined = lcp[:-1] >= n
    breaks = np.flatnonzero(~joined) + 1  # a new group starts after each break
    bounds = np.concatenate(([0], breaks, [suffixes.shape[0]]))
    repeated = np.flatnonzero(np.diff(bounds) >= 2)
    for a, b in zip(bounds[repeated].tolist(), bounds[repeated + 1].tolist()):
        members = np.sort(suffixes[a:b])
        removed_windows.append(members[1:].astype(np.int64))
    windows = np.concatenate(removed_windows) if removed_windows else np.empty(0, np.int64)
    doc = np.searchsorted(doc_start, windows, side="right") - 1
    token = windows - doc_start[doc]
    out = list(texts)
    order = np.lexsort((token, doc))
    doc, token = doc[order], token[order]
    for d in np.unique(doc).tolist():
        text = texts[d]
        spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        cut = np.zeros(len(spans), bool)
        for t in token[doc == d].tolist():
            cut[t:t + n] = True
        pieces, position = [], 0
        for i in np.flatnonzero(cut).tolist():
            stop = spans[i + 1][0] if i + 1 < len(spans) else len(text)
            pieces.append(text[position:spans[i][0]])
            position = stop
        pieces.append(text[position:])
        out[d] = "".join(pieces)
    return out


def _reference_main(args) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(Path(args.corpus).glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(f, columns=["id", "text"]) for f in files])
    texts = reference_substrings(table.column("text").to_pylist(), args.min_tokens)
    pq.write_table(pa.table({"id": table.column("id"), "text": pa.array(texts, pa.string())}),
                   args.out)


# --------------------------------------------------------------------------- agreement

def _letters(text: str) -> int:
    return len("".join(text.split()))


def _agreement(originals: dict[str, str], ours: dict[str, str], theirs: dict[str, str]) -> dict:
    """Per document: non-whitespace characters removed by each tool (a document missing
    from an output counts as removed whole)."""
    changed_ours, changed_theirs, same, differing = set(), set(), 0, []
    removed_ours = removed_theirs = 0
    for doc_id, text in originals.items():
        a, b = ours.get(doc_id, ""), theirs.get(doc_id, "")
        before = _letters(text)
        ra, rb = before - _letters(a), before - _letters(b)
        removed_ours += ra
        removed_theirs += rb
        if ra:
            changed_ours.add(doc_id)
        if rb:
            changed_theirs.add(doc_id)
        if " ".join(a.split()) == " ".join(b.split()):
            same += 1
        elif len(differing) < 5:
            differing.append(doc_id)
    union = changed_ours | changed_theirs
    return {
        "documents": len(originals),
        "documents_changed": {"neardup": len(changed_ours), "peer": len(changed_theirs),
                              "both": len(changed_ours & changed_theirs)},
        "changed_jaccard": round(len(changed_ours & changed_theirs) / len(union), 4) if union else 1.0,
        "letters_removed": {"neardup": removed_ours, "peer": removed_theirs},
        "identical_output_documents": same,
        "identical_output_fraction": round(same / max(1, len(originals)), 4),
        "differing_documents_sample": differing,
    }


def _texts_parquet(path: Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["id", "text"])
    return dict(zip(table.column("id").to_pylist(), table.column("text").to_pylist()))


def _texts_jsonl(directory: Path) -> dict[str, str]:
    out = {}
    for file in sorted(directory.glob("*.jsonl")):
        with open(file) as handle:
            for line in handle:
                record = json.loads(line)
                out[record["id"]] = record["text"]
    return out


def _originals(corpus: Path) -> dict[str, str]:
    out = {}
    for file in sorted(corpus.glob("*.parquet")):
        out.update(_texts_parquet(file))
    return out


# --------------------------------------------------------------------------- the run

def _run_all(args) -> None:
    corpus, results, scratch = Path(args.corpus), Path(args.results), Path(args.scratch)
    if scratch.exists():
        shutil.rmtree(scratch)
    (results / "logs").mkdir(parents=True, exist_ok=True)
    scratch.mkdir(parents=True)
    # This checkout's neardup, whatever is installed.
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    inputs = [str(p) for p in sorted(corpus.glob("*.parquet"))]
    neardup = [PYTHON, "-m", "neardup"]
    runs = {}
    commands = []

    def run(name, command):
        commands.append(f"# {name}\n{' '.join(command)}")
        print(f"running {name} ...", flush=True)
        runs[name] = measure(command, results / "logs" / f"{name}.log", env)
        print(f"  {runs[name]}", flush=True)

    limit = args.memory_limit
    if not args.skip_spans:
        run("neardup_spans", [*neardup, "spans", *inputs, "--unit", "sentences:3", "--id-field", "id",
                              "--out", str(scratch / "spans.parquet"),
                              "--report", str(results / "neardup_spans_report.json"),
                              "--memory-limit", limit, "--work-dir", str(scratch / "spans-work")])
        if not args.skip_peers:
            run("datatrove_sentence_dedup", [PYTHON, __file__, "datatrove", "--corpus", str(corpus),
                                             "--work", str(scratch / "datatrove")])
    if not args.skip_substrings:
        run("neardup_substrings", [*neardup, "substrings", *inputs, "--min-tokens", "50",
                                   "--id-field", "id", "--out", str(scratch / "substrings.parquet"),
                                   "--report", str(results / "neardup_substrings_report.json"),
                                   "--memory-limit", limit, "--work-dir", str(scratch / "sub-work")])
        if not args.skip_chunked:
            run("neardup_substrings_chunked", [
                *neardup, "substrings", *inputs, "--min-tokens", "50", "--id-field", "id",
                "--out", str(scratch / "substrings-chunked.parquet"),
                "--report", str(results / "neardup_substrings_chunked_report.json"),
                "--memory-limit", args.small_memory_limit, "--work-dir", str(scratch / "sub-work-2")])
        if not args.skip_peers:
            run("reference_suffix_array", [PYTHON, __file__, "reference", "--corpus", str(corpus),
                                           "--out", str(scratch / "reference.parquet"),
                                           "--min-tokens", "50"])
    originals = _originals(corpus)
    agreement = {}
    if not args.skip_spans and not args.skip_peers:
        agreement["spans_vs_datatrove"] = _agreement(
            originals, _texts_parquet(scratch / "spans.parquet"), _texts_jsonl(scratch / "datatrove" / "out"))
    if not args.skip_substrings and not args.skip_chunked:
        chunked = _texts_parquet(scratch / "substrings-chunked.parquet")
        ours = _texts_parquet(scratch / "substrings.parquet")
        agreement["substrings_chunked_vs_one_chunk"] = _agreement(originals, chunked, ours)
    if not args.skip_substrings and not args.skip_peers:
        agreement["substrings_vs_reference"] = _agreement(
            originals, _texts_parquet(scratch / "substrings.parquet"),
            _texts_parquet(scratch / "reference.parquet"))
    payload = {"corpus": str(corpus), "documents": len(originals),
               "corpus_bytes": sum(len(t.encode()) for t in originals.values()),
               "memory_limit": limit, "small_memory_limit": args.small_memory_limit,
               "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
               "runs": runs, "agreement": agreement}
    (results / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    (results / "commands.txt").write_text("\n".join(commands) + "\n")
    print(json.dumps(payload, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode")
    m = sub.add_parser("measure")
    m.add_argument("--log", required=True)
    m.add_argument("command", nargs=argparse.REMAINDER)
    d = sub.add_parser("datatrove")
    d.add_argument("--corpus", required=True)
    d.add_argument("--work", required=True)
    r = sub.add_parser("reference")
    r.add_argument("--corpus", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--min-tokens", type=int, default=50)
    parser.add_argument("--corpus")
    parser.add_argument("--results")
    parser.add_argument("--scratch")
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--small-memory-limit", default="128MB",
                        help="neardup substrings' second run: cut into several chunks")
    parser.add_argument("--skip-spans", action="store_true")
    parser.add_argument("--skip-substrings", action="store_true")
    parser.add_argument("--skip-peers", action="store_true",
                        help="neardup only (the scale run)")
    parser.add_argument("--skip-chunked", action="store_true",
                        help="no second substrings run at --small-memory-limit")
    args = parser.parse_args()
    if args.mode == "measure":
        if args.command and args.command[0] == "--":
            args.command = args.command[1:]
        _measure_main(args)
    elif args.mode == "datatrove":
        _datatrove_main(args)
    elif args.mode == "reference":
        _reference_main(args)
    else:
        if not (args.corpus and args.results and args.scratch):
            parser.error("give --corpus, --results and --scratch")
        _run_all(args)


if __name__ == "__main__":
    main()
