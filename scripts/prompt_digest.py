"""Digest of every prompt the built-in agent would send on the given datasets: each instance in
both views, with no paragraph and with every shipped paragraph, with and without an enriched
requirement and prerequisite tests, plus each framework's tool descriptions. Run it under two
code trees (PYTHONPATH=OTHER/src) to show that a refactor left the rendered prompts byte-identical.

Usage:
    python scripts/prompt_digest.py DATASET [DATASET ...]
"""
import hashlib
import json
import sys
from pathlib import Path

from bench.dataset import load_dataset
from harness.agents import builtin
from harness.agents.base import AgentTask
from harness.agents.builtin import task_messages
from harness.prompts import available_paragraphs

total = hashlib.sha256()
count = 0
for ds_dir in sys.argv[1:]:
    ds = load_dataset(Path(ds_dir))
    for inst in ds.instances:
        project = ds.project(inst.project)
        for view in ("th", "ah"):
            for paragraphs in ([], available_paragraphs()):
                for extra in (False, True):
                    task = AgentTask(instance=inst, view=view, features_dir="features", python_path="src", paragraphs=paragraphs, framework=project.framework,
                                     enriched_requirement="clarified." if extra else None,
                                     prerequisite_tests={"features/steps/x.py": "pass"} if extra else {})
                    for m in task_messages(task):
                        total.update(m["content"].encode()); count += 1
print(count, "messages", total.hexdigest())
from bench.frameworks.registry import get_framework

for name in ("behave", "cucumber-js"):
    print(name, "tools", hashlib.sha256(json.dumps(builtin.tools_for(get_framework(name).prompt_terms()), sort_keys=True).encode()).hexdigest())
