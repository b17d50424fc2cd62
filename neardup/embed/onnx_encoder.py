"""Transformer encoders and pair classifiers exported to ONNX, run with ONNX Runtime.

neardup ships its fine-tuned transformers as ONNX files, dynamically quantized to int8:
a MiniLM-L6 model is about 90 MB in float32 safetensors and about 23 MB in int8 ONNX,
and ONNX Runtime needs neither torch nor transformers at run time. Two pieces:

* :func:`export_transformer` writes a Hugging Face ``transformers`` model (a bare encoder
  such as ``BertModel``, or a sequence classifier such as
  ``BertForSequenceClassification``) and its fast tokenizer to a directory:
  ``model.onnx``, ``tokenizer.json`` and ``onnx.json`` (what the runner needs to know).
* :class:`OnnxTransformer` runs such a directory: :meth:`~OnnxTransformer.embed` gives
  mean-pooled, L2-normalized text embeddings (task ``"embedding"``, the bi-encoder);
  :meth:`~OnnxTransformer.logits` gives a classifier's logits for text pairs (task
  ``"classification"``, a cross-encoder). Its ``tokenizer`` also answers the calls
  :class:`neardup.embed.biencoder.BiEncoder` makes to cut long texts (heads and windows),
  so the ONNX and torch bi-encoders truncate and chunk identically.

Exporter
    ``torch.onnx.export(..., dynamo=True)``: the ``torch.export``-based exporter (it
    needs ``onnxscript``), opset 18, with dynamic batch and sequence axes and the
    exporter's graph optimizations; the model runs with eager attention for the trace.
    The TorchScript exporter (``dynamo=False``) is deprecated in torch 2.9+ and is used
    only if the dynamo exporter fails (``onnx.json`` records which one ran).
Quantization
    ``onnxruntime.quantization.quantize_dynamic``, int8 weights (signed, one scale per
    output channel), activations quantized on the fly; every MatMul with a weight and the
    embedding tables (Gather) are quantized, after ONNX Runtime's pre-processing (ONNX
    shape inference and graph optimization). Per-tensor scales lose far more (embedding
    cosine to float32 0.948 on average against 0.992 per channel for all-MiniLM-L6-v2). Check a quantized
    model against the float32 one before shipping it (the tests require embedding cosine
    > 0.98; see the model cards for validation ARI). Dynamic quantization scales each
    activation tensor by its batch's range, so an int8 embedding moves slightly with the
    other texts of its batch (cosine to itself in another batch about 0.99; float32
    exports are batch-independent to 1e-5); texts are batched by length, which keeps
    batches alike.
Inputs
    Any text: lone surrogates become U+FFFD (the Rust tokenizer cannot take them);
    control characters are the tokenizer's business (BERT's normalizer drops them). An
    empty text is embedded as ``[CLS] [SEP]``.
Requirements
    Running: ``onnxruntime``, ``tokenizers`` (the ``neural`` extra). Exporting also:
    ``torch``, ``transformers``, ``onnx``, ``onnxscript`` (the ``train`` extra).

Example
-------
>>> from sentence_transformers import SentenceTransformer      # doctest: +SKIP
>>> from neardup.embed.onnx_encoder import OnnxTransformer, export_transformer
>>> st = SentenceTransformer("path/to/model")
>>> export_transformer(st[0].auto_model, st.tokenizer, "out/model-onnx", task="embedding")
>>> OnnxTransformer("out/model-onnx").embed(["A text.", "Another text."]).shape
(2, 384)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_int

__all__ = ["OnnxTransformer", "export_transformer", "is_onnx_model_dir", "quantize_model_dir"]

TASKS = ("embedding", "classification")
CONFIG = "onnx.json"
MODEL = "model.onnx"
TOKENIZER = "tokenizer.json"
_OPSET = 18
_INT8 = "int8: onnxruntime quantize_dynamic, QInt8 weights per channel, MatMul and Gather"
_INT8_7BIT = _INT8 + ", 7-bit weight range (reduce_range)"
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_onnx_model_dir(path: str | os.PathLike) -> bool:
    """True when ``path`` holds an export of :func:`export_transformer`."""
    path = Path(path)
    return all((path / name).is_file() for name in (MODEL, TOKENIZER, CONFIG))


def replace_lone_surrogates(text: str) -> str:
    """``text`` with lone surrogates (the Rust tokenizers cannot encode them) replaced by
    U+FFFD; the same object when there are none."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


# -- export -------------------------------------------------------------------------------


def export_transformer(
    model: Any,
    tokenizer: Any,
    output_dir: str | os.PathLike,
    *,
    task: str = "embedding",
    quantize: bool = True,
    max_tokens: int | None = None,
) -> Path:
    """Export a transformers model and its fast tokenizer to an ONNX model directory.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A bare encoder (its ``last_hidden_state`` is mean-pooled over the attention mask
        inside the graph; output ``sentence_embedding``, not normalized) for
        ``task="embedding"``, or a sequence classifier (output ``logits``) for
        ``task="classification"``. For a sentence-transformers model pass
        ``st[0].auto_model``; its pooling must be mean pooling.
    tokenizer : transformers.PreTrainedTokenizerFast
        The model's tokenizer; its ``tokenizer.json`` is written beside the model.
    output_dir : str or os.PathLike
        Created if missing; ``model.onnx``, ``tokenizer.json`` and ``onnx.json`` in it are
        replaced.
    task : {"embedding", "classification"}, default "embedding"
    quantize : bool, default True
        Quantize the weights to int8 (``quantize_dynamic``); False keeps float32.
    max_tokens : int or None, default None
        Tokens per input the model was trained on, recorded as the runner's default;
        None: the model's position limit.

    Returns
    -------
    pathlib.Path
        ``output_dir``.
    """
    check_choice("export_transformer", "task", task, TASKS)
    if not isinstance(quantize, bool):
        raise ValueError(
            f"export_transformer: parameter 'quantize' must be True or False; got {quantize!r}."
        )
    import torch

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(
            "export_transformer: parameter 'tokenizer' must be a fast (Rust) tokenizer with a "
            f"tokenizer.json; got {type(tokenizer).__name__}."
        )
    config = model.config
    limit = int(getattr(config, "max_position_embeddings", 512) or 512)
    if max_tokens is not None:
        max_tokens = check_int("export_transformer", "max_tokens", max_tokens, low=8, high=limit)
    # input_ids and attention_mask always (mean pooling needs the mask); token_type_ids
    # when the tokenizer makes them (BERT, not RoBERTa).
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in getattr(tokenizer, "model_input_names", ()):
        names.append("token_type_ids")
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    wrapper = _export_wrapper(model, names, task).eval()
    # A small dummy batch: two sequences of different lengths, so padding is traced.
    encoded = tokenizer(["an example text for the trace", "short"], padding=True,
                        return_tensors="pt")
    args = tuple(encoded[n].to(torch.int64) for n in names)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        exporter = _torch_export(wrapper, args, names, task, fp32)
        final = Path(tmp) / MODEL
        if quantize:
            _quantize(fp32, final, Path(tmp))
        else:
            shutil.move(fp32, final)
        os.replace(final, out / MODEL)
    backend.save(str(out / TOKENIZER))
    meta = {
        "task": task,
        "inputs": names,
        "output": "sentence_embedding" if task == "embedding" else "logits",
        "pooling": "mean" if task == "embedding" else None,
        "hidden_size": int(config.hidden_size),
        "num_labels": int(getattr(config, "num_labels", 0)) if task == "classification" else None,
        "id2label": ({str(k): v for k, v in config.id2label.items()}
                     if task == "classification" else None),
        "max_positions": limit,
        "max_tokens": max_tokens or limit,
        "pad_id": int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0),
        "pad_token": str(tokenizer.pad_token or "[PAD]"),
        "quantization": _INT8_7BIT if quantize else None,
        "exporter": exporter,
        "opset": _OPSET,
        "model_type": str(getattr(config, "model_type", "")),
        "torch": torch.__version__,
    }
    (out / CONFIG).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return out


def _export_wrapper_class() -> type:
    import torch

    class ExportWrapper(torch.nn.Module):
        """Positional int64 inputs -> one output: mean-pooled embedding, or logits."""

        def __init__(self, model: Any, names: list[str], task: str) -> None:
            super().__init__()
            self.model = model
            self.names = names
            self.task = task

        # Named parameters, not *inputs: torch.export matches dynamic shapes to them.
        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                kwargs["token_type_ids"] = token_type_ids
            output = self.model(**kwargs, return_dict=True)
            if self.task == "classification":
                return output.logits
            hidden = output.last_hidden_state
            mask = kwargs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)

    return ExportWrapper


def _export_wrapper(model: Any, names: list[str], task: str) -> Any:
    return _export_wrapper_class()(model, names, task)


def _torch_export(wrapper: Any, args: tuple, names: list[str], task: str, path: Path) -> str:
    """Export with the dynamo exporter, falling back to TorchScript; says which ran."""
    import torch

    output = "sentence_embedding" if task == "embedding" else "logits"
    inner = wrapper.model
    previous = getattr(inner.config, "_attn_implementation", None)
    try:  # eager attention traces to plain MatMul/Softmax, which quantize well
        inner.set_attn_implementation("eager")
    except (AttributeError, ValueError):
        pass
    try:
        batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
        try:
            program = torch.onnx.export(
                wrapper, args, dynamo=True, opset_version=_OPSET, input_names=names,
                output_names=[output], dynamic_shapes=tuple({0: batch, 1: seq} for _ in names),
                optimize=True, external_data=False, verbose=False,
            )
            program.save(str(path), external_data=False)
            return f"torch.onnx.export(dynamo=True), opset {_OPSET}"
        except Exception as err:  # noqa: BLE001 -- any exporter failure: try the old one
            import warnings

            warnings.warn(f"dynamo ONNX export failed ({err!r:.200}); using TorchScript export",
                          stacklevel=3)
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        axes[output] = {0: "batch"}
        torch.onnx.export(
            wrapper, args, str(path), dynamo=False, opset_version=_OPSET, input_names=names,
            output_names=[output], dynamic_axes=axes, do_constant_folding=True,
        )
        return f"torch.onnx.export(dynamo=False, TorchScript), opset {_OPSET}"
    finally:
        if previous is not None:
            try:
                inner.set_attn_implementation(previous)
            except (AttributeError, ValueError):
                pass


def quantize_model_dir(source: str | os.PathLike, target: str | os.PathLike, *,
                       reduce_range: bool = True) -> Path:
    """Quantize a float32 export of :func:`export_transformer` to int8 in ``target``.

    ``export_transformer(..., quantize=True)`` does the same in one go; this lets the
    float32 model be kept for comparison (export once, quantize, compare the two).

    Parameters
    ----------
    reduce_range : bool, default True
        Weights in 7 bits instead of 8: on x86 CPUs without VNNI, ONNX Runtime's
        u8 x s8 products saturate with 8-bit weights (``experiments/int8_export_cosine/int8_export_cosine.py``).

    Returns
    -------
    pathlib.Path
        ``target``, with ``model.onnx``, ``tokenizer.json`` and ``onnx.json``.
    """
    source, target = Path(source), Path(target)
    if not is_onnx_model_dir(source):
        raise FileNotFoundError(
            f"quantize_model_dir: {str(source)!r} is not an ONNX model directory (it needs "
            f"{MODEL}, {TOKENIZER} and {CONFIG})."
        )
    meta = json.loads((source / CONFIG).read_text(encoding="utf-8"))
    if meta.get("quantization"):
        raise ValueError(
            f"quantize_model_dir: parameter 'source' must be a float32 export; {str(source)!r} "
            "is already quantized."
        )
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        final = Path(tmp) / MODEL
        _quantize(source / MODEL, final, Path(tmp), reduce_range)
        os.replace(final, target / MODEL)
    shutil.copyfile(source / TOKENIZER, target / TOKENIZER)
    meta["quantization"] = _INT8_7BIT if reduce_range else _INT8
    (target / CONFIG).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return target


def _quantize(source: Path, target: Path, tmp: Path, reduce_range: bool = True) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = tmp / "prepared.onnx"
    try:
        # Symbolic shape inference cannot follow the exported attention mask arithmetic;
        # ONNX shape inference and graph optimization are what quantization needs.
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    except Exception:  # noqa: BLE001 -- pre-processing is an optimization only
        prepared = source
    # Per-channel scales: per-tensor int8 costs MiniLM embeddings ~0.05 of cosine (mean
    # 0.948 vs float32 on news text), per-channel ~0.008 (mean 0.992), at the same size.
    # Gather quantizes the token embedding table, half of a MiniLM's weights.
    # 7-bit weights (reduce_range): x86 CPUs without VNNI (AVX2 only) multiply u8 x s8 with
    # int16 intermediates that saturate; all-MiniLM-L6-v2's worst cosine to float32 on the
    # test texts was 0.971 with 8-bit weights on such a CPU (AMD EPYC, AVX2), 0.981 with 7
    # (experiments/int8_export_cosine/int8_export_cosine.py).
    quantize_dynamic(str(prepared), str(target), weight_type=QuantType.QInt8,
                     per_channel=True, reduce_range=reduce_range, op_types_to_quantize=["MatMul", "Gather"])


# -- running ------------------------------------------------------------------------------


class _Tokenizer:
    """A ``tokenizers.Tokenizer`` answering the calls BiEncoder makes of a HF tokenizer.

    ``tok(text_or_texts, add_special_tokens=..., return_offsets_mapping=...)`` returns a
    dict with ``input_ids`` (and ``offset_mapping``), without truncation or padding;
    ``num_special_tokens_to_add(pair=False)``. Character offsets index the Python str.
    """

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(path))
        self._tok.no_padding()
        self._tok.no_truncation()

    def __call__(
        self, text: str | Sequence[str], *, add_special_tokens: bool = True,
        return_offsets_mapping: bool = False, **ignored: Any,
    ) -> dict[str, Any]:
        single = isinstance(text, str)
        texts = [replace_lone_surrogates(text)] if single else [replace_lone_surrogates(t) for t in text]
        encodings = self._tok.encode_batch(texts, add_special_tokens=add_special_tokens)
        result: dict[str, Any] = {"input_ids": [e.ids for e in encodings]}
        if return_offsets_mapping:
            result["offset_mapping"] = [e.offsets for e in encodings]
        if single:
            result = {k: v[0] for k, v in result.items()}
        return result

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return int(self._tok.num_special_tokens_to_add(pair))


class OnnxTransformer:
    """Run a directory written by :func:`export_transformer` with ONNX Runtime (CPU).

    Parameters
    ----------
    path : str or os.PathLike
        The directory (``model.onnx``, ``tokenizer.json``, ``onnx.json``).
    threads : int or None, default None
        ONNX Runtime intra-op threads; None lets it use every core.

    Attributes
    ----------
    config : dict
        The directory's ``onnx.json``.
    tokenizer
        Token counts and offsets without special tokens or truncation (see the module
        docstring); what BiEncoder uses to cut heads and windows.
    dim : int
        Embedding width (task "embedding") or number of labels (task "classification").
    max_tokens : int
        The default tokens per input: what the model was trained on.
    """

    def __init__(self, path: str | os.PathLike, *, threads: int | None = None) -> None:
        path = Path(path)
        if not is_onnx_model_dir(path):
            raise FileNotFoundError(
                f"OnnxTransformer: {str(path)!r} is not an ONNX model directory (it needs "
                f"{MODEL}, {TOKENIZER} and {CONFIG}; see export_transformer)."
            )
        if threads is not None:
            threads = check_int("OnnxTransformer", "threads", threads, low=1,
                                hint="Use None for every core.")
        import onnxruntime as ort

        self.path = path
        self.config = json.loads((path / CONFIG).read_text(encoding="utf-8"))
        self.task = self.config["task"]
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 0
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            str(path / MODEL), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = _Tokenizer(path / TOKENIZER)
        from tokenizers import Tokenizer

        # A second tokenizer for model inputs (truncation and padding are its state).
        self._inputs_tok = Tokenizer.from_file(str(path / TOKENIZER))
        self._inputs_tok.enable_padding(pad_id=self.config["pad_id"],
                                        pad_token=self.config["pad_token"])
        self._truncation: int | None = None
        self._lock = threading.Lock()
        self.max_tokens = int(self.config["max_tokens"])
        self.max_positions = int(self.config["max_positions"])
        self.dim = int(self.config["hidden_size"] if self.task == "embedding"
                       else self.config["num_labels"])

    def _features(self, inputs: list[Any], max_tokens: int) -> dict[str, np.ndarray]:
        with self._lock:  # truncation is tokenizer state
            if self._truncation != max_tokens:
                self._inputs_tok.enable_truncation(max_length=max_tokens,
                                                   strategy="longest_first")
                self._truncation = max_tokens
            encodings = self._inputs_tok.encode_batch(inputs)
        arrays = {
            "input_ids": np.asarray([e.ids for e in encodings], np.int64),
            "attention_mask": np.asarray([e.attention_mask for e in encodings], np.int64),
            "token_type_ids": np.asarray([e.type_ids for e in encodings], np.int64),
        }
        return {name: arrays[name] for name in self.config["inputs"]}

    def _check_max_tokens(self, caller: str, max_tokens: int | None) -> int:
        if max_tokens is None:
            return self.max_tokens
        return check_int(caller, "max_tokens", max_tokens, low=4, high=self.max_positions)

    def _run(self, inputs: list[Any], max_tokens: int, batch_size: int) -> np.ndarray:
        """Model outputs for ``inputs`` in input order, batched longest first."""
        lengths = np.fromiter(
            (len(x) if isinstance(x, str) else len(x[0]) + len(x[1]) for x in inputs),
            np.int64, len(inputs),
        )
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(inputs), self.dim), np.float32)
        output = [self.config["output"]]
        for lo in range(0, len(order), batch_size):
            rows = order[lo : lo + batch_size]
            features = self._features([inputs[i] for i in rows], max_tokens)
            out[rows] = self.session.run(output, features)[0]
        return out

    def embed(
        self,
        texts: Sequence[str],
        *,
        max_tokens: int | None = None,
        batch_size: int = 32,
        normalize: bool = True,
    ) -> np.ndarray:
        """Mean-pooled embeddings of the first ``max_tokens`` tokens of each text.

        Parameters
        ----------
        texts : sequence of str
        max_tokens : int or None, default None
            Tokens read per text, special tokens included; None: ``self.max_tokens``.
        batch_size : int, default 32
        normalize : bool, default True
            L2-normalize the rows (then a dot product is a cosine).

        Returns
        -------
        ndarray of float32, shape (len(texts), dim)
        """
        if self.task != "embedding":
            raise ValueError(f"OnnxTransformer.embed: {self.path} is a {self.task} model; "
                             "use logits().")
        max_tokens = self._check_max_tokens("OnnxTransformer.embed", max_tokens)
        batch_size = check_int("OnnxTransformer.embed", "batch_size", batch_size, low=1)
        texts = [replace_lone_surrogates(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        emb = self._run(texts, max_tokens, batch_size)
        if normalize:
            norms = np.linalg.norm(emb, axis=1, keepdims=True)
            emb /= np.maximum(norms, np.finfo(np.float32).tiny)
        return emb

    def logits(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        max_tokens: int | None = None,
        batch_size: int = 32,
    ) -> np.ndarray:
        """A pair classifier's logits for each (text_a, text_b) pair.

        Each pair is encoded as one input (``[CLS] a [SEP] b [SEP]`` for BERT), truncated
        longest-first to ``max_tokens`` tokens.

        Returns
        -------
        ndarray of float32, shape (len(pairs), num_labels)
        """
        if self.task != "classification":
            raise ValueError(f"OnnxTransformer.logits: {self.path} is an {self.task} model; "
                             "use embed().")
        max_tokens = self._check_max_tokens("OnnxTransformer.logits", max_tokens)
        batch_size = check_int("OnnxTransformer.logits", "batch_size", batch_size, low=1)
        cleaned = []
        for i, pair in enumerate(pairs):
            if (not isinstance(pair, (tuple, list)) or len(pair) != 2
                    or not all(isinstance(t, str) for t in pair)):
                raise ValueError(
                    "OnnxTransformer.logits: parameter 'pairs' must hold (str, str) pairs; "
                    f"got item {i}: {pair!r:.60}."
                )
            cleaned.append((replace_lone_surrogates(pair[0]), replace_lone_surrogates(pair[1])))
        if not cleaned:
            return np.zeros((0, self.dim), np.float32)
        return self._run(cleaned, max_tokens, batch_size)
