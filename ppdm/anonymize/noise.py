"""The toy noise techniques of paper 000 §7.1: Uniform Noise (UN) and Gaussian Noise (GN).

Both change each value of every non-class attribute independently with probability
``level`` (the paper's "percentage chance of changing a value", swept from 0 to 30 %),
so about ``level·n·m`` of the n·m attribute values are selected; the class is never
changed. They differ in what a selected value becomes:

* **UN** — numeric attribute A: a draw from the uniform distribution on [min A, max A];
  categorical A: one of A's distinct values, each equally likely. The original value
  has no influence (so a categorical value may be redrawn as itself). Flattens every
  attribute's distribution and every multivariate one.
* **GN** — numeric A: the value plus a draw from N(0, var A); categorical A: the value
  of a record chosen at random from x (the original values "including repeated
  values", so each value with its frequency in x). Keeps the attribute
  distributions and, mostly, the multivariate ones.

min, max, variance and the value pools come from the table given to ``fit``. Integer
columns are rounded back to whole numbers (the technique contract keeps dtypes).

Missing values: a missing cell stays missing (as sdcMicro's ``addNoise`` leaves NA
alone); the statistics and value pools are those of the observed values only, and a
missing cell is never drawn as a new value.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import pandas as pd

from ppdm.anonymize.base import Technique, check_fraction
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Real, SearchSpace
from ppdm.data.schema import Schema


class _Noise(Technique, ABC):
    """Shared machinery: per-column selection of values to change with probability ``level``."""

    handles_missing = True
    missing_policy = "kept"
    #: the share of values changed, searched on a log scale (small levels are where the trade-off is)
    search_space = SearchSpace({"level": Real(0.01, 0.5, log=True)})

    def __init__(self, level: float = 0.1, class_column=None, schema=None, random_state=None) -> None:
        self.level = level
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state

    def _validate_params(self) -> None:
        check_fraction("level", self.level)

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        self.numeric_stats_: dict[str, tuple[float, float, float]] = {}
        self.categorical_values_: dict[str, np.ndarray] = {}
        for c in schema.numeric:
            a = df[c].to_numpy(dtype=float)
            a = a[~np.isnan(a)]  # observed values only
            # sample variance (ddof=1), as pandas reports it; 0 for a single record
            var = float(np.var(a, ddof=1)) if len(a) > 1 else 0.0
            lo, hi = (float(a.min()), float(a.max())) if a.size else (np.nan, np.nan)
            self.numeric_stats_[c] = (lo, hi, var)
        for c in schema.categorical:
            self.categorical_values_[c] = df[c].dropna().to_numpy(dtype=object)

    @abstractmethod
    def _new_numeric(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        """New values for the selected values ``old`` of numeric column ``col``."""

    @abstractmethod
    def _new_categorical(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        """New values for the selected values ``old`` of categorical column ``col``."""

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        n = len(df)
        for c in df.columns:
            if c == schema.class_column:
                continue  # paper 000 §7.1: neither noise type touches the label
            numeric = c in self.numeric_stats_
            if not numeric and c not in self.categorical_values_:
                continue  # a column the schema does not name is not an attribute
            # one uniform draw per value decides whether it changes, so level 0 is the identity;
            # a missing cell stays missing
            pick = (rng.random(n) < self.level) & df[c].notna().to_numpy()
            if not numeric and len(self.categorical_values_[c]) == 0:
                continue
            k = int(pick.sum())
            if k == 0:
                continue
            if numeric:
                vals = df[c].to_numpy(dtype=float).copy()
                vals[pick] = self._new_numeric(vals[pick], c, rng)
                df[c] = vals
            else:
                vals = df[c].to_numpy(dtype=object).copy()
                vals[pick] = self._new_categorical(vals[pick], c, rng)
                df[c] = pd.Series(vals, index=df.index, dtype=object)
        return df


@register("uniform-noise")
class UniformNoise(_Noise):
    """Uniform Noise (paper 000 §7.1): values replaced by uniform draws with probability level.

    Each attribute value is replaced with probability ``level`` by a uniform draw over the
    attribute's range (numeric) or its distinct values (categorical); the class is never changed.
    Missing cells stay missing; ranges and values are those observed.

    Parameters
    ----------
    level:
        Probability in [0, 1] that a value is changed (0.1 = 10 %).
    """

    def __init__(self, level: float = 0.1, class_column=None, schema=None, random_state=None) -> None:
        super().__init__(level=level, class_column=class_column, schema=schema, random_state=random_state)

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        super()._fit(df, schema, rng)
        self.categorical_levels_ = {
            c: np.asarray(sorted(pd.unique(v), key=lambda t: (type(t).__name__, t)), dtype=object)
            for c, v in self.categorical_values_.items()
        }

    def _new_numeric(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        lo, hi, _ = self.numeric_stats_[col]
        return rng.uniform(lo, hi, size=old.shape[0])

    def _new_categorical(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        levels = self.categorical_levels_[col]
        return levels[rng.integers(0, len(levels), size=old.shape[0])]


@register("gaussian-noise")
class GaussianNoise(_Noise):
    """Gaussian Noise (paper 000 §7.1): N(0, var) noise or a redrawn category with probability level.

    With probability ``level`` a numeric value gets N(0, var A) noise added and a categorical
    value is redrawn from the attribute's original values (with their frequencies); the class
    is never changed. Missing cells stay missing; variances and values are those observed.

    Parameters
    ----------
    level:
        Probability in [0, 1] that a value is changed (0.1 = 10 %).
    """

    def __init__(self, level: float = 0.1, class_column=None, schema=None, random_state=None) -> None:
        super().__init__(level=level, class_column=class_column, schema=schema, random_state=random_state)

    def _new_numeric(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        _, _, var = self.numeric_stats_[col]
        return old + rng.normal(0.0, np.sqrt(var), size=old.shape[0])

    def _new_categorical(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        pool = self.categorical_values_[col]
        return pool[rng.integers(0, len(pool), size=old.shape[0])]
