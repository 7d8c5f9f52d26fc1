"""The static screen of submitted Go (``bench.frameworks.godog.screen``): the routes around Go's
memory safety and package boundaries are refused, ordinary test idioms never are, and the
project's own shipped infrastructure (a TestMain binding godog's flags) is not the submission's
doing."""

from __future__ import annotations

import pytest

from bench.frameworks.godog.screen import screen

HEAD = 'package bdd\n\nimport (\n{imports}\n)\n\n'


def _file(imports: str, body: str) -> dict[str, str]:
    return {"bdd/steps_test.go": HEAD.format(imports=imports) + body}


ATTACKS = {
    "unsafe": ('\t"unsafe"', "var _ = unsafe.Sizeof(0)\n"),
    "aliased unsafe": ('\tu "unsafe"', "var _ = u.Sizeof(0)\n"),
    "cgo": ('\t"C"', ""),
    "syscall": ('\t"syscall"', "func f() { var st syscall.Stat_t; _ = syscall.Fstat(3, &st) }\n"),
    "x/sys": ('\t"golang.org/x/sys/unix"', "func f() { _ = unix.Getpid() }\n"),
    "new file": ('\t"os"', 'func f() { _ = os.NewFile(3, "x") }\n'),
    "aliased new file": ('\tsys "os"', 'func f() { g := sys.NewFile; _ = g }\n'),
    "executable": ('\t"os"', "func f() { _, _ = os.Executable() }\n"),
    "command line": ('\t"os"', "func f() { _ = os.Args }\n"),
    "flag lookup": ('\t"flag"', 'func f() { _ = flag.Lookup("test.coverprofile") }\n'),
    "cover mode": ('\t"testing"', "func f() { _ = testing.CoverMode() }\n"),
    "runtime coverage": ('\t"runtime/coverage"', ""),
    "stack": ('\t"runtime"', "func f() { _ = runtime.Callers(0, nil) }\n"),
    "func for pc": ('\t"runtime"', "func f() { _ = runtime.FuncForPC(0) }\n"),
    "debug": ('\t"runtime/debug"', "func f() { debug.ReadBuildInfo() }\n"),
    "elf": ('\t"debug/elf"', ""),
    "gosym": ('\t"debug/gosym"', ""),
    "plugin": ('\t"plugin"', ""),
    "reflect.NewAt": ('\t"reflect"', "func f() { _ = reflect.NewAt }\n"),
    "schema import": ('\t"example.com/godogshop/internal/req2testschema"', ""),
    "linkname": ('\t_ "unsafe"', ("//go:linkname active example.com/godogshop/internal/req2testschema.active\n"
                                    "var active int32\n")),
    "linkname alone": ('\t"fmt"', "//go:linkname f fmt.Println\nfunc f()\nvar _ = fmt.Sprint\n"),
    "embed": ('\t_ "embed"', "//go:embed features\nvar x string\n"),
    "proc": ('\t"os"', 'func f() { _, _ = os.ReadFile("/proc/self/maps") }\n'),
    "dev fd": ('\t"os"', 'func f() { _, _ = os.Open("/dev/fd/3") }\n'),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_route_is_refused(name: str) -> None:
    imports, body = ATTACKS[name]
    findings = screen(_file(imports, body))
    assert findings, name
    assert all(f.startswith("bdd/steps_test.go:") for f in findings)


ORDINARY = """
func theCartHolds(n int, item string) error {
	data, err := os.ReadFile(filepath.Join("features", "resources", "cart.json"))
	if err != nil {
		return err
	}
	var want map[string]int
	if err := json.Unmarshal(data, &want); err != nil {
		return err
	}
	if !reflect.DeepEqual(want, map[string]int{item: n}) || runtime.GOOS == "plan9" {
		return fmt.Errorf("got %v", want)
	}
	ctx := context.Background()
	_ = ctx
	_ = regexp.MustCompile(`^x$`)
	_ = strings.HasSuffix("cart.json", ".json")
	_ = os.Getenv("HOME")
	// a comment may say go:linkname or /proc without being a directive
	return nil
}
"""


def test_ordinary_test_idioms_are_never_refused() -> None:
    imports = "\n".join(f'\t"{p}"' for p in ("context", "encoding/json", "fmt", "os", "path/filepath", "reflect",
                                            "regexp", "runtime", "strings", "github.com/cucumber/godog"))
    assert screen(_file(imports, ORDINARY + "var _ godog.Step\n")) == []


SHIPPED_MAIN = """
var opt = godog.Options{Output: os.Stdout}

func init() {
	godog.BindFlags("godog.", flag.CommandLine, &opt)
}

func TestMain(m *testing.M) {
	flag.Parse()
	opt.Paths = flag.Args()
	os.Exit(godog.TestSuite{Name: "x", Options: &opt}.Run())
}
"""


def test_the_projects_own_infrastructure_is_not_the_submissions_doing() -> None:
    """go-algorand-sdk's steps_test.go holds its TestMain: the oracle submits it as shipped."""
    imports = '\t"flag"\n\t"os"\n\t"testing"\n\t"github.com/cucumber/godog"'
    files = _file(imports, SHIPPED_MAIN)
    assert screen(files)  # flag.CommandLine, flag.Args: refused in new code ...
    assert screen(files, shipped=files) == []  # ... not in the declarations the project shipped
    # the same TestMain changed by one token is new code again
    changed = {k: v.replace("flag.Args()", "flag.Args()[1:]") for k, v in files.items()}
    assert any("flag.Args" in f for f in screen(changed, shipped=files))
    # and a shipped declaration does not launder an import
    with_unsafe = _file(imports + '\n\t"unsafe"', SHIPPED_MAIN + "var _ = unsafe.Sizeof(0)\n")
    assert any("unsafe" in f for f in screen(with_unsafe, shipped=files))


def test_what_the_construction_makes_useless_is_not_screened() -> None:
    """A child process has the test's own powers in the same sandbox; the sandbox holds no Go
    source. coddy-agent's tests start git and write fixtures named ``react.go``."""
    body = 'func f() { _ = exec.Command("git", "init"); _ = os.WriteFile("react.go", nil, 0o644) }\n'
    assert screen(_file('\t"os"\n\t"os/exec"', body)) == []


def test_a_forbidden_import_the_project_makes_screens_each_use() -> None:
    """coddy-agent's tests re-exec their own binary (os.Args[0]): shipped, they pass; a new use
    of the same name is still refused."""
    shipped = _file('\t"os"', 'func helper() string { return os.Args[0] }\n')
    assert screen(shipped, shipped=shipped) == []
    added = {k: v + 'func mine() []string { return os.Args }\n' for k, v in shipped.items()}
    assert [f for f in screen(added, shipped=shipped) if "os.Args" in f]
    syscalls = _file('\t"syscall"', "func shipped() { _ = syscall.Getpid() }\n")
    assert screen(syscalls, shipped=syscalls) == []
    more = {k: v + "func mine() { _ = syscall.Getppid() }\n" for k, v in syscalls.items()}
    assert [f for f in screen(more, shipped=syscalls) if "syscall.Getppid" in f]


def test_only_go_files_are_screened() -> None:
    assert screen({"bdd/features/x.feature": 'import "unsafe"\n/proc/self/mem\n'}) == []
