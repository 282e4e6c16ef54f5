"""Logic rules ψ → c: conditions, rules, rule sets and their text format."""

from ppdm.rules.core import Condition, Rule, RuleSet

__all__ = ["Condition", "Rule", "RuleSet"]
