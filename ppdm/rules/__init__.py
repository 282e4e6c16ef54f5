"""Logic rules ψ → c: conditions, rules, rule sets and their text format.

Rules found by tree learners come from the adapters beside the trees:
:mod:`ppdm.trees.rules` (any tree or forest) and :mod:`ppdm.trees.cart` (Ψx from CART).
"""

from ppdm.rules.core import Condition, Rule, RuleSet

__all__ = ["Condition", "Rule", "RuleSet"]
