"""Framework name → implementation (as mini-swe-agent's ``get_environment_class``).

Built-in frameworks are listed by import path and imported on first use, so naming one
costs nothing until it is needed. Others register in code (``register``) or, from an
installed package, through the ``req2test.frameworks`` entry point group::

    [project.entry-points."req2test.frameworks"]
    mytool = "mypackage.framework:MyToolFramework"
"""

from __future__ import annotations

import importlib
from importlib import metadata

from bench.frameworks.protocol import Framework

ENTRY_POINT_GROUP = "req2test.frameworks"
DEFAULT_FRAMEWORK = "behave"

_BUILTIN: dict[str, str] = {
    "behave": "bench.frameworks.behave_framework:BehaveFramework",
    "cucumber-js": "bench.frameworks.cucumber_js.framework:CucumberJsFramework",
}
_registered: dict[str, type[Framework] | str] = {}
_instances: dict[str, Framework] = {}


class UnknownFramework(LookupError):
    """No framework of that name is built in, registered or installed."""


def register(name: str, implementation: type[Framework] | str) -> None:
    """Make ``name`` resolve to ``implementation`` (a class or ``"module:Class"``);
    a later registration of the same name replaces the earlier one."""
    _registered[name] = implementation
    _instances.pop(name, None)


def available() -> list[str]:
    """Every name ``get_framework`` resolves, sorted."""
    return sorted({*_BUILTIN, *_registered, *(ep.name for ep in _entry_points())})


def get_framework(name: str | None = None) -> Framework:
    """The framework registered as ``name`` (default: behave), one instance per name."""
    key = name or DEFAULT_FRAMEWORK
    if key in _instances:
        return _instances[key]
    target = _registered.get(key) or _BUILTIN.get(key)
    if target is None:
        target = next((ep.value for ep in _entry_points() if ep.name == key), None)
    if target is None:
        raise UnknownFramework(f"no test framework named {key!r}; available: {', '.join(available())}")
    cls = _load(target) if isinstance(target, str) else target
    if not (isinstance(cls, type) and issubclass(cls, Framework)):
        raise UnknownFramework(f"{key!r} resolves to {cls!r}, which is not a bench.frameworks.protocol.Framework")
    _instances[key] = cls()
    return _instances[key]


def _load(path: str) -> object:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise UnknownFramework(f"cannot load framework {path!r}: {exc}") from exc


def _entry_points() -> list[metadata.EntryPoint]:
    try:
        return list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # noqa: BLE001 - a broken distribution must not break the built-ins
        return []
