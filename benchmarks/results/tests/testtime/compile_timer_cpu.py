"""pytest plugin: thread CPU seconds numba spends compiling, appended per process to
$COMPILE_TIMER_OUT: per kernel ("totals", "counts"; "<top-level total>" sums the compiles
not nested in another) and per compile ("rows": kernel, signature, seconds, nesting depth)."""
import atexit, collections, json, os, time
from numba.core import event

_totals = collections.defaultdict(float)
_counts = collections.Counter()
_rows = []
_starts = []  # a stack: a kernel compiled inside another's compile ends first

class _Listener(event.Listener):
    def on_start(self, ev):
        _starts.append(time.thread_time())
    def on_end(self, ev):
        dt = time.thread_time() - _starts.pop()
        d = ev.data.get("dispatcher")
        name = f"{d.py_func.__module__}.{d.py_func.__name__}"
        _totals[name] += dt
        _counts[name] += 1
        if not _starts:
            _totals["<top-level total>"] += dt
        _rows.append([name, str(ev.data.get("args")), dt, len(_starts)])

event.register("numba:compile", _Listener())

@atexit.register
def _report():
    out = os.environ.get("COMPILE_TIMER_OUT")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "totals": _totals, "counts": _counts, "rows": _rows}) + "\n")
