"""``neardup leakage``: test documents with exact or near-duplicates in a training corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from neardup.cli.options import (
    named_method_options,
    method_params_from_options,
    profile_from_inputs,
    reader_config_from_options,
    reader_options,
    run_options,
)
from neardup.methods import make_method


@click.command("leakage")
@click.option("--train", "train", multiple=True, required=True, type=click.Path(path_type=Path),
              help="Training corpus input (repeatable; any format `dedup` reads).")
@click.option("--test", "test", multiple=True, required=True, type=click.Path(path_type=Path),
              help="Test corpus input (repeatable); reported per file.")
@named_method_options
@reader_options
@click.option("--pairs-out", type=click.Path(path_type=Path), default=None,
              help="Write the flagged (test_id, train_id, score, kind, test_file, "
                   "train_file) pairs: .parquet, .jsonl, .jsonl.gz, .csv or .tsv.")
@click.option("--report", type=click.Path(path_type=Path), default=None,
              help="Write the per-file counts, parameters and timings as JSON (.json). Outputs "
                   "are checked before any reading and written as a set.")
@click.option("--examples", type=click.IntRange(min=0), default=5, show_default=True,
              help="How many flagged pairs to print.")
@run_options
def leakage_command(train: tuple[Path, ...], test: tuple[Path, ...], **opts: Any) -> None:
    """Find test documents that have exact or near-duplicates in the training corpus.

    Exact duplicates inside the test set are counted once ("unique texts"); test
    documents with an exact copy in training are reported apart from those with a
    near-duplicate found by --method.

    \b
    Example:
      neardup leakage --train train.jsonl --test test.jsonl --method minhash \\
          --threshold 0.8 --ngram 10 --pairs-out leaks.parquet
    """
    from rich.console import Console
    from rich.table import Table

    from neardup.cli._checks import command_errors, output_set
    from neardup.io import read_corpus
    from neardup.leakage import find_leakage

    with command_errors():
        reader = reader_config_from_options(opts)
        # --profile auto reads the first training documents.
        choice = profile_from_inputs(opts, opts["method"], train, reader)
        method = make_method(opts["method"], **method_params_from_options(
            opts["method"], {**opts, "profile": choice.name}, seed=opts["seed"]))
        progress = False if opts["quiet"] else opts["progress"]
        # Both outputs checked before any reading (format, directory, not an input, not
        # each other) and written as a set.
        outputs = output_set((*train, *test), [("--pairs-out", opts["pairs_out"], None),
                                               ("--report", opts["report"], ("json",))])
        with outputs:
            report = find_leakage(read_corpus(list(train), reader),
                                  read_corpus(list(test), reader), method, progress=progress)
            if "--pairs-out" in outputs:
                outputs.write_table("--pairs-out", report.pairs)
            if "--report" in outputs:
                payload = {
                    "summary": report.summary(),
                    "per_file": report.per_file,
                    "method": report.method,
                    "params": report.params,
                    "timings_seconds": report.timings,
                    "train": [str(p) for p in train],
                    "test": [str(p) for p in test],
                }
                outputs.write_text("--report", json.dumps(payload, indent=2, sort_keys=True,
                                                          default=str) + "\n")
            outputs.commit()
    if opts["quiet"]:
        return
    console = Console()
    table = Table(title=f"neardup leakage --method {report.method}")
    for column in ("test file", "documents", "unique texts", "exact leaks", "near leaks", "leaked"):
        table.add_column(column, justify="left" if column == "test file" else "right")
    for f in report.per_file:
        table.add_row(f["file"], f"{f['documents']:,}", f"{f['unique_texts']:,}", f"{f['exact_leaks']:,}",
                      f"{f['near_leaks']:,}", f"{f['leaked']:,} ({100 * f['leaked_fraction']:.1f}%)")
    console.print(table)
    if report.summary()["test_documents"] == 0:
        console.print("[yellow]warning:[/yellow] the --test files hold no document: nothing "
                      "was checked for leakage.")
    examples = report.pairs.slice(0, opts["examples"]).to_pylist()
    for e in examples:
        console.print(f"  {e['kind']:5} {e['score']:.2f}  test {e['test_id']} ~ train {e['train_id']}")
