"""Differentially private synthetic data by multidimensional partitioning (DPCube).

Paper 000 §7.2/§8.4 anonymizes the Banknotes dataset with the technique of Xiao, Xiong
& Yuan (2010, "Differentially private data release through multidimensional
partitioning", LNCS 6358, reference [4] of paper 000): the domain is partitioned into
disjoint sub-domains, the number of records in each is released through a noisy
count query (Laplace noise whose size depends on the privacy budget ε), and new
records are generated inside each sub-domain.

:class:`DPCube` follows the two-phase kd-tree form of that technique:

1. **Cell histogram (phase 1).** The (attributes × class) domain is cut into a grid:
   ``bins`` equal-width bins on the public bounds of every numeric attribute, one
   cell per value of every categorical attribute and of the class. Every cell count,
   empty cells included, gets ``Laplace(Δ/(α·ε))`` noise. The cells are disjoint, so
   by parallel composition this step costs ``α·ε``.
2. **kd-tree on the noisy grid (phase 2a).** :func:`kd_partition` splits the grid
   recursively reading the noisy histogram only, so it is post-processing and costs
   nothing.
3. **Noisy partition counts (phase 2b).** Each final partition's true count gets
   ``Laplace(Δ/((1−α)·ε))`` noise; the partitions are disjoint, so this costs
   ``(1−α)·ε``, and the release is ε-differentially private by sequential
   composition.
4. **Synthetic records.** The noisy counts become exactly ``n`` records
   (:func:`allocate_counts`: negatives clipped to zero, rescaled to ``n``, rounded by
   largest remainder) and each record is drawn uniformly inside its partition:
   numeric values uniformly over the covered interval, integer attributes over the
   covered whole numbers, categorical values (and the class) uniformly over the
   covered values. The rows are shuffled.

``partitioning="cell"`` is the paper's cell-based baseline: phase 1 alone at the full
ε, every cell its own partition.

Missing values are part of the domain: a categorical attribute with missing cells gets
one more value, "missing"; a numeric one gets a second dimension, whether the value is
missing (its missing cells are binned at the lower end of its domain). Their cells are
counted and noised like all others, so the synthetic records have missing cells at the
noisy rates; which attributes have missing cells is read from the data (reported like a
domain read from the data).

The step from noisy counts to exactly ``n`` records treats ``n`` as public (the
technique contract keeps the number of rows). Under add/remove-one neighbouring the
size of a table is itself private; with ``neighbouring="replace"`` (bounded
differential privacy, sensitivity 2) ``n`` is public by definition.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.anonymize.base import Technique
from ppdm.anonymize.registry import register
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, SchemaError

__all__ = [
    "DPCube",
    "DomainFromDataWarning",
    "Grid",
    "GridDim",
    "PrivacyReport",
    "PrivacyStep",
    "allocate_counts",
    "box_sums",
    "kd_partition",
    "laplace_mechanism",
]


#: the value a missing categorical cell takes in the grid
MISSING = "\x00missing"
#: suffix of the dimension that says whether a numeric attribute is missing
_GAP = "\x00is_missing"


class DomainFromDataWarning(UserWarning):
    """Bounds or value sets were read from the private table, so the release is not strictly DP."""


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
    scale: float
    composition: str


@dataclass(frozen=True)
class PrivacyReport:
    """The budget spent by one :meth:`DPCube.fit`, step by step (sequential composition)."""

    steps: tuple[PrivacyStep, ...]
    neighbouring: str
    public_domain: bool  # False when bounds or value sets were read from the data

    @property
    def epsilon_spent(self) -> float:
        """Total ε: steps compose sequentially, so their budgets add up."""
        return float(sum(s.epsilon for s in self.steps))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([s.__dict__ for s in self.steps])


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
                bad = col.to_numpy(dtype=object)[out < 0][0]
                raise SchemaError(f"column {self.name!r} holds {bad!r}, which is not in its declared domain")
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


@dataclass
class Grid:
    """The cell grid over (attributes × class): one :class:`GridDim` per column."""

    dims: list[GridDim]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.n_bins for d in self.dims)

    @property
    def n_cells(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.dims else 1

    @property
    def columns(self) -> list[str]:
        return [d.name for d in self.dims]

    def cell_indices(self, df: pd.DataFrame) -> np.ndarray:
        """``(n, d)`` cell index of every record."""
        if not self.dims:
            return np.zeros((len(df), 0), dtype=np.int64)
        return np.stack([d.index(df[d.name]) for d in self.dims], axis=1)

    def histogram(self, df: pd.DataFrame) -> np.ndarray:
        """True cell counts, shape :attr:`shape`."""
        idx = self.cell_indices(df)
        flat = np.ravel_multi_index(tuple(idx.T), self.shape) if self.dims else np.zeros(len(df), np.int64)
        return np.bincount(flat, minlength=self.n_cells).reshape(self.shape).astype(float)


def _build_grid(
    df: pd.DataFrame,
    schema: Schema,
    bins: int,
    bounds: Mapping[str, Sequence[float]] | None,
    domains: Mapping[str, Sequence[Any]] | None,
) -> tuple[Grid, list[str]]:
    """Grid over the schema's attributes and class; also the columns whose domain came from ``df``."""
    bounds = dict(bounds or {})
    domains = dict(domains or {})
    cols = schema.columns
    for c in bounds:
        if c not in schema.numeric:
            raise ParameterError(f"bounds names {c!r}, which is not a numeric attribute of the table")
    for c in domains:
        if c not in cols or c in schema.numeric:
            raise ParameterError(f"domains names {c!r}, which is not a categorical attribute or the class")
    from_data: list[str] = []
    dims: list[GridDim] = []
    for c in cols:
        if c in schema.numeric:
            if c in bounds:
                lo, hi = (float(v) for v in bounds[c])
            else:
                vals = df[c].to_numpy(dtype=float)
                lo, hi = float(np.min(vals)), float(np.max(vals))
                from_data.append(c)
            if c in schema.integer or pd.api.types.is_integer_dtype(df[c]):
                ilo, ihi = math.ceil(lo), math.floor(hi)
                if ihi < ilo:
                    raise ParameterError(f"bounds of integer column {c!r} contain no whole number")
                m = ihi - ilo + 1
                nb = min(bins, m)
                starts = ilo + (np.arange(nb, dtype=np.int64) * m) // nb
                ends = np.append(starts[1:] - 1, ihi)
                dims.append(GridDim(c, "integer", nb, int_lo=starts, int_hi=ends))
            else:
                nb = bins if hi > lo else 1
                edges = lo + (hi - lo) * np.arange(nb + 1, dtype=float) / nb
                edges[-1] = hi
                dims.append(GridDim(c, "numeric", nb, edges=edges))
        else:
            if c in domains:
                values = list(domains[c])
            else:
                s = df[c]
                if isinstance(s.dtype, pd.CategoricalDtype):
                    values = list(s.cat.categories)
                else:
                    values = sorted(pd.unique(s.dropna()), key=lambda v: (type(v).__name__, v))
                    from_data.append(c)
            if not values:
                raise ParameterError(f"the declared domain of {c!r} is empty")
            if len(set(values)) != len(values):
                raise ParameterError(f"the declared domain of {c!r} lists a value twice")
            dims.append(GridDim(c, "categorical", len(values), values=values))
    return Grid(dims), from_data


# -------------------------------------------------------------------------- kd-tree
def kd_partition(
    noisy: np.ndarray,
    *,
    min_count: float,
    uniformity_threshold: float,
    max_depth: int | None = None,
    split: Literal["median", "midpoint"] = "median",
    first_dims: Sequence[int] = (),
) -> np.ndarray:
    """Partition a (noisy) cell histogram into disjoint boxes with a kd-tree.

    Reads ``noisy`` only, so building the tree on a DP histogram costs no budget
    (post-processing). A box stops splitting when every extent is 1, when its noisy sum
    is ≤ ``min_count``, when it is "uniform" (the variance of its noisy cell counts is
    ≤ ``uniformity_threshold``), or at depth ``max_depth``. Otherwise the dimension with
    the largest extent (ties: lowest index) is cut at the weighted median of the box's
    noisy marginal clipped at zero (``split="median"``; the midpoint when that marginal
    is all zero) or at the midpoint (``split="midpoint"``); both halves stay non-empty.
    Dimensions listed in ``first_dims`` are split before any other while their extent
    exceeds 1 (``DPCube(split_dimension="class-first")`` puts the class there).

    Returns an ``int64`` array of shape ``(P, d, 2)``: inclusive low/high cell index of
    every box per dimension, in depth-first order (left before right).
    """
    noisy = np.asarray(noisy, dtype=float)
    shape = noisy.shape
    d = noisy.ndim
    root = np.stack([np.zeros(d, np.int64), np.asarray(shape, np.int64) - 1], axis=1)
    out: list[np.ndarray] = []
    stack: list[tuple[np.ndarray, int]] = [(root, 0)]
    while stack:
        box, depth = stack.pop()
        ext = box[:, 1] - box[:, 0] + 1
        if d == 0 or np.all(ext == 1) or (max_depth is not None and depth >= max_depth):
            out.append(box)
            continue
        sub = noisy[tuple(slice(int(a), int(b) + 1) for a, b in box)]
        if sub.sum() <= min_count or sub.var() <= uniformity_threshold:
            out.append(box)
            continue
        early = [i for i in first_dims if ext[i] > 1]
        # argmax takes the first maximum: ties go to the lowest index
        dim = int(early[0]) if early else int(np.argmax(ext))
        n_ext = int(ext[dim])
        if split == "median":
            other = tuple(i for i in range(d) if i != dim)
            marg = np.clip(sub, 0.0, None).sum(axis=other) if other else np.clip(sub, 0.0, None)
            cum = np.cumsum(marg)
            if cum[-1] > 0:
                s = int(np.searchsorted(cum, cum[-1] / 2.0, side="left"))
            else:
                s = n_ext // 2 - 1
        else:
            s = n_ext // 2 - 1
        s = min(max(s, 0), n_ext - 2)  # left keeps cells 0..s of the box, right the rest
        left, right = box.copy(), box.copy()
        left[dim, 1] = box[dim, 0] + s
        right[dim, 0] = box[dim, 0] + s + 1
        stack.append((right, depth + 1))
        stack.append((left, depth + 1))
    return np.stack(out) if out else np.zeros((0, d, 2), np.int64)


def _all_cells(shape: tuple[int, ...]) -> np.ndarray:
    """One box per cell, in C order (the cell-based baseline); int32 keeps large grids small."""
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
    return np.prod(boxes[:, :, 1] - boxes[:, :, 0] + 1, axis=1) if boxes.shape[1] else np.ones(len(boxes), np.int64)


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


@register("dpcube")
class DPCube(Technique):
    """Differentially private synthetic data by multidimensional partitioning (Xiao, Xiong & Yuan 2010).

    Paper 000 §7.2/§8.4 releases a DP version of Banknotes with this technique and
    sweeps the privacy budget ε from 1.0 down to 0.001. See the module docstring for
    the algorithm and ``docs/differential_privacy.md`` for the privacy accounting.

    Parameters
    ----------
    epsilon:
        Total privacy budget ε > 0 (``inf`` switches the noise off).
    alpha:
        Fraction of ε spent on the phase-1 cell histogram that shapes the partition;
        the counts of the final partitions get ``(1 − alpha)·ε``. Strictly in (0, 1).
        0.5 is a proposed default (the 2010 paper leaves it to the user).
    partitioning:
        ``"kd"`` (two-phase kd-tree) or ``"cell"`` (the cell-based baseline at full ε).
    bins:
        Equal-width bins per numeric attribute (integer attributes: at most this many
        runs of whole numbers). Default 10 (proposed).
    max_depth:
        Deepest kd-tree level (root = 0); ``None`` = no limit. Must be ≥ 0.
    min_count:
        A box whose noisy phase-1 sum is ≤ this is not split; ``None`` means
        ``2/(alpha·epsilon)`` (proposed: two noise scales).
    uniformity_threshold:
        A box whose noisy cell counts have variance ≤ this is "uniform" and not split;
        ``None`` means ``2·Var(Laplace) = 4·(Δ/(alpha·epsilon))²`` (proposed).
    split:
        ``"median"`` (weighted median of the noisy marginal) or ``"midpoint"``.
    split_dimension:
        Which dimension a kd-tree node cuts: ``"widest"`` (largest extent in cells, ties to
        the first column; proposed default) or ``"class-first"`` (separate the class
        values first, then the widest), so every partition holds one class.
    combine:
        Replace each partition's noisy count by the inverse-variance average of it and
        the sum of its phase-1 noisy cells (free post-processing; off by default).
    neighbouring:
        ``"add-remove"`` (count sensitivity Δ = 1) or ``"replace"`` (Δ = 2, bounded DP,
        the table size n is public).
    bounds:
        Public ``{column: (low, high)}`` of numeric attributes. Columns left out take
        their bounds from the data, with a :class:`DomainFromDataWarning`: the result is
        then not strictly differentially private.
    domains:
        Public ``{column: [values...]}`` of categorical attributes and the class, in the
        order that makes their cell indices. Left out: pandas categories, or the sorted
        values seen in the data (with a :class:`DomainFromDataWarning`).
    max_cells:
        Refuse grids with more cells than this (they grow exponentially with the
        number of attributes).

    Attributes (after ``fit``)
    --------------------------
    grid_, histogram_noisy_, partitions_, noisy_counts_, partition_counts_,
    privacy_report_, epsilon_spent_.
    ``partition_counts_`` are the true counts, kept for diagnostics only; publish the
    synthetic table or ``noisy_counts_``, never them.

    Missing cells are modelled (module docstring): the release has missing cells at noisy rates.
    """

    handles_missing = True
    missing_policy = "modelled"

    def __init__(
        self,
        epsilon: float = 1.0,
        alpha: float = 0.5,
        partitioning: str = "kd",
        bins: int = 10,
        max_depth: int | None = None,
        min_count: float | None = None,
        uniformity_threshold: float | None = None,
        split: str = "median",
        split_dimension: str = "widest",
        combine: bool = False,
        neighbouring: str = "add-remove",
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
        self.max_depth = max_depth
        self.min_count = min_count
        self.uniformity_threshold = uniformity_threshold
        self.split = split
        self.split_dimension = split_dimension
        self.combine = combine
        self.neighbouring = neighbouring
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
        if isinstance(self.bins, bool) or not isinstance(self.bins, (int, np.integer)) or self.bins < 1:
            raise ParameterError(f"bins must be a whole number ≥ 1, got {self.bins!r}")
        md = self.max_depth
        if md is not None and (isinstance(md, bool) or not isinstance(md, (int, np.integer)) or md < 0):
            raise ParameterError(f"max_depth must be None or a whole number ≥ 0, got {md!r}")
        for name in ("min_count", "uniformity_threshold"):
            v = getattr(self, name)
            if v is not None and (not _is_number(v) or not np.isfinite(v) or v < 0):
                raise ParameterError(f"{name} must be None or a finite number ≥ 0, got {v!r}")
        if self.split not in ("median", "midpoint"):
            raise ParameterError(f"split must be 'median' or 'midpoint', got {self.split!r}")
        if self.split_dimension not in ("widest", "class-first"):
            raise ParameterError(f"split_dimension must be 'widest' or 'class-first', got {self.split_dimension!r}")
        if not isinstance(self.combine, (bool, np.bool_)):
            raise ParameterError(f"combine must be True or False, got {self.combine!r}")
        if self.neighbouring not in ("add-remove", "replace"):
            raise ParameterError(f"neighbouring must be 'add-remove' or 'replace', got {self.neighbouring!r}")
        if isinstance(self.max_cells, bool) or not isinstance(self.max_cells, (int, np.integer)) or self.max_cells < 1:
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

    def _budgets(self) -> tuple[float, float]:
        """(ε of the phase-1 cell histogram, ε of the final partition counts)."""
        eps = float(self.epsilon)
        if self.partitioning == "cell":
            return eps, 0.0
        return self.alpha * eps, (1.0 - self.alpha) * eps

    # --------------------------------------------------------------------- fit
    # ------------------------------------------------------------ missing cells
    def _encode_missing(self, df: pd.DataFrame, schema: Schema, fitting: bool) -> tuple[pd.DataFrame, Schema]:
        """The table with its missing cells as grid values (see the module docstring)."""
        if fitting:
            gaps = [c for c in schema.attributes if df[c].isna().any()]
            self.missing_columns_ = gaps
            # a missing numeric cell is binned at the low end of the domain (its flag tells it apart)
            self._gap_low = {c: float((self.bounds or {})[c][0]) if c in (self.bounds or {})
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
            elif c in doms and MISSING not in list(doms[c]):
                doms[c] = [*doms[c], MISSING]
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
        grid, from_data = _build_grid(df, schema, int(self.bins), self.bounds, self._domains_with_missing(schema))
        from_data += [f"whether {c!r} is missing" for c in self.missing_columns_]
        if grid.n_cells > self.max_cells:
            raise ParameterError(
                f"the grid has {grid.n_cells} cells, more than max_cells={self.max_cells}; use fewer bins or attributes"
            )
        if from_data:
            warnings.warn(
                f"DPCube read the domain of {', '.join(map(repr, from_data))} from the data; pass public "
                "bounds=/domains= for a strictly differentially private release",
                DomainFromDataWarning,
                stacklevel=3,
            )
        noise_rng = _child_rng(rng, 0)
        delta = self.sensitivity
        eps1, eps2 = self._budgets()
        hist = grid.histogram(df)
        noisy_hist = laplace_mechanism(hist, delta, eps1, noise_rng)
        steps = [
            PrivacyStep(
                "cell histogram (phase 1)", eps1, "Laplace", delta,
                0.0 if math.isinf(eps1) else delta / eps1, "parallel over disjoint cells",
            )
        ]
        if self.partitioning == "cell":
            boxes = _all_cells(grid.shape)
            true = hist.reshape(-1)
            noisy = noisy_hist.reshape(-1)
        else:
            var_lap = 0.0 if math.isinf(eps1) else 2.0 * (delta / eps1) ** 2
            min_count = self.min_count if self.min_count is not None else (
                0.0 if math.isinf(eps1) else 2.0 / eps1)
            first = ()
            if self.split_dimension == "class-first" and schema.class_column is not None:
                first = (grid.columns.index(schema.class_column),)
            unif = self.uniformity_threshold if self.uniformity_threshold is not None else 2.0 * var_lap
            boxes = kd_partition(
                noisy_hist, min_count=min_count, uniformity_threshold=unif,
                max_depth=self.max_depth, split=self.split,  # type: ignore[arg-type]
                first_dims=first,
            )
            true = box_sums(hist, boxes)
            noisy = laplace_mechanism(true, delta, eps2, noise_rng)
            steps.append(
                PrivacyStep(
                    "partition counts (phase 2b)", eps2, "Laplace", delta,
                    0.0 if math.isinf(eps2) else delta / eps2, "parallel over disjoint partitions",
                )
            )
            if self.combine and not math.isinf(eps2):
                var_a = 2.0 * (delta / eps2) ** 2
                var_b = box_volumes(boxes) * var_lap
                phase1 = box_sums(noisy_hist, boxes)
                noisy = (noisy / var_a + phase1 / var_b) / (1.0 / var_a + 1.0 / var_b)
            self.min_count_ = float(min_count)
            self.uniformity_threshold_ = float(unif)
        self.grid_ = grid
        self.histogram_noisy_ = noisy_hist
        self.partitions_ = boxes
        self.partition_counts_ = np.asarray(true, dtype=float)
        self.noisy_counts_ = np.asarray(noisy, dtype=float)
        self.privacy_report_ = PrivacyReport(tuple(steps), self.neighbouring, public_domain=not from_data)
        self.epsilon_spent_ = self.privacy_report_.epsilon_spent

    # --------------------------------------------------------------- helpers
    def _cell_to_partition(self) -> np.ndarray:
        """Partition id of every cell of the grid (the boxes tile it)."""
        ids = np.full(self.grid_.shape, -1, dtype=np.int64)
        for p, box in enumerate(self.partitions_):
            ids[tuple(slice(int(a), int(b) + 1) for a, b in box)] = p
        return ids

    def partition_index(self, X: pd.DataFrame) -> np.ndarray:
        """The partition every record of ``X`` falls in (index into :attr:`partitions_`)."""
        idx = self.grid_.cell_indices(X)
        return self._cell_to_partition()[tuple(idx.T)] if idx.shape[1] else np.zeros(len(X), np.int64)

    def allocate(self, n: int) -> np.ndarray:
        """How many synthetic records each partition gets in a table of ``n`` rows."""
        return allocate_counts(self.noisy_counts_, n, box_volumes(self.partitions_))

    # -------------------------------------------------------------- transform
    def _transform_encoded(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        sample_rng = _child_rng(rng, 1)
        n = len(df)
        counts = self.allocate(n)
        boxes = np.repeat(self.partitions_, counts, axis=0)
        out = df.copy()
        for j, dim in enumerate(self.grid_.dims):
            vals = dim.sample(boxes[:, j, 0], boxes[:, j, 1], sample_rng)
            if dim.kind == "categorical":
                out[dim.name] = pd.Series(vals, index=df.index, dtype=object).astype(df[dim.name].dtype)
            else:
                out[dim.name] = vals
        # shuffle so the row order does not reveal the partitions
        perm = sample_rng.permutation(n)
        out = out.iloc[perm]
        out.index = df.index
        return out
