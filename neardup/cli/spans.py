"""``neardup spans`` and ``neardup substrings``: de-duplication inside documents.

Both commands read the inputs twice (count, then rewrite), write every input record to
``--out`` exactly once (its text with the repeats cut out, or under ``--mark`` unchanged
with the ranges listed in a field), and share their outputs: ``--removed-out`` (one row
per input document) and ``--report`` (JSON).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import click

from neardup.cli.engine import memory_size
from neardup.cli.options import (
    apply_options,
    reader_config_from_options,
    reader_options,
    schema_option,
)

__all__ = ["spans_command", "substrings_command"]

_FLAGS = {"unit": "--unit", "min_length": "--min-length", "min_repeats": "--min-repeats",
          "keep": "--keep", "top": "--top", "n": "--min-tokens"}


_SHARED = (
    click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path)),
    click.option("--out", type=click.Path(path_type=Path), default=None,
                 help="Every input record, once, in input order: its text with the repeats cut "
                      "out (or, with --mark, unchanged): .jsonl, .jsonl.gz, .parquet, .csv, .tsv."),
    click.option("--report", type=click.Path(path_type=Path), default=None,
                 help="Counts, parameters and timings (for spans, the most repeated spans too) "
                      "as JSON (.json)."),
    click.option("--removed-out", type=click.Path(path_type=Path), default=None,
                 help="One row per input document: id, source, row, bytes_before, "
                      "bytes_removed, ranges_removed, dropped (.parquet, .jsonl, .csv, ...)."),
    click.option("--mark", is_flag=True,
                 help="Remove nothing: add to each --out record a field listing the "
                      "[start, stop] character ranges that would be cut."),
    click.option("--drop-empty", is_flag=True,
                 help="Leave out of --out the documents that removal left empty or blank "
                      "(they stay in --removed-out with dropped=true). Default: kept, so "
                      "every input record is in --out."),
)
_ENGINE = (
    click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
                 show_default=True,
                 help="local: both passes in this process, out of core. ray: the workers "
                      "read the input shards and run every step (pip install 'neardup[ray]'); "
                      "this process numbers the documents and writes the outputs, the same "
                      "bytes as local."),
    click.option("--ray-address", default=None, metavar="ADDR",
                 help="With --engine ray: the cluster to run on (host:6379, ray://host:10001 "
                      "or auto); default: RAY_ADDRESS, else a new single-machine cluster."),
    schema_option("ray_shard_rows", default=None, show_default=False,
                  help="With --engine ray: rows of Parquet each read task reads (whole row "
                       "groups; other formats one file per task). Default: 25000."),
    click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                 help="Directory for the spilled partitions and the counting pass's decisions "
                      "(default: a temporary directory, removed at the end). Must be new or "
                      "empty, unless --resume continues the run it holds."),
    click.option("--resume", is_flag=True, default=False,
                 help="Continue a killed run kept in --work-dir: a completed counting pass "
                      "is not redone (same inputs and options give the same outputs)."),
    click.option("--memory-limit", callback=memory_size, default=None, metavar="SIZE",
                 help="Memory for the buffers, partitions and chunks, e.g. 2GB or 512MB "
                      "(default: an eighth of physical memory, at most 1GB)."),
    click.option("--progress/--no-progress", default=None,
                 help="Show progress bars (default: when stderr is a terminal)."),
    click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors."),
)


def _shared_options(function):
    """INPUT..., the outputs, the reader options, then --work-dir, --memory-limit,
    --progress and --quiet (in that order in ``--help``)."""
    return apply_options(_SHARED, reader_options(apply_options(_ENGINE, function)))


def _check_engine(opts: dict[str, Any]) -> None:
    if opts["resume"] and opts["work_dir"] is None:
        raise click.UsageError("--resume continues a run kept in --work-dir; give --work-dir.")
    for name in ("ray_address", "ray_shard_rows"):
        if opts["engine"] != "ray" and opts[name] is not None:
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"{flag} is read with --engine ray only; drop it or add "
                                   "--engine ray.")
    if opts["engine"] == "ray" and opts["limit"] is not None:
        raise click.UsageError("--limit is for --engine local (the Ray workers read whole "
                               "shards); cut the input instead, or drop --engine ray.")
    if opts["engine"] == "ray" and opts["resume"]:
        raise click.UsageError("--resume is for --engine local (Ray retries failed tasks "
                               "itself); drop one of them.")


def _executor(opts: dict[str, Any]):
    """The executor of the steps: this process, or Ray tasks on the cluster
    (:func:`neardup.engine.ray.connect`)."""
    from neardup.spans.executors import RayExecutor, local_executor

    if opts["engine"] != "ray":
        return local_executor
    from neardup.engine.ray import connect
    from neardup.io.locations import storage_env

    connect(opts["ray_address"], env=storage_env(),
            **({"logging_level": "ERROR"} if opts["quiet"] else {}))
    return RayExecutor()


def _work_dir(stack: ExitStack, opts: dict[str, Any], identity: dict[str, Any]):
    """The run's :class:`~neardup.engine.workdir.WorkDir`: --work-dir, or a temporary
    directory removed at the end."""
    from neardup.engine.workdir import WorkDir

    path = opts["work_dir"]
    if path is None:
        path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="neardup-spans-")))
    return WorkDir(path, identity, resume=opts["resume"])


def _shard_reads(inputs: tuple[Path, ...], against: tuple[Path, ...], reader,
                 shard_rows: int | None) -> list:
    """The shards the Ray workers read (the --against ones first), in input order."""
    from neardup.spans.sharded import SHARD_ROWS, ShardRead, shards_of

    return [ShardRead(shard, is_against) for paths, is_against in ((against, True), (inputs, False))
            if paths for shard in shards_of(paths, reader, shard_rows or SHARD_ROWS)]


class _ShardedPasses:
    """A command's two passes with the Ray workers reading the shards: ``find(reads,
    reader, **limits)`` and ``rewrite(input_reads, reader, decisions)``
    (:mod:`neardup.spans.sharded`)."""

    def __init__(self, find: Callable[..., Any], rewrite: Callable[..., Iterator]) -> None:
        self.find = find
        self.rewrite = rewrite


def _run(command: str, inputs: tuple[Path, ...], opts: dict[str, Any], against: tuple[Path, ...],
         find: Callable[..., Any], remove: Callable[..., Iterator], field: str,
         parameters: dict[str, Any], sharded: Any) -> dict[str, Any]:
    """The shared run: outputs checked, pass 1 (``find``), pass 2 (``remove``), outputs
    written as a set. Returns the report. With ``--engine ray`` the workers read the
    input shards in both passes (``sharded``: the command's :class:`_ShardedPasses`)."""
    from neardup import faults
    from neardup.cli._checks import output_set
    from neardup.cli.engine import input_bytes
    from neardup.io.identity import input_identity
    from neardup.cli.rereads import InputWatch, refuse_single_read_inputs
    from neardup.engine.budget import default_memory_limit
    from neardup.engine.workdir import stage_key
    from neardup.io import iter_records, read_corpus
    from neardup.progress import progress_bar
    from neardup.spans.resume import decisions_facts, decisions_from_facts

    if not (opts["out"] or opts["report"] or opts["removed_out"]):
        raise click.UsageError("give at least one of --out, --report, --removed-out.")
    if opts["date_field"] is not None:
        raise click.UsageError(f"--date-field is not read by neardup {command} (spans and "
                               "substrings do not use dates); drop it.")
    if opts["mark"] and opts["drop_empty"]:
        raise click.UsageError("--drop-empty is ignored with --mark (it removes nothing); "
                               "drop one of them.")
    _check_engine(opts)
    refuse_single_read_inputs(inputs, "INPUT", f"neardup {command} reads its input twice (to "
                              "count, then to rewrite)")
    reader = reader_config_from_options(opts)
    progress = False if opts["quiet"] else opts["progress"]
    memory_limit = opts["memory_limit"] or default_memory_limit()
    size, compressed = input_bytes((*inputs, *against))
    outputs = output_set((*inputs, *against), [
        ("--out", opts["out"], None), ("--removed-out", opts["removed_out"], None),
        ("--report", opts["report"], ("json",))])
    timings: dict[str, float] = {}
    identity = {"command": command, "inputs": input_identity(inputs, reader.params(),
                                                             reader.storage_options),
                "against": input_identity(against, reader.params(), reader.storage_options)}
    # The counting pass's parameters (not --mark or --drop-empty, which only the rewrite
    # reads): a resumed run reuses its decisions only when they match.
    count_key = stage_key(command, {k: v for k, v in parameters.items()
                                    if k not in ("mark", "drop_empty")}, memory_limit)
    with outputs, ExitStack() as stack:
        work = _work_dir(stack, opts, identity)

        # The rewrite takes documents by position from a second read: the first read's
        # digests make sure it reads the same texts.
        watch = InputWatch(inputs, reader)

        def texts(paths, description, watched):
            with progress_bar(description, enabled=progress) as advance:
                batches = read_corpus(list(paths), reader)
                for batch in watch.first_read(batches, per_batch=True) if watched else batches:
                    yield batch.texts
                    advance(len(batch))
                    faults.checkpoint(f"{command}-counting")

        executor = _executor(opts)
        reads = _shard_reads(inputs, against, reader, opts["ray_shard_rows"]) \
            if opts["engine"] == "ray" else None
        start = time.perf_counter()
        facts = work.done("count", count_key)
        if facts is None:
            stage = work.start("count")
            expected = size * (3 if compressed else 1)
            if reads is not None:
                with progress_bar("counting", enabled=progress) as advance:
                    decisions = sharded.find(reads, reader, work_dir=stage,
                                             memory_limit=memory_limit, expected_bytes=expected,
                                             advance=advance)
            else:
                decisions = find(texts(inputs, "counting", True),
                                 texts(against, "reading --against", False) if against else None,
                                 work_dir=stage, memory_limit=memory_limit,
                                 expected_bytes=expected, executor=executor)
            work.finish("count", count_key, decisions_facts(decisions, stage))
            faults.checkpoint(f"{command}-counted")
        else:
            decisions = decisions_from_facts(facts, work.stage_dir("count"))
        timings["count"] = time.perf_counter() - start
        start = time.perf_counter()
        table: dict[str, list] = {k: [] for k in ("id", "source", "row", "bytes_before",
                                                  "bytes_removed", "ranges_removed", "dropped")}
        batches: deque = deque()  # read ahead of the removals by the executor's window

        def rewrite_texts():
            for batch in watch.second_batches(read_corpus(list(inputs), reader),
                                              f"neardup {command}"):
                batches.append(batch)
                yield batch.texts

        def local_units():
            """(removal, records, ids, rows, source) per batch, read in this process."""
            source = iter_records(list(inputs), reader)
            for removal in remove(rewrite_texts(), decisions, executor=executor):
                batch = batches.popleft()
                yield (removal, (next(source) for _ in range(len(batch))), batch.ids,
                       batch.rows, batch.source)

        def records():
            if reads is not None:
                units = sharded.rewrite([r for r in reads if not r.against], reader, decisions)
            else:
                units = local_units()
            with progress_bar("rewriting", enabled=progress) as advance:
                for removal, unit_records, ids, rows, source in units:
                    for i, record in enumerate(unit_records):
                        emptied = (removal.chars_removed[i] > 0
                                   and not removal.texts[i].strip())
                        dropped = bool(opts["drop_empty"] and emptied)
                        table["dropped"].append(dropped)
                        if opts["mark"]:
                            record[field] = removal.ranges[i]
                        else:
                            record[reader.text_field] = removal.texts[i]
                        if not dropped:
                            yield record
                    table["id"].extend(ids)
                    table["source"].extend([source] * len(ids))
                    table["row"].extend(rows.tolist())
                    for key in ("bytes_before", "bytes_removed", "ranges_removed"):
                        table[key].extend(getattr(removal, key).tolist())
                    advance(len(ids))
                    faults.checkpoint(f"{command}-rewriting")

        if "--out" in outputs:
            outputs.write_records("--out", records())
        else:
            for _ in records():
                pass
        watch.check(f"neardup {command}")
        timings["rewrite"] = time.perf_counter() - start
        report = _report(command, inputs, against, parameters, decisions, table, timings,
                         memory_limit)
        if "--removed-out" in outputs:
            import pyarrow as pa

            outputs.write_table("--removed-out", pa.table({
                "id": pa.array(table["id"], pa.string()),
                "source": pa.array(table["source"], pa.string()),
                "row": pa.array(table["row"], pa.int64()),
                "bytes_before": pa.array(table["bytes_before"], pa.int64()),
                "bytes_removed": pa.array(table["bytes_removed"], pa.int64()),
                "ranges_removed": pa.array(table["ranges_removed"], pa.int64()),
                "dropped": pa.array(table["dropped"], pa.bool_())}))
        if "--report" in outputs:
            outputs.write_text("--report", json.dumps(report, indent=2, sort_keys=True,
                                                      default=str) + "\n")
        outputs.commit()
    return report


def _report(command, inputs, against, parameters, decisions, table, timings, memory_limit):
    import numpy as np

    removed = np.asarray(table["bytes_removed"], np.int64)
    before = np.asarray(table["bytes_before"], np.int64)
    changed = removed > 0
    summary = {
        "documents": int(removed.shape[0]),
        "documents_changed": int(changed.sum()),
        "documents_dropped": int(sum(table["dropped"])),
        "bytes_before": int(before.sum()),
        "bytes_removed": int(removed.sum()),
        "bytes_removed_fraction": float(removed.sum() / before.sum()) if before.sum() else 0.0,
        "ranges_removed": int(sum(table["ranges_removed"])),
        "memory_limit_bytes": int(memory_limit),
        "spilled_to_disk": bool(decisions.spilled),
    }
    if changed.any():
        quantiles = np.quantile(removed[changed], [0.5, 0.9, 0.99]).tolist()
        summary["bytes_removed_per_changed_document"] = {
            "median": quantiles[0], "p90": quantiles[1], "p99": quantiles[2],
            "max": int(removed.max())}
    report = {"command": command, "inputs": [os.fspath(p) for p in inputs],
              "parameters": parameters, "summary": summary, "timings_seconds": timings}
    if against:
        report["against"] = [os.fspath(p) for p in against]
    if command == "spans":
        summary.update(spans=decisions.spans, distinct_spans=decisions.distinct,
                       repeated_spans=decisions.repeated,
                       repeated_occurrences=decisions.occurrences,
                       occurrences_removed=decisions.removed, partitions=decisions.partitions)
        report["top_spans"] = [{"text": t.get("text", ""), "documents": t["docs"],
                                "occurrences": t["occurrences"]} for t in decisions.top]
    else:
        summary.update(tokens=decisions.tokens, chunks=decisions.chunks,
                       windows_removed_within_chunks=decisions.windows_within,
                       window_hashes_shared_across_chunks=decisions.shared_hashes)
        if against:
            summary["against_documents"] = decisions.against_docs
    return report


def _print(report: dict[str, Any], what: str) -> None:
    s = report["summary"]
    click.echo(f"{s['documents']:,} documents, {s['documents_changed']:,} changed; "
               f"{s['bytes_removed']:,} of {s['bytes_before']:,} bytes {what} "
               f"({100 * s['bytes_removed_fraction']:.1f}%).")
    for entry in report.get("top_spans", [])[:5]:
        text = " ".join(entry["text"].split())
        click.echo(f"  {entry['documents']:>8,} docs  {text[:70]!r}")


def _span_rewrite(reads, reader, decisions):
    from neardup.spans.sharded import rewrite_shards, span_cuts

    return rewrite_shards(reads, reader, *span_cuts(decisions), top=decisions.top)


def _substring_rewrite(reads, reader, decisions):
    import ray

    from neardup.spans.sharded import rewrite_shards, substring_cuts

    return rewrite_shards(reads, reader, *substring_cuts(decisions, ray.put))


def _command_errors():
    from neardup.cli._checks import command_errors

    return command_errors(flags=_FLAGS, catch=(ImportError,))


@click.command("spans")
@click.option("--unit", default="line", show_default=True, metavar="line|paragraph|sentences:N",
              help="What a span is: a line, a paragraph (text between blank lines) or every "
                   "window of N consecutive sentences.")
@click.option("--min-length", type=click.IntRange(min=1), default=20, show_default=True,
              help="Shortest span matched, in characters after normalization (shorter lines "
                   "such as 'Yes.' or 'Chapter 1' repeat by chance, not as boilerplate).")
@click.option("--min-repeats", type=click.IntRange(min=2), default=2, show_default=True,
              help="A span is repeated when it occurs in at least this many distinct "
                   "documents (occurrences within one document count once).")
@click.option("--keep", type=click.Choice(["first", "last", "none"]), default="first",
              show_default=True,
              help="Which occurrence of a repeated span stays: the first in input order, the "
                   "last, or none.")
@click.option("--top", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many of the most repeated spans --report lists.")
@_shared_options
def spans_command(inputs: tuple[Path, ...], **opts: Any) -> None:
    """Remove repeated lines, paragraphs or sentence windows across INPUT files.

    Spans are matched after normalization (whitespace collapsed, case folded). A span
    found in --min-repeats or more documents keeps one occurrence (--keep) and loses
    the others, with the separator after them. Out of core: span hashes are
    partitioned into files under --work-dir beyond --memory-limit.

    \b
    Example:
      neardup spans crawl.jsonl --unit sentences:3 --out clean.jsonl --report spans.json
    """
    from neardup.spans import SpanDedupConfig, find_repeated_spans, remove_spans
    from neardup.spans.sharded import find_spans_sharded

    with _command_errors():
        config = SpanDedupConfig(unit=opts["unit"], min_length=opts["min_length"],
                                 min_repeats=opts["min_repeats"], keep=opts["keep"],
                                 top=opts["top"])

        def find(batches, _against, **kwargs):
            return find_repeated_spans(batches, config, **kwargs)

        parameters = {"unit": str(config.unit), "min_length": config.min_length,
                      "min_repeats": config.min_repeats, "keep": config.keep,
                      "mark": opts["mark"], "drop_empty": opts["drop_empty"]}
        report = _run("spans", inputs, opts, (), find, remove_spans, "duplicate_spans", parameters,
                      _ShardedPasses(partial(find_spans_sharded, config=config), _span_rewrite))
    if not opts["quiet"]:
        _print(report, "marked" if opts["mark"] else "removed")


@click.command("substrings")
@click.option("--min-tokens", type=click.IntRange(min=1), default=50, show_default=True,
              help="Shortest repeated substring removed, in whitespace tokens (Lee et al. "
                   "2022 use 50).")
@click.option("--against", multiple=True, type=click.Path(path_type=Path),
              help="Another corpus (repeatable): remove the substrings of INPUT that occur in "
                   "it, instead of INPUT's own repeats.")
@_shared_options
def substrings_command(inputs: tuple[Path, ...], **opts: Any) -> None:
    """Remove exact substrings of --min-tokens or more tokens repeated across INPUT files.

    Found with suffix arrays (pydivsufsort) over chunks of the corpus sized from
    --memory-limit, and a table of window hashes across chunks. The first occurrence
    stays; with --against, every occurrence of a substring of the other corpus goes.

    \b
    Example:
      neardup substrings crawl.jsonl --min-tokens 50 --out clean.jsonl --report sub.json
    """
    from neardup.spans import find_repeated_substrings, remove_substrings
    from neardup.spans.sharded import find_substrings_sharded

    against = tuple(opts.pop("against"))
    with _command_errors():
        n = opts["min_tokens"]

        def find(batches, against_batches, **kwargs):
            return find_repeated_substrings(batches, n, against=against_batches, **kwargs)

        parameters = {"min_tokens": n, "mark": opts["mark"], "drop_empty": opts["drop_empty"]}
        def find_sharded(reads, reader, **kwargs):
            return find_substrings_sharded(reads, reader, n, against_mode=bool(against), **kwargs)

        report = _run("substrings", inputs, opts, against, find, remove_substrings,
                      "duplicate_substrings", parameters,
                      _ShardedPasses(find_sharded, _substring_rewrite))
    if not opts["quiet"]:
        _print(report, "marked" if opts["mark"] else "removed")

