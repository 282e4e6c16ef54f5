"""Differentially private synthetic data by multidimensional partitioning (DPCube).

Paper 000 §7.2/§8.4 anonymizes the Banknotes dataset with the technique of Xiao, Xiong
& Yuan (2010, "Differentially private data release through multidimensional
partitioning", LNCS 6358, reference [4] of paper 000; journal version: Xiao, Xiong, Fan,
Goryczka & Li, "DPCube", Transactions on Data Privacy 7, 2014): the domain is
partitioned into disjoint sub-domains, the number of records in each is released
through a noisy count query, and new records are generated inside each sub-domain.

:class:`DPCube` follows the two-phase kd-tree form of that technique, over a grid whose
attributes, bins and bin edges are themselves chosen under differential privacy. For a
table of n records and a budget ε, under add/remove-one neighbours (the default):

0. **Table size.** ``n0 = n + DLap(1/ε0)`` (discrete Laplace, i.e. two-sided geometric
   noise). It sizes the grid and, with the partition counts, gives the number of
   released records. Under replace-one neighbours n is public: no phase 0.
S. **Attribute selection** (only when the grid cannot hold every attribute). Each
   attribute's best split of the records by class is scored (Gini purity, sensitivity 1)
   and the exponential mechanism picks, one after the other, the attributes that get
   bins; the others are released uniformly over their declared domain.
Q. **Bin edges.** The bins of a numeric attribute are cut at quantiles of a noisy
   histogram of its values inside the declared bounds, which zooms into pieces that hold
   most records; values are drawn inside the noisy hull of the records.
1. **Cell histogram.** Every cell of the grid (selected attributes × class), empty cells
   included, gets discrete Laplace noise ``DLap(Δ/ε1)``.
2. **kd-tree on the noisy grid** (reads the noisy histogram only: post-processing), then
   **noisy partition counts**: each final box's true count gets ``DLap(Δ/ε2)``.
3. **Synthetic records** drawn inside the partitions, in cells chosen in proportion to
   their phase-1 noisy counts (post-processing). The rows are shuffled.

The phases are chosen one after the other from earlier noisy outputs (adaptive
sequential composition), each phase over disjoint cells, boxes or records (parallel
composition), so the release is (ε0 + εS + εQ + ε1 + ε2) = ε-differentially private.

**Everything released comes from the declared domain or from noise.** Types (numeric,
whole, categorical), bounds and category sets are read from the declaration — the
schema given to the technique, or ``bounds=``/``domains=`` — never from the column
dtypes or the records. A table whose domain is not declared is refused, naming the
columns, unless ``domain_from_data=True`` (then the report says, in words, that the
release is not differentially private). A value outside the declared domain never
aborts the run: numbers are clamped to the bounds (whole numbers rounded), a category
outside the declared set goes to the "other" cell (``unknown="other"``) or its record is
dropped (``unknown="drop"``, the default), and a missing cell in a column not declared
``nullable`` drops its record. Dropping records one by one is part of the mechanism: one
record more or less in x changes the kept table by at most that record, so the guarantee
holds for x. How many records were dropped is the owner's secret (``private_report_``).

``docs/differential_privacy.md`` gives the accounting, the assumptions, what is public
and private, and the audits.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeGuard

import numpy as np
import pandas as pd

from ppdm.anonymize._dp_mechanisms import (
    discrete_laplace,
    discrete_laplace_variance,
    dp_bin_edges,
    gumbel_top_k,
    split_purity_scores,
)
from ppdm.anonymize.base import Technique
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.data.types import is_iso_date, parse_iso_date
from ppdm.errors import ParameterError, SchemaError

__all__ = [
    "CoarseGridWarning",
    "DPCube",
    "DomainFromDataWarning",
    "Grid",
    "GridDim",
    "PrivacyStep",
    "allocate_counts",
    "auto_bins",
    "box_sums",
    "box_volumes",
    "count_cells",
    "discrete_laplace",
    "kd_partition",
    "measurements_path",
    "noisy_histogram",
    "noisy_partition_counts",
    "noisy_table_size",
    "select_attributes",
]


#: the grid value of a missing cell of a categorical attribute declared ``nullable``
MISSING = "\x00missing"
#: the grid value of a category outside the declared set (``unknown="other"``)
OTHER = "\x00other"
#: suffix of the dimension that says whether a numeric attribute declared ``nullable`` is missing
_GAP = "\x00is_missing"
#: the public sidecar with the noisy measurements of a release: ``<stem>.dpcube.json``
MEASUREMENTS_SUFFIX = ".dpcube.json"
#: the noisy histogram is written to the sidecar up to this many cells
MAX_WRITTEN_CELLS = 1_000_000


class DomainFromDataWarning(UserWarning):
    """Bounds, types or value sets were read from the private table, so the release is not ε-DP."""


class CoarseGridWarning(UserWarning):
    """Some attributes get a single cell of the grid (released uniformly over their domain)."""


# ---------------------------------------------------------------- privacy accounting
@dataclass(frozen=True)
class PrivacyStep:
    """One use of the privacy budget.

    ``composition`` says why the step costs ``epsilon`` once although it answers many
    queries (disjoint cells, boxes or records: parallel composition; k picks: sequential).
    """

    name: str
    epsilon: float
    mechanism: str
    sensitivity: float
    noise_scale: float
    composition: str


# The phases as module functions, so each one's noise is visible in one place (the
# audits in tests/test_dpcube_audit.py replace them one at a time to check that a
# weakened phase is caught).
def noisy_table_size(n: int, epsilon: float, rng: np.random.Generator) -> float:
    """Phase 0: ``n + DLap(1/ε0)`` (a count of sensitivity 1 under add/remove-one neighbours)."""
    return float(discrete_laplace(np.array([float(n)]), 1.0, epsilon, rng)[0])


def select_attributes(scores: np.ndarray, k: int, epsilon_each: float, sensitivity: float,
                      rng: np.random.Generator) -> np.ndarray:
    """Phase S: the k attributes picked one after the other by the exponential mechanism,
    each pick ``epsilon_each``-DP for scores of the given sensitivity."""
    return gumbel_top_k(scores, k, epsilon_each, sensitivity, rng)


def noisy_histogram(hist: np.ndarray, sensitivity: float, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Phase 1: every cell count plus ``DLap(Δ/ε1)`` (disjoint cells: parallel composition)."""
    return discrete_laplace(hist, sensitivity, epsilon, rng)


def noisy_partition_counts(counts: np.ndarray, sensitivity: float, epsilon: float,
                           rng: np.random.Generator) -> np.ndarray:
    """Phase 2b: every partition's count plus ``DLap(Δ/ε2)`` (disjoint boxes: parallel composition)."""
    return discrete_laplace(counts, sensitivity, epsilon, rng)


# ------------------------------------------------------------------------------ grid
@dataclass
class GridDim:
    """One dimension of the cell grid.

    ``kind`` is ``numeric`` (bins ``[edges[k], edges[k+1])``, the last closed),
    ``integer`` (bins are runs of whole numbers ``int_lo[k]..int_hi[k]``) or
    ``categorical`` (one cell per value of ``values``, in declared order, or, when
    ``merged``, one cell for all of them: the attribute is released uniformly).
    Categorical columns reach the grid as integer codes into ``values``.
    """

    name: str
    kind: Literal["numeric", "integer", "categorical"]
    n_bins: int
    edges: np.ndarray | None = None
    int_lo: np.ndarray | None = None
    int_hi: np.ndarray | None = None
    values: list | None = None
    merged: bool = False
    #: where values are drawn (numeric: the DP hull of the records inside the bounds); the
    #: first and last bins count everything down to / up to the bounds but draw inside it
    support: tuple[float, float] | None = None

    def index(self, col: pd.Series) -> np.ndarray:
        """Cell index of every (encoded, in-domain) value."""
        if self.kind == "categorical":
            codes = col.to_numpy(dtype=np.int64)
            return np.zeros(len(codes), np.int64) if self.merged else codes
        v = col.to_numpy(dtype=float)
        ref = self.edges if self.kind == "numeric" else self.int_lo
        assert ref is not None
        idx = np.searchsorted(ref, v, side="right") - 1
        return np.clip(idx, 0, self.n_bins - 1).astype(np.int64)

    def sample(self, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One value per record, uniform over the cells ``lo..hi`` (inclusive) of this
        dimension (categorical: codes into ``values``)."""
        u = rng.random(len(lo))
        if self.kind == "numeric":
            assert self.edges is not None
            a, b = self.edges[lo], self.edges[hi + 1]
            if self.support is not None:
                a, b = _within(a, b, self.support)
            v = a + (b - a) * u
            # bins are half-open except the last: keep a draw off the upper edge of an inner bin
            inner = hi + 1 < self.n_bins
            v[inner] = np.minimum(v[inner], np.nextafter(b[inner], -np.inf))
            return np.maximum(v, a)
        if self.kind == "integer":
            assert self.int_lo is not None and self.int_hi is not None
            a, b = self.int_lo[lo], self.int_hi[hi]
            if self.support is not None:
                a, b = _within(a, b, self.support)
            return np.minimum(a + np.floor(u * (b - a + 1)).astype(np.int64), b)
        assert self.values is not None
        if self.merged:
            # uniform over the declared values (the "missing"/"other" cells carry no declared value)
            real = np.array([i for i, v in enumerate(self.values) if v not in (MISSING, OTHER)], dtype=np.int64)
            return real[np.minimum((u * len(real)).astype(np.int64), len(real) - 1)]
        return np.minimum(lo + np.floor(u * (hi - lo + 1)).astype(np.int64), hi)

    def describe(self) -> dict[str, Any]:
        """The dimension as JSON-able data (for the measurements sidecar)."""
        out: dict[str, Any] = {"column": self.name, "kind": self.kind, "cells": self.n_bins}
        if self.kind == "numeric":
            out["edges"] = [float(e) for e in np.asarray(self.edges)]
        elif self.kind == "integer":
            out["runs"] = [[int(a), int(b)] for a, b in zip(self.int_lo, self.int_hi, strict=True)]  # type: ignore[arg-type]  # an integer axis has its runs set
        else:
            out["values"] = [_value_label(v) for v in self.values or []]
            out["merged"] = self.merged
        return out


def _within(a: np.ndarray, b: np.ndarray, support: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The intervals ``[a, b]`` narrowed to ``support`` where they overlap it (else kept)."""
    na, nb = np.maximum(a, support[0]), np.minimum(b, support[1])
    ok = na <= nb
    return np.where(ok, na, a).astype(a.dtype), np.where(ok, nb, b).astype(b.dtype)


def count_cells(shape: Sequence[int]) -> int:
    """Number of cells of a grid, exactly (Python integers never overflow)."""
    return math.prod(int(s) for s in shape)


def _fmt_count(n: int) -> str:
    """A cell count for a message: exact below 10⁹, else ≈ mantissa·10^exponent (from log10, no float overflow)."""
    if n < 10**9:
        return str(n)
    lg = math.log10(n)
    e = math.floor(lg)
    return f"≈{10 ** (lg - e):.1f}e{e}"


@dataclass
class Grid:
    """The cell grid over (attributes × class): one :class:`GridDim` per column.

    Arrays over the grid (histograms, partition maps) leave out the dimensions with a
    single cell, which add nothing: a table of many attributes with one cell each keeps
    small arrays (NumPy allows at most 64 dimensions).
    """

    dims: list[GridDim]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.n_bins for d in self.dims)

    @property
    def active(self) -> list[int]:
        """Positions of the dimensions with more than one cell."""
        return [j for j, d in enumerate(self.dims) if d.n_bins > 1]

    @property
    def array_shape(self) -> tuple[int, ...]:
        """Shape of arrays over the grid: :attr:`shape` without its one-cell dimensions."""
        return tuple(self.dims[j].n_bins for j in self.active)

    @property
    def n_cells(self) -> int:
        return count_cells(self.shape)

    @property
    def columns(self) -> list[str]:
        return [d.name for d in self.dims]

    def cell_indices(self, enc: pd.DataFrame, *, active_only: bool = False) -> np.ndarray:
        """``(n, d)`` cell index of every encoded record (``active_only``: of the dimensions
        with more than one cell)."""
        dims = [self.dims[j] for j in self.active] if active_only else self.dims
        if not dims:
            return np.zeros((len(enc), 0), dtype=np.int64)
        return np.stack([d.index(enc[d.name]) for d in dims], axis=1)

    def histogram(self, enc: pd.DataFrame) -> np.ndarray:
        """True cell counts of the encoded records, shape :attr:`array_shape`."""
        idx = self.cell_indices(enc, active_only=True)
        shape = self.array_shape
        flat = np.ravel_multi_index(tuple(idx.T), shape) if shape else np.zeros(len(enc), np.int64)
        return np.bincount(flat, minlength=self.n_cells).reshape(shape).astype(float)

    def expand(self, boxes: np.ndarray) -> np.ndarray:
        """Boxes over :attr:`array_shape` as boxes over every dimension (one-cell ones: ``[0, 0]``)."""
        full = np.zeros((len(boxes), len(self.dims), 2), dtype=boxes.dtype)  # int32 for one box per cell
        full[:, self.active, :] = boxes
        return full


# ---------------------------------------------------------------------------- domain
@dataclass
class _Domain:
    """The domain of every column the grid covers, and where each part came from."""

    bounds: dict[str, tuple[float, float]]
    values: dict[str, list]
    integer: set[str]
    nullable: set[str]
    from_data: list[str] = field(default_factory=list)

    def capacity(self, col: str) -> int | None:
        """Most bins a numeric attribute can take (whole numbers in its bounds; 1 if its
        bounds are a single point); ``None`` when unlimited."""
        lo, hi = self.bounds[col]
        if col in self.integer:
            return max(1, math.floor(hi) - math.ceil(lo) + 1)
        return None if hi > lo else 1


def _value_label(v: Any) -> Any:
    """A grid value for JSON and messages: the sentinels by name, NumPy scalars as Python ones."""
    if v is MISSING or v == MISSING:
        return "(missing)"
    if v is OTHER or v == OTHER:
        return "(other)"
    return v.item() if isinstance(v, np.generic) else v


def _kind_key(v: Any) -> tuple[str, Any]:
    return (type(v).__name__, v)


def _declare_hint(numeric: list[str], categorical: list[str]) -> str:
    parts = []
    if numeric:
        parts.append(f"bounds of {_names(numeric)}")
    if categorical:
        parts.append(f"categories of {_names(categorical)}")
    return " and ".join(parts)


# ------------------------------------------------------------------------- grid size
def auto_bins(n_hat: float, epsilon: float, sensitivity: float, caps: Sequence[int | None],
              fixed_cells: int, grid_density: float, max_cells: int) -> list[int]:
    """Bins per numeric attribute so the grid holds about ``n_hat·ε/(Δ·grid_density)`` cells.

    A cell then holds ``grid_density·Δ/ε`` records on average, a fixed multiple of the
    phase-1 noise scale: the finer the grid, the more noise its partitions add up, so the
    grid grows with n and ε and not with the number of attributes (after Qardaji, Yang &
    Li, ICDE 2013, who size a uniform grid to N·ε/c cells). ``fixed_cells`` is the product
    of the categorical and class domain sizes. Every attribute gets the same number of
    bins L, or L+1 for the first ones in the order given, never more than its ``caps``
    entry (whole numbers in an integer attribute's bounds); at least one bin each.
    ``epsilon = inf`` (noise off) sizes the grid to about one cell per record.
    """
    k = len(caps)
    if k == 0:
        return []
    budget = _grid_target(n_hat, epsilon, sensitivity, grid_density, max_cells) / max(1, fixed_cells)
    return _bins_within(budget, caps)


def _grid_target(n_hat: float, epsilon: float, sensitivity: float, grid_density: float, max_cells: int) -> float:
    """About ``n_hat·ε/(Δ·grid_density)`` cells (one per record with the noise off), at most ``max_cells``."""
    share = 1.0 if math.isinf(epsilon) else epsilon / (sensitivity * grid_density)
    return max(1.0, min(float(max_cells), max(1.0, n_hat) * share))


def _bins_within(budget: float, caps: Sequence[int | None]) -> list[int]:
    """Equal bins (L, or L+1 for the first attributes) whose product stays within ``budget``."""
    cap = [c if c is not None else 10**12 for c in caps]
    if not cap:
        return []

    def cells(level: int) -> int:
        return math.prod(min(c, level) for c in cap)

    lo, hi = 1, max(1, min(max(cap), int(budget) + 1))
    while lo < hi:  # largest level whose grid fits the budget
        mid = (lo + hi + 1) // 2
        if cells(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    bins = [min(c, lo) for c in cap]
    prod = math.prod(bins)
    for j in range(len(cap)):  # one more bin for the first attributes while the grid still fits
        if bins[j] < cap[j] and prod // bins[j] * (bins[j] + 1) <= budget:
            prod = prod // bins[j] * (bins[j] + 1)
            bins[j] += 1
    return [max(1, b) for b in bins]


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


def allocate_counts(noisy_counts: np.ndarray, n: int, volumes: np.ndarray | None = None) -> np.ndarray:
    """Whole record counts summing to exactly ``n`` from noisy counts.

    Negative counts are clipped to zero (a count cannot be negative), the rest rescaled
    to total ``n``, then rounded by largest remainder (ties: lower index first). If every
    clipped count is zero, records are spread in proportion to ``volumes`` (the number
    of cells of each partition: the uniform distribution over the domain), or evenly.
    All of this is post-processing of the noisy counts and costs no privacy budget.
    """
    c = np.clip(np.asarray(noisy_counts, dtype=float), 0.0, None)
    if n < 0:
        raise ParameterError(f"cannot allocate a negative number of records ({n})")
    if len(c) == 0:
        if n:
            raise ParameterError("cannot allocate records to zero partitions")
        return np.zeros(0, np.int64)
    if not np.isfinite(c).all():
        raise ParameterError("noisy counts must be finite")
    if c.sum() <= 0:
        c = np.ones(len(c)) if volumes is None else np.asarray(volumes, dtype=float)
    q = c / c.sum() * n
    base = np.floor(q).astype(np.int64)
    short = int(n - base.sum())
    if short > 0:
        order = np.argsort(-(q - base), kind="stable")
        base[order[:short]] += 1
    return base


def measurements_path(release: str | Path) -> Path:
    """The public sidecar of a DPCube release: ``z.csv`` → ``z.dpcube.json``."""
    from ppdm.data.provenance import provenance_path

    p = provenance_path(release)
    return p.with_name(p.name[: -len(".provenance.json")] + MEASUREMENTS_SUFFIX)


# ------------------------------------------------------------------------ technique
def _child_rng(rng: np.random.Generator, k: int) -> np.random.Generator:
    """Independent stream number ``k`` of ``rng`` (fit draws noise from 0, transform samples from 1)."""
    try:
        return rng.spawn(2)[k]
    except (TypeError, ValueError, AttributeError):  # a generator without a seed sequence
        return rng


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))


def _is_whole(v: Any) -> TypeGuard[int | np.integer]:
    return not isinstance(v, bool) and isinstance(v, (int, np.integer))


_RELATION = {
    "add-remove": "neighbouring tables that differ by adding or removing one record",
    "replace": "neighbouring tables of the same, public size that differ in one record",
}


@register("dpcube")
class DPCube(Technique):
    """Differentially private synthetic data by multidimensional partitioning (Xiao, Xiong & Yuan 2010).

    Paper 000 §7.2/§8.4 releases a DP version of Banknotes with this technique and
    sweeps the privacy budget ε from 1.0 down to 0.001. See the module docstring for
    the algorithm and ``docs/differential_privacy.md`` for the privacy accounting, the
    guarantee and its assumptions.

    Parameters
    ----------
    epsilon:
        Total privacy budget ε > 0 (``inf`` switches the noise off: not private).
    alpha:
        Fraction of the budget left for the two count phases spent on the phase-1 cell
        histogram that shapes the partition; the final partition counts get the rest.
        Strictly in (0, 1).
    partitioning:
        ``"kd"`` (two-phase kd-tree) or ``"cell"`` (the cell-based baseline).
    bins:
        ``"auto"`` (default): the grid holds about ``n0·ε/(Δ·grid_density)`` cells; when
        every attribute fits with ``min_bins`` bins they all share them, otherwise the
        attributes are chosen under DP (``selection``). A whole number ≥ 1: that many
        bins for every numeric attribute (no selection).
    grid_density:
        With ``bins="auto"``, about ``grid_density·Δ/ε`` records per cell on average. Default 2.
    min_bins:
        With ``bins="auto"``, the fewest bins a selected numeric attribute gets. Default 3.
    selection:
        ``"auto"``: when the grid cannot hold every attribute with ``min_bins`` bins (and
        the table has a class), the attributes that get bins are chosen by the exponential
        mechanism on how well each separates the classes; ``"off"``: every attribute
        shares the grid in table order (the first ones get one more bin).
    edges:
        ``"quantile"`` (default): bins of numeric attributes are cut at DP quantiles of
        their values inside the declared bounds; ``"equal"``: equal-width bins over the
        declared bounds (no budget spent on them).
    max_depth, min_count, split_threshold, split, split_dimension:
        The kd-tree (see :func:`kd_partition`); ``min_count=None`` means two noise scales
        ``2·Δ/ε1``; ``split_dimension`` ``"widest"`` (Xiao et al.) or ``"class-first"``
        (ppdm's extension beyond the paper).
    placement:
        ``"cells"`` (default; a cell chosen in proportion to the partition's phase-1 noisy
        cells clipped at zero, then uniformly inside it) or ``"uniform"`` (uniformly over
        the partition, the paper's uniformity assumption).
    combine:
        Replace each partition's noisy count by the inverse-variance average of it and
        the sum of its phase-1 noisy cells (free post-processing; off by default).
    neighbouring:
        ``"add-remove"`` (default; Δ = 1; the table size is private, so the number of
        released records is a noisy count) or ``"replace"`` (Δ = 2, bounded DP: the table
        size n is public and the release has exactly n records).
    size_share, selection_share, quantile_share:
        Shares of ε spent on the noisy table size (add/remove only), of what is left on
        the attribute selection (when it runs) and on the DP bin edges (when some
        attribute needs them). Defaults 0.05, 0.15, 0.2.
    bounds:
        Public ``{column: (low, high)}`` of numeric attributes; overrides the schema's
        ``bounds``.
    domains:
        Public ``{column: [values...]}`` of categorical attributes and the class, in the
        order that makes their cells; overrides the schema's ``categories``.
    nullable:
        Columns declared to have missing cells: missing is then a value of their domain
        (categorical: one more cell; numeric: a second dimension, missing or not). A
        missing cell in any other column drops its record.
    unknown:
        What becomes of a category outside the declared set: ``"drop"`` (default; the
        record is left out) or ``"other"`` (it goes to one more cell per attribute,
        released as ``other_label``).
    other_label:
        The released value of the "other" cell (default ``"other"``).
    domain_from_data:
        Read what is not declared (types, bounds, categories, which columns have missing
        cells) from the data and release anyway; the report then says the release is not
        differentially private. Default False: an undeclared domain is refused.
    max_cells:
        Refuse grids with more cells than this.

    Attributes (after ``fit``)
    --------------------------
    grid_, bins_, selected_, histogram_noisy_, partitions_, noisy_counts_, n_noisy_,
    n_rows_, privacy_report_ (a JSON-able dict), epsilon_spent_: outputs of the mechanism,
    covered by the guarantee. ``partition_counts_`` (true counts) and ``private_report_``
    (exact record counts, drops and clamps) are the owner's secret: never publish them.
    """

    handles_missing = True
    handles_missing_class = True
    missing_policy = "modelled"
    #: the privacy budget ε (capped by a policy's ε line) and its split between the two phases
    search_space = SearchSpace({"epsilon": Real(0.01, 10.0, log=True), "alpha": Real(0.1, 0.9),
                                "partitioning": Choice(("kd", "cell"))}, epsilon="epsilon")
    #: a smaller budget: noisier counts, fewer cells copied from x
    strength_param = ("epsilon", "decreasing", None)
    #: types and domains come from the declaration, never from x (read by release())
    declared_domain_only = True
    # a value outside the public bounds goes to the edge bin (DP's clipping convention), and one
    # outside the declared categories to the 'other' cell or out of the table: never refused
    clips_to_declared_bounds = True

    def __init__(
        self,
        epsilon: float = 1.0,
        alpha: float = 0.5,
        partitioning: str = "kd",
        bins: int | str = "auto",
        grid_density: float = 2.0,
        min_bins: int = 3,
        selection: str = "auto",
        edges: str = "quantile",
        max_depth: int | None = None,
        min_count: float | None = None,
        split_threshold: float = 4.0,
        split: str = "median",
        split_dimension: str = "widest",
        placement: str = "cells",
        combine: bool = False,
        neighbouring: str = "add-remove",
        size_share: float = 0.05,
        selection_share: float = 0.15,
        quantile_share: float = 0.2,
        bounds: dict | None = None,
        domains: dict | None = None,
        nullable: Sequence[str] | None = None,
        unknown: str = "drop",
        other_label: Any = "other",
        domain_from_data: bool = False,
        max_cells: int = 10**7,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.alpha = alpha
        self.partitioning = partitioning
        self.bins = bins
        self.grid_density = grid_density
        self.min_bins = min_bins
        self.selection = selection
        self.edges = edges
        self.max_depth = max_depth
        self.min_count = min_count
        self.split_threshold = split_threshold
        self.split = split
        self.split_dimension = split_dimension
        self.placement = placement
        self.combine = combine
        self.neighbouring = neighbouring
        self.size_share = size_share
        self.selection_share = selection_share
        self.quantile_share = quantile_share
        self.bounds = bounds
        self.domains = domains
        self.nullable = nullable
        self.unknown = unknown
        self.other_label = other_label
        self.domain_from_data = domain_from_data
        self.max_cells = max_cells
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state

    # ---------------------------------------------------------------- parameters
    def _validate_params(self) -> None:
        eps = self.epsilon
        if not _is_number(eps) or math.isnan(eps) or eps <= 0:
            raise ParameterError(f"epsilon must be a positive number (inf switches noise off), got {eps!r}")
        for name in ("alpha", "size_share", "selection_share", "quantile_share"):
            v = getattr(self, name)
            if not _is_number(v) or not 0.0 < v < 1.0:
                raise ParameterError(f"{name} (a share of the privacy budget) must lie in (0, 1), got {v!r}")
        if self.selection_share + self.quantile_share >= 1.0:
            raise ParameterError("selection_share + quantile_share must stay below 1 (the counts need budget too)")
        if self.partitioning not in ("kd", "cell"):
            raise ParameterError(f"partitioning must be 'kd' or 'cell', got {self.partitioning!r}")
        if not (self.bins == "auto" or (_is_whole(self.bins) and self.bins >= 1)):
            raise ParameterError(f"bins must be 'auto' or a whole number ≥ 1, got {self.bins!r}")
        if not _is_whole(self.min_bins) or self.min_bins < 2:
            raise ParameterError(f"min_bins must be a whole number ≥ 2, got {self.min_bins!r}")
        gd = self.grid_density
        if not _is_number(gd) or not math.isfinite(gd) or gd <= 0:
            raise ParameterError(f"grid_density must be a finite number > 0, got {gd!r}")
        if self.selection not in ("auto", "off"):
            raise ParameterError(f"selection must be 'auto' or 'off', got {self.selection!r}")
        if self.edges not in ("quantile", "equal"):
            raise ParameterError(f"edges must be 'quantile' or 'equal', got {self.edges!r}")
        md = self.max_depth
        if md is not None and (not _is_whole(md) or md < 0):
            raise ParameterError(f"max_depth must be None or a whole number ≥ 0, got {md!r}")
        mc = self.min_count
        if mc is not None and (not _is_number(mc) or not np.isfinite(mc) or mc < 0):
            raise ParameterError(f"min_count must be None or a finite number ≥ 0, got {mc!r}")
        st = self.split_threshold
        if not _is_number(st) or not np.isfinite(st) or st < 0:
            raise ParameterError(f"split_threshold must be a finite number ≥ 0, got {st!r}")
        if self.split not in ("median", "midpoint"):
            raise ParameterError(f"split must be 'median' or 'midpoint', got {self.split!r}")
        if self.split_dimension not in ("widest", "class-first"):
            raise ParameterError(f"split_dimension must be 'widest' or 'class-first', got {self.split_dimension!r}")
        if self.placement not in ("cells", "uniform"):
            raise ParameterError(f"placement must be 'cells' or 'uniform', got {self.placement!r}")
        for name in ("combine", "domain_from_data"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ParameterError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.neighbouring not in ("add-remove", "replace"):
            raise ParameterError(f"neighbouring must be 'add-remove' or 'replace', got {self.neighbouring!r}")
        if self.unknown not in ("drop", "other"):
            raise ParameterError(f"unknown must be 'drop' or 'other', got {self.unknown!r}")
        if not _is_whole(self.max_cells) or self.max_cells < 1:
            raise ParameterError(f"max_cells must be a whole number ≥ 1, got {self.max_cells!r}")
        if self.bounds is not None:
            if not isinstance(self.bounds, Mapping):
                raise ParameterError(f"bounds must map column names to (low, high), got {self.bounds!r}")
            for c, b in self.bounds.items():
                ok = isinstance(b, (tuple, list, np.ndarray)) and len(b) == 2 and all(
                    _is_number(v) or is_iso_date(v) for v in b)
                if ok and any(is_iso_date(v) for v in b):
                    try:  # a date column's bounds as dates; a non-date column is refused when the schema is known
                        b = [parse_iso_date(v, f"a bound of {c!r}") if isinstance(v, str) else v for v in b]
                    except SchemaError as e:
                        raise ParameterError(str(e)) from None
                if not ok or not all(np.isfinite(b)) or b[0] > b[1]:
                    raise ParameterError(f"bounds of {c!r} must be two finite numbers low ≤ high (dates as YYYY-MM-DD), "
                                         f"got {b!r}")
        if self.domains is not None:
            if not isinstance(self.domains, Mapping):
                raise ParameterError(f"domains must map column names to lists of values, got {self.domains!r}")
            for c, vals in self.domains.items():
                if isinstance(vals, (str, bytes)) or not isinstance(vals, Sequence | np.ndarray):
                    raise ParameterError(f"the domain of {c!r} must be a list of values, got {vals!r}")
        nl = self.nullable
        if nl is not None and (isinstance(nl, (str, bytes)) or not isinstance(nl, Sequence)
                               or not all(isinstance(c, str) for c in nl)):
            raise ParameterError(f"nullable must be a list of column names, got {nl!r}")

    # ------------------------------------------------------------------ budget
    @property
    def sensitivity(self) -> float:
        """Δ of a count query: 1 for add/remove-one neighbours, 2 for replace-one."""
        return 2.0 if self.neighbouring == "replace" else 1.0

    def _keeps_rows(self) -> bool:
        # under add/remove-one neighbours the table size is private: the release has its own, noisy, size
        return self.neighbouring == "replace"

    # ------------------------------------------------------------ schema & domain
    def _resolve_schema(self, df: pd.DataFrame) -> Schema:
        """The declared schema; without one, the types ``bounds=``/``domains=`` imply (a column
        with bounds is numeric, one with a value set categorical) — never the dtypes."""
        if self.schema is None and not self.domain_from_data:
            decl = self.declared_schema(list(map(str, df.columns)))
            if decl is not None:
                return decl
        return super()._resolve_schema(df)

    def declared_schema(self, columns: Sequence[str]) -> Schema | None:
        """The schema ``bounds=`` and ``domains=`` declare for a table of ``columns`` (in that
        order, the class last among them), or ``None`` when they leave a column out or no
        class is named. Whole-number attributes cannot be declared this way: every numeric
        attribute is continuous (pass a schema with ``integer`` for whole numbers)."""
        if self.schema is not None:
            sch = self.schema if isinstance(self.schema, Schema) else Schema.from_dict(dict(self.schema))
            return sch.with_class(self.class_column) if self.class_column is not None else sch
        bounds, domains = dict(self.bounds or {}), dict(self.domains or {})
        cls = self.class_column
        if not all(c in bounds or c in domains for c in columns) or (cls is not None and cls not in domains):
            return None
        num = [c for c in columns if c in bounds and c != cls]
        cat = [c for c in columns if c in domains and c not in bounds and c != cls]
        return Schema(num, cat, cls)

    def _domain(self, df: pd.DataFrame, schema: Schema) -> _Domain:
        """Every column's declared domain (parameters over the schema); what is missing is
        refused, or read from the data with ``domain_from_data=True``."""
        bounds = dict(self.bounds or {})
        domains = dict(self.domains or {})
        cols = schema.columns
        for c in bounds:
            if c not in schema.numeric:
                raise ParameterError(f"bounds names {c!r}, which is not a numeric attribute of the table")
        for c in domains:
            if c not in cols or c in schema.numeric:
                raise ParameterError(f"domains names {c!r}, which is not a categorical attribute or the class")
        nullable = list(self.nullable or [])
        for c in nullable:
            if c not in cols:
                raise ParameterError(f"nullable names {c!r}, which is not a column of the schema")
        dom = _Domain({}, {}, set(schema.integer), set(nullable))
        undeclared_num: list[str] = []
        undeclared_cat: list[str] = []
        for c in cols:
            if c in schema.numeric:
                if c in bounds:
                    if any(is_iso_date(v) for v in bounds[c]) and c not in schema.dates:
                        raise ParameterError(f"bounds of {c!r} are dates, and {c!r} is not a date column")
                    lo, hi = (parse_iso_date(v, f"a bound of {c!r}") if is_iso_date(v) else float(v)
                              for v in bounds[c])
                elif c in schema.bounds:
                    lo, hi = schema.bounds[c]
                else:
                    undeclared_num.append(c)
                    vals = df[c].to_numpy(dtype=float)
                    vals = vals[np.isfinite(vals)]
                    lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (0.0, 0.0)
                if c in dom.integer and math.floor(hi) < math.ceil(lo):
                    raise ParameterError(f"bounds of integer column {c!r} contain no whole number")
                dom.bounds[c] = (lo, hi)
                continue
            if c in domains:
                values = list(domains[c])
            elif c in schema.categories:
                values = list(schema.categories[c])
            else:
                undeclared_cat.append(c)
                values = sorted(pd.unique(df[c].dropna()), key=_kind_key)
            values = [v.item() if isinstance(v, np.generic) else v for v in values]
            if not values:
                raise ParameterError(f"the declared domain of {c!r} is empty")
            if len(set(values)) != len(values):
                raise ParameterError(f"the declared domain of {c!r} lists a value twice")
            dom.values[c] = values
        if (undeclared_num or undeclared_cat) and not self.domain_from_data:
            raise SchemaError(
                f"DPCube needs a declared public domain, and the {_declare_hint(undeclared_num, undeclared_cat)} "
                "are not declared; declare them in the schema file ('bounds' and 'categories'; "
                "`ppdm schema DATA --domain-template` writes one to fill in) or with bounds=/domains=, or release "
                "without a differential privacy guarantee with domain_from_data=True (CLI: --domain-from-data)"
            )
        if self.domain_from_data:
            dom.from_data = [*undeclared_num, *undeclared_cat]
            if self.schema is None:
                dom.from_data.append("the column types")
            for c in schema.attributes:  # a record without its class is dropped, never modelled
                if c not in dom.nullable and df[c].isna().any():
                    dom.nullable.add(c)
                    dom.from_data.append(f"{c} (whether missing)")
        return dom

    # ------------------------------------------------------------------ encoding
    def _grid_domain(self, schema: Schema, dom: _Domain) -> tuple[list[str], dict[str, list]]:
        """The categorical grid columns (with flags of nullable numeric attributes) and the
        values of every categorical grid column, sentinels included."""
        flags = [c + _GAP for c in schema.numeric if c in dom.nullable]
        values: dict[str, list] = {}
        for c, vals in dom.values.items():
            extra = ([OTHER] if self.unknown == "other" else []) + ([MISSING] if c in dom.nullable else [])
            values[c] = [*vals, *extra]
        for f in flags:
            values[f] = ["observed", "missing"]
        return flags, values

    def _encode(self, df: pd.DataFrame, schema: Schema) -> tuple[pd.DataFrame, np.ndarray, dict[str, Any]]:
        """The records in domain terms: numeric values clamped to their bounds (whole numbers
        rounded), categories as codes into the grid values; and which records are kept.

        Never raises for a value: a category outside the declared set goes to "other" or
        drops its record, a missing cell outside the ``nullable`` columns drops its record.
        """
        dom = self._dom
        n = len(df)
        keep = np.ones(n, dtype=bool)
        out: dict[str, np.ndarray] = {}
        notes: dict[str, Any] = {"dropped_missing": 0, "dropped_unknown": 0, "clamped": {}}
        for c in schema.numeric:
            v = df[c].to_numpy(dtype=float, na_value=np.nan)
            miss = np.isnan(v)
            lo, hi = dom.bounds[c]
            if c in dom.integer:
                lo, hi = float(math.ceil(lo)), float(math.floor(hi))
                w = np.rint(v)
            else:
                w = v
            clamped = np.clip(np.where(miss, lo, w), lo, hi)
            notes["clamped"][c] = int((~miss & (clamped != v)).sum())
            out[c] = clamped
            if c in dom.nullable:
                out[c + _GAP] = miss.astype(np.int64)
            else:
                notes["dropped_missing"] += int((miss & keep).sum())
                keep &= ~miss
        for c, values in self._grid_values.items():
            if c.endswith(_GAP):
                continue
            lookup = {v: i for i, v in enumerate(values) if v not in (MISSING, OTHER)}
            raw = df[c].to_numpy(dtype=object)
            miss = pd.isna(df[c]).to_numpy()
            codes = np.fromiter((lookup.get(v, -1) if not m else -2 for v, m in zip(raw, miss, strict=True)),
                                dtype=np.int64, count=n)
            if c in dom.nullable:
                codes[codes == -2] = values.index(MISSING)
            else:
                notes["dropped_missing"] += int(((codes == -2) & keep).sum())
                keep &= codes != -2
            unknown = codes == -1
            if self.unknown == "other":
                codes[unknown] = values.index(OTHER)
            else:
                notes["dropped_unknown"] += int((unknown & keep).sum())
                keep &= ~unknown
            out[c] = np.where(codes < 0, 0, codes)
        enc = pd.DataFrame(out, index=df.index)
        return enc, keep, notes

    def _encode_frame(self, X: pd.DataFrame) -> pd.DataFrame:
        """``X`` (a table with this schema's columns, e.g. a release) in domain terms, every
        record kept (values outside the domain are clamped; unknown categories get code 0)."""
        enc, _, _ = self._encode(X, self.schema_)
        return enc

    # --------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        extra = [c for c in df.columns if c not in schema.columns]
        if extra:
            # every column is synthesized; one copied through would publish original values
            raise SchemaError(f"DPCube synthesizes every column, but {extra[0]!r} is not in the schema")
        dom = self._domain(df, schema)
        self._dom = dom
        flags, self._grid_values = self._grid_domain(schema, dom)
        fixed_cat = count_cells([len(v) for c, v in self._grid_values.items()
                                 if c in schema.categorical or c == schema.class_column or c in flags])
        if fixed_cat > self.max_cells and (self.bins != "auto" or self.selection == "off"):
            self._refuse_categories(fixed_cat)
        enc_all, keep, notes = self._encode(df, schema)
        enc = enc_all.loc[keep]
        n = len(enc)
        noise_rng = _child_rng(rng, 0)
        delta = self.sensitivity
        eps = float(self.epsilon)
        steps: list[PrivacyStep] = []
        # ---- phase 0: the table size (public under replace-one neighbours: the input's size)
        if self.neighbouring == "add-remove":
            e0 = self.size_share * eps
            n0 = noisy_table_size(n, e0, noise_rng)
            steps.append(PrivacyStep("table size (phase 0)", e0, "discrete Laplace", 1.0, _scale(1.0, e0),
                                     "one count query"))
        else:
            e0, n0 = 0.0, float(len(df))
        rest = eps - e0 if not math.isinf(eps) else eps
        # ---- which attributes get bins, and how many (phase S when the grid cannot hold them all)
        plan = self._plan(schema, dom, flags, n0, rest, enc, noise_rng, steps)
        if plan is None:
            self._refuse_categories(fixed_cat)
        selected, per_bins = plan
        e_sel = sum(s.epsilon for s in steps if s.name.startswith("attribute selection"))
        rest = rest - e_sel if not math.isinf(rest) else rest
        # ---- phase Q: bin edges at DP quantiles
        grid, e_q = self._make_grid(schema, dom, flags, selected, per_bins, rest, n0, enc, noise_rng, steps)
        rest = rest - e_q if not math.isinf(rest) else rest
        if grid.n_cells > self.max_cells:
            raise ParameterError(
                f"the grid has {_fmt_count(grid.n_cells)} cells ({self.bins} bins for each of {len(schema.numeric)} "
                f"numeric attributes × {fixed_cat} categorical/class cells), more than max_cells={self.max_cells}; "
                "use bins='auto' (sized from n, the attributes and ε), fewer bins, or fewer attributes"
            )
        # the DP warnings, kept for the public privacy report too (they quote ε and column names, no count of x)
        self.dp_warnings_: list[tuple[str, str]] = []
        if dom.from_data:  # after every refusal: warn only about a release that is made
            self.dp_warnings_.append(("domain from data",
                f"DPCube read {_names(dom.from_data)} from the data (domain_from_data=True), so the release is not "
                "differentially private; declare public bounds/categories (schema or bounds=/domains=)"))
            warnings.warn(
                self.dp_warnings_[-1][1],
                DomainFromDataWarning,
                stacklevel=3,
            )
        single = [d.name for d in grid.dims if d.name in schema.attributes and (
            d.merged or (d.kind != "categorical" and d.n_bins == 1 and dom.capacity(d.name) != 1))]
        if self.bins == "auto" and single:
            self.dp_warnings_.append(("coarse grid",
                f"at this table size and ε = {self.epsilon:g}, DPCube's grid keeps the structure of "
                f"{len(schema.attributes) - len(single)} of the {len(schema.attributes)} attributes; the other "
                f"{len(single)} are drawn uniformly over their declared domain, independently of the rest; release "
                "fewer attributes or spend a larger ε to keep more of their structure"))
            warnings.warn(
                self.dp_warnings_[-1][1],
                CoarseGridWarning,
                stacklevel=3,
            )
        if self.partitioning == "cell":
            e1, e2 = rest, 0.0
        else:
            e1 = self.alpha * rest
            e2 = rest - e1 if not math.isinf(rest) else rest
        # ---- phase 1: the noisy cell histogram
        hist = grid.histogram(enc)
        noisy_hist = noisy_histogram(hist, delta, e1, noise_rng)
        steps.append(PrivacyStep("cell histogram (phase 1)", e1, "discrete Laplace", delta, _scale(delta, e1),
                                 "parallel over disjoint cells"))
        var1 = discrete_laplace_variance(delta, e1)
        if self.partitioning == "cell":
            boxes = _all_cells(grid.array_shape)
            true = hist.reshape(-1)
            noisy = noisy_hist.reshape(-1)
            var_sum = var1 * grid.n_cells
        else:
            # ---- phase 2a: the kd-tree reads the noisy histogram only
            min_count = self.min_count if self.min_count is not None else (
                0.0 if math.isinf(e1) else 2.0 * delta / e1)
            first: tuple[int, ...] = ()
            if self.split_dimension == "class-first" and schema.class_column is not None:
                j = grid.columns.index(schema.class_column)
                first = (grid.active.index(j),) if j in grid.active else ()
            boxes = kd_partition(
                noisy_hist, noise_var=var1, min_count=min_count, split_threshold=float(self.split_threshold),
                max_depth=self.max_depth, split=self.split,  # type: ignore[arg-type]  # a str checked against the choices on fit
                first_dims=first,
            )
            # ---- phase 2b: noisy partition counts
            true = box_sums(hist, boxes)
            noisy = noisy_partition_counts(true, delta, e2, noise_rng)
            steps.append(PrivacyStep("partition counts (phase 2b)", e2, "discrete Laplace", delta,
                                     _scale(delta, e2), "parallel over disjoint partitions"))
            var2 = discrete_laplace_variance(delta, e2)
            if self.combine and var2 > 0 and var1 > 0:
                var_b = box_volumes(boxes) * var1
                phase1 = box_sums(noisy_hist, boxes)
                noisy = (noisy / var2 + phase1 / var_b) / (1.0 / var2 + 1.0 / var_b)
                var2 = 1.0 / (1.0 / var2 + 1.0 / var_b.min())  # a bound: the sum's variance is no larger
            var_sum = var2 * len(boxes)
            self.min_count_ = float(min_count)
        if self.neighbouring == "add-remove":
            # inverse-variance combination of two noisy estimates of n (post-processing)
            var0 = discrete_laplace_variance(1.0, e0)
            total = float(np.sum(noisy))
            if var0 == 0.0:
                n_noisy = n0
            elif var_sum == 0.0:
                n_noisy = total
            else:
                n_noisy = (n0 / var0 + total / var_sum) / (1.0 / var0 + 1.0 / var_sum)
            self.n_noisy_: float | None = n_noisy
            self.n_rows_: int | None = max(1, int(round(n_noisy)))  # a release has at least one record
        else:
            self.n_noisy_ = None
            self.n_rows_ = None
        self.n0_ = n0 if self.neighbouring == "add-remove" else None
        self.grid_ = grid
        self.selected_ = list(selected)
        self.bins_ = {d.name: d.n_bins for d in grid.dims if d.name in schema.numeric}
        self.histogram_noisy_ = noisy_hist  # over grid_.array_shape
        self._boxes = boxes  # over grid_.array_shape
        self.partitions_ = grid.expand(boxes)
        self.partition_counts_ = np.asarray(true, dtype=float)
        self.noisy_counts_ = np.asarray(noisy, dtype=float)
        self.privacy_steps_ = tuple(steps)
        self.epsilon_spent_ = float(sum(s.epsilon for s in steps))
        self.privacy_report_ = self._report(dom, schema)
        # the owner's secret: exact counts of x, never written beside the release
        self.private_report_ = {
            "records": int(len(df)),
            "records_used": int(n),
            "dropped_missing": int(notes["dropped_missing"]),
            "dropped_unknown_category": int(notes["dropped_unknown"]),
            "clamped_to_bounds": {c: int(k) for c, k in notes["clamped"].items() if k},
        }

    def _refuse_categories(self, fixed: int) -> NoReturn:
        vals = {c: v for c, v in self._grid_values.items()}
        widest = max(vals, key=lambda c: len(vals[c]))
        raise ParameterError(
            f"the categorical attributes and the class alone make {_fmt_count(fixed)} cells, more than "
            f"max_cells={self.max_cells}; drop categorical attributes or merge their values "
            f"(largest: {widest!r} with {len(vals[widest])} values)"
        )

    def _plan(self, schema: Schema, dom: _Domain, flags: list[str], n0: float, rest: float, enc: pd.DataFrame,
              rng: np.random.Generator, steps: list[PrivacyStep]) -> tuple[list[str], dict[str, int]] | None:
        """The attributes that get more than one cell and the bins of the numeric ones.

        With ``bins`` a number, or ``selection="off"``, or no class: every attribute,
        numeric ones in table order (``None`` when the categorical cells alone exceed
        ``max_cells``). Otherwise, when every attribute fits with ``min_bins`` bins, all of
        them; else the attributes picked by the exponential mechanism (phase S), in the
        order picked, as many as fit.
        """
        num = list(schema.numeric)
        cls = schema.class_column
        vals = self._grid_values
        if self.bins != "auto":
            return list(schema.attributes), dict.fromkeys(num, int(self.bins))
        delta = self.sensitivity
        target = _grid_target(n0, float(self.epsilon), delta, float(self.grid_density), self.max_cells)
        fixed = count_cells([len(vals[c]) for c in [*([cls] if cls else []), *flags]])
        cat_cells = {c: len(vals[c]) for c in schema.categorical}
        caps = {c: dom.capacity(c) for c in num}

        def need(c: str) -> int:
            return cat_cells[c] if c in cat_cells else min(self.min_bins, caps[c] or self.min_bins)

        everything = count_cells([need(c) for c in schema.attributes]) * fixed
        if self.selection == "off" or cls is None or everything <= target:
            if count_cells(list(cat_cells.values())) * fixed > self.max_cells:
                return None
            budget = target / (fixed * count_cells(list(cat_cells.values())))
            per = _bins_within(budget, [caps[c] for c in num])
            return list(schema.attributes), dict(zip(num, per, strict=True))
        # phase S: rank the attributes by how well each one separates the classes
        cands = list(schema.attributes)
        room = target / fixed
        # picks revealed: about as many attributes as can get min_bins cells each (one more, as
        # two-valued categorical attributes take fewer); each pick costs its share of the budget
        k_max = max(0, min(len(cands), int(math.floor(math.log(room) / math.log(self.min_bins))) + 1)
                    if room >= 2 else 0)
        if k_max == 0:
            return [], {}
        e_sel = self.selection_share * rest
        y = enc[cls].to_numpy(dtype=np.int64)
        cols = [enc[c].to_numpy() for c in cands]
        kinds = ["codes" if c in cat_cells else "values" for c in cands]
        scores = split_purity_scores(cols, kinds, y, len(vals[cls]))
        # the Gini purity changes by at most 1 per added or removed record (2 under replace-one)
        s_sens = delta
        each = e_sel / k_max if not math.isinf(e_sel) else e_sel
        order = select_attributes(scores, k_max, each, s_sens, rng)
        steps.append(PrivacyStep(f"attribute selection (phase S, {k_max} picks)", e_sel, "exponential mechanism",
                                 s_sens, _scale(2.0 * s_sens, each), "sequential over the picks"))
        chosen: list[str] = []
        for i in order:
            c = cands[int(i)]
            trial = [*chosen, c]
            if count_cells([need(a) for a in trial]) <= room:
                chosen.append(c)
        chosen_num = [c for c in chosen if c in num]
        budget = room / count_cells([cat_cells[c] for c in chosen if c in cat_cells])
        per = _bins_within(budget, [caps[c] for c in chosen_num])
        # keep the table's column order for the grid, the picking order for the extra bins
        bins = dict(zip(chosen_num, per, strict=True))
        bins.update(dict.fromkeys([c for c in num if c not in chosen], 1))
        return [c for c in schema.attributes if c in chosen], bins

    def _make_grid(self, schema: Schema, dom: _Domain, flags: list[str], selected: list[str], bins: dict[str, int],
                   rest: float, n0: float, enc: pd.DataFrame, rng: np.random.Generator,
                   steps: list[PrivacyStep]) -> tuple[Grid, float]:
        """The grid, with the bin edges of the numeric attributes (phase Q when at DP quantiles)."""
        delta = self.sensitivity
        num = list(schema.numeric)
        want = {c: (bins.get(c, 1) if c in selected else 1) for c in num}
        # attributes whose bins are cut at DP quantiles: more than one bin, fewer than their whole numbers
        quant = [c for c in num if want[c] > 1 and self.edges == "quantile" and dom.capacity(c) != 1
                 and not (c in dom.integer and (dom.capacity(c) or 0) <= want[c])]
        e_q = self.quantile_share * rest if quant else 0.0
        each = e_q / len(quant) if quant and not math.isinf(e_q) else e_q
        # pieces of the noisy histograms: about n0·ε_first/(4Δ) of them (a piece must hold a few
        # noise scales of records to stand out), a power of two from 4 to 64
        share = max(1.0, n0) * (each / 2.0) / (4.0 * delta) if not math.isinf(each) else 64.0
        pieces = int(2 ** min(6, max(2, round(math.log2(max(share, 1.0))))))
        if quant:
            steps.append(PrivacyStep(f"bin edges (phase Q, quantiles of {len(quant)} attributes)", e_q,
                                     "discrete Laplace (noisy histograms of pieces of the bounds)", delta,
                                     _scale(2.0 * delta, each),
                                     "sequential over attributes and zoom levels; parallel over the disjoint pieces "
                                     "of one count"))
        dims: list[GridDim] = []
        for c in schema.columns:
            if c in schema.numeric:
                lo, hi = dom.bounds[c]
                nb = want[c]
                if c in dom.integer:
                    ilo, ihi = math.ceil(lo), math.floor(hi)
                    m = ihi - ilo + 1
                    nb = min(nb, m)
                    support = None
                    if c in quant:
                        cuts, support = dp_bin_edges(enc[c].to_numpy(), lo, hi, nb, each, delta, True, rng,
                                                     pieces=pieces)
                        starts = np.concatenate([[ilo], cuts.astype(np.int64)]).astype(np.int64)
                    else:
                        starts = ilo + (np.arange(nb, dtype=np.int64) * m) // nb
                    ends = np.append(starts[1:] - 1, ihi)
                    dims.append(GridDim(c, "integer", len(starts), int_lo=starts, int_hi=ends, support=support))
                else:
                    nb = nb if hi > lo else 1
                    support = None
                    if c in quant:
                        inner, support = dp_bin_edges(enc[c].to_numpy(), lo, hi, nb, each, delta, False, rng,
                                                      pieces=pieces)
                        edges = np.concatenate([[lo], inner, [hi]])
                    else:
                        edges = lo + (hi - lo) * np.arange(nb + 1, dtype=float) / nb
                        edges[-1] = hi
                    dims.append(GridDim(c, "numeric", len(edges) - 1, edges=edges, support=support))
                if c + _GAP in flags:
                    dims.append(GridDim(c + _GAP, "categorical", 2, values=self._grid_values[c + _GAP]))
            else:
                values = self._grid_values[c]
                merged = c != schema.class_column and c not in selected
                dims.append(GridDim(c, "categorical", 1 if merged else len(values), values=values, merged=merged))
        return Grid(dims), e_q

    # ------------------------------------------------------------------ report
    def _report(self, dom: _Domain, schema: Schema) -> dict[str, Any]:
        """What the release guarantees, as JSON-able data (public: no count of x in it)."""
        eps = float(self.epsilon)
        noise = not math.isinf(eps)
        private = noise and not dom.from_data
        relation = _RELATION[self.neighbouring]
        phases = [{**asdict(s), "epsilon": _json_float(s.epsilon), "noise_scale": _json_float(s.noise_scale)}
                  for s in self.privacy_steps_]
        assumptions = [
            "the declared types, bounds and categories are public and were not chosen by looking at the records",
            # whether a seed was given is not said here (public): the private log says it to the owner
            "the random draws are unpredictable to whoever sees the release (a seed, when one is given, must be a "
            "secret too large to try one by one)",
            "each person contributes one record (someone with k records is protected with k·ε)",
            "the noise samplers are NumPy's, exact up to floating-point rounding of their probabilities",
        ]
        if self.neighbouring == "replace":
            assumptions.append("the number of records n is public")
        if not noise:
            guarantee = ("Not differentially private: epsilon=inf switches the noise off, so the release follows "
                         "the data.")
        elif dom.from_data:
            guarantee = (
                f"Not differentially private: {_names(dom.from_data)} were read from the data "
                f"(domain_from_data=True), so the release can reveal extreme values, rare categories and types of "
                f"the records; only the counts carry noise of ε = {eps:g}."
            )
        else:
            guarantee = (
                f"The release is {eps:g}-differentially private for {relation}: any one person's record changes the "
                f"probability of any output by at most a factor e^{eps:g}{_approx_exp(eps)}, assuming the declared "
                "domain is public and data-independent and the random draws are unknown to the attacker."
            )
        return {
            "mechanism": ("DPCube (Xiao, Xiong & Yuan 2010): noisy cell histogram, kd-tree partitioning, noisy "
                          "partition counts, synthetic records" if self.partitioning == "kd" else
                          "DPCube cell-based baseline (Xiao, Xiong & Yuan 2010): noisy cell histogram, synthetic "
                          "records"),
            "count_noise": "discrete Laplace (two-sided geometric)",
            "differentially_private": bool(private),
            "epsilon": _json_float(eps),
            "epsilon_spent": _json_float(self.epsilon_spent_),
            "neighbouring": {"relation": self.neighbouring, "description": relation,
                             "count_sensitivity": self.sensitivity},
            "phases": phases,
            "rows": ({"source": "noisy count", "released": self.n_rows_,
                      "description": "the number of records is a differentially private estimate of n"}
                     if self.neighbouring == "add-remove" else
                     {"source": "public n", "released": None,
                      "description": "the release has as many records as the table it is made from (n is public)"}),
            "domain_declared": not dom.from_data,
            "domain_from_data": bool(dom.from_data),
            "domain": {"declared": [c for c in schema.columns if c not in dom.from_data],
                       "from_data": list(dom.from_data),
                       "nullable": sorted(dom.nullable),
                       "outside_values": ("a number outside its bounds is clamped to them (whole numbers rounded); "
                                          + ("a category outside the declared set goes to the cell "
                                             f"{self.other_label!r}" if self.unknown == "other" else
                                             "a record with a category outside the declared set is dropped")
                                          + "; a record missing a value of a column not declared nullable is "
                                            "dropped")},
            "selected_attributes": list(self.selected_),
            # the warnings the release was made with, by kind (the coarse grid, a domain read from the data)
            "warnings": [{"kind": k, "text": t} for k, t in getattr(self, "dp_warnings_", [])],
            "assumptions": assumptions,
            "guarantee": guarantee,
        }

    # ------------------------------------------------------------- measurements
    def measurements(self) -> dict[str, Any]:
        """The noisy outputs of every phase as JSON-able data: what the public sidecar holds.

        All of it is covered by the guarantee (noisy counts, DP choices, declared domain);
        none of it is a count of x.
        """
        cells = self.grid_.n_cells
        hist = self.histogram_noisy_
        return {
            "format": "ppdm-dpcube-measurements",
            "version": 1,
            "table_size_noisy": self.n0_,
            "selected_attributes": list(self.selected_),
            "grid": [d.describe() for d in self.grid_.dims],
            "histogram_shape": list(self.grid_.array_shape),
            "histogram_noisy": (np.rint(hist).astype(np.int64).reshape(-1).tolist()
                                if cells <= MAX_WRITTEN_CELLS and np.isfinite(hist).all() else None),
            "partitions": np.asarray(self._boxes).tolist(),
            "partition_counts_noisy": [float(v) for v in self.noisy_counts_],
            "rows_released": self.n_rows_,
        }

    def write_sidecars(self, out_path: str | Path) -> list[Path]:
        """Write ``<out stem>.dpcube.json`` (the noisy measurements, public) beside the release."""
        import json

        from ppdm.data.io import atomic_write_text

        p = measurements_path(out_path)
        atomic_write_text(p, json.dumps(self.measurements(), allow_nan=False) + "\n")
        return [p]

    # --------------------------------------------------------------- helpers
    def _cell_to_partition(self) -> np.ndarray:
        """Partition id of every cell of the grid (the boxes tile it), shape ``grid_.array_shape``."""
        boxes = self._boxes
        shape = self.grid_.array_shape
        if self.partitioning == "cell" and boxes.shape[1]:  # one box per cell, in C order
            return np.arange(len(boxes), dtype=np.int64).reshape(shape)
        ids = np.full(shape, -1, dtype=np.int64)
        for p, box in enumerate(boxes):
            ids[tuple(slice(int(a), int(b) + 1) for a, b in box)] = p
        return ids

    def partition_index(self, X: pd.DataFrame) -> np.ndarray:
        """The partition every record of ``X`` falls in (index into :attr:`partitions_`)."""
        idx = self.grid_.cell_indices(self._encode_frame(X), active_only=True)
        return self._cell_to_partition()[tuple(idx.T)] if idx.shape[1] else np.zeros(len(X), np.int64)

    def cell_indices(self, X: pd.DataFrame) -> np.ndarray:
        """``(n, d)`` cell of every record of ``X`` in :attr:`grid_` (every dimension)."""
        return self.grid_.cell_indices(self._encode_frame(X))

    def allocate(self, n: int) -> np.ndarray:
        """How many synthetic records each partition gets in a release of ``n`` records."""
        return allocate_counts(self.noisy_counts_, n, box_volumes(self.partitions_))

    def _sample_cells(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``(m, d)`` cell of every record: ``counts[p]`` cells of partition p, each drawn in
        proportion to the partition's phase-1 noisy cells clipped at zero (uniformly when
        they are all zero)."""
        return _cells_by_weight(self._cell_to_partition(), self.histogram_noisy_, counts, self.grid_, rng)

    # -------------------------------------------------------------- transform
    def _transform_frame(self, X: Any, rng: np.random.Generator) -> Any:
        """The synthetic records, typed by the declaration (never by ``X``'s dtypes)."""
        df, was_array = self._as_fitted_frame(X)
        sample_rng = _child_rng(rng, 1)
        m = int(self.n_rows_) if self.neighbouring == "add-remove" else len(df)  # type: ignore[arg-type]  # fit sets n_rows_ for add-remove
        out = self._synthesize(m, sample_rng)[list(df.columns)]
        if self._dom.from_data:
            # not differentially private anyway (domain_from_data=True): keep the input's dtypes
            from ppdm.anonymize.base import restore_table

            out = restore_table(out, df, self.schema_, same_rows=self._keeps_rows())
        elif self.neighbouring == "replace":
            out.index = df.index
        return out.to_numpy() if was_array else out

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        return self._synthesize(len(df), rng)

    def _synthesize(self, m: int, rng: np.random.Generator) -> pd.DataFrame:
        schema = self.schema_
        counts = self.allocate(m)
        if self.placement == "cells":
            cells = self._sample_cells(counts, rng)
            lo = hi = cells
        else:
            boxes = np.repeat(self.partitions_, counts, axis=0)
            lo, hi = boxes[:, :, 0], boxes[:, :, 1]
        raw: dict[str, np.ndarray] = {}
        for j, dim in enumerate(self.grid_.dims):
            raw[dim.name] = dim.sample(lo[:, j], hi[:, j], rng)
        # shuffle so the row order does not reveal the partitions
        perm = rng.permutation(m)
        cols: dict[str, pd.Series] = {}
        for c in schema.columns:
            if c in schema.numeric:
                cols[c] = self._numeric_column(c, raw[c][perm], raw.get(c + _GAP, np.zeros(m, np.int64))[perm])
            else:
                cols[c] = self._categorical_column(c, raw[c][perm])
        return pd.DataFrame(cols, index=pd.RangeIndex(m))

    def _numeric_column(self, c: str, vals: np.ndarray, missing: np.ndarray) -> pd.Series:
        """A numeric column in the declared type: whole numbers as int64 (Int64 when nullable),
        others as float64, dates back on their time axis."""
        from ppdm.data.types import from_time_axis

        dom = self._dom
        miss = (missing == 1) if c in dom.nullable else np.zeros(len(vals), dtype=bool)
        schema = self.schema_
        if c in schema.dates:
            v = np.where(miss, np.nan, vals.astype(float))
            return from_time_axis(v, pd.Series(np.zeros(len(v), dtype="datetime64[ns]"), name=c),
                                  schema.dates[c], c)
        if c in dom.integer:
            arr: pd.api.extensions.ExtensionArray = pd.array(np.rint(vals.astype(float)).astype(np.int64), dtype="Int64" if c in dom.nullable else "int64")
            s = pd.Series(arr, name=c)
            if miss.any():
                s[miss] = pd.NA
            return s
        return pd.Series(np.where(miss, np.nan, vals.astype(float)), name=c)

    def _categorical_column(self, c: str, codes: np.ndarray) -> pd.Series:
        """Codes back to the declared values (their own type when they share one), "other" to
        ``other_label`` and "missing" to a missing cell."""
        values = self._grid_values[c]
        real = [v for v in values if v not in (MISSING, OTHER)]
        has_other = any(v is OTHER for v in values) and self.unknown == "other"
        table = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            table[i] = np.nan if v == MISSING else (self.other_label if v == OTHER else v)
        out = table[codes]
        kinds = {type(v) for v in real}
        if not has_other and kinds and all(issubclass(k, (int, np.integer)) and not issubclass(k, bool)
                                           for k in kinds) and not (out != out).any():
            return pd.Series(out.astype(np.int64), name=c)
        if not has_other and kinds and all(issubclass(k, bool) for k in kinds) and not (out != out).any():
            return pd.Series(out.astype(bool), name=c)
        if not has_other and kinds and all(issubclass(k, (int, float, np.integer, np.floating))
                                           and not issubclass(k, bool) for k in kinds):
            return pd.Series(out.astype(float), name=c)
        return pd.Series(out, name=c, dtype=object)


def _cells_by_weight(part_of_cell: np.ndarray, weights: np.ndarray, counts: np.ndarray, grid: Grid,
                     rng: np.random.Generator) -> np.ndarray:
    """``(m, d)`` cells: ``counts[p]`` cells of partition p, each in proportion to ``weights``
    clipped at zero among the partition's cells (uniformly when they are all zero)."""
    shape = grid.array_shape
    part = part_of_cell.reshape(-1)
    order = np.argsort(part, kind="stable")  # cells grouped by partition
    starts = np.searchsorted(part[order], np.arange(len(counts) + 1))
    w = np.clip(np.asarray(weights, dtype=float).reshape(-1), 0.0, None)[order]
    cum = np.cumsum(w)
    lo_cum = np.where(starts[:-1] > 0, cum[np.maximum(starts[:-1] - 1, 0)], 0.0)
    mass = cum[np.maximum(starts[1:] - 1, 0)] - lo_cum
    size = np.diff(starts)
    who = np.repeat(np.arange(len(counts)), counts)
    u = rng.random(len(who))
    a, k = starts[who], size[who]
    # the first cell whose cumulative weight passes the draw; zero-weight cells are never chosen
    by_mass = np.searchsorted(cum, lo_cum[who] + u * mass[who], side="right")
    flat = np.where(mass[who] > 0, np.clip(by_mass, a, a + k - 1), a + np.minimum((u * k).astype(np.int64), k - 1))
    cells = order[flat]
    compact = np.stack(np.unravel_index(cells, shape), axis=1) if shape else np.zeros((len(who), 0), np.int64)
    out = np.zeros((len(who), len(grid.dims)), dtype=np.int64)
    out[:, grid.active] = compact
    return out


def _names(cols: Sequence[str], most: int = 5) -> str:
    """Column names for a message, the first ``most`` of a long list (notes such as "the column
    types" unquoted)."""
    shown = ", ".join(c if c.startswith("the ") or "(" in c else repr(c) for c in cols[:most])
    return shown if len(cols) <= most else f"{shown} and {len(cols) - most} more columns"


def _approx_exp(eps: float) -> str:
    """`` ≈ e^ε`` for a message, when it is a number a reader can use."""
    return f" ≈ {math.exp(eps):.3g}" if eps < 50 else ""


def _scale(sensitivity: float, epsilon: float) -> float:
    return 0.0 if math.isinf(epsilon) or epsilon == 0 else sensitivity / epsilon


def _json_float(v: float) -> float | None:
    """A float for JSON: ``None`` stands for infinity (no noise), which JSON cannot hold."""
    return None if math.isinf(v) else float(v)

