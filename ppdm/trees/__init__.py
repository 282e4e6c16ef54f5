"""Tree learners whose leaves are logic rules, and leaf intersections of forests."""

from ppdm.trees.base import TreeModel
from ppdm.trees.cart import CARTClassifier

__all__ = ["TreeModel", "CARTClassifier"]
