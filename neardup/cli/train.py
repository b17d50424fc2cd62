"""``neardup train``: fine-tune de-duplication models on labeled clusters.

One subcommand per model kind (``retsim``, ``biencoder``, ``cross-encoder``,
``verifier``); each calls the matching function in :mod:`neardup.train` with the options
given, and writes the model, its checkpoints and ``training.json`` (the epoch log) to
``--out``. The three neural kinds share one trainer (:mod:`neardup.train.trainer`, on
transformers' ``Trainer``); re-running the same command resumes from the last checkpoint.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import click

from neardup.cli.options import apply_options
from neardup.errors import NeardupError

__all__ = ["train_command"]

#: Library wording -> the command line's, in the data loaders' messages.
_WORDS = (("load_training_corpus: ", "--train: "), ("refusing split='test'", "refusing test data"),
          ("Use another output_dir", "Use another --out"))
#: Files of a neardup training run or model: an existing --out holding none of them is
#: someone else's directory, and is refused (the trainer would write into it).
_RUN_MARKERS = ("run.json", "training.json", "model.json", "checkpoints")
# kind -> (module, function) of the trainer.
_TRAINERS = {
    "retsim": ("neardup.train.retsim_trainer", "train_retsim"),
    "biencoder": ("neardup.train.biencoder", "train_biencoder"),
    "cross-encoder": ("neardup.train.cross_encoder", "train_cross_encoder"),
    "verifier": ("neardup.train.verifier", "train_verifier"),
}


def _data_options(function):
    options = (
        click.option("--train", "train", multiple=True, type=click.Path(path_type=Path),
                     help="Labeled training data (repeatable; the format `neardup eval` reads: "
                          "text, cluster, optional split, date and negative_of fields). "
                          "Default: the standard benchmark's train split "
                          "(data/reuters-news/train.jsonl.gz, or $NEARDUP_BENCHMARK_DIR), "
                          "generated from the Reuters-21578 train days by `neardup augment`. "
                          "Test-split documents are refused."),
        click.option("--validation", "validation", multiple=True, type=click.Path(path_type=Path),
                     help="Labeled validation data, scored every epoch for early stopping "
                          "and model selection (its 'validation' split when it has splits). "
                          "Default: the standard benchmark's validation split."),
        click.option("--out", "output_dir", required=True, type=click.Path(path_type=Path),
                     help="Directory for the model and training.json; the neural kinds also "
                          "keep run.json and checkpoints/ (model, optimizer, scheduler and RNG "
                          "states) there. Re-running the same command resumes from the last "
                          "checkpoint; a finished run is not trained again; a run with other "
                          "settings is refused."),
        click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Seeds data sampling, augmentation, dropout and initialisation: the "
                          "same seed on the same machine gives the same weights."),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="CPU threads for the model (default: the library's choice)."),
        click.option("--quiet", is_flag=True, help="No progress bar and no summary."),
    )
    return apply_options(options, function)


def _model_options(function):
    """Options of the neural trainers (not the verifier, which is not trained in epochs)."""
    options = (
        click.option("--epochs", type=click.IntRange(min=1), default=None,
                     help="Maximum epochs (default: the trainer's)."),
        click.option("--patience", type=click.IntRange(min=1), default=None,
                     help="Stop after this many epochs without a better validation ARI "
                          "(early stopping; the best epoch's model is kept)."),
        click.option("--batch-size", "batch_size", type=click.IntRange(min=2), default=None,
                     help="Examples per optimizer step (default: the trainer's)."),
        click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Peak AdamW learning rate, reached after the warm-up and decayed to "
                          "0 at the last step: linearly (biencoder, cross-encoder) or along a "
                          "cosine (retsim) (default: the trainer's)."),
    )
    return apply_options(options, function)


def _transformer_options(function):
    options = (
        click.option("--base", default=None,
                     help="Base model: a shipped name (default all-MiniLM-L6-v2) or a local "
                          "sentence-transformers / transformers directory."),
        click.option("--max-tokens", "max_tokens", type=click.IntRange(min=8), default=None,
                     help="Tokens kept per text (default: the trainer's)."),
        click.option("--max-pairs", "max_pairs", type=click.IntRange(min=1), default=None,
                     help="Training pairs per epoch at most (CPU time grows with it)."),
        click.option("--warmup", type=click.FloatRange(0, 1), default=None,
                     help="Share of the steps with a linear learning-rate warm-up."),
    )
    return apply_options(options, function)


def _load_validation(paths: tuple[Path, ...]):
    from neardup.eval.labeled import load_labeled
    from neardup.train.data import default_benchmark_dir

    if not paths:
        root = default_benchmark_dir()
        if root is None or not (root / "validation.jsonl.gz").is_file():
            raise click.UsageError(
                "No --validation given and the standard benchmark's validation split was not "
                "found (data/reuters-news/validation.jsonl.gz or $NEARDUP_BENCHMARK_DIR)."
            )
        paths = (root / "validation.jsonl.gz",)
    corpus = load_labeled([str(p) for p in paths])
    if corpus.splits is not None:
        if "test" in set(corpus.splits.tolist()) and "validation" not in set(corpus.splits.tolist()):
            raise click.UsageError("--validation holds test-split documents only; give validation data.")
        if "validation" in set(corpus.splits.tolist()):
            corpus = corpus.select_split("validation")
    return corpus


def _check_options_apply(kind: str, trainer, opts: dict[str, Any]) -> None:
    """A usage error for an option given that this trainer does not take (it would be
    silently ignored), e.g. --epochs for the verifier, which is not trained in epochs."""
    accepted = inspect.signature(trainer).parameters
    context = click.get_current_context(silent=True)
    for name, value in opts.items():
        if value is None or name in accepted:
            continue
        flag = "--" + name.replace("_", "-")
        if context is not None:
            flag = next((p.opts[0] for p in context.command.params if p.name == name), flag)
        raise click.UsageError(f"{flag} does not apply to `neardup train {kind}` (it would be "
                               "ignored); drop it.")


def _check_paths(train: list[str] | None, validation: tuple[Path, ...], out: Path) -> None:
    """Before any work: every input exists, and --out is a directory that can be written
    and holds no input (the trainer writes its files there, and may replace them)."""
    from neardup.cli._checks import check_directory_output
    from neardup.errors import InputError
    from neardup.train.data import default_benchmark_dir

    inputs: list[Path] = []
    for flag, given_paths in (("--train", train or ()), ("--validation", validation)):
        for path in map(Path, given_paths):
            if not path.exists():
                raise InputError(f"{flag} {path}: no such file.")
            inputs.append(path)
    root = default_benchmark_dir()
    if root is not None:  # the default data, when --train or --validation is left out
        if not train:
            inputs.append(root / "train.jsonl.gz")
        if not validation:
            inputs.append(root / "validation.jsonl.gz")
    check_directory_output("--out", out, inputs)
    if out.is_dir() and any(out.iterdir()) and not any((out / m).exists() for m in _RUN_MARKERS):
        from neardup.errors import OutputError

        raise OutputError(
            f"--out: {str(out)!r} holds files that are not a neardup training run or model "
            "(no run.json, training.json or model.json); the trainer would write among them. "
            "Choose a new or empty directory (nothing in it was changed)."
        )


def _run(kind: str, opts: dict[str, Any]) -> None:
    from rich.console import Console

    from neardup.train.data import load_training_corpus

    module_name, function_name = _TRAINERS[kind]
    try:
        trainer = getattr(importlib.import_module(module_name), function_name)
    except ImportError as exc:
        raise click.ClickException(
            f"`neardup train {kind}` needs optional dependencies: {exc}. Install them with: "
            "pip install 'neardup[neural,train]'"
        ) from exc
    from neardup.cli._checks import command_errors

    quiet = opts.pop("quiet")
    train_paths = [str(p) for p in opts.pop("train")] or None
    validation_paths = opts.pop("validation")
    _check_options_apply(kind, trainer, opts)
    with command_errors():
        _check_paths(train_paths, validation_paths, opts["output_dir"])
    try:
        train_corpus, negative_of = load_training_corpus(train_paths)
        validation = _load_validation(validation_paths)
        for flag, corpus in (("--train", train_corpus), ("--validation", validation)):
            if not len(corpus.ids):
                raise click.ClickException(f"{flag}: the data holds no document to train on; "
                                           "give labeled files (id, text, cluster).")
        accepted = inspect.signature(trainer).parameters
        kwargs = {k: v for k, v in opts.items() if v is not None and k in accepted}
        if "negative_of" in accepted:
            kwargs["negative_of"] = negative_of
        if "progress" in accepted:
            kwargs["progress"] = False if quiet else None
        report = trainer(train_corpus, validation, **kwargs)
    except ImportError as exc:  # trainers import torch, transformers, accelerate when called
        raise click.ClickException(
            f"`neardup train {kind}` needs optional dependencies: {exc}. Install them with: "
            "pip install 'neardup[neural,train]'"
        ) from exc
    except (NeardupError, ValueError, OSError) as exc:
        from neardup.cli._checks import message

        where = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
        raise click.ClickException(
            where + message(exc, {"output_dir": "--out"}, words=_WORDS)) from exc
    if quiet:
        return
    console = Console(stderr=True)
    summary = {k: report.get(k) for k in ("best_epoch", "best_validation_ari", "best_threshold",
                                          "cpu_seconds") if k in report}
    console.print(f"[bold]{kind}[/bold] model written to {opts['output_dir']}")
    console.print(json.dumps(summary, indent=2, default=str))


@click.group("train")
def train_command() -> None:
    """Fine-tune a de-duplication model on labeled clusters (CPU or GPU).

    Each subcommand writes the model to --out with training.json (loss, validation ARI
    and threshold per epoch, CPU time) and resumable checkpoints. retsim, biencoder and
    cross-encoder run on one trainer (transformers' Trainer): AdamW with a warm-up, the
    validation ARI after every epoch, the best epoch kept, early stopping after
    --patience epochs without a better ARI. The validation split is used for early
    stopping and model selection only; the test split never enters training. Use the
    result with `neardup dedup --method M --model DIR`.

    \b
    Examples:
      neardup train retsim --out models/retsim-news
      neardup train biencoder --loss mnrl --epochs 3 --out models/biencoder-news
      neardup train cross-encoder --out models/cross-encoder-news
      neardup train verifier --out models/verifier-news
    """


@train_command.command("retsim")
@_data_options
@_model_options
@click.option("--per-cluster", "per_cluster", type=click.IntRange(min=2), default=None,
              help="Documents drawn from each cluster into a batch (multi-similarity loss "
                   "needs positives in every batch).")
@click.option("--no-augment", "augment", flag_value=False, default=None,
              help="Do not add noisy copies (OCR errors, typos, abridgement) of training "
                   "texts as extra positives.")
def retsim_train_command(**opts: Any) -> None:
    """RETSim (536k parameters) fine-tuned with multi-similarity loss (alpha 4, beta 40,
    base 0.5; Zhang et al. 2023), exported to ONNX for `--method retsim --model DIR`."""
    _run("retsim", opts)


@train_command.command("biencoder")
@_data_options
@_model_options
@_transformer_options
@click.option("--loss", type=click.Choice(["online-contrastive", "mnrl", "supcon"]), default=None,
              help="online-contrastive: cosine distance, margin 0.2 (Silcock et al.'s best; the "
                   "default); mnrl: multiple-negatives ranking; supcon: supervised contrastive "
                   "(pytorch-metric-learning's SupConLoss, temperature 0.1).")
@click.option("--margin", type=click.FloatRange(0, 2), default=None,
              help="Online contrastive margin (default 0.2).")
@click.option("--no-hard-negatives", "hard_negatives", flag_value=False, default=None,
              help="mnrl/supcon: only random in-batch negatives (by default each batch also "
                   "holds documents of its clusters' hard negatives: negative_of links and "
                   "mined lexical neighbours).")
def biencoder_train_command(**opts: Any) -> None:
    """Sentence-transformers bi-encoder fine-tuned contrastively for de-duplication."""
    _run("biencoder", opts)


@train_command.command("cross-encoder")
@_data_options
@_model_options
@_transformer_options
@click.option("--candidate-share", "candidate_share", type=click.FloatRange(0, 1), default=None,
              help="Share of the training pairs taken from a RETSim candidate search on the "
                   "training data, so the model learns the pairs it will re-score (default 0.5).")
@click.option("--linked-share", "linked_share", type=click.FloatRange(0, 1), default=None,
              help="Share of the training pairs taken from the data's hard-negative links "
                   "(negative_of: templates, updates, same-topic stories, shared quotes), "
                   "each paired with a document of the cluster it is a hard negative of "
                   "(default 0; candidate share + linked share <= 1).")
@click.option("--linked-anchor", "linked_anchor", flag_value=True, default=None,
              help="Spend half the linked share on positives: each linked document with "
                   "another copy of its own story, so the same wording is seen as a "
                   "duplicate and as a non-duplicate.")
def cross_encoder_train_command(**opts: Any) -> None:
    """Cross-encoder pair classifier for `--method rerank` (positive and hard-negative
    pairs, binary cross-entropy)."""
    _run("cross-encoder", opts)


@train_command.command("verifier")
@_data_options
@click.option("--classifier", type=click.Choice(["hgb", "logistic"]), default=None,
              help="hgb: histogram gradient boosting (default); logistic: logistic regression.")
@click.option("--candidates", type=click.Choice(["retsim", "minhash", "biencoder"]), default=None,
              help="Fast method whose candidate pairs on the training data join the training "
                   "pairs, so the verifier learns the pairs it will re-score (default retsim).")
def verifier_train_command(**opts: Any) -> None:
    """Light verifier for `--method rerank`: a scikit-learn classifier over pair features
    (word/char n-gram Jaccard and containment, RETSim cosines, length ratio, alignment
    score, date difference)."""
    _run("verifier", opts)
