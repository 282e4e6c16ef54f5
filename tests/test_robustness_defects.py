"""Designed cases that used to break ppdm: huge magnitudes, ``--param x=none``, signals during a
write, decimal commas, names that look like identifiers, raw library messages, and measures
that could not give a number or gave a useless one (docs/robustness.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app

runner = CliRunner()


def _huge_table(n: int = 300, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Four correlated attributes near 1e200 and a release with noise of the same order."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, n)
    x = pd.DataFrame({"a": a * 1e200, "b": (a + rng.normal(0, 0.3, n)) * 1e200, "c": rng.normal(0, 1, n) * 1e200,
                      "d": rng.normal(0, 1, n) * 3e200, "label": rng.choice(["x", "y"], n)})
    z = x.copy()
    for c in "abcd":
        z[c] = z[c] + rng.normal(0, 0.3, n) * 1e200
    return x, z


def _files(tmp_path: Path, x: pd.DataFrame, z: pd.DataFrame) -> tuple[Path, Path]:
    px, pz = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(px, index=False)
    z.to_csv(pz, index=False)
    return px, pz


def _evaluate(px: Path, pz: Path, measures: str, *extra: str) -> dict[str, Any]:
    res = runner.invoke(app, ["evaluate", "-x", str(px), "-z", str(pz), "--class", "label", "--measures", measures,
                              "--json", "--seed", "1", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["measures"]


# ------------------------------------------------------------------ huge magnitudes
def test_spectral_filtering_near_1e200_is_computed_and_does_not_abort_all(tmp_path: Path) -> None:
    # it used to exit 1 with "LinAlgError: Eigenvalues did not converge", and so did --measures all
    px, pz = _files(tmp_path, *_huge_table())
    m = _evaluate(px, pz, "spectral_filtering")["spectral_filtering"]
    assert m["status"] == "computed" and 0.0 <= m["value"] <= 1.0
    everything = _evaluate(px, pz, "all")
    assert everything["spectral_filtering"]["status"] == "computed"
    for name, out in everything.items():
        # every measure gives a number or says why not: none is "computed" without one
        assert (out["status"] == "computed") == (out["value"] is not None), (name, out)
        if out["status"] == "skipped":
            assert out["reason"], name


def test_sse_sst_near_1e200_gives_the_value_of_the_scaled_table(tmp_path: Path) -> None:
    # it used to report "computed" with value null and no reason
    from ppdm.metrics import sse_sst

    x, z = _huge_table()
    px, pz = _files(tmp_path, x, z)
    m = _evaluate(px, pz, "sse_sst", "-p", "standardize=none")["sse_sst"]
    cols = list("abcd")
    scaled = sse_sst(x[cols] / 2.0**664, z[cols] / 2.0**664).value
    assert m["status"] == "computed" and m["value"] == pytest.approx(scaled, rel=1e-12)
    assert sse_sst(x[cols], z[cols], standardize="zscore").value == pytest.approx(
        sse_sst(x[cols] / 1e200, z[cols] / 1e200, standardize="zscore").value, rel=1e-12)


def test_a_measure_without_a_finite_value_is_skipped_with_the_reason() -> None:
    from ppdm.data.schema import Schema
    from ppdm.experiments.evaluation import run_measure
    from ppdm.metrics.base import EvaluationContext, MeasureResult, MeasureSpec

    df = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    ctx = EvaluationContext(x=df, z=df, schema=Schema.infer(df))
    for bad in (math.nan, math.inf, None):
        spec = MeasureSpec("odd", lambda c, v=bad: MeasureResult(v), "utility", "", needs_class=False)
        out = run_measure(spec, ctx)
        assert out.skipped and "no finite value" in out.reason, out.reason
    good = run_measure(MeasureSpec("fine", lambda c: MeasureResult(0.5), "utility", "", needs_class=False), ctx)
    assert not good.skipped and good.value == 0.5


def test_mdav_on_huge_magnitudes_groups_as_on_the_scaled_table(tmp_path: Path) -> None:
    # it used to refuse with "weights must be 6 positive finite numbers" though no weights were given
    from ppdm.anonymize.microaggregation import MDAV, mdav, mdav_weights

    x, _ = _huge_table(n=120)
    cols = list("abcd")
    small = x.copy()
    small[cols] = small[cols] / 2.0**665
    for scaling in ("standard", "sdcmicro", "none"):
        big_labels = mdav(x[cols].to_numpy(), 3, scaling)
        np.testing.assert_array_equal(big_labels, mdav(small[cols].to_numpy(), 3, scaling))
        zb = MDAV(k=3, scaling=scaling, class_column="label").fit_transform(x)
        zs = MDAV(k=3, scaling=scaling, class_column="label").fit_transform(small)
        np.testing.assert_array_equal(zb[cols].to_numpy() / 2.0**665, zs[cols].to_numpy())
        assert np.isfinite(zb[cols].to_numpy()).all()
    # the centroids of values near the largest double do not overflow either
    top = x.copy()
    top[cols] = x[cols] / 1e200 * 1e307
    assert np.isfinite(MDAV(k=3, class_column="label").fit_transform(top)[cols].to_numpy()).all()
    # weights asked for directly on such values name the real problem
    from ppdm.errors import ParameterError

    with pytest.raises(ParameterError, match="attribute 0 holds values up to .* too large or too small"):
        mdav_weights(x[cols].to_numpy() * 1e100, "standard")
    px = tmp_path / "x.csv"
    x.to_csv(px, index=False)
    res = runner.invoke(app, ["anonymize", str(px), "--class", "label", "-m", "mdav", "-o", str(tmp_path / "z.csv"),
                              "--seed", "1"])
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------ --param x=none
@pytest.mark.parametrize(("method", "param"), [("mdav", "scaling"), ("framework", "class_mode")])
def test_none_is_the_text_none_where_that_is_a_choice(tmp_path: Path, method: str, param: str) -> None:
    rng = np.random.default_rng(0)
    n = 80
    x = pd.DataFrame({"a": rng.normal(10, 2, n).round(3), "b": rng.normal(0, 1, n).round(3),
                      "label": rng.choice(["yes", "no"], n)})
    px = tmp_path / "x.csv"
    x.to_csv(px, index=False)
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", str(px), "--class", "label", "-m", method, "-p", f"{param}=none",
                              "-o", str(out), "--seed", "3"])
    assert res.exit_code == 0, res.output
    prov = json.loads((tmp_path / "z.provenance.json").read_text())
    assert prov["technique"]["parameters"][param] == "none"
    if method == "framework":  # class_mode none: the class is released as it was
        assert pd.read_csv(out)["label"].tolist() == x["label"].tolist()


def test_standardize_none_for_sse_sst_and_ddr(tmp_path: Path) -> None:
    from ppdm.metrics import ddr, sse_sst

    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.normal(0, 1, 50), "b": rng.normal(5, 3, 50), "label": ["p", "q"] * 25})
    z = x.copy()
    z[["a", "b"]] += rng.normal(0, 0.2, (50, 2))
    px, pz = _files(tmp_path, x, z)
    got = _evaluate(px, pz, "sse_sst,ddr", "-p", "standardize=none")
    assert got["sse_sst"]["value"] == pytest.approx(sse_sst(x[["a", "b"]], z[["a", "b"]], standardize="none").value)
    assert got["sse_sst"]["details"]["standardize"] == "none"
    assert got["ddr"]["value"] == pytest.approx(ddr(x[["a", "b"]], z[["a", "b"]], standardize="none").value)
    # in Python, None says "no standardisation" too
    assert sse_sst(x[["a", "b"]], z[["a", "b"]], standardize=None).standardize == "none"  # type: ignore[arg-type]
