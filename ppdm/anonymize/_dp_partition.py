"""DPCube's partitioning: the kd-tree over the noisy cell histogram (phase 2a) and box sums.

Part of :mod:`ppdm.anonymize.differential_privacy`. Everything here reads a noisy
histogram or the boxes only, so it is post-processing and costs no privacy budget
(Xiao, Xiong & Yuan 2010, §4).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np


# -------------------------------------------------------------------------- kd-tree
def _cut_gain(cum: np.ndarray, total: float, V: int) -> np.ndarray:
    """Squared-error reduction of every cut along one dimension of a box of V cells.

    ``cum[k]`` is the sum of the box's slices ``0..k`` along that dimension. Cutting V
    cells into V1 + V2 with sums S1, S2 reduces the squared error of the cells around
    their mean by ``(S1/V1 − S2/V2)²·V1·V2/V``; for cells carrying independent noise of
    variance σ² the noise alone contributes σ² in expectation to one fixed cut's reduction.
    """
    e = len(cum)
    left = cum[:-1]
    v1 = (V // e) * np.arange(1, e, dtype=float)
    v2 = V - v1
    return (left / v1 - (total - left) / v2) ** 2 * v1 * v2 / V


def _best_cut_gain(sub: np.ndarray) -> tuple[float, int]:
    """Largest squared-error reduction one cut (any dimension, any position) achieves on
    the cells of ``sub``, and the number of possible cuts (direct sums; the kd-tree reads
    the same numbers from summed-area tables)."""
    total = float(sub.sum())
    best, m = 0.0, 0
    for j in range(sub.ndim):
        if sub.shape[j] < 2:
            continue
        other = tuple(i for i in range(sub.ndim) if i != j)
        marg = sub.sum(axis=other) if other else sub
        best = max(best, float(_cut_gain(np.cumsum(marg), total, sub.size).max()))
        m += sub.shape[j] - 1
    return best, m


class _SummedArea:
    """Sums over boxes of a d-dimensional array in 2^d look-ups, whatever the box's size.

    ``P[i1, …, id]`` (padded with a zero slice in front of every axis) is the sum of
    ``a[:i1, …, :id]``; a box's sum is the inclusion–exclusion over its 2^d corners. The
    kd-tree asks for every box's cumulative marginal along each dimension, which direct
    sums would pay with a pass over all the box's cells per dimension.
    """

    def __init__(self, a: np.ndarray) -> None:
        d = a.ndim
        P = np.zeros(tuple(s + 1 for s in a.shape))
        P[tuple(slice(1, None) for _ in range(d))] = a
        for ax in range(d):
            np.cumsum(P, axis=ax, out=P)
        self.P = P
        self.corners = np.array(list(itertools.product((0, 1), repeat=d)), dtype=bool).reshape(-1, d)
        self.signs = np.where((d - self.corners.sum(axis=1)) % 2 == 0, 1.0, -1.0)

    def cumulatives(self, box: np.ndarray, dims: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """For every dimension j in ``dims``, the sums of the box restricted along j to cells
        ``lo_j..k`` for k = lo_j..hi_j, concatenated (one indexing call for all of them),
        and the dimension each value belongs to."""
        d = box.shape[0]
        lo, hi = box[:, 0], box[:, 1] + 1
        base = np.where(self.corners, hi, lo)  # (2^d, d): each corner's index
        ks = np.concatenate([np.arange(lo[j] + 1, hi[j] + 1) for j in dims])
        owner = np.concatenate([np.full(hi[j] - lo[j], j) for j in dims])
        full = np.repeat(base[:, None, :], len(ks), axis=1)  # (2^d, K, d)
        rows, cols = np.nonzero(self.corners[:, owner])  # corners at the high end of the cut dimension
        full[rows, cols, owner[cols]] = ks[cols]
        vals = self.P[tuple(full[..., i] for i in range(d))]
        return self.signs @ vals, owner


class _DirectSums:
    """The same cumulative marginals as :class:`_SummedArea`, summed from the box's cells.

    A summed-area look-up costs 2^d corners: past a handful of dimensions a pass over the
    box's cells is cheaper (a kd-tree's boxes shrink as it descends, so the passes over one
    level of the tree add up to the grid's size)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def cumulatives(self, box: np.ndarray, dims: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        sub = self.a[tuple(slice(int(lo), int(hi) + 1) for lo, hi in box)]
        d = sub.ndim
        cums = [np.cumsum(sub.sum(axis=tuple(i for i in range(d) if i != j))) for j in dims]
        owner = np.concatenate([np.full(len(c), j) for j, c in zip(dims, cums, strict=True)])
        return np.concatenate(cums), owner


#: above this many dimensions the kd-tree sums boxes directly instead of through 2^d corners
_SAT_MAX_DIMS = 6


def _cut_gains(cums: np.ndarray, owner: np.ndarray, ext: np.ndarray) -> np.ndarray:
    """:func:`_cut_gain` for every cut of a box at once, from :meth:`_SummedArea.cumulatives`."""
    V = int(np.prod(ext))
    last = np.r_[owner[1:] != owner[:-1], True]  # the last value of a dimension is the box's total
    total = float(cums[-1])
    pos = np.arange(len(owner)) - np.searchsorted(owner, owner, side="left") + 1  # cells 1..e_j-1 on the left
    e = ext[owner]
    v1 = (V // e) * pos.astype(float)
    left, v1 = cums[~last], v1[~last]
    v2 = V - v1
    return (left / v1 - (total - left) / v2) ** 2 * v1 * v2 / V


def kd_partition(
    noisy: np.ndarray,
    *,
    noise_var: float,
    min_count: float = 0.0,
    split_threshold: float = 4.0,
    max_depth: int | None = None,
    split: Literal["median", "midpoint"] = "median",
    first_dims: Sequence[int] = (),
) -> np.ndarray:
    """Partition a (noisy) cell histogram into disjoint boxes with a kd-tree (phase 2a).

    Reads ``noisy`` only, so building the tree on a DP histogram costs no budget
    (post-processing). A box stops splitting when every extent is 1, when its noisy sum
    is ≤ ``min_count``, at depth ``max_depth``, or when it looks uniform: no single cut
    would reduce the squared error of its cells by more than
    ``(split_threshold + 2·ln m)·noise_var`` (m possible cuts; noise alone explains about
    ``noise_var`` per cut, and about ``2·ln m`` of it for the best of m cuts). Otherwise the
    dimension with the largest extent (ties: lowest index) is cut at the weighted median
    of the box's noisy marginal clipped at zero (``split="median"``; the midpoint when that
    marginal is all zero) or at the midpoint (``split="midpoint"``); both halves stay
    non-empty. Dimensions listed in ``first_dims`` are split before any other while their
    extent exceeds 1 (``DPCube(split_dimension="class-first")`` puts the class there).

    Returns an ``int64`` array of shape ``(P, d, 2)``: inclusive low/high cell index of
    every box per dimension, in depth-first order (left before right).
    """
    noisy = np.asarray(noisy, dtype=float)
    shape = noisy.shape
    d = noisy.ndim
    root = np.stack([np.zeros(d, np.int64), np.asarray(shape, np.int64) - 1], axis=1)
    if d == 0:
        return root[None]
    table = _SummedArea if d <= _SAT_MAX_DIMS else _DirectSums
    sums = table(noisy)
    clipped = table(np.clip(noisy, 0.0, None)) if split == "median" else None
    out: list[np.ndarray] = []
    stack: list[tuple[np.ndarray, int]] = [(root, 0)]
    while stack:
        box, depth = stack.pop()
        ext = box[:, 1] - box[:, 0] + 1
        if np.all(ext == 1) or (max_depth is not None and depth >= max_depth):
            out.append(box)
            continue
        dims = [j for j in range(d) if ext[j] > 1]
        cums, owner = sums.cumulatives(box, dims)
        if cums[-1] <= min_count:  # the box's noisy sum
            out.append(box)
            continue
        gain = float(_cut_gains(cums, owner, ext).max())
        n_cuts = int(sum(ext[j] - 1 for j in dims))
        if gain <= (split_threshold + 2.0 * math.log(n_cuts)) * noise_var:
            out.append(box)
            continue
        early = [i for i in first_dims if ext[i] > 1]
        # argmax takes the first maximum: ties go to the lowest index
        dim = int(early[0]) if early else int(np.argmax(ext))
        n_ext = int(ext[dim])
        s = n_ext // 2 - 1
        if clipped is not None:
            cum = clipped.cumulatives(box, [dim])[0]
            if cum[-1] > 0:
                s = int(np.searchsorted(cum, cum[-1] / 2.0, side="left"))
        s = min(max(s, 0), n_ext - 2)  # left keeps cells 0..s of the box, right the rest
        left, right = box.copy(), box.copy()
        left[dim, 1] = box[dim, 0] + s
        right[dim, 0] = box[dim, 0] + s + 1
        stack.append((right, depth + 1))
        stack.append((left, depth + 1))
    return np.stack(out)


def _all_cells(shape: tuple[int, ...]) -> np.ndarray:
    """One box per cell, in C order (the cell-based baseline); int32 keeps large grids small."""
    if not shape:  # every dimension has one cell: the grid is one box
        return np.zeros((1, 0, 2), dtype=np.int32)
    idx = np.indices(shape, dtype=np.int32).reshape(len(shape), -1).T
    return np.repeat(idx[:, :, None], 2, axis=2)


def box_sums(hist: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Sum of ``hist`` over every box (``(P, d, 2)`` inclusive cell ranges)."""
    if hist.ndim == 0:
        return np.full(len(boxes), float(hist))
    if boxes.size and np.all(boxes[:, :, 0] == boxes[:, :, 1]):  # one cell per box
        return hist[tuple(boxes[:, :, 0].T)].astype(float)
    return np.array([hist[tuple(slice(int(a), int(b) + 1) for a, b in box)].sum() for box in boxes], dtype=float)


def box_volumes(boxes: np.ndarray) -> np.ndarray:
    """Number of cells in every box."""
    if not boxes.shape[1]:
        return np.ones(len(boxes), np.int64)
    return np.prod((boxes[:, :, 1] - boxes[:, :, 0] + 1).astype(np.int64), axis=1)

