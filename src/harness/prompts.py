"""Prompt rendering: Jinja templates in ``prompts/`` with strict undefined variables.

A template that names a variable the caller did not give fails loudly (StrictUndefined)
instead of silently rendering an empty string into every prompt of an experiment. Every
optional paragraph is its own file in ``prompts/paragraphs/``; an arm lists the ones it adds.

An entry is either a shipped name (``grounding``) or a file of the user's (``./my.md``): see ``is_path``.
The text of a user's file travels with the run (``AgentTask.prompt_texts``) so a remote executor needs
no copy of it and the cache key hashes exactly what the agent is shown.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, Field

from bench.errors import UserError
from harness.resources import resource_dir

SHIPPED = resource_dir("prompts")
TEMPLATE_SUFFIX = ".md.j2"
# the suffixes a user's prompt file has and a shipped name never has ("grounding", "task")
PATH_SUFFIXES = (".md", ".j2")


class PromptError(UserError):
    """A template or paragraph is missing or broken; one line."""


def prompt_dir() -> Path:
    return Path(os.environ.get("REQ2TEST_PROMPTS", SHIPPED))


def _environment(directory: Path) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(directory)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)


def render(template: str, directory: Path | None = None, **variables: Any) -> str:
    try:
        return _environment(directory or prompt_dir()).get_template(template).render(**variables).strip() + "\n"
    except jinja2.TemplateNotFound as exc:
        raise PromptError(f"prompt template {exc.name!r} not found in {directory or prompt_dir()}") from None
    except jinja2.UndefinedError as exc:
        raise PromptError(f"prompt template {template}: {exc.message}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise PromptError(f"prompt template {template}:{exc.lineno}: {exc.message}") from None


def available_paragraphs(directory: Path | None = None) -> list[str]:
    return sorted(p.stem for p in ((directory or prompt_dir()) / "paragraphs").glob("*.md"))


def paragraph(name: str, directory: Path | None = None) -> str:
    """A shipped paragraph by name, or a user's file by path (relative ones: to the working directory)."""
    if is_path(name):
        return read_prompt_file(Path(name)).strip()
    path = paragraph_file(name, directory)
    if not path.is_file():
        known = ", ".join(available_paragraphs(directory)) or "none"
        raise PromptError(f"no prompt paragraph {name!r} (known: {known})")
    return path.read_text(encoding="utf-8").strip()


# ----------------------------------------------------------------------------- the user's own files
class PromptFile(BaseModel):
    """One paragraph or template as an arm uses it: where its text came from and the text's digest."""

    arm: str
    kind: Literal["paragraph", "template"]
    entry: str = Field(description="as the experiment file writes it")
    path: str = Field(description="the file read")
    shipped: bool
    sha256: str


def is_path(entry: str) -> bool:
    """The one rule: an entry with a '/' or ending in .md or .j2 is a file; any other entry names a shipped one."""
    return "/" in entry or os.sep in entry or entry.endswith(PATH_SUFFIXES)


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_prompt_file(path: Path, kind: str = "paragraph") -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"no {kind} file {path}") from None
    except IsADirectoryError:
        raise PromptError(f"{kind} {path} is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"cannot read {kind} file {path}: {exc}") from None


def paragraph_file(name: str, directory: Path | None = None) -> Path:
    """A shipped paragraph's file (it may not exist: ``paragraph`` says so)."""
    return (directory or prompt_dir()) / "paragraphs" / f"{name}.md"


def available_templates(directory: Path | None = None) -> list[str]:
    """The shipped templates' names: ``task`` for ``task.md.j2``."""
    return sorted(p.name.removesuffix(TEMPLATE_SUFFIX) for p in (directory or prompt_dir()).glob(f"*{TEMPLATE_SUFFIX}"))


def template_file(name: str, directory: Path | None = None) -> Path:
    return (directory or prompt_dir()) / (name if name.endswith(TEMPLATE_SUFFIX) else f"{name}{TEMPLATE_SUFFIX}")


def render_source(source: str, label: str, directory: Path | None = None, **variables: Any) -> str:
    """``render`` for a template's text (a user's file): it may include the shipped templates by name."""
    try:
        return _environment(directory or prompt_dir()).from_string(source).render(**variables).strip() + "\n"
    except jinja2.TemplateNotFound as exc:
        raise PromptError(f"prompt template {label}: includes {exc.name!r}, not in {directory or prompt_dir()}") \
            from None
    except jinja2.UndefinedError as exc:
        raise PromptError(f"prompt template {label}: {exc.message}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise PromptError(f"prompt template {label}:{exc.lineno}: {exc.message}") from None


def check_template_source(source: str, label: str) -> None:
    """Syntax only: a broken template of the user's is one line when the run is planned, not a failed unit."""
    try:
        jinja2.Environment().parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise PromptError(f"prompt template {label}:{exc.lineno}: {exc.message}") from None


_JINJA_COMMENT = re.compile(r"^\{#-?\s*(.*?)\s*-?#\}")


def description(path: Path) -> str:
    """A prompt file's one-line description: its first non-blank line (a leading Jinja comment's text, a
    Markdown heading without its #s)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    first = next((line.strip() for line in lines if line.strip()), "")
    comment = _JINJA_COMMENT.match(first)
    return comment.group(1) if comment else first.lstrip("#").strip()
