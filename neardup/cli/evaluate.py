"""``neardup eval`` and ``neardup tune``: score a method on labeled data, tune its threshold.

The protocol (Silcock et al. 2022, section 3.2): ``tune`` sweeps the threshold on the
validation split only and writes the chosen parameters to a file; ``eval --split test
--from-tuning FILE`` reports on the test split with exactly those parameters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from click.core import ParameterSource

from neardup.cli import warnings_shown
from neardup.params import RENAMED
from neardup.method_choice import choose_method, planning_method
from neardup.profiles import choose_profile
from neardup.cli.options import (
    CLUSTER_OPTION_NAMES,
    DECODE_ERRORS_OPTION,
    METHOD_OPTION_NAMES,
    apply_options,
    check_option_rules,
    cluster_config_from_options,
    cluster_options,
    method_options,
    method_params_from_options,
    schema_option,
)

__all__ = ["eval_command", "tune_command"]

# Short grid names for the nested shingling config, matching the --ngram/--shingle flags.
_GRID_ALIASES = {"ngram": "shingle.n", "shingle": "shingle.unit"}
# The command-line option that sets a grid parameter, where its name differs.
_GRID_OPTION = {
    "shingle.n": "ngram_n",
    "shingle.unit": "shingle_unit",
}


def _labeled_options(function):
    """Options that say how to read the labeled data (shared by eval and tune)."""
    options = (
        click.argument("labeled", nargs=-1, required=True, type=click.Path(path_type=Path)),
        click.option("--pairs", "pairs_path", type=click.Path(path_type=Path), default=None,
                     help="Ground-truth duplicate pairs (columns id_a, id_b; .csv, .tsv, "
                          ".jsonl, .parquet, or a .json array of [id_a, id_b]). Clusters are "
                          "their connected components; documents in no pair are singletons. "
                          "Replaces --cluster-field."),
        click.option("--text-field", default="text", show_default=True,
                     help="Field holding the text."),
        click.option("--id-field", default="id", show_default=True,
                     help="Field holding the unique document id (the ids --pairs refers to)."),
        click.option("--cluster-field", default="cluster", show_default=True,
                     help="Field holding the ground-truth cluster label of each document."),
        click.option("--split-field", default="split", show_default=True,
                     help="Field holding each document's split (e.g. validation, test)."),
        click.option("--date-field", default=None,
                     help="Field holding a date (parsed; optional, not used for scoring)."),
        DECODE_ERRORS_OPTION,
    )
    return apply_options(options, function)


def _run_options(function):
    """Options at the end of both commands."""
    options = (
        click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Seeds hashing, permutations and community detection."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print machine-readable JSON to stdout instead of a table."),
        click.option("--progress/--no-progress", default=None,
                     help="Show progress bars (default: when stderr is a terminal)."),
        schema_option("quiet"),
    )
    return apply_options(options, function)


#: Library wording -> the command line's, in load_labeled's messages.
_CLI_WORDS = (
    ("set cluster_field / --cluster-field", "set --cluster-field"),
    ("(pairs_path= / --pairs)", "(--pairs)"),
    ("(split_field=..., --split-field)", "(--split-field)"),
    ("check id_field / --id-field", "check --id-field"),
    ("select_split: the corpus", "--split: the corpus"),
    ("load_labeled: ", ""),
)
#: Parameters these commands name by a flag of their own.
_CLI_FLAGS = {"name": "--split", "cluster_field": "--cluster-field",
              "split_field": "--split-field", "pairs_path": "--pairs"}


def _load(opts: dict[str, Any]):
    from neardup.cli._checks import given

    if opts["pairs_path"] is not None and given("cluster_field"):
        raise click.UsageError("--cluster-field does not apply with --pairs: the clusters are "
                               "the connected components of the pairs. Drop one of them.")
    corpus = _read_labeled(opts)
    if not len(corpus.ids):
        from neardup.errors import InputError

        files = ", ".join(str(p) for p in opts["labeled"])
        raise InputError(f"LABELED ({files}) holds no document: nothing to score. Give the "
                         "labeled files (id, text and cluster fields).")
    _check_named_fields(corpus, opts)
    return corpus


def _check_named_fields(corpus, opts: dict[str, Any]) -> None:
    """A field the user named that no record has is an error, not a silent default."""
    from neardup.cli._checks import given
    from neardup.errors import InputError

    files = ", ".join(str(p) for p in opts["labeled"])
    if given("split_field") and corpus.splits is None:
        raise InputError(
            f"--split-field {opts['split_field']!r}: no record of {files} has it, so the "
            "documents would have no split. Set --split-field to the field that holds each "
            "document's split, or leave it out."
        )
    if given("date_field") and corpus.dates is None and len(corpus.ids):
        raise InputError(
            f"--date-field {opts['date_field']!r}: no record of {files} has a date in it. Set "
            "--date-field to the field that holds the date, or leave it out."
        )


def _read_labeled(opts: dict[str, Any]):
    from neardup.eval.labeled import load_labeled

    return load_labeled(
        list(opts["labeled"]),
        pairs_path=opts["pairs_path"],
        text_field=opts["text_field"],
        id_field=opts["id_field"],
        cluster_field=opts["cluster_field"],
        split_field=opts["split_field"],
        # Labeled files carry dates in "date" (the evaluation kit's format) unless told.
        date_field=opts["date_field"] if opts["date_field"] is not None else "date",
        errors=opts["decode_errors"],
    )


def _explicit(ctx: click.Context, names) -> list[str]:
    """Flags among ``names`` the user gave (not left at their defaults)."""
    flags = []
    for name in names:
        source = ctx.get_parameter_source(name)
        if source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP):
            param = next(p for p in ctx.command.params if p.name == name)
            flags.append(param.opts[0])
    return flags


def _parse_ks(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(
            f"expected comma-separated integers such as 1,5,10; got {text!r}.", param_hint="--k"
        ) from None
    if not ks or min(ks) < 1:
        raise click.BadParameter(f"every k must be >= 1; got {text!r}.", param_hint="--k")
    return ks


def _fmt_param(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)


# --------------------------------------------------------------------------------- eval


@click.command("eval")
@_labeled_options
@method_options
@cluster_options
@click.option("--split", default=None,
              help="Evaluate on the documents of this split only (e.g. test). Default: all "
                   "documents.")
@click.option("--from-tuning", "from_tuning", type=click.Path(path_type=Path), default=None,
              help="Use the method, parameters and clustering chosen by `neardup tune` (its "
                   "--out file). --method may be omitted and must match if given; method and "
                   "clustering options cannot be combined with it.")
@click.option("--k", "ks", default=None, metavar="K[,K...]",
              help="Also report retrieval Recall@k (W4NT3D style) over the method's scored "
                   "pairs for these cut-offs, e.g. 1,5,10: the share of documents with a true "
                   "duplicate that have one among their k best-scored candidates.")
@click.option("--group-field", default=None, metavar="FIELD",
              help="Also score each group of documents on its own (e.g. --group-field lang: "
                   "ARI per language): the same run's clusters restricted to the documents "
                   "whose FIELD has one value.")
@_run_options
@click.pass_context
def eval_command(ctx: click.Context, **opts: Any) -> None:
    """Run a method on LABELED data and score its clusters against the ground truth.

    LABELED: JSONL, Parquet or CSV/TSV records with id, text and cluster (the
    ground-truth label) fields, an optional split field; or any corpus plus --pairs, a
    list of ground-truth duplicate pairs. Several files may be given.

    Prints the Adjusted Rand Index (the primary metric), pairwise precision, recall and
    F1, MCC, homogeneity, completeness and V-measure, predicted vs true clusters and the
    time taken.

    \b
    Examples:
      neardup eval labeled.jsonl --method minhash --threshold 0.5 --split validation
      neardup eval labeled.jsonl --split test --from-tuning tuning.json --json
      neardup eval articles.jsonl --pairs gt_edges.csv --method ngram --k 1,5,10
    """
    from rich.console import Console

    from neardup.cli._checks import command_errors

    err = Console(stderr=True, quiet=opts["quiet"])
    ks = _parse_ks(opts["ks"])
    tuning = None
    with warnings_shown(opts["quiet"]), command_errors(_CLI_FLAGS, words=_CLI_WORDS):
        if opts["from_tuning"] is not None:
            from neardup.eval.tuning import load_tuning

            tuning = load_tuning(opts["from_tuning"])
            method = _tuned_method(ctx, opts, tuning)
            params: dict[str, Any] = tuning.params
            cluster: Any = tuning.cluster
        else:
            method = opts["method"]
            # The options checked before the corpus is read; built below, once the
            # method and the profile are known.
            check_option_rules(opts)  # a method parameter with --method auto
            method_params_from_options(planning_method(method), {**opts, "profile": "clean"},
                                       seed=opts["seed"])
            cluster = cluster_config_from_options(opts, seed=opts["seed"])
        corpus = _load(opts)
        groups = None if opts["group_field"] is None else _read_groups(corpus, opts)
        data = corpus if opts["split"] is None else corpus.select_split(opts["split"])
        if tuning is None:  # --method and --profile auto read the evaluated documents, as dedup does
            method_choice = choose_method(method, data.texts)
            method = method_choice.name
            _print_choice(err, method_choice, opts["as_json"])
            choice = choose_profile(opts["profile"], method, data.texts)
            _print_choice(err, choice, opts["as_json"])
            params = method_params_from_options(method, {**opts, "profile": choice.name},
                                                seed=opts["seed"])
        if groups is not None and opts["split"] is not None:
            groups = groups[corpus.splits == opts["split"]]
        if tuning is not None:
            _warn_tuning_overlap(err, tuning, corpus, data, opts["split"])
        del corpus  # only the evaluated split goes on
        from neardup.eval.evaluate import evaluate

        progress = False if opts["as_json"] or opts["quiet"] else opts["progress"]
        report = evaluate(data, method, params=params, cluster=cluster, ks=ks,
                          progress=progress, groups=groups)
    report = {
        "split": opts["split"],
        "inputs": [str(p) for p in opts["labeled"]],
        "pairs_file": None if opts["pairs_path"] is None else str(opts["pairs_path"]),
        "from_tuning": None if tuning is None else str(opts["from_tuning"]),
        **({} if tuning is not None else {"profile": choice.record(),
                                          **method_choice.run_params()}),
        **report,
    }
    if opts["as_json"]:
        click.echo(_dump(report))
    else:
        _print_eval(report, Console())


def _read_groups(corpus, opts: dict[str, Any]):
    """The --group-field value of every document, in the corpus's order."""
    import numpy as np

    from neardup.errors import InputError
    from neardup.io import ReaderConfig, iter_records

    field = opts["group_field"]
    config = ReaderConfig(text_field=opts["text_field"], id_field=opts["id_field"],
                          errors=opts["decode_errors"])
    groups = []
    for position, record in enumerate(iter_records([str(p) for p in opts["labeled"]], config)):
        value = record.get(field)
        if value is None or isinstance(value, (dict, list)):
            raise InputError(
                f"--group-field {field!r}: record {corpus.ids[position]!r} has "
                f"{'no such field' if value is None else 'a list or object there'}. Give every "
                "record a group (a string or number), or leave --group-field out.")
        groups.append(str(value))
    return np.array(groups, dtype=object)


def _tuned_method(ctx: click.Context, opts: dict[str, Any], tuning) -> str:
    given = ctx.get_parameter_source("method") not in (
        ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
    if given and opts["method"] != tuning.method:
        raise click.UsageError(
            f"--method {opts['method']} differs from the tuned method {tuning.method!r} in "
            f"{opts['from_tuning']}; omit --method or tune {opts['method']} first."
        )
    conflicts = _explicit(ctx, (*METHOD_OPTION_NAMES, *CLUSTER_OPTION_NAMES, "seed"))
    if conflicts:
        raise click.UsageError(
            f"{', '.join(conflicts)} cannot be combined with --from-tuning: the tuning file "
            "fixes the method's parameters and clustering, so the test run uses exactly "
            "what was chosen on validation. Re-run `neardup tune` with these options instead."
        )
    return tuning.method


def _warn_tuning_overlap(err, tuning, corpus, data, split: str | None) -> None:
    reason = None
    if data.content_hash() == tuning.data_hash:
        reason = "the same documents it was tuned on"
    elif split is not None and split == tuning.split:
        reason = f"the split it was tuned on ({split!r})"
    elif split is None and tuning.split is not None and tuning.split in corpus.split_names:
        reason = f"all splits, including the one it was tuned on ({tuning.split!r})"
    if reason:
        err.print(
            f"[yellow]warning:[/yellow] evaluating tuned parameters on {reason}; the score is "
            "optimistic. Report on held-out data, e.g. --split test."
        )


def _print_eval(report: dict[str, Any], console) -> None:
    from rich.table import Table

    title = f"neardup eval --method {report['method']}"
    if report["split"] is not None:
        title += f" --split {report['split']}"
    table = Table(title=title, show_header=False, min_width=len(title) + 4)
    table.add_column("metric")
    table.add_column("value", justify="right")
    if "threshold" in report["params"]:
        table.add_row("threshold", _fmt_param(report["params"]["threshold"]))
    rows = (
        ("ARI (adjusted Rand index)", "ari"),
        ("pairwise precision", "precision"),
        ("pairwise recall", "recall"),
        ("pairwise F1", "f1"),
        ("MCC", "mcc"),
        ("homogeneity", "homogeneity"),
        ("completeness", "completeness"),
        ("V-measure", "v_measure"),
        ("documents", "n_docs"),
        ("true clusters", "n_true_clusters"),
        ("predicted clusters", "n_pred_clusters"),
        ("scored pairs", "n_pairs"),
    )
    for label, key in rows:
        table.add_row(label, _fmt(report[key]))
    retrieval = report.get("retrieval")
    if retrieval:
        for key, value in retrieval.items():
            if key.startswith("recall@"):
                table.add_row(f"Recall@{key[7:]}", _fmt(value))
        table.add_row("MRR", _fmt(retrieval["mrr"]))
        table.add_row("retrieval queries", _fmt(retrieval["n_queries"]))
        table.add_row("queries without candidates",
                      _fmt(retrieval["n_queries_without_candidates"]))
    for group, metrics in report.get("groups", {}).items():
        table.add_row(f"ARI: {group} ({metrics['n_docs']} documents)", _fmt(metrics["ari"]))
    for stage, seconds in report["timings"].items():
        table.add_row(f"time: {stage}", f"{seconds:.2f} s")
    table.add_row("time: total", f"{report['seconds']:.2f} s")
    console.print(table)


# --------------------------------------------------------------------------------- tune


def _parse_value(text: str) -> Any:
    text = text.strip()
    if text.lower() in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _parse_grid(entries: tuple[str, ...]) -> dict[str, list] | None:
    if not entries:
        return None
    grid: dict[str, list] = {}
    for entry in entries:
        name, sep, values = entry.partition("=")
        name = name.strip().replace("-", "_")
        name = _GRID_ALIASES.get(name, name)
        parts = [v for v in values.split(",") if v.strip()]
        if not sep or not name or not parts:
            raise click.BadParameter(
                f"expected NAME=V1,V2,... such as threshold=0.3,0.5,0.7; got {entry!r}.",
                param_hint="--grid",
            )
        if name in grid:
            raise click.BadParameter(f"{name!r} is given twice.", param_hint="--grid")
        grid[name] = [_parse_value(v) for v in parts]
    return grid


@click.command("tune")
@_labeled_options
@method_options
@cluster_options
@click.option("--split", default="validation", show_default=True,
              help="Tune on the documents of this split only. 'test' is refused: choose "
                   "parameters on validation data, report on test with `neardup eval "
                   "--from-tuning`. 'none': LABELED has no split field and is tuning data "
                   "as a whole (a held-out validation file).")
@click.option("--grid", "grid", multiple=True, metavar="NAME=V1,V2,...",
              help="Values to sweep for one method parameter, e.g. threshold=0.2,0.4,0.6 or "
                   "ngram=3,5,7 (shingle length), or a clustering parameter such as "
                   "distance_threshold=0.1,0.2 (with --cluster hac) or "
                   "time_window_hours=none,24,48 (clustering parameters by the names "
                   "neardup.dedup takes); 'none' is no value. Repeat for "
                   "several parameters (all combinations are run). Default: the method's "
                   "threshold, minhash 0.1-0.9, ngram 0.05-0.9, simhash 0-20 bits; exact has "
                   "nothing to tune.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("tuning.json"),
              show_default=True,
              help="Write the sweep and the chosen parameters here (.json), for `neardup "
                   "eval --from-tuning`; checked before any reading, never an input.")
@_run_options
@click.pass_context
def tune_command(ctx: click.Context, **opts: Any) -> None:
    """Sweep a method's threshold on the validation split of LABELED data; keep the best ARI.

    Every grid point is a full de-duplication run on the tuning split, scored by the
    Adjusted Rand Index against the ground truth; ties go to the first point. The other
    method options (--num-perm, --ngram, ...) are held fixed. Only the tuning split's
    documents are ever read by the method.

    \b
    Examples:
      neardup tune labeled.jsonl --method minhash --out tuning.json
      neardup eval labeled.jsonl --split test --from-tuning tuning.json
      neardup tune labeled.jsonl --method ngram --grid threshold=0.1,0.2,0.3 --grid ngram=3,5
    """
    from rich.console import Console

    from neardup.eval.tuning import tune

    from neardup.cli._checks import command_errors, output_set, tuning_text

    grid = _parse_grid(opts["grid"])
    # A swept value out of range is named by the --grid entry that gave it.
    flags = {**_CLI_FLAGS, **{name.rpartition(".")[2]: f"--grid {name}" for name in grid or {}}}
    with warnings_shown(opts["quiet"]), command_errors(flags, words=_CLI_WORDS):
        # Planned with the method "auto" stands for until the tuning split is read (below).
        check_option_rules(opts)  # a method parameter with --method auto
        method = planning_method(opts["method"])
        sweep, base, cluster = _tune_settings(ctx, opts, method, grid)
        split = None if opts["split"].strip().casefold() == "none" else opts["split"]
        if split is not None and split.strip().casefold() == "test":
            raise click.UsageError(
                "--split test is refused: tuning on the test split makes its score "
                "optimistic. Tune on --split validation, then report on test with "
                "`neardup eval LABELED --split test --from-tuning FILE`."
            )
        # --out checked before any reading (.json, writable, not an input).
        outputs = output_set((*opts["labeled"], opts["pairs_path"]),
                             [("--out", opts["out"], ("json",))])
        with outputs:
            corpus = _load(opts)
            # --profile auto reads the tuning split's documents, as dedup reads its input.
            tuned = corpus if split is None else corpus.select_split(split)
            method_choice = choose_method(opts["method"], tuned.texts)
            if method_choice.name != method:
                method = method_choice.name
                sweep, base, cluster = _tune_settings(ctx, opts, method, grid)
            choice = choose_profile(opts["profile"], method, tuned.texts)
            del tuned
            _print_choice(Console(stderr=True, quiet=opts["quiet"]), method_choice,
                          opts["as_json"])
            _print_choice(Console(stderr=True, quiet=opts["quiet"]), choice, opts["as_json"])
            if choice.name != "clean":
                profiled = method_params_from_options(
                    method, {**opts, "profile": choice.name}, seed=opts["seed"])
                base = {k: v for k, v in profiled.items() if k not in sweep}
            progress = False if opts["as_json"] or opts["quiet"] else opts["progress"]
            result = tune(corpus, method, split=split, grid=grid, base_params=base,
                          cluster=cluster, progress=progress)
            outputs.write_text("--out", tuning_text(result))
            outputs.commit()
    if opts["as_json"]:
        click.echo(_dump(result.to_dict()))
        return
    _print_sweep(result, Console())
    err = Console(stderr=True, quiet=opts["quiet"])
    values = ", ".join(f"{k}={v}" for k, v in result.best["values"].items()) or "(nothing swept)"
    err.print(
        f"chosen: {values} (ARI {result.best_score:.4f} on split {result.split!r}, "
        f"{result.n_docs:,} documents); written to {opts['out']}.\n"
        f"report on test: neardup eval {' '.join(_test_files(opts['labeled']))} "
        f"--split test --from-tuning {opts['out']}"
    )


def _tune_settings(ctx: click.Context, opts: dict[str, Any], method: str, grid):
    """What ``tune`` sweeps for ``method`` (``--grid``, else the method's default grid),
    the method's other parameters from the options (a swept one left out) and the
    clustering; a usage error for an option that fixes a swept parameter."""
    from neardup.eval.tuning import default_grid

    sweep = default_grid(method) if grid is None else grid
    base = method_params_from_options(method, {**opts, "profile": "clean"}, seed=opts["seed"])
    for name in sweep:
        dest = _GRID_OPTION.get(name, RENAMED.get(name, name))
        given = dest in opts and _explicit(ctx, (dest,))
        if given:
            raise click.UsageError(
                f"{given[0]} fixes {name!r}, which tune sweeps; choose its values with "
                f"--grid {name}=V1,V2,... instead."
            )
        if name in base:  # a default filled in by the options, not the user's choice
            del base[name]
    return sweep, base, cluster_config_from_options(opts, seed=opts["seed"], sweep=sweep)


def _print_choice(console, choice, quiet: bool) -> None:
    """What --method auto or --profile auto chose, on stderr (not with --json)."""
    if choice.chosen and not quiet:
        console.print(f"[dim]{choice.describe()}[/dim]")


def _test_files(paths) -> list[str]:
    """The files to report on: a sibling test file stands in for a validation file
    (data/x/validation.jsonl.gz -> data/x/test.jsonl.gz) where one exists."""
    files = []
    for path in map(Path, paths):
        sibling = path.with_name(path.name.replace("validation", "test"))
        files.append(str(sibling if sibling != path and sibling.exists() else path))
    return list(dict.fromkeys(files))


def _print_sweep(result, console) -> None:
    from rich.table import Table

    from rich import box

    title = f"neardup tune --method {result.method} --split {result.split}"
    table = Table(title=title, box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    names = list(result.grid)
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    metrics = (("ARI", "ari"), ("F1", "f1"), ("prec.", "precision"), ("rec.", "recall"),
               ("clusters", "n_pred_clusters"), ("pairs", "n_pairs"))
    for label, _ in metrics:
        table.add_column(label, justify="right", no_wrap=True)
    table.add_column("sec", justify="right", no_wrap=True)
    for index, point in enumerate(result.points):
        cells = [_fmt_param(point["values"][name]) for name in names]
        cells += [f"{point[key]:.3f}" if isinstance(point[key], float) else _fmt(point[key])
                  for _, key in metrics]
        cells.append(f"{point['seconds']:.2f}")
        style = "bold green" if index == result.best_index else None
        table.add_row(*cells, style=style)
    console.print(table)
