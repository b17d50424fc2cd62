"""``neardup dedup``: find near-duplicates in files and write clusters, pairs, de-duplicated corpus."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from neardup.cli.options import (
    cluster_config_from_options,
    cluster_options,
    method_options,
    method_params_from_options,
    reader_config_from_options,
    reader_options,
    run_options,
)
from neardup.errors import NeardupError
from neardup.methods import make_method
from neardup.cli.engine import corpus_stage_from_options, engine_options, input_identity
from neardup.pipeline import KEEP_RULES, Result, run

DEMO_HINT = "no INPUT given: running on the bundled demo corpus"


def _demo_corpus() -> Path:
    from neardup.data import demo_corpus_path

    return demo_corpus_path()


def _hints(result: Result) -> list[str]:
    """Advice for the end of the summary: a dated corpus run without a time window."""
    window = result.params.get("cluster", {}).get("time_window_hours")
    if result.has_dates and window is None and result.method != "sanderson":
        return [
            "The input has dates: --time-window HOURS (e.g. 48) keeps documents dated "
            "further apart out of one cluster, so recurring reports with the same wording "
            "(templates) are not merged. Pairs identical after normalization (exact; ngram "
            "and minhash Jaccard 1.0) are merged whatever their dates."
        ]
    return []


def _print_summary(result: Result, console: Any, extra_timings: dict[str, float]) -> None:
    from rich.table import Table

    summary = result.summary()
    table = Table(title=f"neardup dedup --method {result.method}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key.replace("_", " "), f"{value:,}")
    timings = {**result.timings, **extra_timings}
    total = sum(timings.values()) or 1.0
    for stage, seconds in timings.items():
        table.add_row(f"time: {stage}", f"{seconds:.2f} s ({100 * seconds / total:.0f}%)")
    table.add_row("time: total", f"{total:.2f} s")
    console.print(table)
    for hint in _hints(result):
        console.print(f"[dim]hint: {hint}[/dim]")


@click.command("dedup")
@click.argument("inputs", nargs=-1, type=click.Path(path_type=Path))
@method_options
@reader_options
@cluster_options
@click.option("--keep", type=click.Choice(list(KEEP_RULES)), default="longest",
              show_default=True,
              help="Representative per cluster: longest text (ties: input order) or first.")
@click.option("--clusters-out", type=click.Path(path_type=Path), default=None,
              help="Write one row per input document (id, cluster, cluster_size, "
                   "representative, status, template): .parquet, .jsonl or .csv.")
@click.option("--pairs-out", type=click.Path(path_type=Path), default=None,
              help="Write the scored edges (id_a, id_b, score, method, type = exact / "
                   "expanded / corrected / template / near, outside_window).")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="Write the de-duplicated corpus (one representative per cluster, all "
                   "fields kept): .jsonl, .jsonl.gz, .parquet or .csv.")
@click.option("--report", type=click.Path(path_type=Path), default=None,
              help="Write the run summary, parameters and timings as JSON.")
@click.option("--html", type=click.Path(path_type=Path), default=None,
              help="Write an HTML report of the run (one offline page; see neardup report).")
@run_options
@engine_options
def dedup_command(inputs: tuple[Path, ...], **opts: Any) -> None:
    """Find near-duplicates in INPUT files and cluster them.

    INPUT: JSONL (.jsonl, .jsonl.gz), Parquet, CSV/TSV, a directory of .txt files, or
    Reuters-21578 SGML (.sgm); several may be given. Without INPUT, runs on the bundled
    demo corpus.

    \b
    Example:
      neardup dedup corpus.jsonl --method minhash --threshold 0.5 \\
          --clusters-out clusters.parquet --out deduped.jsonl
    """
    from rich.console import Console

    from neardup.io import iter_records, read_corpus, write_records, write_table

    console = Console(stderr=True, quiet=opts["quiet"])
    if not inputs:
        inputs = (_demo_corpus(),)
        console.print(f"[dim]{DEMO_HINT} ({inputs[0].name})[/dim]")
    method = opts["method"]
    try:
        params = method_params_from_options(method, opts, seed=opts["seed"])
        method_obj = make_method(method, **params)
        cluster = cluster_config_from_options(opts, seed=opts["seed"])
        reader = reader_config_from_options(opts)
        progress = False if opts["quiet"] else opts["progress"]
        # Pair types need a second read of the paired documents: only when pairs are written.
        reread = (lambda: read_corpus(list(inputs), reader)) if opts["pairs_out"] else None
        result = run(read_corpus(list(inputs), reader), method_obj, cluster=cluster,
                     keep=opts["keep"], progress=progress, reread=reread,
                     engine=opts["engine"], corpus_stage=corpus_stage_from_options(opts, inputs),
                     input_identity=input_identity(inputs, dataclasses.asdict(reader)))
        write_seconds = _write_outputs(result, inputs, reader, opts, write_table, write_records,
                                       iter_records)
        if opts["html"] is not None:
            from neardup.report import write_report

            write_report(opts["html"], result, list(inputs), reader)
    except (NeardupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not opts["quiet"]:
        _print_summary(result, Console(), {"write": write_seconds} if write_seconds else {})


def _metadata(result: Result) -> dict[bytes, bytes]:
    meta = {"method": result.method, "params": result.params}
    return {b"neardup": json.dumps(meta, sort_keys=True, default=str).encode()}


def _write_outputs(result, inputs, reader, opts, write_table, write_records, iter_records) -> float:
    import time

    start = time.perf_counter()
    meta = _metadata(result)
    wrote = False
    if opts["clusters_out"] is not None:
        write_table(opts["clusters_out"], result.clusters_table().replace_schema_metadata(meta))
        wrote = True
    if opts["pairs_out"] is not None:
        write_table(opts["pairs_out"], result.pairs_table().replace_schema_metadata(meta))
        wrote = True
    if opts["out"] is not None:
        keep = result.representative
        records = (
            rec for rec, kept in zip(iter_records(list(inputs), reader), keep, strict=True) if kept
        )
        write_records(opts["out"], records)
        wrote = True
    if opts["report"] is not None:
        from neardup.io.writers import atomic_path

        report = {
            "summary": result.summary(),
            "method": result.method,
            "params": result.params,
            "timings_seconds": result.timings,
            "inputs": [str(p) for p in inputs],
            "template_clusters": result.template_clusters(),
            "hints": _hints(result),
        }
        with atomic_path(opts["report"]) as tmp:
            Path(tmp).write_text(json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")
        wrote = True
    return time.perf_counter() - start if wrote else 0.0

