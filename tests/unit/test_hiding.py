"""Body hiding keeps every declaration byte-for-byte; policies load by name; the diff sorts changes."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from bench.frameworks.registry import get_framework
from bench.languages.python_hiding import hide_bodies
from harness.sandbox.base import SandboxError
from harness.sandbox.policy import available_policies, load_policy
from harness.sandbox.workspace import Workspace

SOURCE = textwrap.dedent('''
    """Module doc."""
    import abc
    from typing import overload

    LIMIT = 3  # module constant


    # a comment before the class
    class Account:
        """An account."""

        rate: float = 0.5  # class attribute

        @property
        def name(self) -> str:  # trailing comment
            """The name."""
            # implementation detail
            return self._name.upper()

        def history(self):
            for entry in self._entries:
                yield entry

        @overload
        def get(self, key: int) -> int: ...

        @abc.abstractmethod
        def close(self): ...

        def noop(self):
            pass

        def one(self): return 1


    def outer(a, *, b: int = 2):
        def inner():
            return a + b
        return inner()
''')


def test_hide_everything_keeps_declarations_docstrings_and_comments() -> None:
    text, report = hide_bodies(SOURCE, lambda qualname, line: True)
    ast.parse(text)
    for kept in ['"""Module doc."""', "LIMIT = 3  # module constant", "# a comment before the class",
                 "rate: float = 0.5  # class attribute", "@property", "def name(self) -> str:  # trailing comment",
                 '"""The name."""', "@overload", "def get(self, key: int) -> int: ...", "@abc.abstractmethod",
                 "def outer(a, *, b: int = 2):"]:
        assert kept in text, kept
    for gone in ["implementation detail", "self._name.upper()", "self._entries", "return a + b", "return 1"]:
        assert gone not in text, gone
    assert {"Account.name", "Account.history", "Account.one", "outer"} <= set(report.hidden)
    assert {"Account.get", "Account.close", "Account.noop"} == set(report.kept_stubs)
    # a hidden generator is still a generator
    namespace: dict = {}
    exec(compile(text, "m.py", "exec"), namespace)  # noqa: S102 - the hidden module, run to check what it does
    assert namespace["Account"].history.__code__.co_flags & 0x20
    with pytest.raises(NotImplementedError, match="implementation hidden"):
        namespace["outer"](1)


def test_hide_selected_by_def_line_and_qualname() -> None:
    line = next(i for i, text in enumerate(SOURCE.splitlines(), 1) if "def inner" in text)
    text, report = hide_bodies(SOURCE, lambda qualname, def_line: def_line == line)
    assert report.hidden == ["outer.<locals>.inner"]
    assert "return inner()" in text and "return a + b" not in text
    assert "self._name.upper()" in text


def test_policies_load_by_name_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"default", "docker", "local", "provider-only"} <= set(available_policies())
    default = load_policy("default")
    assert default.backend == "bwrap" and default.wall_clock_seconds == 3600 and not default.egress_allow
    own = tmp_path / "mine.toml"
    own.write_text('backend = "bwrap"\nwall_clock_seconds = 60\negress_allow = ["127.0.0.1:9"]\n')
    assert load_policy(own).name == "mine" and load_policy(own).wall_clock_seconds == 60
    monkeypatch.setenv("REQ2TEST_SANDBOXES", str(tmp_path))
    assert load_policy("mine").egress_allow == ["127.0.0.1:9"]
    (tmp_path / "bad.toml").write_text('backend = "vm"\n')
    with pytest.raises(SandboxError, match="bad.toml: backend"):
        load_policy("bad")
    with pytest.raises(SandboxError, match="no sandbox policy 'nope'"):
        load_policy("nope")


def test_workspace_diff_keeps_tests_discards_production_ignores_caches(tmp_path: Path) -> None:
    view = tmp_path / "view"
    (view / "features" / "steps").mkdir(parents=True)
    (view / "src").mkdir()
    (view / "src" / "lib.py").write_text("X = 1\n")
    (view / "features" / "a.feature").write_text("Feature: a\n")
    (view / "features" / "environment.py").write_text("")
    workspace = Workspace.create(view, tmp_path / "ws", tmp_path / "history.git", "features", get_framework("behave").test_area(view, "features"))
    assert not (tmp_path / "ws" / ".git").exists()  # history stays outside what the agent sees
    root = workspace.root
    (root / "features" / "steps" / "a_steps.py").write_text("from behave import given\n")
    (root / "features" / "steps" / "helpers.py").write_text("def h(): pass\n")
    (root / "src" / "lib.py").write_text("X = 2\n")
    (root / "features" / "a.feature").write_text("Feature: b\n")
    (root / "features" / "environment.py").write_text("x = 1\n")
    (root / "features" / "steps" / "__pycache__").mkdir()
    (root / "features" / "steps" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (root / ".aider.chat.history.md").write_text("chat")
    diff = workspace.diff()
    assert set(diff.test_files) == {"features/steps/a_steps.py", "features/steps/helpers.py"}
    assert set(diff.discarded) == {"src/lib.py", "features/a.feature", "features/environment.py"}
    assert "outside the test area" in diff.discarded["src/lib.py"]
    assert set(diff.ignored) == {"features/steps/__pycache__/a.cpython-311.pyc", ".aider.chat.history.md"}
    assert workspace.diff() == diff  # diffing twice changes nothing


def test_local_backend_needs_opt_in_and_says_it_is_not_isolated(tmp_path: Path) -> None:
    from harness.sandbox.base import SandboxPolicy
    from harness.sandbox.local_backend import LocalSandbox

    view = tmp_path / "view"
    (view / "features").mkdir(parents=True)
    workspace = Workspace.create(view, tmp_path / "ws", tmp_path / "h.git", "features", get_framework("behave").test_area(view, "features"))
    with pytest.raises(SandboxError, match="allow_local"):
        LocalSandbox(SandboxPolicy(name="x", backend="local"), workspace).start()
    sandbox = LocalSandbox(load_policy("local"), workspace)
    sandbox.start()
    sandbox.write_file("/workspace/features/steps/s.py", "x = 1\n")
    assert sandbox.exec("cat features/steps/s.py").stdout == "x = 1\n"
    with pytest.raises(SandboxError, match="escapes the workspace"):
        sandbox.read_file("../../etc/passwd")
    assert set(sandbox.diff().test_files) == {"features/steps/s.py"}
    report = sandbox.close()
    assert report.isolated is False and "NOT ISOLATED" in report.notes[0]


def test_every_language_brings_its_body_hider() -> None:
    from bench.frameworks.cucumber_js.hiding import JsHider
    from bench.frameworks.registry import get_framework
    from bench.languages.python_hiding import PythonHider

    assert isinstance(get_framework("behave").language.hider(), PythonHider)
    assert isinstance(get_framework("cucumber-js").language.hider(), JsHider)
