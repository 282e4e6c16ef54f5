"""Tree learners whose leaves are logic rules: C4.5 as Weka J48 builds it, SysFor
forests, CART over mixed tables; the tree protocol; leaf intersections of forests.

The learners are imported lazily, so ``ppdm.trees.base`` stays cheap to import.
"""

from __future__ import annotations

from ppdm.trees.base import TreeModel
from ppdm.utils import lazy_attributes

__all__ = ["TreeModel", "C45Classifier", "SysForClassifier", "CARTClassifier"]

_LAZY = {"C45Classifier": "c45", "SysForClassifier": "sysfor", "CARTClassifier": "cart"}

__getattr__ = lazy_attributes("ppdm.trees", _LAZY, globals())
