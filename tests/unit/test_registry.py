"""One registry idiom for every pluggable kind (``bench.registry.Registry``): the generic class, then
each kind — a name resolves, an unknown name is a one-line error naming what is available."""

from __future__ import annotations

import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from bench import registry as generic
from bench.registry import Registry, UnknownName

GROUP = "req2test.test-widgets"


class Widget:
    pass


class Gadget(Widget):
    pass


@pytest.fixture
def widget_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An importable module ``regtest_widgets`` that nothing has imported yet."""
    (tmp_path / "regtest_widgets.py").write_text(textwrap.dedent(f"""
        from {__name__} import Gadget

        class Sprocket(Gadget):
            pass
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("regtest_widgets", None)
    yield "regtest_widgets"
    sys.modules.pop("regtest_widgets", None)


def _widgets(**kwargs) -> Registry[type[Widget]]:
    builtins = {"gadget": f"{__name__}:Gadget", "broken": "no_such_module_anywhere:Thing"}
    return Registry("widget", Widget, builtins, GROUP, **kwargs)


def test_builtins_are_imported_on_first_use_and_cached(widget_module: str) -> None:
    widgets = Registry("widget", Widget, {"sprocket": f"{widget_module}:Sprocket"}, None)
    assert widgets.available() == ["sprocket"] and "sprocket" in widgets
    assert widget_module not in sys.modules  # naming it cost nothing
    sprocket = widgets.get("sprocket")
    assert sprocket.__name__ == "Sprocket" and widget_module in sys.modules
    assert widgets.get("sprocket") is sprocket
    # a built-in that cannot load is listed all the same, and fails only when asked for
    assert "broken" in _widgets().available()
    with pytest.raises(UnknownName, match=r"^cannot load widget 'no_such_module_anywhere:Thing': "):
        _widgets().get("broken")


def test_register_an_object_or_a_path_and_a_later_registration_replaces() -> None:
    widgets = _widgets()
    assert widgets.get("gadget") is Gadget
    widgets.register("gadget", Widget)  # replaces the built-in, even once loaded
    assert widgets.get("gadget") is Widget
    widgets.register("other", f"{__name__}:Gadget")
    assert widgets.get("other") is Gadget
    widgets.register("other", Widget)
    assert widgets.get("other") is Widget
    assert widgets.available() == ["broken", "gadget", "other"]


def test_unknown_name_is_one_line_naming_what_is_available() -> None:
    class UnknownWidget(UnknownName):
        pass

    with pytest.raises(UnknownWidget) as raised:
        _widgets(error=UnknownWidget).get("nope")
    assert str(raised.value) == "no widget named 'nope'; available: broken, gadget"
    assert isinstance(raised.value, LookupError)
    with pytest.raises(UnknownName) as raised:
        _widgets(hint="or module:Class").get("nope")
    assert str(raised.value) == "no widget named 'nope'; available: broken, gadget; or module:Class"


def test_what_is_not_of_the_base_class_is_refused() -> None:
    widgets = _widgets()
    widgets.register("str", str)
    with pytest.raises(UnknownName, match=rf"^'str' resolves to <class 'str'>, which is not a {__name__}.Widget$"):
        widgets.get("str")
    with pytest.raises(UnknownName, match="which is not a"):
        widgets.load_path("builtins:dict")
    assert Registry("thing", None, {}, None).load_path("builtins:len") is len  # no base: anything goes


def test_installed_packages_add_names_through_the_entry_point_group(widget_module: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    found = [metadata.EntryPoint("sprocket", f"{widget_module}:Sprocket", GROUP),
             metadata.EntryPoint("gadget", f"{widget_module}:Sprocket", GROUP),  # a built-in name: the built-in wins
             metadata.EntryPoint("sprocket", f"{__name__}:Gadget", GROUP)]  # a second claim: the first keeps it
    asked: list[str] = []

    def entry_points(group: str) -> list[metadata.EntryPoint]:
        asked.append(group)
        return [ep for ep in found if ep.group == group]

    monkeypatch.setattr(generic.metadata, "entry_points", entry_points)
    widgets = _widgets()
    assert widgets.available() == ["broken", "gadget", "sprocket"] and asked == [GROUP]
    assert widget_module not in sys.modules
    assert widgets.get("sprocket").__name__ == "Sprocket"
    assert widgets.get("gadget") is Gadget
    widgets.register("sprocket", Widget)  # code registers over an installed package
    assert widgets.get("sprocket") is Widget
    assert Registry("widget", Widget, {}, None).available() == []  # no group: entry points are not read

    def broken(group: str) -> list[metadata.EntryPoint]:
        raise RuntimeError("a broken distribution")

    monkeypatch.setattr(generic.metadata, "entry_points", broken)
    assert _widgets().get("gadget") is Gadget  # the built-ins still resolve


def test_a_copy_registers_apart() -> None:
    widgets = _widgets()
    twin = widgets.copy()
    twin.register("extra", Widget)
    assert "extra" in twin and "extra" not in widgets


# --------------------------------------------------------------------------- each kind
def _one_line(error: BaseException, *names: str) -> str:
    message = str(error)
    assert "\n" not in message and all(name in message for name in names), message
    return message


def test_frameworks() -> None:
    from bench.frameworks import registry
    from bench.frameworks.protocol import Framework

    assert isinstance(registry.get_framework("behave"), Framework)
    with pytest.raises(registry.UnknownFramework) as raised:
        registry.get_framework("nosuch")
    assert isinstance(raised.value, UnknownName)
    assert _one_line(raised.value).startswith("no test framework named 'nosuch'; available: behave, cucumber-js, cucumber-jvm, godog")


def test_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.agents import registry
    from harness.agents.calibration import CalibrationAgent, NoneAgent
    from harness.generate import GenerateError, load_agent

    assert isinstance(registry.make_agent("none", tmp_path), NoneAgent)
    oracle = registry.make_agent("oracle", tmp_path)  # a factory given the dataset directory
    assert isinstance(oracle, CalibrationAgent) and oracle.kind == "oracle" and oracle.dataset_dir == tmp_path
    assert isinstance(load_agent("harness.agents.calibration:NoneAgent", tmp_path), NoneAgent)  # module:Class
    assert list(registry.BUILTIN) == ["builtin", "codex", "claude-code", "aider", "openhands", "oracle", "empty",
                                      "then-stripped", "none"]
    with pytest.raises(GenerateError) as raised:
        load_agent("nosuch", tmp_path)
    assert _one_line(raised.value, *registry.BUILTIN).startswith("no agent named 'nosuch'; available: aider, ")
    assert str(raised.value).endswith("; or module:Class")
    with pytest.raises(GenerateError, match=r"^cannot load agent 'no_such_module_anywhere:Agent': "):
        load_agent("no_such_module_anywhere:Agent", tmp_path)
    monkeypatch.setattr(registry, "REGISTRY", registry.REGISTRY.copy())
    registry.REGISTRY.register("mine", NoneAgent)
    assert isinstance(load_agent("mine", tmp_path), NoneAgent)


def test_selectors() -> None:
    from harness.strategies import selectors

    assert selectors.REGISTRY.get("static") is selectors._static
    assert selectors.REGISTRY.available() == sorted(selectors.SELECTORS)
    with pytest.raises(selectors.UnknownSelector) as raised:
        selectors.select("best", [], selectors.SelectionContext(instance=None))  # type: ignore[arg-type]
    assert isinstance(raised.value, ValueError)  # what select's callers have always caught
    assert _one_line(raised.value) == "no selector named 'best'; available: consensus, judge, oracle, static"


def test_sandbox_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from harness.sandbox import backends
    from harness.sandbox.base import SandboxError, SandboxPolicy

    assert backends.REGISTRY.get("local") is backends._local
    assert backends.REGISTRY.available() == ["bwrap", "docker", "local"]
    policy = SandboxPolicy.model_construct(name="p", backend="podman")
    with pytest.raises(SandboxError) as raised:
        backends.create_backend(policy, None, None)  # type: ignore[arg-type]
    assert _one_line(raised.value) == "no sandbox backend named 'podman'; available: bwrap, docker, local"
    # what a policy may name is what the registry resolves: a registered backend too
    with pytest.raises(ValidationError) as refused:
        SandboxPolicy(name="p", backend="podman")
    assert refused.value.errors()[0]["msg"] == "no sandbox backend named 'podman'; available: bwrap, docker, local"
    monkeypatch.setattr(backends, "REGISTRY", backends.REGISTRY.copy())
    backends.REGISTRY.register("podman", backends._local)
    assert SandboxPolicy(name="p", backend="podman").backend == "podman"


def test_executors(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.experiment import executors

    assert executors.make_executor("local:2").name == "local:2"
    with pytest.raises(executors.ExecutorError) as raised:
        executors.make_executor("dask:4")
    assert isinstance(raised.value, UnknownName)
    assert _one_line(raised.value).startswith("executor 'dask:4': no executor named 'dask'; available: local, ray; "
                                              "use local, local:N")
    made: list[str | None] = []

    def batch(argument: str | None) -> executors.LocalExecutor:
        made.append(argument)
        return executors.LocalExecutor()

    monkeypatch.setattr(executors, "REGISTRY", executors.REGISTRY.copy())
    executors.REGISTRY.register("batch", batch)
    executors.make_executor("batch")
    executors.make_executor("batch:queue=long")
    assert made == [None, "queue=long"]


def test_variants() -> None:
    from harness.strategies import variants

    assert variants.REGISTRY.get("broad_except") is variants.broad_except
    assert variants.REGISTRY.available() == sorted(variants.VARIANTS)
    with pytest.raises(variants.UnknownVariant) as raised:
        variants.REGISTRY.get("inverted")
    assert _one_line(raised.value) == ("no variant named 'inverted'; available: broad_except, constructed_state, "
                                       "then_stripped, weakened_checks")
