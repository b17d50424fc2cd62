"""How the driver runs and awaits tasks: waiting with a progress bar, unwrapping a
worker's InputError, tracing a task's peak memory, and collecting tables the tasks
left in the object store."""

from __future__ import annotations

import pyarrow as pa

from neardup.errors import InputError


def traced(task):
    """``task`` taking first whether to trace (``RayConfig.trace_memory``), and reporting
    its peak traced allocation in its first output (a dict) as ``peak_bytes`` when it
    does (0 otherwise)."""
    import functools

    @functools.wraps(task)
    def run(trace: bool, *args):
        if not trace:
            out = task(*args)
            out[0]["peak_bytes"] = 0
            return out
        import tracemalloc

        tracemalloc.start()
        try:
            out = task(*args)
            out[0]["peak_bytes"] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return out
    return run


# -- driver ------------------------------------------------------------------------------


def completed(ray, refs: list, advance) -> list:
    """``ray.get(refs)``, calling ``advance(n)`` as tasks finish so that a progress bar
    moves while they run (the driver polls twice a second)."""
    waiting = list(refs)
    while waiting:
        done, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=0.5)
        if done:
            advance(len(done))
    return ray.get(list(refs))


def no_progress(n: int, status: str | None = None) -> None:
    return None


def ray_error(exc: BaseException) -> BaseException:
    """The neardup InputError inside a Ray task failure, as raised in the worker (its
    message names the file and record), or the failure unchanged."""
    seen, stack = set(), [exc]
    while stack:
        error = stack.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        if type(error) is InputError:
            return error
        stack.extend([error.__cause__, error.__context__, getattr(error, "cause", None)])
    return exc


def _project(block: pa.Table, columns: list[str]) -> pa.Table:
    if block.num_rows == 0:
        return pa.table({c: pa.array([], pa.int64()) for c in columns})
    return block.select(columns)


def collect_tables(refs: list, columns: list[str]) -> pa.Table:
    """``columns`` of the tables ``refs`` (None: no table), projected where they live."""
    import ray

    project = ray.remote(_project)
    tables = ray.get([project.remote(ref, columns) for ref in refs])
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return pa.table({c: pa.array([], pa.int64()) for c in columns})
    return pa.concat_tables(tables)
