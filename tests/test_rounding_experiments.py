"""Paper 003 reproduction pipeline, run with small hand-written IL/DR measures injected."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression
from typer.testing import CliRunner

from ppdm.anonymize.rounding import Rounding
from ppdm.errors import PPDMError
from ppdm.experiments.rounding import (
    Setup,
    mean_abs_correlation,
    regression_table,
    run_rounding,
    shannon_entropy,
    synthetic,
    total_entropy,
    write_tables,
)


@dataclass
class R:
    value: float


def il_metrics(x: pd.DataFrame, z: pd.DataFrame) -> R:
    """100 × mean of the five Domingo-Ferrer–Torra components (spec §2.1), zero denominators skipped."""
    X, Z = x.to_numpy(float), z.to_numpy(float)
    nz = X != 0
    il_x = np.mean(np.abs(X - Z)[nz] / np.abs(X[nz]))
    mx, mz = X.mean(0), Z.mean(0)
    il_m = np.mean(np.abs(mx - mz)[mx != 0] / np.abs(mx[mx != 0]))
    V, W = np.cov(X, rowvar=False), np.cov(Z, rowvar=False)
    iu = np.triu_indices_from(V)
    ok = V[iu] != 0
    il_v = np.mean(np.abs(V[iu] - W[iu])[ok] / np.abs(V[iu][ok]))
    il_s = np.mean(np.abs(np.diag(V) - np.diag(W)) / np.diag(V))
    with np.errstate(invalid="ignore", divide="ignore"):  # a column made constant has no correlation (NaN)
        r, rz = np.corrcoef(X, rowvar=False), np.corrcoef(Z, rowvar=False)
    off = np.triu_indices_from(r, k=1)
    il_r = np.mean(np.abs(r[off] - rz[off]))
    return R(100 * (il_x + il_m + il_v + il_s + il_r) / 5)


def il1s(x: pd.DataFrame, z: pd.DataFrame) -> R:
    X, Z = x.to_numpy(float), z.to_numpy(float)
    return R(float((np.abs(X - Z) / (np.sqrt(2) * X.std(0, ddof=1))).sum()))


def idr(x: pd.DataFrame, z: pd.DataFrame) -> R:
    X, Z = x.to_numpy(float), z.to_numpy(float)
    h = 0.05 * Z.std(0, ddof=1)
    return R(float(((X >= Z - h) & (X <= Z + h)).all(1).mean()))


def ddr(x: pd.DataFrame, z: pd.DataFrame) -> R:
    X, Z = x.to_numpy(float), z.to_numpy(float)
    zs = (X - X.mean(0)) / X.std(0, ddof=1)
    ms = (Z - Z.mean(0)) / np.where(Z.std(0, ddof=1) > 0, Z.std(0, ddof=1), 1)
    d = ((ms[:, None, :] - zs[None, :, :]) ** 2).sum(2)
    return R(float((d.argmin(1) == np.arange(len(X))).mean()))


def il_dr_score(x: pd.DataFrame, z: pd.DataFrame) -> R:
    return R(0.25 * (il_metrics(x, z).value + il1s(x, z).value + ddr(x, z).value + idr(x, z).value))


MEASURES = {"il_metrics": il_metrics, "il1s": il1s, "idr": idr, "ddr": ddr, "il_dr_score": il_dr_score}


def test_hand_measures_on_spec_example() -> None:
    x = pd.DataFrame([[1, 4], [2, 2], [3, 8], [4, 6]], dtype=float)  # Ex-2
    z = pd.DataFrame([[1.5, 3], [1.5, 3], [3.5, 7], [3.5, 7]])
    assert il_metrics(x, z).value == pytest.approx(22.0972, abs=1e-4)
    assert il1s(x, z).value == pytest.approx(2.190890, abs=1e-6)


def test_entropy_and_correlation_helpers() -> None:
    assert shannon_entropy([2, 2, 5, 5]) == pytest.approx(1.0)
    assert shannon_entropy([2, 2, 2, 5]) == pytest.approx(0.811278, abs=1e-6)
    assert total_entropy(pd.DataFrame({"a": [2, 2, 5, 5], "b": [1, 1, 1, 1]})) == pytest.approx(1.0)
    df = pd.DataFrame({"a": [1, 2, 3, 4.0], "b": [2, 4, 6, 8.0], "c": [4, 3, 2, 1.0]})
    assert mean_abs_correlation(df) == pytest.approx(1.0)


def test_synthetic_setup() -> None:
    e = synthetic("exponential", seed=1)
    assert e.shape == (500, 2) and e.to_numpy().min() >= 0
    assert e.to_numpy().mean() == pytest.approx(12.5, rel=0.1)
    u = synthetic("uniform")
    assert 0 <= u.to_numpy().min() and u.to_numpy().max() <= 1
    with pytest.raises(PPDMError):
        synthetic("cauchy")


def test_regression_example_from_spec() -> None:
    # Ex-4: x = 1..10, y = 2x, EFD with c = 2 on both → points {3, 8} and {6, 16}: slope 2, MSE 0
    df = pd.DataFrame({"x": np.arange(1, 11.0), "y": 2 * np.arange(1, 11.0)})
    z = Rounding(method="equal-frequency", c=2).fit_transform(df)
    lr = LinearRegression().fit(z[["x"]], z["y"])
    assert lr.coef_[0] == pytest.approx(2) and lr.intercept_ == pytest.approx(0, abs=1e-9)
    assert np.mean((lr.predict(df[["x"]]) - df["y"]) ** 2) == pytest.approx(0, abs=1e-18)


def test_boston_original_row_matches_paper() -> None:
    t = regression_table(MEASURES, Setup(ml_k=(), ml_c=()))
    orig = t.iloc[0]
    assert orig["MSE"] == pytest.approx(21.89, abs=0.01)  # paper 003 Table 7
    assert orig["R2"] == pytest.approx(0.74, abs=0.005)
    # the paper prints 0.46; no plain variant gives it (off-diagonal mean 0.39, full matrix 0.44)
    assert orig["Mean absolute correlation"] == pytest.approx(0.3948, abs=1e-4)


def test_quick_reproduction_writes_all_tables(tmp_path: Path) -> None:
    seen: list[str] = []
    setup = Setup.quick(advance=seen.append)
    tables = run_rounding(setup, MEASURES)
    assert len(seen) == setup.steps()
    assert [f"table{i}" for i in range(1, 9)] == [k for k in tables if k.startswith("table")]
    t1 = tables["table1"]
    assert list(t1.columns) == ["method", "k", "IL metrics", "IL1s", "IDR", "DDR", "IL-DR score"]
    assert len(t1) == 3 * 2 and t1["method"].str.endswith("exponential").all()
    assert np.allclose(t1["IL-DR score"], 0.25 * t1[["IL metrics", "IL1s", "IDR", "DDR"]].sum(axis=1))
    # larger groups lose more information (IL1s) in every microaggregation method
    for _, g in t1.groupby("method"):
        assert g.sort_values("k")["IL1s"].is_monotonic_increasing
    t8 = tables["table8"]
    assert {"MDLP", "ChiM", "Original model"} <= set(t8["method"])
    assert t8["Entropy"].iloc[0] > t8["Entropy"].iloc[1:].max() - 1e-9
    assert tables["trends"].shape[0] > 0
    files = write_tables(tables, tmp_path / "out")
    assert (tmp_path / "out" / "table7.csv").exists() and (tmp_path / "out" / "tables.md").exists()
    assert len(files) == 2 * len(tables) + 1
    assert "| method |" in (tmp_path / "out" / "table1.md").read_text()


def test_missing_measure_is_an_error() -> None:
    with pytest.raises(PPDMError):
        run_rounding(Setup.quick(), {"il1s": il1s})


def test_reproduce_cli_rejects_unknown_paper(tmp_path: Path) -> None:
    from ppdm.cli.app import app

    res = CliRunner().invoke(app, ["reproduce", "nope", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no reproduction named 'nope'" in res.output
    assert not (tmp_path / "o").exists()
