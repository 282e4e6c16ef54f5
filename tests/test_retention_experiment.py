"""The rule-retention experiment (paper 000 §8.2) and its command."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.datasets import load
from ppdm.experiments.retention import run_retention_experiment


def test_experiment_smoke_on_banknote():
    x, sch = load("banknote")
    exp = run_retention_experiment(x, sch, levels=[0.0, 0.3], repetitions=2)
    assert len(exp.runs) == 4
    zero = exp.runs[exp.runs["level"] == 0.0]
    assert (zero[["rule_accuracy", "rule_support_distance", "rule_label_distance"]] == 0).all().all()
    assert exp.is_monotone()
    assert "| 30% |" in exp.markdown()


def test_command_writes_its_tables(tmp_path):
    out = tmp_path / "exp"
    r = CliRunner().invoke(app, ["reproduce", "retention-experiment", "--data", "builtin:banknote", "--levels", "0,0.2",
                                 "--repetitions", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert {p.name for p in out.iterdir()} == {"runs.csv", "summary.csv", "summary.md", "rules.txt"}
    r = CliRunner().invoke(app, ["reproduce", "retention-experiment", "--levels", "0,abc", "--out", str(tmp_path / "e2")])
    assert r.exit_code == 2 and not (tmp_path / "e2").exists()


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["uniform-noise", "gaussian-noise"])
def test_adult_retention_rises_with_noise(noise):
    x, sch = load("adult", missing="drop")
    exp = run_retention_experiment(x, sch, noise=noise, levels=[0.0, 0.1, 0.2, 0.3], repetitions=10)
    assert exp.n_records == 30162 and 11 <= len(exp.rules) <= 40
    assert exp.is_monotone(["rule_accuracy", "rule_support_distance", "rule_label_distance"])
