"""A verdict run (behave --stop) ends at its first scenario that does not pass.

behave itself would still run the feature and ``after_all`` hooks; a project's teardown
(py-algorand-sdk's mock servers take up to 0.5 s each to shut down) cannot turn a failed
scenario into a passing run, so a verdict run skips it — the verdict is the same, the run
is shorter. A run without --stop, and a passing run, still run every hook.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

DRIVER = textwrap.dedent('''
    import json, os, sys
    root, stop = sys.argv[1], sys.argv[2] == "stop"
    os.chdir(root)
    from bench.frameworks.behave import worker as bw
    worker = bw.Worker(sys.stderr)
    features_dir = os.path.join(root, "features")
    worker.root, worker.features_dir, worker.production_dirs = root, features_dir, []
    runner, error = worker._make_runner(features_dir, load=True)
    assert error is None, error
    if stop:
        bw._stop_at_first_failure(runner)
    feature = os.path.join(root, "features", "f.feature")
    recorder = bw.RunRecorder(root, features_dir, [], worker.hook_files, trace=False)
    result = recorder.run(runner, feature, [int(x) for x in sys.argv[3].split(",")])
    print(json.dumps({"summary": bw._summarize_run(result, len(sys.argv[3].split(","))),
                      "scenarios": [s["status"] for s in result["scenarios"]], "decided": recorder.decided}))
''')

FILES = {
    "features/f.feature": """
        Feature: F
          Scenario: Fails
            Given a step that fails

          Scenario: Passes
            Given a step that passes
    """,
    "features/environment.py": """
        import os

        def after_all(context):
            with open(os.path.join(os.path.dirname(__file__), "..", "after_all.log"), "a") as fh:
                fh.write("after_all ran\\n")
    """,
    "features/steps/s.py": """
        from behave import given

        @given("a step that fails")
        def fails(context):
            assert False, "wrong"

        @given("a step that passes")
        def passes(context):
            pass
    """,
}


def run(tmp_path: Path, mode: str, lines: str) -> dict:
    for rel, text in FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    (tmp_path / "after_all.log").unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path), mode, lines],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def after_all_ran(tmp_path: Path) -> bool:
    return (tmp_path / "after_all.log").is_file()


def test_a_failing_verdict_run_ends_at_the_failing_scenario(tmp_path: Path) -> None:
    out = run(tmp_path, "stop", "2,5")
    assert out["decided"] and out["summary"]["passed"] is False
    assert out["scenarios"] == ["failed"]  # the second scenario never started
    assert not after_all_ran(tmp_path)


def test_a_passing_verdict_run_runs_every_hook(tmp_path: Path) -> None:
    out = run(tmp_path, "stop", "5")
    assert not out["decided"] and out["summary"]["passed"] is True
    assert after_all_ran(tmp_path)


def test_without_stop_the_run_is_behaves_whole_run(tmp_path: Path) -> None:
    out = run(tmp_path, "full", "2,5")
    assert not out["decided"] and out["summary"]["passed"] is False
    assert out["scenarios"] == ["failed", "passed"]
    assert after_all_ran(tmp_path)


def test_workers_notice_a_mock_servers_shutdown_without_the_half_second_poll() -> None:
    code = ("import socketserver\n"
            "from bench.frameworks.behave import worker as bw\n"
            "bw._shorten_idle_polls(); bw._shorten_idle_polls()\n"
            "print(socketserver.BaseServer.serve_forever.__defaults__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "(0.01,)"


def test_split_stream_stops_forking_once_the_run_has_started_threads() -> None:
    """A forked child keeps only the forking thread: a mock server started in before_all
    would be gone and the mutant's run would hang (a false kill by timeout)."""
    import threading

    from bench.frameworks.behave.split_stream import SplitStream

    stream = SplitStream({"s0": [{"id": "m1"}], "s1": [{"id": "m2"}]}, 5.0,
                         prepare=lambda mutant: None, summarize=lambda result: result)
    stop = threading.Event()
    server = threading.Thread(target=stop.wait)
    server.start()
    try:
        stream.at("s0")
    finally:
        stop.set()
        server.join()
    assert stream.results == {} and stream.plan == {}  # nothing forked: both run whole elsewhere
    assert stream.threads_stopped_forking == "s0"
