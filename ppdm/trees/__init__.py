"""Tree learners (C4.5 as Weka J48 builds it, SysFor forests) and the tree protocol.

The learners are imported lazily, so ``ppdm.trees.base`` stays cheap to import.
"""

from __future__ import annotations

from typing import Any

from ppdm.trees.base import TreeModel

__all__ = ["TreeModel", "C45Classifier", "SysForClassifier"]


def __getattr__(name: str) -> Any:
    if name == "C45Classifier":
        from ppdm.trees.c45 import C45Classifier

        return C45Classifier
    if name == "SysForClassifier":
        from ppdm.trees.sysfor import SysForClassifier

        return SysForClassifier
    raise AttributeError(f"module 'ppdm.trees' has no attribute {name!r}")
