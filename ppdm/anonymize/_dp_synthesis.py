"""DPCube's synthesis: record counts per partition, cells inside them, and values inside cells.

Part of :mod:`ppdm.anonymize.differential_privacy` (phase 3). It reads the noisy outputs
of the fit only, so it is post-processing and costs no privacy budget.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize._dp_domain import _Declared
from ppdm.anonymize._dp_grid import _GAP, MISSING, OTHER, Grid
from ppdm.anonymize._dp_partition import box_volumes
from ppdm.anonymize._dp_phases import _child_rng
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError


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



class _Synthesis(_Declared):
    """The transform of a fitted DPCube: synthetic records drawn inside its partitions."""

    grid_: Grid
    histogram_noisy_: np.ndarray
    noisy_counts_: np.ndarray
    partitions_: np.ndarray
    n_rows_: int | None
    values_: str
    _boxes: np.ndarray

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
        # values_ (see DPCube's values=): numbers at the centre of their cell's range, all of them
        # ("center") or those of attributes with a single cell ("center-unbinned")
        at = getattr(self, "values_", "uniform")
        for j, dim in enumerate(self.grid_.dims):
            centre = at == "center" or (at == "center-unbinned" and dim.kind != "categorical" and dim.n_bins == 1)
            raw[dim.name] = dim.sample(lo[:, j], hi[:, j], rng, centre=centre)
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
