"""The column-wise measures give the pandas result on dask DataFrames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdm.errors import SchemaError
from ppdm.metrics.info_loss import il1s, sse_sst
from ppdm.metrics.risk import idr

dd = pytest.importorskip("dask.dataframe")


def _pair(n: int = 300):
    rng = np.random.default_rng(11)
    x = pd.DataFrame(rng.normal(50, 10, size=(n, 3)), columns=["a", "b", "c"])
    z = x + rng.normal(0, 1.0, size=x.shape)
    return x, z


def test_dask_equals_pandas():
    x, z = _pair()
    dx, dz = dd.from_pandas(x, npartitions=4), dd.from_pandas(z, npartitions=4)
    for form in ("sum", "mean"):
        assert il1s(dx, dz, form=form).value == pytest.approx(il1s(x, z, form=form).value, rel=1e-12)
    for st in ("none", "zscore"):
        assert sse_sst(dx, dz, standardize=st).value == pytest.approx(sse_sst(x, z, standardize=st).value, rel=1e-12)
    for rule in ("all", "legacy"):
        for k in (0.05, 0.2):
            assert idr(dx, dz, k, rule=rule).value == pytest.approx(idr(x, z, k, rule=rule).value, abs=1e-15)
    assert il1s(dx, dz, columns=["b"]).value == pytest.approx(il1s(x, z, columns=["b"]).value, rel=1e-12)


def test_dask_misaligned_partitions_are_refused():
    x, z = _pair()
    with pytest.raises(SchemaError, match="partition"):
        il1s(dd.from_pandas(x, npartitions=3), dd.from_pandas(z, npartitions=5))
