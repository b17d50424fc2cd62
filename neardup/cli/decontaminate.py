"""``neardup decontaminate``: remove (or mark) training documents that contain an
evaluation item, found by n-gram overlap and near-duplicate matching
(:mod:`neardup.decontaminate`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from neardup.cli.options import reader_config_from_options, reader_options, run_options
from neardup.methods import METHODS

__all__ = ["decontaminate_command"]

_FLAGS = {"ngram": "--ngram", "min_words": "--min-words", "near_window": "--near-window",
          "eval_index": "--eval-index", "threshold": "--near-threshold",
          "near_method": "--near-method", "shingle": "--near-shingle",
          "near_engine": "--near-engine"}


def _shingle(value: str | None):
    """``word:3`` or ``char:5`` as a ShingleConfig (None: the method's default)."""
    if value is None:
        return None
    from neardup.text import ShingleConfig

    unit, _, n = value.partition(":")
    if unit not in ("word", "char") or not n.isdigit():
        raise click.BadParameter(f"{value!r} is not UNIT:N with UNIT word or char (e.g. "
                                 "char:5)", param_hint="--near-shingle")
    return ShingleConfig(unit=unit, n=int(n))


@click.command("decontaminate")
@click.argument("train", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--against", "against", multiple=True, required=True, type=click.Path(path_type=Path),
              help="An evaluation set (repeatable; any format dedup reads). Each file is one "
                   "set in the report.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Write the clean training records (all fields): .jsonl, .jsonl.gz, .parquet, "
                   ".csv or .tsv. With --mark: every record, marked.")
@click.option("--removed-out", type=click.Path(path_type=Path), default=None,
              help="Write the removed (contaminated) training records; same formats.")
@click.option("--mark", is_flag=True,
              help="Remove nothing: --out gets every training record with the columns "
                   "contaminated (true/false) and contaminated_by (the first matching "
                   "evaluation item, as SET:ID).")
@click.option("--leaks-out", type=click.Path(path_type=Path), default=None,
              help="Write every match (train_id, train_file, eval_set, eval_id, kind = ngram / "
                   "near / exact, score): same formats.")
@click.option("--report", type=click.Path(path_type=Path), default=None,
              help="Write per evaluation set how many items leaked and where (training ids per "
                   "item and kind), the parameters and timings as JSON (.json).")
@click.option("--ngram", type=click.IntRange(min=0, max=255), default=13, show_default=True,
              help="Word n-gram length of the overlap rule (GPT-3's and datatrove's 13); 0 "
                   "turns n-gram matching off.")
@click.option("--min-words", type=click.IntRange(min=1, max=255), default=8, show_default=True,
              help="Items shorter than --ngram words are matched on all their words when they "
                   "have at least this many; shorter ones by near-duplicate matching only.")
@click.option("--near/--no-near", default=True, show_default=True,
              help="Also match paraphrased or noisy copies through an index of the items.")
@click.option("--near-engine", type=click.Choice(["index", "memory"]), default="index", show_default=True,
              help="index: the items in a persistent index, the training corpus streamed past it "
                   "(--near-method exact, minhash or simhash); memory: any dedup method, every "
                   "training document's sketch held in memory (neardup leakage's way).")
@click.option("--near-method", type=click.Choice(list(METHODS)), default="minhash", show_default=True,
              help="The near-duplicate method.")
@click.option("--near-threshold", type=float, default=None,
              help="The near method's threshold (default: minhash 0.5, simhash its own).")
@click.option("--near-shingle", default=None, metavar="UNIT:N",
              help="Shingles of the near method (default char:5 for minhash and simhash, which "
                   "resists OCR noise inside words; e.g. word:3).")
@click.option("--near-window", type=click.IntRange(min=0), default=None,
              help="Query a long training document also as windows of this many words (default: "
                   "the median item length; 0: whole documents only).")
@click.option("--eval-index", type=click.Path(path_type=Path), default=None,
              help="Keep the index of the evaluation items in this directory: reused by a later "
                   "run over the same items, built when absent or empty (default: temporary).")
@reader_options
@run_options
def decontaminate_command(train: tuple[Path, ...], **opts: Any) -> None:
    """Remove training documents that contain an evaluation item.

    A training document is contaminated when it shares a word n-gram (--ngram, 13) with an
    item after normalization, or when it (or a window of it) is a near-duplicate of an item
    in the index (--near). Every training record goes to exactly one of --out and
    --removed-out (or, with --mark, once to --out, marked). Outputs are checked before any
    reading and written as a set.

    \b
    Example:
      neardup decontaminate train.jsonl --against mmlu.jsonl --against gsm8k.jsonl \\
          --out clean.jsonl --removed-out removed.jsonl --report contamination.json
    """
    from rich.console import Console

    from neardup.cli._checks import command_errors, output_set

    if opts["out"] is None and opts["removed_out"] is None and opts["leaks_out"] is None \
            and opts["report"] is None:
        raise click.UsageError("nothing to write: give --out (and --removed-out), --leaks-out or "
                               "--report.")
    if opts["mark"] and opts["out"] is None:
        raise click.UsageError("--mark marks the records it writes to --out: give --out FILE.")
    if opts["mark"] and opts["removed_out"] is not None:
        raise click.UsageError("--mark removes nothing, so --removed-out would stay empty; drop "
                               "one of them.")
    if not opts["near"]:
        for flag in ("near_threshold", "near_shingle", "near_window", "eval_index"):
            if opts[flag] is not None:
                raise click.UsageError(f"--{flag.replace('_', '-')} applies to near-duplicate "
                                       "matching; with --no-near it would be ignored. Drop it.")
    from neardup.decontaminate.run import index_methods

    if opts["near_engine"] == "index" and opts["near_method"] not in index_methods():
        raise click.UsageError(f"--near-method {opts['near_method']} needs --near-engine memory: the "
                               f"index holds {', '.join(index_methods())} only.")
    for flag in ("eval_index", "near_window"):
        if opts["near_engine"] == "memory" and opts[flag] is not None:
            raise click.UsageError(f"--{flag.replace('_', '-')} applies to --near-engine index; with "
                                   "--near-engine memory it would be ignored. Drop it.")
    if opts["ngram"] == 0 and not opts["near"]:
        raise click.UsageError("--ngram 0 with --no-near matches nothing: keep one of them.")
    with command_errors(_FLAGS):
        result = _decontaminate(train, opts, output_set)
    if not opts["quiet"]:
        _print(result, Console())


def _config(opts: dict[str, Any]):
    from neardup.decontaminate import DecontaminationConfig

    params: dict[str, Any] | None = None
    if opts["near_threshold"] is not None or opts["near_shingle"] is not None:
        params = DecontaminationConfig(near_engine=opts["near_engine"],
                                       near_method=opts["near_method"]).near_method_params()
        if opts["near_threshold"] is not None:
            params["threshold"] = opts["near_threshold"]
        if opts["near_shingle"] is not None:
            params["shingle"] = _shingle(opts["near_shingle"])
    return DecontaminationConfig(
        ngram=opts["ngram"], min_words=opts["min_words"], near=opts["near"],
        near_engine=opts["near_engine"], near_method=opts["near_method"], near_params=params,
        near_window=opts["near_window"],
        eval_index=None if opts["eval_index"] is None else str(opts["eval_index"]))


def _decontaminate(train: tuple[Path, ...], opts: dict[str, Any], output_set):
    import os

    import numpy as np

    from neardup.cli.rereads import InputWatch, refuse_single_read_inputs
    from neardup.decontaminate import EvalSets, find_contamination
    from neardup.io import read_corpus

    config = _config(opts)
    reader = reader_config_from_options(opts)
    rereads = [flag for flag, key in (("--out", "out"), ("--removed-out", "removed_out"))
               if opts[key] is not None]
    if rereads:
        refuse_single_read_inputs(train, "TRAIN", f"{' and '.join(rereads)} read"
                                  f"{'s' if len(rereads) == 1 else ''} the training data a "
                                  "second time", rereads)
    outputs = output_set((*train, *opts["against"]), [
        ("--out", opts["out"], None), ("--removed-out", opts["removed_out"], None),
        ("--leaks-out", opts["leaks_out"], None), ("--report", opts["report"], ("json",))])
    progress = False if opts["quiet"] else opts["progress"]
    with outputs:
        # The records written are taken by position from a second read of the training
        # data: the first read's digests make sure it reads the same texts.
        watch = InputWatch(train, reader) if rereads else None
        evals = EvalSets.from_batches((os.fspath(p), read_corpus([p], reader)) for p in opts["against"])
        batches = read_corpus(list(train), reader)
        result = find_contamination(batches if watch is None else watch.first_read(batches), evals,
                                    config, progress=progress)
        flags = np.asarray(result.contaminated, dtype=bool)
        if "--out" in outputs:
            if opts["mark"]:
                outputs.write_records("--out", _marked(watch.second_read_records("--out", len(flags)),
                                                       flags, result))
            else:
                _write_chosen(outputs, "--out", train, reader, watch, ~flags)
        if "--removed-out" in outputs:
            _write_chosen(outputs, "--removed-out", train, reader, watch, flags)
        if "--leaks-out" in outputs:
            outputs.write_table("--leaks-out", result.leaks)
        if "--report" in outputs:
            report = {**result.report(), "train": [os.fspath(p) for p in train],
                      "against": [os.fspath(p) for p in opts["against"]]}
            outputs.write_text("--report", json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")
        outputs.commit()
    return result


def _write_chosen(outputs, flag: str, train, reader, watch, chosen) -> None:
    """Write the training records whose ``chosen`` is true to output ``flag``: from Parquet
    training data of one schema into Parquet as Arrow batches (every column's type kept),
    else as records."""
    from neardup.cli.rereads import kept_parquet_batches
    from neardup.io import parquet_inputs_schema

    schema = parquet_inputs_schema(list(train), reader) if outputs.kind(flag) == "parquet" else None
    if schema is not None:
        outputs.write_batches(flag, schema, kept_parquet_batches(watch, chosen, flag))
        return
    records = watch.second_read_records(flag, len(chosen))
    outputs.write_records(flag, (record for record, kept in zip(records, chosen, strict=True) if kept))


def _marked(records, flags, result):
    """Every record with ``contaminated`` and ``contaminated_by`` (first matching item)."""
    from neardup.errors import OutputError

    first: dict[int, str] = {}
    rows = result.leaks.to_pydict()
    for row, eval_set, eval_id in zip(rows["train_row"], rows["eval_set"], rows["eval_id"]):
        first.setdefault(row, f"{eval_set}:{eval_id}")
    for index, (record, flag) in enumerate(zip(records, flags, strict=True)):
        if "contaminated" in record or "contaminated_by" in record:
            raise OutputError(f"--mark: record {index} already has a field 'contaminated' or "
                              "'contaminated_by', which the mark would overwrite. Rename it in "
                              "the input.")
        yield {**record, "contaminated": bool(flag), "contaminated_by": first.get(index)}


def _print(result, console) -> None:
    from rich.table import Table

    summary = result.summary()
    table = Table(title="neardup decontaminate")
    for column in ("evaluation set", "items", "leaked", "by n-gram", "near", "too short for n-grams"):
        table.add_column(column, justify="left" if column == "evaluation set" else "right")
    for s in result.per_set:
        table.add_row(s["eval_set"], f"{s['items']:,}",
                      f"{s['items_leaked']:,} ({100 * s['leaked_fraction']:.1f}%)",
                      f"{s['items_leaked_ngram']:,}", f"{s['items_leaked_near']:,}",
                      f"{s['items_too_short_for_ngrams']:,}")
    console.print(table)
    console.print(f"training documents: {summary['train_documents']:,}, contaminated: "
                  f"{summary['train_contaminated']:,}")
