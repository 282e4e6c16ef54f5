"""Reconstruction of random-substitution releases (paper 001 §3).

* :func:`estimate_counts` — the distribution estimate ``X̂ = M⁻¹y`` (001 §3.2, formula 1),
  with ``y`` the counts of each domain value in the release.
* :func:`reduce_error` — the error-reduction heuristic (001 §3.3): negative counts are
  set to zero (Proposition 1: this strictly reduces the error), the rest rescaled to sum
  to ``n`` (constraint C1) and made whole by the largest-remainder rule.
* :func:`matrix_reconstruct` — MR, Algorithm 2: sort the released records on the
  attribute and give the first ``Dist[1]`` records ``getValue(1)``, the next ``Dist[2]``
  ``getValue(2)`` and so on. :func:`reconstruct` applies it to one attribute at a time.
* :func:`estimation_error` — ``E = Σ|X̂_i − X_i| / Σ X_i`` (001 §5.1).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm import progress
from ppdm.anonymize.perturbation_matrix import check_stochastic, gamma_diagonal_inverse
from ppdm.anonymize.random_substitution import AttributeDomain, SubstitutionMetadata
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.utils import check_random_state

Ties = Literal["random", "stable"]


def _inverse(matrix: np.ndarray, gamma: float | None = None) -> np.ndarray:
    m = check_stochastic(matrix)
    if gamma is not None:
        inv = gamma_diagonal_inverse(gamma, m.shape[0])
        if np.allclose(inv @ m, np.eye(m.shape[0]), atol=1e-9):
            return inv
    try:
        return np.linalg.inv(m)
    except np.linalg.LinAlgError:
        raise ParameterError("the perturbation matrix is singular, so the distribution cannot be estimated") from None


def estimate_counts(y: np.ndarray, matrix: np.ndarray, *, gamma: float | None = None) -> np.ndarray:
    """``X̂ = M⁻¹y`` (001 §3.2, formula 1): estimated original count of each domain value.

    ``y`` are the observed counts in the release. The estimate sums to ``n`` but may hold
    negative entries (001 §3.3). ``gamma`` selects the closed-form inverse of a
    gamma-diagonal matrix.
    """
    y = np.asarray(y, dtype=float)
    m = np.asarray(matrix, dtype=float)
    if y.ndim != 1 or y.shape[0] != m.shape[0]:
        raise ParameterError(f"expected {m.shape[0]} observed counts, got shape {y.shape}")
    return _inverse(m, gamma) @ y


def clip_negative(xhat: np.ndarray) -> np.ndarray:
    """Set negative estimated counts to zero (001 Proposition 1)."""
    return np.maximum(np.asarray(xhat, dtype=float), 0.0)


def largest_remainder(weights: np.ndarray, n: int) -> np.ndarray:
    """Whole counts proportional to non-negative ``weights`` that sum to exactly ``n``.

    Each count is the floor of its share; the units left over go to the largest
    fractional parts (ties to the lower index).
    """
    w = np.asarray(weights, dtype=float)
    total = w.sum()
    if n < 0 or total <= 0:
        raise PPDMError("cannot share counts: the weights are all zero")
    # divide first: n / total overflows when the total is subnormal
    share = (w / total) * n
    base = np.floor(share).astype(np.int64)
    left = int(n - base.sum())
    if left > 0:
        order = np.lexsort((np.arange(w.size), -(share - base)))
        base[order[:left]] += 1
    return base


def reduce_error(xhat: np.ndarray, n: int | None = None) -> np.ndarray:
    """The error-reduction heuristic of 001 §3.3 as ppdm applies it.

    Clip negative counts to zero (C2, Proposition 1), rescale the rest to sum to ``n``
    (C1, Lemma 1) and round to whole counts by largest remainder, so the result can drive
    MR. ``n`` defaults to ``round(Σ X̂)`` (which equals the number of released records).
    """
    x = np.asarray(xhat, dtype=float)
    if n is None:
        n = int(round(x.sum()))
    return largest_remainder(clip_negative(x), int(n))


def estimation_error(xhat: np.ndarray, x: np.ndarray) -> float:
    """``E = Σ|X̂_i − X_i| / Σ X_i`` (001 §5.1)."""
    xhat = np.asarray(xhat, dtype=float)
    x = np.asarray(x, dtype=float)
    if xhat.shape != x.shape:
        raise ParameterError(f"estimate and truth differ in length ({xhat.shape} vs {x.shape})")
    total = x.sum()
    if total <= 0:
        raise ParameterError("the true counts sum to zero")
    return float(np.abs(xhat - x).sum() / total)


def observed_counts(released: pd.Series | np.ndarray, domain: AttributeDomain) -> np.ndarray:
    """``y``: how many released records hold each domain value."""
    idx = domain.get_index(released, released=True)
    return np.bincount(idx, minlength=domain.n).astype(float)


def estimate_distribution(
    released: pd.Series | np.ndarray, domain: AttributeDomain, *, heuristic: bool = True
) -> np.ndarray:
    """Estimated original counts of an attribute's domain values from its release.

    With ``heuristic=True`` the counts are whole, non-negative and sum to ``n``
    (:func:`reduce_error`); otherwise the raw ``M⁻¹y``.
    """
    y = observed_counts(released, domain)
    xhat = estimate_counts(y, domain.matrix, gamma=domain.gamma)
    return reduce_error(xhat, int(y.sum())) if heuristic else xhat


def matrix_reconstruct(
    released: pd.Series,
    domain: AttributeDomain,
    *,
    ties: Ties = "random",
    random_state: Any = 0,
) -> pd.Series:
    """MR (001 Algorithm 2) for one attribute: the reconstructed column.

    The records are sorted on their released value (domain order); the first ``Dist[1]``
    get ``getValue(1)``, the next ``Dist[2]`` ``getValue(2)``, and so on, where ``Dist``
    are the whole estimated counts. The paper does not say how records with equal
    released values are ordered: ``ties="random"`` shuffles them (so the table's row
    order cannot leak into the result), ``"stable"`` keeps table order.
    """
    if ties not in ("random", "stable"):
        raise ParameterError(f"ties must be 'random' or 'stable', got {ties!r}")
    idx = domain.get_index(released, released=True)
    y = np.bincount(idx, minlength=domain.n).astype(float)
    dist = reduce_error(estimate_counts(y, domain.matrix, gamma=domain.gamma), len(idx))
    if ties == "random":
        rng = check_random_state(random_state)
        order = np.lexsort((rng.permutation(idx.size), idx))
    else:
        order = np.argsort(idx, kind="stable")
    new_idx = np.empty(idx.size, dtype=np.int64)
    new_idx[order] = np.repeat(np.arange(domain.n), dist)
    vals = domain.get_values(new_idx)  # the fixed representative (centre for "random")
    if domain.kind == "categorical":
        return pd.Series(vals, index=released.index, dtype=released.dtype, name=released.name)
    out = pd.Series(vals.astype(float), index=released.index, name=released.name)
    if pd.api.types.is_integer_dtype(released.dtype):
        out = out.round().astype(released.dtype)
    return out


def reconstruct(
    z: pd.DataFrame,
    metadata: SubstitutionMetadata,
    *,
    columns: Iterable[str] | None = None,
    ties: Ties = "random",
    random_state: Any = 0,
) -> pd.DataFrame:
    """Apply MR (001 Algorithm 2) to every perturbed attribute, one at a time.

    The result is an ordinary table with the release's rows, columns and dtypes that any
    tree learner can mine (001 §3.1). Attributes not in ``metadata`` are copied. A missing
    cell was never substituted (random substitution keeps missing cells missing): it stays
    missing, and the distribution is reconstructed from the observed values.
    """
    if not isinstance(z, pd.DataFrame):
        raise SchemaError(f"expected a pandas DataFrame, got {type(z).__name__}")
    targets = metadata.perturbed_columns(z, columns)
    if len(z) == 0:
        raise SchemaError("the table has no rows")
    rng = check_random_state(random_state)
    from ppdm.data.types import restore_column, working_frame

    like = z
    # the domains of numeric attributes are numbers (dates: days since 1970-01-01)
    numeric = [c for c in targets if metadata.attributes[c].kind != "categorical"]
    z = working_frame(z, numeric)
    out = z.copy()
    with progress.steps(len(targets), "reconstructing attributes") as step:
        for c in targets:
            seen = z[c].notna().to_numpy()
            if seen.all():
                out[c] = matrix_reconstruct(z[c], metadata.attributes[c], ties=ties, random_state=rng)
            elif seen.any():
                part = matrix_reconstruct(z[c][seen], metadata.attributes[c], ties=ties, random_state=rng)
                col = out[c].astype(object) if part.dtype != out[c].dtype else out[c].copy()
                col[seen] = part.to_numpy(dtype=object) if col.dtype == object else part.to_numpy()
                out[c] = col.astype(z[c].dtype) if col.dtype == object else col
            step()
    formats = dict(like.attrs.get("date_formats") or {})
    for c in numeric:
        out[c] = restore_column(out[c], like[c], date_format=formats.get(c))
    out.attrs = dict(like.attrs)
    return out
