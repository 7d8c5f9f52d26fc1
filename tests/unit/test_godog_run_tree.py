"""bench.frameworks.godog.sandbox.run_tree: the tree a verdict run sees, for the judge and for the
builder's confirming runs alike (a kill that needs the source on disk is none a prediction makes)."""

from __future__ import annotations

from pathlib import Path

from bench.frameworks.godog.sandbox import run_tree


def test_the_run_tree_holds_everything_but_source(tmp_path: Path) -> None:
    source = tmp_path / "project"
    for rel, text in {"go.mod": "module x\n", "go.sum": "", "shop/cart.go": "package shop\n",
                      "shop/asm.s": "", "bdd/steps_test.go": "package bdd\n", "bdd/features/cart.feature": "Feature: c\n",
                      "bdd/testdata/fixture.go": "package fixture\n", "config/app.yaml": "a: 1\n"}.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text)
    tree = run_tree(source, tmp_path / "run")
    kept = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())
    assert kept == ["bdd/features/cart.feature", "bdd/testdata/fixture.go", "config/app.yaml"]
    assert (source / "shop" / "cart.go").is_file()  # the source tree is untouched
