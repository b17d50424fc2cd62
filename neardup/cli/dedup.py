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
        if opts["engine"] == "ray":
            summary = _run_ray(inputs, method_obj, cluster, reader, progress, opts)
            if not opts["quiet"]:
                _print_ray_summary(summary, method, Console())
            return
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
    except (NeardupError, ValueError, ImportError) as exc:  # ImportError: a missing extra
        raise click.ClickException(str(exc)) from exc
    if not opts["quiet"]:
        _print_summary(result, Console(), {"write": write_seconds} if write_seconds else {})


def _run_ray(inputs, method_obj, cluster, reader, progress, opts) -> dict[str, Any]:
    """``--engine ray``: the workers read the inputs and write the outputs (directories of
    Parquet files); the driver holds per-duplicate integers only."""
    import time

    from neardup.engine.ray_engine import RayConfig, RayInputs, RayRun, write_outputs
    from neardup.engine import supports_corpus_stage

    for name in ("clusters_out", "pairs_out", "out"):
        path = opts[name]
        if path is not None and path.suffix and path.suffix.lower() != ".parquet":
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(
                f"{flag} {path}: with --engine ray the output is a directory of Parquet files "
                f"written by the workers; give a directory path (e.g. {path.with_suffix('')})."
            )
    if opts["html"] is not None:
        raise click.UsageError("--html is not supported with --engine ray (it needs every "
                               "document on one machine); use --engine local.")
    if not supports_corpus_stage(method_obj, cluster.algorithm):
        raise click.UsageError(
            f"--engine ray runs exact, minhash and simhash clustered by components; got "
            f"--method {method_obj.name} with --cluster {cluster.algorithm}. Use --engine local."
        )
    config = RayConfig(address=opts["ray_address"], partitions=opts["partitions"])
    run = RayRun(RayInputs(tuple(str(p) for p in inputs), reader), method_obj, config=config,
                 time_window_hours=cluster.time_window_hours, progress=progress)
    run.execute()
    start = time.perf_counter()
    summary = write_outputs(run, clusters_out=opts["clusters_out"], pairs_out=opts["pairs_out"],
                            out=opts["out"], max_cluster_size=cluster.max_cluster_size,
                            oversized=cluster.oversized, keep=opts["keep"])
    timings = {**run.timer.seconds, "write": time.perf_counter() - start}
    if opts["report"] is not None:
        from neardup.io.writers import atomic_path

        report = {"summary": summary, "method": method_obj.name,
                  "params": {"method": method_obj.get_params(), "cluster": cluster.get_params(),
                             "keep": opts["keep"], "engine": "ray", "corpus_stage": run.stats},
                  "timings_seconds": timings, "inputs": [str(p) for p in inputs]}
        with atomic_path(opts["report"]) as tmp:
            Path(tmp).write_text(json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")
    summary["_timings"] = timings
    return summary


def _print_ray_summary(summary: dict[str, Any], method: str, console: Any) -> None:
    from rich.table import Table

    timings = summary.pop("_timings")
    table = Table(title=f"neardup dedup --method {method} --engine ray", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key.replace("_", " "), f"{value:,}")
    total = sum(timings.values()) or 1.0
    for stage, seconds in timings.items():
        table.add_row(f"time: {stage}", f"{seconds:.2f} s ({100 * seconds / total:.0f}%)")
    table.add_row("time: total", f"{total:.2f} s")
    console.print(table)


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
        }
        with atomic_path(opts["report"]) as tmp:
            Path(tmp).write_text(json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")
        wrote = True
    return time.perf_counter() - start if wrote else 0.0

