"""Sum the per-process files of compile_timer_cpu.py: python compile_timer_sum.py FILE."""
import json, sys, collections
t = collections.defaultdict(float); c = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    for k, v in r["totals"].items(): t[k] += v
    for k, v in r["counts"].items(): c[k] += v
print("top-level compile CPU s: %.1f, compiles %d" % (t["<top-level total>"], sum(c.values())))
for k, v in sorted(t.items(), key=lambda kv: -kv[1])[1:16]: print("%7.2f %4d %s" % (v, c[k], k))
