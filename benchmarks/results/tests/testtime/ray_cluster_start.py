"""Cost of the Ray lane's cluster: start it, run one trivial task per node, stop it;
the CPU of this process and every process it started (psutil), and how many Ray
workers were started."""
import sys, time
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

from neardup.engine.ray import worker_runtime_env
from tests.ray_nodes import two_ray_nodes
import ray
t = time.time(); c = time.process_time()
with two_ray_nodes(worker_runtime_env()) as address:
    print("started", round(time.time() - t, 1))
    @ray.remote(num_cpus=1)
    def f(i):
        import neardup  # noqa
        return i
    ray.get([f.remote(i) for i in range(4)])
    print("first tasks", round(time.time() - t, 1))
    snap = tree()
    workers = [v for v in snap.values() if "default_worker" in v[1] or v[0].startswith("ray::")]
    print("processes", len(snap), "workers", len(workers), "tree CPU", round(sum(v[2] for v in snap.values()), 1), "driver CPU", round(time.process_time() - c, 1))
