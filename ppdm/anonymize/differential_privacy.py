"""Differentially private synthetic data by multidimensional partitioning (DPCube).

Paper 000 §7.2/§8.4 anonymizes the Banknotes dataset with the technique of Xiao, Xiong
& Yuan (2010, "Differentially private data release through multidimensional
partitioning", LNCS 6358, reference [4] of paper 000; journal version: Xiao, Xiong, Fan,
Goryczka & Li, "DPCube", Transactions on Data Privacy 7, 2014): the domain is
partitioned into disjoint sub-domains, the number of records in each is released
through a noisy count query (Laplace noise whose size depends on the privacy budget
ε), and new records are generated inside each sub-domain.

:class:`DPCube` follows the two-phase kd-tree form of that technique. For a table of
n records and a budget ε, under add/remove-one neighbours (the default):

0. **Table size (phase 0).** ``n0 = n + Laplace(1/ε0)`` with ``ε0 = size_share·ε``. It
   sizes the grid (``bins="auto"``) and, combined with the partition counts, gives the
   number of released records. Under replace-one neighbours n is public: no phase 0.
1. **Cell histogram (phase 1).** The (attributes × class) domain is cut into a grid:
   equal-width bins on the declared bounds of every numeric attribute, one cell per
   declared value of every categorical attribute and of the class. Every cell count,
   empty cells included, gets ``Laplace(Δ/ε1)`` noise. The cells are disjoint, so by
   parallel composition this step costs ``ε1``.
2. **kd-tree on the noisy grid (phase 2a).** :func:`kd_partition` splits the grid
   recursively reading the noisy histogram only, so it is post-processing and costs
   nothing.
3. **Noisy partition counts (phase 2b).** Each final partition's true count gets
   ``Laplace(Δ/ε2)`` noise; the partitions are disjoint, so this costs ``ε2``. The
   phases are chosen one after the other from earlier noisy outputs (adaptive
   sequential composition), so the release is (ε0 + ε1 + ε2) = ε-differentially private.
4. **Synthetic records.** The number of records m is the inverse-variance combination
   of n0 and the sum of the noisy partition counts (add/remove-one) or n (replace-one).
   :func:`allocate_counts` turns the noisy counts into whole counts summing to m, and
   each record is drawn inside its partition: in a cell chosen in proportion to the
   partition's phase-1 noisy cells clipped at zero (``placement="cells"``) or
   uniformly over the partition (``placement="uniform"``, the paper's assumption of
   uniformity inside a partition), then uniformly inside that cell. The rows are shuffled.

Both placements and the allocation only read noisy outputs: post-processing, free.
``partitioning="cell"`` is the paper's cell-based baseline: phase 1 alone (at the whole
budget left after phase 0), every cell its own partition.

Choices the sources leave open are named parameters with proposed defaults
(``docs/differential_privacy.md`` lists them with the reasons):

* ``bins="auto"`` sizes the grid from n0, the number of attributes and ε so it holds
  about ``n0·ε/(Δ·grid_density)`` cells (after the grid-size rule of Qardaji, Yang & Li,
  "Differentially private grids for geospatial data", ICDE 2013, which takes N·ε/c
  cells); numeric attributes get equal numbers of bins, differing by at most one.
* the kd-tree's uniformity test (Xiao et al. stop splitting a partition whose noisy
  cells look uniform): a box is split only when some single cut would reduce the
  squared error of its noisy cells by more than ``(split_threshold + 2·ln m)·σ²``, σ²
  the variance of one cell's noise and m the number of possible cuts, i.e. more than
  noise alone would explain.

Missing values are part of the domain: a categorical attribute with missing cells gets
one more value, "missing"; a numeric one gets a second dimension, whether the value is
missing (its missing cells are binned at the lower end of its domain). Their cells are
counted and noised like all others, so the synthetic records have missing cells at the
noisy rates. Which attributes have missing cells is read from the data, so it is reported
like a domain read from the data (the release is then not strictly differentially private).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.anonymize.base import Technique
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Real, SearchSpace
from ppdm.data.schema import Schema
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
    "kd_partition",
    "laplace_mechanism",
]


#: the value a missing categorical cell takes in the grid
MISSING = "\x00missing"
#: suffix of the dimension that says whether a numeric attribute is missing
_GAP = "\x00is_missing"


class DomainFromDataWarning(UserWarning):
    """Bounds or value sets were read from the private table, so the release is not ε-DP."""


class CoarseGridWarning(UserWarning):
    """The automatic grid gives some numeric attributes a single bin (released uniformly)."""


# ---------------------------------------------------------------- privacy accounting
@dataclass(frozen=True)
class PrivacyStep:
    """One use of the privacy budget.

    ``composition`` says why the step costs ``epsilon`` once although it answers many
    count queries (the queries are over disjoint cells: parallel composition).
    """

    name: str
    epsilon: float
    mechanism: str
    sensitivity: float
    noise_scale: float
    composition: str


def laplace_mechanism(
    values: np.ndarray, sensitivity: float, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """Add ``Laplace(0, sensitivity/epsilon)`` noise to every value (Dwork & Roth 2013, §3.3).

    ``epsilon = inf`` adds nothing (noise switched off, for tests and the no-privacy end
    of a sweep). The variance of the noise is ``2·(sensitivity/epsilon)²``.
    """
    vals = np.asarray(values, dtype=float)
    if math.isinf(epsilon):
        return vals.copy()
    scale = sensitivity / epsilon
    return vals + rng.laplace(0.0, scale, size=vals.shape)


# ------------------------------------------------------------------------------ grid
@dataclass
class GridDim:
    """One dimension of the cell grid.

    ``kind`` is ``numeric`` (equal-width bins with ``edges``), ``integer`` (bins are runs
    of whole numbers ``int_lo[k]..int_hi[k]``) or ``categorical`` (one cell per value of
    ``values``, in declared order).
    """

    name: str
    kind: Literal["numeric", "integer", "categorical"]
    n_bins: int
    edges: np.ndarray | None = None
    int_lo: np.ndarray | None = None
    int_hi: np.ndarray | None = None
    values: list | None = None

    def index(self, col: pd.Series) -> np.ndarray:
        """Cell index of every value; numeric values outside the bounds go to the edge bins."""
        if self.kind == "categorical":
            assert self.values is not None
            lookup = {v: i for i, v in enumerate(self.values)}
            out = np.fromiter((lookup.get(v, -1) for v in col.to_numpy(dtype=object)), dtype=np.int64, count=len(col))
            if (out < 0).any():
                raise SchemaError(f"column {self.name!r} holds a value that is not in its declared categories")
            return out
        v = col.to_numpy(dtype=float)
        ref = self.edges if self.kind == "numeric" else self.int_lo
        assert ref is not None
        idx = np.searchsorted(ref, v, side="right") - 1
        return np.clip(idx, 0, self.n_bins - 1).astype(np.int64)

    def sample(self, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One value per record, uniform over the cells ``lo..hi`` (inclusive) of this dimension."""
        u = rng.random(len(lo))
        if self.kind == "numeric":
            assert self.edges is not None
            a, b = self.edges[lo], self.edges[hi + 1]
            v = a + (b - a) * u
            # bins are half-open except the last: keep a draw off the upper edge of an inner bin
            inner = hi + 1 < self.n_bins
            v[inner] = np.minimum(v[inner], np.nextafter(b[inner], -np.inf))
            return np.maximum(v, a)
        if self.kind == "integer":
            assert self.int_lo is not None and self.int_hi is not None
            a, b = self.int_lo[lo], self.int_hi[hi]
            return np.minimum(a + np.floor(u * (b - a + 1)).astype(np.int64), b)
        assert self.values is not None
        i = np.minimum(lo + np.floor(u * (hi - lo + 1)).astype(np.int64), hi)
        vals = np.empty(len(self.values), dtype=object)
        vals[:] = self.values
        return vals[i]


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
    single cell, which add nothing: a table of many attributes with one bin each keeps
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

    def cell_indices(self, df: pd.DataFrame, *, active_only: bool = False) -> np.ndarray:
        """``(n, d)`` cell index of every record (``active_only``: of the dimensions with more than one cell)."""
        dims = [self.dims[j] for j in self.active] if active_only else self.dims
        if not dims:
            for d in self.dims:  # one-cell dimensions still check declared categories
                d.index(df[d.name])
            return np.zeros((len(df), 0), dtype=np.int64)
        if active_only:
            for j, d in enumerate(self.dims):
                if j not in self.active:
                    d.index(df[d.name])
        return np.stack([d.index(df[d.name]) for d in dims], axis=1)

    def histogram(self, df: pd.DataFrame) -> np.ndarray:
        """True cell counts, shape :attr:`array_shape`."""
        idx = self.cell_indices(df, active_only=True)
        shape = self.array_shape
        flat = np.ravel_multi_index(tuple(idx.T), shape) if shape else np.zeros(len(df), np.int64)
        return np.bincount(flat, minlength=self.n_cells).reshape(shape).astype(float)

    def expand(self, boxes: np.ndarray) -> np.ndarray:
        """Boxes over :attr:`array_shape` as boxes over every dimension (one-cell ones: ``[0, 0]``)."""
        full = np.zeros((len(boxes), len(self.dims), 2), dtype=boxes.dtype)  # int32 for one box per cell
        full[:, self.active, :] = boxes
        return full


@dataclass
class _Domain:
    """Declared (or data-derived) domain of every column the grid covers."""

    bounds: dict[str, tuple[float, float]]
    values: dict[str, list]
    integer: set[str]
    from_data: list[str]

    def capacity(self, col: str) -> int | None:
        """Most bins a numeric attribute can take (whole numbers in its bounds; 1 if its
        bounds are a single point); ``None`` when unlimited."""
        lo, hi = self.bounds[col]
        if col in self.integer:
            return max(0, math.floor(hi) - math.ceil(lo) + 1)
        return None if hi > lo else 1


def _resolve_domain(
    df: pd.DataFrame,
    schema: Schema,
    bounds: Mapping[str, Sequence[float]] | None,
    domains: Mapping[str, Sequence[Any]] | None,
) -> _Domain:
    """Every column's domain: the parameter, else the schema's declaration, else (numeric)
    the data's range or (categorical) pandas categories or the values seen — the last and
    the first-but-last being read from the data."""
    bounds = dict(bounds or {})
    domains = dict(domains or {})
    cols = schema.columns
    for c in bounds:
        if c not in schema.numeric:
            raise ParameterError(f"bounds names {c!r}, which is not a numeric attribute of the table")
    for c in domains:
        if c not in cols or c in schema.numeric:
            raise ParameterError(f"domains names {c!r}, which is not a categorical attribute or the class")
    out = _Domain({}, {}, set(), [])
    for c in cols:
        if c in schema.numeric:
            if c in bounds:
                lo, hi = (float(v) for v in bounds[c])
            elif c in schema.bounds:
                lo, hi = schema.bounds[c]
            else:
                vals = df[c].to_numpy(dtype=float)
                lo, hi = float(np.min(vals)), float(np.max(vals))
                out.from_data.append(c)
            if c in schema.integer or pd.api.types.is_integer_dtype(df[c]):
                out.integer.add(c)
                if math.floor(hi) < math.ceil(lo):
                    raise ParameterError(f"bounds of integer column {c!r} contain no whole number")
            out.bounds[c] = (lo, hi)
            continue
        s = df[c]
        if c in domains:
            values = list(domains[c])
        elif c in schema.categories:
            values = list(schema.categories[c])
        elif isinstance(s.dtype, pd.CategoricalDtype):
            values = list(s.cat.categories)  # declared with the dtype
        else:
            values = sorted(pd.unique(s.dropna()), key=lambda v: (type(v).__name__, v))
            out.from_data.append(c)
        if not values:
            raise ParameterError(f"the declared domain of {c!r} is empty")
        if len(set(values)) != len(values):
            raise ParameterError(f"the declared domain of {c!r} lists a value twice")
        if isinstance(s.dtype, pd.CategoricalDtype) and not set(values) <= set(s.cat.categories):
            raise SchemaError(f"the declared categories of {c!r} include values its pandas categories lack")
        out.values[c] = values
    return out


def auto_bins(n_hat: float, epsilon: float, sensitivity: float, caps: Sequence[int | None],
              fixed_cells: int, grid_density: float, max_cells: int) -> list[int]:
    """Bins per numeric attribute so the grid holds about ``n_hat·ε/(Δ·grid_density)`` cells
    (at most about ``n_hat``).

    A cell then holds ``grid_density·Δ/ε`` records on average, a fixed multiple of the
    phase-1 noise scale: the finer the grid, the more noise its partitions add up, so
    the grid grows with n and ε and not with the number of attributes (after Qardaji
    et al. 2013, who size a uniform grid to N·ε/c cells). ``fixed_cells`` is the product
    of the categorical and class domain sizes. Every attribute gets the same number of
    bins L, or L+1 for the first ones in table order, never more than its ``caps`` entry
    (whole numbers in an integer attribute's bounds); at least one bin each.
    """
    k = len(caps)
    if k == 0:
        return []
    # more cells than records add nothing a synthetic record could be drawn from: at most
    # about one cell per record (this also sizes the grid when the noise is off, ε = inf)
    share = min(1.0, epsilon / (sensitivity * grid_density))
    target = min(float(max_cells), max(1.0, n_hat) * share)
    budget = target / max(1, fixed_cells)
    cap = [c if c is not None else 10**12 for c in caps]

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
    for j in range(k):  # one more bin for the first attributes while the grid still fits
        if bins[j] < cap[j] and prod // bins[j] * (bins[j] + 1) <= budget:
            prod = prod // bins[j] * (bins[j] + 1)
            bins[j] += 1
    return [max(1, b) for b in bins]


def _make_grid(schema: Schema, dom: _Domain, bins: Mapping[str, int]) -> Grid:
    dims: list[GridDim] = []
    for c in schema.columns:
        if c in schema.numeric:
            lo, hi = dom.bounds[c]
            if c in dom.integer:
                ilo, ihi = math.ceil(lo), math.floor(hi)
                m = ihi - ilo + 1
                nb = min(bins[c], m)
                starts = ilo + (np.arange(nb, dtype=np.int64) * m) // nb
                ends = np.append(starts[1:] - 1, ihi)
                dims.append(GridDim(c, "integer", nb, int_lo=starts, int_hi=ends))
            else:
                nb = bins[c] if hi > lo else 1
                edges = lo + (hi - lo) * np.arange(nb + 1, dtype=float) / nb
                edges[-1] = hi
                dims.append(GridDim(c, "numeric", nb, edges=edges))
        else:
            values = dom.values[c]
            dims.append(GridDim(c, "categorical", len(values), values=values))
    return Grid(dims)


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
    sums = _SummedArea(noisy)
    clipped = _SummedArea(np.clip(noisy, 0.0, None)) if split == "median" else None
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


# ------------------------------------------------------------------------ technique
def _child_rng(rng: np.random.Generator, k: int) -> np.random.Generator:
    """Independent stream number ``k`` of ``rng`` (fit draws noise from 0, transform samples from 1)."""
    try:
        return rng.spawn(2)[k]
    except (TypeError, ValueError, AttributeError):  # a generator without a seed sequence
        return rng


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))


def _is_whole(v: Any) -> bool:
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
    the algorithm and ``docs/differential_privacy.md`` for the privacy accounting and
    the guarantee.

    Parameters
    ----------
    epsilon:
        Total privacy budget ε > 0 (``inf`` switches the noise off: not private).
    alpha:
        Fraction of the budget (after phase 0) spent on the phase-1 cell histogram that
        shapes the partition; the final partition counts get the rest. Strictly in (0, 1).
    partitioning:
        ``"kd"`` (two-phase kd-tree) or ``"cell"`` (the cell-based baseline).
    bins:
        ``"auto"`` (default): bins per numeric attribute from the (noisy) table size, the
        number of attributes and ε (:func:`auto_bins`). A whole number ≥ 1: that many
        equal-width bins for every numeric attribute (integer attributes: at most that
        many runs of whole numbers).
    grid_density:
        With ``bins="auto"``, the grid holds about ``n·ε/(Δ·grid_density)`` cells, i.e.
        ``grid_density·Δ/ε`` records per cell on average. Default 2 (proposed).
    max_depth:
        Deepest kd-tree level (root = 0); ``None`` = no limit. Must be ≥ 0.
    min_count:
        A box whose noisy phase-1 sum is ≤ this is not split; ``None`` means two noise
        scales, ``2·Δ/ε1``.
    split_threshold:
        The kd-tree's uniformity test: a box is split only when one cut would reduce the
        squared error of its noisy cells by more than ``(split_threshold + 2·ln m)·σ²``
        (σ² = 2·(Δ/ε1)², m possible cuts). Default 4 (proposed).
    split:
        ``"median"`` (weighted median of the noisy marginal) or ``"midpoint"``.
    split_dimension:
        Which dimension a kd-tree node cuts: ``"widest"`` (largest extent in cells, ties to
        the first column) or ``"class-first"`` (ppdm's extension beyond the paper: separate
        the class values first, then the widest).
    placement:
        Where a partition's records go: ``"cells"`` (default; a cell chosen in proportion
        to the partition's phase-1 noisy cells clipped at zero, then uniformly inside it)
        or ``"uniform"`` (uniformly over the partition, the paper's uniformity assumption).
    combine:
        Replace each partition's noisy count by the inverse-variance average of it and
        the sum of its phase-1 noisy cells (free post-processing; off by default).
    neighbouring:
        ``"add-remove"`` (default; count sensitivity Δ = 1; the table size is private, so
        the number of released records is a noisy count) or ``"replace"`` (Δ = 2, bounded
        DP: the table size n is public and the release has exactly n records).
    size_share:
        Under add/remove-one neighbours, the fraction of ε spent on the noisy table size
        (phase 0), in (0, 1). Default 0.05 (proposed).
    bounds:
        Public ``{column: (low, high)}`` of numeric attributes; overrides the schema's
        declared ``bounds``. Columns declared nowhere take their range from the data, with
        a :class:`DomainFromDataWarning`: the result is then not differentially private.
    domains:
        Public ``{column: [values...]}`` of categorical attributes and the class, in the
        order that makes their cell indices; overrides the schema's ``categories``. Left
        out: pandas categories, or the sorted values seen in the data (with a
        :class:`DomainFromDataWarning`).
    max_cells:
        Refuse grids with more cells than this (they grow exponentially with the
        number of attributes).

    Attributes (after ``fit``)
    --------------------------
    grid_, bins_, histogram_noisy_, partitions_, noisy_counts_, n_noisy_, n_rows_,
    privacy_report_ (a JSON-able dict), epsilon_spent_, partition_counts_.
    ``partition_counts_`` are the true counts, kept for diagnostics only; publish the
    synthetic table or ``noisy_counts_``, never them.

    Missing cells are modelled (module docstring): the release has missing cells at noisy rates.
    """

    handles_missing = True
    missing_policy = "modelled"
    #: the privacy budget ε (capped by a policy's ε line) and its split between the two phases
    search_space = SearchSpace({"epsilon": Real(0.01, 10.0, log=True), "alpha": Real(0.1, 0.9),
                                "partitioning": Choice(("kd", "cell"))}, epsilon="epsilon")
    # a value outside the public bounds goes to the edge bin (DP's clipping convention), never refused
    clips_to_declared_bounds = True

    def __init__(
        self,
        epsilon: float = 1.0,
        alpha: float = 0.5,
        partitioning: str = "kd",
        bins: int | str = "auto",
        grid_density: float = 2.0,
        max_depth: int | None = None,
        min_count: float | None = None,
        split_threshold: float = 4.0,
        split: str = "median",
        split_dimension: str = "widest",
        placement: str = "cells",
        combine: bool = False,
        neighbouring: str = "add-remove",
        size_share: float = 0.05,
        bounds: dict | None = None,
        domains: dict | None = None,
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
        self.max_depth = max_depth
        self.min_count = min_count
        self.split_threshold = split_threshold
        self.split = split
        self.split_dimension = split_dimension
        self.placement = placement
        self.combine = combine
        self.neighbouring = neighbouring
        self.size_share = size_share
        self.bounds = bounds
        self.domains = domains
        self.max_cells = max_cells
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state

    # ---------------------------------------------------------------- parameters
    def _validate_params(self) -> None:
        eps = self.epsilon
        if not _is_number(eps) or math.isnan(eps) or eps <= 0:
            raise ParameterError(f"epsilon must be a positive number (inf switches noise off), got {eps!r}")
        if not _is_number(self.alpha) or not 0.0 < self.alpha < 1.0:
            raise ParameterError(f"alpha (the budget fraction for the partitioning) must lie in (0, 1), got {self.alpha!r}")
        if self.partitioning not in ("kd", "cell"):
            raise ParameterError(f"partitioning must be 'kd' or 'cell', got {self.partitioning!r}")
        if not (self.bins == "auto" or (_is_whole(self.bins) and self.bins >= 1)):
            raise ParameterError(f"bins must be 'auto' or a whole number ≥ 1, got {self.bins!r}")
        gd = self.grid_density
        if not _is_number(gd) or not math.isfinite(gd) or gd <= 0:
            raise ParameterError(f"grid_density must be a finite number > 0, got {gd!r}")
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
        if not isinstance(self.combine, (bool, np.bool_)):
            raise ParameterError(f"combine must be True or False, got {self.combine!r}")
        if self.neighbouring not in ("add-remove", "replace"):
            raise ParameterError(f"neighbouring must be 'add-remove' or 'replace', got {self.neighbouring!r}")
        if not _is_number(self.size_share) or not 0.0 < self.size_share < 1.0:
            raise ParameterError(f"size_share (the budget fraction for the table size) must lie in (0, 1), "
                                 f"got {self.size_share!r}")
        if not _is_whole(self.max_cells) or self.max_cells < 1:
            raise ParameterError(f"max_cells must be a whole number ≥ 1, got {self.max_cells!r}")
        if self.bounds is not None:
            if not isinstance(self.bounds, Mapping):
                raise ParameterError(f"bounds must map column names to (low, high), got {self.bounds!r}")
            for c, b in self.bounds.items():
                ok = isinstance(b, (tuple, list, np.ndarray)) and len(b) == 2 and all(_is_number(v) for v in b)
                if not ok or not all(np.isfinite(b)) or b[0] > b[1]:
                    raise ParameterError(f"bounds of {c!r} must be two finite numbers low ≤ high, got {b!r}")
        if self.domains is not None:
            if not isinstance(self.domains, Mapping):
                raise ParameterError(f"domains must map column names to lists of values, got {self.domains!r}")
            for c, vals in self.domains.items():
                if isinstance(vals, (str, bytes)) or not isinstance(vals, Sequence | np.ndarray):
                    raise ParameterError(f"the domain of {c!r} must be a list of values, got {vals!r}")

    # ------------------------------------------------------------------ budget
    @property
    def sensitivity(self) -> float:
        """Δ of a count query: 1 for add/remove-one neighbours, 2 for replace-one."""
        return 2.0 if self.neighbouring == "replace" else 1.0

    def _budgets(self) -> tuple[float, float, float]:
        """(ε0 of the table size, ε1 of the phase-1 cell histogram, ε2 of the partition counts)."""
        eps = float(self.epsilon)
        e0 = self.size_share * eps if self.neighbouring == "add-remove" else 0.0
        rest = eps - e0 if not math.isinf(eps) else eps
        if self.partitioning == "cell":
            return e0, rest, 0.0
        return e0, self.alpha * rest, (1.0 - self.alpha) * rest

    def _keeps_rows(self) -> bool:
        # under add/remove-one neighbours the table size is private: the release has its own, noisy, size
        return self.neighbouring == "replace"

    # --------------------------------------------------------------------- fit
    # ------------------------------------------------------------ missing cells
    def _encode_missing(self, df: pd.DataFrame, schema: Schema, fitting: bool) -> tuple[pd.DataFrame, Schema]:
        """The table with its missing cells as grid values (see the module docstring)."""
        if fitting:
            gaps = [c for c in schema.attributes if df[c].isna().any()]
            self.missing_columns_ = gaps
            # a missing numeric cell is binned at the low end of the domain (its flag tells it apart)
            declared = {**schema.bounds, **dict(self.bounds or {})}
            self._gap_low = {c: float(declared[c][0]) if c in declared
                             else float(np.nanmin(df[c].to_numpy(dtype=float)))
                             for c in gaps if c in schema.numeric}
        gaps = self.missing_columns_
        if not gaps:
            return df, schema
        out = df.copy()
        flags = []
        for c in gaps:
            if c in schema.numeric:
                flag = c + _GAP
                miss = out[c].isna().to_numpy()
                out[c] = np.where(miss, self._gap_low[c], out[c].to_numpy(dtype=float))
                out[flag] = pd.Series(np.where(miss, "missing", "observed"), index=out.index, dtype=object)
                flags.append(flag)
            else:
                out[c] = out[c].astype(object).where(out[c].notna(), MISSING)
        sch = replace(schema, categorical=[*schema.categorical, *flags])
        return out, sch

    def _domains_with_missing(self, schema: Schema) -> dict | None:
        doms = dict(self.domains or {})
        for c in self.missing_columns_:
            if c in schema.numeric:
                doms[c + _GAP] = ["observed", "missing"]
            else:
                # a declared domain (domains= or the schema's categories) gains the value "missing"
                declared = list(doms[c]) if c in doms else list(schema.categories.get(c, []))
                if declared and MISSING not in declared:
                    doms[c] = [*declared, MISSING]
        return doms or self.domains

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        df, schema = self._encode_missing(df, schema, fitting=True)
        self._fit_encoded(df, schema, rng)

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        enc, sch = self._encode_missing(df, schema, fitting=False)
        out = self._transform_encoded(enc, sch, rng)
        for c in self.missing_columns_:
            if c in schema.numeric:
                flag = c + _GAP
                out[c] = np.where(out[flag].to_numpy(dtype=object) == "missing", np.nan, out[c].to_numpy(dtype=float))
                out = out.drop(columns=flag)
            else:
                vals = out[c].to_numpy(dtype=object)
                out[c] = pd.Series(np.where(vals == MISSING, np.nan, vals), index=out.index, dtype=object)
        return out

    def _fit_encoded(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        extra = [c for c in df.columns if c not in schema.columns]
        if extra:
            # every column is synthesized; one copied through would publish original values
            raise SchemaError(f"DPCube synthesizes every column, but {extra[0]!r} is not in the schema")
        dom = _resolve_domain(df, schema, self.bounds, self._domains_with_missing(schema))
        # which attributes have missing cells is read from the data, like a domain
        dom.from_data.extend(f"{c} (whether missing)" for c in self.missing_columns_)
        fixed = count_cells([len(dom.values[c]) for c in schema.columns if c not in schema.numeric])
        if fixed > self.max_cells:
            widest = max(dom.values, key=lambda c: len(dom.values[c]))
            raise ParameterError(
                f"the categorical attributes and the class alone make {_fmt_count(fixed)} cells, more than "
                f"max_cells={self.max_cells}; drop categorical attributes or merge their values "
                f"(largest: {widest!r} with {len(dom.values[widest])} values)"
            )
        noise_rng = _child_rng(rng, 0)
        delta = self.sensitivity
        e0, e1, e2 = self._budgets()
        n = len(df)
        steps: list[PrivacyStep] = []
        if self.neighbouring == "add-remove":
            n0 = float(laplace_mechanism(np.array([float(n)]), 1.0, e0, noise_rng)[0])
            steps.append(PrivacyStep("table size (phase 0)", e0, "Laplace", 1.0, _scale(1.0, e0),
                                     "one count query"))
        else:
            n0 = float(n)  # public under replace-one neighbours
        num = list(schema.numeric)
        if self.bins == "auto":
            caps = [dom.capacity(c) for c in num]
            per = auto_bins(n0, float(self.epsilon), delta, caps, fixed, float(self.grid_density), self.max_cells)
        else:
            per = [int(self.bins)] * len(num)
        grid = _make_grid(schema, dom, dict(zip(num, per, strict=True)))
        if grid.n_cells > self.max_cells:
            raise ParameterError(
                f"the grid has {_fmt_count(grid.n_cells)} cells ({self.bins} bins for each of {len(num)} numeric "
                f"attributes × {fixed} categorical/class cells), more than max_cells={self.max_cells}; use "
                "bins='auto' (sized from n, the attributes and ε), fewer bins, or fewer attributes"
            )
        if dom.from_data:  # after every refusal: warn only about a release that is made
            warnings.warn(
                f"DPCube read the domain of {_names(dom.from_data)} from the data, so the release is not "
                "differentially private; declare public bounds/categories (schema or bounds=/domains=)",
                DomainFromDataWarning,
                stacklevel=3,
            )
        single = [d.name for d in grid.dims if d.name in num and d.n_bins == 1 and dom.capacity(d.name) != 1]
        if self.bins == "auto" and single:
            warnings.warn(
                f"at this table size and ε = {self.epsilon:g}, DPCube's grid gives {len(single)} of the {len(num)} "
                "numeric attributes a single bin, so their values are drawn uniformly over their bounds; release "
                "fewer attributes or spend a larger ε to keep more of their structure",
                CoarseGridWarning,
                stacklevel=3,
            )
        hist = grid.histogram(df)
        noisy_hist = laplace_mechanism(hist, delta, e1, noise_rng)
        steps.append(PrivacyStep("cell histogram (phase 1)", e1, "Laplace", delta, _scale(delta, e1),
                                 "parallel over disjoint cells"))
        var1 = 0.0 if math.isinf(e1) else 2.0 * (delta / e1) ** 2
        if self.partitioning == "cell":
            boxes = _all_cells(grid.array_shape)
            true = hist.reshape(-1)
            noisy = noisy_hist.reshape(-1)
            var_sum = var1 * grid.n_cells
        else:
            min_count = self.min_count if self.min_count is not None else (
                0.0 if math.isinf(e1) else 2.0 * delta / e1)
            first: tuple[int, ...] = ()
            if self.split_dimension == "class-first" and schema.class_column is not None:
                j = grid.columns.index(schema.class_column)
                first = (grid.active.index(j),) if j in grid.active else ()
            boxes = kd_partition(
                noisy_hist, noise_var=var1, min_count=min_count, split_threshold=float(self.split_threshold),
                max_depth=self.max_depth, split=self.split,  # type: ignore[arg-type]
                first_dims=first,
            )
            true = box_sums(hist, boxes)
            noisy = laplace_mechanism(true, delta, e2, noise_rng)
            steps.append(PrivacyStep("partition counts (phase 2b)", e2, "Laplace", delta, _scale(delta, e2),
                                     "parallel over disjoint partitions"))
            var2 = 0.0 if math.isinf(e2) else 2.0 * (delta / e2) ** 2
            if self.combine and var2 > 0 and var1 > 0:
                var_b = box_volumes(boxes) * var1
                phase1 = box_sums(noisy_hist, boxes)
                noisy = (noisy / var2 + phase1 / var_b) / (1.0 / var2 + 1.0 / var_b)
                var2 = 1.0 / (1.0 / var2 + 1.0 / var_b.min())  # a bound: the sum's variance is no larger
            var_sum = var2 * len(boxes)
            self.min_count_ = float(min_count)
        if self.neighbouring == "add-remove":
            # inverse-variance combination of two noisy estimates of n (post-processing)
            var0 = 0.0 if math.isinf(e0) else 2.0 / e0**2
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
        self.grid_ = grid
        self.bins_ = {d.name: d.n_bins for d in grid.dims if d.name in num}
        self.histogram_noisy_ = noisy_hist  # over grid_.array_shape
        self._boxes = boxes  # over grid_.array_shape
        self.partitions_ = grid.expand(boxes)
        self.partition_counts_ = np.asarray(true, dtype=float)
        self.noisy_counts_ = np.asarray(noisy, dtype=float)
        self.privacy_steps_ = tuple(steps)
        self.epsilon_spent_ = float(sum(s.epsilon for s in steps))
        self.privacy_report_ = self._report(dom)

    def _report(self, dom: _Domain) -> dict[str, Any]:
        """What the release guarantees, as JSON-able data (embedded in the provenance sidecar)."""
        eps = float(self.epsilon)
        noise = not math.isinf(eps)
        private = noise and not dom.from_data
        seeded = self.random_state is not None
        relation = _RELATION[self.neighbouring]
        phases = [{**asdict(s), "epsilon": _json_float(s.epsilon), "noise_scale": _json_float(s.noise_scale)}
                  for s in self.privacy_steps_]
        assumptions = [
            "the declared bounds and categories are public and were not chosen by looking at the records",
            "the random draws are unpredictable to whoever sees the release"
            + (" (a fixed seed was used: the guarantee holds only while the seed stays secret)" if seeded else ""),
            "the noise is that of an ideal real-valued Laplace distribution (floating-point sampling effects are "
            "not accounted for)",
        ]
        if self.neighbouring == "replace":
            assumptions.append("the number of records n is public")
        if not noise:
            guarantee = "Not differentially private: epsilon=inf switches the noise off, so the release follows the data."
        elif dom.from_data:
            cols = _names(dom.from_data)
            guarantee = (
                f"Not ε-differentially private, because the domain of {cols} was read from the data (the release can "
                f"reveal its extreme values and categories); only the counts are protected by ε = {eps:g}."
            )
        else:
            guarantee = (
                f"The release is {eps:g}-differentially private for {relation}: any one person's record changes the "
                f"probability of any output by at most a factor e^{eps:g} ≈ {math.exp(eps):.3g}, assuming the declared "
                "domain is public and data-independent and the random draws"
                + (" (made from a fixed seed, which must stay secret)" if seeded else "")
                + " are unknown to the attacker."
            )
        return {
            "mechanism": "DPCube (Xiao, Xiong & Yuan 2010): noisy cell histogram, kd-tree partitioning, noisy "
                         "partition counts, synthetic records" if self.partitioning == "kd" else
                         "DPCube cell-based baseline (Xiao, Xiong & Yuan 2010): noisy cell histogram, synthetic records",
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
            "domain_from_data": bool(dom.from_data),
            "domain": {"declared": [c for c in [*dom.bounds, *dom.values] if c not in dom.from_data],
                       "from_data": list(dom.from_data)},
            "seeded": bool(seeded),
            "assumptions": assumptions,
            "guarantee": guarantee,
        }

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
        idx = self.grid_.cell_indices(X, active_only=True)
        return self._cell_to_partition()[tuple(idx.T)] if idx.shape[1] else np.zeros(len(X), np.int64)

    def allocate(self, n: int) -> np.ndarray:
        """How many synthetic records each partition gets in a release of ``n`` records."""
        return allocate_counts(self.noisy_counts_, n, box_volumes(self.partitions_))

    def _sample_cells(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``(m, d)`` cell of every record: ``counts[p]`` cells of partition p, each drawn in
        proportion to the partition's phase-1 noisy cells clipped at zero (uniformly when
        they are all zero)."""
        shape = self.grid_.array_shape
        part = self._cell_to_partition().reshape(-1)
        order = np.argsort(part, kind="stable")  # cells grouped by partition
        starts = np.searchsorted(part[order], np.arange(len(self.partitions_) + 1))
        w = np.clip(self.histogram_noisy_.reshape(-1), 0.0, None)[order]
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
        out = np.zeros((len(who), len(self.grid_.dims)), dtype=np.int64)
        out[:, self.grid_.active] = compact
        return out

    # -------------------------------------------------------------- transform
    def _transform_encoded(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        sample_rng = _child_rng(rng, 1)
        m = int(self.n_rows_) if self.neighbouring == "add-remove" else len(df)  # type: ignore[arg-type]
        counts = self.allocate(m)
        if self.placement == "cells":
            cells = self._sample_cells(counts, sample_rng)
            lo = hi = cells
        else:
            boxes = np.repeat(self.partitions_, counts, axis=0)
            lo, hi = boxes[:, :, 0], boxes[:, :, 1]
        cols: dict[str, Any] = {}
        for j, dim in enumerate(self.grid_.dims):
            vals = dim.sample(lo[:, j], hi[:, j], sample_rng)
            if dim.kind == "categorical":
                cols[dim.name] = pd.Series(vals, dtype=object).astype(df[dim.name].dtype)
            else:
                cols[dim.name] = vals
        out = pd.DataFrame(cols, index=pd.RangeIndex(m))[list(df.columns)]
        # shuffle so the row order does not reveal the partitions
        return out.iloc[sample_rng.permutation(m)].reset_index(drop=True)


def _names(cols: Sequence[str], most: int = 5) -> str:
    """Column names for a message, the first ``most`` of a long list."""
    shown = ", ".join(map(repr, cols[:most]))
    return shown if len(cols) <= most else f"{shown} and {len(cols) - most} more columns"


def _scale(sensitivity: float, epsilon: float) -> float:
    return 0.0 if math.isinf(epsilon) else sensitivity / epsilon


def _json_float(v: float) -> float | None:
    """A float for JSON: ``None`` stands for infinity (no noise), which JSON cannot hold."""
    return None if math.isinf(v) else float(v)
