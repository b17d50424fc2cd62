"""CPU seconds the processes of an idle two-node test cluster (tests/ray_nodes.py) use in a
minute, after four tasks have warmed its workers. Run from the repository root:
.venv/bin/python benchmarks/results/tests/testtime/ray_idle_cpu.py"""
import sys
import time

import psutil
import ray

sys.path.insert(0, ".")  # run from the repository root
from tests.ray_nodes import two_ray_nodes  # noqa: E402

_RAY_PROCESSES = ("ray", "raylet", "gcs_server", "plasma")


def ray_cpu_seconds() -> float:
    """User and system CPU seconds of every Ray process on the machine but this one."""
    me = psutil.Process().pid
    total = 0.0
    for process in psutil.process_iter():
        try:
            if process.pid != me and any(k in " ".join(process.cmdline()) for k in _RAY_PROCESSES):
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:  # ended or hidden meanwhile
            pass
    return total


@ray.remote
def _warm(x):
    import neardup  # noqa: F401 -- the workers import the package, as a test's do

    return x


if __name__ == "__main__":
    with two_ray_nodes():
        ray.get([_warm.remote(i) for i in range(4)])
        time.sleep(5)
        before = ray_cpu_seconds()
        time.sleep(60)
        print("ray processes CPU over 60 s idle:", round(ray_cpu_seconds() - before, 2))
