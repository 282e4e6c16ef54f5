"""Rules from trees: every leaf of a fitted tree as a logic rule (paper 004 §3, step 2).

Works on anything satisfying :class:`ppdm.trees.base.TreeModel` (C4.5, each SysFor tree,
wrapped scikit-learn trees) and on forests that expose their trees as ``estimators_``.
"""

from __future__ import annotations

from typing import Any

from ppdm.errors import PPDMError
from ppdm.rules.core import Rule, RuleSet
from ppdm.trees.base import TreeModel


def from_tree(tree: TreeModel, class_column: str | None = None) -> RuleSet:
    """The leaves of ``tree`` as a :class:`RuleSet`, in leaf-id order."""
    if not hasattr(tree, "leaf_rules"):
        raise PPDMError(f"{type(tree).__name__} does not state its leaves as rules (no leaf_rules())")
    rules = tree.leaf_rules()
    return RuleSet([rules[k] for k in sorted(rules)], class_column)


def from_forest(forest: Any, class_column: str | None = None) -> RuleSet:
    """The leaves of every tree of ``forest`` (``estimators_``), tree after tree."""
    trees = getattr(forest, "estimators_", None)
    if trees is None:
        return from_tree(forest, class_column)
    out: list[Rule] = []
    for t in trees:
        out.extend(from_tree(t).rules)
    return RuleSet(out, class_column)
