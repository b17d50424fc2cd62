"""The input cut into read tasks (shards) and what a shard's reading gives every step:
its batches, its per-document facts table, and the names of its shipped arrays."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from neardup.graph.edges import NO_DATE
from neardup.io.batch import DocumentBatch
from neardup.io.locations import locate
from neardup.io.readers import ReaderConfig, input_files, read_part
from neardup.methods.base import Method

#: The shipped per-document array of text identities (the time window's).
IDENTITY = "identity"
SHARDED = ("parquet",)  # formats cut into row ranges; others are one shard per file
#: The texts a scorer reads in a shard's arrays (the shingle sets are named by
#: :func:`~neardup.engine.sketching.verification_rows`).
TEXTS = "texts"


@dataclass(frozen=True)
class RayInputs:
    """Input files read by the workers themselves (no document passes through the driver).

    Parameters
    ----------
    paths : sequence of paths or URLs
        Files (Parquet, JSONL, CSV/TSV, SGML) or directories, as
        :func:`neardup.io.readers.input_files` expands them (a saved Hugging Face
        dataset, a directory of Parquet or JSONL shards, else a directory of ``.txt``
        files); URLs are read by the workers with ``reader.storage_options``.
    reader : ReaderConfig
    """

    paths: tuple[str, ...]
    reader: ReaderConfig = field(default_factory=ReaderConfig)


@dataclass(frozen=True)
class Shard:
    path: str
    kind: str
    start: int  # first row (Parquet) or the index of an in-memory batch
    stop: int  # end row (Parquet), the batch's size (memory); -1: to the end of the file


def _row_groups(path: str, reader: ReaderConfig) -> list[int]:
    """Rows per row group (an unreadable file raises InputError naming it)."""
    from neardup.io._formats import parquet_row_groups

    return parquet_row_groups(path, reader.storage_options)


def plan_shards(inputs: RayInputs, shard_rows: int) -> list[Shard]:
    """Cut the inputs into read tasks: Parquet by whole row groups (from the file footers:
    consecutive groups up to ``shard_rows`` rows, or one larger group, so each group is
    decoded once), other formats one per file."""
    if inputs.reader.limit is not None:
        raise ValueError(
            "run: parameter 'limit' of the reader is not supported by engine='ray'; got "
            f"{inputs.reader.limit!r}. Cut the input instead, or use engine='local'."
        )
    shards = []
    for path, kind in input_files(inputs.paths, inputs.reader.storage_options):
        if kind in SHARDED:
            start = stop = 0
            for rows in _row_groups(path, inputs.reader):
                if stop > start and stop - start + rows > shard_rows:
                    shards.append(Shard(path, kind, start, stop))
                    start = stop
                stop += rows
            if stop > start:
                shards.append(Shard(path, kind, start, stop))
        else:
            shards.append(Shard(path, kind, 0, -1))
    return shards


# -- workers: read and sketch ------------------------------------------------------------


def digested(batches: Iterable[DocumentBatch], digest) -> Iterator[DocumentBatch]:
    """Pass ``batches`` through, adding their texts to ``digest``
    (:class:`~neardup.io.identity.TextsDigest`): a first-read task's record of what its
    shard held, which the run's report keeps for `neardup report`."""
    for batch in batches:
        digest.update(batch.texts)
        yield batch


def shard_batches(shard: Shard, reader: ReaderConfig, memory: list | None) -> Iterator[DocumentBatch]:
    """The shard's documents in batches of ``reader.batch_size``; ids None when documents
    are numbered by global position (assigned once shard offsets are known)."""
    if shard.kind == "memory":
        import ray

        yield ray.get(memory[shard.start])
        return
    sharded = shard.kind in SHARDED
    yield from read_part(shard.path, shard.kind, reader, start=shard.start if sharded else 0,
                         stop=shard.stop if sharded else None)


FACTS = pa.schema([("shard", pa.int32()), ("row", pa.int64()), ("id", pa.string()),
                    ("length", pa.int64()), ("date", pa.int64()), ("n_features", pa.int64())])


def batch_facts(index: int, offset: int, batch: DocumentBatch, n_features) -> tuple:
    """A batch's dates (int64 seconds, NaT as :data:`NO_DATE`) and its facts table
    (:data:`FACTS`; ``offset``: the batch's first shard row)."""
    n = len(batch)
    dates = (batch.dates.astype("datetime64[s]").astype(np.int64) if batch.dates is not None
             else np.full(n, NO_DATE, np.int64))
    return dates, pa.table({
        "shard": pa.array(np.full(n, index, np.int32)),
        "row": pa.array(np.arange(offset, offset + n, dtype=np.int64)),
        "id": pa.array(batch.ids if batch.ids is not None else [None] * n, pa.string()),
        "length": pa.array(np.fromiter(map(len, batch.texts), np.int64, n)),
        "date": pa.array(dates),
        "n_features": pa.array(np.asarray(n_features, np.int64)),
    }, schema=FACTS)


def cut_texts(method: Method, texts: Sequence[str]) -> pa.Array:
    """The texts a scorer reads, cut to its verification's ``text_chars`` characters:
    bytes, as the local stage stores them (a lone surrogate reaches the scorer)."""
    cut = method.capabilities.reads.text_chars
    return pa.array([t[:cut].encode("utf-8", "surrogatepass") for t in texts], pa.large_binary())


def estimate_docs(shards: list[Shard], memory: list | None, reader: ReaderConfig) -> int:
    """Documents in the input, before reading it (it sets the number of key partitions):
    exact for Parquet row ranges and in-memory batches, one per kilobyte of other files."""
    total = 0
    for shard in shards:
        if shard.kind in SHARDED or shard.kind == "memory":
            total += max(shard.stop - shard.start, 0) if shard.kind in SHARDED else shard.stop
        else:
            total += max(locate(shard.path, reader.storage_options).size() // 1000, 1)
    return total


def memory_shards(batches: Iterable[DocumentBatch]) -> tuple[list[Shard], list, bool]:
    import ray

    shards, refs, has_dates = [], [], False
    for batch in batches:
        has_dates = has_dates or batch.dates is not None
        shards.append(Shard("<memory>", "memory", len(refs), len(batch)))
        refs.append(ray.put(batch))
    return shards, refs, has_dates


def ids_of(block: pa.Table, doc: np.ndarray) -> np.ndarray:
    """The ids of a facts ``block`` (object array), its documents' positions ``doc`` as text
    where the input had none."""
    ids = np.array(block.column("id").to_pylist(), dtype=object)
    missing = np.array([i is None for i in ids], bool) if ids.size else np.zeros(0, bool)
    if missing.any():
        ids[missing] = doc[missing].astype(str).astype(object)
    return ids
