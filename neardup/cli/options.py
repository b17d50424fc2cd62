"""Command-line options, generated from the parameter schema (:mod:`neardup.params`).

Each group is one decorator, so every command offers the same flags with the same help,
and one function per group turns the parsed flags into library objects:

* :func:`method_options` (``--method``, its parameters, shingling and normalization) and
  :func:`method_params_from_options` -> keyword parameters for
  :func:`neardup.methods.make_method`;
* :func:`cluster_options` (``--cluster``, ``--linkage``, ``--hac-distance``,
  ``--resolution``, ``--max-cluster-size``, ``--oversized``, ``--time-window``) and
  :func:`cluster_config_from_options` -> a :class:`~neardup.pipeline.ClusterConfig`;
* :func:`reader_options`, :func:`keep_options`, :func:`output_options`,
  :func:`run_options` and :func:`neardup.cli.engine.engine_options`.

No option is declared here: :func:`schema_option` makes each from its
:class:`~neardup.params.Param`, and :func:`check_option_rules` applies the schema's
rules (:data:`neardup.params.RULES`) in the command line's words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

import click

from neardup.graph.keep import KeepPolicy, record_values
from neardup.methods import method_parameters
from neardup.params import (
    DIRECT_METHOD_PARAMS,
    PARAM,
    RULES,
    Param,
    RuleError,
    check_rules,
    choices_of,
    group,
)
from neardup.pipeline import ClusterConfig
from neardup.profiles import PROFILED_METHODS, choose_profile, profile_settings, shingle_setting
from neardup.text import NormalizeConfig

__all__ = [
    "CLUSTER_OPTION_NAMES",
    "DECODE_ERRORS_OPTION",
    "METHOD_OPTION_NAMES",
    "OPTION_RULES",
    "PATH_OR_URL",
    "STORAGE_OPTION",
    "apply_options",
    "check_option_rules",
    "cluster_config_from_options",
    "cluster_options",
    "keep_options",
    "keep_policy_from_options",
    "keep_values_from_options",
    "memory_size",
    "method_options",
    "method_params_from_options",
    "named_method_options",
    "output_options",
    "reader_config_from_options",
    "reader_options",
    "run_options",
    "schema_option",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Parameter names (click destinations) of the options :func:`method_options` adds,
#: ``method`` excepted.
METHOD_OPTION_NAMES = tuple(p.name for p in group("method") if p.name != "method")
#: Parameter names of the options :func:`cluster_options` adds.
CLUSTER_OPTION_NAMES = tuple(p.name for p in group("cluster"))
#: The schema's rules, as the commands apply them.
OPTION_RULES = RULES


def apply_options(options: tuple[Callable[[F], F], ...], function: F) -> F:
    # click lists options in the order their decorators appear top to bottom, i.e. the
    # reverse of the order they are applied in.
    for option in reversed(options):
        function = option(function)
    return function


def _direct_params(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """Map CLI options onto the method's constructor (:func:`check_option_rules` has
    refused the options it does not take)."""
    accepted = set(method_parameters(method))
    params = {k: v for k, v in options.items() if v is not None and k in accepted}
    if method == "simhash" and "threshold" in params:
        value = params["threshold"]
        if float(value) != int(value):
            raise click.UsageError(
                f"--threshold for simhash is a Hamming distance in bits (an integer); got {value}."
            )
        params["threshold"] = int(value)
    return params


def normalize_config(flags: dict[str, bool]) -> NormalizeConfig:
    """The :class:`NormalizeConfig` the normalization flags describe."""
    return NormalizeConfig(
        remove_invisible=not flags["keep_invisible"],
        nfkc=not flags["no_nfkc"],
        repair_hyphens=not flags["no_hyphen_repair"],
        fold_homoglyphs=not flags["no_homoglyph_fold"],
        casefold=not flags["no_casefold"],
        strip_punctuation=not flags["keep_punctuation"],
        collapse_whitespace=True,
        spell_correct=flags.get("spell_correct", False),
        spell_max_edit_distance=flags.get("spell_max_edit_distance", 2),
    )


def _parse_extra_params(method: str, items: tuple[str, ...]) -> dict[str, Any]:
    """``("name=value", ...)`` -> ``{name: value}``; values parsed as JSON when possible."""
    params: dict[str, Any] = {}
    accepted = method_parameters(method)
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise click.UsageError(f"--param takes NAME=VALUE; got {item!r}.")
        if name not in accepted or name in ("normalize", "shingle"):
            from neardup.cli.errors import FLAGS

            # Each parameter as the command line sets it: its own flag, else --param.
            usable = ", ".join(FLAGS.get(p, f"--param {p}=...") for p in accepted
                               if p not in ("normalize", "shingle"))
            raise click.UsageError(
                f"--param {name}: --method {method} has no such parameter; it takes: {usable}."
            )
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        params[name] = tuple(value) if isinstance(value, list) else value
    return params


def method_params_from_options(method: str, opts: dict[str, Any], *, seed: int) -> dict[str, Any]:
    """Keyword parameters for ``make_method(method, ...)`` from the parsed options.

    Parameters
    ----------
    method : str
        A name in ``neardup.METHODS``.
    opts : dict
        The command's keyword arguments; must hold every name in
        :data:`METHOD_OPTION_NAMES`.
    seed : int
        Passed on when the method takes a ``seed``.

    Raises
    ------
    click.UsageError
        For an option the method does not take, or another option that would be
        ignored (:func:`check_option_rules`).
    """
    check_option_rules({**opts, "method": method})
    params = _direct_params(method, {name: opts[name] for name in DIRECT_METHOD_PARAMS})
    accepted = method_parameters(method)
    profile = opts.get("profile", "clean")
    if profile == "auto":  # a front door resolves it first (neardup.profiles.choose_profile)
        profile = choose_profile(profile, method, None).name
        if method in PROFILED_METHODS:
            raise ValueError("method_params_from_options: resolve profile 'auto' with "
                             "choose_profile before building the method")
    # The profile's settings under the flags given (each given flag wins).
    params = {k: v for k, v in profile_settings(profile, method).items() if k != "shingle"} | params
    if "shingle" in accepted:
        context = click.get_current_context(silent=True)
        unit = opts["shingle_unit"] if _given(context, opts, "shingle_unit") else None
        params["shingle"] = shingle_setting(profile, method, unit, opts["ngram_n"])
    if "normalize" in accepted:
        params["normalize"] = normalize_config(opts)
    if "seed" in accepted:
        params["seed"] = seed
    extra = _parse_extra_params(method, tuple(opts.get("extra_params") or ()))
    clash = sorted(set(extra) & set(params))
    if clash:
        raise click.UsageError(f"--param {clash[0]} repeats an option given by its own flag.")
    return params | extra


# --------------------------------------------------------------------------- ignored options
#
# One rule for every command and for Python: an option given on the command line that
# the run would not read is a usage error (exit 2) naming the option and the one that
# makes it inapplicable. The rules live in neardup.params (RULES); here they are applied
# to the parsed options and worded with flags.


def _given(context: click.Context | None, opts: dict[str, Any], name: str) -> bool:
    """Whether option ``name`` was set by the user (command line, environment)."""
    from click.core import ParameterSource

    if context is not None:
        return context.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)
    return opts.get(name) not in (None, False)


def check_option_rules(
    opts: dict[str, Any], *, method: Any = None, algorithm: str | None = None,
    sweep: Collection[str] = (),
) -> None:
    """UsageError for the first option the user gave that the run would ignore
    (:data:`neardup.params.RULES`), naming it and the option that makes it inapplicable.

    ``method`` (a Method object) and ``algorithm`` (the resolved clustering), when given,
    settle the rules that depend on them (which stage ``--engine local`` runs); before
    they are known those rules pass. ``sweep``: the parameters ``tune --grid`` varies.
    Options that the current command does not have are skipped.
    """
    context = click.get_current_context(silent=True)
    command = context.command.name if context is not None else "-"
    given = {name for name in opts if _given(context, opts, name)}
    try:
        check_rules(command, opts, given, method=method, algorithm=algorithm, sweep=sweep,
                    command=command, interface="cli")
    except RuleError as exc:
        raise click.UsageError(exc.render("--")) from None


def cluster_config_from_options(
    opts: dict[str, Any], *, seed: int, sweep: Collection[str] = ()
) -> ClusterConfig:
    """The :class:`ClusterConfig` from the options :func:`cluster_options` added.

    Raises
    ------
    click.UsageError
        For an option given on the command line that the chosen ``--cluster`` does not
        read (``--linkage``/``--hac-distance`` without ``hac``, ``--resolution`` without
        ``leiden``/``louvain``, ``--oversized`` without ``--max-cluster-size``), unless
        ``sweep`` (the parameters ``tune --grid`` varies) includes the algorithm or the
        maximum cluster size.
    """
    check_option_rules(opts, sweep=sweep)
    return ClusterConfig(
        algorithm=opts["cluster"],
        max_cluster_size=opts["max_cluster_size"],
        oversized=opts["oversized"],
        resolution=opts["resolution"],
        seed=seed,
        linkage=opts.get("linkage", "average"),
        distance_threshold=opts.get("distance_threshold", 0.2),
        time_window_hours=opts.get("time_window_hours"),
    )


class _PathOrUrl(click.ParamType):
    """A local path (as a :class:`pathlib.Path`) or a URL fsspec reads (kept as a string:
    a Path would fold ``s3://`` into ``s3:/``)."""

    name = "path"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from pathlib import Path

        from neardup.io.locations import locate

        if isinstance(value, Path):
            return value
        location = locate(value)
        return Path(location.path) if location.local else location.url


#: The type of INPUT arguments and output options that may name a URL (docs/storage.md).
PATH_OR_URL = _PathOrUrl()


def _storage_options(ctx: Any, param: Any, values: tuple[str, ...]) -> dict[str, Any] | None:
    """``("KEY=VALUE", ...)`` -> ``{KEY: VALUE}``, VALUE read as JSON when it parses."""
    if not values:
        return None
    options: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"takes KEY=VALUE; got {item!r}.", ctx=ctx, param=param)
        try:
            options[key.strip()] = json.loads(raw)
        except ValueError:
            options[key.strip()] = raw
    return options


def memory_size(ctx, param, value):
    """click callback: a memory size option (``2GB``, ``512MB``) in bytes, or None."""
    if value is None:
        return None
    from neardup.engine import parse_memory

    try:
        return parse_memory(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _click_type(param: Param) -> dict[str, Any]:
    """The click keyword arguments that read ``param``'s kind of value."""
    if param.kind == "choice":
        return {"type": click.Choice(list(choices_of(param)))}
    if param.kind == "int":
        if param.low is None and param.high is None:
            return {"type": int}
        return {"type": click.IntRange(None if param.low is None else int(param.low),
                                       None if param.high is None else int(param.high))}
    if param.kind == "float":
        if param.low is None and param.high is None:
            return {"type": float}
        return {"type": click.FloatRange(param.low, param.high, min_open=param.low_open)}
    if param.kind == "flag":
        return {"is_flag": True}
    if param.kind == "path_or_url":
        return {"type": PATH_OR_URL}
    if param.kind == "dir":
        return {"type": click.Path(file_okay=False, path_type=Path)}
    if param.kind == "memory":
        return {"callback": memory_size}
    if param.kind == "key_value":
        return {"multiple": True, "callback": _storage_options}
    if param.kind == "name_value":
        return {"multiple": True}
    return {}


def schema_option(name: str, **override: Any) -> Callable[[F], F]:
    """The click option of schema parameter ``name`` (:data:`neardup.params.PARAM`):
    its flag, type, default and help as declared there; ``override`` replaces any of
    click's keyword arguments (a command's own help or default)."""
    param = PARAM[name]
    decls = [param.flag] if param.short is None else [param.short, param.flag]
    if param.kind == "switch":
        decls = [f"{param.flag}/--no-{param.flag[2:]}"]
    kwargs: dict[str, Any] = {"help": param.help, **_click_type(param)}
    if param.kind not in ("flag", "key_value", "name_value") or param.default is not False:
        if param.kind not in ("key_value", "name_value"):
            kwargs["default"] = param.default
    if param.show_default:
        kwargs["show_default"] = True
    if param.metavar is not None:
        kwargs["metavar"] = param.metavar
    return click.option(*decls, param.name, **{**kwargs, **override})


def _group_options(name: str) -> tuple[Callable[[F], F], ...]:
    return tuple(schema_option(p.name) for p in group(name) if p.cli)


#: ``--storage-option``: fsspec options for inputs and outputs given as URLs.
STORAGE_OPTION = schema_option("storage_options")
#: ``--errors``: what to do with invalid UTF-8 (every command that reads files).
DECODE_ERRORS_OPTION = schema_option("decode_errors")


def method_options(function: F) -> F:
    """Add ``--method`` (default ``auto``, chosen by the input's size:
    :mod:`neardup.method_choice`), the method parameters, ``--shingle``/``--ngram`` and
    the normalization flags to a click command (in that order in ``--help``)."""
    return apply_options(_group_options("method"), function)


def named_method_options(function: F) -> F:
    """:func:`method_options` for a command whose input's size cannot choose the method
    (an index grows batch by batch; calibrate and leakage fit or compare one method's
    scores): ``--method`` takes a method's name, ``minhash`` by default."""
    from neardup.method_choice import LARGE_INPUT_METHOD
    from neardup.methods import METHODS

    method = schema_option("method", default=LARGE_INPUT_METHOD, type=click.Choice(list(METHODS)),
                           help="Near-duplicate detection method.")
    return apply_options((method, *_group_options("method")[1:]), function)


def cluster_options(function: F) -> F:
    """Add ``--cluster``, ``--linkage``, ``--hac-distance``, ``--resolution``,
    ``--max-cluster-size``, ``--oversized`` and ``--time-window``."""
    return apply_options(_group_options("cluster"), function)


def reader_options(function: F) -> F:
    """Add ``--text-field``, ``--id-field``, ``--date-field``, ``--errors``,
    ``--batch-size`` and ``--limit``."""
    names = [p.name for p in group("reader") if p.name != "storage_options"]
    return apply_options(tuple(schema_option(n) for n in names), function)


def run_options(function: F) -> F:
    """Add ``--seed``, ``--progress/--no-progress`` and ``--quiet``."""
    return apply_options(_group_options("run"), function)


def keep_options(function: F) -> F:
    """Add ``--keep``, ``--keep-by`` and ``--annotate``."""
    return apply_options(_group_options("keep"), function)


def output_options(function: F) -> F:
    """Add ``--clusters-out``, ``--pairs-out``, ``--out``, ``--report`` and ``--html``."""
    return apply_options(_group_options("output"), function)


def reader_config_from_options(opts: dict[str, Any]):
    """The :class:`~neardup.io.ReaderConfig` from the options :func:`reader_options` added."""
    from neardup.io import ReaderConfig

    return ReaderConfig(
        text_field=opts["text_field"],
        id_field=opts["id_field"],
        date_field=opts["date_field"],
        errors=opts["decode_errors"],
        batch_size=opts["batch_size"],
        limit=opts["limit"],
        storage_options=opts.get("storage_options"),
    )


def keep_policy_from_options(opts: dict[str, Any], inputs: Collection[Any] = ()) -> KeepPolicy:
    """The :class:`~neardup.graph.keep.KeepPolicy` of ``--keep``/``--keep-by``; a
    UsageError for a combination that cannot work (before any work)."""
    if opts["keep"] is not None and opts["keep_by"] is not None:
        raise click.UsageError(f"--keep {opts['keep']} and --keep-by {opts['keep_by']} both "
                               "choose the surviving copy; give one of them.")
    policy = KeepPolicy(rule=opts["keep"] or "longest", field=opts["keep_by"])
    native_dates = any(str(p).lower().endswith(".sgm") for p in inputs)
    if policy.needs_dates and opts.get("date_field") is None and not native_dates:
        raise click.UsageError(f"--keep {policy.rule} chooses by date: give --date-field FIELD "
                               "(the field holding each record's date).")
    if opts.get("annotate") and opts.get("out") is None:
        raise click.UsageError("--annotate marks the records it writes to --out: give --out FILE.")
    return policy


def keep_values_from_options(policy: KeepPolicy, inputs: Collection[Any], reader: Any):
    """Each input record's value for ``policy`` (one pass over the records), or None when
    the policy reads none."""
    if not policy.needs_values:
        return None
    from neardup.io import iter_records

    return record_values(iter_records(list(inputs), reader), policy, flag="--keep-by")


def profile_from_inputs(opts: dict[str, Any], method: str, inputs, reader):
    """The :class:`~neardup.profiles.ProfileChoice` for ``--profile`` (``auto`` reads the
    first documents of ``inputs`` with ``reader``; other values read nothing)."""
    from neardup.io import read_corpus
    from neardup.profiles import choose_from_batches

    return choose_from_batches(opts.get("profile", "clean"), method,
                               read_corpus(list(inputs), reader))[0]
