"""Random Technique (RT), the benchmark perturbation of Islam & Brankovic (2011)
used again in paper 004 (§2, §7): uniform noise added to all attributes
indiscriminately, with no regard for any pattern.

The papers do not give RT's noise level. Following the spec (trees_and_perturbation.md
§4) a numeric value gets ``v + U(−h, h)`` wrapped around inside the attribute's global
domain ``[min, max]``, with ``h = √3·σ`` so the noise variance is σ² and σ =
``sigma_frac`` × the domain's width (default 1/6, the σ Forest Framework uses inside a
sub-domain); categorical values and the class are replaced, each with probability
``p_rt``, by a uniformly chosen *different* value of the attribute's domain.

Released values stay possible (docs/value_domains.md): the wrap-around keeps every value
inside ``[min, max]`` of x, which lies inside any declared bounds (x is refused when it does
not); whole-number attributes wrap on the whole numbers. Wrapping, rather than clipping or
reflecting, keeps the noise uniform: every value of the domain is equally reachable.

Missing values: a missing cell stays missing; domains are those of the observed values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize._noise import add_wrapped_noise
from ppdm.anonymize.base import Technique, check_fraction
from ppdm.anonymize.forest_framework import integer_attributes
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError


def replace_with_other_value(
    codes: np.ndarray, n_levels: int, p: float, rng: np.random.Generator
) -> np.ndarray:
    """With probability ``p`` replace each code by a uniformly chosen different code in
    ``0..n_levels−1`` (codes outside the domain, −1, are left alone)."""
    n = len(codes)
    hit = rng.random(n) < p
    shift = rng.integers(1, max(n_levels, 2), n)  # 1..L−1 steps round the circle: never the same value
    out = codes.copy()
    ok = hit & (codes >= 0) & (n_levels > 1)
    out[ok] = (codes[ok] + shift[ok]) % n_levels
    return out


@register("random-technique")
class RandomTechnique(Technique):
    """Random Technique (RT): uniform noise on every attribute, the baseline of papers 004 and Islam & Brankovic 2011.

    Parameters
    ----------
    sigma_frac:
        Noise standard deviation σ as a fraction of the attribute's global domain width;
        numeric noise is ``U(−√3σ, √3σ)`` wrapped around inside ``[min, max]``.
    p_rt:
        Probability that a categorical value (and the class) is replaced by a different value.
    perturb_class:
        Whether the class takes part (default True: RT perturbs all attributes).
    integer_attrs:
        Numeric attributes kept whole; default the schema's whole-valued attributes
        (integer-dtype columns always stay whole).

    Missing cells stay missing; domains are those of the observed values.
    """

    handles_missing = True
    missing_policy = "kept"
    #: noise width, share of categorical values replaced, and whether the class takes part
    search_space = SearchSpace({"sigma_frac": Real(0.01, 0.5, log=True), "p_rt": Real(0.01, 0.5, log=True),
                                "perturb_class": Choice((True, False))})
    #: wider noise on numeric attributes (the width as a share of the attribute's range)
    strength_param = ("sigma_frac", "increasing", 2.0)
    strength_acts_on = "numeric"
    #: a categorical value (and the class) is replaced with probability p_rt (1 at most)
    other_strength_params = (("p_rt", "increasing", 1.0, "categorical"),)

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        sigma_frac: float = 1 / 6,
        p_rt: float = 0.1,
        perturb_class: bool = True,
        integer_attrs: list[str] | None = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.sigma_frac = sigma_frac
        self.p_rt = p_rt
        self.perturb_class = perturb_class
        self.integer_attrs = integer_attrs

    def _validate_params(self) -> None:
        check_fraction("sigma_frac", self.sigma_frac, high=np.inf)
        check_fraction("p_rt", self.p_rt)
        if not isinstance(self.perturb_class, (bool, np.bool_)):
            raise ParameterError(f"perturb_class must be True or False, got {self.perturb_class!r}")

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        self.domain_ = {c: (float(df[c].min()), float(df[c].max())) for c in schema.numeric}
        cats = list(schema.categorical)
        if self.perturb_class and schema.class_column is not None:
            cats.append(schema.class_column)
        self.levels_ = {c: list(pd.unique(df[c].dropna())) for c in cats}
        self.integer_ = integer_attributes(df, schema, self.integer_attrs)

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        out = df.copy()
        n = len(df)
        for c in schema.numeric:
            lo, hi = self.domain_[c]
            h = np.sqrt(3.0) * self.sigma_frac * (hi - lo)
            noise = rng.uniform(-h, h, n)
            t = np.ones(n, dtype=bool)
            out[c] = add_wrapped_noise(df[c].to_numpy(dtype=float), noise, lo, hi, t, t, integer=c in self.integer_)
        for c, levels in self.levels_.items():
            idx = pd.Index(levels, dtype=object)
            codes = idx.get_indexer(df[c].to_numpy(dtype=object))
            new = replace_with_other_value(codes, len(levels), float(self.p_rt), rng)
            changed = new != codes
            if changed.any():
                col = df[c].copy()
                col.iloc[np.flatnonzero(changed)] = pd.Series(levels, dtype=col.dtype).to_numpy()[new[changed]]
                out[c] = col
        return out
