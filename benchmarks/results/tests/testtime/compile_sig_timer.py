"""pytest plugin: thread CPU seconds of each numba compile, by kernel and signature, appended per process to $COMPILE_TIMER_OUT
(nested compiles recorded with their depth; 0 is top level)."""
import atexit, json, os, time
from numba.core import event
_rows = []
_stack = []
class _L(event.Listener):
    def on_start(self, ev):
        _stack.append(time.thread_time())
    def on_end(self, ev):
        t0 = _stack.pop()
        d = ev.data.get("dispatcher")
        args = ev.data.get("args")
        _rows.append([f"{d.py_func.__module__}.{d.py_func.__name__}", str(args), time.thread_time() - t0, len(_stack)])
event.register("numba:compile", _L())
@atexit.register
def _report():
    out = os.environ.get("COMPILE_TIMER_OUT")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "rows": _rows}) + "\n")
