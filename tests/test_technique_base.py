"""The Technique contract, checked on a minimal technique defined here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from ppdm.anonymize.base import Technique, check_whole, is_whole, restore_table
from ppdm.anonymize.registry import TECHNIQUES, make_technique, register
from ppdm.errors import ParameterError, SchemaError


class _Jitter(Technique):
    """Adds N(0, scale) to numeric attributes (test double)."""

    def __init__(self, class_column=None, schema=None, random_state=None, scale: float = 1.0) -> None:
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state
        self.scale = scale

    def _validate_params(self) -> None:
        if self.scale < 0:
            raise ParameterError("scale must be >= 0")

    def _transform(self, df, schema, rng):
        for c in schema.numeric:
            df[c] = df[c].to_numpy(dtype=float) + rng.normal(0, self.scale, len(df))
        return df


@pytest.fixture
def jitter_registered():
    register("test-jitter")(_Jitter)
    yield
    TECHNIQUES.pop("test-jitter", None)


def _table(n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "wage": rng.normal(10, 2, n),
            "job": rng.choice(["a", "b"], n),
            "y": rng.choice(["n", "y"], n),
        },
        index=pd.RangeIndex(100, 100 + n),
    )


def test_contract_rows_columns_dtypes_index_determinism():
    df = _table()
    z1 = _Jitter(class_column="y", random_state=3).fit_transform(df)
    z2 = _Jitter(class_column="y", random_state=3).fit_transform(df)
    assert list(z1.columns) == list(df.columns)
    assert (z1.dtypes == df.dtypes).all()
    assert z1.index.equals(df.index)
    pd.testing.assert_frame_equal(z1, z2)
    assert z1["y"].equals(df["y"])
    assert not z1["wage"].equals(df["wage"])


def test_get_params_and_clone():
    t = _Jitter(class_column="y", random_state=1, scale=2.0)
    assert t.get_params()["scale"] == 2.0
    c = clone(t)
    assert c.get_params() == t.get_params()


def test_errors_are_clear():
    df = _table()
    with pytest.raises(SchemaError, match="class column 'nope'"):
        _Jitter(class_column="nope").fit(df)
    with pytest.raises(ParameterError, match="scale"):
        _Jitter(scale=-1).fit(df)
    t = _Jitter(class_column="y").fit(df)
    with pytest.raises(SchemaError, match="differ from those seen in fit"):
        t.transform(df[["wage", "age", "job", "y"]])


def test_registry_rejects_unknown_names(jitter_registered):
    with pytest.raises(ParameterError, match="unknown technique 'nope'"):
        make_technique("nope")
    with pytest.raises(ParameterError, match="has no parameter 'sigma'.*scale"):
        make_technique("test-jitter", params={"sigma": 1})
    assert make_technique("test-jitter", params={"scale": 0.5}).scale == 0.5


def test_restore_table_rounds_integer_columns():
    like = pd.DataFrame({"a": np.array([1, 2], dtype=np.int32)})
    out = restore_table(pd.DataFrame({"a": [1.4, 2.6]}), like)
    assert out["a"].dtype == np.int32 and out["a"].tolist() == [1, 3]


def test_dask_transform_is_partitionwise_and_reproducible():
    dd = pytest.importorskip("dask.dataframe")
    df = _table(200)
    t = _Jitter(class_column="y", random_state=5).fit(df)
    ddf = dd.from_pandas(df, npartitions=4)
    a = t.transform(ddf).compute()
    b = t.transform(ddf).compute()
    pd.testing.assert_frame_equal(a, b)
    # dtypes as Dask holds them (it may store strings as Arrow strings)
    assert (a.dtypes == ddf.dtypes).all() and a.index.equals(df.index)
    assert a["y"].astype(str).tolist() == df["y"].astype(str).tolist()
    assert not a["wage"].equals(df["wage"])
    with pytest.raises(SchemaError, match="needs a pandas table"):
        _Jitter(class_column="y").fit(ddf)


class _Sample(Technique):
    """Releases ``m`` records drawn from the table (test double for a release with its own size)."""

    def __init__(self, class_column=None, schema=None, random_state=None, m: int = 3) -> None:
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state
        self.m = m

    def _keeps_rows(self) -> bool:
        return False

    def _transform(self, df, schema, rng):
        return df.iloc[rng.integers(0, len(df), self.m)].astype({"age": float})


def test_a_release_with_its_own_number_of_rows():
    df = _table()
    z = _Sample(class_column="y", m=7, random_state=1).fit_transform(df)
    # its own length, a fresh index, the table's columns and dtypes
    assert len(z) == 7 and z.index.equals(pd.RangeIndex(7))
    assert list(z.columns) == list(df.columns) and (z.dtypes == df.dtypes).all()
    # a technique that keeps rows still may not change their number
    with pytest.raises(AssertionError, match="number of rows"):
        restore_table(df.iloc[:3], df)
    dd = pytest.importorskip("dask.dataframe")
    with pytest.raises(ParameterError, match="own number of records"):
        _Sample(class_column="y").fit(df).transform(dd.from_pandas(df, npartitions=2))


def test_whole_number_check_refuses_bools_floats_and_small_values():
    # 3 and np.int64(3) are whole numbers ≥ 1; True is a bool, 3.0 a float, 0 below the bound
    assert is_whole(3, 1) and is_whole(np.int64(3), 1) and is_whole(0, 0)
    assert not is_whole(True, 0) and not is_whole(3.0, 1) and not is_whole(0, 1) and not is_whole("3", 1)
    check_whole("k", 2, 2)
    with pytest.raises(ParameterError, match=r"^k must be a whole number ≥ 2, got 1$"):
        check_whole("k", 1, 2)
    with pytest.raises(ParameterError, match=r"^min_leaf must be a whole number ≥ 1, got 2\.5$"):
        check_whole("min_leaf", 2.5)
