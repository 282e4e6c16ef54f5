"""Perturbation matrices for random substitution (paper 001 §2.1, §4) and invariant PRAM.

A perturbation matrix ``M = [m_hk]`` (N × N) holds ``m_hk = p(k → h)``, the probability
that domain value ``u_k`` is replaced by ``u_h``; every column is a probability mass
function (001 §2.1). The *gamma-diagonal* matrix of 001 §4 (taken from FRAPP, Agrawal &
Haritsa 2005) is ``M = x·G`` with ``x = 1/(γ+N−1)``, ``γ`` on the diagonal of ``G`` and
``1`` elsewhere. It satisfies the ρ1-to-ρ2 privacy requirement when
``γ ≤ ρ2(1−ρ1) / (ρ1(1−ρ2))`` and has the smallest condition number among such matrices.

Everything here has a closed form because ``M = x((γ−1)I + J)`` (``J`` the all-ones
matrix): its eigenvalues are ``1`` (eigenvector ``1``) and ``x(γ−1)`` (multiplicity N−1).

Random substitution is the post-randomisation method (PRAM, Gouweleeuw et al. 1998) with a
gamma-diagonal matrix; :func:`invariant_pram_matrix` builds the *invariant* PRAM matrix of
sdcMicro's ``pram`` instead, whose expected frequencies equal the original ones. Both draw
the new values with :func:`substitute`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppdm.errors import ParameterError


def check_gamma(gamma: object, name: str = "gamma") -> float:
    """Return ``gamma`` as a float, or raise :class:`ParameterError` unless it is a real number > 1.

    001 §4: ``γ = 1`` makes ``M`` singular (every column uniform) and ``γ < 1`` is not a
    gamma-diagonal matrix in the privacy sense (its amplification would be ``1/γ``).
    """
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number greater than 1, got {gamma!r}")
    g = float(gamma)
    if not np.isfinite(g) or g <= 1.0:
        raise ParameterError(f"{name} must be a finite number greater than 1 (001 §4: γ = 1 is singular), got {gamma!r}")
    return g


def check_size(n: object, name: str = "n_bins") -> int:
    """Return ``n`` as an int, or raise :class:`ParameterError` unless it is a whole number ≥ 1."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) < 1:
        raise ParameterError(f"{name} must be a whole number of at least 1, got {n!r}")
    return int(n)


def gamma_from_privacy(rho1: float, rho2: float) -> float:
    """The largest γ that prevents a ρ1-to-ρ2 privacy breach: ``ρ2(1−ρ1) / (ρ1(1−ρ2))`` (001 §4).

    Requires ``0 < ρ1 < ρ2 < 1``. Example: ρ1 = 0.05, ρ2 = 0.5 gives γ = 19.
    """
    for name, v in (("rho1", rho1), ("rho2", rho2)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
            raise ParameterError(f"{name} must be a number in (0, 1), got {v!r}")
        if not 0.0 < float(v) < 1.0:
            raise ParameterError(f"{name} must lie strictly between 0 and 1, got {v!r}")
    if not rho1 < rho2:
        raise ParameterError(f"rho1 must be smaller than rho2 (a prior ρ1 may grow to at most ρ2), got {rho1!r} ≥ {rho2!r}")
    return float(rho2 * (1.0 - rho1) / (rho1 * (1.0 - rho2)))


def gamma_diagonal(gamma: float, n: int) -> np.ndarray:
    """The N × N gamma-diagonal matrix ``M = x·G``, ``x = 1/(γ+N−1)`` (001 §4)."""
    g = check_gamma(gamma)
    n = check_size(n, "n")
    x = 1.0 / (g + n - 1)
    m = np.full((n, n), x)
    np.fill_diagonal(m, g * x)
    return m


def gamma_diagonal_inverse(gamma: float, n: int) -> np.ndarray:
    """Closed-form inverse ``M⁻¹ = ((γ+N−1)·I − J) / (γ−1)``."""
    g = check_gamma(gamma)
    n = check_size(n, "n")
    inv = np.full((n, n), -1.0 / (g - 1.0))
    np.fill_diagonal(inv, (g + n - 2.0) / (g - 1.0))
    return inv


def keep_probability(gamma: float, n: int) -> float:
    """Probability that a value is replaced by itself, the diagonal ``γ/(γ+N−1)``."""
    g = check_gamma(gamma)
    return g / (g + check_size(n, "n") - 1)


def condition_number(gamma: float, n: int) -> float:
    """2-norm condition number of the gamma-diagonal matrix: ``(γ+N−1)/(γ−1)``.

    ``M`` is symmetric with eigenvalues ``1`` and ``(γ−1)/(γ+N−1)``, so the ratio of the
    largest to the smallest is this closed form (FRAPP's accuracy measure, 001 §4).
    """
    g = check_gamma(gamma)
    return (g + check_size(n, "n") - 1) / (g - 1)


def _plogp(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    out = np.zeros_like(p)
    pos = p > 0
    out[pos] = p[pos] * np.log2(p[pos])
    return out


def column_entropies(matrix: np.ndarray) -> np.ndarray:
    """``H(j) = −Σ_i m_ij log2 m_ij`` for every column j (001 §4)."""
    return -_plogp(np.asarray(matrix, dtype=float)).sum(axis=0)


def matrix_entropy_of(matrix: np.ndarray, prior: np.ndarray | None = None) -> float:
    """Entropy of a perturbation matrix ``H(M) = Σ_j P_j H(j)`` (001 §4).

    ``prior`` is the adversary's prior ``P_j`` of each original value; the paper assumes
    none is known and uses ``P_j = 1/N``.
    """
    m = np.asarray(matrix, dtype=float)
    h = column_entropies(m)
    if prior is None:
        return float(h.mean())
    p = np.asarray(prior, dtype=float)
    if p.shape != (m.shape[1],) or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ParameterError(f"prior must be {m.shape[1]} non-negative probabilities summing to 1")
    return float(p @ h)


def matrix_entropy(gamma: float, n: int) -> float:
    """Closed-form ``H(M) = −γx·log2(γx) − (N−1)·x·log2(x)``, ``x = 1/(γ+N−1)`` (001 §4).

    Every column of a gamma-diagonal matrix has this entropy, so any prior gives the same value.
    """
    g = check_gamma(gamma)
    n = check_size(n, "n")
    x = 1.0 / (g + n - 1)
    return float(-(g * x) * np.log2(g * x) - (n - 1) * x * np.log2(x))


def t_step_matrix(gamma: float, n: int, t: int) -> np.ndarray:
    """``Mᵗ``: the transition matrix after ``t`` successive perturbations (001 §4, Theorem 2).

    Closed form ``Mᵗ = λᵗ(I − J/N) + J/N`` with ``λ = (γ−1)/(γ+N−1)``; as ``t → ∞`` every
    entry tends to ``1/N`` (the uniform, maximum-entropy matrix).
    """
    g = check_gamma(gamma)
    n = check_size(n, "n")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
        raise ParameterError(f"t must be a whole number ≥ 0, got {t!r}")
    lam_t = ((g - 1.0) / (g + n - 1.0)) ** int(t)
    m = np.full((n, n), (1.0 - lam_t) / n)
    np.fill_diagonal(m, lam_t + (1.0 - lam_t) / n)
    return m


def check_stochastic(matrix: np.ndarray, name: str = "matrix") -> np.ndarray:
    """Return ``matrix`` as a float array after checking it is square with columns summing to 1."""
    try:
        m = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a square matrix of numbers") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise ParameterError(f"{name} must be a non-empty square matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)) or np.any(m < 0):
        raise ParameterError(f"{name} must hold finite non-negative probabilities")
    if not np.allclose(m.sum(axis=0), 1.0, atol=1e-9):
        raise ParameterError(f"every column of {name} must sum to 1 (column k is the distribution of u_k's replacement)")
    return m


@dataclass(frozen=True)
class GammaDiagonal:
    """A gamma-diagonal perturbation matrix with its closed-form properties (001 §4).

    ``GammaDiagonal(gamma=10, n=20).matrix`` is ``M``; ``.inverse``, ``.condition_number``,
    ``.entropy`` and ``.keep_probability`` are the closed forms above.
    """

    gamma: float
    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "gamma", check_gamma(self.gamma))
        object.__setattr__(self, "n", check_size(self.n, "n"))

    @classmethod
    def from_privacy(cls, rho1: float, rho2: float, n: int) -> GammaDiagonal:
        """The matrix with the largest γ that prevents a ρ1-to-ρ2 breach."""
        return cls(gamma_from_privacy(rho1, rho2), n)

    @property
    def x(self) -> float:
        return 1.0 / (self.gamma + self.n - 1)

    @property
    def matrix(self) -> np.ndarray:
        return gamma_diagonal(self.gamma, self.n)

    @property
    def inverse(self) -> np.ndarray:
        return gamma_diagonal_inverse(self.gamma, self.n)

    @property
    def keep_probability(self) -> float:
        return keep_probability(self.gamma, self.n)

    @property
    def condition_number(self) -> float:
        return condition_number(self.gamma, self.n)

    @property
    def entropy(self) -> float:
        return matrix_entropy(self.gamma, self.n)

    def power(self, t: int) -> np.ndarray:
        """``Mᵗ`` (Theorem 2)."""
        return t_step_matrix(self.gamma, self.n, t)


# --------------------------------------------------------------------------- drawing
def substitute(idx: np.ndarray, matrix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1 (RSP, paper 001 §2.1) on domain indices: replace each ``k`` by ``h`` drawn
    from column ``k`` of ``matrix`` (``M[h, k] = p(k → h)``). PRAM's draw is the same with
    ``M`` the transpose of its transition matrix.

    Step 3 draws ``r`` uniform on ``(0, 1]``; step 4 finds ``h`` with
    ``F(h−1) < r ≤ F(h)`` for the column's cumulative distribution ``F``. Records are
    grouped by ``k`` so the cost is ``O(n log N + N²)``.
    """
    idx = np.asarray(idx, dtype=np.int64)
    m = np.asarray(matrix, dtype=float)
    n_dom = m.shape[0]
    r = 1.0 - rng.random(idx.size)  # (0, 1]
    cum = np.cumsum(m, axis=0)
    out = np.empty_like(idx)
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(n_dom + 1))
    for k in range(n_dom):
        rows = order[bounds[k]: bounds[k + 1]]
        if rows.size:
            out[rows] = np.searchsorted(cum[:, k], r[rows], side="left")
    # r = 1 can fall just past a cumulative sum of 1 − ε: it belongs to the last value
    return np.minimum(out, n_dom - 1)


# ---------------------------------------------------------------------- invariant PRAM
def pram_base_matrix(pds: np.ndarray) -> np.ndarray:
    """sdcMicro's first PRAM matrix ``P``: ``P[i, i] = pds[i]`` and the rest of row i shared
    equally by the other ``L − 1`` levels (row = original level, column = new level)."""
    d = np.asarray(pds, dtype=float)
    n = d.size
    if n == 1:
        return np.ones((1, 1))
    p = np.repeat(((1.0 - d) / (n - 1))[:, None], n, axis=1)
    np.fill_diagonal(p, d)
    return p


def invariant_pram_matrix(pds: np.ndarray, freq: np.ndarray, alpha: float) -> np.ndarray:
    """The invariant PRAM transition matrix of sdcMicro's ``pram`` (Gouweleeuw et al. 1998 §4;
    Templ, Kowarik & Meindl 2015): row i is the distribution of the new level of a record of
    level i.

    With ``P`` from :func:`pram_base_matrix` and ``p`` the level frequencies,
    ``Q[k, j] = P[j, k]·p[j] / Σ_i p[i]·P[i, k]`` (the backward matrix), and
    ``R = alpha·(P Q) + (1 − alpha)·I``. Then ``p R = p``: the expected frequencies after PRAM
    are the original ones, whatever ``pds`` and ``alpha``.
    """
    d = np.asarray(pds, dtype=float)
    p = np.asarray(freq, dtype=float)
    if d.shape != p.shape or d.ndim != 1:
        raise ParameterError(f"pds and the frequencies must be vectors of one length, got {d.shape} and {p.shape}")
    if np.any(p < 0) or not p.sum() > 0:
        raise ParameterError("level frequencies must be non-negative and not all zero")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ParameterError(f"alpha must lie in [0, 1], got {alpha!r}")
    P = pram_base_matrix(d)
    p = p / p.sum()  # the scale cancels (sdcMicro divides by another constant)
    col = p @ P  # Σ_i p[i] P[i, k]
    with np.errstate(divide="ignore", invalid="ignore"):
        Q = (P * p[:, None]).T / col[:, None]
    Q = np.nan_to_num(Q)
    R = alpha * (P @ Q) + (1.0 - alpha) * np.eye(d.size)
    return R
