"""Framework name → implementation (as mini-swe-agent's ``get_environment_class``).

Built-in frameworks are listed by import path and imported on first use, so naming one
costs nothing until it is needed. Others register in code (``register``) or, from an
installed package, through the ``req2test.frameworks`` entry point group::

    [project.entry-points."req2test.frameworks"]
    mytool = "mypackage.framework:MyToolFramework"

The lookup itself is ``bench.registry.Registry``, the idiom every pluggable kind shares;
this module adds one instance per name (a framework caches what it learns about its runner).
"""

from __future__ import annotations

from bench.frameworks.protocol import Framework
from bench.registry import Registry, UnknownName

ENTRY_POINT_GROUP = "req2test.frameworks"
DEFAULT_FRAMEWORK = "behave"


class UnknownFramework(UnknownName):
    """No framework of that name is built in, registered or installed (or it does not load)."""


_REGISTRY: Registry[type[Framework]] = Registry(
    "test framework", Framework,
    {"behave": "bench.frameworks.behave.framework:BehaveFramework",
     "cucumber-js": "bench.frameworks.cucumber_js.framework:CucumberJsFramework",
     "godog": "bench.frameworks.godog.framework:GodogFramework",
     "cucumber-jvm": "bench.frameworks.cucumber_jvm.framework:CucumberJvmFramework"},
    ENTRY_POINT_GROUP, error=UnknownFramework)
_instances: dict[str, Framework] = {}


def register(name: str, implementation: type[Framework] | str) -> None:
    """Make ``name`` resolve to ``implementation`` (a class or ``"module:Class"``);
    a later registration of the same name replaces the earlier one."""
    _REGISTRY.register(name, implementation)
    _instances.pop(name, None)


def available() -> list[str]:
    """Every name ``get_framework`` resolves, sorted."""
    return _REGISTRY.available()


def get_framework(name: str | None = None) -> Framework:
    """The framework registered as ``name`` (default: behave), one instance per name."""
    key = name or DEFAULT_FRAMEWORK
    if key not in _instances:
        _instances[key] = _REGISTRY.get(key)()
    return _instances[key]
