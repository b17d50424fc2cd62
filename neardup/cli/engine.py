"""Options of the corpus stage's engine, shared by the commands that run one."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from neardup.engine import CorpusStageConfig, parse_memory

__all__ = ["check_engine_options", "corpus_stage_from_options", "engine_options", "estimated_documents", "input_bytes",
           "input_identity"]

_COMPRESSED_INPUT = (".gz", ".parquet")


def input_bytes(inputs) -> tuple[int, bool]:
    """Total size of the inputs on disk (a directory: its .txt files), and whether any
    is compressed; for estimates (free space, partitions), so unreadable paths count 0
    (the reader names them)."""
    total = 0
    compressed = False
    for path in inputs:
        path = Path(path)
        try:
            if path.is_dir():
                total += sum(p.stat().st_size for p in path.rglob("*.txt") if p.is_file())
            else:
                total += path.stat().st_size
                compressed |= path.name.lower().endswith(_COMPRESSED_INPUT)
        except OSError:
            continue
    return total, compressed

F = TypeVar("F", bound=Callable[..., Any])


def _memory(ctx, param, value):
    if value is None:
        return None
    try:
        return parse_memory(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def engine_options(function: F) -> F:
    """``--engine``, ``--ray-address``, ``--ray-shard-rows``, ``--work-dir``, ``--memory-limit``, ``--partitions``,
    ``--resume``."""
    options = (
        click.option("--engine", type=click.Choice(["local", "memory", "ray"]), default="local",
                     show_default=True,
                     help="local: exact, minhash, simhash, ngram, spotsigs, rerank, "
                          "wminhash and sanderson (clustered by components; the last two "
                          "after a statistics pass that counts their document frequencies; "
                          "minhash with --verify exact stores shingle sets there instead of "
                          "signatures, 8 bytes per distinct shingle) run "
                          "out of core, spilling sketches and keys to --work-dir, with memory "
                          "bounded by --memory-limit plus ~40 bytes per document; retsim, "
                          "retsim-partial and biencoder write their embeddings there and "
                          "search them shard by shard (shards sized from --memory-limit): "
                          "exactly up to the method's exact_limit (50,000 rows), above it "
                          "(or with --param index=ivf) with one faiss IVF index per shard on "
                          "shared seeded centroids, as --engine memory's IVF; --param "
                          "index=hnsw stays in memory; rerank over retsim or biencoder "
                          "candidates runs there too, scoring the search's pairs from texts "
                          "kept in --work-dir; --pairs-out "
                          "then lists the verified edges that joined each cluster (every "
                          "accepted pair with --cluster leiden or louvain, which run out of "
                          "core for exact, minhash, simhash, wminhash and rerank). memory: "
                          "every candidate pair held and verified in RAM (always used for "
                          "the other methods, for leiden/louvain with the others, and for "
                          "--cluster hac; the run's "
                          "summary then names the reason as engine_fallback). ray: "
                          "the local engine's stage on a Ray cluster (pip install "
                          "'neardup[ray]'; exact, minhash (any --verify), simhash, ngram, spotsigs, "
                          "rerank over minhash candidates, retsim, retsim-partial, "
                          "biencoder; --cluster leiden or louvain for exact, minhash, simhash "
                          "and rerank; see docs/scale-out.md): "
                          "workers read the inputs and write --clusters-out, --pairs-out and "
                          "--out as directories of Parquet files."),
        click.option("--ray-address", default=None, metavar="ADDR",
                     help="With --engine ray: the cluster to run on (host:6379 as printed by "
                          "`ray start --head`, ray://host:10001, or auto); default: "
                          "RAY_ADDRESS, else a new single-machine cluster. The workers' "
                          "settings go to an existing cluster as the job's runtime_env; "
                          "NEARDUP_RAY_RUNTIME_ENV=0 sends none (nodes with neardup installed, "
                          "started with NUMBA_NUM_THREADS=1: less start-up CPU per node)."),
        click.option("--ray-shard-rows", type=click.IntRange(1), default=25_000, show_default=True,
                     metavar="N",
                     help="With --engine ray: rows per read-and-sketch task (whole Parquet row "
                          "groups; other formats one file per task). Larger shards mean fewer "
                          "objects per exchange (shards x partitions): use ~1000000 with "
                          "~2048 --partitions beyond 10^8 documents (docs/scale-out.md)."),
        click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Directory for the out-of-core stages (default: a temporary "
                          "directory, removed at the end). Must be new or empty, unless "
                          "--resume continues the run it holds."),
        click.option("--memory-limit", callback=_memory, default=None, metavar="SIZE",
                     help="Memory for the out-of-core stages' buffers, e.g. 2GB or 512MB "
                          "(default: an eighth of physical memory, at most 1GB)."),
        click.option("--partitions", type=click.IntRange(1, 65536), default=None,
                     help="Key partitions of the out-of-core stage (default: from the "
                          "corpus size, 256 when it is unknown)."),
        click.option("--resume", is_flag=True, default=False,
                     help="Continue a killed run from the completed stages in --work-dir "
                          "(same input and options give the same outputs)."),
    )
    for option in reversed(options):
        function = option(function)
    return function


def check_engine_options(opts: dict[str, Any]) -> None:
    """UsageError for an engine option the run would ignore (a Ray option without
    ``--engine ray``, ``--work-dir`` with ``--engine memory``, ...): the rules of
    :data:`neardup.cli.options.OPTION_RULES`."""
    from neardup.cli.options import check_option_rules

    check_option_rules(opts)


def corpus_stage_from_options(opts: dict[str, Any], inputs=()) -> CorpusStageConfig:
    """The corpus stage's config; without ``--partitions``, sized from the inputs' bytes
    (at least one document per 200 bytes, so partitions err on the small side)."""
    config = CorpusStageConfig(
        work_dir=None if opts["work_dir"] is None else str(opts["work_dir"]),
        memory_limit=opts["memory_limit"],
        partitions=opts["partitions"],
        resume=opts["resume"],
    )
    # Partitions are sized when the method is known (run_corpus_stage): its keys per
    # document range from a few (LSH bands) to hundreds (ngram's shingles).
    estimate = estimated_documents(inputs)
    return config if estimate is None else dataclasses.replace(config, expected_docs=estimate)


def estimated_documents(inputs) -> int | None:
    """Documents in the inputs, for sizing partitions: Parquet footers give the exact
    count; other files count one document per 200 bytes of text (gzip holds about four
    times its size), so the estimate errs towards more, smaller partitions. None when no
    input could be measured."""
    from neardup.errors import InputError
    from neardup.io import parquet_num_rows

    total, measured = 0, False
    for path in inputs:
        path = Path(path)
        try:
            if path.is_file() and path.name.lower().endswith(".parquet"):
                total += parquet_num_rows(str(path))
            else:
                size, compressed = input_bytes([path])
                total += size * (4 if compressed else 1) // 200
            measured = True
        except (OSError, InputError):  # the reader names unreadable inputs later
            continue
    return total if measured and total else None


def input_identity(inputs: tuple[Path, ...] | list[Path], reader_params: dict[str, Any]) -> dict:
    """The inputs as a resumed run must find them again: resolved paths, sizes and
    modification times (a directory's entries too), and how they are read."""
    files = []
    for path in inputs:
        path = Path(path)
        entries = [path]
        if path.is_dir():
            entries = sorted(p for p in path.rglob("*") if p.is_file())
        for entry in entries:
            stat = os.stat(entry)
            files.append([str(entry.resolve()), stat.st_size, stat.st_mtime_ns])
    return {"files": files, "reader": reader_params}
