"""Reconstruction attacks on perturbed releases (paper 001 §2.3 and §4).

* :func:`spectral_filtering_attack` — the data-recovery attack of Kargupta et al. (ICDM
  2003) that 001 §2.3 discusses: project the release onto the eigenvectors of its
  covariance whose eigenvalues exceed the random-matrix bound of the noise,
  ``λ_max = σ²(1 + 1/√Q)²`` with ``Q = n/m``. It undoes additive noise on correlated data;
  on random-substitution data it does not beat trusting the released value (001 Theorem 1:
  the "noise" is drawn from a different distribution for each original value).
* :func:`bayes_estimate_attack` — the Bayes-estimate reconstruction of Huang, Du & Chen
  (SIGMOD 2005) for additive Gaussian noise, a second baseline for the additive arm.
* :func:`repeated_perturbation_attack` — 001 §4: the attacker perturbs the release again
  and again with the public matrix. The t-step matrix tends to uniform (Theorem 2), so
  the chance of landing on the original value only falls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ppdm.anonymize.perturbation_matrix import matrix_entropy_of
from ppdm.anonymize.random_substitution import SubstitutionMetadata, substitute
from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics._common import power_of_two_scale
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.metrics.release_check import unchanged_cells
from ppdm.utils import check_random_state

#: relative error below which a release counts as the original itself (see SpectralFilteringResult)
UNCHANGED_TOL = 1e-9


@dataclass
class SpectralFilteringResult(MeasureResult):
    """Outcome of spectral filtering.

    ``value`` is the headline named by ``metric``. For continuous data (no metadata),
    ``"protected_share"``: the share of the attacked values the attack does not recover, the
    smaller of

    * the RMSE ratio ``RMSE(estimate, x) / RMSE(release, x)`` capped at 1 (below 1: the attack
      recovers data; the attacker keeps the release where filtering makes it worse), the
      spec's measure, kept uncapped in ``ratio``; and
    * ``changed_share``, the share of attacked cells the release changed at all (by more than
      the release check's tolerance, 10⁻⁶ standard deviations): a value the release left as
      it was needs no reconstruction.

    So a release that is x has value 0, and one that nudges a single cell of 16 000 has
    value 1/16 000, not the ratio's 1 (filtering a release that is almost x only adds error,
    which says nothing about protection). For a random-substitution release (metadata given)
    ``metric`` is ``"exact_recovery"`` and the value the exact-recovery rate of the estimate,
    to compare with ``exact_release`` (the keep rate). ``NaN`` without ``x``.

    Values near 10²⁰⁰ are filtered scaled by a power of two: the covariance of such values
    overflows, and spectral filtering is unchanged by a common factor (the estimate scales
    with it, exactly).
    """

    record_level: ClassVar[tuple[str, ...]] = ("estimate",)  # one row per record: never in a report

    metric: str = ""
    estimate: pd.DataFrame = field(default_factory=pd.DataFrame)
    n_signal: int = 0
    eigenvalues: np.ndarray = field(default_factory=lambda: np.zeros(0))
    noise_variance: float = float("nan")
    lambda_max: float = float("nan")
    rmse_release: float = float("nan")
    rmse_estimate: float = float("nan")
    exact_release: float = float("nan")
    exact_estimate: float = float("nan")
    ratio: float = float("nan")  # RMSE(estimate, x) / RMSE(release, x), uncapped
    changed_share: float = float("nan")  # share of attacked cells the release changed
    unchanged: bool = False  # the release left every attacked value as it was (changed_share = 0)


@dataclass
class BayesEstimateResult(MeasureResult):
    """Bayes-estimate reconstruction; ``value`` = ``RMSE(estimate, x) / RMSE(release, x)``."""

    record_level: ClassVar[tuple[str, ...]] = ("estimate",)

    estimate: pd.DataFrame = field(default_factory=pd.DataFrame)
    rmse_release: float = float("nan")
    rmse_estimate: float = float("nan")


@dataclass
class RepeatedPerturbationResult(MeasureResult):
    """Outcome of the repeated-perturbation attack (001 §4).

    ``value`` is the attacker's best gain in exact recovery over the release itself,
    ``max_{t≥1} rate(t) − rate(0)`` (empirical when ``x`` is given, else from ``Mᵗ⁺¹``);
    zero or below means repeating gains nothing. ``steps`` has, for each number ``t`` of
    extra perturbations, the probability that a value equals its original
    (``keep_probability``, the mean diagonal of ``Mᵗ⁺¹``), the entropy ``H(Mᵗ⁺¹)``, the
    largest distance of ``Mᵗ⁺¹`` from the uniform matrix and, with ``x``, the observed
    exact-recovery rate.
    """

    steps: pd.DataFrame = field(default_factory=pd.DataFrame)


# --------------------------------------------------------------------------- helpers
def _frame(z: Any, name: str) -> pd.DataFrame:
    if not isinstance(z, pd.DataFrame):
        raise SchemaError(f"{name} must be a pandas DataFrame, got {type(z).__name__}")
    if len(z) < 2:
        raise SchemaError(f"{name} needs at least two rows")
    return z


def _aligned(x: pd.DataFrame, z: pd.DataFrame, attack: str) -> None:
    # the attack is scored record by record, so x and z must hold the same records
    if len(x) != len(z):
        raise SchemaError(
            f"{attack} scores the attack record by record, but the original has {len(x)} rows "
            f"and the release {len(z)}"
        )


def _numeric_columns(z: pd.DataFrame, columns: Sequence[str] | None) -> list[str]:
    if columns is None:
        cols = [c for c in z.columns if pd.api.types.is_numeric_dtype(z[c]) and not pd.api.types.is_bool_dtype(z[c])]
    else:
        cols = list(columns)
        missing = [c for c in cols if c not in z.columns]
        if missing:
            raise SchemaError(f"column {missing[0]!r} is not in the table")
    if len(cols) < 2:
        raise MeasureNotApplicable("spectral filtering needs at least two numeric columns")
    return cols


def _matrix(df: pd.DataFrame, cols: list[str], name: str) -> np.ndarray:
    a = df[cols].to_numpy(dtype=float)
    if not np.all(np.isfinite(a)):
        raise SchemaError(f"{name} holds a missing or infinite value in the attacked columns")
    return a


def _rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2)))


def spectral_filter(u: np.ndarray, noise_variance: float | None = None) -> tuple[np.ndarray, int, np.ndarray, float, float]:
    """Kargupta et al.'s spectral filtering of an n × m matrix ``u``.

    Returns ``(estimate, n_signal, eigenvalues, noise_variance, lambda_max)``. With
    ``noise_variance=None`` the noise floor is the median eigenvalue of the covariance
    (an attacker who does not know the noise).
    """
    n, m = u.shape
    mu = u.mean(axis=0)
    uc = u - mu
    with np.errstate(over="ignore", invalid="ignore"):
        cov = uc.T @ uc / n
    if not np.all(np.isfinite(cov)):
        raise MeasureNotApplicable("spectral filtering: the covariance of the release overflows double precision; "
                                   "scale the values (spectral_filtering_attack does so itself)")
    try:
        w, v = np.linalg.eigh(cov)
    except np.linalg.LinAlgError as e:
        raise MeasureNotApplicable(f"spectral filtering: the covariance of the release cannot be decomposed ({e})") \
            from None
    s2 = float(np.median(w)) if noise_variance is None else float(noise_variance)
    lam_max = s2 * (1.0 + 1.0 / np.sqrt(n / m)) ** 2
    a = v[:, w > lam_max]
    return uc @ a @ a.T + mu, int(a.shape[1]), w[::-1].copy(), s2, float(lam_max)


def _noise_scale(noise_std: Any, cols: list[str]) -> np.ndarray:
    if isinstance(noise_std, Mapping):
        missing = [c for c in cols if c not in noise_std]
        if missing:
            raise ParameterError(f"noise_std has no entry for column {missing[0]!r}")
        s = np.array([float(noise_std[c]) for c in cols])
    else:
        s = np.broadcast_to(np.asarray(noise_std, dtype=float), (len(cols),)).copy()
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ParameterError("noise_std must be positive and finite for every attacked column")
    return s


# --------------------------------------------------------------------------- attacks
def spectral_filtering_attack(
    z: pd.DataFrame,
    *,
    x: pd.DataFrame | None = None,
    noise_std: float | Sequence[float] | Mapping[str, float] | None = None,
    metadata: SubstitutionMetadata | None = None,
    columns: Sequence[str] | None = None,
    replace_threshold: float | None = None,
) -> SpectralFilteringResult:
    """Spectral filtering (Kargupta et al. 2003) against a release ``z``.

    Parameters
    ----------
    x:
        The original table, to score the attack (optional).
    noise_std:
        Public standard deviation of additive noise, per column (a number, a sequence or a
        dict). Columns are divided by it so the noise has unit variance. ``None``: the
        attacker takes the median covariance eigenvalue as the noise floor.
    metadata:
        For a random-substitution release: the attacker works on domain indices ("codes")
        of the perturbed numeric attributes, rounds and clips the estimate to valid codes
        and scores exact recovery.
    replace_threshold:
        The correlation-aware variant (spec §8 caveat): keep the released code unless the
        estimate differs from it by more than this many codes.
    """
    z = _frame(z, "the release")
    if metadata is not None:
        cols = list(columns) if columns is not None else [
            c for c, a in metadata.attributes.items() if a.kind != "categorical" and c in z.columns]
        if len(cols) < 2:
            raise MeasureNotApplicable("spectral filtering needs at least two perturbed numeric attributes")
        doms = [metadata.attributes[c] for c in cols]
        u = np.column_stack([d.get_index(z[c], released=True) for c, d in zip(cols, doms, strict=True)]).astype(float)
        est, k, w, s2, lam = spectral_filter(u, None if noise_std is None else float(np.mean(np.square(noise_std))))  # type: ignore[arg-type]  # with metadata noise_std is a number or a sequence
        top = np.array([d.n - 1 for d in doms], dtype=float)
        codes = np.clip(np.rint(est), 0, top)
        if replace_threshold is not None:
            codes = np.where(np.abs(u - est) > float(replace_threshold), codes, u)
        estimate = pd.DataFrame(
            {c: d.get_values(codes[:, j].astype(np.int64)) for j, (c, d) in enumerate(zip(cols, doms, strict=True))},
            index=z.index,
        )
        res = SpectralFilteringResult(float("nan"), "exact_recovery", estimate, k, w, s2, lam)
        if x is not None:
            x = _frame(x, "the original table")
            _aligned(x, z, "spectral filtering")
            truth_codes = np.column_stack([d.get_index(x[c]) for c, d in zip(cols, doms, strict=True)]).astype(float)
            res.exact_release = float(np.mean(u == truth_codes))
            res.exact_estimate = float(np.mean(codes == truth_codes))
            res.rmse_release, res.rmse_estimate = _rmse(u, truth_codes), _rmse(codes, truth_codes)
            res.value = res.exact_estimate
        return res
    cols = _numeric_columns(z, columns)
    u = _matrix(z, cols, "the release")
    scale = np.ones(len(cols)) if noise_std is None else _noise_scale(noise_std, cols)
    truth: np.ndarray | None = None
    if x is not None:
        x = _frame(x, "the original table")
        _aligned(x, z, "spectral filtering")
        truth = _matrix(x, cols, "the original table")
    # one power of two for every column (exact; 1 for ordinary data): values near 1e200 would
    # overflow the covariance and the RMSEs, and a common factor changes neither
    f = float(power_of_two_scale(u / scale, *([] if truth is None else [truth / scale]), per_column=False)[0]) \
        if len(cols) else 1.0
    est_s, k, w, s2, lam = spectral_filter(u / scale * f, None if noise_std is None else f * f)
    est = est_s / f * scale
    with np.errstate(over="ignore", invalid="ignore"):
        back = np.float64(1.0 / f) ** 2  # eigenvalues in the release's units (infinite if they do not fit)
        w, s2, lam = w * back, float(s2 * back), float(lam * back)
    res = SpectralFilteringResult(float("nan"), "protected_share", pd.DataFrame(est, columns=cols, index=z.index),
                                  k, w, s2, lam)
    if truth is not None:
        g = float(power_of_two_scale(u, truth, per_column=False)[0])  # the RMSEs' own space
        res.rmse_release = _rmse(u * g, truth * g) / g
        res.rmse_estimate = _rmse(est * g, truth * g) / g
        res.exact_release = float(np.mean(u == truth))
        res.exact_estimate = float(np.mean(est == truth))
        # the attacker keeps the release where filtering makes it worse, so the ratio part is
        # the share of the release's error that survives the better of the two, in [0, 1];
        # and a value the release did not change is recovered without any filtering
        same = np.column_stack([unchanged_cells(pd.Series(truth[:, j]), pd.Series(u[:, j]), numeric=True)
                                for j in range(len(cols))])  # by position, as the RMSEs
        res.changed_share = float(np.count_nonzero(~same) / same.size) if same.size else 0.0
        res.unchanged = res.changed_share == 0.0
        res.ratio = res.rmse_estimate / res.rmse_release if res.rmse_release > 0 else float("inf")
        res.value = 0.0 if res.unchanged else min(1.0, res.ratio, res.changed_share)
    return res


def bayes_estimate_attack(
    z: pd.DataFrame,
    noise_std: float | Sequence[float] | Mapping[str, float],
    *,
    x: pd.DataFrame | None = None,
    columns: Sequence[str] | None = None,
) -> BayesEstimateResult:
    """Bayes-estimate data reconstruction (Huang, Du & Chen 2005) for additive Gaussian noise.

    With ``Σ_R = diag(σ²)`` and ``Σ_V = Σ_U − Σ_R`` (eigenvalues clipped at zero), each
    row ``u`` is estimated by ``μ + Σ_V(Σ_V + Σ_R)⁻¹(u − μ)``, the posterior mean under a
    multivariate normal prior (algebraically the paper's ``(Σ_V⁻¹+Σ_R⁻¹)⁻¹(Σ_V⁻¹μ+Σ_R⁻¹u)``
    without inverting a possibly singular ``Σ_V``).
    """
    z = _frame(z, "the release")
    cols = _numeric_columns(z, columns)
    u = _matrix(z, cols, "the release")
    s = _noise_scale(noise_std, cols)
    mu = u.mean(axis=0)
    cov_u = np.cov(u, rowvar=False, bias=True)
    cov_r = np.diag(s**2)
    w, v = np.linalg.eigh(cov_u - cov_r)
    cov_v = (v * np.maximum(w, 0.0)) @ v.T
    gain = cov_v @ np.linalg.inv(cov_v + cov_r)
    est = mu + (u - mu) @ gain.T
    res = BayesEstimateResult(float("nan"), pd.DataFrame(est, columns=cols, index=z.index))
    if x is not None:
        x = _frame(x, "the original table")
        _aligned(x, z, "the Bayes-estimate attack")
        truth = _matrix(x, cols, "the original table")
        res.rmse_release, res.rmse_estimate = _rmse(u, truth), _rmse(est, truth)
        # the attacker keeps the release where filtering makes it worse, so the value is the
        # share of the release's error that survives the better of the two, in [0, 1]; a
        # release that leaves the values as they were (within UNCHANGED_TOL standard
        # deviations) has no error to keep: 0, the attacker holds x
        sd = np.nanstd(truth, axis=0)
        floor = UNCHANGED_TOL * float(np.sqrt(np.mean(np.square(sd)))) if sd.size else 0.0
        res.unchanged = bool(res.rmse_release <= floor)  # type: ignore[attr-defined]  # set only when x scores the attack: not a declared field
        res.ratio = res.rmse_estimate / res.rmse_release if res.rmse_release > 0 else float("inf")  # type: ignore[attr-defined]  # set only when x scores the attack: not a declared field
        res.value = 0.0 if res.unchanged else min(1.0, res.ratio)  # type: ignore[attr-defined]  # set only when x scores the attack: not a declared field
    return res


def repeated_perturbation_attack(
    z: pd.DataFrame,
    metadata: SubstitutionMetadata,
    *,
    x: pd.DataFrame | None = None,
    steps: int = 10,
    columns: Sequence[str] | None = None,
    random_state: Any = 0,
) -> RepeatedPerturbationResult:
    """Perturb the release ``t = 1..steps`` more times with the public matrices (001 §4).

    A value in the release is one step of a Markov chain from the original; ``t`` more
    steps give the transition matrix ``Mᵗ⁺¹``, whose diagonal falls towards ``1/N`` and
    whose entropy rises to ``log2 N`` (Theorem 2). The attacker's chance of holding the
    original value therefore only drops.
    """
    z = _frame(z, "the release")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ParameterError(f"steps must be a whole number ≥ 1, got {steps!r}")
    cols = metadata.perturbed_columns(z, columns)
    if not cols:
        raise ParameterError("the metadata names no perturbed attribute")
    rng = check_random_state(random_state)
    doms = [metadata.attributes[c] for c in cols]
    cur = [d.get_index(z[c], released=True) for c, d in zip(cols, doms, strict=True)]
    truth = None
    if x is not None:
        x = _frame(x, "the original table")
        _aligned(x, z, "the repeated-perturbation attack")
        truth = [d.get_index(x[c]) for c, d in zip(cols, doms, strict=True)]
    rows = []
    powers = [d.matrix.copy() for d in doms]
    for t in range(steps + 1):
        if t > 0:
            cur = [substitute(k, d.matrix, rng) for k, d in zip(cur, doms, strict=True)]
            powers = [d.matrix @ p for d, p in zip(doms, powers, strict=True)]
        row = {
            "t": t,
            "keep_probability": float(np.mean([np.mean(np.diag(p)) for p in powers])),
            "entropy": float(np.mean([matrix_entropy_of(p) for p in powers])),
            "max_distance_to_uniform": float(max(np.abs(p - 1.0 / p.shape[0]).max() for p in powers)),
        }
        if truth is not None:
            row["exact_recovery"] = float(np.mean(np.concatenate([a == b for a, b in zip(cur, truth, strict=True)])))
        rows.append(row)
    table = pd.DataFrame(rows)
    col = "exact_recovery" if truth is not None else "keep_probability"
    gain = float(table[col].iloc[1:].max() - table[col].iloc[0])
    return RepeatedPerturbationResult(gain, table)


# ------------------------------------------------------------------ evaluate adapters
@register_measure(
    "spectral_filtering", paired=True, options=("noise_std",),
    kind="risk",
    description="Spectral-filtering data recovery (Kargupta et al. 2003): RMSE(attack, x)/RMSE(z, x); "
    "option noise_std (default: median-eigenvalue noise floor)",
    needs_class=False,
    direction="higher", value_range=(0.0, 1.0), threshold=0.9,
    meaning="The attacker's error over the release's own error, capped at 1: 1 means filtering the release brings "
    "the attacker no closer to the original values, 0.5 that it halves the error, 0 that the release is x.",
)
def _spectral_filtering_measure(ctx: EvaluationContext) -> SpectralFilteringResult:
    cols = [c for c in ctx.schema.numeric if c in ctx.z.columns]
    x, z = _complete_pair(ctx.x, ctx.z, cols)  # the attack needs every attacked value of a record
    return spectral_filtering_attack(z, x=x, noise_std=ctx.options.get("noise_std"), columns=cols)


def _complete_pair(x: pd.DataFrame, z: pd.DataFrame, cols: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The records complete on ``cols`` in both x and z (x and z aligned record by record)."""
    if len(x) != len(z):
        return x, z  # refused by the attack, which names both sizes
    ok = ~(x[cols].isna().to_numpy().any(axis=1) | z[cols].isna().to_numpy().any(axis=1))
    return (x, z) if ok.all() else (x.loc[ok], z.loc[ok])  # type: ignore[index]  # numpy's stubs: any(axis=1) may be a scalar


@register_measure(
    "repeated_perturbation", paired=True, options=("matrices", "steps"),
    kind="risk",
    description="Repeated-perturbation attack on a random-substitution release (001 §4): best gain in exact "
    "recovery; option matrices=<release>.matrices.json",
    needs_class=False,
    requires=("matrices",),
    direction="lower", value_range=(-1.0, 1.0), threshold=0.01,
    meaning="The attacker's best gain in exactly recovered values from perturbing the release again; 0 or below "
    "means repeating gains nothing (paper 001 Theorem 2).",
)
def _repeated_perturbation_measure(ctx: EvaluationContext) -> RepeatedPerturbationResult:
    path = ctx.options.get("matrices")
    if path is None:
        raise ParameterError("repeated_perturbation needs the option matrices=<path of the .matrices.json sidecar>")
    meta = SubstitutionMetadata.load(path)
    x, z = _complete_pair(ctx.x, ctx.z, [c for c in meta.attributes if c in ctx.z.columns and c in ctx.x.columns])
    return repeated_perturbation_attack(z, meta, x=x, steps=int(ctx.options.get("steps", 10)),
                                        random_state=ctx.random_state)
