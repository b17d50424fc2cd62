"""Sum compile_timer_cpu.py's rows: top-level compiles by kernel and signature.

    python benchmarks/results/tests/testtime/compile_sig_sum.py FILE
"""
import collections
import json
import re
import sys

rows = []
for line in open(sys.argv[1]):
    record = json.loads(line)
    rows += [(record["pid"], *row) for row in record["rows"]]
top = [r for r in rows if r[4] == 0]
print("processes", len({r[0] for r in rows}), "top-level compiles", len(top),
      "CPU s", round(sum(r[3] for r in top), 1))
by = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0]))
for _, name, args, seconds, depth in top:
    by[name][args][0] += 1
    by[name][args][1] += seconds
for name, sigs in sorted(by.items(), key=lambda kv: -sum(v[1] for v in kv[1].values())):
    print(f"{sum(v[1] for v in sigs.values()):6.1f}s {sum(v[0] for v in sigs.values()):3d}x {len(sigs)} sigs {name}")
    for args, (count, seconds) in sorted(sigs.items(), key=lambda kv: -kv[1][1]):
        short = re.sub(r"Array\((\w+), (\d), 'C', (True|False), aligned=True\)",
                       lambda m: f"{m.group(1)}[{m.group(2)}]{'ro' if m.group(3) == 'True' else ''}", args)
        print(f"        {seconds:5.1f}s {count}x {short[:150]}")
