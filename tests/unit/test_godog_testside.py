"""The godog test side (``bench.frameworks.godog.testside``): registration sites, handlers,
closures, the workspace text operations and the calibration bodies, on small inline Go
packages; the ``needs_go`` tests compile the results (a package of its own, no module needed),
the ``slow`` one does the same on the assembled go-algorand-sdk corpus."""

from __future__ import annotations

import random
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.godog.cucumber_json import StepMatch
from bench.frameworks.godog.testside import TestSideGo, _zero, calibration_files, prune_imports, unescape_go

needs_go = pytest.mark.skipif(shutil.which("go") is None and not Path("/usr/local/go/bin/go").is_file(),
                              reason="the Go toolchain is not installed")

# A stand-in for godog's ScenarioContext keeps the package self-contained (it compiles without
# the module); the scan does not care what the receiver is.
STEPS = textwrap.dedent('''\
    package steps

    import (
    	"context"
    	"fmt"
    	"regexp"
    	str "strings"

    	_ "embed"
    	. "math"
    )

    const greeting = `^I greet "([^"]*)"$`

    type key struct{}

    // InitializeScenario registers the steps.
    func InitializeScenario(s *Context, w *world) {
    	s.Step(`^I have (\\d+) cukes$`, iHaveCukes) // raw
    	s.Step("^I eat \\"(\\\\d+)\\"\\\\.\\t$", iEat)
    	s.Then(regexp.MustCompile("^there are (\\\\d+) left$"), w.left)
    	s.When(greeting, func(ctx context.Context, name string) (context.Context, error) {
    		return context.WithValue(ctx, key{}, shout(name)), nil
    	})
    	s.Step(`^I also have (\\d+) cukes$`, iHaveCukes)
    	s.Before(func(ctx context.Context) (context.Context, error) {
    		reset()
    		return ctx, nil
    	})
    }

    func iHaveCukes(n int) error {
    	return count(n)
    }

    func iEat(n int) error {
    	return count(-n)
    }

    // count is a helper two handlers share.
    func count(n int) error {
    	if n > 1000 {
    		return fmt.Errorf("too many: %d", n)
    	}
    	total += n
    	return nil
    }

    func shout(name string) string {
    	return str.ToUpper(name) + fmt.Sprint(Pi)
    }

    func reset() { total = int(Sqrt(0)) }

    var total int

    type world struct{ left0 int }

    func (w *world) left(n int) error {
    	if w.left0 != n {
    		return fmt.Errorf("%d left, not %d", w.left0, n)
    	}
    	return nil
    }

    type Context struct{}

    func (c *Context) Step(expr, handler interface{})       {}
    func (c *Context) Then(expr, handler interface{})       {}
    func (c *Context) When(expr, handler interface{})       {}
    func (c *Context) Before(handler interface{})           {}
''')

HELPERS = textwrap.dedent('''\
    package steps

    import "os"

    // nobody calls it: dead code stays in a view
    func unused() string { return os.Getenv("X") }
''')


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "steps").mkdir()
    (tmp_path / "go.mod").write_text("module example.com/cukes\n\ngo 1.21\n")
    (tmp_path / "steps" / "steps.go").write_text(STEPS)
    (tmp_path / "steps" / "helpers.go").write_text(HELPERS)
    (tmp_path / "steps" / "sub").mkdir()  # another package: not scanned
    (tmp_path / "steps" / "sub" / "x.go").write_text("package sub\n\nfunc iEat() {}\n")
    return tmp_path


def _by_line(side: TestSideGo) -> dict[int, object]:
    return {s.line: s for s in side.sites()}


def test_sites_patterns_and_handlers(project: Path) -> None:
    side = TestSideGo(project, "steps")
    assert side.files == ["steps/helpers.go", "steps/steps.go"]
    sites = side.sites()
    assert [(s.method, s.pattern, s.handler) for s in sites[:3]] == [
        ("Step", r"^I have (\d+) cukes$", "iHaveCukes"),  # raw string
        ("Step", '^I eat "(\\d+)"\\.\t$', "iEat"),  # interpreted: \" \\ \t unescaped
        ("Then", r"^there are (\d+) left$", "w.left"),  # regexp.MustCompile
    ]
    greet = sites[3]
    assert greet.pattern == '^I greet "([^"]*)"$' and greet.method == "When" and greet.kind == "when"
    assert greet.handler.startswith("func(ctx context.Context") and (greet.line, greet.end_line) == (22, 24)
    assert len(sites) == 5  # s.Before is not a registration
    first = sites[0]
    assert first.key == "steps/steps.go:19" and first.qualname == "Step('^I have (\\\\d+) cukes$')"
    assert first.initializer == "InitializeScenario" and first.kind is None
    # handlers: a function by name, a method value, a literal
    assert [d.qualname for d in side.handlers(first)] == ["iHaveCukes"]
    assert [(d.qualname, d.kind) for d in side.handlers(sites[2])] == [("world.left", "method")]
    [literal] = side.handlers(greet)
    assert literal.kind == "literal" and (literal.line, literal.end_line) == (22, 24)
    assert side.handlers(sites[4]) == side.handlers(first)  # one handler, two registrations
    # the hook reaches reset; `s.Before` reaches the stand-in's Before (a method, by name)
    assert {d.qualname for d in side.infrastructure_functions} == {"InitializeScenario", "reset", "Context.Before"}


def test_site_for_pattern_and_locations(project: Path) -> None:
    side = TestSideGo(project, "steps")
    site = side.site_for_pattern(r"^I have (\d+) cukes$")
    assert site is not None and site.line == 19 and side.site_for_pattern("nope") is None
    # godog's match location: a function's line, a small function's first body line, a literal
    assert side.decl_at(StepMatch("steps.go", 32)).qualname == "iHaveCukes"
    assert side.decl_at(StepMatch("steps.go", 33)).qualname == "iHaveCukes"
    assert side.decl_at(StepMatch("steps.go", 22)).kind == "literal"
    assert side.decl_at(StepMatch("other.go", 32)) is None


def test_closure_follows_helpers_and_stops_at_infrastructure(project: Path) -> None:
    side = TestSideGo(project, "steps")
    sites = _by_line(side)
    eat = side.closure([sites[20]])
    assert [f.qualname for f in eat.functions] == ["iEat", "count"]
    assert eat.files == ["steps/steps.go"] and eat.literals == ()
    greet = side.closure([sites[22]])
    assert [f.qualname for f in greet.functions] == ["shout"] and len(greet.literals) == 1
    assert [f.qualname for f in side.closure([sites[21]]).functions] == ["world.left"]
    everything = side.closure(side.sites())
    assert {f.qualname for f in everything.functions} == {"iHaveCukes", "iEat", "count", "shout", "world.left"}


def test_files_without_and_keeping_keep_lines(project: Path) -> None:
    side = TestSideGo(project, "steps")
    sites = _by_line(side)
    original = STEPS.splitlines()
    out = side.files_without([sites[20], sites[22]])["steps/steps.go"].decode().splitlines()
    assert len(out) == len(original)
    assert out[19] == out[21] == out[22] == out[23] == ""  # lines 20 and 22-24 blanked
    assert out[18] == original[18] and out[20] == original[20] and "func iEat" in out[35]
    kept = side.files_keeping([sites[19]])["steps/steps.go"].decode().splitlines()
    assert len(kept) == len(original)
    assert [line for line in kept if ".Step(" in line or ".Then(" in line or ".When(" in line] == [original[18]]
    # nothing left unused: every import still has a user
    assert '"fmt"' in "\n".join(kept) and 'str "strings"' in "\n".join(kept)


def test_closure_removal_keeps_shared_helpers(project: Path) -> None:
    side = TestSideGo(project, "steps")
    sites = _by_line(side)
    files, gone = side.files_without_closure([sites[20]])  # iEat goes, count stays for iHaveCukes
    assert [d.qualname for d in gone] == ["iEat"]
    text = files["steps/steps.go"].decode()
    assert "func count" in text and "func iEat" not in text and len(text.splitlines()) == len(STEPS.splitlines())
    files, gone = side.files_without_closure([sites[19], sites[20], sites[25]])
    assert [d.qualname for d in gone] == ["iHaveCukes", "iEat", "count"]
    assert "// count is a helper" not in files["steps/steps.go"].decode()  # its doc comment goes with it


def test_files_isolating_keeps_only_what_the_sites_reach(project: Path) -> None:
    side = TestSideGo(project, "steps")
    sites = _by_line(side)
    text = side.files_isolating([sites[20]])["steps/steps.go"].decode()  # iEat only
    assert "func iEat" in text and "func count" in text and '"fmt"' in text
    for gone in ("func iHaveCukes", "func shout", "func (w *world) left", "str \"strings\"", "\"regexp\""):
        assert gone not in text, gone


def test_view_removes_implementation_and_unused_imports(project: Path) -> None:
    side = TestSideGo(project, "steps")
    files, removed, infrastructure = side.view()
    assert infrastructure == ["steps/helpers.go"]  # dead code stays, no change, no rewrite
    assert removed == sorted([f"steps/steps.go:{n}" for n in (19, 20, 21, 22, 25, 32, 36, 41, 49, 59)])
    text = files["steps/steps.go"].decode()
    for gone in ("iHaveCukes", "iEat", "func count", "shout", "func (w *world) left", "regexp", '"fmt"',
                 "strings"):
        assert gone not in text, gone
    for kept in ('"context"', '_ "embed"', '. "math"', "func reset", "reset()", "var total int",
                 "type world struct", "const greeting"):
        assert kept in text, kept
    assert "\n\n\n" not in text and "{\n\n" not in text  # no gaps left where things went


def test_prune_imports_names_aliases_and_blank_imports() -> None:
    original = textwrap.dedent('''\
        package p

        import (
        	"fmt"
        	js "encoding/json"
        	_ "embed"
        	. "strings"
        	"github.com/acme/go-widgets/v2"
        	yaml "gopkg.in/yaml.v3"
        )

        import "os"

        func a() { fmt.Println(js.Valid(nil), widgets.X, yaml.Y, os.Args, ToUpper("")) }
        func b() { fmt.Println() }
        ''').encode()
    edited = original.replace(b"fmt.Println(js.Valid(nil), widgets.X, yaml.Y, os.Args, ToUpper(\"\"))", b"")
    out = prune_imports(original, edited).decode()
    assert out.count("\n") == original.count(b"\n")  # lines kept
    assert '"fmt"' in out and '_ "embed"' in out and '. "strings"' in out  # still used / never removed
    for gone in ("encoding/json", "go-widgets", "yaml", '"os"'):
        assert gone not in out, gone
    assert "import" in out.split("func a")[0]  # the group stays, the lone import went
    # a guess the original never uses is left alone (the real name may differ)
    odd = b'package p\n\nimport "example.com/x-y/z.go"\n\nfunc a() { zz.Q() }\n'
    assert prune_imports(odd, odd.replace(b"zz.Q()", b"")) == odd.replace(b"zz.Q()", b"")


def test_unescape_and_zero_values() -> None:
    assert unescape_go(r'a\"b\\c\td\x41\101\u00e9\U0001F600') == 'a"b\\c\tdAAé😀'
    assert _zero("error", None) == "nil" and _zero("context.Context", "ctx") == "ctx"
    assert _zero("context.Context", None) == "nil" and _zero("int64", None) == "0"
    assert _zero("string", None) == '""' and _zero("bool", None) == "false"
    assert _zero("*godog.Table", None) == "nil" and _zero("types.Address", None) == "*new(types.Address)"


def test_calibration_bodies(project: Path) -> None:
    side = TestSideGo(project, "steps")
    sites = _by_line(side)
    chosen = [sites[19], sites[22], sites[21]]
    kinds = {sites[19].key: {"given"}, sites[22].key: {"when"}, sites[21].key: {"then"}}
    files = calibration_files(side, chosen, kinds)
    assert set(files) == {"oracle", "empty", "then-stripped"}
    assert files["oracle"]["steps/steps.go"] == STEPS
    empty = files["empty"]["steps/steps.go"]
    assert len(empty.splitlines()) == len(STEPS.splitlines())
    assert "func iHaveCukes(n int) error { return nil" in empty
    assert "(context.Context, error) { return ctx, nil" in empty
    assert "func (w *world) left(n int) error { return nil" in empty
    assert "return count(-n)" in empty  # iEat is not this scenario's
    stripped = files["then-stripped"]["steps/steps.go"]
    assert "func (w *world) left(n int) error { return nil" in stripped
    assert "return count(n)" in stripped and "shout(name)" in stripped
    # a handler also bound to a When step stays whole
    both = calibration_files(side, [sites[19], sites[25]], {sites[19].key: {"when"}, sites[25].key: {"then"}})
    assert both["then-stripped"]["steps/steps.go"] == STEPS


def _go_build(package: Path) -> subprocess.CompletedProcess:
    from bench.frameworks.godog.toolchain import GoToolchain

    toolchain = GoToolchain.find()
    return subprocess.run([toolchain.go, "vet", "./..."], cwd=package, env=toolchain.env(),
                          capture_output=True, text=True, timeout=300, check=False)


@needs_go
def test_inline_results_compile(project: Path) -> None:
    side = TestSideGo(project, "steps")
    sites = _by_line(side)
    assert _go_build(project).returncode == 0
    variants = [side.view()[0], side.files_without_closure(side.sites())[0], side.files_isolating([sites[22]]),
                side.files_without(side.sites()), side.strip_handlers(side.sites())]
    variants += [{k: v.encode() for k, v in calibration_files(side, [sites[22], sites[21]],
                                                             {sites[21].key: {"then"}})[name].items()}
                 for name in ("empty", "then-stripped")]
    for files in variants:
        for rel, data in files.items():
            (project / rel).write_bytes(data)
        result = _go_build(project)
        assert result.returncode == 0, result.stderr
        for rel in files:
            (project / rel).write_text(STEPS if rel.endswith("steps.go") else HELPERS)


# --------------------------------------------------------------------------- the real corpus
@pytest.mark.slow
def test_corpus_results_compile(tmp_path: Path) -> None:
    """go-algorand-sdk v2.12.0: the view, the negative validation, the removal of 20 random
    sites' closures, and one scenario's empty and then-stripped predictions each build a test
    binary (``go test -c``)."""
    from bench.frameworks.godog.toolchain import GoToolchain, download_modules

    if not Path("/work/.mirror/algorand+go-algorand-sdk").is_dir():
        pytest.skip("no mirror of algorand/go-algorand-sdk at /work/.mirror")
    try:
        toolchain = GoToolchain.find()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    from tests.integration.recipes import recipe

    corpus = recipe("go_algorand_sdk")

    try:
        root = corpus.assemble(tmp_path / "sdk", corpus.default_source("go-algorand-sdk"),
                               corpus.default_source("algorand-sdk-testing"))
    except (subprocess.CalledProcessError, SystemExit) as exc:
        pytest.skip(f"the corpus cannot be assembled here: {exc}")
    if not download_modules(root, toolchain).ok:
        pytest.skip("go mod download failed (no module proxy?)")
    side = TestSideGo(root, corpus.TEST_PACKAGE)
    sites = side.sites()
    assert len(sites) == 305 and all(side.handlers(s) for s in sites)

    def builds(files: dict[str, bytes]) -> str:
        originals = {rel: (root / rel).read_bytes() for rel in files}
        try:
            for rel, data in files.items():
                (root / rel).write_bytes(data)
            proc = subprocess.run([toolchain.go, "test", "-c", "-o", str(tmp_path / "x"), "./test"], cwd=root,
                                  env=toolchain.env(), capture_output=True, text=True, timeout=1800, check=False)
            return "" if proc.returncode == 0 else proc.stderr[-2000:]
        finally:
            for rel, data in originals.items():
                (root / rel).write_bytes(data)

    view, removed, _ = side.view()
    assert len(removed) > len(sites) and builds(view) == ""
    assert builds(side.files_without(sites)) == ""
    chosen = random.Random(0).sample(sites, 20)
    files, gone = side.files_without_closure(chosen)
    assert gone and builds(files) == ""
    assert builds(side.strip_handlers(sites)) == ""
    # one scenario, bound by pattern: offline.feature's first scenario
    feature = (root / "test/features/unit/offline.feature").read_text()
    texts = [line.strip().split(" ", 1) for line in feature.splitlines()
             if line.strip().startswith(("Given ", "When ", "Then ", "And "))][:4]
    import re

    scenario, kinds, previous = [], {}, "given"
    for keyword, text in texts:
        kind = previous if keyword == "And" else keyword.lower()
        previous = kind
        site = next((s for s in sites if re.search(s.pattern, text)), None)
        assert site is not None, text
        scenario.append(site)
        kinds.setdefault(site.key, set()).add(kind)
    calibration = calibration_files(side, scenario, kinds)
    assert calibration["empty"] != calibration["oracle"]
    for name in ("empty", "then-stripped"):
        assert builds({rel: text.encode() for rel, text in calibration[name].items()}) == "", name
