"""RETSim ported to PyTorch: same embeddings as the ONNX model, and back to ONNX."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
if importlib.util.find_spec("unisim") is None:
    pytest.skip("unisim (which ships the RETSim model) is not installed", allow_module_level=True)

from neardup.embed import RETSim, binarize, default_model_path  # noqa: E402
from neardup.train.retsim_torch import (  # noqa: E402
    INPUT_NAME,
    OUTPUT_NAME,
    RETSimTorch,
    export_onnx,
    from_onnx,
    toeplitz,
)

pytestmark = pytest.mark.train

@pytest.fixture(scope="module")
def ported():
    torch.set_num_threads(1)
    return from_onnx()


@pytest.fixture(scope="module")
def bf16_export(tmp_path_factory):
    """(model, path): the ported model with its bf16 blocks on, exported once per module.
    Export runs in float32 whatever the flag, so this one file serves the export tests
    (weights, interface, RETSim's encodings) and the bf16 test (the flag restored)."""
    model = from_onnx()
    model.bf16_blocks = True
    return model, export_onnx(model, tmp_path_factory.mktemp("retsim") / "model.onnx")


@pytest.fixture(scope="module")
def exported(bf16_export):
    return bf16_export[1]


def _cos(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_chunk_embeddings_match_the_onnx_model(ported, varied_texts):
    inputs, _ = binarize(varied_texts)
    reference = np.empty((len(inputs), 256), np.float32)
    RETSim(threads=1).model.run(np.ascontiguousarray(inputs), reference)
    with torch.no_grad():
        ours = ported(torch.from_numpy(inputs)).numpy()
    assert ours.shape == reference.shape == (len(inputs), 256)
    assert _cos(ours, reference).min() > 0.9999
    assert np.abs(ours - reference).max() < 1e-3
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_exported_model_runs_in_retsim_like_the_original(exported, varied_texts):
    original = RETSim(threads=1).encode(varied_texts)
    again = RETSim(threads=1, model_path=exported).encode(varied_texts)
    assert _cos(original, again).min() > 0.9999
    near = RETSim(threads=1, model_path=exported).encode_chunks(varied_texts)
    ref = RETSim(threads=1).encode_chunks(varied_texts)
    np.testing.assert_array_equal(near[1], ref[1])
    assert _cos(near[0], ref[0]).min() > 0.9999


def test_exported_interface_and_dynamic_batch(exported):
    import onnx
    import onnxruntime as ort

    graph = onnx.load(str(exported)).graph
    assert [i.name for i in graph.input] == [INPUT_NAME]
    assert [o.name for o in graph.output] == [OUTPUT_NAME]
    dims = graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param and [d.dim_value for d in dims[1:]] == [512, 24]
    session = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
    for batch in (1, 5):
        out = session.run(None, {INPUT_NAME: np.zeros((batch, 512, 24), np.float32)})[0]
        assert out.shape == (batch, 256)


def test_export_round_trips_the_weights(ported, exported):
    again = from_onnx(exported)
    for name, value in ported.state_dict().items():
        np.testing.assert_array_equal(again.state_dict()[name].numpy(), value.numpy(), err_msg=name)


def test_gradients_reach_every_parameter(ported):
    model = from_onnx().train()
    inputs, _ = binarize(["some text", "other text entirely"])
    model(torch.from_numpy(inputs)).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum()]
    assert missing == []


def test_bf16_blocks_stay_close_and_export_in_float32(bf16_export, varied_texts):
    model = from_onnx()
    inputs = torch.from_numpy(binarize(varied_texts[:8])[0])
    with torch.no_grad():
        full = model(inputs)
        model.bf16_blocks = True
        fast = model(inputs)
    assert fast.dtype == torch.float32
    assert _cos(full.numpy(), fast.numpy()).min() > 0.99
    exported_model, path = bf16_export  # exported with its bf16 blocks on
    assert exported_model.bf16_blocks is True  # restored after export
    ref = RETSim(threads=1).encode(varied_texts[:8])
    again = RETSim(threads=1, model_path=path).encode(varied_texts[:8])
    assert _cos(ref, again).min() > 0.9999


def test_toeplitz_layout():
    n = 4
    diagonals = torch.arange(2 * n - 1, dtype=torch.float32)
    t = toeplitz(diagonals, n).numpy()
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(t, n - 1 + j - i)


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        from_onnx(tmp_path / "missing.onnx")
    with pytest.raises(ValueError, match="must be a RETSimTorch"):
        export_onnx(torch.nn.Linear(2, 2), tmp_path / "x.onnx")
    # An ONNX file that is not RETSim.
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    onnx.save(helper.make_model(graph), str(tmp_path / "other.onnx"))
    with pytest.raises(ValueError, match="RETSim"):
        from_onnx(tmp_path / "other.onnx")


def test_default_path_is_the_unisim_model():
    a, b = from_onnx(), from_onnx(default_model_path())
    assert isinstance(a, RETSimTorch)
    for name, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[name])


# -- a fine-tuned model in --method retsim ---------------------------------------------


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    """An exported model whose embeddings differ from the original's."""
    model = from_onnx()
    with torch.no_grad():
        model.projection.weight.mul_(torch.linspace(0.2, 2.0, 256)[:, None])
    directory = tmp_path_factory.mktemp("tuned")
    export_onnx(model, directory / "model.onnx")
    return directory


def test_retsim_method_takes_a_model_file_or_directory(perturbed, varied_texts):
    from neardup.methods import RETSimMethod

    texts = varied_texts[4:9]  # plain sentences in four scripts
    direct = RETSim(threads=1, model_path=perturbed / "model.onnx").encode(texts)
    for model in (perturbed, str(perturbed / "model.onnx")):
        method = RETSimMethod(model=model, threads=1)
        emb = method.sketch(texts).arrays["embedding"]
        np.testing.assert_allclose(emb, direct, atol=1e-6)
    assert RETSimMethod().get_params()["model"] is None


def test_embedding_cache_is_keyed_by_the_model_file(perturbed, tmp_path, varied_texts):
    import shutil

    from neardup.methods import RETSimMethod

    texts = varied_texts[4:9]  # plain sentences in four scripts
    cache = tmp_path / "cache"
    default = RETSimMethod(threads=1, cache_dir=cache).sketch(texts).arrays["embedding"]
    tuned_dir = tmp_path / "model"
    tuned_dir.mkdir()
    shutil.copyfile(default_model_path(), tuned_dir / "model.onnx")  # starts as the original
    first = RETSimMethod(model=tuned_dir, threads=1, cache_dir=cache)
    np.testing.assert_allclose(first.sketch(texts).arrays["embedding"], default, atol=1e-5)
    first_key = first.sketch_key()
    # Retrained in place: same path, new weights, so the cache must not be reused.
    shutil.copyfile(perturbed / "model.onnx", tuned_dir / "model.onnx")
    second = RETSimMethod(model=tuned_dir, threads=1, cache_dir=cache)
    assert second.sketch_key() != first_key
    tuned = second.sketch(texts).arrays["embedding"]
    assert np.abs(tuned - default).max() > 1e-2
    np.testing.assert_allclose(
        tuned, RETSim(threads=1, model_path=perturbed / "model.onnx").encode(texts), atol=1e-6
    )
    assert len(list(cache.glob("retsim-*.npz"))) == 3


def test_retsim_method_rejects_unknown_models(tmp_path):
    from neardup.methods import RETSimMethod

    with pytest.raises(FileNotFoundError, match="shipped"):
        RETSimMethod(model="no-such-model")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        RETSimMethod(model=str(tmp_path / "missing.onnx"))
    with pytest.raises(FileNotFoundError, match="has no model.onnx"):
        RETSimMethod(model=tmp_path)
    with pytest.raises(ValueError, match="parameter 'model'"):
        RETSimMethod(model=3)
