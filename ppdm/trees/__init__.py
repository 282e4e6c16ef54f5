"""Tree learners whose leaves are logic rules: C4.5 as Weka J48 builds it, SysFor
forests, CART over mixed tables; the tree protocol; leaf intersections of forests.

The learners are imported lazily, so ``ppdm.trees.base`` stays cheap to import.
"""

from __future__ import annotations

import importlib
from typing import Any

from ppdm.trees.base import TreeModel

__all__ = ["TreeModel", "C45Classifier", "SysForClassifier", "CARTClassifier"]

_LAZY = {
    "C45Classifier": "ppdm.trees.c45",
    "SysForClassifier": "ppdm.trees.sysfor",
    "CARTClassifier": "ppdm.trees.cart",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ppdm.trees' has no attribute {name!r}")
