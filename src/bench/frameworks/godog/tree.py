"""Moved to ``bench.frameworks.trees`` (shared with Cucumber-JVM); this name stays for a build
process started before the move, whose lazy imports still look for it."""

from bench.frameworks.trees import GO_MODULE_FILES as MODULE_FILES
from bench.frameworks.trees import copy_tree, link_tree

__all__ = ["MODULE_FILES", "copy_tree", "link_tree"]
