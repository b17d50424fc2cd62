"""pytest plugin: wall seconds numba spends compiling each kernel (numba:compile events), printed at exit."""
import atexit, collections, time
from numba.core import event

_totals = collections.defaultdict(float)
_counts = collections.Counter()

class _Listener(event.Listener):
    def on_start(self, ev):
        self._t = getattr(self, "_t", {})
        self._t[id(ev.data.get("dispatcher"))] = time.perf_counter()
    def on_end(self, ev):
        d = ev.data.get("dispatcher")
        start = self._t.pop(id(d), None)
        if start is not None:
            name = f"{d.py_func.__module__}.{d.py_func.__name__}"
            _totals[name] += time.perf_counter() - start
            _counts[name] += 1

event.register("numba:compile", _Listener())

@atexit.register
def _report():
    total = sum(_totals.values())
    print(f"\nnumba compile: {total:.1f} s in {sum(_counts.values())} compiles")
    for name, s in sorted(_totals.items(), key=lambda kv: -kv[1])[:25]:
        print(f"{s:7.2f} s  {_counts[name]:3d}  {name}")
