import sys, os, time, io
from pathlib import Path
from bench.frameworks import eval_worker as ew, behave_worker as bw
from bench.dataset import load_dataset
T = {}
def timed(name, fn):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            T[name] = T.get(name, 0) + time.perf_counter() - t
    return wrapper
import os as _o
if _o.environ.get("NOHOOK"):
    from bench.guard import audit_hook as _ah
    _ah.Prepared.activate = lambda self, emit: self._screen
ew._install_screens = timed("screens", ew._install_screens)
ew.EvalWorker._load_test = timed("load", ew.EvalWorker._load_test)
bw.RunRecorder.run = timed("run", bw.RunRecorder.run)
ew.EvalWorker.reset = timed("reset", ew.EvalWorker.reset)
orig_child = ew.EvalWorker._child
def child(self, *a, **k):
    t = time.perf_counter()
    r = orig_child(self, *a, **k)
    r["T"] = dict(T, child=time.perf_counter() - t)
    return r
ew.EvalWorker._child = child
w = ew.EvalWorker(io.StringIO())
ws = "/tmp/t/pb/i1/ws"
ds = load_dataset(Path("/tmp/ds-docx"))
inst = ds.instance("python-docx/features/txt-font-props.feature:74")
os.makedirs("/tmp/t/pb/i1/tmp", exist_ok=True)
w.init({"root": ws, "features_dir": ws + "/features", "python_path": [ws + "/src"], "production_dirs": [ws + "/src/docx"], "import_packages": ["docx"], "pristine": "/tmp/t/pb/i1/pristine", "fixed": [ws + "/src/docx"], "prediction_files": [ws + "/features/steps/" + f for f in os.listdir(ws + "/features/steps") if f.endswith(".py")], "isolated": False, "scratch": ["/tmp/t/pb/i1/tmp"], "limits": {}})
N = 40
t = time.perf_counter()
r = w.runs({"feature": inst.requirement.feature_file, "lines": inst.requirement.run_lines, "limit": 5, "variants": [{"token": str(i), "mutant": None} for i in range(N)]})
total = (time.perf_counter() - t) / N * 1000
Ts = [v["result"]["T"] for v in r["runs"].values()]
print("per run ms", round(total, 1), "reset ms", round(T.get("reset", 0) / N * 1000, 2), {k: round(sum(x.get(k, 0) for x in Ts) / N * 1000, 2) for k in Ts[0]}, "collect elapsed", round(sum(v["elapsed"] for v in r["runs"].values()) / N * 1000, 1))
