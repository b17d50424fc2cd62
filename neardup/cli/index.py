"""``neardup index``: create, add to, query, delete from, compact and describe a persistent index.

Every command runs as ``dedup`` does: errors in the command line's words (flags, files and
records, never a traceback), output files (``--clusters-out``, ``--pairs-out``) checked
before anything is read or committed and written through an
:class:`~neardup.io.outputs.OutputSet` (never over an input or the index's own files),
Ctrl-C and SIGTERM ending with 130 and 143. An add commits batch by batch: whatever stops
it (bad input, a full disk, a signal) is reported with what was committed and what was not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from neardup.cli._checks import (
    Terminated,
    exit_for_signal,
    termination_as_exception,
)
from neardup.cli.errors import cli_message, spell_flag
from neardup.cli.options import (
    DECODE_ERRORS_OPTION,
    PATH_OR_URL,
    STORAGE_OPTION,
    method_params_from_options,
    named_method_options,
    schema_option,
)
from neardup.errors import InputError, NeardupError, OutputError, spelled_as
from neardup.profiles import choose_profile

__all__ = ["index_command"]

#: Python parameters of the index's API -> how the index commands say them.
_INDEX_FLAGS = {
    "skip_existing": "--skip-existing",
    "skip_existing=True": "--skip-existing",
    "resume": "--resume",
    "rerank": "the --rerank options",
    "top_k": "--top-k",
    "split": "--split/--no-split",
    "ids": "--id-field",
    "method": "--method",
    "add": "an add without --bulk",
    "create": "`neardup index create DIR --method M ...`",
    "check": "`neardup index stats DIR --check`",
}
# "Index.add: ", "Index: ", "Index.open: " ... at the start of a library message.
_CALLER = re.compile(r"^Index(?:\.\w+)?: ")


def spell_index_setting(name: str) -> str | None:
    """A library setting as the index commands (and ``neardup serve``) name it."""
    return _INDEX_FLAGS.get(name) or spell_flag(name)


def index_message(exc: BaseException) -> str:
    """A library error in the index commands' words: flags, no Python callers."""
    return _CALLER.sub("", cli_message(exc, spell_index_setting))


@contextmanager
def _cli_errors(done: Any = None, own_account: bool = True) -> Iterator[None]:
    """Run a command's body: library errors become one-line CLI errors (exit 1), Ctrl-C
    exits 130 and SIGTERM 143, each followed by ``done()``: what was and was not changed.
    A library error that says what it left (``exc.left``) keeps that account when
    ``own_account`` is false, and has it replaced by ``done()`` otherwise."""

    def tail(message: str = "") -> str:
        text = done() if done is not None else ""
        return f" {text}" if text and text not in message else ""

    try:
        with spelled_as(spell_index_setting), termination_as_exception():
            yield
    except (KeyboardInterrupt, Terminated) as stop:
        exit_for_signal(stop, f".{tail()}")
    except BrokenPipeError:
        raise  # stdout closed by its reader (`| head`): click exits quietly
    except (NeardupError, ValueError, ImportError) as exc:  # ImportError: a missing extra
        message = index_message(exc)
        left = getattr(exc, "left", None)
        if left and done is not None:
            if not own_account:
                raise click.ClickException(message) from exc
            message = message.replace(f" {left}", "")  # said in the command's own words
        raise click.ClickException(message + tail(message)) from exc
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise click.ClickException(f"{where}{exc.strerror or exc}.{tail()}") from exc


def _output_set(directory: Path, inputs: tuple[Path, ...], outputs: dict[str, Path | None]):
    """The command's output files as an OutputSet: checked (format, directory, not an
    input) when its block is entered. The index's own files count as inputs."""
    from neardup.index._errors import database_path
    from neardup.io.outputs import OutputSet

    db = database_path(directory)
    protected = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    out = OutputSet(list(inputs) + protected)
    for flag, path in outputs.items():
        if path is None:
            continue
        resolved = Path(path).expanduser().resolve()
        index_dir = Path(directory).expanduser().resolve()
        if resolved == index_dir or index_dir / "vectors" in resolved.parents:
            raise OutputError(
                f"{flag}: {str(path)!r} is the index {str(directory)!r} or among its own "
                "files; give the output another path.")
        out.add(flag, path)
    return out

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
    STORAGE_OPTION,
)


_RERANK_OPTIONS = (
    click.option("--rerank", "rerank_scorer", type=click.Choice(["verifier", "cross-encoder"]),
                 default=None,
                 help="Rerank verification (minhash only): every candidate the method accepts "
                      "is also scored by the pair classifier of `dedup --method rerank` and "
                      "kept only at a duplicate probability >= --rerank-threshold (the match "
                      "score is then that probability) and if rerank's template guard lets it "
                      "(short notices whose figures differ are kept apart); the index stores each document's raw "
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


def _reader(opts: dict[str, Any]):
    from neardup.io import ReaderConfig

    return ReaderConfig(text_field=opts["text_field"], id_field=opts["id_field"],
                        errors=opts["decode_errors"], batch_size=opts["batch_size"],
                        limit=opts["limit"], storage_options=opts.get("storage_options"))


def _batches(inputs: tuple[Path, ...], opts: dict[str, Any]):
    from neardup.io import read_corpus

    return read_corpus(list(inputs), _reader(opts))


def _open(directory: Path, rerank: dict[str, Any] | None = None):
    from neardup.index import Index

    return Index(directory) if rerank is None else Index(directory, rerank=rerank)


@click.group("index")
def index_command() -> None:
    """A persistent near-duplicate index: add documents over time, query new ones.

    \b
    Example:
      neardup index create news.idx --method minhash --threshold 0.5
      neardup index add news.idx monday.jsonl --id-field url --clusters-out monday.csv
      neardup index query news.idx incoming.jsonl --pairs-out matches.csv
      neardup index export news.idx --clusters-out clusters.parquet
      neardup serve news.idx --port 8080
    """


@index_command.command("create")
@_DIR
@named_method_options
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seeds hashing and permutations.")
@click.option("--store-text", is_flag=True,
              help="Also store normalized texts, so query matches get Sanderson's duplicate "
                   "types (exact, expanded, corrected, template, near) rather than exact/near.")
@_rerank_options
def create_command(directory: Path, **opts: Any) -> None:
    """Create an empty index in DIRECTORY (new or empty) for one method and its parameters.

    Methods: exact, minhash, simhash (keys in SQLite), retsim, biencoder, static (vectors in
    faiss segment files beside it; exact cosine search). The method and parameters are
    recorded; every later add and query uses them.

    \b
    With --rerank verifier (minhash), candidates are verified as `dedup --method rerank`
    verifies them (pair classifier, then template guard): the clusters are those of
      neardup dedup --method rerank --param scorer=verifier --param candidates=minhash
        --param 'candidate_params={"threshold": T, "shingle": {"unit": "word", "n": 3}}'
        --param low_partners=null --cluster components
    for an index made with --threshold T and word 3-grams (an index links by connected
    components and scores every candidate).
    """
    from neardup.index import Index
    from neardup.methods import make_method

    rerank = _rerank_spec(opts)
    with _cli_errors():
        # An index fixes its settings before it holds a document: "auto" is "clean".
        profile = choose_profile(opts["profile"], opts["method"], None).name
        params = method_params_from_options(opts["method"], {**opts, "profile": profile},
                                            seed=opts["seed"])
        method = make_method(opts["method"], **params)
        with Index.create(directory, method, store_text=opts["store_text"],
                          rerank=rerank) as index:
            click.echo(json.dumps(index.stats(), sort_keys=True))


@index_command.command("add")
@_DIR
@click.argument("inputs", nargs=-1, required=True, type=PATH_OR_URL)
@_input_options
@click.option("--clusters-out", type=click.Path(path_type=Path), default=None,
              help="Write id, cluster, status (new, joined, empty, skipped), duplicate_of, "
                   "score for every document read: .parquet, .jsonl, .jsonl.gz, .csv or .tsv. "
                   "Checked before anything is added (format, writable directory, not an "
                   "input or the index's own files); written once the add is complete.")
@click.option("--skip-existing", is_flag=True,
              help="Skip documents whose id is already in the index (resume a killed add); "
                   "needs --id-field. The counts say how many were skipped.")
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
@schema_option("progress")
@schema_option("quiet")
def add_command(directory: Path, inputs: tuple[Path, ...], **opts: Any) -> None:
    """Add the documents of INPUT files to the index in DIRECTORY.

    Each batch (--batch-size) is one transaction: when it is reported ("committed ...")
    it is in the index, and a killed add leaves every reported batch and nothing of the
    next. An add that stops early (bad input, a full disk, Ctrl-C) says what was
    committed and what was not. Each document joins the cluster of the stored documents
    it duplicates (merging clusters it bridges), or founds a new one. With --bulk (empty
    index only) the whole input is one transaction, with the same clusters.

    Documents are named by --id-field, or without it by their index position ("0", "1",
    ... continuing the index's numbering). An index keeps one way: an index of documents
    added with --id-field refuses an add without it, and the other way round, so that a
    position never collides with an id.

    Exit status: 0 on success, 1 on an error, 2 on a usage error, 130 after Ctrl-C, 143
    after SIGTERM.
    """
    opts["rerank"] = _rerank_spec(opts)
    if opts["bulk"]:
        if opts["skip_existing"]:
            raise click.UsageError("--bulk builds an empty index: --skip-existing does not apply.")
        _bulk_add(directory, inputs, opts)
        return
    if opts["resume"]:
        raise click.UsageError("--resume continues a --bulk add (an ordinary add resumes "
                               "with --skip-existing).")
    if opts["skip_existing"] and opts["id_field"] is None:
        raise click.UsageError(
            "--skip-existing skips documents whose id is already in the index, so it needs "
            "--id-field: without it every document is named by a new index position, none "
            "would be skipped, and an interrupted add would be stored twice.")
    progress = _AddProgress(directory, opts)
    with _cli_errors(progress.report):
        _add(directory, inputs, opts, progress)


class _AddProgress:
    """What an add has committed, batch by batch, for the message that ends it early."""

    def __init__(self, directory: Path, opts: dict[str, Any]) -> None:
        self.directory, self.opts = directory, opts
        self.added = self.skipped = self.joined = self.batches = 0
        # The batch being added: (source, documents, the index's next position before it).
        # A signal can land between its commit and commit() below: report() then asks the
        # index whether it was committed.
        self.pending: tuple[str, int, int] | None = None
        self.records: dict[str, int] = {}  # source -> records committed (in input order)
        self.outputs: list[str] = []  # output flags not written if the add stops early

    def commit(self, source: str, count: int, skipped: int, joined: int) -> None:
        self.pending = None
        self.batches += 1
        self.added += count - skipped
        self.skipped += skipped
        self.joined += joined
        self.records[source] = self.records.get(source, 0) + count

    def _settle(self) -> None:
        """Count the pending batch if the index shows it committed."""
        if self.pending is None:
            return
        source, count, before = self.pending
        self.pending = None
        try:
            from neardup.index import Index

            with Index(self.directory) as index:
                now = index.next_position()
        except Exception:  # the index cannot tell (e.g. damaged): say nothing more
            return
        if now > before:
            self.commit(source, count, count - (now - before), 0)

    def report(self) -> str:
        self._settle()
        outputs = "".join(f" {flag} was not written." for flag in self.outputs)
        if not self.batches:
            return "Nothing was added to the index." + outputs
        sources = list(self.records.items())
        done = ", ".join(f"all {n:,} records of {s}" for s, n in sources[:-1])
        last, n = sources[-1]
        done += (", " if done else "") + f"the first {n:,} records of {last}"
        skipped = f", {self.skipped:,} skipped as already there" if self.skipped else ""
        text = (f"Committed before this: {self.added:,} documents added{skipped} in "
                f"{self.batches:,} batch(es) ({done}); everything after record {n:,} of "
                f"{last} was not added.{outputs}")
        if self.opts["id_field"] is not None:
            return text + " Run the same command with --skip-existing to add the rest."
        return (text + " These documents are named by their index position, so running the "
                "same command again would add them twice: add only the records after those.")


def _add(directory: Path, inputs: tuple[Path, ...], opts: dict[str, Any],
         progress: _AddProgress) -> None:
    import pyarrow as pa

    outputs = _output_set(directory, inputs, {"--clusters-out": opts["clusters_out"]})
    tables = []
    with _open(directory, opts["rerank"]) as index, outputs:
        # Every output is checked (and its temporary file made) before the first commit.
        progress.outputs = ["--clusters-out"] if opts["clusters_out"] is not None else []
        for batch in _batches(inputs, opts):
            ids = batch.ids if opts["id_field"] else None
            progress.pending = (batch.source, len(batch), index.next_position())
            result = index.add(batch.texts, ids, skip_existing=opts["skip_existing"])
            skipped = result.status.count("skipped")
            joined = result.status.count("joined")
            progress.commit(batch.source, len(batch), skipped, joined)
            if not opts["quiet"]:
                also = f", skipped {skipped} already in the index" if skipped else ""
                click.echo(f"committed {len(batch) - skipped} documents from {batch.source}"
                           f"{also} ({progress.added} added so far"
                           + (f", {progress.skipped} skipped" if progress.skipped else "")
                           + f", {progress.joined} joined existing clusters, "
                           f"{result.merged_clusters} clusters merged)", err=True)
            if opts["clusters_out"] is not None:
                tables.append(result.table())
        if opts["clusters_out"] is not None:
            outputs.write_table("--clusters-out", pa.concat_tables(tables) if tables
                                else _empty_add_table())
            outputs.commit()
        progress.outputs = []


def _empty_add_table():
    import numpy as np

    from neardup.index import AddResult

    return AddResult([], np.empty(0, np.int64), [], [], np.empty(0, np.float32)).table()


def _bulk_add(directory: Path, inputs: tuple[Path, ...], opts: dict[str, Any]) -> None:
    from neardup.io.identity import reading_digest

    def log(message: str) -> None:
        if not opts["quiet"]:
            click.echo(message, err=True)

    state = {"swapped": False}

    def done() -> str:
        if state["swapped"]:
            return ("The documents were added (the bulk add was committed), but "
                    "--clusters-out was not written.")
        return "Nothing was added: a bulk add is all or nothing."

    from neardup.io import read_corpus

    reader = _reader(opts)
    batches = ((b.texts, b.ids if opts["id_field"] else None)
               for b in read_corpus(list(inputs), reader))
    with _cli_errors(done, own_account=False):
        outputs = _output_set(directory, inputs, {"--clusters-out": opts["clusters_out"]})
        with _open(directory, opts["rerank"]) as index, outputs:
            # What --resume must find again: the files (a directory's entries, a URL's
            # size and ETag) and the reader options, as every out-of-core run records them.
            input_key = reading_digest(inputs, reader)
            result = index.bulk_add(batches, table=opts["clusters_out"] is not None, log=log,
                                    progress=False if opts["quiet"] else opts["progress"],
                                    resume=opts["resume"], input_key=input_key)
            state["swapped"] = True
            if opts["clusters_out"] is not None:
                outputs.write_table("--clusters-out", result.table)
                outputs.commit()
    if not opts["quiet"]:
        click.echo(f"committed {result.documents} documents in one bulk transaction "
                   f"({result.clusters} clusters, {result.joined} joined another's cluster, "
                   f"{result.seconds:.1f} s)", err=True)


@index_command.command("query")
@_DIR
@click.argument("inputs", nargs=-1, required=True, type=PATH_OR_URL)
@_input_options
@click.option("--pairs-out", type=click.Path(path_type=Path), default=None,
              help="Write query_id, match_id, score, type, cluster (one row per match): "
                   ".parquet, .jsonl, .jsonl.gz, .csv or .tsv, checked before the input is "
                   "read (never over an input or the index's own files). Default: JSON lines "
                   "on stdout.")
@click.option("--top-k", type=click.IntRange(min=1), default=10, show_default=True,
              help="At most this many matches per query document, best first.")
@_rerank_options
@schema_option("progress")
def query_command(directory: Path, inputs: tuple[Path, ...], **opts: Any) -> None:
    """Find the stored near-duplicates of the documents in INPUT files (read only)."""
    import pyarrow as pa

    from neardup.progress import progress_bar

    tables = []
    rerank = _rerank_spec(opts)
    with _cli_errors(lambda: "--pairs-out was not written." if opts["pairs_out"] else ""):
        outputs = _output_set(directory, inputs, {"--pairs-out": opts["pairs_out"]})
        with _open(directory, rerank) as index, outputs, \
                progress_bar("querying", enabled=opts["progress"]) as advance:
            for batch in _batches(inputs, opts):
                table = index.query(batch.texts, batch.ids, top_k=opts["top_k"]).table()
                advance(len(batch))
                if opts["pairs_out"] is not None:
                    tables.append(table)
                else:  # each batch's matches as soon as they are found
                    for row in table.to_pylist():
                        click.echo(json.dumps(row))
            if opts["pairs_out"] is not None:
                table = pa.concat_tables(tables) if tables else _empty_query_table()
                outputs.write_table("--pairs-out", table)
                outputs.commit()


def _empty_query_table():
    import numpy as np

    from neardup.index import QueryResult

    return QueryResult(np.empty(0, np.int64), [], [], np.empty(0, np.int64),
                       np.empty(0, np.float32), []).table()


def _read_ids(path: Path) -> list[str]:
    """The ids of an ids file, exactly: one per line, only the line ending (LF or CRLF)
    removed, so ids with leading or trailing spaces stay as they are; empty lines are
    skipped."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(
            f"--ids: {str(path)!r}, line {line} (byte {exc.start}): not valid UTF-8; save the "
            "ids file as UTF-8.") from exc
    lines = text.split("\n")
    ids = [line[:-1] if line.endswith("\r") else line for line in lines]
    return [i for i in ids if i != ""]


@index_command.command("delete")
@_DIR
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              required=True,
              help="A UTF-8 text file with one document id per line, taken exactly as written "
                   "(only the line ending is removed: spaces are part of the id; empty lines "
                   "are skipped).")
@click.option("--split/--no-split", default=True, show_default=True,
              help="Re-link each cluster that lost a member from its remaining members, so "
                   "a cluster held together only by a deleted document splits. --no-split "
                   "keeps every remaining document in its cluster (cheaper for huge clusters).")
def delete_command(directory: Path, ids_file: Path, split: bool) -> None:
    """Remove documents by id, and split the clusters they held together.

    Prints {"deleted", "missing", "split_clusters" (clusters re-linked), "new_clusters"
    (clusters the re-link added)}. The remaining documents of a cluster are re-linked
    with the method's own rule applied to them alone; clusters without a deleted member
    are unchanged. The delete is one transaction: if it fails or is interrupted, nothing
    is deleted.
    """
    with _cli_errors(lambda: "Nothing was deleted (a delete is one transaction)."):
        ids = _read_ids(ids_file)
        with _open(directory) as index:
            outcome = index.delete(ids, split=split)
    click.echo(json.dumps({"deleted": outcome["deleted"], "missing": len(outcome["missing"]),
                           "split_clusters": outcome["split_clusters"],
                           "new_clusters": outcome["new_clusters"]}))
    if outcome["missing"]:
        click.echo(f"warning: {len(outcome['missing'])} id(s) not in the index, e.g. "
                   f"{outcome['missing'][:5]}", err=True)


@index_command.command("export")
@_DIR
@click.option("--clusters-out", type=click.Path(path_type=Path), required=True,
              help="Write every stored document's id, current cluster and cluster_size "
                   "(.parquet, .jsonl, .jsonl.gz, .csv or .tsv), in insertion order.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def export_command(directory: Path, clusters_out: Path, quiet: bool) -> None:
    """Write the index's current clustering: one row per stored document.

    A cluster is named by the position of its founding document; when a later add merges
    clusters, their documents take the surviving cluster's id, so an export made after
    the add shows the merge (the --clusters-out of an earlier add does not). Read from one
    snapshot: an add committed meanwhile is wholly in or wholly out.
    """
    import pyarrow as pa

    with _cli_errors(lambda: "--clusters-out was not written."):
        outputs = _output_set(directory, (), {"--clusters-out": clusters_out})
        with _open(directory) as index, outputs:
            table = pa.concat_tables(index.iter_clusters())
            outputs.write_table("--clusters-out", table)
            outputs.commit()
    if not quiet:
        clusters = len(set(table.column("cluster").to_numpy().tolist()))
        click.echo(f"exported {table.num_rows} documents in {clusters} clusters to {clusters_out}",
                   err=True)


@index_command.command("compact")
@_DIR
def compact_command(directory: Path) -> None:
    """Checkpoint the log and rewrite the database without free space (after deletes).

    Needs free space beside the index for a copy of its live pages (checked first). One
    transaction: a failure or an interrupt leaves the index as it was.
    """
    with _cli_errors():
        with _open(directory) as index:
            click.echo(json.dumps(index.compact()))


@index_command.command("stats")
@_DIR
@click.option("--check", is_flag=True,
              help="Also verify the index (reads all of it): the database's integrity, every "
                   "posting naming a stored document and, for vector methods, every vector "
                   "segment. A damaged index exits 1 with what is wrong and how to recover.")
def stats_command(directory: Path, check: bool) -> None:
    """Print the index's method, parameters, counts and size as JSON."""
    with _cli_errors():
        with _open(directory) as index:
            click.echo(json.dumps(index.stats(check=check), indent=2, sort_keys=True))
