"""CPU seconds the processes of an idle two-node test cluster (tests/ray_nodes.py) use in a
minute, after four tasks have warmed its workers. Run from the repository root:
.venv/bin/python benchmarks/results/tests/testtime/ray_idle_cpu.py"""
import sys, time, os, psutil
sys.path.insert(0, ".")  # run from the repository root
from tests.ray_nodes import two_ray_nodes
import ray
def tree_cpu():
    me = psutil.Process()
    tot = 0.0
    procs = [p for p in psutil.process_iter() if p.pid != me.pid]
    for p in procs:
        try:
            if any(k in " ".join(p.cmdline()) for k in ("ray", "raylet", "gcs_server", "plasma")):
                t = p.cpu_times(); tot += t.user + t.system
        except Exception: pass
    return tot
with two_ray_nodes() as addr:
    @ray.remote
    def f(x): import neardup; return x
    ray.get([f.remote(i) for i in range(4)])
    time.sleep(5)
    a = tree_cpu(); t = time.time(); time.sleep(60); b = tree_cpu()
    print("ray processes CPU over 60 s idle:", round(b - a, 2))
