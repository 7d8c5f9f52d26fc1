"""Requirement enrichment on a tiny synthetic repository view (no dataset, no model)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bench.gherkin_reader import read_feature_file
from bench.model import Declaration, Instance, InterfaceGroup, ViewSpec
from harness.llm import CallRecord, LimitReached, ModelReply
from harness.strategies.enrichment import EnrichmentContext, _is_abbreviation, enrich, gather_context, rank_files, words

GOLD_MARKER = "GOLD-ONLY-7f3a"  # appears only in a ground-truth file outside the view

FILES = {
    "features/catalog.feature": """
        Feature: Product catalog
          In order to find products
          As a shopper
          I want to look products up

          Scenario: Load the catalog from a CSV export
            Given the catalog exported to "fixtures/catalog.csv"
            When I look up the product "TEA-001"
            Then the product is "Sencha Green Tea"

          Scenario: Search by keyword
            Given the standard catalog
            When I search the catalog for "tea"
            Then the search finds 2 products
    """,
    "features/orders.feature": """
        Feature: Orders
          Scenario: Place an order
            Given the shop is running
            When I place an order
            Then the order is confirmed
    """,
    "features/environment.py": '''
        """behave hooks."""


        def before_scenario(context, scenario):
            context.scratch = None
    ''',
    "features/fixtures/catalog.csv": "sku,name,price\nTEA-001,Sencha Green Tea,4.50\nMUG-002,Mug,12.00\n",
    "features/fixtures/orders.json": '{"orders": []}\n',
    "features/fixtures/zz_unrelated.txt": "nothing to see\n",
    "features/fixtures/aaa_logo.png": "\0PNG binary",
    "src/shop/catalog.py": '''
        class Catalog:
            """A product catalog."""

            def lookup(self, sku: str) -> dict:
                """Return the product with this SKU; raise KeyError for an unknown one."""
                raise NotImplementedError("implementation hidden")

            @property
            def size(self) -> int:
                """How many products the catalog holds."""
                raise NotImplementedError("implementation hidden")

            @size.setter
            def size(self, value: int) -> None:
                raise NotImplementedError("implementation hidden")


        def load_csv(path):
            """Read a catalog exported as CSV (columns sku, name, price)."""
            raise NotImplementedError("implementation hidden")
    ''',
}


@pytest.fixture()
def view(tmp_path: Path) -> Path:
    root = tmp_path / "view"
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    # ground truth lives outside the view: enrichment must never see it
    gold = tmp_path / "gold" / "features" / "steps"
    gold.mkdir(parents=True)
    (gold / "catalog_steps.py").write_text(f"# {GOLD_MARKER}\n", encoding="utf-8")
    return root


def _instance(root: Path, scenario_index: int = 0) -> Instance:
    requirement = read_feature_file(root, root / "features/catalog.feature").requirements[scenario_index]
    source = (root / "src/shop/catalog.py").read_text().splitlines()

    def declaration(qualname: str, name: str, kind: str) -> Declaration:
        line = next(i for i, text in enumerate(source, 1) if f"def {name}(" in text)
        return Declaration(file="src/shop/catalog.py", qualname=qualname, line=line,
                           signature=source[line - 1].strip(), kind=kind)

    group = InterfaceGroup(declaring_type="shop.catalog.Catalog", file="src/shop/catalog.py", declarations=[
        declaration("Catalog.lookup", "lookup", "method"), declaration("Catalog.size", "size", "property"),
        declaration("load_csv", "load_csv", "function")])
    return Instance(id=f"shop/features/catalog.feature:{requirement.scenario_line}", project="shop",
                    requirement=requirement, target_interfaces=[group], test_level="component",
                    group="g", view=ViewSpec(target_hidden=[], hidden_rule="test", all_hidden_scope=[]))


def test_file_named_in_the_feature_ranks_first(view: Path) -> None:
    context = gather_context(_instance(view), view, "features")
    paths = [f.path for f in context.surfaced]
    assert paths[0] == "features/fixtures/catalog.csv"
    assert context.surfaced[0].kind == "fixture"
    assert "named in the requirement" in context.surfaced[0].why
    hooks = [f for f in context.surfaced if f.kind == "hook"]
    assert [h.path for h in hooks] == ["features/environment.py"]  # always surfaced, as a hook
    assert all(not p.endswith(".feature") for p in paths)
    assert "features/fixtures/zz_unrelated.txt" not in paths  # no match: never surfaced
    ranked = [f.path for f in rank_files(_instance(view), view, "features") if f.kind != "hook"]
    assert ranked.index("features/fixtures/catalog.csv") < ranked.index("features/fixtures/zz_unrelated.txt")
    assert ranked.index("features/fixtures/catalog.csv") < ranked.index("features/fixtures/aaa_logo.png")


def test_unnamed_file_found_by_content_and_name(view: Path) -> None:
    # "the standard catalog" names no file: the catalog fixture wins on its name
    context = gather_context(_instance(view, 1), view, "features")
    data = [f for f in context.surfaced if f.kind != "hook"]
    assert data[0].path == "features/fixtures/catalog.csv"
    assert data[0].excerpt is not None and "TEA-001" in data[0].excerpt


def test_docstrings_read_from_hidden_bodies(view: Path) -> None:
    context = gather_context(_instance(view), view, "features")
    docs = context.docstrings
    assert docs["src/shop/catalog.py:Catalog.lookup"].startswith("Return the product with this SKU")
    assert docs["src/shop/catalog.py:Catalog.size"] == "How many products the catalog holds."  # getter, not setter
    assert docs["src/shop/catalog.py:load_csv"].startswith("Read a catalog exported as CSV")


def test_sibling_scenarios_are_the_other_scenarios(view: Path) -> None:
    siblings = gather_context(_instance(view), view, "features").sibling_scenarios
    assert len(siblings) == 1
    assert siblings[0].startswith("Scenario: Search by keyword")
    assert "Load the catalog from a CSV export" not in siblings[0]


class FakeModel:
    def __init__(self, reply: str = "", error: Exception | None = None) -> None:
        self.reply = reply
        self.error = error
        self.calls: list[tuple[list[dict], object]] = []

    def complete(self, messages, tools=None) -> ModelReply:
        self.calls.append((messages, tools))
        if self.error is not None:
            raise self.error
        return ModelReply(content=self.reply, record=CallRecord(index=0, started=0.0, latency_seconds=0.0, model="fake"))


def test_enrich_renders_the_context_and_returns_the_text(view: Path) -> None:
    instance = _instance(view)
    context = gather_context(instance, view, "features")
    model = FakeModel("\n  1. Set up: load `features/fixtures/catalog.csv`.\n2. Check: the name is exact.  \n")
    enriched = enrich(instance, context, model)
    assert enriched.text == "1. Set up: load `features/fixtures/catalog.csv`.\n2. Check: the name is exact."
    assert enriched.context == context
    assert len(model.calls) == 1
    messages, tools = model.calls[0]
    assert tools is None
    prompt = "\n".join(m["content"] for m in messages)
    for surfaced in context.surfaced:
        assert surfaced.path in prompt
    assert "Return the product with this SKU" in prompt  # docstring of a target interface
    assert "Scenario: Search by keyword" in prompt       # sibling scenario
    assert GOLD_MARKER not in prompt and "catalog_steps" not in prompt


def test_enrich_strips_a_wrapping_fence(view: Path) -> None:
    instance = _instance(view)
    enriched = enrich(instance, EnrichmentContext(surfaced=[], docstrings={}, sibling_scenarios=[]),
                      FakeModel("```markdown\n- Set up: nothing\n```"))
    assert enriched.text == "- Set up: nothing"


def test_limits_propagate_to_the_runner(view: Path) -> None:
    instance = _instance(view)
    context = EnrichmentContext(surfaced=[], docstrings={}, sibling_scenarios=[])
    with pytest.raises(LimitReached):
        enrich(instance, context, FakeModel(error=LimitReached("max_calls", "1 model calls used")))


def test_words_and_abbreviations() -> None:
    assert words("sty-having-styles-part") == ["sty", "having", "style", "part"]
    assert words("expectedCliQuote.json") == ["expected", "cli", "quote", "json"]
    assert _is_abbreviation("tbl", "table") and _is_abbreviation("hdr", "header")
    assert not _is_abbreviation("tbl", "tab") and not _is_abbreviation("doc", "docx")
