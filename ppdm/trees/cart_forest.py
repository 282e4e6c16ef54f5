"""A small forest of CART trees, each grown on a bootstrap sample and a subset of attributes.

This is not one of the papers' learners; paper 004 uses SysFor. It is a
lightweight stand-in with the same shape (``estimators_`` of
:class:`~ppdm.trees.base.TreeModel` trees, ``predict`` by majority vote) for quick
checks, tests and benchmarks where a SysFor forest is not wanted.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ppdm.errors import ParameterError, SchemaError
from ppdm.trees.cart import CARTClassifier


class CARTForest(ClassifierMixin, BaseEstimator):
    """Bagged CART trees over mixed tables.

    Parameters
    ----------
    n_trees:
        Number of trees.
    min_leaf:
        Minimum number of training records in a leaf of every tree.
    max_features:
        Fraction of the attributes each tree sees (chosen at random per tree); 1.0 uses all.
    bootstrap:
        Grow each tree on a bootstrap sample (otherwise on the whole table).
    max_depth:
        Maximum depth of every tree.
    """

    def __init__(
        self,
        n_trees: int = 3,
        min_leaf: int = 10,
        max_features: float = 1.0,
        bootstrap: bool = True,
        max_depth: int | None = None,
        random_state: int | None = 0,
    ) -> None:
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.n_trees = n_trees
        self.min_leaf = min_leaf
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.max_depth = max_depth
        self.random_state = random_state

    def fit(self, X: pd.DataFrame, y) -> CARTForest:
        if not isinstance(X, pd.DataFrame):
            raise SchemaError(f"expected a pandas DataFrame, got {type(X).__name__}")
        if self.n_trees < 1 or self.min_leaf < 1 or not 0 < self.max_features <= 1:
            raise ParameterError("n_trees and min_leaf must be ≥ 1 and max_features in (0, 1]")
        y = pd.Series(np.asarray(y), index=X.index)
        rng = np.random.default_rng(self.random_state)
        n, m = X.shape
        k = max(1, math.ceil(self.max_features * m))
        self.estimators_: list[CARTClassifier] = []
        for t in range(self.n_trees):
            rows = rng.integers(0, n, n) if self.bootstrap else np.arange(n)
            cols = np.sort(rng.choice(m, size=k, replace=False)) if k < m else np.arange(m)
            tree = CARTClassifier(min_samples_leaf=self.min_leaf, max_depth=self.max_depth, random_state=t)
            self.estimators_.append(tree.fit(X.iloc[rows, cols], y.iloc[rows]))
        self.classes_ = np.unique(y.to_numpy())
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = m
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        """Mean of the trees' class probabilities."""
        check_is_fitted(self, "estimators_")
        out = np.zeros((len(X), len(self.classes_)))
        for tree in self.estimators_:
            cols = np.searchsorted(self.classes_, tree.classes_)
            out[:, cols] += tree.predict_proba(X[list(tree.feature_names_in_)])
        return out / len(self.estimators_)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Majority vote of the trees (ties: the larger mean probability, then the first class)."""
        check_is_fitted(self, "estimators_")
        votes = np.zeros((len(X), len(self.classes_)))
        for tree in self.estimators_:
            pred = tree.predict(X[list(tree.feature_names_in_)])
            votes[np.arange(len(X)), np.searchsorted(self.classes_, pred)] += 1
        score = votes + 1e-6 * self.predict_proba(X)
        return self.classes_[np.argmax(score, axis=1)]
