"""How the steps of span and substring de-duplication run: in this process, or as Ray
tasks. Both passes are written once, as maps of pure steps over batches, chunks and
partitions; an executor is the map.

An executor is called as ``executor(step, arguments)``: ``arguments`` an iterable of
argument tuples, the result an iterator of ``step(*args)`` in the same order. The driver
keeps the order-dependent work (numbering documents, spilling records, writing files and
outputs), so whichever executor ran the steps, the decisions and outputs are the same
bytes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["Executor", "RayExecutor", "local_executor"]

Executor = Callable[[Callable[..., Any], Iterable[tuple]], Iterator[Any]]


def local_executor(step: Callable[..., Any], arguments: Iterable[tuple]) -> Iterator[Any]:
    """Each step in turn, in this process."""
    for args in arguments:
        yield step(*args)


class RayExecutor:
    """Each step a Ray task (Ray initialized: :func:`neardup.engine.ray.connect`),
    at most ``window`` of them submitted ahead of the one whose result is next (default:
    two per CPU of the cluster), so the arguments and results in flight stay bounded; the
    results come back in submission order. A step's failure is raised as the error the
    step raised, where Ray keeps it."""

    def __init__(self, window: int | None = None) -> None:
        from neardup.engine.ray import import_ray

        self._ray = import_ray()
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        self.window = window or max(2, 2 * cpus)
        self._remote: dict[Callable, Any] = {}

    def __call__(self, step: Callable[..., Any], arguments: Iterable[tuple]) -> Iterator[Any]:
        remote = self._remote.get(step)
        if remote is None:
            remote = self._remote[step] = self._ray.remote(step)
        pending: deque = deque()

        def result():
            try:
                return self._ray.get(pending.popleft())
            except self._ray.exceptions.RayTaskError as exc:
                # The step's own error, worded for the user, not Ray's wrapper around
                # the worker's traceback.
                cause = getattr(exc, "cause", None)
                raise (cause if isinstance(cause, Exception) else exc) from None

        for args in arguments:
            pending.append(remote.remote(*args))
            if len(pending) >= self.window:
                yield result()
        while pending:
            yield result()

    def put(self, value: Any) -> Any:
        """``value`` in the object store once, for many tasks' arguments."""
        return self._ray.put(value)
