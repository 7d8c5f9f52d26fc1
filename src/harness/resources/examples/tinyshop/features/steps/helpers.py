"""Helpers shared by the step modules: fixture paths, parse types, checks."""

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import parse
from behave import register_type

FIXTURES_DIR = Path(__file__).resolve().parent.parent / "fixtures"


@parse.with_pattern(r"-?\d+\.\d{2}")
def parse_money(text):
    return Decimal(text)


@parse.with_pattern(r"\d{4}-\d{2}-\d{2}")
def parse_date(text):
    return date.fromisoformat(text)


@parse.with_pattern(r"pay|ship|cancel")
def parse_action(text):
    return text


# {amount:Money} -> Decimal("4.50"), {day:Date} -> date(2024, 6, 1)
register_type(Money=parse_money, Date=parse_date, Action=parse_action)


def fixture_path(name):
    """Absolute path of a file in features/fixtures."""
    path = FIXTURES_DIR / name
    assert path.exists(), f"missing fixture: {path}"
    return path


def load_json_fixture(name):
    """Parsed JSON content of a fixture file."""
    with open(fixture_path(name), encoding="utf-8") as handle:
        return json.load(handle)


def snapshot_name(method, path):
    """Golden-file name for an API request: GET /products/X -> expected_get_products_x.json."""
    slug = path.strip("/").replace("/", "_").replace("?", "_").lower()
    return f"expected_{method.lower()}_{slug}.json"


def split_list(text):
    """'A, B' -> ['A', 'B']; 'none' -> []."""
    text = text.strip()
    if text in ("", "none"):
        return []
    return [item.strip() for item in text.split(",")]


def assert_equal(actual, expected, what):
    assert actual == expected, f"{what}: expected {expected!r}, got {actual!r}"


def assert_raised(context, message):
    """The last step stored an exception whose message is ``message``."""
    assert context.error is not None, "expected an error, but the operation succeeded"
    assert_equal(str(context.error), message, "error message")
