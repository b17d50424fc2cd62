import pickle
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from neardup.embed import RETSim, default_model_path, partial_similarity

pytestmark = pytest.mark.neural

LONG = (
    "Shares of the company rose sharply on Tuesday after it reported first-quarter earnings "
    "well above analysts' expectations, helped by strong demand in its overseas markets. "
)


def _cosines(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# -- the reference (google/unisim TextSim, ONNX backend) ----------------------------------


def test_matches_reference_on_varied_texts(retsim, reference, varied_texts):
    ours = retsim.encode(varied_texts)
    theirs = np.asarray(reference.embed(varied_texts))
    cos = _cosines(ours, theirs)
    assert cos.min() > 0.999, [(t[:20], c) for t, c in zip(varied_texts, cos) if c <= 0.999]


def test_matches_reference_on_reuters_stories(retsim, reference):
    from neardup.io import iter_records
    from neardup.io.reuters import find_reuters_dir

    root = find_reuters_dir()
    if root is None:
        pytest.skip("Reuters-21578 not available")
    records = iter_records([sorted(root.glob("reut2-*.sgm"))[0]])
    texts = [r["text"] for _, r in zip(range(40), records)]
    cos = _cosines(retsim.encode(texts), np.asarray(reference.embed(texts)))
    assert cos.min() > 0.999


def test_empty_text_is_the_padding_chunk(retsim, reference):
    # The reference embeds "" as one chunk of padding (zero codes), which is also how it
    # embeds a single U+0000: the output is defined, unit-norm and the same for both.
    empty, nul = retsim.encode(["", "\x00"])
    np.testing.assert_allclose(empty, nul, atol=1e-6)
    assert np.linalg.norm(empty) == pytest.approx(1.0, abs=1e-5)
    assert _cosines([empty], np.asarray(reference.embed([""])))[0] > 0.999


# -- shape, order, determinism ------------------------------------------------------------


def test_output_shape_dtype_norm(retsim, varied_texts):
    emb = retsim.encode(varied_texts)
    assert emb.shape == (len(varied_texts), 256) and emb.dtype == np.float32
    assert retsim.dim == 256
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    empty = retsim.encode([])
    assert empty.shape == (0, 256) and empty.dtype == np.float32


def test_deterministic(retsim, varied_texts):
    first = retsim.encode(varied_texts)
    np.testing.assert_array_equal(first, retsim.encode(varied_texts))
    other = RETSim(batch_size=5, threads=1)  # other batching, other thread count
    assert _cosines(other.encode(varied_texts), first).min() > 0.99999


def test_order_is_restored(retsim, varied_texts):
    # Chunks are processed grouped by content (duplicates collapsed), not in input order.
    texts = varied_texts + ["The quick brown fox jumps over the lazy dog."] * 3 + ["x" * 512]
    emb = retsim.encode(texts)
    perm = np.random.default_rng(0).permutation(len(texts))
    shuffled = retsim.encode([texts[i] for i in perm])
    np.testing.assert_allclose(shuffled, emb[perm], atol=1e-6)
    # Alone, a text goes through the model in a batch of one: other kernels, same vector.
    one_by_one = np.vstack([retsim.encode([t]) for t in texts[:8]])
    assert _cosines(one_by_one, emb[:8]).min() > 0.99999
    np.testing.assert_array_equal(emb[len(varied_texts)], emb[4])  # duplicates agree


def test_near_duplicates_are_closer_than_unrelated(retsim, varied_texts):
    a, typo, other = retsim.encode(
        [LONG, LONG.replace("sharply", "sharpyl").replace("demand", "demnad"), varied_texts[8]]
    )
    assert a @ typo > 0.9 > a @ other


# -- partial-duplicate embeddings ---------------------------------------------------------


def test_encode_chunks_layout(retsim):
    texts = ["", "a", "x" * 512, "y" * 769, LONG * 8]
    emb, offsets = retsim.encode_chunks(texts)
    counts = np.diff(offsets).tolist()
    # "" has no chunk; 512 characters keep one (the padding chunk is left out).
    assert counts == [0, 1, 1, 2, len(LONG * 8) // 512 + (len(LONG * 8) % 512 > 256)]
    assert emb.shape == (offsets[-1], 256) and emb.dtype == np.float32
    assert offsets.dtype == np.int64
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # Without a padding chunk, the near-dup embedding is the normalized mean of these.
    near = retsim.encode(texts)
    for i in (1, 3, 4):
        mean = emb[offsets[i] : offsets[i + 1]].mean(0)
        np.testing.assert_allclose(near[i], mean / np.linalg.norm(mean), atol=1e-5)


def test_partial_similarity_finds_a_shared_passage(retsim):
    story = (LONG * 8)[:1024]  # two chunks
    other = "Der schnelle braune Fuchs springt über den faulen Hund. " * 10
    quoting = other[:512] + story[512:]  # shares the second chunk exactly
    emb, off = retsim.encode_chunks([story, quoting, other, ""])
    chunks = [emb[off[i] : off[i + 1]] for i in range(4)]
    assert partial_similarity(chunks[0], chunks[1]) == pytest.approx(1.0, abs=1e-5)
    assert retsim.partial_similarity(chunks[0], chunks[2]) < 0.9
    assert np.isnan(partial_similarity(chunks[0], chunks[3]))
    with pytest.raises(ValueError, match="partial_similarity: parameters 'a_chunks'"):
        partial_similarity(chunks[0], chunks[0][:, :10])


# -- hostile input ------------------------------------------------------------------------


def test_hostile_input_embeds(retsim, varied_texts):
    block = "Ab3 Ωж中😀\x00\x07\u202e\ud800 " * 37 + "#" * (512 - 13 * 37)
    assert len(block) == 512
    big = block * 10240  # 5 MiB of text, 10,240 identical chunks
    hostile = ["", "a", "😀" * 300, "\u202e\u200f" * 1000, "\x00" * 2000, varied_texts[10]]
    tracemalloc.start()
    try:
        emb = retsim.encode([big] + hostile)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.isfinite(emb).all()
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # Every chunk of `big` is `block`, so its mean is the embedding of `block` repeated.
    np.testing.assert_allclose(emb[0], retsim.encode([block * 2])[0], atol=1e-5)
    assert peak < 200 * 2**20  # the reference builds a 503 MB float array for `big`


def test_progress_bar_runs(retsim, varied_texts):
    emb = retsim.encode(varied_texts[:5], progress=True)
    assert emb.shape == (5, 256)


# -- parameters, errors, optional dependencies --------------------------------------------


def test_params_and_no_work_in_constructor():
    model = RETSim(batch_size=8, threads=2)
    assert model.get_params() == {"batch_size": 8, "threads": 2, "model_path": None,
                                  "precision": "float32"}
    assert repr(model) == "RETSim(batch_size=8, threads=2, model_path=None, precision='float32')"
    assert model._model is None  # nothing loaded yet


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "RETSim: parameter 'batch_size' must be an integer >= 1; got 0."),
        ({"threads": 0}, "RETSim: parameter 'threads' must be an integer >= 1; got 0."),
        ({"model_path": 3}, "RETSim: parameter 'model_path' must be a path or None; got 3."),
        ({"precision": "int4"},
         "RETSim: parameter 'precision' must be one of 'float32', 'int8'; got 'int4'."),
    ],
)
def test_invalid_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        RETSim(**kwargs)


def test_invalid_texts():
    model = RETSim()  # validation happens before the model is needed
    with pytest.raises(ValueError, match="got a single str"):
        model.encode("just one text")
    with pytest.raises(ValueError, match="got item 1 of type int"):
        model.encode(["ok", 5])
    with pytest.raises(ValueError, match="got item 0 of type bytes"):
        model.encode_chunks([b"bytes"])
    with pytest.raises(ValueError, match="RETSim.encode: parameter 'batch_size'"):
        model.encode(["ok"], batch_size=0)
    assert model._model is None


def test_missing_onnxruntime_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` fail
    with pytest.raises(ImportError, match=r"pip install 'neardup\[neural\]'"):
        RETSim().encode(["a"])


def test_missing_unisim_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "unisim", None)  # makes find_spec("unisim") None
    with pytest.raises(ImportError, match=r"'unisim'.*pip install 'neardup\[neural\]'"):
        default_model_path()


def test_model_path_override(retsim, tmp_path, varied_texts):
    path = default_model_path()
    explicit = RETSim(model_path=path)
    np.testing.assert_allclose(
        explicit.encode(varied_texts[:6]), retsim.encode(varied_texts[:6]), atol=1e-6
    )
    with pytest.raises(FileNotFoundError, match="does not exist"):
        RETSim(model_path=tmp_path / "missing.onnx").encode(["a"])


def test_pickle_drops_and_reloads_the_session(retsim, varied_texts):
    clone = pickle.loads(pickle.dumps(retsim))
    assert clone._model is None
    np.testing.assert_allclose(
        clone.encode(varied_texts[:4]), retsim.encode(varied_texts[:4]), atol=1e-6
    )


def test_runtime_does_not_import_unisim(retsim):
    # unisim is only a model file at run time; importing it would pull pandas, usearch and
    # a TensorFlow probe. Importing neardup.embed must not even import onnxruntime.
    code = (
        "import sys\n"
        "from neardup.embed import RETSim\n"
        "assert 'onnxruntime' not in sys.modules\n"
        "RETSim().encode(['hello'])\n"
        "assert 'onnxruntime' in sys.modules and 'unisim' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- int8 ---------------------------------------------------------------------------------


def test_int8_within_cosine_099_of_float32_on_prose(retsim, tmp_path, monkeypatch):
    from neardup.embed.retsim import int8_model_file

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a fresh quantized file, made here
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    # Prose only: on exotic input (emoji, control characters) dynamic int8 is far off, see
    # RETSim's precision parameter.
    sample = [LONG * 12, LONG[:300], LONG[40:200], "Oil rose 2 pct on Monday.",
              "The central bank left its key rate unchanged at 3.5 pct, as expected.",
              "Heavy snow closed mountain roads in the Alps and cut power to thousands."]
    int8 = RETSim(batch_size=16, precision="int8")
    cos = _cosines(int8.encode(sample), retsim.encode(sample))
    assert cos.mean() >= 0.99 and cos.min() > 0.97, cos
    made = int8_model_file(default_model_path())
    assert made.parent.parent == tmp_path and made.stat().st_size < default_model_path().stat().st_size / 2
    # Chunk embeddings (retsim-partial) come from the same session.
    chunks, offsets = int8.encode_chunks(sample)
    assert chunks.shape[1] == 256 and offsets[-1] == len(chunks)
