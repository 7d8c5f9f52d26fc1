"""Prompt rendering: Jinja templates in ``prompts/`` with strict undefined variables.

A template that names a variable the caller did not give fails loudly (StrictUndefined)
instead of silently rendering an empty string into every prompt of an experiment. Every
optional paragraph is its own file in ``prompts/paragraphs/``; an arm lists the ones it adds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2

from harness.resources import resource_dir

SHIPPED = resource_dir("prompts")


class PromptError(Exception):
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
    path = (directory or prompt_dir()) / "paragraphs" / f"{name}.md"
    if not path.is_file():
        known = ", ".join(available_paragraphs(directory)) or "none"
        raise PromptError(f"no prompt paragraph {name!r} (known: {known})")
    return path.read_text(encoding="utf-8").strip()
