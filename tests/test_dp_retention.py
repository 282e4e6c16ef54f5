"""Paper 000 §8.4 experiment pipeline (DPCube vs ε), on small inputs with stand-in measures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.anonymize.noise import GaussianNoise, UniformNoise
from ppdm.data import Schema
from ppdm.datasets import load
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.dp_retention import (
    count_runs,
    measure_correlations,
    run_dp_retention,
    write_outputs,
)
from ppdm.metrics.base import MEASURES, EvaluationContext, MeasureResult, register_measure


@dataclass
class _Covered(MeasureResult):
    n_rules: int = 0


@pytest.fixture
def stand_in_measures():
    """Two throw-away measures: the share of z records whose class Ψx predicts, and one that always fails."""

    @register_measure("test_rules_obeyed", kind="utility", description="stand-in")
    def obeyed(ctx: EvaluationContext) -> _Covered:
        rules = ctx.get_rules()
        y = ctx.z[ctx.schema.class_column].to_numpy()
        ok = np.zeros(len(ctx.z), bool)
        for r in rules:
            ok |= r.mask(ctx.z) & (y == r.prediction)
        assert ctx.test is not None and len(ctx.test) > 0
        return _Covered(float(ok.mean()), len(rules))

    @register_measure("test_always_fails", kind="utility", description="stand-in")
    def fails(ctx: EvaluationContext) -> MeasureResult:
        raise PPDMError("undefined on this release")

    yield "test_rules_obeyed"
    MEASURES.pop("test_rules_obeyed", None)
    MEASURES.pop("test_always_fails", None)


@pytest.fixture(scope="module")
def small_banknote() -> tuple[pd.DataFrame, Schema]:
    x, s = load("banknote")
    return x.sample(240, random_state=1).reset_index(drop=True), s


def test_toy_noises_follow_paper_000_section_7_1():
    """The experiment's UN/GN are the registered techniques; their §7.1 behaviour, as the experiment uses them."""
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.normal(size=400), "k": rng.integers(0, 9, 400),
                      "c": rng.choice(["u", "v", "w"], 400, p=[0.8, 0.15, 0.05]), "y": rng.integers(0, 2, 400)})
    s = Schema.infer(x, "y")

    def noisy(cls, p, seed):
        return cls(level=p, schema=s, random_state=seed).fit_transform(x)

    for cls in (UniformNoise, GaussianNoise):
        pd.testing.assert_frame_equal(noisy(cls, 0.0, 1), x)
        z = noisy(cls, 0.5, 1)
        assert (z.dtypes == x.dtypes).all() and z.index.equals(x.index)
        assert z["y"].equals(x["y"])  # the label is never perturbed
        changed = (z["a"] != x["a"]).mean()
        assert 0.4 < changed < 0.6
        assert set(z["c"]) <= set(x["c"])
    u = noisy(UniformNoise, 1.0, 2)
    assert u["a"].between(x["a"].min(), x["a"].max()).all()
    # UN flattens the categorical distribution; GN keeps it
    g = noisy(GaussianNoise, 1.0, 2)
    assert (u["c"] == "u").mean() < 0.45 < 0.7 < (g["c"] == "u").mean()
    with pytest.raises(ParameterError):
        run_dp_retention(x, s, epsilons=[1.0], noise_levels=[1.5], repeats=1, folds=2)


def test_run_collects_every_measure_per_fold_repeat_and_level(stand_in_measures, small_banknote):
    x, s = small_banknote
    ticks = []
    res = run_dp_retention(x, s, epsilons=[1.0, 0.01], noise_levels=[0.2], repeats=2, folds=2,
                           measures="test_rules_obeyed,test_always_fails", dataset="banknote",
                           progress=lambda: ticks.append(1))
    n_z = count_runs(2, 1, 2, 2)
    assert len(ticks) == n_z == 2 * (1 + (2 + 2) * 2)
    assert len(res.raw) == n_z * 2
    obeyed = res.summary[res.summary["measure"] == "test_rules_obeyed"]
    assert set(obeyed["technique"]) == {"original", "dpcube", "uniform-noise", "gaussian-noise"}
    assert (obeyed["count"] == np.where(obeyed["technique"] == "original", 2, 4)).all()
    by = obeyed.set_index(["technique", "level"])["mean"]
    # Ψx obeys its own training data best; a tiny budget destroys the rules
    assert by[("original", np.inf)] > by[("dpcube", 0.01)]
    assert by[("original", np.inf)] > 0.9
    failed = res.summary[res.summary["measure"] == "test_always_fails"]
    assert failed["mean"].isna().all() and (failed["count"] == 0).all()
    assert (failed["n_failed"] == np.where(failed["technique"] == "original", 2, 4)).all()
    assert (res.raw.loc[res.raw["measure"] == "test_always_fails", "error"] == "undefined on this release").all()
    md = res.to_markdown()
    assert "| technique | parameter | level | test_rules_obeyed | test_always_fails |" in md
    assert "n/a" in md and "∞" in md
    # same seed, same numbers
    again = run_dp_retention(x, s, epsilons=[1.0, 0.01], noise_levels=[0.2], repeats=2, folds=2,
                             measures="test_rules_obeyed,test_always_fails", dataset="banknote")
    pd.testing.assert_frame_equal(res.raw, again.raw)


@pytest.mark.parametrize(
    "kw",
    [{"epsilons": [0.0]}, {"epsilons": [-1]}, {"noise_levels": [1.2]}, {"repeats": 0}, {"folds": 1},
     {"measures": "no_such_measure"}, {"dpcube_params": {"alpha": 2.0}}, {"dpcube_params": {"epsilon": 1.0}}],
)
def test_bad_experiment_parameters(kw, stand_in_measures, small_banknote):
    x, s = small_banknote
    base = {"epsilons": [1.0], "noise_levels": [], "repeats": 1, "folds": 2, "measures": stand_in_measures}
    with pytest.raises(ParameterError):
        run_dp_retention(x, s, **{**base, **kw})


def test_outputs_written(stand_in_measures, small_banknote, tmp_path):
    x, s = small_banknote
    res = run_dp_retention(x, s, epsilons=[1.0, 0.1], noise_levels=[], repeats=1, folds=2,
                           measures=stand_in_measures)
    paths = write_outputs(res, tmp_path / "out")
    assert [p.name for p in paths] == ["dp_retention_raw.csv", "dp_retention_summary.csv", "dp_retention.md",
                                       "dp_retention.png"]
    assert pd.read_csv(paths[0]).shape[0] == len(res.raw)
    assert paths[3].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]


def test_cli_dp_experiment(stand_in_measures, tmp_path):
    from ppdm.cli.app import app

    out = tmp_path / "dp"
    res = CliRunner().invoke(app, ["reproduce", "dp-experiment", "--out", str(out), "--epsilons", "1.0,0.05", "--repeats", "1",
                                   "--folds", "2", "--noise-levels", "0.1", "--measures", stand_in_measures,
                                   "--param", "bins=3"])
    assert res.exit_code == 0, res.output
    summary = pd.read_csv(out / "dp_retention_summary.csv")
    assert sorted(summary["technique"].unique()) == ["dpcube", "gaussian-noise", "original", "uniform-noise"]
    assert "bins': 3" in (out / "dp_retention.md").read_text()


def test_cli_bad_epsilon_exits_2_and_writes_nothing(tmp_path):
    from ppdm.cli.app import app

    # in process (the exit code comes from the command group; test_cli_shell runs the real entry point)
    out = tmp_path / "never"
    res = CliRunner().invoke(app, ["reproduce", "dp-experiment", "--out", str(out), "--epsilons", "0"])
    assert res.exit_code == 2, res.output
    assert "epsilons" in res.output
    assert not out.exists()


def test_correlations_follow_table_6_layout(stand_in_measures, small_banknote):
    x, s = small_banknote
    res = run_dp_retention(x, s, epsilons=[1.0, 0.01], noise_levels=[0.1, 0.3], repeats=2, folds=2,
                           measures=f"{stand_in_measures},rule_accuracy", dataset="banknote")
    corr = measure_correlations(res)
    assert set(corr["group"]) == {"UN", "GN", "DPCube", "all"}
    # one pair of measures; n = releases of the group (levels × folds × repeats), the baseline left out
    assert (corr["n"] == corr["group"].map({"UN": 8, "GN": 8, "DPCube": 8, "all": 24})).all()
    # r from the raw runs by hand: rule accuracy |α(Ψx|x) − α(Ψx|z)| against the share obeyed, over UN releases
    raw = res.raw[res.raw["technique"] == "uniform-noise"]
    wide = raw.pivot_table(index=["level", "fold", "repeat"], columns="measure", values="value")
    base = res.raw[res.raw["technique"] == "original"].pivot_table(index="fold", columns="measure", values="value")
    diff = wide - base.reindex(wide.index.get_level_values("fold")).to_numpy()
    r = float(np.corrcoef(diff[stand_in_measures], diff["rule_accuracy"])[0, 1])
    got = corr[corr["group"] == "UN"]["r"].iloc[0]
    assert got == pytest.approx(r)


def test_dpcube_domain_is_the_declared_one_never_the_records(stand_in_measures, small_banknote):
    import warnings

    from ppdm.anonymize.differential_privacy import DomainFromDataWarning

    x, s = small_banknote
    assert s.bounds and s.categories  # shipped with the dataset's metadata
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainFromDataWarning)  # a domain read from a fold would raise
        res = run_dp_retention(x, s, epsilons=[1.0], noise_levels=[], repeats=1, folds=2,
                               measures=stand_in_measures, dataset="banknote")
    md = res.to_markdown()
    assert "variance [-20, 20]" in md and "class {0, 1}" in md
    assert "'class-first'" in md and "ppdm's extension beyond the paper" in md and "not used here" in md
    used = run_dp_retention(x, s, epsilons=[1.0], noise_levels=[], repeats=1, folds=2, measures=stand_in_measures,
                            dpcube_params={"split_dimension": "class-first"}).to_markdown()
    assert "separates the class values first" in used and "ppdm's extension beyond the paper" in used


def test_undeclared_domain_is_refused(stand_in_measures, small_banknote):
    x, s = small_banknote
    from dataclasses import replace

    for bare in (replace(s, bounds={c: b for c, b in s.bounds.items() if c != "entropy"}),
                 replace(s, categories={})):
        with pytest.raises(ParameterError, match="public domain declared in the schema.*('entropy'|'class')"):
            run_dp_retention(x, bare, epsilons=[1.0], noise_levels=[], repeats=1, folds=2,
                             measures=stand_in_measures)


def test_cli_dp_experiment_refuses_a_table_without_declared_domain(tmp_path):
    x, _ = load("banknote")
    src = tmp_path / "bank.csv"
    x.to_csv(src, index=False)
    from ppdm.cli.app import app

    out = tmp_path / "never"
    res = CliRunner().invoke(app, ["reproduce", "dp-experiment", "--out", str(out), "--data", str(src),
                                   "--class", "class", "--epsilons", "1", "--folds", "2", "--repeats", "1"])
    assert res.exit_code == 2, res.output
    assert "public domain declared in the schema" in res.output and "'variance'" in res.output
    assert not out.exists()
    # the same table with a schema file declaring its domain runs
    _, s = load("banknote")
    s.save(tmp_path / "schema.json")
    res = CliRunner().invoke(app, ["reproduce", "dp-experiment", "--out", str(out), "--data", str(src),
                                   "--schema", str(tmp_path / "schema.json"), "--epsilons", "1", "--folds", "2",
                                   "--repeats", "1", "--noise-levels", "0.1", "--measures", "rule_accuracy"])
    assert res.exit_code == 0, res.output
    assert (out / "dp_retention.md").exists()
