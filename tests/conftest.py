"""Fixtures shared by every test folder."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path

import pytest

# Under xdist each core already runs a test process: one numba thread and one OpenMP
# (torch) thread per process, as the Ray workers run numba
# (neardup.engine.ray.connection.worker_env). More threads would only spin waiting for
# the cores the other workers hold: on 2 cores a 567-document rerank run took 10.2 s of
# CPU with 2 numba threads and 2.7 s with 1, the same result, and
# tests/embed/test_biencoder.py 33.4 s with torch's default threads and 18.2 s with 1
# (decision 0034). Set before numba and torch are imported (pytest imports this file
# first); a run's own setting wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

# Longest test files first, and `--record-durations` (tests/durations.py); files that -m
# deselects as a whole are not imported (tests/lanes.py).
pytest_plugins = ["tests.durations", "tests.lanes"]

# Texts that stress the binarizer and the model: scripts, sizes around the chunk rules
# (512 per chunk, a last partial chunk of <= 256 characters dropped), odd code points.
_VARIED_TEXTS = (
    "",
    "a",
    "\x00",
    " ",
    "The quick brown fox jumps over the lazy dog.",
    "The quikc brown fox jumsp over the lazy dgo!",
    "东京是日本的首都，也是世界上人口最多的城市之一。",
    "مرحبا بالعالم، هذه جملة عربية للاختبار.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "😀😃😄😁👩‍👩‍👧‍👦🇫🇷🏳️‍🌈",
    "Mixed: naïve café, 北京, Ελληνικά, עברית, हिन्दी, 한국어 — ok?",
    "e\u0301\u0301 combining \u200b\u200d\ufeff zero-width",
    "\x01\x02\x1b[31mcontrol\x7f\x85\u2028\u2029",
    "\ud800 lone surrogate \udfff",
    "z" * 255,
    "y" * 511,
    "x" * 512,  # the reference adds a chunk of pure padding
    "w" * 513,  # remainder 1 is dropped: one chunk
    "v" * 768,  # remainder 256 is dropped
    "u" * 769,  # remainder 257 is padded: two chunks
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 40,  # several chunks
    "\U0010ffff" * 600,  # the largest code point
)


@pytest.fixture(scope="session")
def varied_texts() -> list[str]:
    return list(_VARIED_TEXTS)


class _RayNodes:
    """This test process's Ray cluster: started by the first test that asks, shared by
    the tests after it, and stopped once none of the next tests asks (an idle cluster
    keeps using CPU: its daemons took 4.7 CPU seconds a minute here). The Ray files run
    one after another (tests/durations.py deals them to one run), so a process usually
    starts one cluster; a Ray test after a long gap starts it again."""

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None
        self.info: dict | None = None

    def start(self, marker: Path) -> dict:
        if self.info is None:
            from neardup.engine.ray import worker_runtime_env
            from tests.fault_plugin import RAY_FAULT_ENV, with_plugin
            from tests.ray_nodes import two_ray_nodes

            env = worker_runtime_env()
            env["env_vars"]["PYTHONPATH"] = with_plugin(env["env_vars"]["PYTHONPATH"])
            env["env_vars"][RAY_FAULT_ENV] = str(marker)
            stack = contextlib.ExitStack()
            address = stack.enter_context(two_ray_nodes(env))
            self._stack, self.info = stack, {"address": address, "marker": marker}
        return self.info

    def stop(self) -> None:
        if self._stack is not None:
            stack, self._stack, self.info = self._stack, None, None
            stack.close()


_RAY_NODES = _RayNodes()


@pytest.fixture(scope="session")
def _ray_fault_marker(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fault") / "killed"


@pytest.fixture
def ray_cluster(_ray_fault_marker):
    """The Ray lane's cluster: two nodes of one CPU each (tests/ray_nodes.py), started by
    the first test of a process that asks and shared by the Ray tests that follow it
    (:class:`_RayNodes`), so that each xdist worker starts one cluster, not one per
    module. Its workers import this checkout and load the fault-injection plugin
    (tests/fault_plugin), idle until a test arms it: ``{"address", "marker"}``, the
    cluster's address and the kill-once marker (RAY_FAULT_ENV, neardup.faults.kill_once)."""
    pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")
    return _RAY_NODES.start(_ray_fault_marker)


#: A Ray test this close after another (in the collected order) keeps the cluster up: a
#: restart costs about 10 s, a few tests in between far less than the idle cluster's CPU.
_RAY_LOOKAHEAD = 30
_POSITIONS: dict = {}


def _uses_ray(item) -> bool:
    return "ray_cluster" in getattr(item, "fixturenames", ())


def _ray_test_soon(nextitem) -> bool:
    """True when ``nextitem`` or one of the tests collected just after it uses the
    cluster. The Ray files run one after another, but some of their tests do not use
    it; under xdist a worker may not get every test it looks at, and then the cluster
    stops once those are out of sight (at most 30 tests later)."""
    if nextitem is None:
        return False
    items = nextitem.session.items
    if not _POSITIONS:
        _POSITIONS.update((id(it), k) for k, it in enumerate(items))
    at = _POSITIONS.get(id(nextitem))
    ahead = [nextitem] if at is None else items[at:at + _RAY_LOOKAHEAD]
    return any(_uses_ray(it) for it in ahead)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """Stop the Ray cluster after the last of a run of tests that use it (checked after
    every test while it is up: a test looked ahead to may have gone to another worker)."""
    if _RAY_NODES.info is not None and not _ray_test_soon(nextitem):
        _RAY_NODES.stop()


def pytest_sessionfinish(session):
    _RAY_NODES.stop()


def _train_tiny_verifier(out: Path, *, overlaps_only: bool) -> None:
    from neardup.methods.pair_features import LEXICAL_FEATURES
    from neardup.train.verifier import train_verifier

    spec = importlib.util.spec_from_file_location(
        "rerank_fixtures", Path(__file__).resolve().parent / "train" / "rerank_fixtures.py")
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    features = tuple(f for f in LEXICAL_FEATURES
                     if not overlaps_only or not f.startswith("align_"))
    train_verifier(fixtures.make_corpus(seed=0, split="train"),
                   fixtures.make_corpus(seed=1, split="validation"), output_dir=out,
                   classifier="logistic", features=features, threads=1,
                   candidates="minhash", candidate_params={"threshold": 0.05})


def _trained_once(tmp_path_factory, name: str, *, overlaps_only: bool) -> Path:
    """A tiny verifier trained once per run, not once per xdist worker: the workers share
    their base temporary directory's parent, the first to ask trains under a file lock
    while the other waits, then both read the same directory (tests only read it)."""
    pytest.importorskip("rapidfuzz")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        out = tmp_path_factory.mktemp(name)
        _train_tiny_verifier(out, overlaps_only=overlaps_only)
        return out
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent
    out, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            _train_tiny_verifier(out, overlaps_only=overlaps_only)
            done.touch()
    return out


@pytest.fixture(scope="session")
def tiny_verifier(tmp_path_factory):
    """A small logistic verifier over the lexical pair features (trained in seconds on
    tests/train/rerank_fixtures.py's stories), with MinHash candidates at Jaccard 0.05."""
    return _trained_once(tmp_path_factory, "tiny-verifier", overlaps_only=False)


@pytest.fixture(scope="session")
def tiny_overlap_verifier(tmp_path_factory):
    """tiny_verifier without the two alignment features (shingle overlaps, lengths and
    dates only), for tests that hold one executor's rerank to another's: the texts still
    travel and every pair is still scored from them, at a fraction of the cost (the
    alignments were most of a verifier's time on news texts)."""
    return _trained_once(tmp_path_factory, "tiny-overlap-verifier", overlaps_only=True)
