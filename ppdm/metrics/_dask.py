"""Partition-wise reductions over a pair of dask DataFrames.

Column-wise SDC measures only need sums over records (counts, sums, sums of
squared deviations, sums of absolute differences). For tables that do not fit in
one machine's memory the original and masked dask frames are walked partition by
partition in step, each pair reduced to a few per-column sums, and the sums added.
The two frames must be partitioned alike (same number of partitions, same number
of rows in each), which is what splitting one table the same way gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ppdm.errors import SchemaError
from ppdm.metrics._common import numeric_matrix


def _pair_apply(a: Any, b: Any, names: list[str], fn: Callable[[np.ndarray, np.ndarray], Any], measure: str) -> Any:
    X = numeric_matrix(a, names, label="original", measure=measure)
    Z = numeric_matrix(b, names, label="masked", measure=measure)
    if X.shape[0] != Z.shape[0]:
        raise SchemaError(
            f"{measure}: a partition of the original has {X.shape[0]} rows and the matching "
            f"partition of the masked table {Z.shape[0]}; partition both tables alike"
        )
    return fn(X, Z)


def reduce_pairs(
    x: Any, z: Any, names: list[str], fn: Callable[[np.ndarray, np.ndarray], Any], *, measure: str
) -> list[Any]:
    """``fn(X_part, Z_part)`` for every aligned partition pair, computed by dask."""
    import dask

    for label, df in (("original", x), ("masked", z)):
        absent = [c for c in names if c not in df.columns]
        if absent:
            raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, absent))} not in the {label} table")
    xs = x[names].to_delayed()
    zs = z[names].to_delayed()
    if len(xs) != len(zs):
        raise SchemaError(
            f"{measure}: the original has {len(xs)} partitions and the masked table {len(zs)}; "
            "partition both tables alike"
        )
    parts = [dask.delayed(_pair_apply)(a, b, names, fn, measure) for a, b in zip(xs, zs, strict=True)]
    return list(dask.compute(*parts))


def count_and_sums(
    x: Any, z: Any, names: list[str], *, side: Literal["original", "masked"] = "original", measure: str
) -> tuple[Any, np.ndarray]:
    """Number of records and column sums of one side of the pair: the first pass of the
    two-pass means and standard deviations the column-wise measures need."""
    if side == "original":
        return add(reduce_pairs(x, z, names, lambda X, Z: (X.shape[0], X.sum(0)), measure=measure))
    return add(reduce_pairs(x, z, names, lambda X, Z: (X.shape[0], Z.sum(0)), measure=measure))


def add(parts: list[Any]) -> Any:
    """Element-wise sum of per-partition results (tuples of arrays/scalars)."""
    total = parts[0]
    for p in parts[1:]:
        total = tuple(np.add(t, q) for t, q in zip(total, p, strict=True))
    return total
