"""The one-call Python API: ``neardup.dedup(texts_or_records, method=..., **params)``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.errors import InputError, ParameterError, check_int
from neardup.graph.keep import KeepPolicy, record_values, table_values
from neardup.io import as_datetime64, field_epoch_seconds
from neardup.io.batch import DocumentBatch
from neardup.methods import make_method, method_parameters
from neardup.engine import parse_memory
from neardup.params import (
    DIRECT_METHOD_PARAMS,
    RENAMED,
    check_rules,
    check_value,
    group,
)
from neardup.pipeline import ClusterConfig, Result, run
from neardup.plan import Budget, RunSpec, plan, require
from neardup.method_choice import AUTO, planning_method
from neardup.method_choice import choose_from_batches as choose_method_from_batches
from neardup.profiles import choose_from_batches, profile_settings

__all__ = ["dedup"]

#: The clustering keywords of ``**params`` (neardup.params declares them).
CLUSTER_OPTION_NAMES = frozenset(p.name for p in group("cluster"))


def _record_date(item: Any, row: int, date_field: str) -> int | None:
    if not isinstance(item, Mapping):
        raise InputError(
            f"dedup: item {row} must be a mapping with a {date_field!r} field when "
            f"date_field is given; got {type(item).__name__}."
        )
    return field_epoch_seconds(item, date_field, f"dedup: record {row}")


def as_arrow_table(data: Any) -> pa.Table | None:
    """``data`` as a pyarrow Table if it is a table-like object (a pyarrow Table or
    RecordBatch, a pandas or polars DataFrame, or any object exporting an Arrow stream
    and having ``columns``), else None. Conversion failures are InputErrors."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    package = type(data).__module__.partition(".")[0]
    if not hasattr(data, "columns"):  # a pandas Series or polars Series is a sequence
        return None
    try:
        if package == "pandas":
            return pa.Table.from_pandas(data, preserve_index=False)
        if package == "polars":
            return data.to_arrow()
        if hasattr(data, "__arrow_c_stream__"):
            return pa.table(data)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise InputError(
            f"dedup: cannot read the {type(data).__name__} as an Arrow table ({exc}). Give "
            "every column one type (texts as strings)."
        ) from None
    return None


def _column(table: pa.Table, field: str, what: str, name: str) -> pa.ChunkedArray:
    if field not in table.column_names:
        listed = ", ".join(repr(c) for c in table.column_names) or "none"
        raise InputError(
            f"dedup: the table has no {what} column {field!r}; its columns are {listed}. "
            f"Pass {name}= to name the right one."
        )
    return table.column(field)


def _table_batches(
    table: pa.Table,
    text_field: str,
    id_field: str | None,
    batch_size: int,
    date_field: str | None = None,
    offset: int = 0,
) -> Iterator[DocumentBatch]:
    """Batches of a table's rows by column name; no Python object per cell but the texts.
    ``offset``: the position of the table's first row in the corpus (a streamed part)."""
    import pyarrow.compute as pc

    texts = _column(table, text_field, "text", "text_field")
    kind = texts.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        try:
            texts = pc.cast(texts, pa.large_string())  # validates UTF-8
        except pa.ArrowInvalid:
            raise InputError(
                f"dedup: text column {text_field!r} holds bytes that are not valid UTF-8."
            ) from None
    elif not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
              or pa.types.is_string_view(kind)):
        raise InputError(
            f"dedup: text column {text_field!r} must hold strings; it holds {kind}. Convert "
            "it to strings (an empty string for an empty document)."
        )
    if texts.null_count:
        row = int(pc.index(pc.is_null(texts), True).as_py())
        raise InputError(
            f"dedup: text column {text_field!r} is null in row {row} (0-based); store an "
            "empty string for an empty document."
        )
    n = table.num_rows
    if id_field is not None:
        ids = _column(table, id_field, "id", "id_field")
        if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type)
                or pa.types.is_integer(ids.type)) or ids.null_count:
            raise InputError(
                f"dedup: id column {id_field!r} must hold strings or integers without nulls; "
                f"it holds {ids.type} ({ids.null_count} null)."
            )
        ids = pc.cast(ids, pa.string())
        if pc.count_distinct(ids).as_py() != n:
            counts = pc.value_counts(ids)
            repeated = counts.filter(pc.greater(counts.field("counts"), 1))[0]["values"]
            raise _duplicate_id(repeated.as_py(), id_field)
    else:
        ids = pa.array(np.arange(offset, offset + n).astype(str).astype(object), pa.string())
    dates = None
    if date_field is not None:
        column = _column(table, date_field, "date", "date_field")
        if pa.types.is_timestamp(column.type) or pa.types.is_date(column.type):
            seconds = pc.cast(pc.cast(column, pa.timestamp("s"), safe=False), pa.int64())
            dates = seconds.to_numpy(zero_copy_only=False)
            dates = np.where(pc.is_null(column).to_numpy(zero_copy_only=False),
                             np.datetime64("NaT"), dates.astype("datetime64[s]"))
        else:
            values = column.to_pylist()
            rows = range(n)
            dates = as_datetime64(
                [field_epoch_seconds({date_field: v}, date_field, f"dedup: row {r}")
                 for r, v in zip(rows, values)]
            )  # fmt: skip
        dates = np.asarray(dates, "datetime64[s]")
    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        yield DocumentBatch(
            ids=ids.slice(start, stop - start).to_pylist(),
            texts=texts.slice(start, stop - start).to_pylist(),
            dates=None if dates is None else dates[start:stop],
            source="<memory>",
            rows=np.arange(offset + start, offset + stop, dtype=np.int64),
        )


def _duplicate_id(doc_id: Any, id_field: str) -> InputError:
    return InputError(f"dedup: duplicate id {doc_id!r} in column {id_field!r}; ids must be "
                      "unique (omit id_field to use row numbers).")


def _streamed_batches(
    data: Any,
    text_field: str,
    id_field: str | None,
    batch_size: int,
    date_field: str | None = None,
) -> Iterator[DocumentBatch]:
    """Batches of a ``datasets.IterableDataset``, streamed as Arrow tables: one part in
    memory at a time, ids checked for uniqueness across parts (an
    :class:`~neardup.io.idset.IdSet`, about ``len(id) + 24`` bytes per id)."""
    from neardup.io.hfdatasets import dataset_tables

    seen = None
    if id_field is not None:
        from neardup.io.idset import IdSet

        seen = IdSet()
    offset = 0
    for table in dataset_tables(data, batch_size):
        for batch in _table_batches(table, text_field, id_field, batch_size, date_field, offset):
            if seen is not None and id_field is not None:
                repeat = seen.add(batch.ids, batch.rows)
                if repeat is not None:
                    raise _duplicate_id(batch.ids[repeat[0]], id_field)
            yield batch
        offset += table.num_rows


def _in_memory_batches(
    items: Sequence[Any],
    text_field: str,
    id_field: str | None,
    batch_size: int,
    date_field: str | None = None,
) -> Iterator[DocumentBatch]:
    seen: dict[str, int] = {}
    dated = date_field is None
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        texts: list[str] = []
        ids: list[str] = []
        seconds: list[int | None] = []
        for offset, item in enumerate(chunk):
            row = start + offset
            if isinstance(item, str):
                text, doc_id = item, None
            elif isinstance(item, Mapping):
                if text_field not in item:
                    raise InputError(
                        f"dedup: record {row} has no text field {text_field!r}; its fields are "
                        f"{sorted(map(str, item))}. Pass text_field= to name the right one."
                    )
                text = item[text_field]
                doc_id = item.get(id_field) if id_field is not None else None
                if id_field is not None and id_field not in item:
                    raise InputError(f"dedup: record {row} has no id field {id_field!r}.")
            else:
                raise InputError(
                    f"dedup: item {row} must be a str or a mapping with a {text_field!r} "
                    f"field; got {type(item).__name__}."
                )
            if not isinstance(text, str):
                raise InputError(
                    f"dedup: record {row} field {text_field!r} must be a string; "
                    f"got {type(text).__name__}: {text!r:.60}."
                )
            doc_id = str(row) if doc_id is None else str(doc_id)
            if id_field is not None:
                if doc_id in seen:
                    raise InputError(
                        f"dedup: duplicate id {doc_id!r} in records {seen[doc_id]} and {row}; "
                        "ids must be unique (omit id_field to use row numbers)."
                    )
                seen[doc_id] = row
            texts.append(text)
            ids.append(doc_id)
            if date_field is not None:
                seconds.append(_record_date(item, row, date_field))
                dated = dated or date_field in item
        rows = np.arange(start, start + len(chunk), dtype=np.int64)
        dates = as_datetime64(seconds) if date_field is not None else None
        yield DocumentBatch(ids=ids, texts=texts, dates=dates, source="<memory>", rows=rows)
    if not dated and items:
        raise InputError(
            f"dedup: no record has the date field {date_field!r}, so every date would be "
            "unknown. Pass date_field= the field that holds the date, or leave it out."
        )


def _refuse_renamed(params: dict[str, Any], own: list[str]) -> None:
    """ParameterError for an old spelling of a run parameter, naming the one to use."""
    for name in params:
        if name in RENAMED and name not in own:
            raise ParameterError("dedup", name, f"spelled {RENAMED[name]}=", params[name],
                                 f"The clustering parameters have one name everywhere; pass "
                                 f"{RENAMED[name]}={params[name]!r}.")


def dedup(
    texts_or_records: Sequence[str] | Sequence[Mapping[str, Any]] | Any,
    method: str = "auto",
    *,
    text_field: str = "text",
    id_field: str | None = None,
    date_field: str | None = None,
    keep: str | None = None,
    keep_by: str | None = None,
    batch_size: int = 10_000,
    progress: bool | None = False,
    pair_types: bool = True,
    engine: str = "local",
    work_dir: str | None = None,
    memory_limit: int | str | None = None,
    partitions: int | None = None,
    resume: bool = False,
    ray_address: str | None = None,
    **params: Any,
) -> Result:
    """Find near-duplicates in an in-memory corpus and cluster them.

    Parameters
    ----------
    texts_or_records : sequence of str, sequence of mappings, a table, or a dataset
        Texts; or records (mappings) with a text field; or a table whose columns are
        named by ``text_field``/``id_field``/``date_field``: a pyarrow Table or
        RecordBatch, a pandas or polars DataFrame (read through Arrow, no copy per cell
        but the texts). A text column must hold strings (or UTF-8 bytes) without nulls.
        A Hugging Face ``datasets.Dataset`` is read as its Arrow table (memory-mapped, not
        copied, unless ``select``/``shuffle``/``filter`` left an indices mapping); a
        ``datasets.IterableDataset`` is streamed in Arrow batches of ``batch_size`` (and
        iterated a second time for the pair types). Nothing is downloaded: load or
        stream the dataset first (docs/storage.md). Files and URLs are read with
        :func:`neardup.io.read_corpus` (``ReaderConfig(storage_options=...)``).
    method : str, default "auto"
        "auto", or one of ``neardup.METHODS`` ("exact", "ngram", "minhash", "simhash",
        "rerank", ...). "auto" runs "rerank" (the most accurate) when the input holds at
        most 10,000 documents and 50 million characters, "minhash" otherwise
        (:mod:`neardup.method_choice`; ``Result.params["method_auto"]`` records the
        choice). A method parameter (``threshold=``, ...) needs the method named.
    text_field : str, default "text"
        Field holding the text, for mappings.
    id_field : str or None, default None
        Field holding a unique id; None uses the row number ("0", "1", ...).
    date_field : str or None, default None
        Field holding each record's date (ISO 8601 string, datetime, epoch seconds;
        missing values allowed), for ``time_window_hours`` and the ``sanderson`` method.
    keep : {"longest", "first", "last", "earliest", "latest", "most-complete"} or None
        Which member of each cluster is kept (``Result.representative``); None: "longest".
        "earliest"/"latest" read ``date_field``; "most-complete" keeps the record with
        the most non-empty fields, then the longest. Ties: first in input order. See
        :mod:`neardup.graph.keep` (docs/policies.md).
    keep_by : str or None, default None
        Instead of ``keep``: keep the member with the largest value of this numeric field
        (members without one last; ties: first in input order).
    batch_size : int, default 10000
    progress : bool or None, default False
    pair_types : bool, default True
        Give every pair its duplicate type (exact, expanded, corrected, template, near) in
        ``Result.pair_types``; costs a second look at the paired documents' texts.
    engine : {"local", "memory", "ray"}, default "local"
        "local" runs exact, minhash, simhash, ngram, spotsigs, rerank, wminhash and
        sanderson (clustered by components; wminhash and sanderson after a statistics
        pass over the corpus; minhash with ``verify="exact"`` stores its shingle sets in
        the work directory; other methods and settings, such as rerank over RETSim
        candidates, fall back to memory, recorded as ``engine_fallback``) through the
        out-of-core corpus stage (:mod:`neardup.engine`): memory bounded by
        ``memory_limit`` plus a few bytes per document, and ``Result.pairs`` holds the
        verified edges that joined each cluster; retsim, retsim-partial and biencoder
        (flat or auto index) through the out-of-core vector stage
        (:mod:`neardup.engine.vectors`: embeddings on disk, exact search shard by shard).
        "memory" keeps every candidate pair in memory (the only engine for the other
        methods and clusterings). "ray" runs the
        same stage as "local" on a Ray cluster (``pip install 'neardup[ray]'``; see
        docs/scale-out.md): same clusters; the documents are shipped to the cluster batch
        by batch, and pair types are not computed (``pair_types`` is ignored).
    work_dir : path or None, default None
        Where the corpus stage spills (None: a temporary directory, removed at the end).
    memory_limit : int (bytes), str ("4GB") or None, default None
        Budget of the corpus stage's buffers; None: an eighth of physical memory, at most 1 GiB.
    partitions : int or None, default None
        Key partitions of the corpus stage (None: from the corpus size).
    resume : bool, default False
        Continue a killed run from the completed stages in ``work_dir``.
    ray_address : str or None, default None
        For ``engine="ray"``: the cluster to connect to (``"auto"``, ``"host:6379"``,
        ``"ray://host:10001"``); None uses the connected cluster, ``RAY_ADDRESS``, or
        starts a local one. ``partitions`` sets the Ray engine's key partitions too.
    **params
        Method parameters (e.g. ``threshold=0.5, num_perm=128`` for "minhash"; see each
        method class) and clustering parameters: ``cluster`` ("auto", the default: the
        method's recommended clustering, Leiden at resolution 0.4 for "rerank" with its
        shipped verifier, else "components"; or "components", "leiden", "louvain",
        "hac"), ``max_cluster_size``, ``oversized`` ("flag", "split"),
        ``resolution``, ``linkage`` and ``distance_threshold`` (for "hac"), and
        ``time_window_hours`` (do not merge documents dated further apart; needs
        ``date_field``; "sanderson" takes it as its own parameter).
        ``seed`` seeds both the method and community detection. ``profile``
        ("clean", the default, or "noisy"): "noisy" runs "ngram" and "minhash" on
        character 5-grams at Jaccard 0.3 (for OCR and other noisy text; see
        :mod:`neardup.profiles`); ``threshold`` and ``shingle`` given win over it. Each name is declared
        once in :mod:`neardup.params`, with the rules the command line applies: a
        parameter the run would ignore (``linkage`` without ``cluster="hac"``,
        ``work_dir`` with ``engine="memory"``, ...) raises
        :class:`~neardup.params.RuleError` before any work, and an engine that cannot
        run the method raises :class:`~neardup.plan.Unsupported` with the engines that can.

    Returns
    -------
    Result
        ``.clusters`` aligned with the input order, ``.pairs``, ``.representatives``, ...

    Examples
    --------
    >>> import neardup
    >>> r = neardup.dedup(["the cat sat on the mat", "the cat sat on the mat!", "a dog"],
    ...                   method="exact")
    >>> r.clusters.tolist()
    [0, 0, 1]
    """
    from neardup.io.hfdatasets import dataset_kind, dataset_table

    hugging_face = dataset_kind(texts_or_records)
    if isinstance(texts_or_records, (str, bytes)):
        raise InputError("dedup: pass a sequence of texts, not a single string.")
    if isinstance(texts_or_records, Mapping) and hugging_face is None:
        raise InputError(
            "dedup: pass a sequence of texts or records, or a table; got a single "
            f"{type(texts_or_records).__name__} (put it in a list for one record)."
        )
    streamed = hugging_face == "iterable"
    table = (dataset_table(texts_or_records) if hugging_face in ("dataset", "dict")
             else None if streamed else as_arrow_table(texts_or_records))
    check_int("dedup", "batch_size", batch_size, low=1)
    policy = KeepPolicy.make("dedup", keep, keep_by)
    if policy.needs_dates and date_field is None:
        raise ParameterError("dedup", "keep", "a rule that reads no date without date_field "
                             "('longest', 'first', 'last' or 'most-complete')", keep,
                             "Pass date_field (the field holding each record's date).")
    check_value("dedup", "method", method)
    # A method's own parameter wins (sanderson's window); "auto" takes none (below).
    own: list[str] = [] if method == AUTO else list(method_parameters(method))
    _refuse_renamed(params, own)
    cluster_kwargs = {
        k: params.pop(k) for k in list(params) if k in CLUSTER_OPTION_NAMES and k not in own
    }
    seed = params.get("seed", 0)
    profile = params.pop("profile", "auto")
    settings = {"engine": engine, "partitions": partitions, "seed": seed, "cluster": "auto",
                "profile": profile, **cluster_kwargs}
    for name, value in settings.items():
        check_value("dedup", name, value)
    # The schema's rules, as the command line applies them: a parameter the run would
    # ignore is an error, before any work (and again once the stage is known).
    known = {"method": method, "date_field": date_field, "work_dir": work_dir,
             "memory_limit": memory_limit, "resume": resume, "ray_address": ray_address,
             **settings, **{k: v for k, v in params.items() if k in DIRECT_METHOD_PARAMS}}
    named = {"date_field", "work_dir", "memory_limit", "resume", "ray_address", "partitions",
             "profile"}
    given = {k for k in named if known[k] not in (None, False)} | set(cluster_kwargs) | set(params)
    if profile == "auto":  # the default, whatever the method
        given.discard("profile")
    auto_seed = params.get("seed") if method == AUTO else None
    if "seed" in params and "seed" not in own:
        params.pop("seed")
    check_rules("dedup", known, given)
    if method == AUTO and params:
        name = sorted(params)[0]
        raise ParameterError("dedup", name, "a parameter of a named method", params[name],
                             "method='auto' (the default) chooses rerank or minhash by the "
                             "input's size; name the method this parameter is for, e.g. "
                             "method='minhash'.")
    cluster = ClusterConfig(algorithm=cluster_kwargs.pop("cluster", "auto"), seed=seed,
                            **cluster_kwargs)
    # The profile's settings under the parameters given (a given one wins); "auto" is
    # planned as "clean" until the first documents are read (below).
    first = "clean" if profile == "auto" else profile
    planned_method = planning_method(method)
    method_obj = make_method(planned_method, **_method_kwargs(planned_method, first, params, auto_seed))
    budget = Budget(work_dir=None if work_dir is None else str(work_dir),
                    memory_limit=None if memory_limit is None else parse_memory(memory_limit),
                    partitions=partitions, resume=resume, ray_address=ray_address)
    outputs = ("clusters", "pairs", *(("pair_types",) if pair_types and engine != "ray" else ()))
    planned = require(plan(RunSpec(method_obj, cluster, engine, budget, policy, outputs)),
                      "dedup")
    check_rules("dedup", known, given, method=method_obj, algorithm=planned.cluster.algorithm)
    values = None
    if streamed:
        if policy.needs_values:
            raise ParameterError(
                "dedup", "keep", "a rule that reads no field with a streamed dataset", policy.name,
                "A streamed dataset is read once, and this rule reads every record's fields "
                "before the run; use a Dataset (not streamed), or keep='longest'.")
        data = texts_or_records
        batches = _streamed_batches(data, text_field, id_field, batch_size, date_field)
        again = lambda: _streamed_batches(data, text_field, None, batch_size)  # noqa: E731
        total = None
    elif table is not None:
        batches = _table_batches(table, text_field, id_field, batch_size, date_field)
        again = lambda: _table_batches(table, text_field, None, batch_size)  # noqa: E731
        total = table.num_rows
        values = table_values(table, policy) if policy.needs_values else None
    else:
        items = list(texts_or_records)
        values = record_values(items, policy, len(items)) if policy.needs_values else None
        batches = _in_memory_batches(items, text_field, id_field, batch_size, date_field)
        again = lambda: _in_memory_batches(items, text_field, None, batch_size)  # noqa: E731
        total = len(items)
    # "auto" reads the first documents (of the batches the run reads: a stream once),
    # after every check; the placement does not depend on the profile.
    method_choice, batches = choose_method_from_batches(method, batches,
                                                        memory_limit=budget.memory_limit)
    choice, batches = choose_from_batches(profile, method_choice.name, batches)
    if choice.name != first or method_choice.name != planned_method:
        method_obj = make_method(method_choice.name,
                                 **_method_kwargs(method_choice.name, choice.name, params, auto_seed))
        planned = require(plan(RunSpec(method_obj, cluster, engine, budget, policy, outputs)),
                          "dedup")
    result = run(batches, method_obj, cluster=cluster, keep=policy, keep_values=values,
                 progress=progress, total=total,
                 reread=again if "pair_types" in planned.spec.outputs else None,
                 engine=engine, corpus_stage=budget.corpus_stage(),
                 ray=budget.ray_config() if engine == "ray" else None)
    result.params.update({**method_choice.run_params(), **choice.run_params()})
    return result


def _method_kwargs(method: str, profile: str, params: dict[str, Any],
                   seed: int | None) -> dict[str, Any]:
    """The constructor keywords of ``method``: the resolved ``profile``'s settings under
    the parameters given (a given one wins), and ``seed`` (the one given to a run whose
    method "auto" chose; None: none) when the method takes one."""
    kwargs = {**profile_settings(profile, method), **params}
    if seed is not None and "seed" in method_parameters(method):
        kwargs["seed"] = seed
    return kwargs
