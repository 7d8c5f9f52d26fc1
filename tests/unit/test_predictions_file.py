"""A predictions file is JSONL in UTF-8; anything else is refused with where it went wrong (issue 30, item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.evaluate import EvaluationError, load_predictions

GOOD = {"instance_id": "p__a__1", "files": {"features/steps/a.py": "x = 1\n"}}


def test_a_json_array_is_refused_with_the_way_to_convert_it(tmp_path: Path) -> None:
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps([GOOD], indent=2))
    with pytest.raises(EvaluationError, match=r"a JSON array; predictions are JSONL.*jq -c"):
        load_predictions(path)


def test_an_array_on_one_line_is_named_too(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps([GOOD]) + "\n")
    with pytest.raises(EvaluationError, match=r"predictions.jsonl:2: a JSON array"):
        load_predictions(path)


def test_bytes_that_are_not_utf8_are_refused_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    bad = json.dumps({"instance_id": "p__b__1", "files": {"a.py": "é"}}, ensure_ascii=False).encode().replace("é".encode(), b"\xe9")
    path.write_bytes(json.dumps(GOOD).encode() + b"\n\n" + bad + b"\n")
    with pytest.raises(EvaluationError, match=r"predictions.jsonl:3: not UTF-8 \(byte \d+ of the line"):
        load_predictions(path)


def test_an_integer_beyond_the_digit_limit_is_refused_with_the_line(tmp_path: Path) -> None:
    # json.loads raises a plain ValueError (no ``msg``) for an integer beyond int's digit limit
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + '{"instance_id": "p__c__1", "n": ' + "1" * 5000 + "}\n")
    with pytest.raises(EvaluationError, match=r"predictions.jsonl:2: not JSON \(Exceeds the limit"):
        load_predictions(path)


def test_a_good_file_loads_and_keeps_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n")
    predictions, problems, sha = load_predictions(path)
    assert list(predictions) == ["p__a__1"] and problems == {} and len(sha) == 64
