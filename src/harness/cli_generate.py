"""``req2test generate``: run an agent over a dataset's instances and write predictions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, get_args

import typer

from bench.cli import fail
from bench.cli_options import quiet_option, workers_option
from bench.console import console, progress_for
from bench.cores import per_core
from bench.dataset import DatasetError
from harness.agents.base import EndReason
from harness.generate import GenerateError, GenerateOptions, generate
from harness.llm import Limits, ModelConfig, ProviderRefused
from harness.prompts import PromptError
from harness.sandbox.base import SandboxError
from harness.views import ViewError


def generate_command(
    dataset: Annotated[Path, typer.Argument(help="A dataset directory written by `req2test build`.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory (resumed if it exists).")],
    agent: Annotated[str, typer.Option(help="builtin | oracle | empty | then-stripped | none | module:Class")]
    = "builtin",
    model: Annotated[str | None, typer.Option(help="litellm model string, e.g. openai/gpt-5-mini.")] = None,
    api_base: Annotated[str | None, typer.Option(help="Provider base URL (default: the provider's own, or "
                                                      "REQ2TEST_API_BASE).")] = None,
    reasoning: Annotated[str | None, typer.Option(help="Reasoning effort passed to the model (low/medium/high).")]
    = None,
    view: Annotated[str, typer.Option(help="th (target-hidden) or ah (all-hidden).")] = "th",
    instance: Annotated[list[str] | None, typer.Option("--instance", "-i", help="Only these instances (repeat).")]
    = None,
    paragraph: Annotated[list[str] | None, typer.Option("--paragraph",
                                                        help="Prompt paragraphs to add (files in prompts/paragraphs).")]
    = None,
    sandbox: Annotated[str, typer.Option(help="Sandbox policy name (sandboxes/) or .toml path.")] = "default",
    max_calls: Annotated[int, typer.Option(help="Model calls per generation.", min=1)] = 200,
    max_seconds: Annotated[float, typer.Option(help="Wall clock per generation.", min=1)] = 3600.0,
    max_cost: Annotated[float | None, typer.Option(help="USD per generation.")] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.", min=0, max=2)] = None,
    seed: Annotated[int | None, typer.Option(help="The provider's sampling seed, where it honours one.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Output tokens per model call.", min=1)] = None,
    # 1, not one per core: each generation spends money at a provider that rate-limits (and a refusal stops the
    # run before a second generation has started)
    workers: Annotated[int, workers_option("Generations at a time, each in its own sandbox", "1")] = 1,
    retry: Annotated[list[str] | None, typer.Option(help="Generate again the instances that ended for this "
                                                         "reason (repeat; e.g. agent_error, max_calls). "
                                                         "provider_interrupted ones always are.")] = None,
    for_submission: Annotated[bool, typer.Option("--for-submission", help="Refuse agents that read the ground "
                                                                         "truth (calibration agents).")] = False,
    quiet: Annotated[bool, quiet_option()] = False,
) -> None:
    """Run an agent on instances inside sandboxes and write RUN_DIR/predictions.jsonl.

    Each generation gets its instance's view in a fresh sandbox; the test is collected from
    the workspace diff. RUN_DIR also gets trajectories/ (every message, tool call, output,
    timing and cost) and ledger.jsonl (every model call). Rerunning resumes.

    Examples:

      req2test generate datasets/tinyshop --model openai/gpt-5-mini -o runs/mini

      req2test provider serve --script script.yaml --port 8765 &
      req2test generate datasets/tinyshop --model openai/scripted --api-base http://127.0.0.1:8765/v1 -o runs/s

      req2test generate datasets/tinyshop --agent oracle -o runs/oracle   # pipeline check only

      req2test generate datasets/tinyshop --model openai/gpt-5-mini -o runs/mini --retry agent_error --workers 4

      req2test evaluate datasets/tinyshop -p runs/mini/predictions.jsonl -o runs/mini
    """
    if view not in ("th", "ah"):
        raise fail(f"--view must be th or ah, not {view!r}")
    config = None
    if model is not None:
        config = ModelConfig(model=model, api_base=api_base or os.environ.get("REQ2TEST_API_BASE"),
                             reasoning_effort=reasoning, temperature=temperature, seed=seed, max_tokens=max_tokens)
    elif any(v is not None for v in (temperature, seed, max_tokens)):
        raise fail("--temperature, --seed and --max-tokens need --model")
    known_reasons = set(get_args(EndReason))
    unknown_reasons = [r for r in retry or [] if r not in known_reasons]
    if unknown_reasons:
        raise fail(f"--retry {unknown_reasons[0]!r}: not an end reason ({', '.join(sorted(known_reasons))})")
    options = GenerateOptions(agent=agent, model=config, view=view, sandbox=sandbox,  # type: ignore[arg-type]
                              limits=Limits(max_calls=max_calls, max_seconds=max_seconds, max_cost_usd=max_cost),
                              paragraphs=list(paragraph or []), instances=list(instance) if instance else None,
                              for_submission=for_submission, workers=per_core(workers), retry=list(retry or []))
    progress = progress_for(quiet)
    try:
        records = generate(dataset, output, options, progress)
    except (GenerateError, DatasetError, SandboxError, ViewError, PromptError) as exc:
        raise fail(str(exc)) from None
    except ProviderRefused as exc:
        raise fail(f"{exc}. Finished instances are kept; fix it and rerun to resume") from None
    except KeyboardInterrupt:
        raise fail("interrupted; finished instances are kept and a rerun resumes", 130) from None
    finally:
        progress.close()
    if quiet:
        return
    reasons: dict[str, int] = {}
    for record in records:
        reasons[record.end_reason] = reasons.get(record.end_reason, 0) + 1
    console.print(f"generated {len(records)} instance(s) into {output / 'predictions.jsonl'}: "
                  + (", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "nothing left to do"))
