"""pytest plugin: thread CPU seconds numba spends compiling each kernel, appended per process to $COMPILE_TIMER_OUT."""
import atexit, collections, json, os, time
from numba.core import event

_totals = collections.defaultdict(float)
_counts = collections.Counter()
_depth = [0]

class _Listener(event.Listener):
    def on_start(self, ev):
        self._t = getattr(self, "_t", {})
        self._t[id(ev.data.get("dispatcher"))] = (time.thread_time(), _depth[0])
        _depth[0] += 1
    def on_end(self, ev):
        _depth[0] -= 1
        d = ev.data.get("dispatcher")
        start = self._t.pop(id(d), None)
        if start is not None:
            name = f"{d.py_func.__module__}.{d.py_func.__name__}"
            dt = time.thread_time() - start[0]
            _totals[name] += dt
            _counts[name] += 1
            if start[1] == 0:
                _totals["<top-level total>"] += dt

event.register("numba:compile", _Listener())

@atexit.register
def _report():
    out = os.environ.get("COMPILE_TIMER_OUT")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "totals": _totals, "counts": _counts}) + "\n")
