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
  the fly with :mod:`neardup.eval.noise` (a newspaper reprint, or typos with OCR noise),
  a positive of that cluster, as RETSim's typo-augmented training does; singletons thus
  get positives too.

After every epoch the model is exported and run through :class:`neardup.embed.RETSim` on
the validation documents (whole days of them, at most ``max_validation_docs``), scored by
the best ARI of cosine-threshold connected components
(:func:`neardup.train.validate.embedding_ari`); the off-the-shelf model is scored the same
way first (the baseline). The best epoch's model is ``output_dir/model.onnx``; training stops
after ``patience`` epochs without a better validation ARI. Every epoch ends with a
checkpoint, so re-running the same call resumes where it stopped.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neardup.errors import check_float, check_int
from neardup.eval.labeled import LabeledCorpus
from neardup.progress import progress_bar
from neardup.train.data import add_hard_negatives, cluster_batches, hard_negative_links
from neardup.train.loop import (
    EpochRecord,
    TrainingLog,
    cpu_seconds,
    load_checkpoint,
    restore_rng_states,
    rng_states,
    save_checkpoint,
    seed_everything,
)
from neardup.train.validate import embedding_ari, whole_days

__all__ = ["MINER_EPSILON", "MS_ALPHA", "MS_BASE", "MS_BETA", "train_retsim"]

#: Multi-similarity loss and miner parameters of RETSim's training (paper, sec. 3.2).
MS_ALPHA = 4.0
MS_BETA = 40.0
MS_BASE = 0.5
MINER_EPSILON = 0.1

_CHECKPOINT = "checkpoint.pt"
_MODEL = "model.onnx"
_LOG = "training.json"
#: Share of the optimizer steps spent warming the learning rate up (then cosine decay).
_WARMUP = 0.1
#: Hard-negative documents added to one batch at most, as a share of the batch size.
_HARD_SHARE = 0.5
#: Settings that may change when a run is resumed (the others must match the checkpoint).
_RESUMABLE = frozenset({"epochs", "patience", "threads"})


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
    from neardup.eval import noise

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


def _document_embeddings(model: Any, texts: Sequence[str]) -> Any:
    """Document embeddings as ``RETSim.encode`` computes them, with gradients: mean of the
    chunk embeddings, renormalised. Identical chunks run through the model once."""
    import torch

    from neardup.embed.binarizer import binarize_codes, chunk_texts

    chunks = chunk_texts(texts)
    codes = chunks.codes()
    keys = codes.view(np.dtype((np.void, codes.itemsize * codes.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inputs = torch.from_numpy(binarize_codes(codes[first]))
    chunk_emb = model(inputs)[torch.from_numpy(inverse.ravel().astype(np.int64))]
    owner = np.repeat(np.arange(len(texts)), np.diff(chunks.offsets))
    sums = torch.zeros(len(texts), chunk_emb.shape[1], dtype=chunk_emb.dtype)
    sums = sums.index_add(0, torch.from_numpy(owner), chunk_emb)
    return torch.nn.functional.normalize(sums, dim=1)


# -- validation ----------------------------------------------------------------------------


def _validate(
    model_path: Path, texts: list[str], clusters: np.ndarray, threads: int | None
) -> tuple[float, float]:
    """Best validation ARI and its threshold, with the exported model run by RETSim."""
    from neardup.embed.retsim import RETSim

    embeddings = RETSim(batch_size=32, threads=threads, model_path=model_path).encode(
        texts, progress=False
    )
    score = embedding_ari(embeddings, clusters)
    return float(score.ari), float(score.threshold)


def _advance(advance: Any, status: str) -> None:
    """Advance the bar by one batch, showing ``status`` where the bar supports it."""
    try:
        advance(1, status=status)
    except TypeError:  # a progress bar without a status field
        advance(1)


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
        Validation documents (e.g. ``load_labeled("benchmarks/reuters-news/
        validation.jsonl.gz")``), used to pick the epoch and report its threshold.
    output_dir : str or os.PathLike
        Receives ``model.onnx`` (best epoch), ``training.json`` (the log) and
        ``checkpoint.pt``. Running again with the same settings resumes from the checkpoint
        (``epochs``, ``patience`` and ``threads`` may change; a finished run with more
        ``epochs`` continues, its learning-rate schedule stretched to the new length).
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
        Seeds batches, noisy copies and torch; a run is repeatable on one machine.
    augment : bool, default True
        Add a noisy copy of one member of each cluster of every batch (see the module
        docstring).
    patience : int, default 2
        Stop after this many epochs without a better validation ARI.
    max_validation_docs : int, default 2000
        Validate on whole days of the validation corpus holding at most this many
        documents (chosen once, by ``seed``), to keep epochs short.
    mixed_precision : bool or None, default None
        Run the two attention blocks in bfloat16 during training steps (about 1.7x faster
        on CPUs with native bf16; the rest of the network, validation and the exported
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
        ``baseline_threshold``, ``epochs_run``, ``stopped_early``, ``cpu_seconds``,
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
    from pytorch_metric_learning import losses, miners

    from neardup.train.retsim_torch import export_onnx, from_onnx

    if threads is not None:
        torch.set_num_threads(threads)
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

    # -- model, optimizer, schedule ------------------------------------------------------
    seed_everything(seed)
    model = from_onnx(base_path).train()
    model.bf16_blocks = mixed_precision
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    total_steps = max(1, epochs * n_batches)
    warmup = max(1, int(_WARMUP * total_steps))

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress_ = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress_))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    loss_fn = losses.MultiSimilarityLoss(alpha=MS_ALPHA, beta=MS_BETA, base=MS_BASE)
    miner = miners.MultiSimilarityMiner(epsilon=MINER_EPSILON)

    # -- resume ---------------------------------------------------------------------------
    log = TrainingLog(config=config)
    baseline: dict[str, float] | None = None
    best_state: dict[str, Any] | None = None
    done = 0
    checkpoint = load_checkpoint(out / _CHECKPOINT)
    if checkpoint is not None:
        saved = checkpoint["config"]
        changed = sorted(k for k in set(saved) | set(config)
                         if k not in _RESUMABLE and saved.get(k) != config.get(k))
        if changed:
            raise ValueError(
                f"{caller}: {out / _CHECKPOINT} was made with other settings "
                f"({', '.join(f'{k}: {saved.get(k)!r} -> {config.get(k)!r}' for k in changed)}). "
                "Use another output_dir, or delete the checkpoint to start over."
            )
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        restore_rng_states(checkpoint["rng"])
        log = TrainingLog.from_dict(checkpoint["log"])
        log.config = config
        baseline = checkpoint["baseline"]
        best_state = checkpoint["best_state"]
        done = int(checkpoint["epoch"])
        if done < epochs and not log.should_stop(patience):
            log.resumed_at.append(done)

    def write_log(stopped: bool) -> dict[str, Any]:
        """training.json: the epoch log, the baseline, and which model model.onnx holds."""
        assert baseline is not None
        best = log.best
        beat = best is not None and best.validation_ari > baseline["ari"]
        data = log.to_dict()
        data.update({
            "baseline": baseline,
            "best_epoch": best.epoch if beat else 0,
            "best_validation_ari": best.validation_ari if beat else baseline["ari"],
            "best_threshold": best.threshold if beat else baseline["threshold"],
            "stopped_early": stopped,
            "wall_seconds": round(baseline["seconds"] + sum(r.seconds for r in log.epochs), 1),
            "cpu_seconds": round(baseline["cpu_seconds"] + log.total_cpu_seconds(), 1),
        })  # fmt: skip
        with _atomic(out / _LOG) as tmp:
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return data

    # -- baseline: the model before fine-tuning ---------------------------------------
    if baseline is None:
        t0, c0 = time.time(), cpu_seconds()
        export_onnx(model, out / _MODEL)  # model.onnx is the base model until beaten
        ari, threshold = _validate(out / _MODEL, val_texts, val_clusters, threads)
        baseline = {"ari": ari, "threshold": threshold, "seconds": round(time.time() - t0, 1),
                    "cpu_seconds": round(cpu_seconds() - c0, 1)}
        save_checkpoint(out / _CHECKPOINT, {
            "config": config, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "rng": rng_states(), "log": log.to_dict(),
            "baseline": baseline, "best_state": None, "epoch": 0,
        })  # fmt: skip
        write_log(False)

    # -- epochs ----------------------------------------------------------------------------
    epoch = done
    while epoch < epochs and not log.should_stop(patience):
        epoch += 1
        t0, c0 = time.time(), cpu_seconds()
        batches = _epoch_batches(train_corpus.clusters, links, batch_size=batch_size,
                                 per_cluster=per_cluster, seed=seed * 1000 + epoch)
        rng = np.random.default_rng([seed, epoch])
        total_loss, steps = 0.0, 0
        description = f"RETSim epoch {epoch}/{epochs}"
        bar = progress_bar(description, total=len(batches), unit="batches", enabled=progress)
        with bar as advance:
            for batch in batches:
                texts = [train_texts[i] for i in batch.tolist()]
                labels = train_codes[batch]
                if augment:
                    texts, labels = _augment(texts, labels, rng)
                embeddings = _document_embeddings(model, texts)
                target = torch.from_numpy(labels.astype(np.int64))
                loss = loss_fn(embeddings, target, miner(embeddings, target))
                optimizer.zero_grad(set_to_none=True)
                if loss.requires_grad:  # no mined pair: nothing to learn from this batch
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                scheduler.step()
                total_loss += float(loss.detach())
                steps += 1
                _advance(advance, f"loss {total_loss / steps:.4f}")
        candidate = out / "epoch.onnx"
        export_onnx(model, candidate)
        ari, threshold = _validate(candidate, val_texts, val_clusters, threads)
        record = EpochRecord(
            epoch=epoch, train_loss=round(total_loss / max(steps, 1), 6),
            validation_ari=round(ari, 6), threshold=threshold,
            seconds=round(time.time() - t0, 1), cpu_seconds=round(cpu_seconds() - c0, 1),
        )  # fmt: skip
        if log.add(record) and ari > baseline["ari"]:
            os.replace(candidate, out / _MODEL)
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            candidate.unlink()
        save_checkpoint(out / _CHECKPOINT, {
            "config": config, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "rng": rng_states(), "log": log.to_dict(),
            "baseline": baseline, "best_state": best_state, "epoch": epoch,
        })  # fmt: skip
        write_log(False)

    stopped = epoch < epochs
    data = write_log(stopped)
    return {
        "model": str(out / _MODEL),
        "log": str(out / _LOG),
        "best_epoch": data["best_epoch"],
        "best_validation_ari": data["best_validation_ari"],
        "best_threshold": data["best_threshold"],
        "baseline_validation_ari": baseline["ari"],
        "baseline_threshold": baseline["threshold"],
        "epochs_run": len(log.epochs),
        "stopped_early": stopped,
        "cpu_seconds": data["cpu_seconds"],
        "wall_seconds": data["wall_seconds"],
        "validation_docs": len(keep),
    }


def _native_bf16() -> bool:
    """True when oneDNN runs bfloat16 natively on this CPU (AVX512-BF16 or AMX)."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def _atomic(path: Path) -> Any:
    from neardup.io.writers import atomic_path

    return atomic_path(path)

