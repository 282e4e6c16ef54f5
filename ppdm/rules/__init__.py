"""Logic rules ψ → c: conditions, rules, rule sets and their text format."""

from ppdm.rules.core import Condition, Rule, RuleSet
from ppdm.rules.trees import from_forest, from_tree

__all__ = ["Condition", "Rule", "RuleSet", "from_tree", "from_forest"]
