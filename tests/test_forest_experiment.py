"""Paper 004 Fig. 2 experiment, run small with CART learners."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.errors import ParameterError
from ppdm.experiments.forest_framework import PAPER_MIN_LEAF, run_forest_experiment


def test_small_experiment_with_cart_learners():
    res = run_forest_experiment(["wine", "cmc"], folds=2, repeats=2, learner="cart", progress=False,
                                min_leaf={"cmc": 100})
    assert list(res.summary.index) == ["wine", "cmc"]
    assert list(res.summary.columns) == ["Original", "FF", "F", "GADP", "RT"]
    runs = res.runs
    assert len(runs) == 2 * 2 * (1 + 4 * 2)
    assert runs["accuracy"].between(0, 1).all()
    # the summary is the mean over folds of the per-fold mean over repetitions, in percent
    wine_ff = runs[(runs.dataset == "wine") & (runs.technique == "FF")].groupby("fold")["accuracy"].mean().mean()
    assert res.summary.loc["wine", "FF"] == pytest.approx(100 * wine_ff)
    # forests from the original wine data predict far better than chance
    assert res.summary.loc["wine", "Original"] > 80
    assert "| wine |" in res.to_markdown()
    assert PAPER_MIN_LEAF == {"wine": 10, "wbc": 45, "credit": 30, "cmc": 60, "abalone": 180}


def test_experiment_is_seeded_and_checks_arguments():
    a = run_forest_experiment(["wine"], folds=2, repeats=1, learner="cart", techniques=["FF", "RT"], progress=False)
    b = run_forest_experiment(["wine"], folds=2, repeats=1, learner="cart", techniques=["FF", "RT"], progress=False)
    pd.testing.assert_frame_equal(a.runs, b.runs)
    for kw in ({"folds": 1}, {"techniques": ["XX"]}, {"learner": "weka"}):
        with pytest.raises(ParameterError):
            run_forest_experiment(["wine"], **{"learner": "cart", "progress": False, **kw})


def test_cli_forest_experiment(tmp_path):
    out = tmp_path / "fig2"
    res = CliRunner().invoke(app, ["reproduce", "forest-experiment", "--out", str(out), "--datasets", "wine", "--folds", "2",
                                   "--repeats", "1", "--learner", "cart", "--techniques", "FF,GADP"])
    assert res.exit_code == 0, res.output
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns) == ["dataset", "Original", "FF", "GADP"]
    assert np.isfinite(summary[["Original", "FF", "GADP"]].to_numpy()).all()
    assert (out / "summary.md").read_text().count("| wine |") == 1
    bad = tmp_path / "bad"
    res = CliRunner().invoke(app, ["reproduce", "forest-experiment", "--out", str(bad), "--datasets", "nope", "--learner", "cart"])
    assert res.exit_code != 0 and not bad.exists()


def test_structure_summary_averages_repeats_then_folds() -> None:
    import pandas as pd

    from ppdm.experiments.forest_framework import ForestExperimentResult

    runs = pd.DataFrame({
        "dataset": ["d"] * 5, "technique": ["Original", "FF", "FF", "FF", "RT"], "fold": [0, 0, 0, 1, 0],
        "repeat": [0, 0, 1, 0, 0], "accuracy": [1.0] * 5,
        "eduds": [None, 0.2, 0.4, 0.9, 0.5], "edusc": [None, 1.0, 1.0, 0.5, 0.5], "sers": [None, 2.0, 4.0, 6.0, 1.0],
    })
    res = ForestExperimentResult(runs, pd.DataFrame(), "test")
    st = res.structure_summary().set_index("technique")
    # FF: fold 0 mean 0.3, fold 1 0.9 → 0.6 (not the pooled mean 0.5)
    assert st.loc["FF", "eduds"] == pytest.approx(0.6)
    assert st.loc["FF", "sers"] == pytest.approx(4.5)
    assert "Original" not in st.index
    md = res.structure_markdown()
    assert "| d | 0.600 | 0.500 |" in md
