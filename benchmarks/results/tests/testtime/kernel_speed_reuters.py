"""CPU seconds of neardup.dedup per method on Reuters-21578 bodies (memory engine), warm, best of 3.

Run from a checkout's root with PYTHONPATH=. and a NUMBA_CACHE_DIR of its own, once to warm
the cache, then alternating the checkouts: python kernel_speed_reuters.py METHOD...
"""
import json, sys, time, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import neardup
from neardup.io.reuters import reuters_records
from neardup.io.reuters import find_reuters_dir
root = find_reuters_dir()
texts = [r.get("body") or r.get("title") or "" for f in sorted(root.glob("reut2-*.sgm")) for _, _, r in reuters_records(f)]
texts = [t for t in texts if t]
out = {}
for method in sys.argv[1:]:
    kw = dict(engine="memory", cluster="components", pair_types=False)
    neardup.dedup(texts[:300], method, **kw)
    best = 1e9
    for _ in range(3):
        c = time.process_time(); r = neardup.dedup(texts, method, **kw); best = min(best, time.process_time() - c)
    out[method] = (round(best, 3), r.n_clusters)
print(json.dumps(out))
