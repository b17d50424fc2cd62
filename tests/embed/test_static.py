"""Static (model2vec) embeddings and ``--method static`` with the shipped model, offline."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neardup
from neardup.embed.static import DEFAULT_STATIC_MODEL, StaticEmbedder, static_model_dir
from neardup.methods import StaticMethod, make_method
from neardup.models import MODELS_DIR

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

pytestmark = pytest.mark.neural

ROOT = Path(__file__).resolve().parents[2]
STORY = ("Oil prices rose sharply on Monday after the producers' group agreed to cut output "
         "by two million barrels a day, traders in London said.")
CORPUS = [
    STORY,
    STORY.replace("sharply", "sharpiy").replace("traders", "tradcrs"),
    STORY.upper(),
    "Heavy snow closed mountain roads in the Alps and cut power to thousands of homes.",
    "Heavy snow closed mountain roads in the Alps and cut power to thousands of homes!",
    "The central bank left its key interest rate unchanged at 3.5 pct, as expected.",
]


@pytest.fixture(scope="module")
def demo_texts() -> list[str]:
    import gzip
    import json

    from neardup.data import demo_corpus_path

    with gzip.open(demo_corpus_path(), "rt") as handle:
        return [json.loads(line)["text"] for line in handle]


@pytest.fixture(scope="module")
def embedder():
    return StaticEmbedder()


def test_deterministic_unit_norm(embedder):
    first = embedder.encode(CORPUS + ["", "😀😀"])
    again = StaticEmbedder().encode(CORPUS + ["", "😀😀"])
    assert first.dtype == np.float32 and first.shape[0] == len(CORPUS) + 2
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    # Batches cut differently give the same rows (no cross-text state).
    np.testing.assert_array_equal(embedder.encode(CORPUS, batch_size=2), first[: len(CORPUS)])


def test_copies_close_unrelated_far(embedder):
    emb = embedder.encode(CORPUS)
    sims = emb @ emb.T
    assert sims[0, 2] > 0.999 and sims[3, 4] > 0.99  # case and punctuation: the same tokens
    assert sims[0, 1] > 0.75  # two OCR typos
    assert max(sims[0, 3], sims[0, 5], sims[1, 3], sims[1, 5], sims[3, 5]) < 0.6


def test_texts_without_tokens_match_only_themselves(embedder):
    emb = embedder.encode(["😀😀", "😀😀", "🙂🙂"])
    assert emb[0] @ emb[1] == pytest.approx(1.0)
    assert abs(float(emb[0] @ emb[2])) < 0.5


def test_clusters_tiny_corpus():
    labels = neardup.dedup(CORPUS, "static", threshold=0.7, pair_types=False).clusters
    assert labels[0] == labels[1] == labels[2]
    assert labels[3] == labels[4]
    assert len({labels[0], labels[3], labels[5]}) == 3


def test_memory_and_local_engines_agree(tmp_path, demo_texts):
    texts = demo_texts[:300]
    memory = neardup.dedup(texts, "static", engine="memory", pair_types=False).clusters
    local = neardup.dedup(texts, "static", engine="local", pair_types=False,
                          work_dir=str(tmp_path / "w"), memory_limit="1MB").clusters
    assert len(set(memory.tolist())) < len(texts)  # there are duplicates to find
    np.testing.assert_array_equal(memory, local)


def test_index_holds_static_vectors(tmp_path, demo_texts):
    from neardup.index import Index

    texts = demo_texts[:120]
    with Index.create(tmp_path / "idx", "static") as index:
        index.add(texts, ids=[str(i) for i in range(len(texts))])
        found = index.query([texts[5]]).records()[0]["matches"]
        assert found[0]["id"] == "5" and found[0]["score"] == pytest.approx(1.0, abs=1e-5)


def test_no_model_work_in_constructor(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("resolved in the constructor")

    monkeypatch.setattr("neardup.methods.embedding.tuned_threshold", refuse)
    method = StaticMethod()
    assert method._threshold is None and method._embedder is None
    assert make_method("static", threshold=0.8).get_params()["threshold"] == 0.8
    monkeypatch.undo()
    assert 0 < StaticMethod().get_params()["threshold"] < 1  # the model's, on first read


def test_pickles_without_the_model(embedder):
    embedder.encode(["load it"])
    clone = pickle.loads(pickle.dumps(embedder))
    assert clone._model is None
    np.testing.assert_array_equal(clone.encode(CORPUS), embedder.encode(CORPUS))


def test_shipped_model_loads_offline():
    code = ("from neardup.embed.static import StaticEmbedder; "
            "print(StaticEmbedder().encode(['a text']).shape)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip().startswith("(1, ")
    assert static_model_dir(DEFAULT_STATIC_MODEL).parent == MODELS_DIR


def test_missing_model_files_are_named(tmp_path):
    shutil.copytree(static_model_dir(DEFAULT_STATIC_MODEL), tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="has no model.safetensors"):
        StaticEmbedder(model=tmp_path / "m").encode(["x"])
    with pytest.raises(FileNotFoundError, match="neither a shipped static model"):
        StaticEmbedder(model=tmp_path / "absent").encode(["x"])
    with pytest.raises(ValueError, match="is a biencoder model, not a static model"):
        StaticEmbedder(model="biencoder-news").encode(["x"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_tokens": 0}, "StaticEmbedder: parameter 'max_tokens' must be an integer >= 1"),
    ({"model": 3}, "StaticEmbedder: parameter 'model' must be a shipped static model name"),
])
def test_invalid_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StaticEmbedder(**kwargs)


def test_method_rejects_bad_normalize():
    with pytest.raises(ValueError, match="parameter 'normalize' must be a NormalizeConfig or None"):
        StaticMethod(normalize="yes")
