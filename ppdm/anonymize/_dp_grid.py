"""DPCube's cell grid: its dimensions, how a record finds its cell, and how big it gets.

Part of :mod:`ppdm.anonymize.differential_privacy` (Xiao, Xiong & Yuan 2010; paper 000
§7.2): the grid over (attributes × class) whose cells get the phase-1 noisy counts. It
reads no record by itself: the technique passes it encoded records and the budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

#: the grid value of a missing cell of a categorical attribute declared ``nullable``
MISSING = "\x00missing"
#: the grid value of a category outside the declared set (``unknown="other"``)
OTHER = "\x00other"
#: suffix of the dimension that says whether a numeric attribute declared ``nullable`` is missing
_GAP = "\x00is_missing"


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

    def sample(self, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator, centre: bool = False) -> np.ndarray:
        """One value per record, uniform over the cells ``lo..hi`` (inclusive) of this
        dimension (categorical: codes into ``values``). ``centre``: numbers at the centre of
        that range (whole numbers rounded down) instead; categorical codes stay uniform."""
        u = rng.random(len(lo))
        if self.kind == "numeric":
            assert self.edges is not None
            a, b = self.edges[lo], self.edges[hi + 1]
            if self.support is not None:
                a, b = _within(a, b, self.support)
            if centre:
                return a + (b - a) / 2.0
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
            if centre:
                return (a + b) // 2
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


def _value_label(v: Any) -> Any:
    """A grid value for JSON and messages: the sentinels by name, NumPy scalars as Python ones."""
    if v is MISSING or v == MISSING:
        return "(missing)"
    if v is OTHER or v == OTHER:
        return "(other)"
    return v.item() if isinstance(v, np.generic) else v



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

