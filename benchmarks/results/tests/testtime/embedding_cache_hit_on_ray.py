"""CPU of a biencoder run on Ray whose embeddings are all in cache_dir: the driver and
every process of the two-node cluster (psutil over this process's descendants)."""
import sys, time
sys.path.insert(0, "/work/wt-testtime")
import psutil
import neardup
from tests.engine_contract import contract_corpus, BATCH_SIZE
from tests.ray_nodes import two_ray_nodes

def tree_cpu():
    total = 0.0
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times(); total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total

corpus = contract_corpus(90)
p = {"cache_dir": "/tmp/embedding-cache-hit"}
neardup.dedup(corpus, "biencoder", id_field="id", engine="memory", cluster="components", pair_types=False, batch_size=BATCH_SIZE, **p)
with two_ray_nodes() as address:
    time.sleep(5)
    for i in range(2):
        before = tree_cpu(); t = time.time()
        neardup.dedup(corpus, "biencoder", id_field="id", engine="ray", cluster="components", pair_types=False, batch_size=BATCH_SIZE, ray_address=address, **p)
        print("ray run", i, "wall", round(time.time() - t, 1), "cluster CPU", round(tree_cpu() - before, 1), flush=True)
