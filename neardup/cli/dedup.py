"""``neardup dedup``: find near-duplicates in files and write clusters, pairs, de-duplicated corpus.

A run fails before any work for every problem it can see up front (options, output paths,
free space), speaks in flags rather than Python parameters, and writes its outputs as a
set (:class:`~neardup.io.outputs.OutputSet`): all new files or none. Ctrl-C and SIGTERM
delete the temporary files and exit with 130 and 143, without a traceback.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import numpy as np

from neardup.cli._checks import (
    NOTHING_WRITTEN,
    Terminated,
    exit_for_signal,
    termination_as_exception,
)
from neardup.cli import warnings_shown
from neardup.cli.errors import cli_message, spell_flag
from neardup.cli.options import (
    cluster_config_from_options,
    check_option_rules,
    cluster_options,
    keep_options,
    keep_policy_from_options,
    keep_values_from_options,
    method_options,
    method_params_from_options,
    output_options,
    PATH_OR_URL,
    STORAGE_OPTION,
    reader_config_from_options,
    reader_options,
    run_options,
)
from neardup.errors import NeardupError, spelled_as
from neardup.methods import Method, make_method
from neardup.cli.engine import corpus_stage_from_options, engine_options, input_bytes
from neardup.io.identity import input_identity, reading_digest
from neardup.cli.rereads import InputWatch, kept_parquet_batches, refuse_single_read_inputs
from neardup.pipeline import Result, result_from_stage, run, template_clusters
from neardup.method_choice import MethodChoice, planning_method
from neardup.method_choice import choose_from_batches as choose_method_from_batches
from neardup.profiles import PROFILED_METHODS, ProfileChoice, choose_from_batches
from neardup.text.noise_signal import (BROKEN_TOKEN_SHARE, SAMPLE_DOCS, STUCK_PUNCTUATION_SHARE,
                                       NoiseShares, noise_shares)
from neardup.plan import Budget, Plan, RunSpec, Unsupported, plan, require

DEMO_HINT = "no INPUT given: running on the bundled demo corpus"
#: Exit codes after Ctrl-C (SIGINT) and SIGTERM, as shells report them (128 + signal).
# Output options -> their click destinations, in the order outputs are written.
_OUTPUTS = (
    ("--clusters-out", "clusters_out"),
    ("--pairs-out", "pairs_out"),
    ("--out", "out"),
    ("--report", "report"),
    ("--html", "html"),
)


def _demo_corpus() -> Path:
    from neardup.data import demo_corpus_path

    return demo_corpus_path()


def _clean_default(method: Method) -> bool:
    """Whether ``method`` is a lexical method that --profile noisy changes, run on word
    shingles (its clean-text default)."""
    shingle = method.get_params().get("shingle") or {}
    return method.name in PROFILED_METHODS and shingle.get("unit") == "word"


def _sampling(batches, sample: list[str]):
    """Pass batches through, keeping the first :data:`SAMPLE_DOCS` texts in ``sample``
    (for the noise signal; the run's own read, so a pipe is read once)."""
    for batch in batches:
        if len(sample) < SAMPLE_DOCS:
            sample.extend(t for t in batch.texts[:SAMPLE_DOCS - len(sample)]
                          if isinstance(t, str))
        yield batch


def _reads_profile(opts: dict[str, Any], method: str) -> bool:
    """Whether a run of ``method`` chooses its profile from the input (``--profile auto``
    with a method a profile changes)."""
    return opts["profile"] == "auto" and method in PROFILED_METHODS


def _chosen(inputs: tuple[Path, ...], opts: dict[str, Any], planned: Plan, batches):
    """The method ``--method`` gives and the profile ``--profile`` gives for the first
    documents of ``batches``, the plan (rebuilt when either is not the one it was made
    with: the planning method, the "clean" profile) and every batch from the first."""
    method, batches = choose_method_from_batches(opts["method"], batches,
                                                 memory_limit=opts.get("memory_limit"))
    choice, batches = choose_from_batches(opts["profile"], method.name, batches)
    if method.name != planned.spec.method.name or (
            _reads_profile(opts, method.name) and choice.name != "clean"):
        planned = _plan(inputs, {**opts, "method": method.name}, choice.name)
    return method, choice, planned, batches


def _hints(cluster: dict[str, Any], has_dates: bool, method: Method,
           noise: NoiseShares | None = None) -> list[str]:
    """Advice for the end of the summary: a dated corpus run without a time window; a
    lexical method at its clean-text defaults on input that looks noisy; a method run
    with connected components whose model recommends another clustering.
    ``cluster``: the run's clustering parameters; ``noise``: the noise signs of the
    input's first documents (None: not measured)."""
    hints = []
    if has_dates and cluster.get("time_window_hours") is None and method.name != "sanderson":
        hints.append(
            "The input has dates: --time-window HOURS (e.g. 48) keeps documents dated "
            "further apart out of one cluster, so recurring reports with the same wording "
            "(templates) are not merged. Pairs identical after normalization (exact; ngram "
            "and minhash Jaccard 1.0) are merged whatever their dates."
        )
    if noise is not None and _clean_default(method) and noise.noisy():
        hints.append(
            f"The input looks noisy: {100 * noise.broken_tokens:.2f}% of the first documents' "
            f"words mix digits into letters or letters of two scripts (clean text: under "
            f"{100 * BROKEN_TOKEN_SHARE:.1f}%) and {100 * noise.stuck_punctuation:.2f}% have "
            f"punctuation stuck between letters (clean text: under "
            f"{100 * STUCK_PUNCTUATION_SHARE:.1f}%), as OCR errors, typos and look-alike "
            f"letters do. --method {method.name} on word 3-grams (its clean-text default) "
            f"misses many copies of such text; --profile noisy (character 5-grams at "
            f"Jaccard 0.3) finds more of them (docs/choosing-a-method.md)."
        )
    if cluster.get("algorithm", "components") == "components":
        recommended = method.recommended_cluster()
        if recommended:
            flags = " ".join(f"--{'cluster' if k == 'algorithm' else k} {v}"
                             for k, v in recommended.items())
            hints.append(
                f"{flags} (this model's recommended clustering, which the default --cluster "
                f"auto uses) raised the worst ARI over "
                f"the independent labelled sets above connected components' "
                f"(docs/transfer.md)."
            )
    return hints


def _summary_value(value: Any) -> str:
    """A summary entry as printed: counts with thousands separators, text entries
    (``engine_fallback``) as they are."""
    return f"{value:,}" if isinstance(value, (int, float)) else str(value)


def _print_summary(result: Result | dict[str, Any], hints: list[str], console: Any,
                   extra_timings: dict[str, float], engine: str = "local") -> None:
    """The run's summary table: a Result's, or the summary a Ray run's workers counted
    (with its timings under ``_timings`` and its method under ``_method``)."""
    from rich.table import Table

    if isinstance(result, dict):
        summary = dict(result)
        timings = {**summary.pop("_timings"), **extra_timings}
        summary.pop("_params", None)
        method = summary.pop("_method")
    else:
        summary, timings = result.summary(), {**result.timings, **extra_timings}
        method = result.method
    title = f"neardup dedup --method {method}"
    if engine == "ray":
        title += " --engine ray"
    table = Table(title=title, show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        table.add_row(key.replace("_", " "), _summary_value(value))
    total = sum(timings.values()) or 1.0
    for stage, seconds in timings.items():
        table.add_row(f"time: {stage}", f"{seconds:.2f} s ({100 * seconds / total:.0f}%)")
    table.add_row("time: total", f"{total:.2f} s")
    console.print(table)
    params = result.get("_params", {}) if isinstance(result, dict) else result.params
    if "method_auto" in params:
        console.print(f"[dim]{MethodChoice.from_record(params['method_auto']).describe()}[/dim]")
    if "profile_auto" in params:
        console.print(f"[dim]{ProfileChoice(**params['profile_auto']).describe()}[/dim]")
    for hint in hints:
        console.print(f"[dim]hint: {hint}[/dim]")


def _output_set(inputs: tuple[Path, ...], opts: dict[str, Any]):
    """The run's outputs as an :class:`OutputSet`, with a size estimate for ``--out``."""
    from neardup.io.outputs import OutputSet
    from neardup.io.writers import output_kind

    outputs = OutputSet(inputs, storage_options=opts.get("storage_options"))
    size, compressed = input_bytes(inputs, opts.get("storage_options"))
    for flag, key in _OUTPUTS:
        path = opts[key]
        if path is None:
            continue
        if key in ("report", "html"):
            outputs.add(flag, path, kinds=("json",) if key == "report" else ("html",))
            continue
        estimate = 0
        if key == "out":
            # The kept documents are at most the input; uncompressed text of a compressed
            # input takes a few times its size on disk.
            plain = output_kind(path) in ("jsonl", "csv", "tsv")
            estimate = size * (4 if compressed and plain else 1)
        outputs.add(flag, path, estimate=estimate)
    return outputs


def _killing_after_first(batches):
    """Pass batches through; the test hook ``read`` fires after the first one."""
    from neardup import faults

    for index, batch in enumerate(batches):
        yield batch
        if index == 0:
            faults.checkpoint("read")


@click.command("dedup")
@click.argument("inputs", nargs=-1, type=PATH_OR_URL)
@method_options
@reader_options
@STORAGE_OPTION
@cluster_options
@keep_options
@output_options
@run_options
@engine_options
def dedup_command(inputs: tuple[Path, ...], **opts: Any) -> None:
    """Find near-duplicates in INPUT files and cluster them.

    INPUT: JSONL (.jsonl, .jsonl.gz), Parquet, CSV/TSV, a directory of .txt files, a
    directory of Parquet or JSONL shards, a Hugging Face dataset saved with save_to_disk,
    or Reuters-21578 SGML (.sgm); several may be given, as paths or URLs (s3://, gs://,
    memory://; see --storage-option). Without INPUT, runs on the bundled demo corpus.
    Without --method, runs rerank on an input of at most 10,000 documents and minhash on
    a larger one (--method auto; the summary says which).

    Outputs are checked before the input is read (format from the extension, directory
    writable, enough free space, no output on an input or on another output), written to
    temporary files beside their targets and renamed into place together at the end: a
    failed or interrupted run leaves all previous files as they were. Exit status: 0 on
    success, 1 on an error, 2 on a usage error, 130 after Ctrl-C, 143 after SIGTERM.

    \b
    Example:
      neardup dedup corpus.jsonl --method minhash --threshold 0.5 \\
          --clusters-out clusters.parquet --out deduped.jsonl
    """
    from rich.console import Console

    console = Console(stderr=True, quiet=opts["quiet"])
    if not inputs:
        inputs = (_demo_corpus(),)
        console.print(f"[dim]{DEMO_HINT} ({inputs[0].name})[/dim]")
    try:
        with spelled_as(spell_flag), termination_as_exception(), warnings_shown(opts["quiet"]):
            check_option_rules({**opts, "inputs": inputs})
            # Placement does not depend on the profile: plan with "clean" until the input
            # has been read (the run's own read, after the outputs are checked).
            method = planning_method(opts["method"])
            planned = _plan(inputs, {**opts, "method": method},
                            "clean" if _reads_profile(opts, method) else opts["profile"])
            if planned.executor == "ray":
                result, write_seconds, hints = _dedup_ray(inputs, opts, planned)
            else:
                result, write_seconds, hints = _dedup(inputs, opts, planned)
    except (KeyboardInterrupt, Terminated) as stop:
        exit_for_signal(stop, NOTHING_WRITTEN)
    except (NeardupError, ValueError, ImportError) as exc:  # ImportError: a missing extra
        raise click.ClickException(cli_message(exc)) from exc
    except RecursionError as exc:  # data nested deeper than Python's recursion limit
        listed = ", ".join(os.fspath(p) for p in inputs)
        raise click.ClickException(
            f"{listed}: a record holds values nested too deeply to process ({exc}); no "
            "output was written, previous files are as they were."
        ) from exc
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise click.ClickException(
            f"{where}{exc.strerror or exc}; no output was written, previous files are as they "
            "were."
        ) from exc
    if not opts["quiet"]:
        _print_summary(result, hints, Console(), {"write": write_seconds} if write_seconds else {},
                       opts["engine"])


# Output options' destinations -> the plan's output names.
_OUTPUT_NAMES = {"clusters_out": "clusters", "pairs_out": "pairs", "out": "out",
                 "report": "report", "html": "html"}


def _plan(inputs: tuple[Path, ...], opts: dict[str, Any], profile: str) -> Plan:
    """The run's :class:`~neardup.plan.Plan` from the options and the resolved
    ``profile``: method, clustering, executor, budget, keep policy and outputs; a usage
    error when the executor cannot run it, or when an option would be ignored by the stage
    it picks."""
    method_obj = make_method(opts["method"], **method_params_from_options(
        opts["method"], {**opts, "profile": profile}, seed=opts["seed"]))
    cluster = cluster_config_from_options(opts, seed=opts["seed"])
    budget = Budget(work_dir=None if opts["work_dir"] is None else str(opts["work_dir"]),
                    memory_limit=opts["memory_limit"], partitions=opts["partitions"],
                    resume=opts["resume"], ray_address=opts["ray_address"],
                    ray_shard_rows=opts["ray_shard_rows"])
    outputs = tuple(name for key, name in _OUTPUT_NAMES.items() if opts[key] is not None)
    if opts["pairs_out"] is not None and opts["engine"] != "ray":
        outputs += ("pair_types",)
    spec = RunSpec(method_obj, cluster, opts["engine"], budget,
                   keep_policy_from_options(opts, inputs), outputs)
    planned = plan(spec)
    check_option_rules(opts, method=method_obj, algorithm=planned.cluster.algorithm)
    try:
        return require(planned, "dedup")
    except Unsupported as exc:
        raise click.UsageError(exc.render("--")) from None


def _dedup(inputs: tuple[Path, ...], opts: dict[str, Any],
           planned: Plan) -> tuple[Result, float, list[str]]:
    """The run itself on this machine (memory, local): outputs checked first, then read,
    cluster, write."""
    from neardup import faults
    from neardup.io import read_corpus

    method_obj, cluster, keep = planned.spec.method, planned.cluster, planned.spec.keep
    reader = reader_config_from_options(opts)
    progress = False if opts["quiet"] else opts["progress"]
    rereads = _second_readers(opts)
    _refuse_single_read_inputs(inputs, rereads + _keep_readers(opts))
    outputs = _output_set(inputs, opts)
    _refuse_work_dir_files(opts)
    with outputs:  # every output checked and its temporary file created, or an error
        faults.checkpoint("checked")
        # The outputs that read the input again take its documents by position: the
        # inputs' identity and texts are recorded now and checked before and during.
        # --report records them too, for `neardup report` to check the corpus it is given.
        watch = InputWatch(inputs, reader) if rereads or opts["report"] is not None else None
        # Pair types need a second read of the paired documents: only when pairs are written.
        reread = None
        if "pair_types" in planned.spec.outputs:
            def reread():
                watch.check("--pairs-out (the pair types)")
                return watch.second_batches(read_corpus(list(inputs), reader),
                                            "--pairs-out (the pair types)")
        batches = read_corpus(list(inputs), reader)
        if watch is not None:
            batches = watch.first_read(batches, per_batch=reread is not None)
        batches = _killing_after_first(batches)
        method_choice, choice, planned, batches = _chosen(inputs, opts, planned, batches)
        method_obj, cluster = planned.spec.method, planned.cluster
        sample: list[str] = []
        batches = _sampling(batches, sample)
        result = run(batches, method_obj, cluster=cluster, keep=keep,
                     keep_values=keep_values_from_options(keep, inputs, reader), progress=progress,
                     reread=reread, engine=planned.executor,
                     corpus_stage=corpus_stage_from_options(opts, inputs),
                     input_identity=input_identity(inputs, reader.params(),
                                                   reader.storage_options))
        faults.checkpoint("clustered")
        result.params.update({**method_choice.run_params(), **choice.run_params()})
        noise = noise_shares(sample) if _clean_default(method_obj) and not choice.chosen else None
        hints = _hints(result.params.get("cluster", {}), result.has_dates, method_obj, noise)
        start = time.perf_counter()
        _write_outputs(result, method_obj, inputs, reader, opts, outputs, watch, hints)
        if rereads:
            watch.check(" and ".join(rereads))
        faults.checkpoint("written")
        outputs.commit()
        seconds = time.perf_counter() - start if len(outputs) else 0.0
    faults.checkpoint("committed")
    return result, seconds, hints


def _dedup_ray(inputs: tuple[Path, ...], opts: dict[str, Any],
               planned: Plan) -> tuple[dict[str, Any], float, list[str]]:
    """``--engine ray``: the workers read the inputs and write --clusters-out, --pairs-out
    and --out (directories of Parquet files); the driver holds per-duplicate integers
    only, and writes --report and --html through the same :class:`OutputSet` and report
    builder as the other engines. --html needs every document's cluster on the driver
    (as the HTML report of any engine does): only then are they collected into a
    :class:`Result`."""
    from neardup.engine.ray import RayInputs, RayRun, connect, write_outputs
    from neardup.io.locations import storage_env
    from neardup.io.outputs import OutputDirectory

    method_obj, cluster, keep = planned.spec.method, planned.cluster, planned.spec.keep
    _refuse_files_for_directories(opts)
    _refuse_single_read_inputs(inputs, (["--html"] if opts["html"] is not None else [])
                               + _keep_readers(opts))
    reader = reader_config_from_options(opts)
    progress = False if opts["quiet"] else opts["progress"]
    # Outputs on object stores: the bucket and the credential checked before any work.
    storage = opts.get("storage_options")
    for flag, key in _OUTPUTS[:3]:
        if opts[key] is not None:
            probe = OutputDirectory(flag, opts[key], storage)
            probe.prepare()
            probe.discard()
    outputs = _output_set(inputs, {**opts, "clusters_out": None, "pairs_out": None, "out": None})
    # The workers read the input; the driver reads the first documents to choose.
    from neardup.io import read_corpus

    method_choice, choice, planned, _ = _chosen(inputs, opts, planned,
                                                read_corpus(list(inputs), reader))
    method_obj, cluster, keep = planned.spec.method, planned.cluster, planned.spec.keep
    run = RayRun(RayInputs(tuple(str(p) for p in inputs), reader), method_obj,
                 config=planned.spec.budget.ray_config(), time_window_hours=cluster.time_window_hours,
                 progress=progress, every_edge=planned.every_edge)
    # The storage libraries' settings reach the workers with the job (gs:// on Ray); -q
    # silences Ray's own warnings too (its logger's level).
    connect(run.config.address, env=storage_env(),
            **({"logging_level": "ERROR"} if opts["quiet"] else {}))
    with outputs:
        run.execute()
        start = time.perf_counter()
        keep_values = keep_values_from_options(keep, inputs, reader)
        summary = write_outputs(run, clusters_out=opts["clusters_out"],
                                pairs_out=opts["pairs_out"], out=opts["out"],
                                max_cluster_size=cluster.max_cluster_size,
                                oversized=cluster.oversized, keep=keep,
                                algorithm=cluster.algorithm, resolution=cluster.resolution,
                                seed=cluster.seed, linkage=cluster.linkage,
                                distance_threshold=cluster.distance_threshold, storage_options=storage,
                                keep_values=keep_values, annotate=opts["annotate"])
        result = None
        if "--html" in outputs:  # the report page reads every document's cluster
            result = result_from_stage(run.stage_output(), method_obj, cluster, keep, run.timer,
                                       engine="ray", keep_values=keep_values)
        timings = {**run.timer.seconds, "write": time.perf_counter() - start}
        params = {"method": method_obj.get_params(), "cluster": cluster.get_params(),
                  "keep": keep.name, "engine": "ray", "corpus_stage": run.stats}
        params.update({**method_choice.run_params(), **choice.run_params()})
        record = _run_record(method_obj.name, params, method_obj)
        hints = _hints(cluster.get_params(), run.has_dates, method_obj)
        if "--report" in outputs:
            templates = (result.template_clusters() if result is not None
                         else _directory_templates(opts["clusters_out"], storage)
                         if summary["template_documents"] else [])
            outputs.write_text("--report", _report_text(summary, record, timings, inputs,
                                                        templates, hints, reader, run.input_texts))
        if "--html" in outputs:
            from neardup.report import write_report

            write_report(outputs.temporary("--html"), result, list(inputs), reader)
        outputs.commit()
    return ({**summary, "_timings": timings, "_params": params, "_method": method_obj.name},
            0.0, hints)


def _refuse_files_for_directories(opts: dict[str, Any]) -> None:
    """UsageError for an output that --engine ray writes as a directory but that names a
    file of another format."""
    from pathlib import PurePosixPath

    for name in ("clusters_out", "pairs_out", "out"):
        path = opts[name]
        suffix = PurePosixPath(os.fspath(path)).suffix if path is not None else ""
        if suffix and suffix.lower() != ".parquet":
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(
                f"{flag} {path}: with --engine ray the output is a directory of Parquet files "
                f"written by the workers; give a directory path (e.g. "
                f"{os.fspath(path)[:-len(suffix)]})."
            )


def _directory_templates(clusters_out: Any, storage: dict[str, Any] | None) -> list[dict] | None:
    """The template clusters of a Ray run, read from its --clusters-out directory (only
    the flagged rows); None when the run wrote no clusters to read them from."""
    if clusters_out is None:
        return None
    import pyarrow.dataset as ds

    from neardup.io.locations import locate

    location = locate(clusters_out, storage)
    if location.local:
        dataset = ds.dataset(location.path, format="parquet")
    else:
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        dataset = ds.dataset(location.path, format="parquet",
                             filesystem=PyFileSystem(FSSpecHandler(location.fs)))
    flagged = dataset.to_table(columns=["id", "cluster"], filter=ds.field("template"))
    return template_clusters(np.asarray(flagged.column("id").to_pylist(), object),
                             flagged.column("cluster").to_numpy())


def _run_record(method: str, params: dict[str, Any], method_obj: Any) -> dict[str, Any]:
    """Method, parameters (LSH bands and rows as used, not as given) and neardup version."""
    import copy

    from neardup._version import __version__

    params = copy.deepcopy(params)
    params["method"].update(method_obj.derived_params())
    return {"method": method, "params": params, "neardup_version": __version__}


def _metadata(record: dict[str, Any]) -> dict[bytes, bytes]:
    return {b"neardup": json.dumps(record, sort_keys=True, default=str).encode()}


def _report_text(summary: dict[str, Any], record: dict[str, Any], timings: dict[str, float],
                 inputs: tuple[Path, ...], templates: list[dict] | None,
                 hints: list[str], reader: Any, input_texts: list[dict]) -> str:
    """The --report JSON of a run on any engine: one set of keys. ``input_identity``
    (:func:`~neardup.io.identity.reading_digest`) and
    ``input_texts`` (what the first read found in each input, or on Ray in each shard:
    ``source``, ``first`` row, ``documents``, ``digest``; empty for a resumed run) let
    `neardup report` tell whether the corpus it is given is the one the run read."""
    report = {"summary": summary, **record, "timings_seconds": timings,
              "inputs": [os.fspath(p) for p in inputs], "template_clusters": templates,
              "hints": hints,
              "input_identity": reading_digest(inputs, reader),
              "input_texts": input_texts}
    return json.dumps(report, indent=2, sort_keys=True, default=str) + "\n"


def _as_text(records: Iterator[dict], field: str, warned: list[bool]) -> Iterator[dict]:
    """Records with a bytes ``field`` decoded as UTF-8 (the reader already checked it)."""
    for record in records:
        value = record.get(field)
        if isinstance(value, (bytes, bytearray)):
            if not warned[0]:
                warned[0] = True
                warnings.warn(f"--out: the text field {field!r} holds bytes in the input; it "
                              "is written as UTF-8 text.", UserWarning, stacklevel=2)
            record = {**record, field: bytes(value).decode("utf-8", "replace")}
        yield record


def _refuse_single_read_inputs(inputs: tuple[Path, ...], rereads: list[str]) -> None:
    """refuse_single_read_inputs when an output (``rereads``: its flags) reads INPUT again."""
    if rereads:
        refuse_single_read_inputs(inputs, "INPUT", f"{' and '.join(rereads)} "
                                  f"read{'s' if len(rereads) == 1 else ''} the input a second time",
                                  rereads)


def _keep_readers(opts: dict[str, Any]) -> list[str]:
    """The keep options that read the input's records once before the run (flags)."""
    if opts.get("keep_by") is not None:
        return ["--keep-by"]
    return ["--keep most-complete"] if opts.get("keep") == "most-complete" else []


def _second_readers(opts: dict[str, Any]) -> list[str]:
    """The outputs that read the input a second time (flags)."""
    return [flag for flag, key in (("--out", "out"), ("--pairs-out", "pairs_out"),
                                   ("--html", "html")) if opts.get(key) is not None]


def _refuse_work_dir_files(opts: dict[str, Any]) -> None:
    """OutputError, before any work, for an output on a file or directory the work
    directory (``--work-dir``) owns; an output elsewhere in it is fine."""
    from neardup.engine.workdir import owned_by_work_dir
    from neardup.errors import OutputError

    if opts.get("work_dir") is None:
        return
    for flag, key in _OUTPUTS:
        path = opts.get(key)
        if path is None:
            continue
        owned = owned_by_work_dir(opts["work_dir"], path)
        if owned is not None:
            raise OutputError(
                f"{flag}: {os.fspath(path)!r} is {owned} of --work-dir "
                f"{os.fspath(opts['work_dir'])!r}, which the run writes and a later --resume "
                "reads; writing the output there would break both. Give the output another "
                "path (a new name directly in the work directory is fine)."
            )


def _write_outputs(result, method_obj, inputs, reader, opts, outputs, watch,
                   hints) -> None:
    """Write every requested output to its temporary file (renamed later by commit);
    ``hints``: the run's advice, for --report."""
    from neardup.io import parquet_inputs_schema
    from neardup.io.writers import annotated_records, annotation_columns

    record = _run_record(result.method, result.params, method_obj)
    meta = _metadata(record)
    if "--clusters-out" in outputs:
        outputs.write_table("--clusters-out", result.clusters_table().replace_schema_metadata(meta))
    if "--pairs-out" in outputs:
        outputs.write_table("--pairs-out", result.pairs_table().replace_schema_metadata(meta))
    if "--out" in outputs and not opts.get("annotate") and outputs.kind("--out") == "parquet" \
            and (schema := parquet_inputs_schema(list(inputs), reader)) is not None:
        # Parquet in, Parquet out: the kept rows are taken from Arrow batches, never made
        # Python objects, and keep their column types.
        outputs.write_batches("--out", schema, kept_parquet_batches(watch, result.representative,
                                                                    "--out"))
    elif "--out" in outputs:
        keep = result.representative
        source = watch.second_read_records("--out", len(keep))
        if opts.get("annotate"):  # every record, marked (dolma's way)
            columns = annotation_columns(result.clusters, result.cluster_size, keep,
                                         result.duplicate_of())
            records = annotated_records(source, columns)
        else:
            records = (rec for rec, kept in zip(source, keep, strict=True) if kept)
        if outputs.kind("--out") != "parquet":  # Parquet keeps a binary column binary
            records = _as_text(records, reader.text_field, [False])
        outputs.write_records("--out", records)
    if "--report" in outputs:
        outputs.write_text("--report", _report_text(
            result.summary(), record, result.timings, inputs, result.template_clusters(),
            hints, reader, watch.recorded_texts(result.n_docs) if watch is not None else []))
    if "--html" in outputs:
        from neardup.report import write_report

        if watch is not None:
            watch.check("--html")
        write_report(outputs.temporary("--html"), result, list(inputs), reader)
