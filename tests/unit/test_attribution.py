"""Trajectory action classes and the attribution judge's answer parsing (harness.attribution)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.attribution import action_profile, classify_action, classify_command, parse_label


def test_commands_by_the_program_they_run() -> None:
    assert classify_command("grep -rn Cart features/") == "search"
    assert classify_command("cd /workspace && find . -name '*.py'") == "search"
    assert classify_command("cat src/tinyshop/cart.py | head -50") == "read"
    assert classify_command("sed -n 1,40p src/x.py") == "read"
    assert classify_command("sed -i s/a/b/ src/x.py") == "write"
    assert classify_command("PYTHONPATH=src python -m behave features/cart.feature") == "execute"
    assert classify_command("git grep Inventory") == "search"
    assert classify_command("echo hi > features/steps/x.py") == "write"
    assert classify_command("") == "other"


def test_events_and_a_trajectory_profile(tmp_path: Path) -> None:
    events = [{"type": "message", "role": "user", "content": "..."},
              {"type": "tool", "name": "read_file", "arguments": {"path": "a.py"}},
              {"type": "tool", "name": "run", "arguments": {"command": "ls features"}},
              {"type": "tool", "name": "write_file", "arguments": {"path": "features/steps/s.py"}},
              {"type": "tool", "name": "run", "arguments": {"command": "python -m behave"}},
              {"type": "tool", "name": "str_replace_based_edit_tool", "arguments": {"command": "view"}},
              {"type": "tool", "name": "mystery"},
              {"type": "end", "reason": "submitted"}]
    assert [classify_action(e) for e in events] == [None, "read", "search", "write", "execute", "read", "other",
                                                    None]
    path = tmp_path / "1.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\nnot json\n")
    assert action_profile(path) == {"read": 2, "search": 1, "write": 1, "execute": 1, "other": 1}
    assert action_profile(tmp_path / "missing.jsonl") == {"read": 0, "search": 0, "write": 0, "execute": 0, "other": 0}


def test_parse_label() -> None:
    assert parse_label('Sure. {"label": "spec underspecified", "reason": "no amount given"}') == \
        ("spec_underspecified", "no amount given")
    assert parse_label('{"label": "test"}') == ("test", "")
    assert parse_label('{"label": "bogus"} then {"label": "error", "reason": "import"}') == ("error", "import")
    assert parse_label("no json here") == (None, "")
