"""``req2test prompts``: the shipped prompt templates and paragraphs: list them, print one, render the task prompt.

An arm's ``paragraphs:`` (and ``template:``) take these names or files of your own; this command is
where a user sees what ships, copies a file to start from (``req2test prompts task > my_task.md.j2``)
and reads the task prompt an arm's paragraphs make, before paying for a run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from bench.cli import fail
from bench.cli_options import json_option
from bench.console import out
from bench.dataset import DatasetError, load_dataset
from bench.model import Declaration, Instance, InterfaceGroup, Requirement, Step, TestLevel, ViewSpec
from harness.prompts import (
    PromptError,
    available_paragraphs,
    available_templates,
    description,
    is_path,
    paragraph_file,
    prompt_dir,
    read_prompt_file,
    template_file,
)

# who renders each shipped template: its first line is prompt text, not a description
TEMPLATE_ROLES = {
    "system": "the built-in agent's system message",
    "task": "the task prompt: requirement, view and the arm's paragraphs (an arm's template: replaces it)",
    "implement": "the reverse task's prompt: fill in the hidden production bodies",
    "enrich": "the enrich strategy: clarify a requirement before generation",
    "judge": "the judge selector: choose one of n candidates",
    "attribute": "req2test attribute: why a scenario failed or a mutant survived",
    "takeover": "takeover mode: the agent's task",
    "takeover_answer": "takeover mode: the requirement answer of phase A (two_phase)",
}
# the templates --render can fill: the built-in agent's two messages (the others need a run's state)
RENDERED = ("task", "system")

Kind = Literal["paragraph", "template"]


def prompts_command(
    name: Annotated[str | None, typer.Argument(
        help="A paragraph or template name (or a file of yours): print its source.")] = None,
    render: Annotated[bool, typer.Option(
        "--render", help="Print the task prompt the built-in agent sends (system and user message), with NAME "
                         "(a paragraph, or a task template file) in it, for an example instance.")] = False,
    paragraph: Annotated[list[str] | None, typer.Option(
        "--paragraph", help="With --render: paragraphs to add too (names or files), as an arm's paragraphs:.")] = None,
    dataset: Annotated[Path | None, typer.Option(
        help="With --render: take the instance from this dataset instead of the made-up example.")] = None,
    instance: Annotated[str | None, typer.Option(
        help="With --dataset: the instance id (default: the dataset's first).")] = None,
    view: Annotated[str, typer.Option(help="With --render: the view the prompt describes, th or ah.")] = "th",
    as_json: Annotated[bool, json_option("the list, the file (name, kind, path, text) or the rendered messages")]
    = False,
) -> None:
    """List, print or render the prompt templates and paragraphs an experiment's arms use.

    Without NAME: every shipped paragraph and template with its one-line description. With
    NAME: its source, as written (copy one to start a file of your own). An arm's
    `paragraphs:` take shipped names or files of yours: an entry with a `/` or ending in
    `.md` is a file, relative to the experiment file; `template: ./my_task.md.j2` replaces
    the task template. With --render: the task prompt for a made-up instance (or
    --dataset DIR --instance ID); the other templates need a run's state and do not render here.

    Examples:

      req2test prompts

      req2test prompts setup_grounding

      req2test prompts task > my_task.md.j2

      req2test prompts expected_outcome --render --paragraph assertion_strength

      req2test prompts ./my.md --render --dataset datasets/tinyshop --instance tinyshop/features/cart.feature:13

      req2test prompts --json | jq -r '.[] | select(.kind == "paragraph") | .name'
    """
    if name is None and not render:
        _list(as_json)
        return
    try:
        if not render:
            assert name is not None
            kind, path = _find(name)
            text = read_prompt_file(path, kind)
            if as_json:
                out.print_json(json.dumps({"name": name, "kind": kind, "path": str(path), "text": text}))
            else:
                typer.echo(text, nl=False)
            return
        _render(name, list(paragraph or []), dataset, instance, view, as_json)
    except (PromptError, DatasetError) as exc:
        raise fail(str(exc)) from None


def _list(as_json: bool = False) -> None:
    rows = [{"name": name, "kind": "paragraph", "description": description(paragraph_file(name)),
             "path": str(paragraph_file(name))} for name in available_paragraphs()]
    rows += [{"name": name, "kind": "template", "description": TEMPLATE_ROLES.get(name) or description(template_file(name)),
              "path": str(template_file(name))} for name in available_templates()]
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title=f"prompts in {escape(str(prompt_dir()))}", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("description", overflow="fold")
    for row in rows:
        table.add_row(escape(row["name"]), row["kind"], escape(row["description"]))
    out.print(table)
    out.print("An arm takes these paragraph names, or files of your own: paragraphs: [grounding, ./my.md]",
              markup=False, highlight=False)


def _find(name: str) -> tuple[Kind, Path]:
    """A user's file first (when it exists), then a shipped paragraph, then a shipped template."""
    kind: Kind = "template" if name.endswith(".j2") else "paragraph"
    if is_path(name) and Path(name).is_file():
        return kind, Path(name)
    if name in available_paragraphs():
        return "paragraph", paragraph_file(name)
    if name.removesuffix(".md.j2") in available_templates():
        return "template", template_file(name)
    if is_path(name):
        raise PromptError(f"no {kind} file {name}")
    raise PromptError(f"no paragraph or template {name!r} (paragraphs: {', '.join(available_paragraphs())}; "
                      f"templates: {', '.join(available_templates())})")


def _render(name: str | None, paragraphs: list[str], dataset: Path | None, instance_id: str | None,
            view: str, as_json: bool = False) -> None:
    from harness.agents.base import AgentTask
    from harness.agents.builtin import task_messages
    from harness.sandbox.base import WORKSPACE

    if view not in ("th", "ah"):
        raise PromptError(f"--view {view!r}: th or ah")
    entries = [_entry(p) for p in paragraphs]
    template: str | None = None
    if name is not None:
        kind, path = _find(name)
        if kind == "paragraph":
            entries.insert(0, str(path.resolve()) if is_path(name) else name)
        elif is_path(name):
            template = str(path.resolve())
        elif name.removesuffix(".md.j2") not in RENDERED:
            raise PromptError(f"--render fills the task prompt (task, system, a paragraph or a task template file "
                              f"of yours); {name} needs a run's state: print it without --render")
    unknown = [e for e in entries if not is_path(e) and e not in available_paragraphs()]
    if unknown:
        raise PromptError(f"no paragraph {unknown[0]!r} (available: {', '.join(available_paragraphs())})")
    # read here, as an experiment's plan reads them: the agent is shown exactly these texts
    texts = {e: read_prompt_file(Path(e)) for e in entries if is_path(e)}
    if template is not None:
        texts[template] = read_prompt_file(Path(template), "template")
    if dataset is not None:
        ds = load_dataset(dataset)
        chosen = ds.instance(instance_id) if instance_id else ds.instances[0]
        project = ds.project(chosen.project)
        python_path = ":".join(f"{WORKSPACE}/{entry}".rstrip("/.") for entry in project.python_path)
        task = AgentTask(instance=chosen, view=view, features_dir=project.features_dir,  # type: ignore[arg-type]
                         python_path=python_path, framework=project.framework, paragraphs=entries,
                         template=template, prompt_texts=texts)
    elif instance_id is not None:
        raise PromptError("--instance needs --dataset (without them the prompt is for a made-up instance)")
    else:
        task = AgentTask(instance=example_instance(), view=view, features_dir="features",  # type: ignore[arg-type]
                         python_path=f"{WORKSPACE}/src", paragraphs=entries, template=template,
                         prompt_texts=texts)
    if as_json:
        messages = [{"role": m["role"], "content": str(m["content"])} for m in task_messages(task)]
        out.print_json(json.dumps(messages))
        return
    for message in task_messages(task):
        # plain echo, not rich: the prompt's lines stay as the model gets them (no wrapping, no markup)
        typer.echo(f"===== {message['role']} message =====")
        typer.echo(str(message["content"]))


def _entry(entry: str) -> str:
    return str(Path(entry).resolve()) if is_path(entry) else entry


def example_instance() -> Instance:
    """A made-up scenario of a small shop: what --render fills the task template with by default."""
    steps = [Step(keyword="Given ", type="given", text="an empty cart", line=7),
             Step(keyword="When ", type="when", text='I add 2 "apple" at 0.50', line=8),
             Step(keyword="Then ", type="then", text="the cart total is 1.00", line=9)]
    gherkin = ("Feature: Shopping cart\n  A customer collects items before checkout.\n\n"
               "  Scenario: Adding an item updates the total\n    Given an empty cart\n"
               '    When I add 2 "apple" at 0.50\n    Then the cart total is 1.00\n')
    requirement = Requirement(feature_file="features/cart.feature", feature_name="Shopping cart",
                              feature_description="A customer collects items before checkout.",
                              scenario_name="Adding an item updates the total", scenario_keyword="Scenario",
                              scenario_line=6, steps=steps, gherkin=gherkin)
    declarations = [Declaration(file="src/shop/cart.py", qualname="Cart.add", line=12, kind="method",
                                signature="def add(self, name: str, quantity: int, price: Decimal) -> None:"),
                    Declaration(file="src/shop/cart.py", qualname="Cart.total", line=20, kind="method",
                                signature="def total(self) -> Decimal:")]
    interfaces = [InterfaceGroup(declaring_type="Cart", file="src/shop/cart.py", declarations=declarations)]
    return Instance(id="shop/features/cart.feature:6", project="shop", requirement=requirement,
                    target_interfaces=interfaces, test_level=TestLevel.component,
                    group="shop/features/cart.feature:6",
                    view=ViewSpec(target_hidden=[], hidden_rule="example", all_hidden_scope=["src"]))
