"""The toy noise techniques of paper 000 §7.1: Uniform Noise (UN) and Gaussian Noise (GN).

Both change each value of every non-class attribute independently with probability
``level`` (the paper's "percentage chance of changing a value", swept from 0 to 30 %),
so about ``level·n·m`` of the n·m attribute values are selected; the class is never
changed. The default level, 0.6 (:data:`DEFAULT_LEVEL`), is far above the paper's sweep: below
it the release gate refuses the shipped tables, too many records coming out verbatim. They differ in what a selected value becomes:

* **UN** — numeric attribute A: a draw from the uniform distribution on [min A, max A];
  categorical A: one of A's distinct values, each equally likely. The original value
  has no influence (so a categorical value may be redrawn as itself). Flattens every
  attribute's distribution and every multivariate one.
* **GN** — numeric A: the value plus a draw from N(0, var A); categorical A: the value
  of a record chosen at random from x (the original values "including repeated
  values", so each value with its frequency in x). Keeps the attribute
  distributions and, mostly, the multivariate ones.

min, max, variance and the value pools come from the table given to ``fit``.

Released values stay possible (docs/value_domains.md). A numeric attribute's domain is its
declared bounds (``Schema.bounds``), else the range observed in x; whole-number attributes
(``Schema.integer``) stay whole and dates stay dates of their resolution.

* **UN** draws on [min A, max A] as the paper says, which lies inside the domain; only the
  rounding of a whole-number attribute's draw to a whole number is added. Declared bounds
  wider than x's range do not widen the draws.
* **GN** *clips* a value that N(0, var A) noise pushed past an end of the domain to that
  end (``bounding="clip"``). Every rule threshold lies inside x's range, so a clipped value
  passes every threshold test exactly as the paper's unbounded value does: the rule
  retention measures the paper studies are unchanged (adult, 10 % noise: rule accuracy loss
  0.030 either way, 0.050 with reflection), and an attribute with a mass at an end keeps
  more of it (adult's capital gains of 0: 87 % of the release against x's 92 %; 83 % with
  reflection). The price is a spike on an end without such a mass (twice as many ages of
  17). ``bounding="reflect"`` folds the overshoot back inside instead (``low − δ`` becomes
  ``low + δ``): no spike, a flat density stays flat up to the end. At an end of x's range
  held by fewer than 5 records clipping reflects too, so no outlier's exact value is
  copied. Whole-number attributes are rounded first and stay on the whole numbers.

Missing values: a missing cell stays missing (as sdcMicro's ``addNoise`` leaves NA
alone); the statistics and value pools are those of the observed values only, and a
missing cell is never drawn as a new value.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import pandas as pd

from ppdm.anonymize._domain import HOW, DomainGuard, technique_name
from ppdm.anonymize.base import Technique, check_fraction
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError

#: the default share of values changed: a round level, with some margin, at which the release gate's
#: verbatim-and-unique line (5 %) holds on the shipped tables — banknote, whose 4 attributes are
#: all unique per record, keeps (1 − level)⁴ of its records verbatim: 2.6 % at 0.6, 4.1 % at 0.55 (at 0.1 it kept
#: 64 %; on adult 0.1 kept 39 % (gaussian) and 27 % (uniform) verbatim and unique)
DEFAULT_LEVEL = 0.6


class _Noise(Technique, ABC):
    """Shared machinery: per-column selection of values to change with probability ``level``."""

    handles_missing = True
    missing_policy = "kept"
    #: the share of values changed, searched on a log scale (small levels are where the trade-off is)
    search_space = SearchSpace({"level": Real(0.01, 0.5, log=True)})
    #: a larger level changes more values; 1 changes them all
    strength_param = ("level", "increasing", 1.0)

    def __init__(self, level: float = DEFAULT_LEVEL, class_column=None, schema=None, random_state=None) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.level = level

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

    #: how a new numeric value that left the attribute's domain is brought back (``"clip"`` or
    #: ``"reflect"``); Gaussian Noise takes it as a parameter
    bounding: str = "clip"

    @abstractmethod
    def _new_numeric(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        """New values for the selected values ``old`` of numeric column ``col``."""

    @abstractmethod
    def _new_categorical(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        """New values for the selected values ``old`` of categorical column ``col``."""

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        n = len(df)
        keep = DomainGuard(self.value_domains_, df, technique_name(self))
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
                vals[pick] = keep(c, self._new_numeric(vals[pick], c, rng), self.bounding)
                df[c] = vals
            else:
                vals = df[c].to_numpy(dtype=object).copy()
                vals[pick] = self._new_categorical(vals[pick], c, rng)
                df[c] = pd.Series(vals, index=df.index, dtype=object)
        keep.warn()
        return df


@register("uniform-noise")
class UniformNoise(_Noise):
    """Uniform Noise (paper 000 §7.1): values replaced by uniform draws with probability level.

    Each attribute value is replaced with probability ``level`` by a uniform draw over the
    attribute's range (numeric) or its distinct values (categorical); the class is never changed.
    Missing cells stay missing; ranges and values are those observed. The draws lie inside the
    attribute's domain; a whole-number attribute's draw is rounded to a whole number.

    Parameters
    ----------
    level:
        Probability in [0, 1] that a value is changed (0.1 = 10 %); default
        :data:`DEFAULT_LEVEL`.
    """

    def __init__(self, level: float = DEFAULT_LEVEL, class_column=None, schema=None, random_state=None) -> None:
        super().__init__(level=level, class_column=class_column, schema=schema, random_state=random_state)

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        super()._fit(df, schema, rng)
        self.categorical_levels_ = {
            c: np.asarray(sorted(pd.unique(v), key=lambda t: (type(t).__name__, t)), dtype=object)
            for c, v in self.categorical_values_.items()
        }

    def _new_numeric(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        lo, hi, _ = self.numeric_stats_[col]
        return rng.uniform(lo, hi, size=len(old))

    def _new_categorical(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        levels = self.categorical_levels_[col]
        return levels[rng.integers(0, len(levels), size=old.shape[0])]


@register("gaussian-noise")
class GaussianNoise(_Noise):
    """Gaussian Noise (paper 000 §7.1): N(0, var) noise or a redrawn category with probability level.

    With probability ``level`` a numeric value gets N(0, var A) noise added and a categorical
    value is redrawn from the attribute's original values (with their frequencies); the class
    is never changed. Missing cells stay missing; variances and values are those observed.

    A noisy value past an end of the attribute's domain (declared bounds, else the range
    observed in x) is brought back inside, so no age is negative or above its declared
    maximum and no income negative; whole-number attributes stay whole.

    Parameters
    ----------
    level:
        Probability in [0, 1] that a value is changed (0.1 = 10 %); default
        :data:`DEFAULT_LEVEL`.
    bounding:
        ``"clip"`` (default): to the nearest end, which leaves every rule threshold test as
        the unbounded noise gives it; ``"reflect"``: folded back inside, no spike on the end
        (module docstring).
    """

    def __init__(self, level: float = DEFAULT_LEVEL, class_column=None, schema=None, random_state=None,
                 bounding: str = "clip") -> None:
        super().__init__(level=level, class_column=class_column, schema=schema, random_state=random_state)
        self.bounding = bounding

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.bounding not in HOW:
            raise ParameterError(f"bounding must be one of {', '.join(HOW)}, got {self.bounding!r}")

    def _new_numeric(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        _, _, var = self.numeric_stats_[col]
        return old + rng.normal(0.0, np.sqrt(var), size=old.shape[0])

    def _new_categorical(self, old: np.ndarray, col: str, rng: np.random.Generator) -> np.ndarray:
        pool = self.categorical_values_[col]
        return pool[rng.integers(0, len(pool), size=old.shape[0])]
