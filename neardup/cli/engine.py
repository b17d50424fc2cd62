"""Options of the corpus stage's engine, shared by the commands that run one."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar


from neardup.cli.options import apply_options, memory_size, schema_option
from neardup.engine import CorpusStageConfig
from neardup.params import group

__all__ = ["check_engine_options", "corpus_stage_from_options", "engine_options",
           "estimated_documents", "input_bytes", "memory_size"]

_COMPRESSED_INPUT = (".gz", ".parquet")


def input_bytes(inputs, storage_options: dict[str, Any] | None = None) -> tuple[int, bool]:
    """Total size of the inputs on disk (a directory: its .txt files; a URL: the object's
    size), and whether any is compressed; for estimates (free space, partitions), so
    unreadable paths count 0 (the reader names them)."""
    from neardup.io.locations import is_url, locate

    total = 0
    compressed = False
    for path in inputs:
        if is_url(path):
            total += locate(path, storage_options).size()
            compressed |= os.fspath(path).lower().endswith(_COMPRESSED_INPUT)
            continue
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


def engine_options(function: F) -> F:
    """``--engine``, ``--ray-address``, ``--ray-shard-rows``, ``--work-dir``,
    ``--memory-limit``, ``--partitions``, ``--resume`` (from :mod:`neardup.params`)."""
    return apply_options(tuple(schema_option(p.name) for p in group("engine")), function)


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
    estimate = estimated_documents(inputs, opts.get("storage_options"))
    return config if estimate is None else dataclasses.replace(config, expected_docs=estimate)


def estimated_documents(inputs, storage_options: dict[str, Any] | None = None) -> int | None:
    """Documents in the inputs, for sizing partitions: Parquet footers give the exact
    count; other files count one document per 200 bytes of text (gzip holds about four
    times its size), so the estimate errs towards more, smaller partitions. A directory
    counts the files it stands for (shards, a saved dataset's Arrow files, .txt files).
    None when no input could be measured."""
    from neardup.errors import InputError
    from neardup.io import input_files, parquet_num_rows

    total, measured = 0, False
    for path in inputs:
        try:
            for file, kind in input_files([path], storage_options):
                if kind == "parquet":
                    total += parquet_num_rows(file, storage_options)
                else:
                    size, compressed = input_bytes([file], storage_options)
                    total += size * (4 if compressed else 1) // 200
            measured = True
        except (OSError, InputError):  # the reader names unreadable inputs later
            continue
    return total if measured and total else None
