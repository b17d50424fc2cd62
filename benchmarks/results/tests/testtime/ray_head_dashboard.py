"""A two-node test cluster started as tests/ray_nodes.py starts it, with (``dash``) or
without (``nodash``) ``include_dashboard=False`` in the head node's arguments: the CPU its
processes take to start and run four tasks, then over 30 idle seconds, and whether a
dashboard process runs. Run from the repository root:
.venv/bin/python benchmarks/results/tests/testtime/ray_head_dashboard.py dash|nodash"""
import sys
import time

import psutil
import ray
from ray.cluster_utils import Cluster

sys.path.insert(0, ".")  # run from the repository root
from neardup.engine.ray import worker_runtime_env  # noqa: E402
from ray_idle_cpu import ray_cpu_seconds  # noqa: E402 -- this script's folder is on the path


@ray.remote
def _warm(x):
    import neardup  # noqa: F401 -- the workers import the package

    return x


if __name__ == "__main__":
    with_dashboard = sys.argv[1] == "dash"
    started = time.time()
    head = {"num_cpus": 1, "object_store_memory": 200 << 20}
    if not with_dashboard:
        head["include_dashboard"] = False
    nodes = Cluster(initialize_head=True, head_node_args=head)
    nodes.add_node(num_cpus=1, object_store_memory=200 << 20)
    ray.init(address=nodes.address, runtime_env=worker_runtime_env(), include_dashboard=False,
             logging_level="WARNING", log_to_driver=False)
    nodes.wait_for_nodes()
    ray.get([_warm.remote(i) for i in range(4)])
    print(sys.argv[1], "start+warm wall", round(time.time() - started, 1), "ray cpu", round(ray_cpu_seconds(), 1))
    time.sleep(3)
    before = ray_cpu_seconds()
    time.sleep(30)
    print("idle 30s cpu", round(ray_cpu_seconds() - before, 2))
    print("dashboard processes:", [" ".join(p.cmdline())[:90] for p in psutil.process_iter()
                                   if "dashboard/dashboard.py" in " ".join(p.cmdline())])
    ray.shutdown()
    nodes.shutdown()
