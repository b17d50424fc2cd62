"""Reaching a Ray cluster: importing Ray, connecting (or starting a local cluster) with
the workers' environment, and :class:`RayConfig`, how the Ray executor runs."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neardup.errors import check_int

INSTALL_HINT = "pip install 'neardup[ray]'"


def import_ray():
    """The ``ray`` module, or an ImportError naming the extra to install. (Ray Data is not
    imported: the engine runs plain tasks, and importing it costs CPU in every process;
docs/decisions/0005-ray-engine-on-tasks.md.)"""
    try:
        import ray
    except ImportError:
        raise ImportError(
            f"engine='ray' needs Ray, which is not installed. Install it with {INSTALL_HINT} "
            "(or use engine='local')."
        ) from None
    return ray


#: Connecting to an existing cluster: set to ``0`` to send no ``runtime_env`` (the nodes
#: already import neardup and were started with ``NUMBA_NUM_THREADS=1``), which saves each
#: node its runtime-env set-up and the worker processes Ray would start for the job's own
#: environment (docs/scale-out.md, "Ray's own costs").
RUNTIME_ENV_ENV = "NEARDUP_RAY_RUNTIME_ENV"


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables the workers need: this copy of neardup's parent directory
    first on their PYTHONPATH (workers on other machines need neardup installed at the
    same version, or the same path on a shared file system), one numba thread per task
    (Ray runs one task per CPU; more threads per task only oversubscribe the node's
    cores), then ``extra``."""
    root = str(Path(__file__).resolve().parents[3])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "NUMBA_NUM_THREADS": "1", **(extra or {})}


def worker_runtime_env(extra: dict[str, str] | None = None) -> dict[str, Any]:
    """:func:`worker_env` as a Ray ``runtime_env`` (for a cluster started elsewhere)."""
    return {"env_vars": worker_env(extra)}


def connect(address: str | None = None, *, env: dict[str, str] | None = None, **init_options: Any) -> None:
    """Connect to the Ray cluster at ``address`` (``"auto"``, ``"ray://host:10001"``,
    ``"host:6379"``), or start a local one when None and ``RAY_ADDRESS`` is unset (never
    joining a cluster that someone else started on this machine unasked).
    Does nothing when Ray is already initialized in this process.

    A local cluster's daemons are started with :func:`worker_env` (and ``env``) in their
    environment, which its workers inherit: no ``runtime_env``, so the workers Ray
    prestarts at node start run the job's tasks (with a ``runtime_env`` they cannot, and
    Ray starts others) and no worker passes through the runtime-env set-up. An existing
    cluster gets them as the job's ``runtime_env`` unless :data:`RUNTIME_ENV_ENV` is
    ``0``. ``init_options`` go to ``ray.init`` (``num_cpus``, ``object_store_memory``
    for a local cluster)."""
    address = address or os.environ.get("RAY_ADDRESS")
    ray = import_ray()
    if ray.is_initialized():
        return
    options = {"include_dashboard": False, "logging_level": "WARNING", "log_to_driver": False, **init_options}
    if address is None:
        # Set in os.environ for the block only: the processes ray.init starts inherit them.
        with _environ(worker_env(env)):
            ray.init(address="local", **options)
        return
    if os.environ.get(RUNTIME_ENV_ENV, "1") != "0":
        options["runtime_env"] = worker_runtime_env(env)
    _check_reachable(address)
    if os.environ.get(AUTH_MODE_ENV) is None and ray_token_available():
        _use_token_authentication()
    try:
        ray.init(address=address, **options)
    except ConnectionError as exc:
        raise ConnectionError(
            f"{str(exc).rstrip('.')}. A cluster that uses token authentication needs its "
            "token here: in ~/.ray/auth_token, or RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH, with "
            f"{AUTH_MODE_ENV}=token") from None


def _use_token_authentication() -> None:
    """Send this machine's token when joining a cluster. `ray start` turns token
    authentication on when it finds a token (Ray's default since 2.5x), and such a
    cluster refuses a client without it; Ray applies the same rule to the clusters it
    starts itself, and a cluster without authentication ignores the token. Ray reads the
    mode once, so it is refreshed as Ray's own start does; without that refresh a later
    local cluster of this process would start in one mode and be joined in the other."""
    os.environ[AUTH_MODE_ENV] = "token"
    try:
        from ray._raylet import Config

        Config.initialize("")
    except (ImportError, AttributeError):  # another Ray: the variable alone
        pass


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """ConnectionError, at once, when nothing answers at a ``host:port`` address (Ray
    itself retries for minutes); other forms (``auto``, ``ray://``) are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(
            f"Cannot reach a Ray cluster at {address} ({exc.strerror or exc}). Check the "
            "address (`ray status` on the head node prints it), or start a cluster there "
            "with `ray start --head`; without --ray-address neardup starts a local one") from None


#: Ray's switch for token authentication (``token`` or ``disabled``).
AUTH_MODE_ENV = "RAY_AUTH_MODE"


def ray_token_available() -> bool:
    """Whether this process has a Ray authentication token where Ray looks for one:
    ``RAY_AUTH_TOKEN``, the file ``RAY_AUTH_TOKEN_PATH`` names, or ``~/.ray/auth_token``."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token"
    return Path(path).is_file()


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``values`` set in ``os.environ`` for the block, then the previous values restored."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass(frozen=True)
class RayConfig:
    """How the Ray engine runs.

    Parameters
    ----------
    address : str or None, default None
        Cluster address (``ray start --head`` prints it; ``"auto"`` finds a local one).
        None: the cluster this process is connected to, else ``RAY_ADDRESS``, else a new
        single-machine cluster.
    partitions : int or None, default None
        Key partitions (groups linked by one task each). None: from the number of
        documents, about 200,000 per partition for methods verifying fixed-width arrays
        (minhash, simhash, exact), 100,000 for set and text methods, at least 8, a power
        of two.
    shard_rows : int, default 25_000
        Parquet files are read in runs of whole row groups of up to this many documents
        (one task each; a larger row group is one task); other formats are read one file
        per task.
    first_wave : int or None, default None
        Key partitions linked in the first wave; then each wave links as many partitions
        as all the earlier ones together (the last one the rest), minus the candidate
        edges between documents the earlier waves already joined. None: a 64th of the
        partitions (at least one). ``partitions``: one wave (every partition verifies
        its candidates on its own, as many times as partitions find the same
        duplicate).
    memory_limit : int or None, default None
        Embedding methods: bytes a search task may use for a query batch's candidates and
        the IVF training sample, as the local stage's ``--memory-limit`` (the same value
        gives the same IVF centroids); rerank over their candidates: a verify partition's
        pairs and texts take at most a quarter of it. None: the local engine's default.
    components_memory : int or None, default None
        Bytes a connected-components task may hold (about 64 per edge end in its range of
        documents): the verified forests are joined into components by ranges of document
        positions, as many ranges (a power of two, at most 4,096) as this budget needs;
        the assign tasks that pick representatives use the same ranges (of component
        roots). None: 1 GiB (one range up to ~8 million forest edges).
    trace_memory : bool, default False
        Benchmarks: the components and assign tasks trace their peak Python/numpy
        allocation (tracemalloc, which slows them) and report it (``peak_bytes``, the
        run's ``peak_task_bytes``); 0 when False.
    """

    address: str | None = None
    partitions: int | None = None
    shard_rows: int = 25_000
    first_wave: int | None = None
    memory_limit: int | None = None
    components_memory: int | None = None
    trace_memory: bool = False

    def __post_init__(self) -> None:
        if self.partitions is not None:
            check_int("RayConfig", "partitions", self.partitions, low=1, high=1 << 16)
        check_int("RayConfig", "shard_rows", self.shard_rows, low=1)
        if self.first_wave is not None:
            check_int("RayConfig", "first_wave", self.first_wave, low=1)
        if self.memory_limit is not None:
            check_int("RayConfig", "memory_limit", self.memory_limit, low=1 << 20)
        if self.components_memory is not None:
            check_int("RayConfig", "components_memory", self.components_memory, low=1 << 10)
        if not isinstance(self.trace_memory, bool):
            raise ValueError(f"RayConfig: parameter 'trace_memory' must be True or False; "
                             f"got {self.trace_memory!r}.")
