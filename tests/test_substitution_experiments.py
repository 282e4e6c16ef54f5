"""Experiments of 001 §5 on a tiny grid, and their CLI commands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.errors import ParameterError
from ppdm.experiments.random_substitution import (
    NS,
    default_learner,
    error_experiment,
    synthetic_attribute,
    tree_experiment,
)

runner = CliRunner()


def test_grid_matches_paper():
    from ppdm.experiments.random_substitution import GAMMAS

    assert len(GAMMAS) * len(NS) == 240  # 001 §5.1: 240 combinations


def test_synthetic_attributes_in_domain():
    for kind in ("plateau", "triangles"):
        v = synthetic_attribute(kind, 5000, 1)
        assert v.min() >= 1 and v.max() <= 200 and v.dtype.kind == "i"
    assert synthetic_attribute("plateau", 5000, 1).min() >= 51
    with pytest.raises(ParameterError):
        synthetic_attribute("bumps")


def test_error_experiment_heuristic_helps():
    res = error_experiment(gammas=[2, 10], ns=[10, 60], n_records=3000, repeats=2)
    assert len(res) == 2 * 2 * 2
    assert (res["error_clipped"] <= res["error_raw"] + 1e-12).all()  # Proposition 1
    hard = res[(res["gamma"] == 2) & (res["N"] == 60)]
    assert (hard["error_heuristic"] < hard["error_raw"]).all()
    # error grows with N and falls with γ (001 §4)
    p = res[res["dataset"] == "plateau"].set_index(["gamma", "N"])["error_raw"]
    assert p[(2, 60)] > p[(2, 10)] and p[(2, 60)] > p[(10, 60)]
    with pytest.raises(ParameterError):
        error_experiment(gammas=[1], ns=[5])


def test_tree_experiment_small_grid():
    res = tree_experiment(datasets=["wine"], gammas=[3, 20], ns=[5], repeats=1)
    assert list(res.columns[:4]) == ["dataset", "gamma", "N", "entropy"]
    assert res["accuracy"].between(0, 1).all()
    assert res.loc[res["gamma"] == 20, "accuracy"].iloc[0] > 0.6
    assert res["accuracy_original"].iloc[0] > 0.85


def test_learner_parameter_and_default():
    from sklearn.tree import DecisionTreeClassifier

    res = tree_experiment(datasets=["wine"], gammas=[10], ns=[5], repeats=1,
                          learner=DecisionTreeClassifier(max_depth=1, random_state=0))
    # a stump cannot separate three classes: at most two thirds right
    assert res["accuracy_original"].iloc[0] < 0.7
    model = default_learner()
    assert type(model).__name__ == "C45Classifier"  # the paper's learner
    # enough records that pruning keeps the split (C4.5 collapses a 4-record tree)
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0] * 3, "b": ["x", "y", "x", "y"] * 3})
    model.fit(df, np.array([0, 1, 0, 1] * 3))
    assert list(model.predict(df)) == [0, 1, 0, 1] * 3


def test_cli_experiments_write_tables_and_plots(tmp_path):
    out = tmp_path / "err"
    res = runner.invoke(app, ["reproduce", "substitution", "error-experiment", "--out", str(out), "--gammas", "2,10",
                              "--ns", "5,40", "--repeats", "1", "--records", "2000"])
    assert res.exit_code == 0, res.output
    assert {"error_results.csv", "error_summary.md", "error_plateau.png", "error_triangles.png"} <= {
        p.name for p in out.iterdir()}
    assert len(pd.read_csv(out / "error_results.csv")) == 8
    out2 = tmp_path / "tree"
    res = runner.invoke(app, ["reproduce", "substitution", "tree-experiment", "--out", str(out2), "--datasets", "wine",
                              "--gammas", "5", "--ns", "5,10", "--repeats", "1"])
    assert res.exit_code == 0, res.output
    assert {"tree_results.csv", "tree_summary.md", "tree_accuracy.png", "tree_entropy.png"} <= {
        p.name for p in out2.iterdir()}
    bad = runner.invoke(app, ["reproduce", "substitution", "tree-experiment", "--out", str(tmp_path / "bad"), "--datasets", "nope"])
    assert bad.exit_code == 2 and not (tmp_path / "bad").exists()
    bad = runner.invoke(app, ["reproduce", "substitution", "error-experiment", "--out", str(tmp_path / "bad"), "--gammas", "x"])
    assert bad.exit_code == 2 and not (tmp_path / "bad").exists()
