"""The Rounding technique: encodings, sizes, the transformer contract and the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from typer.testing import CliRunner

import ppdm.anonymize as anon
from ppdm.anonymize.rounding import (
    METHODS,
    Rounding,
    base_points,
    choose_base,
    encode_nearest,
    encode_stochastic,
)
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, SchemaError


def table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.exponential(12.5, n),
            "b": rng.integers(0, 1000, n),
            "u": rng.random(n),
            "cls": rng.choice(["p", "q", "r"], n),
        }
    )


# ------------------------------------------------------------------ worked examples
def test_encoding_examples() -> None:
    r = np.array([0.0, 10.0])  # Ex-1.2
    assert encode_nearest(np.array([3.0, 5.0, -4.0]), r).tolist() == [0, 10, 0]
    draws = encode_stochastic(np.full(20_000, 3.0), r, np.random.default_rng(0))
    assert (draws == 10).mean() == pytest.approx(0.3, abs=0.02)
    x = np.array([1, 3, 4, 7, 14.0])  # Ex-1.3
    assert base_points(x, 5).tolist() == [0, 5, 10]
    assert encode_nearest(x, base_points(x, 5)).tolist() == [0, 5, 5, 5, 10]
    b = choose_base(x, 2, 5.0)
    assert b == 10 and encode_nearest(x, base_points(x, b)).tolist() == [0, 0, 0, 10, 10]


def test_group_versus_nearest_encoding() -> None:
    df = pd.DataFrame({"x": [1, 2, 3, 10, 11, 12, 20.0]})  # Ex-1.5a
    cont = Schema(["x"])  # a continuous attribute (inferred, whole-valued x would be whole numbers)
    g = Rounding(method="mdav", k=3, encoding="group", schema=cont).fit_transform(df)["x"]
    assert g.tolist() == pytest.approx([4, 4, 4, 4, 43 / 3, 43 / 3, 43 / 3])
    t = Rounding(method="mdav", k=3, schema=cont)
    nr = t.fit_transform(df)["x"]
    assert nr.tolist() == pytest.approx([4, 4, 4, 43 / 3, 43 / 3, 43 / 3, 43 / 3])
    assert t.rounding_sets_["x"] == pytest.approx([4, 43 / 3])
    assert t.groups_["x"]["count"].tolist() == [4, 3]


def test_every_method_runs_and_keeps_the_contract() -> None:
    df = table()
    for m in METHODS:
        t = Rounding(class_column="cls", method=m, random_state=3)
        z = t.fit_transform(df)
        assert list(z.columns) == list(df.columns) and (z.dtypes == df.dtypes).all()
        assert z.index.equals(df.index) and z["cls"].equals(df["cls"])
        assert set(t.rounding_sets_) == {"a", "b", "u"}
        # every output value of a float column is a rounding point
        assert set(np.unique(z["a"])) <= set(t.rounding_sets_["a"])
        assert z.equals(clone(t).fit_transform(df)), m  # same seed, same output
        assert t.get_params() == clone(t).get_params()


def test_sizes_and_fd() -> None:
    df = table(500)
    t = Rounding(method="optimal", c=3).fit(df.drop(columns="cls"))
    assert t.sizes_["a"]["k"] == 167
    t = Rounding(method="equal-frequency", k=100).fit(df.drop(columns="cls"))
    assert t.sizes_["a"]["c"] == 5 and len(t.rounding_sets_["a"]) == 5
    t = Rounding(method="mdav", k="fd").fit(df.drop(columns="cls"))
    assert t.sizes_["a"]["rule"] == "fd"


@settings(max_examples=40)
@given(st.integers(5, 80), st.integers(1, 6), st.sampled_from(["mdav", "vmdav", "optimal"]), st.integers(0, 999))
def test_group_encoding_keeps_k_anonymity(n: int, k: int, method: str, seed: int) -> None:
    x = np.random.default_rng(seed).normal(size=n)
    z = Rounding(method=method, k=min(k, n), encoding="group").fit_transform(pd.DataFrame({"x": x}))["x"]
    assert z.value_counts().min() >= min(k, n)


def test_lazy_class_attributes() -> None:
    assert anon.Rounding is Rounding
    assert anon.MDAV.method_name == "mdav"
    with pytest.raises(AttributeError):
        anon.NoSuchTechnique  # noqa: B018


@pytest.mark.parametrize(
    "params",
    [{"k": 0}, {"k": 61}, {"c": 1}, {"method": "bogus"}, {"encoding": "up"}, {"k": 3, "c": 4},
     {"method": "base", "k": 3}, {"b": -1.0, "method": "base"}, {"k": 2.5}, {"columns": ["cls"]}],
)
def test_impossible_parameters(params: dict) -> None:
    with pytest.raises(ParameterError):
        Rounding(class_column="cls", **params).fit(table())


def test_supervised_needs_the_class() -> None:
    with pytest.raises(SchemaError):
        Rounding(method="mdlp").fit(table().drop(columns="cls"))


# ------------------------------------------------------------------------------- CLI
def test_cli_rounding_and_mdav(tmp_path: Path) -> None:
    from ppdm.cli.app import app

    runner = CliRunner()
    out = tmp_path / "r.csv"
    res = runner.invoke(app, ["anonymize", "builtin:wine", "--method", "rounding", "--param", "method=optimal",
                              "--param", "k=20", "--out", str(out)])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(out)
    assert z["alcohol"].nunique() <= 178 // 20
    out2 = tmp_path / "m.csv"
    res = runner.invoke(app, ["anonymize", "builtin:wine", "--method", "mdav", "--param", "k=3", "--out", str(out2)])
    assert res.exit_code == 0, res.output
    for bad in (["method=rounding_nope"], ["k=0"], ["c=1"], ["k=1000"]):
        res = runner.invoke(app, ["anonymize", "builtin:wine", "--method", "rounding",
                                  *sum((["--param", b] for b in bad), []), "--out", str(tmp_path / "bad.csv")])
        assert res.exit_code == 2, (bad, res.output)
    assert not (tmp_path / "bad.csv").exists()


def test_cli_exit_code_two(tmp_path: Path) -> None:
    from ppdm.cli.app import app

    # in process (the exit code comes from the command group; test_cli_shell runs the real entry point)
    runner = CliRunner()
    bad = tmp_path / "bad.csv"
    for params in (["--param", "k=0"], ["--param", "method=nope"]):
        res = runner.invoke(app, ["anonymize", "builtin:wine", "--method", "rounding", *params, "--out", str(bad)])
        assert res.exit_code == 2, res.output
    res = runner.invoke(app, ["anonymize", "builtin:wine", "--method", "mdav", "--param", "k=0", "--out", str(bad)])
    assert res.exit_code == 2 and not bad.exists()
