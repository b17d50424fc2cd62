"""Cost of the Ray lane's cluster: start two one-CPU nodes, run four trivial tasks; the
CPU of every process started (psutil) and how many Ray workers ran.

python ray_cluster_start.py runtime_env   # as tests/conftest.py starts it
python ray_cluster_start.py environment   # the settings in the nodes' environment, as connect() does
"""
import os
import sys
import time

import psutil
import ray
from ray.cluster_utils import Cluster

from neardup.engine.ray import worker_env


def tree():
    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
            out[p.pid] = (p.name(), " ".join(p.cmdline())[:60], t.user + t.system)
        except psutil.NoSuchProcess:
            pass
    return out


mode = sys.argv[1]
t, c = time.time(), time.process_time()
saved = dict(os.environ)
if mode == "environment":
    os.environ.update(worker_env())
nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 200 << 20})
nodes.add_node(num_cpus=1, object_store_memory=200 << 20)
options = {"runtime_env": {"env_vars": worker_env()}} if mode == "runtime_env" else {}
ray.init(address=nodes.address, include_dashboard=False, logging_level="WARNING", log_to_driver=False, **options)
nodes.wait_for_nodes()
os.environ.clear()
os.environ.update(saved)
print("started", round(time.time() - t, 1))


@ray.remote(num_cpus=1)
def probe(i):
    import neardup  # noqa: F401
    return os.environ.get("NUMBA_NUM_THREADS")


print(ray.get([probe.remote(i) for i in range(4)]))
print("first tasks", round(time.time() - t, 1))
snap = tree()
workers = [v for v in snap.values() if "default_worker" in v[1] or v[0].startswith("ray::")]
print("processes", len(snap), "workers", len(workers), "tree CPU", round(sum(v[2] for v in snap.values()), 1),
      "driver CPU", round(time.process_time() - c, 1))
ray.shutdown()
nodes.shutdown()
