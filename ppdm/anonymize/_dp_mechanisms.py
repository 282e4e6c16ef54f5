"""Differentially private building blocks of DPCube: noisy counts, the exponential
mechanism, DP quantiles and DP attribute scores.

Every function here is one mechanism with a stated sensitivity and budget; the privacy
accounting of a release (which mechanism spends which share of ε, and why the shares add
up) lives in :mod:`ppdm.anonymize.differential_privacy`.

* :func:`discrete_laplace` — the two-sided geometric mechanism (Ghosh, Roughgarden &
  Sundararajan 2009): integer noise with ``P(k) ∝ exp(−ε|k|/Δ)``, ε-DP for integer
  counts of L1 sensitivity Δ. Its outputs are whole numbers, so the low-order bits that
  betray floating-point Laplace noise (Mironov 2012) do not exist.
* :func:`gumbel_top_k` — the exponential mechanism (McSherry & Talwar 2007) run k times
  without replacement, in its one-shot Gumbel form (Durfee & Rogers 2019).
* :func:`dp_bin_edges` — bin edges at quantiles of a noisy histogram inside declared
  bounds, zooming into the pieces that hold most records (a hierarchical histogram in
  the spirit of Hay et al. 2010, restricted to occupied pieces).
* :func:`split_purity_scores` — how well each attribute alone separates the classes
  (the Gini purity of its best split, after Friedman & Schuster 2010, §4.2, without their
  record count: sensitivity 1 per added or removed record), a score the exponential
  mechanism ranks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "discrete_laplace",
    "discrete_laplace_variance",
    "dp_bin_edges",
    "gumbel_top_k",
    "split_purity_scores",
]


# ------------------------------------------------------------------ noisy counts
def discrete_laplace(values: np.ndarray, sensitivity: float, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Whole counts plus two-sided geometric noise: ``P(noise = k) ∝ exp(−ε·|k|/Δ)``.

    The noise is the difference of two independent geometric variables with success
    probability ``1 − exp(−ε/Δ)`` (both on {0, 1, ...}; NumPy's start at 1, which cancels
    in the difference). For counts whose L1 sensitivity is Δ this is ε-DP, like the
    Laplace mechanism, and its outputs stay integers. ``epsilon = inf`` adds nothing.
    Returns float64 holding whole numbers (arrays over a grid are summed and averaged).
    """
    vals = np.asarray(values, dtype=float)
    if math.isinf(epsilon):
        return vals.copy()
    p = -math.expm1(-epsilon / sensitivity)  # 1 − e^{−ε/Δ}, exact for small ε/Δ
    g1 = rng.geometric(p, size=vals.shape)
    g2 = rng.geometric(p, size=vals.shape)
    return vals + (g1 - g2).astype(float)


def discrete_laplace_variance(sensitivity: float, epsilon: float) -> float:
    """Variance of :func:`discrete_laplace` noise: ``2a/(1 − a)²`` with ``a = exp(−ε/Δ)``."""
    if math.isinf(epsilon):
        return 0.0
    a = math.exp(-epsilon / sensitivity)
    return 2.0 * a / (-math.expm1(-epsilon / sensitivity)) ** 2


# ---------------------------------------------------------- exponential mechanism
def gumbel_top_k(scores: np.ndarray, k: int, epsilon_each: float, sensitivity: float,
                 rng: np.random.Generator) -> np.ndarray:
    """Indices of k items chosen one after the other by the exponential mechanism.

    Each pick is ``epsilon_each``-DP for a utility of sensitivity Δ (probabilities
    ``∝ exp(ε·u/(2Δ))`` over the items left); the k picks cost ``k·epsilon_each``. Adding
    Gumbel noise of scale ``2Δ/ε`` to every score once and taking the k largest gives
    exactly the distribution of those k sequential picks (Durfee & Rogers 2019), in the
    order they were picked. ``epsilon_each = inf`` takes the true top k.
    """
    s = np.asarray(scores, dtype=float)
    k = int(min(k, len(s)))
    if k <= 0:
        return np.zeros(0, np.int64)
    noisy = s.copy() if math.isinf(epsilon_each) else s + rng.gumbel(0.0, 2.0 * sensitivity / epsilon_each, len(s))
    return np.argsort(-noisy, kind="stable")[:k].astype(np.int64)


def _pieces(lo: float, hi: float, k: int, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """``k`` equal pieces of ``[lo, hi]``: their starts and ends (integer: runs of whole numbers
    ``start .. end−1``; fewer pieces when there are fewer whole numbers)."""
    if integer:
        m = int(hi - lo + 1)
        k = max(1, min(k, m))
        starts = lo + (np.arange(k) * m) // k
        ends = np.append(starts[1:], hi + 1)
        return starts.astype(float), ends.astype(float)
    k = k if hi > lo else 1
    starts = lo + (hi - lo) * np.arange(k) / k
    return starts, np.append(starts[1:], hi)


def dp_bin_edges(values: np.ndarray, lo: float, hi: float, n_bins: int, epsilon: float, sensitivity: float,
                 integer: bool, rng: np.random.Generator, *, pieces: int = 16, zoom_levels: int = 2,
                 zoom_share: float = 0.5, threshold: float = 3.0) -> tuple[np.ndarray, tuple[float, float]]:
    """Up to ``n_bins`` bins over ``[lo, hi]`` cut at DP quantiles of ``values``: the inner
    edges (increasing) and the hull of the records, both read from a noisy histogram.

    The bounds are cut into ``pieces`` equal pieces whose counts get discrete Laplace noise
    (the pieces are disjoint: one ε for all). A piece counts as occupied when its noisy count
    reaches ``threshold`` noise scales (an empty piece passes with probability about
    ``e^−threshold/2``), so the empty stretches of wide declared bounds carry no mass. A
    piece holding more than half of the mass is zoomed into: cut into ``pieces`` again and
    counted with fresh noise, down to ``zoom_levels`` times (the zoomed pieces are disjoint:
    one ε per level); this resolves a value most records share, such as the zeros of a word
    frequency. ``zoom_share`` of ``epsilon`` goes to the zooms (split evenly over the
    levels), the rest to the first count; when the first count has no such piece, the
    zooms' budget counts the same pieces again and the two counts are averaged. The edges are the ``k/n_bins`` quantiles of
    the resulting noisy distribution (linear inside a piece), the hull runs from the first
    to the last occupied piece. Everything after the noisy counts is post-processing.
    Values outside the bounds count at the nearest bound.
    """
    x = np.sort(np.clip(np.asarray(values, dtype=float), lo, hi))
    if integer:
        x = np.rint(x)
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
    if n_bins < 2 or hi <= lo:
        return np.zeros(0), (lo, hi)
    levels = max(0, int(zoom_levels))
    if math.isinf(epsilon):
        e_first = e_zoom = epsilon
    else:
        e_first = epsilon * (1.0 - zoom_share) if levels else epsilon
        e_zoom = epsilon * zoom_share / levels if levels else 0.0
    step = 1.0 if integer else 0.0  # integer pieces end one past their last whole number

    def measure(starts: np.ndarray, ends: np.ndarray, eps: float) -> tuple[np.ndarray, float]:
        """Noisy counts of the pieces and the variance of their noise."""
        idx = np.searchsorted(starts, x, side="right") - 1
        last = np.clip(idx, 0, len(ends) - 1)
        inside = (idx >= 0) & ((x < ends[last]) | ((idx == len(ends) - 1) & (x <= ends[-1])))
        counts = np.bincount(idx[inside], minlength=len(starts)).astype(float)
        return discrete_laplace(counts, sensitivity, eps, rng), discrete_laplace_variance(sensitivity, eps)

    def occupied(noisy: np.ndarray, var: float) -> np.ndarray:
        # a Laplace scale is √(var/2): keep the pieces that stand `threshold` scales out of the noise
        return np.where(noisy >= max(1.0, threshold * math.sqrt(var / 2.0)), noisy, 0.0)

    starts, ends = _pieces(lo, hi, pieces, integer)
    raw, var = measure(starts, ends, e_first)
    mass = occupied(raw, var)
    for level in range(levels):
        heavy = [int(j) for j in np.flatnonzero(mass > 0.5 * mass.sum()) if ends[j] - starts[j] > 1.0 + step]
        if not heavy:
            if level == 0:
                # nothing to zoom into: the zooms' budget measures the same pieces again (averaged)
                again, var2 = measure(starts, ends, e_zoom * levels)
                if var > 0 and var2 > 0:
                    raw = (raw / var + again / var2) / (1.0 / var + 1.0 / var2)
                    var = 1.0 / (1.0 / var + 1.0 / var2)
                mass = occupied(raw, var)
            break  # (after a zoom, the levels left go unspent: the accounting still counts them)
        subs = [_pieces(starts[j], ends[j] - step, pieces, integer) for j in heavy]
        # the zoomed pieces hold disjoint records: one ε for the whole level
        sub_raw, sub_var = measure(np.concatenate([a for a, _ in subs]), np.concatenate([b for _, b in subs]),
                                   e_zoom)
        sub_m = occupied(sub_raw, sub_var)
        keep = np.ones(len(starts), dtype=bool)
        keep[heavy] = False
        new_s, new_e, new_m = [starts[keep]], [ends[keep]], [mass[keep]]
        off = 0
        for j, (a, b) in zip(heavy, subs, strict=True):
            part = sub_m[off:off + len(a)]
            off += len(a)
            if part.sum() > 0:  # the piece's first count is the better estimate of its total
                new_s.append(a)
                new_e.append(b)
                new_m.append(part * (mass[j] / part.sum()))
            else:
                new_s.append(starts[[j]])
                new_e.append(ends[[j]])
                new_m.append(mass[[j]])
        cat_s = np.concatenate(new_s)
        order = np.argsort(cat_s, kind="stable")
        starts, ends, mass = cat_s[order], np.concatenate(new_e)[order], np.concatenate(new_m)[order]
    if mass.sum() <= 0:  # nothing stands out of the noise: equal widths over the bounds
        starts, ends = _pieces(lo, hi, pieces, integer)
        mass = np.ones(len(starts))
    occ = np.flatnonzero(mass > 0)
    # one piece of room on each side: a tail too thin to pass the threshold is still drawn from
    width = (ends - starts)[occ]
    hull = (max(lo, float(starts[occ[0]] - width[0])), min(hi, float(ends[occ[-1]] + width[-1]) - step))
    cum = np.concatenate([[0.0], np.cumsum(mass)])
    qs = np.arange(1, n_bins) / n_bins * cum[-1]
    j = np.clip(np.searchsorted(cum, qs, side="left") - 1, 0, len(mass) - 1)
    frac = np.divide(qs - cum[j], mass[j], out=np.zeros_like(qs), where=mass[j] > 0)
    cuts = starts[j] + frac * (ends[j] - starts[j])
    if integer:
        # a cut c puts x ≤ c−1 on the left and x ≥ c on the right: whole numbers in (lo, hi]
        return np.unique(np.clip(np.ceil(cuts), lo + 1, hi)), hull
    return np.unique(cuts[(cuts > lo) & (cuts < hi)]), hull


# ---------------------------------------------------------------- attribute scores
def _purity(counts: np.ndarray) -> np.ndarray:
    """``Σ_c τ_c² / τ`` of every row of class counts (0 for an empty row)."""
    tot = counts.sum(axis=-1)
    sq = (counts.astype(float) ** 2).sum(axis=-1)
    return np.divide(sq, tot, out=np.zeros_like(sq, dtype=float), where=tot > 0)


def split_purity_scores(columns: Sequence[np.ndarray], kinds: Sequence[str], y: np.ndarray, n_classes: int) -> np.ndarray:
    """Gini purity of each attribute's best split of the records by class.

    For the groups j of a split, the score is ``Σ_j Σ_c τ_jc² / τ_j`` (τ_jc records of
    group j and class c): the Gini score of Friedman & Schuster (2010) plus the number of
    records, so higher is purer. One record more in group j and class c changes the group's
    term by ``(τ_j(2τ_jc + 1) − Σ_c' τ_jc'²) / (τ_j(τ_j + 1))``, which is at most 1 (a pure
    group) and more than −1: the score has sensitivity 1 (Friedman & Schuster's Gini, which
    also counts the records, has 2). A categorical attribute (``kind="codes"``: integer
    codes) is split by its values; a numeric one by its best threshold, the maximum over
    thresholds of scores of sensitivity 1, which keeps sensitivity 1. ``y`` holds class
    codes ``0..n_classes−1``.
    """
    y = np.asarray(y, dtype=np.int64)
    out = np.zeros(len(columns))
    onehot = np.eye(n_classes, dtype=np.int64)[y] if len(y) else np.zeros((0, n_classes), np.int64)
    total = onehot.sum(axis=0)
    for j, (col, kind) in enumerate(zip(columns, kinds, strict=True)):
        v = np.asarray(col)
        if len(v) == 0:
            continue
        if kind == "codes":
            k = int(v.max()) + 1
            counts = np.zeros((k, n_classes), np.int64)
            np.add.at(counts, (v.astype(np.int64), y), 1)
            out[j] = float(_purity(counts).sum())
            continue
        order = np.argsort(v, kind="stable")
        vs = v[order]
        cum = np.cumsum(onehot[order], axis=0)
        last = np.r_[vs[1:] != vs[:-1], False]  # split after position i when the next value differs
        left = cum[last]
        right = total - left
        best = float(_purity(total[None, :])[0])  # no split
        if len(left):
            best = max(best, float((_purity(left) + _purity(right)).max()))
        out[j] = best
    return out
