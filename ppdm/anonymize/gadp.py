"""GADP and EGADP: general additive data perturbation (Muralidhar, Parsa & Sarathy 1999;
Muralidhar & Sarathy 2005), the comparison technique of paper 004 §2 and §7.

GADP perturbs only the attributes a user deems *confidential* (X), but draws the new
values from their distribution conditional on the *non-confidential* attributes (S), so
the mean vector, the covariance matrix of X and the covariance of X with S are kept:

    B = Σ_SS⁻¹ Σ_SX,   Σ_e = Σ_XX − Σ_XS B,   Y = μ_X + (S − μ_S) B + e,   e ~ N(0, Σ_e).

GADP keeps these moments in expectation. EGADP (``exact=True``) removes the sampling
error: the noise is made exactly orthogonal to ``[1, S]`` and rescaled so its sample
covariance is exactly Σ_e, so the release has the original sample mean vector,
covariance matrix and covariance with S (spec trees_and_perturbation.md §5).

Non-confidential categorical attributes and the class enter S as 0/1 indicators, one
per value except the first. The moments are those of the table being transformed.

Conditioning on a column that (nearly) singles out records returns the records: with a
record-name column as 1,000+ indicators, Σ_e vanishes and Y = X. Two guards keep GADP a
perturbation:

* identifiers (the schema's ``identifiers``) are never in S, and a categorical attribute
  with more than ``max_level_share``·n values (default 0.1: fewer than ten records per
  value on average) is left out of the default S with a warning, and refused when named
  in ``non_confidential``;
* when S explains so much of a confidential attribute that less than
  ``min_residual_share`` of its variance is left to redraw (default 0.05: the new values
  would scatter around the old ones by less than a quarter of the attribute's standard
  deviation), GADP refuses, naming the attributes. On adult, for instance,
  ``education_num`` is a function of ``education``: GADP cannot protect it while
  ``education`` is released as it is, and says so.

Released values stay possible (docs/value_domains.md): a draw outside a confidential
attribute's domain (declared bounds, else the range observed in x) is *clipped* to the
nearest end, and whole-number attributes are rounded. Clipping is the smallest change to
each value, so it moves GADP's means and covariances least (reflection moves an outlying
draw twice as far), and an attribute with a mass at an end (zero incomes) keeps it there.
Both break EGADP's exactness for the records they move; ``clip_to_range=False,
round_integers=False`` gives the literal (E)GADP of the papers, unbounded.

Missing values: a missing cell stays missing. The moments (μ, B, Σ_e) are those of the
records complete on X and S, which are redrawn as above (EGADP's exact moments hold for
them). A record with a missing cell is redrawn from the same conditional distribution,
its missing entries of S taken at their complete-record mean (so they do not move its
conditional mean), with GADP noise; its missing entries of X stay missing.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize._domain import DomainGuard, technique_name
from ppdm.anonymize.base import Technique, check_fraction
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError


def _names(value: Any, what: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ParameterError(f"{what} must be a list of column names, got {value!r}")


def psd_sqrt(cov: np.ndarray) -> np.ndarray:
    """A matrix L with L Lᵀ = cov, negative eigenvalues (rounding) clipped to zero."""
    cov = (cov + cov.T) / 2
    w, v = np.linalg.eigh(cov)
    return v * np.sqrt(np.clip(w, 0.0, None))


def gadp_moments(X: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(μ_X, μ_S, B, Σ_e)`` from the sample moments (ddof = 1)."""
    mu_x, mu_s = X.mean(axis=0), S.mean(axis=0)
    Xc, Sc = X - mu_x, S - mu_s
    n = X.shape[0]
    sxx = Xc.T @ Xc / (n - 1)
    if S.shape[1] == 0:
        return mu_x, mu_s, np.zeros((0, X.shape[1])), sxx
    sss = Sc.T @ Sc / (n - 1)
    ssx = Sc.T @ Xc / (n - 1)
    B = np.linalg.pinv(sss) @ ssx
    se = sxx - ssx.T @ B
    return mu_x, mu_s, B, (se + se.T) / 2


def gadp_values(X: np.ndarray, S: np.ndarray, rng: np.random.Generator, *, exact: bool) -> np.ndarray:
    """Perturbed confidential values Y for confidential X given non-confidential S.

    ``exact=True`` is EGADP: ``E0 ~ N(0, 1)`` is regressed on ``[1, S]``, the residuals
    ``E1`` are whitened by their own sample covariance and coloured by Σ_e, so that
    mean(Y) = mean(X), cov(Y) = cov(X) and cov(Y, S) = cov(X, S) hold exactly.
    """
    n, p = X.shape
    mu_x, mu_s, B, se = gadp_moments(X, S)
    le = psd_sqrt(se)
    E0 = rng.standard_normal((n, p))
    if not exact:
        e = E0 @ le.T
    else:
        A = np.column_stack([np.ones(n), S - mu_s])
        coef, *_ = np.linalg.lstsq(A, E0, rcond=None)
        E1 = E0 - A @ coef
        c1 = E1.T @ E1 / (n - 1)
        # whiten E1 with a symmetric inverse square root (robust where Cholesky is not)
        w, v = np.linalg.eigh((c1 + c1.T) / 2)
        inv_sqrt = (v / np.sqrt(w)) @ v.T
        e = E1 @ inv_sqrt @ le.T
    return mu_x + (S - mu_s) @ B + e


def _incomplete_values(Xc: np.ndarray, Sc: np.ndarray, S_inc: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """GADP draws for records with a missing cell, from the moments of the complete records
    ``Xc``, ``Sc``: a missing entry of S is taken at its mean, so it adds nothing to the
    conditional mean μ_X + (S − μ_S) B."""
    mu_x, mu_s, B, se = gadp_moments(Xc, Sc)
    Si = np.where(np.isnan(S_inc), mu_s, S_inc) if S_inc.shape[1] else S_inc
    e = rng.standard_normal((len(S_inc), Xc.shape[1])) @ psd_sqrt(se).T
    return mu_x + (Si - mu_s) @ B + e


@register("gadp")
class GADP(Technique):
    """GADP / EGADP: confidential numeric attributes redrawn given the others, keeping means and covariances.

    Parameters
    ----------
    confidential:
        Numeric attributes to perturb (a list, or a comma-separated string on the command
        line). Default: every numeric non-class attribute.
    non_confidential:
        Attributes the perturbation conditions on (S). Default: every other attribute and
        the class. Categorical ones enter as 0/1 indicators (first value dropped); constant
        columns are left out. Listed columns are output unchanged.
    exact:
        ``False`` (default): GADP, moments kept in expectation. ``True``: EGADP, moments kept
        exactly (needs more records than confidential + indicator columns + 1; otherwise GADP
        is used with a warning).
    clip_to_range:
        Clip perturbed values to the attribute's domain: its declared bounds, else its range
        in x (default ``True``; breaks exactness where a draw is moved). ``False`` releases
        the unbounded draws of the papers.
    round_integers:
        Round whole-number attributes (the schema's ``integer``) to whole numbers (default
        ``True``; breaks exactness). Integer-dtype columns are always rounded, since their
        dtype is kept.
    max_level_share:
        A categorical attribute with more values than this share of the records is not a
        predictor (left out of the default S with a warning; refused if listed).
    min_residual_share:
        Refuse when, given S, less than this share of a confidential attribute's variance
        is left to redraw (1 − R² of its regression on S); 0 switches the guard off.

    Missing cells stay missing; moments come from the records complete on X and S (see the
    module docstring).
    """

    handles_missing = True
    missing_policy = "kept"
    #: GADP or EGADP (moments kept in expectation or exactly)
    search_space = SearchSpace({"exact": Choice((False, True))}, needs=("numeric",))

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        confidential: list[str] | str | None = None,
        non_confidential: list[str] | str | None = None,
        exact: bool = False,
        clip_to_range: bool = True,
        round_integers: bool = True,
        max_level_share: float = 0.1,
        min_residual_share: float = 0.05,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.confidential = confidential
        self.non_confidential = non_confidential
        self.exact = exact
        self.clip_to_range = clip_to_range
        self.round_integers = round_integers
        self.max_level_share = max_level_share
        self.min_residual_share = min_residual_share

    def _validate_params(self) -> None:
        for name in ("exact", "clip_to_range", "round_integers"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ParameterError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_fraction("max_level_share", self.max_level_share)
        check_fraction("min_residual_share", self.min_residual_share)
        _names(self.confidential, "confidential")
        _names(self.non_confidential, "non_confidential")

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        conf = _names(self.confidential, "confidential")
        conf = list(schema.numeric) if conf is None else conf
        if not conf:
            raise ParameterError("GADP needs at least one confidential numeric attribute")
        for c in conf:
            if c not in df.columns:
                raise ParameterError(f"confidential attribute {c!r} is not in the table")
            if c not in schema.numeric:
                raise ParameterError(f"confidential attribute {c!r} is not numeric; GADP perturbs numeric attributes only")
        if len(set(conf)) != len(conf):
            raise ParameterError("confidential lists an attribute twice")
        others = [c for c in schema.columns if c not in set(conf)]
        numeric = set(schema.numeric)
        limit = float(self.max_level_share) * len(df)
        too_many = {c: int(df[c].nunique()) for c in others if c not in numeric and df[c].nunique() > limit}
        listed = _names(self.non_confidential, "non_confidential")
        if listed is None:
            nonconf = [c for c in others if c not in too_many]
            if too_many:
                warnings.warn(
                    "GADP leaves out of its predictors "
                    + ", ".join(f"{c!r} ({k} values)" for c, k in too_many.items())
                    + f": more values than max_level_share={self.max_level_share} of the {len(df)} records",
                    stacklevel=3,
                )
        else:
            nonconf = listed
            for c in nonconf:
                if c in schema.identifiers:
                    raise ParameterError(f"non_confidential attribute {c!r} is an identifier; GADP never conditions on one")
                if c not in others:
                    raise ParameterError(f"non_confidential attribute {c!r} is not a non-confidential column of the table")
                if c in too_many:
                    raise ParameterError(
                        f"non_confidential attribute {c!r} has {too_many[c]} values, more than "
                        f"max_level_share={self.max_level_share} of the {len(df)} records: conditioning on it "
                        "would return the records"
                    )
        self.confidential_ = conf
        self.non_confidential_ = nonconf
        self.excluded_predictors_ = [c for c in too_many if c not in nonconf]
        self.levels_ = {c: list(pd.unique(df[c].dropna())) for c in nonconf if c not in numeric}
        self.integer_ = {c for c in conf if pd.api.types.is_integer_dtype(df[c])
                         or (self.round_integers and c in schema.integer)}

    def design(self, df: pd.DataFrame) -> np.ndarray:
        """S: non-confidential numeric columns as they are, categorical ones as indicators
        (NaN in every indicator of a missing category)."""
        cols: list[np.ndarray] = []
        for c in self.non_confidential_:
            if c in self.levels_:
                vals = df[c].to_numpy(dtype=object)
                gone = pd.isna(df[c]).to_numpy()
                cols.extend(np.where(gone, np.nan, (vals == lv).astype(float)) for lv in self.levels_[c][1:])
            else:
                cols.append(df[c].to_numpy(dtype=float))
        if not cols:
            return np.zeros((len(df), 0))
        S = np.column_stack(cols)
        if len(df) > 1:
            with np.errstate(invalid="ignore"):
                obs = ~np.isnan(S)
                cnt = obs.sum(axis=0)
                mean = np.where(obs, S, 0.0).sum(axis=0) / np.maximum(cnt, 1)
                spread = np.where(obs, (S - mean) ** 2, 0.0).sum(axis=0)
            keep = (cnt > 1) & (spread > 0)
        else:
            keep = np.zeros(S.shape[1], dtype=bool)
        return S[:, keep]

    def _check_residual(self, X: np.ndarray, S: np.ndarray) -> None:
        """Refuse when S leaves less than ``min_residual_share`` of a confidential variance."""
        if S.shape[1] == 0 or not self.min_residual_share > 0:
            return
        _, _, _, se = gadp_moments(X, S)
        var = X.var(axis=0, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(var > 0, np.diag(se) / np.where(var > 0, var, 1.0), 1.0)
        low = [(c, float(r)) for c, r, v in zip(self.confidential_, share, var, strict=True)
               if v > 0 and r < self.min_residual_share]
        if low:
            listed = ", ".join(f"{c!r} ({100 * max(r, 0.0):.2g}%)" for c, r in low)
            raise PPDMError(
                f"GADP would release {listed} almost unchanged: the non-confidential attributes "
                f"{', '.join(map(repr, self.non_confidential_))} leave less than "
                f"min_residual_share={self.min_residual_share} of their variance to redraw; leave them out of "
                "confidential=..., condition on fewer attributes (non_confidential=...) or declare identifiers as such"
            )

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        X = df[self.confidential_].to_numpy(dtype=float)
        S = self.design(df)
        complete = ~np.isnan(X).any(axis=1) & ~np.isnan(S).any(axis=1)
        Xc, Sc = (X, S) if complete.all() else (X[complete], S[complete])
        n, p = Xc.shape
        if n < 2:
            raise ParameterError("GADP needs at least two records" + ("" if complete.all() else
                                 " complete on the confidential and non-confidential attributes"))
        self._check_residual(Xc, Sc)
        exact = bool(self.exact)
        if exact and n <= p + S.shape[1] + 1:
            warnings.warn(
                f"EGADP needs more than {p + S.shape[1] + 1} records (got {n}); using GADP", stacklevel=2
            )
            exact = False
        if complete.all():
            Y = gadp_values(X, S, rng, exact=exact)
        else:
            Y = np.full(X.shape, np.nan)
            Y[complete] = gadp_values(Xc, Sc, rng, exact=exact)
            Y[~complete] = _incomplete_values(Xc, Sc, S[~complete], rng)
            Y[np.isnan(X)] = np.nan
        out = df.copy()
        keep = DomainGuard(self.value_domains_, df, technique_name(self))
        for j, c in enumerate(self.confidential_):
            y = Y[:, j]
            if self.clip_to_range:
                y = keep(c, y, "clip", whole=c in self.integer_)
            if c in self.integer_:
                y = np.rint(y)
            out[c] = y
        keep.warn()
        return out
