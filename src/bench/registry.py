"""One registry idiom for every pluggable kind: a name resolves to an implementation.

Modelled on mini-swe-agent's ``get_environment_class``. A kind (test frameworks, agents,
selectors, sandbox backends, executors, variants) keeps one ``Registry`` whose names come
from three places, looked up in this order:

1. ``register(name, implementation)`` in code (a later registration replaces an earlier one);
2. the built-ins, listed by import path (``"module:attr"``);
3. installed packages, through the kind's entry point group, e.g. in a ``pyproject.toml``::

       [project.entry-points."req2test.frameworks"]
       mytool = "mypackage.framework:MyToolFramework"

Built-ins and entry points are imported on first use, never when the registry is made: naming
one costs nothing until it is needed, so listing ``ray`` among the executors does not import
Ray (an optional extra), and a broken third-party package cannot break the built-ins.

Every failure to resolve a name is an ``UnknownName`` (a ``LookupError``) with a one-line
message a CLI prints as it is: ``no <kind> named 'x'; available: a, b, c``.
"""

from __future__ import annotations

import importlib
from functools import reduce
from importlib import metadata
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(LookupError):
    """A name that resolves to nothing usable: not registered, built in or installed, not importable,
    or not of the registry's base class. The message is one line.

    Kinds whose callers catch their own exception type subclass this (``UnknownFramework``)."""


class Registry(Generic[T]):
    """Names of one kind → implementations (classes, functions or other objects), loaded lazily, cached.

    ``kind`` names the kind in messages ("test framework", "selector"); ``base``, when given, is the
    class every implementation must subclass (checked on load); ``builtins`` maps names to
    ``"module:attr"`` import paths; ``entry_point_group`` is where installed packages add names
    (None: only code registers more); ``error`` is the exception type raised (a subclass of
    ``UnknownName`` for kinds whose callers catch a specific type); ``hint``, what else a user may
    write where a name goes, ends the unknown-name message (``or module:Class``).
    """

    def __init__(self, kind: str, base: type | None, builtins: dict[str, str], entry_point_group: str | None,
                 *, error: type[UnknownName] = UnknownName, hint: str = "") -> None:
        self.kind = kind
        self.base = base
        self.entry_point_group = entry_point_group
        self.error = error
        self.hint = hint
        self._builtins = dict(builtins)
        self._registered: dict[str, T | str] = {}
        self._loaded: dict[str, T] = {}

    def register(self, name: str, implementation: T | str) -> None:
        """Make ``name`` resolve to ``implementation`` (the object, or its ``"module:attr"`` path);
        a later registration of the same name replaces the earlier one, built-ins included."""
        self._registered[name] = implementation
        self._loaded.pop(name, None)

    def available(self) -> list[str]:
        """Every name ``get`` may resolve, sorted (nothing is imported to list them)."""
        return sorted({*self._builtins, *self._registered, *self._entry_points()})

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is known, without importing it (it may still fail to load)."""
        return isinstance(name, str) and self._target(name) is not None

    def get(self, name: str) -> T:
        """The implementation registered as ``name``, imported on first use and cached."""
        if name in self._loaded:
            return self._loaded[name]
        target = self._target(name)
        if target is None:
            hint = f"; {self.hint}" if self.hint else ""
            raise self.error(f"no {self.kind} named {name!r}; available: {', '.join(self.available())}{hint}")
        loaded = self.load_path(target, label=name) if isinstance(target, str) else self._checked(target, name)
        # threads racing here store the same object (Python imports a module once): no lock needed
        self._loaded[name] = loaded
        return loaded

    def load_path(self, path: str, *, label: str | None = None) -> T:
        """Import the object ``path`` names (``"module:attr"``, attr may be dotted), checked against
        ``base``; not cached under any name. For options that take an import path directly, such as
        ``--agent module:Class``."""
        module_name, _, attribute = path.partition(":")
        try:
            obj = reduce(getattr, attribute.split("."), importlib.import_module(module_name))
        except (ImportError, AttributeError, ValueError) as exc:  # ValueError: an empty module name
            raise self.error(f"cannot load {self.kind} {path!r}: {exc}") from exc
        return self._checked(obj, label or path)

    def copy(self) -> Registry[T]:
        """The same names in a registry of its own: registering in the copy leaves this one alone (tests)."""
        twin: Registry[T] = Registry(self.kind, self.base, self._builtins, self.entry_point_group,
                                     error=self.error, hint=self.hint)
        twin._registered = dict(self._registered)
        twin._loaded = dict(self._loaded)
        return twin

    def _target(self, name: str) -> T | str | None:
        if name in self._registered:
            return self._registered[name]
        if name in self._builtins:
            return self._builtins[name]
        return self._entry_points().get(name)

    def _checked(self, obj: object, label: str) -> T:
        if self.base is not None and not (isinstance(obj, type) and issubclass(obj, self.base)):
            raise self.error(f"{label!r} resolves to {obj!r}, which is not a "
                             f"{self.base.__module__}.{self.base.__qualname__}")
        return obj  # type: ignore[return-value]

    def _entry_points(self) -> dict[str, str]:
        """Installed names → import paths (the first distribution to claim a name keeps it)."""
        if self.entry_point_group is None:
            return {}
        try:
            found = metadata.entry_points(group=self.entry_point_group)
        except Exception:  # noqa: BLE001 - a broken distribution must not break the built-ins
            return {}
        out: dict[str, str] = {}
        for ep in found:
            out.setdefault(ep.name, ep.value)
        return out
