"""Fine-tune RETSim for near-duplicate detection with the multi-similarity loss.

RETSim (Zhang et al. 2023) was trained from scratch on mC4 with typo-augmented copies and
the multi-similarity loss (Wang et al. 2019; sec. 3.2: alpha 4, beta 40, lambda 0.5, miner
epsilon 0.1). :func:`train_retsim` continues that training on labeled near-duplicate
clusters, with the same loss and miner, starting from the shipped weights ported to PyTorch
(:mod:`neardup.train.retsim_torch`), and exports the result as an ONNX file that
``--method retsim --model <dir>`` runs unchanged.

What is trained is the *document* embedding ``RETSim.encode`` computes for near-duplicate
matching: each text is cut into 512-character chunks (:func:`neardup.embed.chunk_texts`),
the chunks are embedded, and their mean, renormalised, is the document's embedding; the
loss is taken on those, so the chunk encoder learns whatever makes whole documents match.

Batches (:func:`neardup.train.data.cluster_batches`) hold ``per_cluster`` documents of each
of several clusters; besides:

* hard negatives (clusters of documents whose ``negative_of`` names a cluster of the
  batch: updates, same-topic stories, shared quotes, templates) get two documents into the
  batch (up to half the batch size in all), so the loss sees them next to the cluster
  they resemble;
* with ``augment=True``, one member of every cluster in the batch gets a noisy copy made on
  the fly with :mod:`neardup.datasets.noise` (a newspaper reprint, or typos with OCR noise),
  a positive of that cluster, as RETSim's typo-augmented training does; singletons thus
  get positives too.

Training runs on the one trainer (:mod:`neardup.train.trainer`, transformers'
``Trainer``): the collator chunks and binarizes a batch (with its noisy copies), the
loss is :class:`neardup.train.losses.MultiSimilarity`. After every epoch the PyTorch
model embeds the validation documents (whole days of them, at most
``max_validation_docs``; float32, as the export runs: the port matches the ONNX model
to 1.5e-5), scored by the best ARI of cosine-threshold connected components
(:func:`neardup.train.validate.embedding_ari`); the off-the-shelf model is scored the same
way first (the baseline). The best epoch's model is exported to ``output_dir/model.onnx``
(the base model when no epoch beat it); training stops after ``patience`` epochs without
a better validation ARI. Checkpoints (``checkpoints/``) are written at every epoch end
and every ten minutes, so re-running the same call resumes where it stopped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neardup.errors import check_float, check_int
from neardup.eval.labeled import LabeledCorpus
from neardup.io.writers import atomic_path
from neardup.train.data import add_hard_negatives, cluster_batches, hard_negative_links
from neardup.train.losses import MINER_EPSILON, MS_ALPHA, MS_BASE, MS_BETA
from neardup.train.validate import whole_days

if TYPE_CHECKING:  # torch-dependent: imported when training
    from neardup.train.trainer import TrainingTask

__all__ = ["MINER_EPSILON", "MS_ALPHA", "MS_BASE", "MS_BETA", "train_retsim"]

_MODEL = "model.onnx"
_LOG = "training.json"
#: Share of the optimizer steps spent warming the learning rate up (then cosine decay).
_WARMUP = 0.1
#: Hard-negative documents added to one batch at most, as a share of the batch size.
_HARD_SHARE = 0.5
#: Settings that may change when a run is resumed (the others must match the checkpoint).
_RESUMABLE = frozenset({"epochs", "threads"})
#: Mid-epoch checkpoints, so an interrupted epoch loses at most this much work.
_CHECKPOINT_SECONDS = 600.0
#: Validation documents embedded per forward pass (no gradients).
_VALIDATION_BATCH = 64


# -- batches -----------------------------------------------------------------------------


def _codes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct labels and each document's index into them."""
    return np.unique(np.asarray(labels).astype(str), return_inverse=True)


def _epoch_batches(
    clusters: np.ndarray,
    links: dict[int, np.ndarray],
    *,
    batch_size: int,
    per_cluster: int,
    seed: int,
) -> list[np.ndarray]:
    """This epoch's batches: :func:`cluster_batches`, then two documents of hard-negative
    clusters of the batch's clusters added (at most half the batch size in all)."""
    batches = cluster_batches(clusters, batch_size=batch_size, per_cluster=per_cluster, seed=seed)
    return add_hard_negatives(batches, clusters, links, max_share=_HARD_SHARE, seed=seed)


def _noisy_copy(text: str, rng: np.random.Generator) -> str:
    """A near-duplicate of ``text``, with the kinds of change the copies to find carry.

    No heavier cuts than a newspaper reprint makes (abridgement keeps 40-90%): a copy
    that keeps a third of a story would teach the model to merge *updates* (a story with
    half its sentences replaced), which are hard negatives.
    """
    from neardup.datasets import noise

    if rng.random() < 0.6:  # a newspaper reprint: lead / dateline / abridgement / cuts + OCR
        return noise.reprint(text, rng, profile="news")[0]
    # RETSim-style character noise: typos, then light OCR noise
    typed = noise.typos(text, rng, rate=float(rng.uniform(0.01, 0.08)))
    return noise.ocr_noise(typed, rng, severity=float(rng.uniform(0.0, 0.03)))


def _augment(
    texts: list[str], labels: np.ndarray, rng: np.random.Generator
) -> tuple[list[str], np.ndarray]:
    """Add one noisy copy of one member of every cluster in the batch."""
    order = rng.permutation(len(labels))
    _, first = np.unique(labels[order], return_index=True)
    pick = order[first]
    copies = [_noisy_copy(texts[i], rng) for i in pick.tolist()]
    return texts + copies, np.concatenate([labels, labels[pick]])


# -- the model on documents --------------------------------------------------------------


def _chunk_inputs(texts: Sequence[str]) -> dict[str, Any]:
    """The model inputs of ``texts`` (the collator's half of ``RETSim.encode``): their
    distinct 512-character chunks, binarized, and where each chunk goes."""
    import torch

    from neardup.embed.binarizer import binarize_codes, chunk_texts

    chunks = chunk_texts(texts)
    codes = chunks.codes()
    keys = codes.view(np.dtype((np.void, codes.itemsize * codes.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    owner = np.repeat(np.arange(len(texts)), np.diff(chunks.offsets))
    return {"chunks": torch.from_numpy(binarize_codes(codes[first])),
            "inverse": torch.from_numpy(inverse.ravel().astype(np.int64)),
            "owner": torch.from_numpy(owner.astype(np.int64)),
            "documents": len(texts)}


def _pool_documents(model: Any, inputs: dict[str, Any]) -> Any:
    """Document embeddings as ``RETSim.encode`` computes them, with gradients: mean of the
    chunk embeddings, renormalised. Identical chunks run through the model once."""
    import torch

    chunk_emb = model(inputs["chunks"])[inputs["inverse"]]
    sums = torch.zeros(inputs["documents"], chunk_emb.shape[1], dtype=chunk_emb.dtype,
                       device=chunk_emb.device)
    sums = sums.index_add(0, inputs["owner"], chunk_emb)
    return torch.nn.functional.normalize(sums, dim=1)


def _document_embeddings(model: Any, texts: Sequence[str]) -> Any:
    """Document embeddings of ``texts`` (a tensor, with gradients when enabled)."""
    return _pool_documents(model, _chunk_inputs(texts))


# -- the trainer -----------------------------------------------------------------------------


def _check_corpus(name: str, corpus: Any) -> LabeledCorpus:
    if not isinstance(corpus, LabeledCorpus):
        raise ValueError(
            f"train_retsim: parameter '{name}' must be a LabeledCorpus (see "
            f"neardup.eval.load_labeled); got {type(corpus).__name__}."
        )
    if corpus.splits is not None and np.any(np.asarray(corpus.splits) == "test"):
        raise ValueError(
            f"train_retsim: parameter '{name}' holds test-split documents; train and select "
            "models on train and validation data only."
        )
    if len(corpus) < 2:
        raise ValueError(
            f"train_retsim: parameter '{name}' needs at least 2 documents; got {len(corpus)}."
        )
    return corpus


def train_retsim(
    train_corpus: LabeledCorpus,
    validation_corpus: LabeledCorpus,
    *,
    output_dir: str | os.PathLike,
    negative_of: np.ndarray | None = None,
    base_model: str | os.PathLike | None = None,
    epochs: int = 2,
    batch_size: int = 32,
    per_cluster: int = 2,
    lr: float = 1e-3,
    seed: int = 0,
    augment: bool = True,
    patience: int = 2,
    max_validation_docs: int = 2000,
    mixed_precision: bool | None = None,
    threads: int | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Fine-tune RETSim with the multi-similarity loss; write ``output_dir/model.onnx``.

    Parameters
    ----------
    train_corpus : LabeledCorpus
        Training documents with their cluster labels (e.g. from
        :func:`neardup.train.data.load_training_corpus`). Never a test split.
    validation_corpus : LabeledCorpus
        Validation documents (e.g. ``load_labeled("data/reuters-news/
        validation.jsonl.gz")``), used to pick the epoch and report its threshold.
    output_dir : str or os.PathLike
        Receives ``model.onnx`` (best epoch), ``training.json`` (the log), ``run.json``
        and ``checkpoints/``. Running again with the same settings resumes from the last
        checkpoint (``epochs`` and ``threads`` may change; a finished run with more
        ``epochs`` continues, its learning-rate schedule stretched to the new length).
        ``patience`` may no longer change on resume: early stopping's state is restored
        from the checkpoint with it.
    negative_of : ndarray or None, default None
        Per training document, the cluster label it is a hard negative of (None entries
        otherwise), as :func:`~neardup.train.data.load_training_corpus` returns it: a
        batch holding that cluster also gets two documents of the hard negative's cluster.
    base_model : str, os.PathLike or None, default None
        ONNX file to start from: the RETSim v1 model of the unisim package when None, or a
        file written by an earlier run.
    epochs : int, default 2
        Passes over the clusters (each cluster contributes ``per_cluster`` documents per
        epoch).
    batch_size : int, default 32
        Documents per batch from :func:`~neardup.train.data.cluster_batches`, before hard
        negatives and noisy copies are added (about 1.6 x as many in all on the Reuters
        benchmark).
    per_cluster : int, default 2
        Documents per cluster in a batch (>= 2).
    lr : float, default 1e-3
        Peak learning rate of AdamW; linear warm-up over the first 10% of the steps, then
        cosine decay to 0 at the end of ``epochs``.
    seed : int, default 0
        Seeds batches, noisy copies (per batch, from the batch's documents) and torch; a
        run is repeatable on one machine.
    augment : bool, default True
        Add a noisy copy of one member of each cluster of every batch (see the module
        docstring).
    patience : int, default 2
        Stop after this many epochs without a better validation ARI.
    max_validation_docs : int, default 2000
        Validate on whole days of the validation corpus holding at most this many
        documents (chosen once, by ``seed``), to keep epochs short.
    mixed_precision : bool or None, default None
        Run the two attention blocks in bfloat16 during training steps (faster on CPUs
        with native bf16; the rest of the network, validation and the exported
        model stay float32). None: on when the CPU supports bf16 natively.
    threads : int or None, default None
        Torch and ONNX Runtime threads; None keeps the libraries' defaults.
    progress : bool or None, default None
        Progress bar with the running loss; None: when stderr is a terminal.

    Returns
    -------
    dict
        ``model`` (path of model.onnx), ``log`` (path of training.json), ``best_epoch``
        (0: no epoch beat the base model, which is then what model.onnx holds),
        ``best_validation_ari``, ``best_threshold``, ``baseline_validation_ari``,
        ``baseline_threshold``, ``epochs_run``, ``stopped_early``, ``loss_check`` (the
        mean loss of the first four batches under the ``base`` and the ``best`` model),
        ``cpu_seconds``,
        ``wall_seconds``, ``validation_docs``.

    Raises
    ------
    ValueError
        Invalid parameters, a corpus with test-split documents, or a checkpoint in
        ``output_dir`` made with other settings.
    ImportError
        torch, onnx, onnxscript or pytorch_metric_learning is missing.

    Notes
    -----
    Loss: ``pytorch_metric_learning.losses.MultiSimilarityLoss(alpha=4, beta=40,
    base=0.5)`` on pairs mined by ``MultiSimilarityMiner(epsilon=0.1)``, cosine similarity
    of document embeddings, as in RETSim's training (sec. 3.2). RETSim has no dropout, so
    the model computes the same in training and evaluation.
    """
    caller = "train_retsim"
    train_corpus = _check_corpus("train_corpus", train_corpus)
    validation_corpus = _check_corpus("validation_corpus", validation_corpus)
    epochs = check_int(caller, "epochs", epochs, low=1)
    batch_size = check_int(caller, "batch_size", batch_size, low=2)
    per_cluster = check_int(caller, "per_cluster", per_cluster, low=2, high=batch_size,
                            hint="(At most batch_size.)")
    lr = check_float(caller, "lr", lr, low=0.0)
    if lr <= 0:
        raise ValueError(f"{caller}: parameter 'lr' must be > 0; got {lr!r}.")
    seed = check_int(caller, "seed", seed, low=0)
    patience = check_int(caller, "patience", patience, low=1)
    max_validation_docs = check_int(caller, "max_validation_docs", max_validation_docs, low=2)
    if threads is not None:
        threads = check_int(caller, "threads", threads, low=1)
    for name, value in (("augment", augment), ("mixed_precision", mixed_precision)):
        if not isinstance(value, bool) and not (name == "mixed_precision" and value is None):
            raise ValueError(f"{caller}: parameter '{name}' must be True or False; got {value!r}.")
    if negative_of is not None:
        negative_of = np.asarray(negative_of, dtype=object)
        if negative_of.shape != (len(train_corpus),):
            raise ValueError(
                f"{caller}: parameter 'negative_of' must have one entry per training document "
                f"({len(train_corpus)}); got shape {negative_of.shape}."
            )

    import torch

    from neardup.train.retsim_torch import export_onnx, from_onnx
    from neardup.train.trainer import TrainSettings, fit, torch_threads

    if mixed_precision is None:
        mixed_precision = _native_bf16()
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)

    # -- data -------------------------------------------------------------------------
    train_texts = list(train_corpus.texts)
    train_labels, train_codes = _codes(train_corpus.clusters)
    links = hard_negative_links(train_corpus.clusters, negative_of)
    keep = whole_days(validation_corpus, max_validation_docs, seed=seed)
    val_texts = [validation_corpus.texts[i] for i in keep.tolist()]
    val_clusters = np.asarray(validation_corpus.clusters)[keep]
    n_batches = len(_epoch_batches(train_corpus.clusters, links, batch_size=batch_size,
                                   per_cluster=per_cluster, seed=seed))

    base_path = base_model
    if base_path is None:
        from neardup.embed.retsim import default_model_path

        base_path = default_model_path()
    config = {
        "base_model": str(base_model) if base_model is not None else "unisim RETSim v1",
        "epochs": epochs, "batch_size": batch_size, "per_cluster": per_cluster, "lr": lr,
        "optimizer": "AdamW(weight_decay=0)", "schedule": f"linear warm-up {_WARMUP:.0%}, cosine",
        "loss": {"name": "MultiSimilarityLoss", "alpha": MS_ALPHA, "beta": MS_BETA,
                 "base": MS_BASE},
        "miner": {"name": "MultiSimilarityMiner", "epsilon": MINER_EPSILON},
        "seed": seed, "augment": augment, "mixed_precision": mixed_precision, "patience": patience,
        "max_validation_docs": max_validation_docs, "threads": threads,
        "train_docs": len(train_corpus), "train_clusters": int(train_codes.max()) + 1,
        "hard_negative_links": int(sum(len(v) for v in links.values())),
        "batches_per_epoch": n_batches,
        "validation_docs": len(keep),
        "validation_clusters": len(np.unique(val_clusters.astype(str))),
        "torch": torch.__version__,
    }  # fmt: skip

    # -- the run on the trainer ------------------------------------------------------------
    def build() -> TrainingTask:
        model = from_onnx(base_path).train()
        model.bf16_blocks = mixed_precision
        return _task(model, train_texts, train_codes, train_corpus.clusters, links, val_texts,
                     val_clusters, batch_size=batch_size, per_cluster=per_cluster, seed=seed,
                     augment=augment)

    settings = TrainSettings(
        epochs=epochs, lr=lr, seed=seed, patience=patience, warmup=_WARMUP, schedule="cosine",
        weight_decay=0.0, max_grad_norm=1.0, save_seconds=_CHECKPOINT_SECONDS, baseline=True,
        progress=progress)
    with torch_threads(threads):
        fitted = fit(build, settings, output_dir=out, config=config, caller=caller,
                     resumable=_RESUMABLE)
        log, baseline = fitted.log, fitted.baseline
        best = log.best
        beat = best is not None and best.validation_ari > baseline["ari"]
        if fitted.model is not None:
            # model.onnx is the base model unless an epoch beat it on validation.
            export_onnx(fitted.model if beat else from_onnx(base_path), out / _MODEL)
    data = log.to_dict()
    data.update({
        "baseline": baseline,
        "best_epoch": best.epoch if beat else 0,
        "best_validation_ari": best.validation_ari if beat else baseline["ari"],
        "best_threshold": best.threshold if beat else baseline["threshold"],
        "stopped_early": fitted.stopped_early,
        "loss_check": fitted.loss_check,
        "wall_seconds": round(baseline["seconds"] + sum(r.seconds for r in log.epochs), 1),
        "cpu_seconds": round(baseline["cpu_seconds"] + log.total_cpu_seconds(), 1),
    })  # fmt: skip
    with atomic_path(out / _LOG) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return {
        "model": str(out / _MODEL),
        "log": str(out / _LOG),
        "best_epoch": data["best_epoch"],
        "best_validation_ari": data["best_validation_ari"],
        "best_threshold": data["best_threshold"],
        "baseline_validation_ari": baseline["ari"],
        "baseline_threshold": baseline["threshold"],
        "epochs_run": len(log.epochs),
        "stopped_early": fitted.stopped_early,
        "loss_check": fitted.loss_check,
        "cpu_seconds": data["cpu_seconds"],
        "wall_seconds": data["wall_seconds"],
        "validation_docs": len(keep),
    }


def _task(model: Any, texts: list[str], codes: np.ndarray, clusters: np.ndarray,
          links: dict[int, np.ndarray], val_texts: list[str], val_clusters: np.ndarray, *,
          batch_size: int, per_cluster: int, seed: int, augment: bool) -> TrainingTask:
    """RETSim as a :class:`~neardup.train.trainer.TrainingTask`: cluster batches with hard
    negatives (and noisy copies), document embeddings, the multi-similarity loss."""
    import torch

    from neardup.train.losses import MultiSimilarity
    from neardup.train.trainer import AriEvaluator, TrainingTask

    ms = MultiSimilarity()

    def batches(epoch: int) -> list[np.ndarray]:
        # Every epoch draws other documents of each cluster.
        return _epoch_batches(clusters, links, batch_size=batch_size,
                              per_cluster=per_cluster, seed=seed * 1000 + epoch + 1)

    def collate(batch: list[int]) -> dict[str, Any]:
        idx = np.asarray(batch, np.int64)
        batch_texts, labels = [texts[i] for i in idx.tolist()], codes[idx]
        if augment:
            # Seeded by the batch itself, so a resumed epoch makes the same copies.
            rng = np.random.default_rng([seed, *idx.tolist()])
            batch_texts, labels = _augment(batch_texts, labels, rng)
        return {**_chunk_inputs(batch_texts), "targets": torch.from_numpy(labels.astype(np.int64))}

    def loss(model: Any, inputs: dict[str, Any]) -> Any:
        return ms(_pool_documents(model, inputs), inputs["targets"])

    def embed(model: Any) -> np.ndarray:
        # Validation in float32, as the exported model runs.
        bf16, model.bf16_blocks = model.bf16_blocks, False
        try:
            return np.concatenate([
                _document_embeddings(model, val_texts[i : i + _VALIDATION_BATCH]).numpy()
                for i in range(0, len(val_texts), _VALIDATION_BATCH)])
        finally:
            model.bf16_blocks = bf16

    evaluator = AriEvaluator(val_clusters, embed=embed)
    return TrainingTask(model=model, loss=loss, collate=collate, batches=batches,
                        evaluator=evaluator)


def _native_bf16() -> bool:
    """True when oneDNN runs bfloat16 natively on this CPU (AVX512-BF16 or AMX)."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False

