"""Blocked MDAV over a Dask DataFrame (``MDAV.transform`` of a Dask table).

A partition of a table is usually a slice of its rows in file order, so every partition
spreads over the whole attribute space: MDAV inside each partition would group every record
with neighbours drawn from a tenth (for ten partitions) of the table, and at p = 5 that costs
about 2.5× the SSE of MDAV over the whole table. The records are therefore first put in a
global order:

1. one pass over the partitions counts their rows, the column moments (the weights of the
   distance, over the whole table) and the records in every cell of the ordering learnt in
   ``fit`` (:class:`~ppdm.anonymize._mdav.CellTree`);
2. every record gets the key (cell, row position) and the table is shuffled into partitions
   of consecutive keys, cut where the counts of pass 1 say (so each holds at least
   max(n / partitions, block_size, k) records, the last one possibly up to half more);
3. each sorted partition is cut into blocks and aggregated as
   :func:`~ppdm.anonymize.microaggregation.mdav_blocked` does, with the weights of step 1;
4. the centroids are shuffled back by row position to the partitions the rows came from.

Groups never cross a sorted partition, and sorted partitions follow cells, which are boxes of
the attribute space, so they cost little beyond the block borders. The result has the input's
rows, index, columns and dtypes, partition by partition (empty input partitions are dropped).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from ppdm.anonymize._domain import DomainGuard, technique_name
from ppdm.anonymize._mdav import POSITION_BITS, group_means, kd_blocks, labels_in_blocks
from ppdm.anonymize.base import restore_table
from ppdm.data.types import working_frame
from ppdm.errors import ParameterError, PPDMError
from ppdm.utils import check_choice, check_k


@njit(cache=True)
def _greedy_cuts(sizes: np.ndarray, target: int) -> np.ndarray:
    # indices of the segments that start a new partition: one starts once the current holds ≥ target
    out = np.empty(sizes.size, np.int64)
    n_out = 0
    acc = 0
    for j in range(sizes.size):
        if acc >= target:
            out[n_out] = j
            n_out += 1
            acc = 0
        acc += sizes[j]
    return out[:n_out]


def _weights(stats: list[tuple], scaling: str) -> np.ndarray:
    """Distance weights of the whole table from per-partition moments (as ``mdav_weights``)."""
    p = stats[0][1].size
    if scaling == "none":
        return np.ones(p)
    n = sum(s[0] for s in stats)
    if scaling == "sdcmicro":
        avr = sum(s[1] for s in stats) / n
        var = sum(s[2] for s in stats) / n - avr * avr
    else:
        # sample variance from partition means and squared deviations (Chan et al.'s pairwise update)
        cnt, mean, m2 = 0, np.zeros(p), np.zeros(p)
        for n_i, _, _, mean_i, m2_i, _ in stats:
            if n_i == 0:
                continue
            delta = mean_i - mean
            tot = cnt + n_i
            mean = mean + delta * n_i / tot
            m2 = m2 + m2_i + delta * delta * cnt * n_i / tot
            cnt = tot
        var = m2 / (n - 1) if n > 1 else np.zeros(p)
    w = np.ones(p)
    nz = var != 0
    w[nz] = 1.0 / var[nz]
    return w


def mdav_dask(tech: Any, ddf: Any) -> Any:
    """The blocked MDAV release of the Dask table ``ddf`` by the fitted ``MDAV`` ``tech`` (module docstring)."""
    import dask
    import dask.dataframe as dd

    cols = list(tech.columns_)
    schema = tech.schema_
    cells = tech.cells_
    k = int(tech.k)
    block_size = int(tech.block_size)
    scaling = check_choice(tech.scaling, ("standard", "sdcmicro", "none"), "scaling")
    # the powers of two of fit (grouping_scale): huge or tiny attributes are grouped scaled
    scale = np.asarray(getattr(tech, "scale_", np.ones(len(cols))), dtype=float)
    missing = "keep" if tech.handles_missing else "error"
    vcols = [f"v{j}" for j in range(len(cols))]  # internal names: no clash with the table's

    def summary(pdf: pd.DataFrame) -> tuple:
        p = len(cols)
        if len(pdf) == 0:
            return 0, np.zeros(p), np.zeros(p), np.zeros(p), np.zeros(p), np.zeros(cells.n_cells, np.int64)
        pdf, _ = schema.validate(pdf, missing=missing)
        X = working_frame(pdf, cols)[cols].to_numpy(dtype=float) * scale
        if np.isnan(X).any():
            # the global ordering needs every value; a partitioned release keeps missing cells
            raise PPDMError("MDAV over a Dask table needs complete numeric attributes; drop the incomplete "
                            "records, or release the table with ppdm anonymize (groups within partitions)")
        mean = X.mean(axis=0)
        return (len(X), X.sum(axis=0), (X * X).sum(axis=0), mean, ((X - mean) ** 2).sum(axis=0),
                np.bincount(cells.cell(X), minlength=cells.n_cells))

    stats = list(dask.compute(*[dask.delayed(summary)(part) for part in ddf.to_delayed()]))
    lengths = np.array([s[0] for s in stats], dtype=np.int64)
    n = int(lengths.sum())
    check_k(k, n)
    w = _weights(stats, scaling)
    offsets = np.r_[0, np.cumsum(lengths)]
    nonempty = np.flatnonzero(lengths > 0)
    if nonempty.size < lengths.size:
        ddf = ddf.partitions[list(nonempty)]
    starts = offsets[nonempty]

    # sorted partitions: segments (cell c, input partition i) in key order, cut greedily
    counts = np.stack([stats[i][5] for i in nonempty], axis=1)  # cells × partitions
    seg_cell, seg_part = np.nonzero(counts)  # row-major: cell first, then partition, i.e. key order
    sizes = counts[seg_cell, seg_part]
    target = max(-(-n // nonempty.size), min(block_size, n), k)
    cuts = _greedy_cuts(sizes, target)
    if cuts.size and sizes[cuts[-1]:].sum() < max(k, target // 2):
        cuts = cuts[:-1]  # a short last partition joins the one before
    keys = (seg_cell[cuts].astype(np.int64) << POSITION_BITS) | starts[seg_part[cuts]]
    divisions = [0, *keys.tolist(), int(cells.n_cells) << POSITION_BITS]

    def keyed(pdf: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
        X = working_frame(pdf, cols)[cols].to_numpy(dtype=float) * scale
        start = int(starts[0 if partition_info is None else partition_info["number"]])
        key = (cells.cell(X) << POSITION_BITS) | np.arange(start, start + len(X), dtype=np.int64)
        out = pd.DataFrame(X, columns=vcols)
        out["key"] = key
        return out

    meta_keyed = pd.DataFrame({**{c: pd.Series(dtype=float) for c in vcols}, "key": pd.Series(dtype=np.int64)})
    by_key = ddf.map_partitions(keyed, meta=meta_keyed).set_index("key", divisions=divisions)

    def aggregate(pdf: pd.DataFrame) -> pd.DataFrame:
        pos = pdf.index.to_numpy(dtype=np.int64) & ((1 << POSITION_BITS) - 1)
        order = np.argsort(pos, kind="stable")  # rows in table order: the order of the tie rules
        X = np.ascontiguousarray(pdf.to_numpy(dtype=float)[order])
        out = pd.DataFrame(X, columns=vcols)
        out["pos"] = pos[order]
        if len(X) == 0:
            return out
        if len(X) < k:  # cannot happen with the cuts above unless the table changed between passes
            raise ParameterError(f"a sorted partition holds {len(X)} records, fewer than k={k}")
        labels = labels_in_blocks(X, w, k, scaling == "sdcmicro", kd_blocks(X, w, block_size))
        out[vcols] = group_means(X, labels)[labels]
        return out

    meta_agg = pd.DataFrame({**{c: pd.Series(dtype=float) for c in vcols}, "pos": pd.Series(dtype=np.int64)})
    back = by_key.map_partitions(aggregate, meta=meta_agg).set_index(
        "pos", divisions=[*starts.tolist(), n - 1]
    )

    def combine(orig: pd.DataFrame, agg: pd.DataFrame) -> pd.DataFrame:
        df, _ = schema.validate(orig, missing=missing)
        agg = agg.sort_index()
        if len(agg) != len(df):
            raise AssertionError("MDAV lost rows while shuffling them back")
        out = working_frame(df, cols).copy()
        vals = agg[vcols].to_numpy() / scale
        keep = DomainGuard(tech.value_domains_, out, technique_name(tech))
        for j, c in enumerate(cols):
            out[c] = keep(c, vals[:, j])  # whole-number attributes get whole centroids
        return restore_table(out, df, schema)

    return dd.map_partitions(combine, ddf, back, meta=ddf._meta, align_dataframes=False)
