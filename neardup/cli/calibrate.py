"""``neardup calibrate``: fit a method's threshold to a few dozen pairs you label.

Scores candidate pairs of INPUT with a low threshold, shows pairs whose scores spread
over the uncertain region one at a time with an aligned word diff, asks y/n/skip, and
fits the threshold to the answers (or to ``--labels FILE``). Writes a tuning file for
``neardup eval --from-tuning`` and the labels for a later run.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import click
import numpy as np

from neardup.cli.options import (
    named_method_options,
    method_params_from_options,
    profile_from_inputs,
    reader_config_from_options,
    reader_options,
)
from neardup.errors import InputError, NeardupError

__all__ = ["calibrate_command"]

_YES = {"y", "yes", "1", "true", "dup", "duplicate"}
_NO = {"n", "no", "0", "false", "not", "different"}
_SHOWN_CHARS = 1200
#: --save-labels formats: those --labels reads.
_LABEL_KINDS = ("csv", "tsv", "jsonl")
#: neardup.eval.calibrate.MIN_GAIN, not imported here: neardup.eval is slow to import and
#: --help should not wait for it (a test checks they agree).
_MIN_GAIN = 0.1


def read_label_file(path: Path) -> list[tuple[str, str, bool]]:
    """(id_a, id_b, label) rows of a .csv/.tsv (header id_a,id_b,label) or .jsonl file."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--labels {where}: cannot read the labels file "
                         f"({exc.strerror or exc}).") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"--labels {where}: byte {exc.start} is not UTF-8; save the labels "
                         "file as UTF-8.") from None
    if path.suffix == ".jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except (ValueError, RecursionError):
                    raise InputError(f"--labels {where}: line {n} is not JSON (or is nested "
                                     "too deeply).") from None
    else:
        rows = list(csv.DictReader(text.splitlines(), delimiter="\t" if path.suffix == ".tsv" else ","))
    out = []
    for n, row in enumerate(rows, 1):
        try:
            a, b, raw = str(row["id_a"]), str(row["id_b"]), str(row["label"]).strip().casefold()
        except (KeyError, TypeError):
            raise InputError(
                f"{where}: row {n} must have the fields id_a, id_b and label; got {row!r:.80}."
            ) from None
        if raw not in _YES | _NO:
            raise InputError(
                f"{where}: row {n}: label must be y/n (or 1/0, true/false); got {raw!r}."
            )
        out.append((a, b, raw in _YES))
    return out


def _show_pair(console, k: int, n: int, score: float, ids: tuple[str, str],
               texts: tuple[str, str]) -> None:
    from rich.text import Text

    from neardup.report.align import align_words

    a, b = (t[:_SHOWN_CHARS] for t in texts)
    console.rule(f"pair {k}/{n}  score {score:.3f}")
    console.print(f"[bold]A[/bold] {ids[0]}   [bold]B[/bold] {ids[1]}")
    diff = Text()
    for op, text_a, text_b in align_words(a, b):
        if op == "equal":
            diff.append(text_a)
        else:
            if text_a:
                diff.append(f"[-{text_a.rstrip()}-]", style="red")
                diff.append(" ")
            if text_b:
                diff.append(f"{{+{text_b.rstrip()}+}}", style="green")
                diff.append(" ")
    console.print(diff)
    if max(len(t) for t in texts) > _SHOWN_CHARS:
        console.print(f"[dim](first {_SHOWN_CHARS} characters shown)[/dim]")


@click.command("calibrate")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@named_method_options
@reader_options
@click.option("--labels", "labels_path", type=click.Path(path_type=Path), default=None,
              help="Labelled pairs to fit to instead of asking (.csv/.tsv with columns id_a, "
                   "id_b, label, or .jsonl; label y/n, 1/0 or true/false).")
@click.option("--n-pairs", type=click.IntRange(4, 1000), default=40, show_default=True,
              help="How many pairs to ask about (drawn evenly over the score ranks of the "
                   "uncertain region); not with --labels.")
@click.option("--min-precision", type=click.FloatRange(0, 1), default=None,
              help="Fit the threshold with the highest recall at this precision (among the "
                   "labelled pairs) instead of the best F1.")
@click.option("--min-gain", type=click.FloatRange(0, 1), default=_MIN_GAIN, show_default=True,
              help="Keep the method's default threshold unless a fitted one beats its F1 "
                   "among your labels by more than this (0: always take the best fit). "
                   "Not with --min-precision.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("calibration.json"),
              show_default=True,
              help="Tuning file to write (.json, for neardup eval --from-tuning). Outputs are "
                   "checked before any work and written as a set.")
@click.option("--save-labels", type=click.Path(path_type=Path), default=None,
              help="Also write the labels given here (.csv, .tsv or .jsonl) for a later --labels "
                   "run; saved even when the fit then fails.")
@click.option("--fit-verifier", "fit_verifier", type=click.Path(path_type=Path), default=None,
              metavar="DIR",
              help="With --method rerank: also correct the verifier to your labels (a linear "
                   "model of its log-odds and the pair features, pulled towards no change) "
                   "and write it to the new folder DIR; the threshold is fitted to "
                   "probabilities of corrections that did not see each label. Use it with "
                   "--model DIR. Measured no better than the threshold alone on held-out "
                   "sets (README).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seeds the method and the choice of pairs.")
def calibrate_command(inputs: tuple[Path, ...], **opts: Any) -> None:
    """Fit a method's threshold to pairs of INPUT that you label (y/n/skip).

    Candidate pairs are scored with a low threshold; about --n-pairs of them, spread
    over the scores where the decision is made, are shown one at a time with a word
    diff ([-only in A-] {+only in B+}). Answer y (duplicates), n (not), s (skip) or q
    (stop and fit). The threshold that best separates your answers (best F1) is written
    to a tuning file; the method's default is kept unless that F1 beats the default's
    by more than --min-gain. With --method rerank, --fit-verifier DIR also corrects the
    verifier itself to your answers.

    \b
    Examples:
      neardup calibrate corpus.jsonl --method minhash --save-labels labels.csv
      neardup calibrate corpus.jsonl --method ngram --labels labels.csv --out ngram.json
      neardup calibrate corpus.jsonl --method rerank --labels labels.csv --fit-verifier my-verifier
      neardup eval labeled.jsonl --from-tuning calibration.json
    """
    from rich.console import Console

    from neardup.cli._checks import command_errors, output_set

    from neardup.cli._checks import given

    if given("n_pairs") and opts["labels_path"] is not None:
        raise click.UsageError("--n-pairs sets how many pairs you label in the terminal; with "
                               "--labels it would be ignored. Drop one of them.")
    if given("min_gain") and opts["min_precision"] is not None:
        raise click.UsageError("--min-gain applies to the best-F1 fit; with --min-precision it "
                               "would be ignored. Drop one of them.")
    console = Console(stderr=True)
    method = opts["method"]
    with command_errors({"labels_path": "--labels"}):
        # Every output checked before any work: format from the extension, directory
        # writable, not an input (the corpus, --labels) nor another output.
        outputs = output_set(
            (*inputs, opts["labels_path"]),
            [("--out", opts["out"], ("json",)),
             ("--save-labels", opts["save_labels"], _LABEL_KINDS)])
        if opts["fit_verifier"] is not None:
            _check_verifier_folder(opts["fit_verifier"], outputs, inputs, opts)
        with outputs:
            fit, info = _calibrate(inputs, method, opts, console, outputs)
    threshold = info["threshold"]
    among = ("among the labelled pairs, out of fold" if opts["fit_verifier"] is not None
             else "among the labelled pairs")
    click.echo(
        f"threshold {threshold} (pair score >= {fit.score:.4f}) from {fit.n_labels} labels "
        f"({fit.n_positive} duplicates): precision {fit.precision:.3f}, recall "
        f"{fit.recall:.3f}, F1 {fit.f1:.3f} {among}"
    )
    if fit.kept_default:
        click.echo(f"kept the default threshold: no fitted one beat its F1 among your labels "
                   f"by more than {opts['min_gain']} (--min-gain)")
    model = f" --model {opts['fit_verifier']}" if opts["fit_verifier"] is not None else ""
    if model:
        click.echo(f"wrote the refitted verifier to {opts['fit_verifier']}")
    click.echo(f"wrote {opts['out']}; use it with: neardup eval LABELED --from-tuning {opts['out']}"
               f" or neardup dedup INPUT --method {method}{model} --threshold {threshold}")


def _calibrate(inputs, method: str, opts: dict[str, Any], console, outputs):
    from neardup.eval.calibrate import boundary_sample, candidate_params, threshold_to_score
    from neardup.io import read_corpus
    from neardup.methods import make_method
    from neardup.pipeline import ClusterConfig, run

    reader = reader_config_from_options(opts)
    choice = profile_from_inputs(opts, method, inputs, reader)
    if choice.chosen:
        console.print(f"[dim]{choice.describe()}[/dim]")
    params = method_params_from_options(method, {**opts, "profile": choice.name}, seed=opts["seed"])
    base_verifier = None
    if opts["fit_verifier"] is not None:
        base_verifier = _check_fit_verifier(method, params, opts["fit_verifier"])
    labelled = None
    if opts["labels_path"] is not None:  # read before the work: a bad file fails fast
        labelled = read_label_file(opts["labels_path"])
    wide = candidate_params(method, params)
    # Connected components: the scored pairs only are read here, not the clusters.
    result = run(read_corpus(list(inputs), reader), make_method(method, **wide),
                 cluster=ClusterConfig(algorithm="components"), progress=False)
    ids = [str(i) for i in result.ids.tolist()]
    pairs = result.pairs
    score_of = {}
    for left, right, score in zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()):
        score_of[(ids[left], ids[right])] = score_of[(ids[right], ids[left])] = float(score)
    if labelled is not None:
        rows = labelled
        unknown = sorted({i for a, b, _ in rows for i in (a, b)} - set(ids))
        if unknown:
            raise InputError(
                f"{opts['labels_path']}: {len(unknown)} id(s) not in INPUT, e.g. "
                f"{unknown[0]!r}; check --id-field."
            )
    texts = dates = None
    if opts["labels_path"] is None or base_verifier is not None:
        texts, dates = _texts_and_dates(read_corpus(list(inputs), reader))
    if opts["labels_path"] is None:
        low = threshold_to_score(method, wide["threshold"])
        picks = boundary_sample(pairs, opts["n_pairs"], low=low, seed=opts["seed"])
        if not len(picks):
            raise InputError(
                f"no candidate pairs scored {low:.2f} or more by {method}: nothing to label. "
                "Try another method or a larger sample of the corpus."
            )
        rows = []
        for k, p in enumerate(picks.tolist(), 1):
            i, j = int(pairs.left[p]), int(pairs.right[p])
            _show_pair(console, k, len(picks), float(pairs.score[p]), (ids[i], ids[j]),
                       (texts[i], texts[j]))
            answer = click.prompt("Duplicates? (y/n/s/q)", type=click.Choice(["y", "n", "s", "q"]),
                                  show_choices=False, err=True)
            if answer == "q":
                break
            if answer != "s":
                rows.append((ids[i], ids[j], answer == "y"))
    if opts["save_labels"] is not None:
        outputs.write_records("--save-labels", ({"id_a": a, "id_b": b,
                                                 "label": "y" if label else "n"}
                                                for a, b, label in rows))
    if not rows:
        raise InputError("no pairs labelled: nothing to fit. Answer y or n for a few dozen "
                         "pairs, or pass --labels FILE.")
    try:
        return _fit_and_write(rows, method, params, ids, score_of, texts, dates,
                              base_verifier, opts, outputs)
    except (NeardupError, ValueError, OSError) as exc:
        if opts["labels_path"] is None and opts["save_labels"] is not None:
            _rescue_labels(inputs, opts, rows, exc)
        raise


def _rescue_labels(inputs, opts: dict[str, Any], rows, exc: BaseException) -> None:
    """The fit failed after the user answered: save their answers to --save-labels alone
    (its path was checked before the work), and say so in the error."""
    from neardup.cli._checks import output_set

    rescue = output_set((*inputs,), [("--save-labels", opts["save_labels"], _LABEL_KINDS)])
    try:
        with rescue:
            rescue.write_records("--save-labels", ({"id_a": a, "id_b": b,
                                                    "label": "y" if label else "n"}
                                                   for a, b, label in rows))
            rescue.commit()
    except (NeardupError, OSError):
        return
    note = (f" Your {len(rows)} labels were saved to {opts['save_labels']}: rerun with "
            f"--labels {opts['save_labels']}.")
    exc.args = (f"{exc.args[0] if exc.args else exc}{note}", *exc.args[1:])


def _fit_and_write(rows, method, params, ids, score_of, texts, dates, base_verifier, opts,
                   outputs):
    import neardup
    from neardup.eval.calibrate import fit_threshold, labels_hash, score_to_threshold, \
        threshold_to_score
    from neardup.eval.evaluate import build_method
    from neardup.eval.tuning import TuningResult
    from neardup.pipeline import ClusterConfig

    labels = [label for *_, label in rows]
    if base_verifier is not None:
        position = {doc: k for k, doc in enumerate(ids)}
        left = np.array([position[a] for a, _, _ in rows], np.int64)
        right = np.array([position[b] for _, b, _ in rows], np.int64)
        refit = _refit(base_verifier, texts, dates, left, right, labels, opts["seed"])
        scores = refit.out_of_fold
    else:
        # A pair the candidate run did not score is below the low threshold: score 0.
        scores = [score_of.get((a, b), 0.0) for a, b, _ in rows]
    default = threshold_to_score(method, build_method(method, params).get_params()["threshold"])
    fit = fit_threshold(scores, labels, min_precision=opts["min_precision"], default=default,
                        min_gain=opts["min_gain"])
    threshold = score_to_threshold(method, fit.score)
    if base_verifier is not None:
        params = {**params, "model": str(opts["fit_verifier"])}
    chosen = build_method(method, {**params, "threshold": threshold}).get_params()
    points = [{"values": {"threshold": score_to_threshold(method, p["score"])},
               "f1": p["f1"], "precision": p["precision"], "recall": p["recall"]}
              for p in fit.points]
    best = max(i for i, p in enumerate(fit.points) if p["score"] == fit.score)
    tuning = TuningResult(
        method=method, split=None, params=chosen, cluster=ClusterConfig().get_params(),
        grid={"threshold": [p["values"]["threshold"] for p in points]},
        base_params={k: v for k, v in chosen.items() if k != "threshold"},
        points=points, best_index=best, data_hash=labels_hash(rows), n_docs=len(ids),
        n_true_clusters=0, metric="f1", version=neardup.__version__,
    )
    from neardup.cli._checks import tuning_text

    outputs.write_text("--out", tuning_text(tuning))
    if base_verifier is not None:
        from neardup.train.verifier import CORRECTION_L2, save_refit

        save_refit(refit, base_verifier, opts["fit_verifier"], threshold=threshold,
                   n_labels=fit.n_labels, n_positive=fit.n_positive, l2=CORRECTION_L2)
    try:
        outputs.commit()
    except BaseException:
        if base_verifier is not None:  # the outputs appear together or not at all
            import shutil

            shutil.rmtree(opts["fit_verifier"], ignore_errors=True)
        raise
    return fit, {"threshold": threshold}



def _check_verifier_folder(folder: Path, outputs, inputs, opts: dict[str, Any]) -> None:
    """--fit-verifier DIR, before any work: a new or empty folder that holds no input and
    no other output, whose parent can be written."""
    from neardup.cli._checks import check_directory_output
    from neardup.errors import OutputError

    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise OutputError(f"--fit-verifier: {folder} exists and is not an empty folder; "
                          "choose a new folder (nothing is overwritten).")
    check_directory_output("--fit-verifier", folder, (*inputs, opts["labels_path"]))
    target = Path(os.path.realpath(folder))
    for flag in ("--out", "--save-labels"):
        path = opts[flag.lstrip("-").replace("-", "_")]
        if path is not None and target in Path(os.path.realpath(path)).parents:
            raise OutputError(f"{flag} {path} is inside --fit-verifier {folder}, which must be "
                              "a new folder holding the verifier only; write it elsewhere.")


def _check_fit_verifier(method: str, params: dict[str, Any], out: Path) -> Path:
    """The verifier folder to correct; refuses, before any work, what cannot be done."""
    from neardup.models import resolve_model

    if method != "rerank" or params.get("scorer", "verifier") != "verifier":
        raise InputError("--fit-verifier corrects rerank's verifier: use it with --method rerank "
                         "(and the default --param scorer=verifier).")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--fit-verifier: {out} exists and is not an empty folder; choose a "
                         "new folder (nothing is overwritten).")
    return resolve_model(params.get("model") or "verifier-news", "verifier")


def _texts_and_dates(batches) -> tuple[list[str], np.ndarray | None]:
    texts, dates = [], []
    for batch in batches:
        texts.extend(batch.texts)
        dates.append(batch.dates)
    if not dates or any(d is None for d in dates):
        return texts, None
    return texts, np.concatenate(dates)


def _refit(base: Path, texts, dates, left, right, labels, seed: int):
    """The verifier ``base`` corrected to the labelled pairs (``left[i]``, ``right[i]``)."""
    from neardup.methods.rerank import VerifierScorer
    from neardup.train.verifier import refit_verifier

    scorer = VerifierScorer(base)
    x = scorer.features_of(texts, left, right, dates)
    return refit_verifier(scorer.classifier, x, np.asarray(labels, bool),
                          features=scorer.features, seed=seed)
