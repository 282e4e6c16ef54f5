"""What ppdm needs of a fitted decision tree.

Forest Framework, Framework, EDUDS and EDUSC work on any tree model that can
route records to leaves and state each leaf as a logic rule. C4.5 and SysFor
trees (this package) satisfy it; so does a scikit-learn tree wrapped in
:class:`SklearnTree`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from ppdm.rules.core import Rule


@runtime_checkable
class TreeModel(Protocol):
    """A fitted tree: ``apply`` gives each record's leaf id, ``leaf_rules`` the
    root-to-leaf conjunction (with training class counts) of every leaf id."""

    classes_: np.ndarray

    def apply(self, X: pd.DataFrame) -> np.ndarray: ...

    def leaf_rules(self) -> dict[int, Rule]: ...
