"""``neardup index``: create, add to, query, delete from, compact and describe a persistent index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from neardup.cli.options import (
    DECODE_ERRORS_OPTION,
    method_options,
    method_params_from_options,
)
from neardup.errors import NeardupError

__all__ = ["index_command"]

_DIR = click.argument("directory", type=click.Path(path_type=Path))
_INPUT_OPTIONS = (
    click.option("--text-field", default="text", show_default=True,
                 help="Field holding the text (JSONL, Parquet, CSV/TSV)."),
    click.option("--id-field", default=None,
                 help="Field holding a unique document id (default: add names documents by "
                      "their index position; query by their row number)."),
    DECODE_ERRORS_OPTION,
    click.option("--batch-size", type=click.IntRange(min=1), default=10_000, show_default=True,
                 help="Documents per batch; each batch of an add is one transaction "
                      "(with --bulk: documents sketched at once)."),
    click.option("--limit", type=click.IntRange(min=0), default=None,
                 help="Read at most this many documents."),
)


_RERANK_OPTIONS = (
    click.option("--rerank", "rerank_scorer", type=click.Choice(["verifier", "cross-encoder"]),
                 default=None,
                 help="Rerank verification (minhash only): every candidate the method accepts "
                      "is also scored by the pair classifier of `dedup --method rerank` and "
                      "kept only at a duplicate probability >= --rerank-threshold (the match "
                      "score is then that probability); the index stores each document's raw "
                      "text (zstd) for it. With create: turns it on. With add/query: must be "
                      "the index's setting (refused otherwise); omit to use the index's own."),
    click.option("--rerank-model", default=None,
                 help="--rerank: a shipped model name or model folder of the scorer's kind "
                      "(default verifier-news / cross-encoder-news)."),
    click.option("--rerank-threshold", type=click.FloatRange(0.0, 1.0), default=None,
                 help="--rerank: duplicate probability an edge needs (default the model's "
                      "threshold tuned on validation with MinHash candidates, 0.9 for "
                      "verifier-news)."),
    click.option("--rerank-max-chars", type=click.IntRange(min=1), default=None,
                 help="--rerank: characters of each raw text the scorer reads and the index "
                      "stores (default 20000)."),
)


def _rerank_options(function):
    for option in reversed(_RERANK_OPTIONS):
        function = option(function)
    return function


def _rerank_spec(opts: dict[str, Any]) -> dict[str, Any] | None:
    """The --rerank options as Index's ``rerank`` argument (None: not given)."""
    extra = {"model": opts.pop("rerank_model", None), "threshold": opts.pop("rerank_threshold", None),
             "max_chars": opts.pop("rerank_max_chars", None)}
    scorer = opts.pop("rerank_scorer", None)
    if scorer is None:
        given = [f"--rerank-{k.replace('_', '-')}" for k, v in extra.items() if v is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} need(s) --rerank.")
        return None
    return {"scorer": scorer, **{k: v for k, v in extra.items() if v is not None}}


def _input_options(function):
    for option in reversed(_INPUT_OPTIONS):
        function = option(function)
    return function


def _batches(inputs: tuple[Path, ...], opts: dict[str, Any]):
    from neardup.io import ReaderConfig, read_corpus

    config = ReaderConfig(text_field=opts["text_field"], id_field=opts["id_field"],
                          errors=opts["decode_errors"], batch_size=opts["batch_size"],
                          limit=opts["limit"])
    return read_corpus(list(inputs), config)


def _open(directory: Path, rerank: dict[str, Any] | None = None):
    from neardup.index import Index

    return Index(directory) if rerank is None else Index(directory, rerank=rerank)


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group("index")
def index_command() -> None:
    """A persistent near-duplicate index: add documents over time, query new ones.

    \b
    Example:
      neardup index create news.idx --method minhash --threshold 0.5
      neardup index add news.idx monday.jsonl --id-field url --clusters-out monday.csv
      neardup index query news.idx incoming.jsonl --pairs-out matches.csv
      neardup serve news.idx --port 8080
    """


@index_command.command("create")
@_DIR
@method_options
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seeds hashing and permutations.")
@click.option("--store-text", is_flag=True,
              help="Also store normalized texts, so query matches get Sanderson's duplicate "
                   "types (exact, expanded, corrected, template, near) rather than exact/near.")
@_rerank_options
def create_command(directory: Path, **opts: Any) -> None:
    """Create an empty index in DIRECTORY (new or empty) for one method and its parameters.

    Methods: exact, minhash, simhash (keys in SQLite), retsim, biencoder (vectors in faiss
    segment files beside it; exact cosine search). The method and parameters are
    recorded; every later add and query uses them.

    \b
    With --rerank verifier (minhash), candidates are confirmed by the pair classifier of
    `dedup --method rerank`: the clusters are those of
      neardup dedup --method rerank --param scorer=verifier --param candidates=minhash
        --param 'candidate_params={"threshold": T}'
    for an index made with --threshold T.
    """
    from neardup.index import Index
    from neardup.methods import make_method

    rerank = _rerank_spec(opts)
    try:
        params = method_params_from_options(opts["method"], opts, seed=opts["seed"])
        method = make_method(opts["method"], **params)
        with Index.create(directory, method, store_text=opts["store_text"],
                          rerank=rerank) as index:
            click.echo(json.dumps(index.stats(), sort_keys=True))
    except (NeardupError, ValueError) as exc:
        raise _fail(exc) from exc


@index_command.command("add")
@_DIR
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@_input_options
@click.option("--clusters-out", type=click.Path(path_type=Path), default=None,
              help="Write id, cluster, status (new, joined, empty, skipped), duplicate_of, "
                   "score for every added document: .parquet, .jsonl or .csv.")
@click.option("--skip-existing", is_flag=True,
              help="Skip documents whose id is already in the index (resume a killed add).")
@click.option("--bulk", is_flag=True,
              help="Build an empty index from the whole input in one go: many times faster "
                   "than batch by batch for a large corpus (no lookups per document, "
                   "postings written in key order). All or nothing: a killed bulk add "
                   "leaves the index empty. Needs an empty index used by no other process, "
                   "and scratch space in DIRECTORY (about the final index size).")
@click.option("--resume", is_flag=True,
              help="With --bulk: continue a bulk add of the same INPUT files (same paths, "
                   "sizes, modification times and reader options) that was killed or "
                   "interrupted, from its last completed step (sketch checkpoints, each key "
                   "partition, the documents table, the indexes) instead of starting over. "
                   "Without it a killed bulk add's scratch is discarded.")
@_rerank_options
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def add_command(directory: Path, inputs: tuple[Path, ...], **opts: Any) -> None:
    """Add the documents of INPUT files to the index in DIRECTORY.

    Each batch (--batch-size) is one transaction: when it is reported ("committed ...")
    it is in the index, and a killed add leaves every reported batch and nothing of the
    next. Each document joins the cluster of the stored documents it duplicates (merging
    clusters it bridges), or founds a new one. With --bulk (empty index only) the whole
    input is one transaction, with the same clusters.
    """
    import pyarrow as pa

    from neardup.io import write_table

    opts["rerank"] = _rerank_spec(opts)
    if opts["bulk"]:
        if opts["skip_existing"]:
            raise click.UsageError("--bulk builds an empty index: --skip-existing does not apply.")
        _bulk_add(directory, inputs, opts)
        return
    if opts["resume"]:
        raise click.UsageError("--resume continues a --bulk add (an ordinary add resumes "
                               "with --skip-existing).")
    tables, total, joined = [], 0, 0
    try:
        with _open(directory, opts["rerank"]) as index:
            for batch in _batches(inputs, opts):
                ids = batch.ids if opts["id_field"] else None
                result = index.add(batch.texts, ids, skip_existing=opts["skip_existing"])
                total += len(batch)
                joined += result.status.count("joined")
                if not opts["quiet"]:
                    click.echo(f"committed {len(batch)} documents from {batch.source} "
                               f"({total} so far, {joined} joined existing clusters, "
                               f"{result.merged_clusters} clusters merged)", err=True)
                if opts["clusters_out"] is not None:
                    tables.append(result.table())
        if opts["clusters_out"] is not None and tables:
            write_table(opts["clusters_out"], pa.concat_tables(tables))
    except (NeardupError, ValueError) as exc:
        raise _fail(exc) from exc


def _input_key(inputs: tuple[Path, ...], opts: dict[str, Any]) -> dict[str, Any]:
    """What identifies a bulk add's input for --resume: the files and the reader options."""
    files = []
    for path in inputs:
        try:
            st = Path(path).stat()
            files.append([str(Path(path).resolve()), st.st_size, st.st_mtime_ns])
        except OSError:
            files.append([str(path), None, None])
    return {"files": files, **{k: opts[k] for k in ("text_field", "id_field", "decode_errors",
                                                    "batch_size", "limit")}}


def _bulk_add(directory: Path, inputs: tuple[Path, ...], opts: dict[str, Any]) -> None:
    from neardup.io import write_table

    def log(message: str) -> None:
        if not opts["quiet"]:
            click.echo(message, err=True)

    batches = ((b.texts, b.ids if opts["id_field"] else None) for b in _batches(inputs, opts))
    try:
        with _open(directory, opts["rerank"]) as index:
            result = index.bulk_add(batches, table=opts["clusters_out"] is not None, log=log,
                                    resume=opts["resume"], input_key=_input_key(inputs, opts))
        if opts["clusters_out"] is not None:
            write_table(opts["clusters_out"], result.table)
    except (NeardupError, ValueError) as exc:
        raise _fail(exc) from exc
    if not opts["quiet"]:
        click.echo(f"committed {result.documents} documents in one bulk transaction "
                   f"({result.clusters} clusters, {result.joined} joined another's cluster, "
                   f"{result.seconds:.1f} s)", err=True)


@index_command.command("query")
@_DIR
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@_input_options
@click.option("--pairs-out", type=click.Path(path_type=Path), default=None,
              help="Write query_id, match_id, score, type, cluster (one row per match): "
                   ".parquet, .jsonl or .csv. Default: JSON lines on stdout.")
@click.option("--top-k", type=click.IntRange(min=1), default=10, show_default=True,
              help="At most this many matches per query document, best first.")
@_rerank_options
def query_command(directory: Path, inputs: tuple[Path, ...], **opts: Any) -> None:
    """Find the stored near-duplicates of the documents in INPUT files (read only)."""
    import pyarrow as pa

    from neardup.io import write_table

    tables = []
    rerank = _rerank_spec(opts)
    try:
        with _open(directory, rerank) as index:
            for batch in _batches(inputs, opts):
                result = index.query(batch.texts, batch.ids, top_k=opts["top_k"])
                tables.append(result.table())
        table = pa.concat_tables(tables) if tables else None
        if opts["pairs_out"] is not None:
            if table is None:
                import numpy as np

                from neardup.index import QueryResult

                table = QueryResult(np.empty(0, np.int64), [], [], np.empty(0, np.int64),
                                    np.empty(0, np.float32), []).table()
            write_table(opts["pairs_out"], table)
        elif table is not None:
            for row in table.to_pylist():
                click.echo(json.dumps(row))
    except (NeardupError, ValueError) as exc:
        raise _fail(exc) from exc


@index_command.command("delete")
@_DIR
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              required=True, help="A text file with one document id per line.")
@click.option("--split/--no-split", default=True, show_default=True,
              help="Re-link each cluster that lost a member from its remaining members, so "
                   "a cluster held together only by a deleted document splits. --no-split "
                   "keeps every remaining document in its cluster (cheaper for huge clusters).")
def delete_command(directory: Path, ids_file: Path, split: bool) -> None:
    """Remove documents by id, and split the clusters they held together.

    Prints {"deleted", "missing", "split_clusters" (clusters re-linked), "new_clusters"
    (clusters the re-link added)}. The remaining documents of a cluster are re-linked
    with the method's own rule applied to them alone; clusters without a deleted member
    are unchanged.
    """
    ids = [line.strip() for line in ids_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        with _open(directory) as index:
            outcome = index.delete(ids, split=split)
    except (NeardupError, ValueError) as exc:
        raise _fail(exc) from exc
    click.echo(json.dumps({"deleted": outcome["deleted"], "missing": len(outcome["missing"]),
                           "split_clusters": outcome["split_clusters"],
                           "new_clusters": outcome["new_clusters"]}))
    if outcome["missing"]:
        click.echo(f"warning: {len(outcome['missing'])} id(s) not in the index, e.g. "
                   f"{outcome['missing'][:5]}", err=True)


@index_command.command("compact")
@_DIR
def compact_command(directory: Path) -> None:
    """Checkpoint the log and rewrite the database without free space (after deletes)."""
    try:
        with _open(directory) as index:
            click.echo(json.dumps(index.compact()))
    except (NeardupError, ValueError) as exc:
        raise _fail(exc) from exc


@index_command.command("stats")
@_DIR
@click.option("--check", is_flag=True, help="Also verify the database file (reads all of it).")
def stats_command(directory: Path, check: bool) -> None:
    """Print the index's method, parameters, counts and size as JSON."""
    try:
        with _open(directory) as index:
            click.echo(json.dumps(index.stats(check=check), indent=2, sort_keys=True))
    except (NeardupError, ValueError) as exc:
        raise _fail(exc) from exc
