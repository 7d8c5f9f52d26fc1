"""A Typer group whose commands are imported only when one is run.

``req2test --help`` and ``--version`` used to import every command's module (the builder,
litellm, the sandbox, the report: ~0.5 s before Python starts printing, seconds on a cold
cache). Here the root group lists each command by a name and a one-line summary kept beside it,
and imports the module behind a command only when the command line names it (or when a tool
asks for the real commands: ``load_all``). ``tests/unit/test_lazy_cli.py`` checks that every
summary is the real command's own first help line, so the two cannot drift apart.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import click
import typer
from pydantic import BaseModel, ConfigDict
from typer.core import TyperGroup

if TYPE_CHECKING:
    # typer (0.29 here) runs on a click of its own (typer._click): the commands it makes, and the
    # group's commands and contexts, are of that click, not of the ``click`` imported above
    from typer._click.core import Command as TyperCommand
    from typer._click.core import Context as TyperContext


class LazyCommand(BaseModel):
    """Where a command lives: ``module:attribute`` names a typer command function, a ``typer.Typer``
    (a sub-group), or a function of no arguments returning one."""

    model_config = ConfigDict(frozen=True)

    target: str
    summary: str

    def load(self, name: str) -> TyperCommand:
        module, _, attribute = self.target.partition(":")
        found: Any = getattr(importlib.import_module(module), attribute)
        if not isinstance(found, typer.Typer) and getattr(found, "__req2test_typer_factory__", False):
            found = found()
        command: TyperCommand
        if isinstance(found, typer.Typer):
            command = typer.main.get_group(found)
        else:
            single = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="markdown")
            single.command(name)(found)
            command = typer.main.get_command(single)
        command.name = name
        _keep_placeholders(command)
        return command


# A placeholder such as DIR/<project>/<feature>.md is an HTML tag to the markdown renderer of
# typer's help, which drops it ("DIR//.md"); a backslash keeps it. Code (fenced, indented or in
# backticks) is shown as written, so it is left alone.
_PLACEHOLDER = re.compile(r"(?<!\\)<(?=[A-Za-z_][\w\-.]*>)")


def _escape_prose(text: str) -> str:
    lines, fenced = [], False
    for line in inspect.cleandoc(text).split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and not line.startswith("    "):
            parts = line.split("`")
            line = "`".join(_PLACEHOLDER.sub(r"\\<", part) if i % 2 == 0 else part for i, part in enumerate(parts))
        lines.append(line)
    return "\n".join(lines)


def _keep_placeholders(command: TyperCommand) -> None:
    for each in [command, *getattr(command, "commands", {}).values()]:
        if each.help:
            each.help = _escape_prose(each.help)
        for param in each.params:
            if getattr(param, "help", None):
                param.help = _escape_prose(param.help)


def typer_factory(function: Callable[[], typer.Typer]) -> Callable[[], typer.Typer]:
    """Mark a function that builds a sub-group, so ``LazyCommand`` calls it instead of wrapping it."""
    function.__req2test_typer_factory__ = True  # type: ignore[attr-defined]
    return function


class _Placeholder(click.Command):
    """What ``--help`` lists for a command that has not been imported: its name and summary.

    Of click itself, not typer's copy: typer 0.29's ``Command`` is abstract (``main``,
    ``format_options`` and completion left to its subclasses), and a placeholder is never run:
    ``real`` replaces it with typer's command before anything but its name and help is read."""


class LazyGroup(TyperGroup):
    """The root group; ``registry`` is set by the subclass made in ``lazy_group``."""

    registry: ClassVar[dict[str, LazyCommand]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, lazy in self.registry.items():
            # a command of the other click in typer's group: only its name and help are read
            self.commands.setdefault(name, _Placeholder(name, help=lazy.summary,  # type: ignore[arg-type]
                                                        short_help=lazy.summary))

    def real(self, name: str) -> TyperCommand | None:
        command = self.commands.get(name)
        if isinstance(command, _Placeholder):
            lazy = self.registry[name]
            command = self.commands[name] = lazy.load(name)
            command.short_help = lazy.summary  # the list reads the same before and after the import
        return command

    def load_all(self) -> dict[str, TyperCommand]:
        return {name: command for name in list(self.commands) if (command := self.real(name)) is not None}

    def resolve_command(self, ctx: TyperContext,
                        args: list[str]) -> tuple[str | None, TyperCommand | None, list[str]]:
        # Only the command that will run is imported; a typo still gets typer's "did you mean".
        if args and args[0] in self.registry:
            self.real(args[0])
        return super().resolve_command(ctx, args)


def lazy_group(registry: dict[str, LazyCommand]) -> type[LazyGroup]:
    return type("Req2testGroup", (LazyGroup,), {"registry": dict(registry)})
