"""``neardup report``: one self-contained HTML page to inspect a ``neardup dedup`` run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from neardup.cli.options import reader_config_from_options, reader_options
from neardup.errors import InputError


def _columns(path: Path) -> list[str]:
    """Column names of a table neardup wrote, read from its schema or first line ([] when
    it cannot be read as one)."""
    try:
        return _read_columns(path)
    except Exception:  # noqa: BLE001 - any unreadable file is "not a table neardup wrote"
        return []


def _read_columns(path: Path) -> list[str]:
    name = path.name.lower()
    if path.is_dir():  # --engine ray's tables: a directory of Parquet parts
        import pyarrow.parquet as pq

        from neardup.report.run import parquet_parts

        parts = parquet_parts(path)
        return list(pq.read_schema(parts[0]).names) if parts else []
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    if name.endswith((".jsonl", ".jsonl.gz")):
        import gzip

        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            line = handle.readline()
        try:
            return list(json.loads(line)) if line.strip() else []
        except ValueError:
            return []
    if name.endswith((".csv", ".tsv")):
        with open(path, encoding="utf-8") as handle:
            header = handle.readline().rstrip("\r\n")
        return header.split("," if name.endswith(".csv") else "\t")
    return []


def classify_outputs(paths: tuple[Path, ...]) -> tuple[Path, Path | None, Path | None]:
    """(clusters table, pairs table, summary JSON) among a run's output files."""
    clusters = pairs = summary = None
    for path in paths:
        if path.name.lower().endswith(".json"):
            role = "summary"
        else:
            columns = _columns(path)
            role = ("pairs" if "id_a" in columns else
                    "clusters" if "cluster" in columns and "id" in columns else None)  # fmt: skip
        if role is None:
            raise click.UsageError(
                f"{str(path)!r} is not a clusters table (columns id, cluster), a pairs table "
                "(id_a, id_b, score) or a --report JSON of neardup dedup."
            )
        if {"clusters": clusters, "pairs": pairs, "summary": summary}[role] is not None:
            raise click.UsageError(f"two {role} files given: pass the outputs of one run.")
        if role == "clusters":
            clusters = path
        elif role == "pairs":
            pairs = path
        else:
            summary = path
    if clusters is None:
        raise click.UsageError(
            "RUN_OUTPUTS must include the clusters table (neardup dedup --clusters-out)."
        )
    return clusters, pairs, summary


@click.command("report")
@click.argument("run_outputs", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--input", "inputs", multiple=True, type=click.Path(path_type=Path),
              help="The corpus the run read (repeatable, same order); texts come from it. "
                   "Default: the inputs recorded in the --report JSON.")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="The HTML file to write.")
@click.option("--label-field", default=None,
              help="Field holding a ground-truth cluster label on each input record: the "
                   "report then lists false merges and misses.")
@click.option("--max-clusters", type=click.IntRange(min=1), default=500, show_default=True,
              help="Clusters shown with texts, largest first; counts cover all clusters.")
@click.option("--max-members", type=click.IntRange(min=1), default=50, show_default=True,
              help="Members shown per cluster (representative first).")
@click.option("--max-chars", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Characters kept of each text.")
@reader_options
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def report_command(run_outputs: tuple[Path, ...], **opts: Any) -> None:
    """Write an HTML report of a neardup dedup run.

    RUN_OUTPUTS: the files the run wrote: the clusters table (--clusters-out, required),
    the pairs table (--pairs-out: score histogram, pair types, alignments' scores) and the
    summary JSON (--report: counts, parameters, timings, input paths), in any order. A
    table written by --engine ray is a directory of Parquet parts: pass the directory.
    Give the reader options (--text-field, --id-field, --limit...) the run was given.

    The page is one file with inline script and style: it opens offline in any browser.
    It embeds the texts of the --max-clusters largest clusters only (at most
    --max-members each, --max-chars characters per text), so it stays a few MB for runs
    of any size.

    \b
    Example:
      neardup dedup news.jsonl --id-field url --clusters-out c.parquet \\
          --pairs-out p.parquet --report run.json
      neardup report c.parquet p.parquet run.json --id-field url --out report.html
    """
    import time

    from rich.console import Console

    from neardup.cli._checks import command_errors, output_set
    from neardup.report import ReportLimits, collect_report, load_run, render_html

    console = Console(stderr=True, quiet=opts["quiet"])
    start = time.perf_counter()
    with command_errors({"label_field": "--label-field"}):
        clusters, pairs, summary = classify_outputs(run_outputs)
        reader = reader_config_from_options(opts)
        inputs = list(opts["inputs"]) or _recorded_inputs(summary)
        if not inputs:
            raise InputError(
                "report: no input corpus: pass --input (the files the run read), or the "
                "run's --report JSON, which records them."
            )
        for path in inputs:  # before any work: the corpus the texts come from exists
            if not Path(path).exists():
                how = ("--input" if opts["inputs"] else
                       f"the input recorded in {summary}; pass --input to give it")
                raise InputError(f"{path}: no such file ({how}).")
        # --out checked before any reading: .html, writable, not one of the run's files
        # or inputs (links included).
        outputs = output_set((*run_outputs, *inputs), [("--out", opts["out"], ("html",))])
        with outputs:
            run = load_run(clusters, pairs, summary)
            limits = ReportLimits(max_clusters=opts["max_clusters"],
                                  max_members=opts["max_members"], max_chars=opts["max_chars"])
            data = collect_report(run, inputs, reader, label_field=opts["label_field"],
                                  limits=limits)
            page = render_html(data).encode("utf-8")
            outputs.temporary("--out").write_bytes(page)
            outputs.commit()
    console.print(
        f"wrote {opts['out']} ({len(page) / 1e6:.1f} MB; {data['meta']['clusters_shown']:,} of "
        f"{data['meta']['clusters_total']:,} clusters shown) in "
        f"{time.perf_counter() - start:.1f} s"
    )


def _recorded_inputs(summary: Path | None) -> list[Path]:
    """The inputs a --report JSON records (read before any work, to check --out against
    them); [] when there is no such JSON or it records none."""
    if summary is None:
        return []
    try:
        report = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        why = ("nested too deeply" if isinstance(exc, RecursionError)
               else getattr(exc, "strerror", None) or exc)
        raise InputError(f"report: {str(summary)!r} is not JSON ({why}); pass the file "
                         "neardup dedup wrote with --report.") from None
    recorded = report.get("inputs") if isinstance(report, dict) else None
    if not isinstance(recorded, list):
        return []
    return [Path(p) for p in recorded if isinstance(p, str)]
