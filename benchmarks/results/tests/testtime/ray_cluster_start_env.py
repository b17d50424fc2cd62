"""As ray_cluster_start.py, with the workers' settings in the nodes' environment instead of a runtime_env."""
import os, sys, time
sys.path.insert(0, "/work/wt-testtime")
import psutil

def tree():
    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times(); out[p.pid] = (p.name(), " ".join(p.cmdline())[:60], t.user + t.system)
        except psutil.NoSuchProcess:
            pass
    return out

from neardup.engine.ray import worker_env
import ray
from ray.cluster_utils import Cluster
t = time.time(); c = time.process_time()
saved = dict(os.environ); os.environ.update(worker_env())
nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 200 << 20})
nodes.add_node(num_cpus=1, object_store_memory=200 << 20)
ray.init(address=nodes.address, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
nodes.wait_for_nodes()
os.environ.clear(); os.environ.update(saved)
print("started", round(time.time() - t, 1))
@ray.remote(num_cpus=1)
def f(i):
    import neardup  # noqa
    return os.environ.get("NUMBA_NUM_THREADS")
print(ray.get([f.remote(i) for i in range(4)]))
print("first tasks", round(time.time() - t, 1))
snap = tree()
workers = [v for v in snap.values() if "default_worker" in v[1] or v[0].startswith("ray::")]
print("processes", len(snap), "workers", len(workers), "tree CPU", round(sum(v[2] for v in snap.values()), 1), "driver CPU", round(time.process_time() - c, 1))
ray.shutdown(); nodes.shutdown()
