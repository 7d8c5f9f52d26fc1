import textwrap
from pathlib import Path

from bench.builder.closure import TestSide
from bench.builder.relations import RelationInput, compute_relations
from bench.production_index import ProductionIndex
from tests.conftest import write_project


def test_closure_follows_imports_and_excludes_infrastructure(tmp_path: Path) -> None:
    root = write_project(tmp_path, {
        "features/environment.py": "from support import boot\n",
        "features/steps/support.py": "X = 1\n",            # imported by the hooks: infrastructure
        "features/steps/a_steps.py": "from helpers import h\nfrom support import X\n",
        "features/steps/helpers.py": "import nested.deep\n",
        "features/steps/nested/__init__.py": "",
        "features/steps/nested/deep.py": "from . import sibling\n",
        "features/steps/nested/sibling.py": "",
        "features/steps/unrelated.py": "",
    })
    side = TestSide.scan(root, "features")
    assert side.infrastructure_py == {"features/environment.py", "features/steps/support.py"}
    code = side.closure_code({"features/steps/a_steps.py"}, set())
    assert code == {"features/steps/a_steps.py", "features/steps/helpers.py", "features/steps/nested/__init__.py",
                    "features/steps/nested/deep.py", "features/steps/nested/sibling.py"}
    files = side.describe(code, {"features/steps/a_steps.py"}, set())
    roles = {f.path: f.role for f in files}
    assert roles["features/steps/a_steps.py"] == "step_definitions"
    assert roles["features/steps/helpers.py"] == "helper"
    assert next(f for f in files if f.path.endswith("a_steps.py")).lines == 2


def test_relations_rules() -> None:
    def item(i: str, gw: set[str], when: set[str], extra: set[str] = frozenset()) -> RelationInput:
        return RelationInput(id=f"p/f.feature:{i}", given_when=frozenset(gw), when=frozenset(when),
                             all_definitions=frozenset(gw | extra))

    items = [
        item("1", {"given_cart", "when_add"}, {"when_add"}, {"then_holds"}),            # B: add to cart
        item("2", {"given_cart", "when_add", "when_checkout"}, {"when_add", "when_checkout"}, {"then_total"}),
        item("3", {"given_cart"}, set(), {"then_empty"}),                                  # setup only
        item("4", {"given_code", "when_apply"}, {"when_apply"}, {"then_ok"}),
        item("5", {"given_code", "when_apply"}, {"when_apply"}, {"then_rejected"}),
        item("6", {"given_code", "when_apply"}, {"when_apply"}, {"then_ok"}),
    ]
    rel = compute_relations(items)
    assert rel.depends_on == {"p/f.feature:2": ["p/f.feature:1"]}  # not on 3: it checks only setup
    assert rel.variant_of["p/f.feature:4"] == ["p/f.feature:5", "p/f.feature:6"]
    assert rel.variant_of_pairs == 3
    assert rel.group_of["p/f.feature:6"] == "p/f.feature:4"  # identical step-definition sets
    assert rel.group_of["p/f.feature:5"] == "p/f.feature:5"
    assert rel.groups == 5


def test_production_index_maps_code_objects_to_declarations(mini_project: Path) -> None:
    index = ProductionIndex(mini_project, ["src/minicalc"])
    doubled = index.by_key["src/minicalc/core.py:Calculator.doubled"]
    assert doubled.kind == "property" and doubled.signature == "@property\ndef doubled(self):"
    assert index.lookup("src/minicalc/core.py", doubled.first_line, "Calculator.doubled") is doubled
    add = index.by_key["src/minicalc/core.py:Calculator.add"]
    assert add.signature == "def add(self, amount: int) -> int:"
    # the body span starts after the docstring (views keep docstrings)
    assert (add.def_line, add.body_start, add.body_end) == (17, 19, 20)
    assert index.by_key["src/minicalc/core.py:Calculator._secret"].is_public is False
    assert index.by_key["src/minicalc/core.py:Calculator.__init__"].kind == "constructor"
    assert index.module_name("src/minicalc/core.py", ["src"]) == "minicalc.core"
    assert index.module_name("src/minicalc/__init__.py", ["src"]) == "minicalc"


def test_a_property_getter_and_setter_that_both_ran_are_both_hidden_in_any_set_order(tmp_path: Path) -> None:
    """Found by rebuilding py-algorand-sdk: the getter and the setter of a property share a
    qualname, and the set's iteration order chose which one was hidden."""
    from bench.builder.analysis import hidden_functions

    _property_package(tmp_path)
    index = ProductionIndex(tmp_path, ["src/pkg"])
    executed = {("src/pkg/model.py", 3, "Request.accounts"), ("src/pkg/model.py", 7, "Request.accounts")}
    spans = []
    for order in (sorted(executed), sorted(executed, reverse=True)):
        hidden = hidden_functions([], set(order), index, shared=set(), import_time=set())
        spans.append([(h.def_line, h.body_start, h.body_end) for h in hidden])
    assert spans[0] == spans[1] == [(4, 5, 5), (8, 9, 9)]


def test_a_property_declared_by_its_getter_in_any_set_order(tmp_path: Path) -> None:
    """python-docx rebuilt twice listed Comment.author's setter in one build, its getter in the
    other: the declaration of a property whose getter and setter both ran is the getter's."""
    from bench.builder.analysis import _declarations

    _property_package(tmp_path)
    index = ProductionIndex(tmp_path, ["src/pkg"])
    getter, setter = ("src/pkg/model.py", 3, "Request.accounts"), ("src/pkg/model.py", 7, "Request.accounts")

    class Ordered(set):  # a set that iterates in a chosen order
        def __init__(self, items):
            super().__init__(items)
            self.items = list(items)

        def __iter__(self):
            return iter(self.items)

    for keys in (Ordered([getter, setter]), Ordered([setter, getter])):
        [decl] = _declarations(keys, index).values()
        assert (decl.line, decl.signature) == (4, "@property\ndef accounts(self):")


def _property_package(root: Path) -> None:
    """src/pkg/model.py: a property whose getter (line 3) and setter (line 7) share a qualname."""
    pkg = root / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "model.py").write_text(textwrap.dedent('''
        class Request:
            @property
            def accounts(self):
                return self._accounts

            @accounts.setter
            def accounts(self, value):
                self._accounts = value
    '''), encoding="utf-8")
