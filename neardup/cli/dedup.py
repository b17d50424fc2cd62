"""``neardup dedup``: find near-duplicates in files and write clusters, pairs, de-duplicated corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import numpy as np

from neardup.errors import NeardupError
from neardup.methods import METHODS, make_method, method_parameters
from neardup.pipeline import KEEP_RULES, ClusterConfig, Result, run
from neardup.text import NormalizeConfig, ShingleConfig

DEMO_HINT = "no INPUT given: running on the bundled demo corpus"


def _demo_corpus() -> Path:
    from neardup.data import demo_corpus_path

    return demo_corpus_path()


def _method_params(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """Map CLI options onto the method's constructor; reject options it does not take."""
    accepted = set(method_parameters(method))
    params: dict[str, Any] = {}
    given = {k: v for k, v in options.items() if v is not None}
    for name, value in given.items():
        if name not in accepted:
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"option {flag} does not apply to --method {method}.")
        params[name] = value
    if method == "simhash" and "threshold" in params:
        value = params["threshold"]
        if float(value) != int(value):
            raise click.UsageError(
                f"--threshold for simhash is a Hamming distance in bits (an integer); got {value}."
            )
        params["threshold"] = int(value)
    return params


def _normalize_config(flags: dict[str, bool]) -> NormalizeConfig:
    return NormalizeConfig(
        remove_invisible=not flags["keep_invisible"],
        nfkc=not flags["no_nfkc"],
        repair_hyphens=not flags["no_hyphen_repair"],
        fold_homoglyphs=not flags["no_homoglyph_fold"],
        casefold=not flags["no_casefold"],
        strip_punctuation=not flags["keep_punctuation"],
        collapse_whitespace=True,
    )


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
@click.option("--method", "method", type=click.Choice(list(METHODS)), default="minhash",
              show_default=True, help="Near-duplicate detection method.")
@click.option("--threshold", type=float, default=None,
              help="Similarity cut-off. minhash/ngram: Jaccard (or containment) in [0, 1], "
                   "default 0.5; simhash: maximum Hamming distance in bits, default 3. "
                   "Tune it on labelled validation data.")
@click.option("--num-perm", type=int, default=None,
              help="minhash: signature length (default 128).")
@click.option("--bands", type=int, default=None,
              help="minhash: LSH bands; with --rows overrides the choice from --threshold.")
@click.option("--rows", type=int, default=None, help="minhash: rows per LSH band.")
@click.option("--verify", type=click.Choice(["signature", "exact", "none"]), default=None,
              help="minhash: confirm candidates by estimated Jaccard (default), exact "
                   "Jaccard, or not at all (every band collision is an edge).")
@click.option("--max-bucket-pairs", type=int, default=None,
              help="minhash: LSH buckets with more members are chained, not fully paired "
                   "(default 50).")
@click.option("--similarity", type=click.Choice(["jaccard", "containment"]), default=None,
              help="ngram: Jaccard, or containment |A&B|/min(|A|,|B|) for abridged copies.")
@click.option("--max-df", type=int, default=None,
              help="ngram: shingles in more documents than this are not used to find "
                   "candidates (default 1000); similarity stays exact.")
@click.option("--weighting", type=click.Choice(["tf", "binary"]), default=None,
              help="simhash: shingle votes by occurrence (tf, default) or once (binary).")
@click.option("--shingle", "shingle_unit", type=click.Choice(["word", "char"]), default="word",
              show_default=True, help="Shingle unit.")
@click.option("--ngram", "ngram_n", type=int, default=None,
              help="Shingle length in units (default 3 words; try 10-25 for --shingle char).")
@click.option("--keep-invisible", is_flag=True, help="Do not remove zero-width/format characters.")
@click.option("--no-nfkc", is_flag=True, help="Skip Unicode NFKC normalization.")
@click.option("--no-hyphen-repair", is_flag=True, help="Do not join end-of-line hyphenation.")
@click.option("--no-homoglyph-fold", is_flag=True, help="Do not fold Cyrillic/Greek look-alikes.")
@click.option("--no-casefold", is_flag=True, help="Keep letter case.")
@click.option("--keep-punctuation", is_flag=True, help="Keep punctuation in tokens.")
@click.option("--text-field", default="text", show_default=True,
              help="Field holding the text (JSONL, Parquet, CSV/TSV).")
@click.option("--id-field", default=None,
              help="Field holding a unique document id (default: the row number).")
@click.option("--date-field", default=None, help="Field holding a date (parsed; optional).")
@click.option("--errors", "decode_errors", type=click.Choice(["strict", "replace"]),
              default="strict", show_default=True,
              help="Invalid UTF-8: fail naming file and byte offset, or replace with U+FFFD "
                   "and warn.")
@click.option("--batch-size", type=int, default=10_000, show_default=True,
              help="Documents per batch (bounds memory for raw text).")
@click.option("--limit", type=int, default=None, help="Read at most this many documents.")
@click.option("--cluster", "cluster_algorithm",
              type=click.Choice(["components", "leiden", "louvain"]), default="components",
              show_default=True,
              help="Connected components, or community detection to cut weak bridges.")
@click.option("--resolution", type=float, default=1.0, show_default=True,
              help="Community-detection resolution (higher: smaller communities).")
@click.option("--max-cluster-size", type=int, default=None,
              help="Flag clusters larger than this as templates/boilerplate.")
@click.option("--oversized", type=click.Choice(["flag", "split"]), default="flag",
              show_default=True,
              help="Keep flagged oversized clusters, or leave their members unmerged.")
@click.option("--keep", type=click.Choice(list(KEEP_RULES)), default="longest",
              show_default=True,
              help="Representative per cluster: longest text (ties: input order) or first.")
@click.option("--clusters-out", type=click.Path(path_type=Path), default=None,
              help="Write one row per input document (id, cluster, cluster_size, "
                   "representative, status, template): .parquet, .jsonl or .csv.")
@click.option("--pairs-out", type=click.Path(path_type=Path), default=None,
              help="Write the scored edges (id_a, id_b, score, method).")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="Write the de-duplicated corpus (one representative per cluster, all "
                   "fields kept): .jsonl, .jsonl.gz, .parquet or .csv.")
@click.option("--report", type=click.Path(path_type=Path), default=None,
              help="Write the run summary, parameters and timings as JSON.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seeds hashing, permutations and community detection.")
@click.option("--progress/--no-progress", default=None,
              help="Show progress bars (default: when stderr is a terminal).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
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

    from neardup.io import ReaderConfig, iter_records, read_corpus, write_records, write_table

    console = Console(stderr=True, quiet=opts["quiet"])
    if not inputs:
        inputs = (_demo_corpus(),)
        console.print(f"[dim]{DEMO_HINT} ({inputs[0].name})[/dim]")
    method = opts["method"]
    shingle_n = opts["ngram_n"]
    method_options = {
        "threshold": opts["threshold"],
        "num_perm": opts["num_perm"],
        "bands": opts["bands"],
        "rows": opts["rows"],
        "verify": opts["verify"],
        "max_bucket_pairs": opts["max_bucket_pairs"],
        "similarity": opts["similarity"],
        "max_df": opts["max_df"],
        "weighting": opts["weighting"],
    }
    try:
        params = _method_params(method, method_options)
        accepted = method_parameters(method)
        if "shingle" in accepted:
            params["shingle"] = ShingleConfig(unit=opts["shingle_unit"], n=shingle_n or 3)
        elif shingle_n is not None or opts["shingle_unit"] != "word":
            raise click.UsageError(f"--shingle/--ngram do not apply to --method {method}.")
        if "normalize" in accepted:
            params["normalize"] = _normalize_config(opts)
        if "seed" in accepted:
            params["seed"] = opts["seed"]
        method_obj = make_method(method, **params)
        cluster = ClusterConfig(
            algorithm=opts["cluster_algorithm"],
            max_cluster_size=opts["max_cluster_size"],
            oversized=opts["oversized"],
            resolution=opts["resolution"],
            seed=opts["seed"],
        )
        reader = ReaderConfig(
            text_field=opts["text_field"],
            id_field=opts["id_field"],
            date_field=opts["date_field"],
            errors=opts["decode_errors"],
            batch_size=opts["batch_size"],
            limit=opts["limit"],
        )
        progress = False if opts["quiet"] else opts["progress"]
        result = run(read_corpus(list(inputs), reader), method_obj, cluster=cluster,
                     keep=opts["keep"], progress=progress)
        write_seconds = _write_outputs(result, inputs, reader, opts, write_table, write_records,
                                       iter_records)
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
        records = (rec for rec, kept in zip(iter_records(list(inputs), reader), keep) if kept)
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
        }
        with atomic_path(opts["report"]) as tmp:
            Path(tmp).write_text(json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")
        wrote = True
    return time.perf_counter() - start if wrote else 0.0

