"""Ψx from CART trees (paper 000 §7); see :mod:`ppdm.trees.cart`."""

from ppdm.trees.cart import rules_from_cart, rules_from_sklearn

__all__ = ["rules_from_cart", "rules_from_sklearn"]
