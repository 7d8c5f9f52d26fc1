"""The static tamper screen: every kind it flags, and silence on developers' own suites."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from bench.frameworks.behave.guard.findings import TamperFinding
from bench.frameworks.behave.guard.static_scan import KINDS, scan_prediction, scan_source
from tests.conftest import EXAMPLE

PDX_VERSION = "1.2.0"
PDX_CACHE = Path.home() / ".cache" / "req2test" / "sdists" / f"python-docx-{PDX_VERSION}"

# kind -> snippets that must each produce at least that kind
POSITIVE: dict[str, list[str]] = {
    "runner_internals": [
        "import behave.model\nbehave.model.Step.run = lambda *a: None",
        "import behave.model as m\nm.Scenario.run = None",
        "from behave.runner import Runner",
        "from behave.step_registry import registry",
        "import behave.formatter.base",
        "from behave.runner import *",
        "from behave.model_core import Status\n\ndef s(context):\n    context.scenario.status = Status.passed",
        "def s(context):\n    context._runner.aborted = False",
        "def s(context):\n    sc = context.scenario\n    sc.set_status('passed')",
        "def s(context):\n    context.scenario.steps.clear()",
        "def s(context):\n    for step in context.scenario.steps:\n        step.status = 'passed'",
        "from behave.runner import Context\nContext.execute_steps = None",
        "import behave\nsetattr(behave.model.Step, 'run', None)",
        "def s(context):\n    getattr(context, '_stack')",
        "def s(context):\n    type(context).__setattr__ = None\n    context.__class__.x = 1",
        "def s(context):\n    context.config.dry_run = True",
        "from unittest import mock\nmock.patch('behave.model.Step.run').start()",
        "from behave import given\n\n@given('x')\ndef s(ctx):\n    ctx._runner.hooks.clear()",
    ],
    "introspection": [
        "import sys\nsys._getframe(1)",
        "import inspect\ninspect.currentframe()",
        "import inspect\ninspect.stack()",
        "def f(e):\n    return e.__traceback__.tb_frame",
        "def f(x):\n    return x.f_back.f_globals",
        "def f(g):\n    return g.__closure__[0].cell_contents",
        "def f(g):\n    return g.__globals__",
        "import traceback\ntraceback.extract_stack()",
        "import sys\ngetattr(sys, '_get' + 'frame')",
        "import sys\nvars(sys)['_getframe']",
        "import sys\nf = sys._getframe\nf()",
        "object.__subclasses__()",
    ],
    "code_objects": [
        "def f(g):\n    return g.__code__.co_code",
        "import types\ntypes.CodeType",
        "import marshal",
        "import dis\ndis.dis(len)",
        "import types\ntypes.FunctionType(None, {})",
        "def f(g):\n    return getattr(g, '__code__')",
    ],
    "gc": ["import gc\ngc.get_objects()", "from gc import get_referrers"],
    "ctypes": ["import ctypes", "from ctypes import CDLL", "import cffi", "__import__('ctypes')"],
    "tracing": [
        "import sys\nsys.settrace(None)",
        "import sys\nsys.setprofile(None)",
        "import threading\nthreading.settrace(print)",
        "import sys\nif sys.gettrace():\n    pass",
        "import pdb",
    ],
    "audit_hook": ["import sys\nsys.addaudithook(print)"],
    "signals": [
        "import os\nos.kill(os.getppid(), 9)",
        "import os, signal\nos.killpg(0, signal.SIGKILL)",
        "from os import kill",
        "import subprocess\nsubprocess.run(['sh', '-c', 'kill -9 $(cut -d\" \" -f4 /proc/$PPID/stat)'])",
    ],
    "process": [
        "import os\nos.fork()",
        "import os\nos.setsid()",
        "open('/proc/self/status')",
        "import os\nos._exit(0)",
        "pid = 1\nopen(f'/proc/{pid}/mem', 'rb')",
        "import psutil",
        "SCRIPT = 'd=/proc; cat $d/$PPID/cmdline'",
    ],
    "evaluator_internals": [
        "import bench",
        "from bench.frameworks.behave import worker",
        "import coverage",
        "from harness import agents",
        "import importlib\nimportlib.import_module('bench.frameworks.behave.guard.strict_hook')",
    ],
    "sys_modules": [
        "import sys\nsys.modules['bench'].x = 1",
        "import importlib, docx\nimportlib.reload(docx)",
        "import sys\nsys.meta_path.insert(0, object())",
        "from importlib import _bootstrap",
    ],
    "builtins": ["import builtins\nbuiltins.open = None", "__builtins__['open'] = None"],
    "monkeypatch": [
        "import json\njson.dumps = lambda *a, **k: '{}'",
        "import os\nos._exit = print",
        "import sys\nsys.exit = print",
        "from unittest import mock\nimport sys\nmock.patch.object(sys, 'excepthook', print).start()",
    ],
    "dynamic_code": [
        "exec(src)",
        "def f(a):\n    code = a + '1'\n    return eval(code)",
        "compile(text, 'behave/runner.py', 'exec')",
        "import importlib\nimportlib.import_module(name)",
        "__import__(name)",
    ],
    "production_source": [
        "import inspect, docx\ninspect.getsource(docx)",
        "import linecache\nlinecache.getlines('x')",
        "open('src/docx/__pycache__/api.cpython-311.pyc', 'rb')",
        "def f(m):\n    return m.__loader__.get_source('x')",
    ],
}

# honest test code, including every pattern the two corpora use near a rule's edge
NEGATIVE: list[str] = [
    ("from behave import given, when, then, step, register_type, use_step_matcher\n"
     "from behave.runner import Context\n\n"
     "@given('x {v}')\n"
     "def s(context: Context, v):\n"
     "    context.x = eval(v)\n"               # a step argument: text from the feature file
     "    setattr(context, v, 1)\n"
     "    getattr(context.obj, v)\n"
     "    assert context.scenario.status != 'failed'\n"
     "    print(context.config.userdata.get('a'))\n"
     "    context.config.userdata['k'] = 1\n"
     "    context.paragraph._p\n"              # a production object's private attribute
     "    context.scenario.skip('later')\n"
     "    context.execute_steps('Given y')\n"
     "    context.add_cleanup(print)\n"),
    ("import sys, os, io\nsys.path.insert(0, os.path.dirname(__file__))\nsys.stdout = io.StringIO()\n"
     "os.environ['A'] = '1'\n"),
    ("from behave.api.pending_step import StepNotImplementedError\n"
     "from behave.api.async_step import async_run_until_complete\n"),
    ("from behave.model import Table, Row\nfrom behave.model_core import Status\n"
     "from behave.fixture import fixture, use_fixture_by_tag\n\n"
     "def f(context):\n    return context.scenario.status == Status.failed and Table.headings\n"),
    ("import traceback, logging\ntry:\n    1 / 0\nexcept Exception:\n    msg = traceback.format_exc()\n"
     "    logging.exception('x')\n"),
    "import inspect\ninspect.signature(len)\nimport types\nisinstance(len, types.FunctionType)\n",
    "from unittest import mock\nwith mock.patch('tinyshop.cart.Cart.total', 3):\n    pass\n",
    "'''Docs: never read __pycache__ or /proc/ files.'''\nx = 1\n",
    "import subprocess\nsubprocess.run = lambda *a, **k: None\nimport os.path\nos.path.exists = lambda p: True\n",
    "from behave import *\n",
    "from .helpers import thing\nfrom . import other\n",
    "from behave import register_type\nimport parse\n\n@parse.with_pattern(r'\\d+')\ndef num(t):\n    return int(t)\n",
    "import decimal\nctx = decimal.getcontext()\nctx.prec = 4\n",
    "import tempfile, shutil\nd = tempfile.mkdtemp()\nshutil.rmtree(d)\n",
    "def f(font, name, value):\n    setattr(font, name, value)\n    return getattr(font, name)\n",
    "def s(context):\n    context._browser = object()\n    return hasattr(context, '_browser')\n",
    "MESSAGE = 'the kill rate of a test and the process list'\nimport os\nos.getpid()\n",
]


@pytest.mark.parametrize("kind, snippet", [(k, s) for k, snippets in POSITIVE.items() for s in snippets])
def test_flags(kind: str, snippet: str) -> None:
    findings = scan_source("features/steps/x_steps.py", snippet)
    assert kind in {f.kind for f in findings}, (snippet, findings)
    for finding in findings:
        assert finding.screen == "static" and finding.path == "features/steps/x_steps.py"
        assert 1 <= finding.line <= snippet.count("\n") + 1
        assert finding.evidence and len(finding.evidence) <= 200
        assert finding.kind in KINDS


def test_every_kind_has_a_positive_case() -> None:
    assert set(POSITIVE) == set(KINDS)


@pytest.mark.parametrize("snippet", NEGATIVE)
def test_honest_code_is_not_flagged(snippet: str) -> None:
    assert scan_source("features/steps/ok_steps.py", snippet) == []


def test_findings_carry_line_and_code() -> None:
    source = "import os\n\n\ndef step(context):\n    os.kill(os.getppid(), 9)\n"
    findings = scan_prediction({"features/steps/a.py": source, "features/data.json": "import gc"})
    assert [(f.kind, f.line, f.evidence) for f in findings] == [("signals", 5, "os.kill(os.getppid(), 9)")]


def test_literal_code_is_scanned_at_the_call() -> None:
    findings = scan_source("a.py", "x = 1\nexec('import gc\\ngc.get_objects()')\n")
    assert [(f.kind, f.line) for f in findings] == [("gc", 2)]


def test_unparsable_files_yield_nothing() -> None:
    assert scan_prediction({"features/steps/broken.py": "def (:\n"}) == []


def test_evidence_is_clipped() -> None:
    finding = TamperFinding(kind="gc", path="a.py", line=1, evidence="x" * 500, screen="static")
    assert len(finding.evidence) == 200


def _features_py(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))}


def test_no_findings_on_the_example_suite() -> None:
    files = _features_py(EXAMPLE / "features")
    assert len(files) >= 10
    assert scan_prediction(files) == []


def _python_docx_features(tmp_path: Path) -> Path | None:
    """python-docx 1.2.0's features tree: the build cache, its archive, or pip download."""
    tree = PDX_CACHE / "tree" / "features"
    if (tree / "steps").is_dir():
        return tree
    archives = sorted((PDX_CACHE / "archive").glob("*.tar.gz")) if (PDX_CACHE / "archive").is_dir() else []
    if not archives:
        try:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            f"python-docx=={PDX_VERSION}", "-d", str(tmp_path / "sdist"), "-q"],
                           check=True, capture_output=True, timeout=120)
        except (subprocess.SubprocessError, OSError):
            return None
        archives = sorted((tmp_path / "sdist").glob("*.tar.gz"))
        if not archives:
            return None
    with tarfile.open(archives[0]) as tar:
        members = [m for m in tar.getmembers() if "/features/" in m.name and m.name.endswith(".py")]
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp_path / "x", members=members, filter="data")
        else:  # pragma: no cover - Python before 3.11.4
            tar.extractall(tmp_path / "x", members=members)
    found = sorted((tmp_path / "x").glob("*/features"))
    return found[0] if found else None


def test_no_findings_on_python_docx_steps(tmp_path: Path) -> None:
    features = _python_docx_features(tmp_path)
    if features is None:
        pytest.skip("python-docx 1.2.0 sdist neither cached nor downloadable")
    files = _features_py(features)
    assert len([p for p in files if p.startswith("steps/")]) >= 20
    assert scan_prediction(files) == []
