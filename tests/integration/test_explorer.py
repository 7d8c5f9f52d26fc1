"""The results explorer: `req2test show` and the report's per-instance pages, checked in a
real headless browser (Debian's chromium) in the slow suite."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import yaml

from harness.experiment.runner import ExperimentRunner, prepare

pytestmark = pytest.mark.integration

IDS = ["tinyshop/features/cart.feature:13", "tinyshop/features/tax.feature:9"]


@pytest.fixture(scope="module")
def run_dir(example_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """then-stripped tests pass and miss kills; the scripted builtin agent leaves a trajectory."""
    base = tmp_path_factory.mktemp("explorer")
    (base / "provider.yaml").write_text(yaml.safe_dump(
        {"loop": True, "turns": [{"tool_calls": [{"name": "list_files", "arguments": {"path": "features"}}]},
                                 {"tool_calls": [{"name": "submit", "arguments": {"summary": "nothing"}}]}]}),
        encoding="utf-8")
    path = base / "experiment.yaml"
    path.write_text(yaml.safe_dump({
        "name": "explore", "dataset": str(example_dataset), "instances": {"ids": IDS}, "cache": False,
        "provider": {"script": "provider.yaml"}, "limits": {"max_calls": 4},
        "arms": [{"name": "stripped", "agent": "then-stripped"},
                 {"name": "talk", "agent": "builtin", "model": "openai/scripted"}]}), encoding="utf-8")
    experiment, plan, dataset = prepare(path)
    ExperimentRunner(experiment, plan, dataset, base / "run").run(path.read_text(encoding="utf-8"))
    return base / "run"


def test_show_lists_instances_and_explains_one(run_dir: Path) -> None:
    listing = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(run_dir)], capture_output=True,
                             text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"})
    assert listing.returncode == 0, listing.stderr
    assert all(i in listing.stdout for i in IDS) and "stripped@th" in listing.stdout
    page = subprocess.run([sys.executable, "-m", "harness.cli", "show", f"{run_dir}:stripped@th", IDS[0]],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})
    assert page.returncode == 0, page.stderr
    result = json.loads((run_dir / "configs/stripped@th/results.jsonl").read_text().splitlines()[0])
    assert result["outcome"] == "pass" and result["surviving_kills"]
    assert f"missed ground-truth kills: {len(result['surviving_kills'])}" in page.stdout
    assert " → " in page.stdout and "src/tinyshop/" in page.stdout  # mutant diffs: where, original → replacement
    assert "ladder: generation passed → build passed" in page.stdout
    talk = subprocess.run([sys.executable, "-m", "harness.cli", "show", f"{run_dir}:talk@th", IDS[0], "--trajectory"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})
    assert "prompt: system" in talk.stdout and "prompt: user" in talk.stdout and "tool list_files" in talk.stdout
    missing = subprocess.run([sys.executable, "-m", "harness.cli", "show", str(run_dir), "nope:1"],
                             capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2 and "no instance 'nope:1'" in missing.stderr and "Traceback" not in missing.stderr


def test_the_report_links_a_page_per_instance(run_dir: Path) -> None:
    report = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "<h2>Per instance</h2>" in report
    for config in ("stripped@th", "talk@th"):
        for instance in IDS:
            page = run_dir / "instances" / config / (instance.replace("/", "_").replace(":", "_") + ".html")
            assert page.is_file(), page
            assert f'href="{page.relative_to(run_dir).as_posix()}"' in report


def _png_size_and_colours(path: Path) -> tuple[int, int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, offset = b"", 8
    while offset < len(data):
        length = struct.unpack(">I", data[offset:offset + 4])[0]
        kind = data[offset + 4:offset + 8]
        if kind == b"IDAT":
            idat += data[offset + 8:offset + 8 + length]
        offset += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (scripts/install-system-deps.sh)")
def test_pages_render_in_a_real_headless_browser(run_dir: Path, tmp_path: Path) -> None:
    def chromium(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={tmp_path / 'profile'}", *args], capture_output=True, text=True,
                              timeout=120, check=False)

    page = run_dir / "instances" / "stripped@th" / (IDS[0].replace("/", "_").replace(":", "_") + ".html")
    dom = chromium("--dump-dom", page.as_uri()).stdout
    assert f'<h1 id="instance">{IDS[0]}</h1>' in dom
    assert '<b class="outcome-pass" id="outcome">pass</b>' in dom
    assert dom.count("<del>") >= 1 and dom.count("<ins>") >= 1  # the missed mutants, rendered as diffs
    report_dom = chromium("--dump-dom", (run_dir / "report.html").as_uri()).stdout
    assert "Per instance" in report_dom and "instances/stripped@th/" in report_dom
    for target, name in ((page, "page.png"), (run_dir / "report.html", "report.png")):
        shot = tmp_path / name
        done = chromium(f"--screenshot={shot}", "--window-size=1280,1600", target.as_uri())
        assert shot.is_file(), done.stderr[-2000:]
        width, height, colours = _png_size_and_colours(shot)
        assert (width, height) == (1280, 1600)
        assert colours > 30  # text, tables and coloured rungs, not a blank page
