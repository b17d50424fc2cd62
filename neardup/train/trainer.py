"""One trainer for every neural model kind, on ``transformers.Trainer``.

A model kind (bi-encoder, cross-encoder, RETSim) plugs in as a :class:`TrainingTask`:

* ``model``: a ``torch.nn.Module`` (a SentenceTransformer, a transformers
  sequence classifier, :class:`neardup.train.retsim_torch.RETSimTorch`);
* ``loss``: ``loss(model, inputs) -> tensor``, the forward pass and one of the losses of
  :mod:`neardup.train.losses` on a collated batch;
* ``collate``: a batch of positions (documents or pairs) -> the tensors ``loss`` reads;
* ``batches``: ``batches(epoch)`` -> the positions of each step of that epoch, seeded by
  the epoch alone, so that a resumed epoch sees the same batches (the kinds build
  cluster batches with hard negatives, which a plain sampler cannot);
* ``evaluator``: an :class:`AriEvaluator`, the model's best validation ARI over a
  threshold sweep (connected components of the validation documents, ARI from
  scikit-learn; :mod:`neardup.train.validate`).

:func:`fit` runs it with the transformers utilities rather than a hand-written loop:
``TrainingArguments`` (AdamW, linear or cosine learning-rate schedule with warm-up,
gradient clipping, the seed), the ARI evaluator after every epoch as the metric for the
best model, ``EarlyStoppingCallback`` (``patience`` epochs without a better ARI),
checkpoints in ``output_dir/checkpoints`` (model, optimizer, scheduler, RNG states,
trainer state) at every epoch end and every ``save_seconds`` / ``save_steps``, and the
best checkpoint loaded at the end. Re-running the same call resumes from the last
checkpoint (mid-epoch included); a finished run is not trained again. ``run.json`` in
``output_dir`` records the settings (a run with other settings is refused), the
baseline score and the epoch log.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import (
    EarlyStoppingCallback,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.trainer_utils import get_last_checkpoint

from neardup.graph import Pairs
from neardup.io.writers import atomic_path
from neardup.progress import progress_bar
from neardup.train.loop import EpochRecord, TrainingLog, cpu_seconds
from neardup.train.validate import (
    DEFAULT_THRESHOLDS,
    ValidationScore,
    embedding_ari,
    pairs_ari,
)

__all__ = ["AriEvaluator", "FitResult", "TrainSettings", "TrainingTask", "fit", "torch_threads"]

_RUN = "run.json"
_CHECKPOINTS = "checkpoints"
#: Batches of the loss check: enough to see the loss fall, cheap next to training.
_LOSS_CHECK_BATCHES = 4


class AriEvaluator:
    """Validation ARI of a model: the best over a threshold sweep.

    Give ``embed`` (model -> unit-norm embeddings of the validation documents; cosine
    thresholds) or ``pairs`` and ``score_pairs`` (model -> a probability per candidate
    pair of the validation documents). The model is put in eval mode, without
    gradients, and back in its former mode afterwards.
    """

    def __init__(
        self,
        clusters: np.ndarray,
        *,
        embed: Callable[[Any], np.ndarray] | None = None,
        pairs: Pairs | None = None,
        score_pairs: Callable[[Any], np.ndarray] | None = None,
        thresholds: tuple[float, ...] | list[float] = DEFAULT_THRESHOLDS,
    ) -> None:
        if (embed is None) == (score_pairs is None) or (score_pairs is not None and pairs is None):
            raise ValueError("AriEvaluator: give either 'embed', or 'pairs' and 'score_pairs'.")
        self.clusters = np.asarray(clusters)
        self.embed, self.pairs, self.score_pairs = embed, pairs, score_pairs
        self.thresholds = thresholds

    def __call__(self, model: Any) -> ValidationScore:
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                if self.embed is not None:
                    return embedding_ari(self.embed(model), self.clusters,
                                         thresholds=self.thresholds)
                scores = np.asarray(self.score_pairs(model), np.float32)
                pairs = Pairs(self.pairs.left, self.pairs.right, scores)
                return pairs_ari(pairs, self.clusters, thresholds=self.thresholds)
        finally:
            model.train(was_training)


@dataclass
class TrainingTask:
    """What a model kind supplies to :func:`fit` (see the module docstring)."""

    model: torch.nn.Module
    loss: Callable[[torch.nn.Module, dict[str, Any]], torch.Tensor]
    collate: Callable[[list[int]], dict[str, Any]]
    batches: Callable[[int], list[np.ndarray]]
    evaluator: AriEvaluator


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation settings shared by every kind.

    ``warmup`` is the share of all steps with a linear warm-up; the learning rate then
    decays to 0 at the last step, linearly (``schedule="linear"``) or along a cosine.
    AdamW's ``weight_decay`` spares biases and normalisation weights (transformers'
    rule). ``max_grad_norm`` 0 turns clipping off. ``save_seconds`` / ``save_steps``
    add mid-epoch checkpoints. ``baseline`` scores the model before training too.
    """

    epochs: int
    lr: float
    seed: int
    patience: int
    warmup: float = 0.1
    schedule: str = "linear"
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    save_seconds: float | None = 600.0
    save_steps: int | None = None
    baseline: bool = False
    progress: bool | None = None


@dataclass
class FitResult:
    """``model``: the best epoch's model (None when the run had finished before: it is
    already saved); ``log``: the epoch log; ``baseline``: the score before training;
    ``loss_check``: the mean loss of the first batches of epoch 1 under the ``base``
    model and the ``best`` one (eval mode, no dropout): did training lower the loss?"""

    model: torch.nn.Module | None
    log: TrainingLog
    baseline: dict[str, float] | None
    steps_per_epoch: int
    finished_before: bool = False
    stopped_early: bool = False
    loss_check: dict[str, float] | None = None


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Torch intra-op threads set to ``threads`` inside, restored afterwards."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit(
    build: Callable[[], TrainingTask],
    settings: TrainSettings,
    *,
    output_dir: str | os.PathLike,
    config: dict[str, Any],
    caller: str,
    resumable: frozenset[str] = frozenset(),
) -> FitResult:
    """Train the task ``build()`` returns; see the module docstring.

    ``build`` runs after seeding, so that a model's fresh weights (a new classification
    head) and every draw of the data repeat with the seed. ``config`` describes the run
    (settings and data); a run in ``output_dir`` with another config is refused, except
    for the keys in ``resumable``.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    run_path = out / _RUN
    run = json.loads(run_path.read_text()) if run_path.is_file() else None
    if run is not None:
        saved = run["config"]
        changed = sorted(k for k in set(saved) | set(config)
                         if k not in resumable and saved.get(k) != config.get(k))
        if changed:
            raise ValueError(
                f"{caller}: parameter 'output_dir' holds a checkpoint of a run with other "
                f"settings ({', '.join(f'{k}: {saved.get(k)!r} -> {config.get(k)!r}' for k in changed)}); "
                f"got {str(out)!r}. Use another output_dir, or delete it to start over."
            )
        if run.get("finished") and saved.get("epochs") == config.get("epochs"):
            log = TrainingLog.from_dict(run["log"])
            return FitResult(None, log, run.get("baseline"), run["steps_per_epoch"],
                             finished_before=True, stopped_early=run.get("stopped_early", False),
                             loss_check=run.get("loss_check"))

    set_seed(settings.seed)  # python, numpy, torch: model init and data draws repeat
    task = build()
    # Every epoch must have the same number of steps: the trainer finds its place in a
    # resumed epoch by counting steps.
    steps = min(len(task.batches(e)) for e in range(settings.epochs))
    if steps == 0:
        raise ValueError(f"{caller}: parameter 'train_corpus' yields no training batch.")
    checkpoints = out / _CHECKPOINTS
    last = get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    if run is None or last is None:
        run = {"config": config, "resumed_at": [], "baseline": None, "steps_per_epoch": steps}
    else:  # an interrupted run, or a finished one given more epochs
        done = json.loads((Path(last) / "trainer_state.json").read_text())["global_step"]
        run["resumed_at"].append(done // steps + 1)  # the (1-based) epoch resumed in
    run.update(config=config, finished=False, steps_per_epoch=steps)
    check_batches = task.batches(0)[:_LOSS_CHECK_BATCHES]
    if run.get("loss_check") is None:
        run["loss_check"] = {"batches": len(check_batches),
                             "base": _mean_loss(task, task.model, check_batches)}
    if settings.baseline and run.get("baseline") is None:
        wall, cpu = time.time(), cpu_seconds()
        score = task.evaluator(task.model)
        run["baseline"] = {"ari": round(float(score.ari), 6), "threshold": float(score.threshold),
                           "seconds": round(time.time() - wall, 1),
                           "cpu_seconds": round(cpu_seconds() - cpu, 1)}
    _write(run_path, run)

    args = TrainingArguments(
        output_dir=str(checkpoints),
        num_train_epochs=settings.epochs,
        learning_rate=settings.lr,
        lr_scheduler_type=settings.schedule,
        warmup_steps=float(settings.warmup),  # below 1: a share of all steps
        weight_decay=settings.weight_decay,
        max_grad_norm=settings.max_grad_norm,
        seed=settings.seed,
        eval_strategy="epoch",
        save_strategy="epoch",
        logging_strategy="steps",
        logging_steps=1,  # every step's loss, so a resumed epoch's mean loss is exact
        load_best_model_at_end=True,
        metric_for_best_model="ari",
        greater_is_better=True,
        save_total_limit=1,  # the best checkpoint is kept besides the last
        restore_callback_states_from_checkpoint=True,  # early stopping's counter
        report_to="none",
        disable_tqdm=True,
        dataloader_pin_memory=False,
        remove_unused_columns=False,
        per_device_train_batch_size=1,  # unused: the task's batches are the batches
    )
    sampler = _EpochBatches(task.batches, steps)
    callbacks: list[TrainerCallback] = [EarlyStoppingCallback(settings.patience),
                                        _Progress(settings.progress)]
    if settings.save_seconds is not None or settings.save_steps is not None:
        callbacks.append(_SaveEvery(settings.save_seconds, settings.save_steps))
    trainer = _TaskTrainer(task, sampler, model=task.model, args=args,
                           train_dataset=_Positions(), callbacks=callbacks)
    for quiet in (PrinterCallback, ProgressCallback):  # _Progress draws neardup's bar
        trainer.remove_callback(quiet)
    trainer.train(resume_from_checkpoint=last)

    log = _epoch_log(trainer.state.log_history, steps, run)
    stopped = len(log.epochs) < settings.epochs
    run["loss_check"]["best"] = _mean_loss(task, trainer.model, check_batches)
    run.update(finished=True, stopped_early=stopped, log=log.to_dict())
    _write(run_path, run)
    return FitResult(trainer.model, log, run.get("baseline"), steps, stopped_early=stopped,
                     loss_check=run["loss_check"])


def _mean_loss(task: TrainingTask, model: torch.nn.Module, batches: list[np.ndarray]) -> float:
    """Mean loss of ``model`` over ``batches``, without dropout or gradients."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            values = [float(task.loss(model, _to(task.collate(np.asarray(b).tolist()), device)))
                      for b in batches]
    finally:
        model.train(was_training)
    return round(float(np.mean(values)), 6) if values else float("nan")


def _to(inputs: Any, device: torch.device) -> Any:
    if isinstance(inputs, dict):
        return {k: _to(v, device) for k, v in inputs.items()}
    return inputs.to(device) if isinstance(inputs, torch.Tensor) else inputs


def _write(path: Path, data: dict[str, Any]) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def _epoch_log(history: list[dict[str, Any]], steps: int, run: dict[str, Any]) -> TrainingLog:
    """The epoch log from the trainer's log history (restored from checkpoints, so it
    covers the steps of earlier, interrupted calls too)."""
    losses: dict[int, list[float]] = {}
    for entry in history:
        if "loss" in entry and "step" in entry:
            losses.setdefault((int(entry["step"]) - 1) // steps + 1, []).append(float(entry["loss"]))
    log = TrainingLog(config=run["config"], resumed_at=list(run["resumed_at"]))
    for entry in history:
        if "eval_ari" not in entry:
            continue
        epoch = round(float(entry["epoch"]))
        log.add(EpochRecord(
            epoch=epoch,
            train_loss=round(float(np.mean(losses.get(epoch, [np.nan]))), 6),
            validation_ari=round(float(entry["eval_ari"]), 6),
            threshold=float(entry["eval_threshold"]),
            seconds=round(float(entry["eval_epoch_seconds"]), 1),
            cpu_seconds=round(float(entry["eval_epoch_cpu_seconds"]), 1),
        ))
    return log


class _Positions(torch.utils.data.Dataset):
    """Item i is i: the batches are positions, the collator looks them up."""

    def __len__(self) -> int:  # never read: the batch sampler sets the length
        return 0

    def __getitem__(self, i: int) -> int:
        return int(i)


class _EpochBatches(torch.utils.data.Sampler):
    """The task's batches of the epoch the trainer sets (``set_epoch``), ``steps`` of them."""

    def __init__(self, batches: Callable[[int], list[np.ndarray]], steps: int) -> None:
        self.batches, self.steps, self.epoch = batches, steps, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.batches(self.epoch)[: self.steps]:
            yield np.asarray(batch).tolist()

    def __len__(self) -> int:
        return self.steps


class _TaskTrainer(Trainer):
    """``transformers.Trainer`` with the task's batches, loss and ARI evaluator."""

    def __init__(self, task: TrainingTask, sampler: _EpochBatches, **kwargs: Any) -> None:
        self.task, self.sampler = task, sampler
        self._clock = (time.time(), cpu_seconds())
        # The trainer refuses per-epoch evaluation without an eval dataset; ours is the
        # evaluator's own validation subset, so any placeholder does.
        super().__init__(eval_dataset=_Positions(), **kwargs)

    def get_train_dataloader(self) -> torch.utils.data.DataLoader:
        loader = torch.utils.data.DataLoader(
            self.train_dataset, batch_sampler=self.sampler, collate_fn=self.task.collate)
        return self.accelerator.prepare(loader)

    def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                     num_items_in_batch: Any = None) -> Any:
        loss = self.task.loss(model, inputs)
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"the training loss became {float(loss)} at step {self.state.global_step + 1}; "
                "lower the learning rate.")
        return (loss, None) if return_outputs else loss

    def evaluate(self, eval_dataset: Any = None, ignore_keys: Any = None,
                 metric_key_prefix: str = "eval") -> dict[str, float]:
        score = self.task.evaluator(self.model)
        wall, cpu = self._clock
        metrics = {
            f"{metric_key_prefix}_ari": float(score.ari),
            f"{metric_key_prefix}_threshold": float(score.threshold),
            # This call's share of the epoch (training and validation).
            f"{metric_key_prefix}_epoch_seconds": time.time() - wall,
            f"{metric_key_prefix}_epoch_cpu_seconds": cpu_seconds() - cpu,
        }
        self._clock = (time.time(), cpu_seconds())
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control,
                                                         metrics)
        return metrics


class _SaveEvery(TrainerCallback):
    """Mid-epoch checkpoints every ``seconds`` and/or ``steps``, so an interrupted epoch
    loses at most that much work."""

    def __init__(self, seconds: float | None, steps: int | None) -> None:
        self.seconds, self.steps, self.last = seconds, steps, time.time()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if ((self.steps is not None and state.global_step % self.steps == 0)
                or (self.seconds is not None and time.time() - self.last >= self.seconds)):
            control.should_save = True

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last = time.time()


class _Progress(TrainerCallback):
    """neardup's progress bar over each epoch's steps, with the running loss."""

    def __init__(self, enabled: bool | None) -> None:
        self.enabled, self.stack, self.advance = enabled, None, None
        self.loss_sum, self.n = 0.0, 0

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.stack = ExitStack()
        epoch = int(state.epoch or 0) + 1
        total = state.max_steps // max(1, int(args.num_train_epochs))
        self.advance = self.stack.enter_context(progress_bar(
            f"epoch {epoch}/{int(args.num_train_epochs)}", total=total, unit="steps",
            enabled=self.enabled))
        self.loss_sum, self.n = 0.0, 0

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if self.advance is not None and logs and "loss" in logs:
            self.loss_sum, self.n = self.loss_sum + float(logs["loss"]), self.n + 1
            self.advance(1, status=f"loss {self.loss_sum / self.n:.4f}")

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.stack is not None:
            self.stack.close()
        self.stack = self.advance = None
