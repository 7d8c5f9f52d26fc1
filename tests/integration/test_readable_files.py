"""Nothing to steal, by construction: no file a test can read inside an evaluation sandbox is a
ground-truth file of any instance (tests/integration/readable_files.py walks the sandbox's
whole disk from the inside, with the very bubblewrap arguments of a real evaluation).

The sandbox binds our own code as the ``bench`` package alone (``bench.isolation``): the
directory holding it also holds ``harness``, whose package data is the bundled example with
its developers' step files — in a source layout that is ``src/`` and in a wheel install
site-packages, where ``harness`` is then masked by an empty read-only tmpfs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from bench import isolation
from tests.integration.readable_files import assert_nothing_to_steal
from tests.wheels import build_wheel

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CARTJS = REPO / "examples" / "cartjs"

needs_bwrap = pytest.mark.skipif(isolation.bwrap_path() is None, reason="bubblewrap is not installed")


# ------------------------------------------------------------------ the binding itself
def _layout(root: Path, holder: Path, monkeypatch: pytest.MonkeyPatch, site_dirs: list[Path]) -> None:
    """A fake installation of ours: ``holder`` with bench (importable), harness (with a
    "ground-truth" step file) and, for a wheel, its .dist-info RECORD naming one more package."""
    (holder / "bench").mkdir(parents=True)
    (holder / "bench" / "__init__.py").write_text("WHERE = __file__\n")
    steps = holder / "harness" / "resources" / "examples" / "shop" / "features" / "steps"
    steps.mkdir(parents=True)
    (steps / "shop_steps.py").write_text("SECRET = 'ground truth'\n")
    monkeypatch.setattr(isolation, "bench_package", lambda: holder / "bench")
    monkeypatch.setattr(isolation.site, "getsitepackages", lambda: [str(d) for d in site_dirs])
    monkeypatch.setattr(isolation.site, "getusersitepackages", lambda: "")


def _in_sandbox(script: str, holder: Path) -> subprocess.CompletedProcess[str]:
    command = isolation.wrap([sys.executable, "-c", script], writable=[], readonly=[], cwd="/")
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(holder), "PYTHONNOUSERSITE": "1"})


PROBE = textwrap.dedent("""
    import os, sys, bench
    print(bench.WHERE)
    holder = os.path.dirname(os.path.dirname(bench.WHERE))
    print(sorted(os.listdir(holder)))
    harness = os.path.join(holder, "harness")
    print(sorted(os.listdir(harness)) if os.path.isdir(harness) else "no harness")
""")


@needs_bwrap
def test_a_source_layout_binds_the_bench_package_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    holder = tmp_path / "checkout" / "src"
    _layout(tmp_path, holder, monkeypatch, site_dirs=[])
    dirs = isolation.python_dirs()
    assert holder / "bench" in dirs and holder not in dirs
    assert isolation.masked_dirs() == []
    done = _in_sandbox(PROBE, holder)
    assert done.returncode == 0, done.stderr
    where, listing, harness = done.stdout.splitlines()
    assert where == str(holder / "bench" / "__init__.py")  # PYTHONPATH=holder still finds bench
    assert listing == "['bench']" and harness == "no harness"


@needs_bwrap
def test_a_wheel_layout_masks_our_other_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site_packages = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    _layout(tmp_path, site_packages, monkeypatch, site_dirs=[site_packages])
    (site_packages / "othertool").mkdir()  # somebody else's package: stays
    (site_packages / "othertool" / "__init__.py").write_text("")
    (site_packages / "req2test_extra").mkdir()  # ours (RECORD says so): masked
    (site_packages / "req2test_extra" / "data.txt").write_text("ours\n")
    info = site_packages / "req2test-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: req2test\nVersion: 0.1.0\n")
    (info / "RECORD").write_text("bench/__init__.py,,\nharness/resources/examples/shop/features/steps/shop_steps.py,,\n"
                                 "req2test_extra/data.txt,,\nreq2test-0.1.0.dist-info/RECORD,,\n"
                                 "../../../bin/req2test,,\n")
    assert site_packages in isolation.python_dirs()
    masked = isolation.masked_dirs()
    assert masked == [site_packages / "harness", site_packages / "req2test_extra"]
    args = isolation.wrap(["true"], writable=[], readonly=[], cwd="/")
    bind = args.index(str(site_packages))
    for directory in masked:
        at = args.index(str(directory))
        assert args[at - 1] == "--tmpfs" and at > bind and args[at + 1:at + 3] == ["--remount-ro", str(directory)]
    done = _in_sandbox(PROBE + "print(sorted(os.listdir(os.path.join(holder, 'req2test_extra'))))\n"
                       "open(os.path.join(harness, 'planted'), 'w')\n", site_packages)
    assert "Read-only file system" in done.stderr, done.stderr  # the mask is read-only
    where, listing, harness, extra = done.stdout.splitlines()
    assert where == str(site_packages / "bench" / "__init__.py")
    assert "othertool" in listing and "harness" in listing  # the mount point, empty:
    assert harness == "[]" and extra == "[]"


# ------------------------------------------------------------------ real evaluation sandboxes
@needs_bwrap
def test_a_tinyshop_sandbox_holds_no_ground_truth(example_dataset: Path, tmp_path: Path) -> None:
    """behave: the bundled example is package data of ``harness`` (src/harness/resources)."""
    assert_nothing_to_steal(example_dataset, tmp_path)


@pytest.fixture(scope="module")
def cartjs_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.builder.pipeline import BuildOptions, build_dataset

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not (CARTJS / "node_modules" / "@cucumber" / "cucumber").is_dir():
        pytest.fail("examples/cartjs has no node_modules: run bash scripts/install-node-deps.sh")
    out = tmp_path_factory.mktemp("cartjs-readable") / "dataset"
    build_dataset(str(CARTJS), out, BuildOptions(workers=2))
    return out


@needs_bwrap
def test_a_cartjs_sandbox_holds_no_ground_truth(cartjs_dataset: Path, tmp_path: Path) -> None:
    """cucumber-js: the run's tree at /project, node_modules, the compile cache, the report dir."""
    walks = assert_nothing_to_steal(cartjs_dataset, tmp_path)
    assert all(w.where.startswith("cucumber-js sandbox") for w in walks)


@pytest.mark.slow
@needs_bwrap
def test_a_wheel_in_site_packages_leaves_no_ground_truth(example_dataset: Path, tmp_path: Path) -> None:
    """The wheel (harness/resources/examples/tinyshop as package data) installed in a venv's
    site-packages, which every sandbox binds: the same walk, run by that venv's interpreter."""
    wheel = build_wheel(tmp_path)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=True)  # dependencies from this interpreter
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                                str(wheel)], capture_output=True, text=True, timeout=600, check=False, env=env)
    assert installed.returncode == 0, installed.stderr[-2000:]
    script = textwrap.dedent(f"""
        from pathlib import Path
        import bench, bench.isolation as iso
        from tests.integration.readable_files import assert_nothing_to_steal
        site_packages = Path(bench.__file__).resolve().parents[1]
        assert site_packages.name == "site-packages" and str(site_packages).startswith({str(env_dir)!r}), bench.__file__
        assert site_packages / "harness" in iso.masked_dirs(), iso.masked_dirs()
        assert (site_packages / "harness/resources/examples/tinyshop/features/steps/cart_steps.py").is_file()
        assert_nothing_to_steal(Path({str(example_dataset)!r}), Path({str(tmp_path / "walk")!r}))
        print("nothing to steal")
    """)
    # the checkout on the path only for the tests package (bench comes from the venv: no src/)
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=900, check=False,
                          cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "nothing to steal" in done.stdout, (done.stdout + done.stderr)[-4000:]
