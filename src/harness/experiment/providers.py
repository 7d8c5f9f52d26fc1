"""The model side of a run: the scripted provider a run may start, and the models its arms talk to.

Owns starting and stopping the run's own scripted provider (``RunProvider``, its requests logged to
``provider-requests.jsonl`` in the run directory), the ``ModelConfig`` an arm's units get (``model_config``:
the arm's own address, else the run's provider with the offline key, else ``REQ2TEST_API_BASE``), telling
whether an arm's answers came from that provider (``answered_by_run_provider``, a submission fact) and wiring
a model to the cost ledger its calls are written to (``ledgered_model``).

Kept apart from planning because the provider's address exists only while a run is live and is deliberately
left out of every cache key; the provider server is imported only when an experiment names a script.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from harness.experiment.config import Arm
from harness.llm import ModelConfig

if TYPE_CHECKING:
    from harness.generate import GenerateOptions
    from harness.llm import Ledger, Model
    from harness.provider.server import ScriptedProvider

OFFLINE_KEY = "scripted-offline"  # the run's own scripted provider accepts any key


class RunProvider:
    """The experiment's ``provider:`` script served on loopback for the length of a run (nothing without one)."""

    def __init__(self, script: Path | None, log_path: Path) -> None:
        self.script = script
        self.log_path = log_path
        self.provider: ScriptedProvider | None = None
        self.api_base: str | None = None

    def start(self) -> None:
        if self.script is None:
            return
        from harness.provider.server import ScriptedProvider

        self.provider = ScriptedProvider(self.script, log_path=self.log_path).start()
        self.api_base = self.provider.openai_base_url

    def stop(self) -> None:
        if self.provider is not None:
            self.provider.stop()


def model_config(arm: Arm, api_base: str | None) -> ModelConfig | None:
    """The model ``arm`` talks to (None: the arm has none); ``api_base``: the run's own provider, if started."""
    model = None
    if arm.model is not None:
        own_provider = arm.api_base is None and api_base is not None
        model = ModelConfig(model=arm.model, api_base=arm.api_base or api_base or
                            os.environ.get("REQ2TEST_API_BASE"),
                            api_key=OFFLINE_KEY if own_provider else None, reasoning_effort=arm.reasoning,
                            temperature=arm.temperature, seed=arm.seed, max_tokens=arm.max_tokens)
    return model


def answered_by_run_provider(options: GenerateOptions) -> bool:
    """The arm's model was the run's scripted provider: its answers are a script's, not a model's."""
    return options.model is not None and options.model.api_key == OFFLINE_KEY


def ledgered_model(options: GenerateOptions, ledger: Ledger) -> Model | None:
    """The arm's model with every call (tokens, USD) written to ``ledger``; None when the arm has no model."""
    from harness.llm import Model

    return Model(options.model, options.limits, ledger) if options.model is not None else None
