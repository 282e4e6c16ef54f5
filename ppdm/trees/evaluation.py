"""Cross-validation folds exactly as Weka 3.6 forms them, to compare with J48's 10-fold results.

Weka shuffles the rows with ``java.util.Random(seed)``, groups them by class
(``Instances.stratify``), deals them round-robin into folds and takes fold i as a
contiguous block. Reproducing that lets the J48 parity table compare cross-validated
accuracy fold for fold rather than only on average.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError

_MASK = (1 << 48) - 1


class JavaRandom:
    """The linear congruential generator of ``java.util.Random`` (enough of it for Weka's shuffles)."""

    def __init__(self, seed: int) -> None:
        self.state = (seed ^ 0x5DEECE66D) & _MASK

    def next_bits(self, bits: int) -> int:
        self.state = (self.state * 0x5DEECE66D + 0xB) & _MASK
        return self.state >> (48 - bits)

    def next_int(self, bound: int) -> int:
        if bound & -bound == bound:  # a power of two
            return (bound * self.next_bits(31)) >> 31
        while True:
            bits = self.next_bits(31)
            val = bits % bound
            if bits - val + (bound - 1) < (1 << 31):
                return val


def weka_folds(y_codes: np.ndarray, n_folds: int = 10, seed: int = 1) -> list[np.ndarray]:
    """Row indices of each test fold, as Weka's ``crossValidateModel`` (seed ``-s``) forms them."""
    n = len(y_codes)
    if not 2 <= n_folds <= n:
        raise ParameterError(f"n_folds must be between 2 and the number of rows ({n}), got {n_folds}")
    order = list(range(n))
    rnd = JavaRandom(seed)
    for j in range(n - 1, 0, -1):  # Instances.randomize
        k = rnd.next_int(j + 1)
        order[j], order[k] = order[k], order[j]
    cls = [int(y_codes[i]) for i in order]
    index = 1
    while index < n:  # Instances.stratify: gather each class behind its first row
        c = cls[index - 1]
        for j in range(index, n):
            if cls[j] == c:
                order[index], order[j] = order[j], order[index]
                cls[index], cls[j] = cls[j], cls[index]
                index += 1
        index += 1
    strat = [order[i] for start in range(n_folds) for i in range(start, n, n_folds)]
    folds = []
    for f in range(n_folds):
        size = n // n_folds
        if f < n % n_folds:
            size += 1
            offset = f
        else:
            offset = n % n_folds
        first = f * (n // n_folds) + offset
        folds.append(np.array(strat[first:first + size], dtype=np.int64))
    return folds


def declare_categories(X: pd.DataFrame, categorical: list[str]) -> pd.DataFrame:
    """Make the categorical columns pandas categoricals over their values in order of first
    appearance, so every fold sees the whole data's declared values (as Weka's header does)."""
    out = X.copy()
    for c in categorical:
        out[c] = pd.Categorical(out[c], categories=pd.unique(out[c].dropna()))
    return out


def weka_cross_val_accuracy(make: Callable[[], Any], X: pd.DataFrame, y: pd.Series, categorical: list[str],
                            n_folds: int = 10, seed: int = 1) -> float:
    """Percentage of rows classified correctly over Weka's ``n_folds`` folds."""
    Xd = declare_categories(X, categorical)
    yd = pd.Series(pd.Categorical(y, categories=pd.unique(y.dropna())), index=y.index)
    codes = yd.cat.codes.to_numpy()
    correct = 0
    for test in weka_folds(codes, n_folds, seed):
        train = np.setdiff1d(np.arange(len(y)), test)
        model = make().fit(Xd.iloc[train], yd.iloc[train])
        pred = model.predict(Xd.iloc[test])
        correct += int(np.sum(pred == yd.iloc[test].to_numpy()))
    return 100.0 * correct / len(y)
