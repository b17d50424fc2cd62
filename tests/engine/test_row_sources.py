"""The RowSource contract: every place the Link step reads rows or texts from (memory
arrays, the spill's files, rows shipped as Ray ships them, the index's SQLite tables and
bulk scratch) gives the same CandidateRows and texts for the same documents, in the order
asked, repeats and empty requests included. A new implementation of RowSource or
TextSource fails ``test_every_source_is_covered`` until it has a builder here."""

import sqlite3
import sys
import types

import numpy as np
import pyarrow as pa
import pytest

import neardup.engine.stores as stores
import neardup.engine.ray.rows as ray_rows
import neardup.engine.ray.vectors as ray_vectors
import neardup.engine.vectors as vectors
from neardup.engine.ray.shards import TEXTS
from neardup.engine.sketching import SET_SIZES, SET_VALUES
from neardup.engine.rows import ArrayRows, LazyTexts, RowSource, TextSource, VectorShards
from neardup.index._rerank import IndexTexts, compress_texts
from neardup.index._schema import TEXT_SCHEMA, TEXT_TABLE
from neardup.index._rows import LocalRows, RowLayout
from neardup.index._scratch import ScratchRows, ScratchTexts
from neardup.text.shingle import ShingleSets

N = 12
CHARS = 40
RNG = np.random.default_rng(7)
TEXTS_ = [f"doc {i} " + "wörd " * (i % 5) + "\ud800" * (i == 3) for i in range(N)]
TEXTS_[5] = ""
SIGNATURE = RNG.integers(0, 2**63, (N, 4), dtype=np.uint64)
LENGTH = RNG.integers(0, 1000, N).astype(np.int32)
SIZES = RNG.integers(0, 6, N).astype(np.int64)
OFFSETS = np.concatenate(([0], np.cumsum(SIZES)))
HASHES = RNG.integers(0, 2**63, int(SIZES.sum()), dtype=np.uint64)
WEIGHTS = RNG.random(HASHES.size)
DATES = RNG.integers(0, 2**31, N).astype(np.int64)
ARRAYS = {"signature": SIGNATURE, "length": LENGTH}
LAYOUT = [("signature", "uint64", (4,)), ("length", "int32", ())]
ALL = np.arange(N, dtype=np.int64)


class _ListTexts(TextSource):
    """Texts held in a list, by document (the reference)."""

    def __init__(self, texts):
        self.items = list(texts)

    def texts(self, docs):
        return [self.items[d] for d in np.asarray(docs, np.int64).tolist()]


# -- builders: each returns a source over the corpus above and the fields it carries ------

def _memory(tmp_path):
    return ArrayRows(ALL, ARRAYS, sets=ShingleSets(HASHES, OFFSETS), set_weights=WEIGHTS,
                     texts=_ListTexts(t[:CHARS] for t in TEXTS_), dates=DATES), \
        {"arrays", "sets", "set_weights", "texts", "dates"}


def _spill(tmp_path, resident_bytes=0):
    """The sketch stage's spill, written in its file layout (one file per array)."""
    arrays = tmp_path / "sketch" / "arrays"
    arrays.mkdir(parents=True)
    for name, values in ARRAYS.items():
        values.tofile(arrays / f"{name}.bin")
    SIZES.tofile(arrays / "sets.sizes.bin")
    HASHES.tofile(arrays / "sets.values.bin")
    WEIGHTS.tofile(arrays / "sets.weights.bin")
    writer = stores.TextWriter(tmp_path / "sketch" / stores.TEXTS_FILE, CHARS)
    writer.write(TEXTS_[:5])
    writer.write(TEXTS_[5:])
    writer.close()

    class Dir:  # the one WorkDir method the store reads
        def stage_dir(self, name):
            return tmp_path / name

    facts = {"arrays": {"signature": ("uint64", [4]), "length": ("int32", [])}, "n_docs": N,
             "sets": True, "set_weights": True, "texts": True}
    return stores.ArrayStore(Dir(), facts, DATES, resident_bytes=resident_bytes), \
        {"arrays", "sets", "set_weights", "texts", "dates"}


def _spill_resident(tmp_path):
    """The spill with its fixed-width files small enough to be read whole into memory."""
    store, fields = _spill(tmp_path, resident_bytes=1 << 20)
    assert store._hold
    return store, fields


def _shipped(tmp_path):
    """Rows as Ray's gather task ships them: one dict per shard (no Ray started)."""
    texts = pa.array([t[:CHARS].encode("utf-8", "surrogatepass") for t in TEXTS_], pa.binary())
    shards = [slice(0, 4), slice(4, 4), slice(4, N)]
    rows = [{**{k: v[s] for k, v in ARRAYS.items()}, SET_SIZES: SIZES[s],
             SET_VALUES: HASHES[OFFSETS[s.start]:OFFSETS[s.stop]], "date": DATES[s],
             TEXTS: texts[s.start:s.stop]} for s in shards]
    return ray_rows.shipped_rows(ALL, rows, dates=True), {"arrays", "sets", "texts", "dates"}


def _vector_scoring(tmp_path):
    writer = stores.TextWriter(tmp_path / stores.TEXTS_FILE, CHARS)
    writer.write(TEXTS_)
    writer.close()
    reader = stores.TextReader(tmp_path / stores.TEXTS_FILE, N)
    return vectors.PairScoring(reader, DATES.view("datetime64[s]"), 1 << 20), {"texts", "dates"}


def _bulk_scratch(tmp_path):
    """The index's bulk build scratch: interleaved row file and compressed texts."""
    raw = np.concatenate([ARRAYS[name].view(np.uint8).reshape(N, -1) for name, _, _ in LAYOUT], axis=1)
    raw.tofile(tmp_path / "rows.bin")
    blobs = compress_texts(TEXTS_, CHARS)
    (tmp_path / "rerank.bin").write_bytes(b"".join(blobs))
    np.cumsum([len(b) for b in blobs], dtype=np.int64).tofile(tmp_path / "rerank.end")
    return ScratchRows(tmp_path / "rows.bin", RowLayout(LAYOUT), ScratchTexts(tmp_path)), \
        {"arrays", "texts"}


def _sqlite_texts(first=0, new_base=1 << 62):
    """The index's text table (documents ``first``.. at index positions ``first``..),
    with the documents from ``new_base`` on given as a new batch's texts."""
    con = sqlite3.connect(":memory:")
    con.execute(TEXT_SCHEMA)
    stored = min(new_base - first, N)
    con.executemany(f"INSERT INTO {TEXT_TABLE}(doc, text) VALUES (?, ?)",
                    zip(range(first, first + stored), compress_texts(TEXTS_[:stored], CHARS)))
    return IndexTexts(con, new_base, TEXTS_[stored:], CHARS)


def _sqlite(tmp_path):
    """The index's re-link: one cluster's arrays (read from SQLite) by local position,
    their texts from the text table by index position (here local + 100)."""
    return LocalRows(ARRAYS, ALL + 100, _sqlite_texts(first=100)), {"arrays", "texts"}


ROW_SOURCES = {"memory": _memory, "spill": _spill, "spill_resident": _spill_resident,
               "shipped": _shipped,
               "vector_scoring": _vector_scoring, "bulk_scratch": _bulk_scratch, "sqlite": _sqlite}

TEXT_SOURCES = {
    "list": lambda tmp_path: _ListTexts(t[:CHARS] for t in TEXTS_),
    "spill": lambda tmp_path: _spill(tmp_path)[0].texts,
    "shipped": lambda tmp_path: _shipped(tmp_path)[0].texts,
    "bulk_scratch": lambda tmp_path: _bulk_scratch(tmp_path)[0].texts,
    "sqlite": lambda tmp_path: _sqlite_texts(),
    "sqlite_and_new": lambda tmp_path: _sqlite_texts(new_base=7),
}

EMBEDDINGS = RNG.standard_normal((N, 8)).astype(np.float32)
SHARDS = [(0, 5), (5, 7), (7, N)]


def _vector_file(tmp_path):
    class Dir:  # the one WorkDir method the store reads
        def stage_dir(self, name):
            return tmp_path / name

    (tmp_path / "embed").mkdir()
    EMBEDDINGS.tofile(tmp_path / "embed" / "rows.bin")
    return vectors._VectorFile(Dir(), {"n_rows": N, "dim": 8, "storage": "float32"})


def _vector_objects(tmp_path):
    """Ray's object store: one object per shard (``ray.get`` stood in for, see below)."""
    return ray_vectors._VectorObjects(SHARDS, [EMBEDDINGS[a:b] for a, b in SHARDS], 8)


VECTOR_SHARDS = {"file": _vector_file, "objects": _vector_objects}

REQUESTS = [ALL, ALL[::-1], np.array([3, 3, 0, 11, 3, 5, 5]), np.array([5]),
            np.zeros(0, np.int64)]


def _subclasses(cls):
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def _build_each(builders, tmp_path):
    built = []
    for name, build in builders.items():
        (tmp_path / name).mkdir(parents=True)
        built.append(build(tmp_path / name))
    return built


def test_every_source_is_covered(tmp_path):
    rows = _build_each(ROW_SOURCES, tmp_path / "rows")
    assert _subclasses(RowSource) == {type(source) for source, _ in rows}
    texts = _build_each(TEXT_SOURCES, tmp_path / "texts")
    assert _subclasses(TextSource) == {type(source) for source in texts}
    shards = _build_each(VECTOR_SHARDS, tmp_path / "vectors")
    assert _subclasses(VectorShards) == {type(source) for source in shards}


def _expected_texts(docs):
    return [TEXTS_[d][:CHARS] for d in docs.tolist()]


@pytest.mark.parametrize("name", sorted(ROW_SOURCES))
def test_row_sources_agree(tmp_path, name):
    source, fields = ROW_SOURCES[name](tmp_path)
    # The set-overlap bound reads set sizes before any set: a source holding sets says so.
    assert source.holds_sets == ("sets" in fields)
    for docs in REQUESTS:
        if source.holds_sets:
            np.testing.assert_array_equal(source.set_sizes(docs), SIZES[docs])
        rows = source.rows(docs)
        np.testing.assert_array_equal(rows.docs, docs)
        assert set(rows.arrays) == (set(ARRAYS) if "arrays" in fields else set())
        for key, values in rows.arrays.items():
            assert values.dtype == ARRAYS[key].dtype
            np.testing.assert_array_equal(values, ARRAYS[key][docs])
        if "sets" in fields:
            np.testing.assert_array_equal(rows.sets.offsets, np.concatenate(([0], np.cumsum(SIZES[docs]))))
            np.testing.assert_array_equal(
                rows.sets.hashes, np.concatenate([HASHES[OFFSETS[d]:OFFSETS[d + 1]] for d in docs] + [HASHES[:0]]))
        else:
            assert rows.sets is None
        if "set_weights" in fields:
            np.testing.assert_array_equal(
                rows.set_weights, np.concatenate([WEIGHTS[OFFSETS[d]:OFFSETS[d + 1]] for d in docs] + [WEIGHTS[:0]]))
        else:
            assert rows.set_weights is None
        if "texts" in fields:
            assert len(rows.texts) == docs.size
            positions = np.arange(docs.size)[::-1]
            assert rows.texts.take(positions) == _expected_texts(docs[positions])
        else:
            assert rows.texts is None
        if "dates" in fields:
            np.testing.assert_array_equal(rows.dates, DATES[docs].view("datetime64[s]"))
        else:
            assert rows.dates is None


@pytest.mark.parametrize("name", sorted(TEXT_SOURCES))
def test_text_sources_agree(tmp_path, name):
    source = TEXT_SOURCES[name](tmp_path)
    for docs in REQUESTS:
        assert source.texts(docs) == _expected_texts(docs)
    lazy = LazyTexts(source, np.array([9, 2, 2]))
    assert len(lazy) == 3 and lazy.take([2, 0]) == _expected_texts(np.array([2, 9]))
    assert lazy.take([]) == []


@pytest.mark.parametrize("name", sorted(VECTOR_SHARDS))
def test_vector_shards_agree(tmp_path, name, monkeypatch):
    # Objects as the store hands them back, without starting Ray.
    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(get=lambda ref: ref))
    source = VECTOR_SHARDS[name](tmp_path)
    for start, stop in SHARDS:
        rows, norms = source.read(start, stop)
        assert rows.dtype == np.float32 and norms.dtype == np.float64
        np.testing.assert_array_equal(rows, EMBEDDINGS[start:stop])
        np.testing.assert_allclose(norms, np.linalg.norm(EMBEDDINGS[start:stop].astype(np.float64), axis=1))
