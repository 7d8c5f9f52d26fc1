"""Attacks on the godog judge, on tests/godogshop built with mutants, each a real judged
prediction of one instance (``bdd/features/cart.feature:7``, adding items: its kills are in
shop/cart.go).

Every attack binds the instance's steps and checks nothing about behaviour; it "fails" only
when it believes it runs a mutant, by a route the static screen does not see. What must stop
each one is the judge's construction, not a pattern: the variant is a number read from fd 3
before any test code runs and closed; every variant runs the same binary with the same
arguments; the run's tree has no ``.go`` file; bubblewrap gives no ``/proc`` and a fresh
``/tmp`` per run.

(a) the production file read through a path built at run time, compared with the shipped text;
(b) a run counter kept in /tmp and in $HOME's parent: "the first run is the clean one";
(c) fd 3 itself, opened by path (``/dev/fd/3``, built at run time) in the step;
(d) chance: every check fails at random half the time;
(e) the screened routes (``os.NewFile(3)``, ``go:linkname`` to the switch) are tampering.

The oracle stays pass + KillComplete with its API calls and coverage exact.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.builder.pipeline import BuildOptions, build_dataset
from bench.evaluate import EvaluateOptions, evaluate
from bench.model import Prediction

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "godogshop"
STEPS = "bdd/steps_test.go"
INSTANCE = "godogshop/bdd/features/cart.feature:7"

HEAD = """package bdd

import (
	"context"
	"fmt"
{imports}
	"example.com/godogshop/shop"
	"github.com/cucumber/godog"
)

var cart *shop.Cart
"""
BODY = """
func anEmptyCart() error {
	cart = shop.NewCart()
	return nil
}

func iAdd(n int, item string) error {
	_ = cart.Add(item, n)
	return nil
}

func theCartHolds(n int, item string) error {
	_ = cart.Count(item)
	return detect()
}

func theDiscountIs(n int) error { return nil }

func InitializeScenario(s *godog.ScenarioContext) {
	s.Before(func(ctx context.Context, sc *godog.Scenario) (context.Context, error) {
		cart = nil
		return ctx, nil
	})
	s.Step(`^an empty cart$`, anEmptyCart)
	s.Step(`^I add (\\d+) "([^"]*)"$`, iAdd)
	s.Step(`^the cart holds (\\d+) "([^"]*)"$`, theCartHolds)
	s.Step(`^the total is (\\d+)$`, func(n int) error { return nil })
	s.Step(`^the discount is (\\d+)$`, theDiscountIs)
}

var _ = fmt.Sprint
"""


@pytest.fixture(scope="module")
def shop_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.frameworks.godog.toolchain import GoToolchain, download_modules

    try:
        toolchain = GoToolchain.find()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    base = tmp_path_factory.mktemp("godogshop-attacks")
    project = base / "godogshop"
    shutil.copytree(PROJECT, project)
    if not download_modules(project, toolchain).ok:
        pytest.skip("godog v0.14.1's modules are neither cached nor downloadable")
    out = base / "dataset"
    build_dataset(str(project), out, BuildOptions(workers=2, runs=2))
    return out


def _judge(dataset: Path, run_dir: Path, files: dict[str, str]) -> dict:
    path = run_dir.parent / f"{run_dir.name}.jsonl"
    path.write_text(Prediction(instance_id=INSTANCE, files=files).model_dump_json() + "\n")
    evaluate(dataset, path, run_dir, EvaluateOptions(workers=1, instances=[INSTANCE], resamples=10, timeout=60,
                                                     isolation="bwrap"))
    return json.loads((run_dir / "results.jsonl").read_text().splitlines()[0])


def _attack(imports: list[str], detect: str) -> dict[str, str]:
    return {STEPS: HEAD.format(imports="".join(f'\t"{i}"\n' for i in imports)) + detect + BODY}


def source_read(dataset: Path) -> dict[str, str]:
    shipped = (PROJECT / "shop" / "cart.go").read_text(encoding="utf-8")
    return _attack(["os", "path/filepath"], f"""
var shipped = {json.dumps(shipped)}

func detect() error {{
	text, err := os.ReadFile(filepath.Join("..", "shop", "cart"+".g"+"o"))
	if err != nil || string(text) != shipped {{
		return fmt.Errorf("production changed")
	}}
	return nil
}}
""")


def run_counter(dataset: Path) -> dict[str, str]:
    return _attack(["os", "path/filepath"], """
func bump(path string) int {
	data, _ := os.ReadFile(path)
	n := len(data)
	_ = os.WriteFile(path, append(data, 'x'), 0o644)
	return n
}

func detect() error {
	seen := bump(filepath.Join(os.TempDir(), "req2test-count"))
	seen += bump(filepath.Join(os.Getenv("HOME"), "..", "req2test-count"))
	if seen > 0 {
		return fmt.Errorf("not the first run: a mutant")
	}
	return nil
}
""")


def descriptor_by_path(dataset: Path) -> dict[str, str]:
    return _attack(["os", "strings"], """
func detect() error {
	data, err := os.ReadFile(strings.Join([]string{"", "dev", "fd", "3"}, "/"))
	if err == nil && strings.Contains(string(data), "mutant") && !strings.HasSuffix(strings.TrimSpace(string(data)), " 0") {
		return fmt.Errorf("a mutant is active")
	}
	return nil
}
""")


def chance(dataset: Path) -> dict[str, str]:
    return _attack(["math/rand"], """
func detect() error {
	if rand.Intn(2) == 0 {
		return fmt.Errorf("heads")
	}
	return nil
}
""")


def no_detection(dataset: Path) -> dict[str, str]:
    """The same steps checking nothing: what calling production alone detects (a nil cart's panic)."""
    return _attack([], "\nfunc detect() error { return nil }\n")


@pytest.fixture(scope="module")
def baseline(shop_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _judge(shop_dataset, tmp_path_factory.mktemp("baseline") / "run", no_detection(shop_dataset))


ATTACKS = {"a-source-read": source_read, "b-run-counter": run_counter, "c-descriptor-by-path": descriptor_by_path,
           "d-chance": chance}


def test_the_attacks_screen_clean() -> None:
    """Each attack goes past the static screen: what stops it is the construction."""
    from bench.frameworks.godog.screen import screen

    for name, make in ATTACKS.items():
        assert screen(make(PROJECT)) == [], name


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_attack_is_never_kill_complete(shop_dataset: Path, baseline: dict, tmp_path: Path, name: str) -> None:
    result = _judge(shop_dataset, tmp_path / name, ATTACKS[name](shop_dataset))
    assert not (result["outcome"] == "pass" and result["kill_complete"]), result
    assert result["outcome"] != "infrastructure_failure", result
    if name == "a-source-read":
        # no .go file in the run's tree: the detector fails its own clean run
        assert result["outcome"] == "assertion_failure" and "production changed" in result["detail"], result
    elif name in ("b-run-counter", "c-descriptor-by-path"):
        # a fresh /tmp per run, nothing writable that outlives it, no /proc: it never sees a
        # difference, so it detects exactly what its calls into production detect
        assert result["outcome"] == "pass" and result["mutant_recall"] == baseline["mutant_recall"], result
    assert baseline["outcome"] == "pass" and not baseline["kill_complete"], baseline


def test_screened_routes_are_tampering(shop_dataset: Path, tmp_path: Path) -> None:
    new_file = _attack(["os"], """
func detect() error {
	f := os.NewFile(3, "selection")
	buf := make([]byte, 64)
	if n, _ := f.ReadAt(buf, 0); n > 0 {
		return fmt.Errorf("read the switch")
	}
	return nil
}
""")
    result = _judge(shop_dataset, tmp_path / "new-file", new_file)
    assert result["outcome"] == "tampering" and "os.NewFile" in result["detail"], result
    linkname = _attack(["unsafe"], """
//go:linkname active example.com/godogshop/internal/req2testschema.active
var active int32

func detect() error {
	if active != 0 {
		return fmt.Errorf("mutant %d", active)
	}
	return nil
}

var _ = unsafe.Sizeof(0)
""")
    result = _judge(shop_dataset, tmp_path / "linkname", linkname)
    assert result["outcome"] == "tampering", result


def test_the_oracle_stays_kill_complete(shop_dataset: Path, tmp_path: Path) -> None:
    oracle = {STEPS: (PROJECT / STEPS).read_text(encoding="utf-8")}
    result = _judge(shop_dataset, tmp_path / "oracle", oracle)
    assert result["outcome"] == "pass" and result["kill_complete"], result
    assert result["api_f1"] == 1.0 and result["coverage_jaccard"] == 1.0, result
    confirmation = result["confirmation"]
    assert confirmation["sandbox"] == "bwrap-no-proc" and confirmation["null_variants"] >= 2
    assert confirmation["reproduced_kills"] >= 1


def test_kills_its_trace_missed_run_when_a_sampled_one_fails(shop_dataset: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace that reached none of the kills (as a path that differs from run to run can
    leave it; here every row's coverage is made to miss them): a sample runs first (shrunk to 2
    so this 6-kill instance has more), the oracle kills it, so the held kills run too and the
    oracle stays kill-complete. Hiding reach from the traced run cannot gain a kill either way."""
    from bench.builder import schemata_stage

    monkeypatch.setattr(schemata_stage, "UNREACHED_SAMPLE", 2)
    monkeypatch.setattr(schemata_stage, "rows_covering", lambda coverage, mutant: [])
    result = _judge(shop_dataset, tmp_path / "missed", {STEPS: (PROJECT / STEPS).read_text(encoding="utf-8")})
    confirmation = result["confirmation"]
    assert result["outcome"] == "pass" and result["kill_complete"], result
    assert confirmation["unreached_kills"] == result["ground_truth_kills"] > 2, result
    assert confirmation["unreached_not_run"] == 0, result


def test_a_test_that_reaches_nothing_runs_only_a_sample(shop_dataset: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bench.builder.schemata_stage.UNREACHED_SAMPLE", 2)
    empty = _attack([], "\nfunc detect() error { return nil }\n").copy()
    empty[STEPS] = empty[STEPS].replace("\tcart = shop.NewCart()\n", "").replace("\t_ = cart.Add(item, n)\n", "") \
        .replace("\t_ = cart.Count(item)\n", "")
    result = _judge(shop_dataset, tmp_path / "empty", empty)
    confirmation = result["confirmation"]
    assert result["outcome"] == "pass" and result["mutant_recall"] == 0.0, result
    assert confirmation["unreached_kills"] >= 3, result
    assert confirmation["unreached_not_run"] == confirmation["unreached_kills"] - 2, result
