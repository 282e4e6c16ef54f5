"""Cross-validated comparison (ppdm.experiments.compare) and the ``ppdm compare`` / ``ppdm report`` commands.

The technique and measures used here are registered by the fixture below and removed
after each test, so the module needs none of the package's own techniques or measures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.tree import DecisionTreeClassifier
from typer.testing import CliRunner

from ppdm.anonymize.base import Technique, check_fraction
from ppdm.anonymize.registry import TECHNIQUES, register
from ppdm.data.io import write_table
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.compare import (
    ComparisonResult,
    TechniqueSpec,
    compare,
    correlation_matrix,
    correlation_pvalues,
    grid,
    parse_technique,
    sweep,
)
from ppdm.metrics.base import MEASURES, MeasureResult, register_measure


class NoiseForTests(Technique):
    """Adds seeded Gaussian noise (sd = level × column sd) to numeric columns."""

    def __init__(self, class_column=None, schema=None, random_state=None, level=0.1, explode=False):
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state
        self.level = level
        self.explode = explode

    def _validate_params(self) -> None:
        check_fraction("level", self.level, low=0.0, high=5.0)

    def _fit(self, df, schema, rng) -> None:
        if self.explode:
            raise PPDMError("the table is too small for this setting")

    def _transform(self, df, schema, rng):
        for c in schema.numeric:
            df[c] = df[c].astype(float) + rng.normal(0.0, self.level * float(df[c].std()), len(df))
        return df


@dataclass
class ShareResult(MeasureResult):
    n_train: int = 0
    n_test: int = 0


def _mad(ctx) -> MeasureResult:
    cols = ctx.schema.numeric
    return MeasureResult(float(np.mean(np.abs(ctx.x[cols].to_numpy(float) - ctx.z[cols].to_numpy(float)))))


def _tree_accuracy(ctx) -> MeasureResult:
    cols, c = ctx.schema.numeric, ctx.schema.class_column
    tree = DecisionTreeClassifier(max_depth=3, random_state=ctx.random_state).fit(ctx.z[cols], ctx.z[c])
    return MeasureResult(float(np.mean(tree.predict(ctx.test[cols]) == ctx.test[c].to_numpy())))


def _test_share(ctx) -> ShareResult:
    c = ctx.schema.class_column
    return ShareResult(float(np.mean(ctx.test[c] == "a")), n_train=len(ctx.x), n_test=len(ctx.test))


TEST_MEASURES = {
    "t_mad": (_mad, False),
    "t_tree_accuracy": (_tree_accuracy, True),
    "t_test_share": (_test_share, True),
}


@pytest.fixture
def registered() -> Iterator[None]:
    """Register the test technique and measures; take them out again afterwards."""
    saved_t = TECHNIQUES.get("noise-for-tests")
    saved_m = {k: MEASURES.get(k) for k in TEST_MEASURES}
    register("noise-for-tests")(NoiseForTests)
    for name, (fn, needs) in TEST_MEASURES.items():
        register_measure(name, kind="utility", description=f"{name} (test measure)", needs_class=needs)(fn)
    yield
    TECHNIQUES.pop("noise-for-tests", None)
    if saved_t is not None:
        TECHNIQUES["noise-for-tests"] = saved_t
    for k, v in saved_m.items():
        MEASURES.pop(k, None)
        if v is not None:
            MEASURES[k] = v


def _table(n: int = 90, seed: int = 1) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.integers(0, 20, n)
    y = np.where(a + b / 10 > 1.0, "a", "b")
    y[:5] = "a"  # both classes present whatever the draw
    df = pd.DataFrame({"a": a, "b": b, "c": rng.choice(["u", "v"], n), "y": y})
    return df, Schema.infer(df, "y")


# ---------------------------------------------------------------------- compare()
def test_result_is_tidy_with_one_row_per_fold_technique_repeat_measure(registered):
    x, s = _table()
    specs = [TechniqueSpec("noise-for-tests", {"level": 0.1}), TechniqueSpec("noise-for-tests", {"level": 1.0}, "big")]
    seen: list[tuple[int, int]] = []
    r = compare(x, s, specs, ["t_mad", "t_tree_accuracy"], cv=3, repeats=2,
                progress=lambda d, t, _: seen.append((d, t)))
    d = r.data
    assert list(d.columns) == ["technique", "label", "params", "fold", "repeat", "measure", "value"]
    # folds × (techniques × repeats + the baseline once) × measures
    assert len(d) == 3 * (2 * 2 + 1) * 2
    assert r.labels == ["original", "noise-for-tests(level=0.1)", "big"]
    counts = d.groupby(["label", "measure"]).size()
    assert counts.loc[("big", "t_mad")] == 6 and counts.loc[("original", "t_mad")] == 3
    assert not d.duplicated(["label", "fold", "repeat", "measure"]).any()
    assert set(d.loc[d.label == "big", "params"]) == {'{"level": 1.0}'}
    assert (d.loc[d.technique == "original", "value"][d.measure == "t_mad"] == 0).all()
    assert seen[-1] == (15, 15) and [p[0] for p in seen] == list(range(1, 16))
    big = d[(d.label == "big") & (d.measure == "t_mad")]["value"].mean()
    small = d[(d.label == "noise-for-tests(level=0.1)") & (d.measure == "t_mad")]["value"].mean()
    assert big > 5 * small > 0


def test_summary_mean_std_and_t_interval(registered):
    x, s = _table()
    r = compare(x, s, ["noise-for-tests:level=0.5"], "t_mad", cv=3, repeats=2)
    summ = r.summary()
    v = r.data[(r.data.technique != "original")]["value"].to_numpy()
    row = summ[summ.technique != "original"].iloc[0]
    lo, hi = stats.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
    assert row["n"] == 6
    assert row["mean"] == pytest.approx(v.mean()) and row["std"] == pytest.approx(v.std(ddof=1))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi))
    assert r.mean_table().shape == (2, 1)


def test_same_seed_gives_identical_bytes_and_another_seed_differs(registered, tmp_path):
    x, s = _table()
    specs = sweep("noise-for-tests", "level", [0.2, 0.4])
    outs = []
    for i, seed in enumerate([7, 7, 8]):
        r = compare(x, s, specs, ["t_mad", "t_tree_accuracy"], cv=3, repeats=2, random_state=seed)
        r.save(tmp_path / f"r{i}")
        outs.append((tmp_path / f"r{i}" / "results.csv").read_bytes())
    assert outs[0] == outs[1]
    assert outs[0] != outs[2]
    assert (tmp_path / "r0" / "summary.csv").read_bytes() == (tmp_path / "r1" / "summary.csv").read_bytes()


def test_parallel_run_matches_serial_run(registered):
    x, s = _table()
    specs = sweep("noise-for-tests", "level", [0.1, 0.3])
    a = compare(x, s, specs, ["t_mad", "t_tree_accuracy"], cv=3, repeats=2, n_jobs=1)
    b = compare(x, s, specs, ["t_mad", "t_tree_accuracy"], cv=3, repeats=2, n_jobs=2)
    pd.testing.assert_frame_equal(a.data, b.data)


def test_techniques_of_a_fold_and_repeat_share_their_seed(registered):
    # common random numbers: the same spec under two labels gives identical values
    x, s = _table()
    specs = [TechniqueSpec("noise-for-tests", {"level": 0.3}, "one"),
             TechniqueSpec("noise-for-tests", {"level": 0.3}, "two")]
    d = compare(x, s, specs, "t_mad", cv=3, repeats=2).data
    assert d[d.label == "one"]["value"].tolist() == d[d.label == "two"]["value"].tolist()
    assert d[d.label == "one"]["value"].nunique() == 6  # yet every fold and repeat differs


def test_folds_are_stratified_and_partition_the_table(registered):
    x, s = _table(n=100)
    r = compare(x, s, ["noise-for-tests:level=0.1"], "t_test_share", cv=5)
    share = r.data[r.data.technique == "original"]["value"].to_numpy()
    overall = float(np.mean(x["y"] == "a"))
    n_a = int((x["y"] == "a").sum())
    # each held-out fold holds floor or ceil of n_a / 5 records of class a
    counts = share * 20
    assert set(np.rint(counts).astype(int)) <= {n_a // 5, -(-n_a // 5)}
    assert np.allclose(share, overall, atol=1 / 20 + 1e-12)
    assert r.meta["splitter"] == "StratifiedKFold" and r.meta["fold_sizes"] == [20] * 5


def test_plain_kfold_without_class_and_class_measures_left_out(registered):
    x, _ = _table()
    x = x.drop(columns="y")
    s = Schema.infer(x)
    r = compare(x, s, ["noise-for-tests:level=0.1"], "all", cv=3)
    assert r.meta["splitter"] == "KFold"
    assert "t_mad" in r.measures and "t_tree_accuracy" not in r.measures
    with pytest.raises(ParameterError, match="'t_tree_accuracy' needs a class column"):
        compare(x, s, ["noise-for-tests:level=0.1"], "t_mad,t_tree_accuracy", cv=3)


def test_mistakes_are_refused_before_any_work(registered):
    x, s = _table()
    calls: list[int] = []
    with pytest.raises(ParameterError, match="unknown technique 'no-such'"):
        compare(x, s, ["no-such:level=1"], "t_mad", cv=3, progress=lambda *a: calls.append(1))
    with pytest.raises(ParameterError, match=r"technique 'noise-for-tests' with parameters \{\"level\": -1\}"):
        compare(x, s, ["noise-for-tests:level=-1"], "t_mad", cv=3, progress=lambda *a: calls.append(1))
    with pytest.raises(ParameterError, match="has no parameter 'sigma'"):
        compare(x, s, ["noise-for-tests:sigma=1"], "t_mad", cv=3)
    with pytest.raises(ParameterError, match="unknown measure 'nope'"):
        compare(x, s, ["noise-for-tests"], "t_mad,nope", cv=3)
    with pytest.raises(ParameterError, match="share the label"):
        compare(x, s, ["noise-for-tests:level=0.1", "noise-for-tests:level=0.1"], "t_mad", cv=3)
    with pytest.raises(ParameterError, match="cv must be an integer of at least 2"):
        compare(x, s, ["noise-for-tests"], "t_mad", cv=1)
    with pytest.raises(ParameterError, match="at least 200 rows"):
        compare(x, s, ["noise-for-tests"], "t_mad", cv=200)
    assert calls == []


def test_a_failing_technique_names_itself_and_its_parameters(registered):
    x, s = _table()
    with pytest.raises(PPDMError, match=r"technique 'noise-for-tests' with parameters "
                                        r"\{\"explode\": true, \"level\": 0.2\} failed on fold 0, repeat 0: "
                                        r"the table is too small"):
        compare(x, s, [TechniqueSpec("noise-for-tests", {"level": 0.2, "explode": True})], "t_mad", cv=3)


def test_rules_are_built_once_per_fold_and_shared(registered, monkeypatch):
    import ppdm.trees.cart as cart

    calls: list[int] = []
    real = cart.rules_from_cart

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(cart, "rules_from_cart", counting)

    def n_rules(ctx) -> MeasureResult:
        return MeasureResult(float(len(ctx.get_rules())))

    register_measure("t_n_rules", kind="utility", description="rules in Ψx", needs_class=True)(n_rules)
    try:
        x, s = _table()
        r = compare(x, s, sweep("noise-for-tests", "level", [0.1, 0.5]), "t_n_rules", cv=3, repeats=2)
    finally:
        MEASURES.pop("t_n_rules", None)
    assert len(calls) == 3
    per_fold = r.data.groupby("fold")["value"].nunique()
    assert (per_fold == 1).all()


# ------------------------------------------------------------------ sweeps/parsing
def test_sweep_and_grid_expand_in_order():
    specs = sweep("uniform-noise", "level", [0, 0.1, 0.2], categorical=True)
    assert [s.params for s in specs] == [{"categorical": True, "level": v} for v in (0, 0.1, 0.2)]
    assert specs[1].display_label == "uniform-noise(categorical=True, level=0.1)"
    g = grid("mdav", {"k": [3, 5], "w": [1, 2, 3]})
    assert len(g) == 6
    assert [(s.params["k"], s.params["w"]) for s in g] == [(3, 1), (3, 2), (3, 3), (5, 1), (5, 2), (5, 3)]
    with pytest.raises(ParameterError, match="no values"):
        sweep("mdav", "k", [])
    with pytest.raises(ParameterError, match="both swept and fixed"):
        grid("mdav", {"k": [3]}, k=2)


def test_parse_technique_strings():
    assert parse_technique("gadp") == [TechniqueSpec("gadp", {})]
    (t,) = parse_technique("uniform-noise:level=0.1,categorical-mode=keep")
    assert t.params == {"level": 0.1, "categorical_mode": "keep"}
    (t,) = parse_technique("x:bins=[1, 2],flag=true")
    assert t.params == {"bins": [1, 2], "flag": True}
    s = parse_technique("uniform-noise:level=0,0.1,0.3", allow_sweep=True)
    assert [v.params["level"] for v in s] == [0, 0.1, 0.3]
    g = parse_technique("mdav:k=3,5,w=1,2,seed=4", allow_sweep=True)
    assert [v.params for v in g] == [{"k": k, "w": w, "seed": 4} for k in (3, 5) for w in (1, 2)]
    for bad in ["", ":level=1", "uniform-noise:level", "uniform-noise:=3", "uniform-noise:level=",
                "uniform-noise:level=1,level=2"]:
        with pytest.raises(ParameterError):
            parse_technique(bad)
    with pytest.raises(ParameterError, match="use --sweep"):
        parse_technique("uniform-noise:level=0,0.1")
    with pytest.raises(ParameterError, match="lists no parameter with several values"):
        parse_technique("uniform-noise:level=0.1", allow_sweep=True)


# ------------------------------------------------------------------- correlations
def _hand_result() -> ComparisonResult:
    """Two techniques × 2 folds × 1 repeat (+ the baseline) and three measures."""
    vals = {  # (label, fold): (m1, m2, m3)
        ("original", 0): (0.0, 10.0, 5.0),
        ("original", 1): (0.0, 20.0, 5.0),
        ("A", 0): (1.0, 11.0, 4.0),
        ("A", 1): (2.0, 23.0, 3.0),
        ("B", 0): (3.0, 12.0, 2.0),
        ("B", 1): (4.0, 24.0, 1.0),
    }
    rows = []
    for (lab, f), ms in vals.items():
        tech = "original" if lab == "original" else "t"
        for m, v in zip(["m1", "m2", "m3"], ms, strict=True):
            rows.append((tech, lab, "{}", f, 0, m, v))
    data = pd.DataFrame(rows, columns=["technique", "label", "params", "fold", "repeat", "measure", "value"])
    meta = {"techniques": [{"technique": "original", "label": "original", "params": "{}"},
                           {"technique": "t", "label": "A", "params": "{}"},
                           {"technique": "t", "label": "B", "params": "{}"}],
            "measures": ["m1", "m2", "m3"], "cv": 2, "repeats": 1, "random_state": 0, "splitter": "KFold"}
    return ComparisonResult(data, meta)


def test_correlation_matrix_on_a_hand_computed_example():
    r = _hand_result()
    c = correlation_matrix(r)
    # rows A0, A1, B0, B1: m1 = 1,2,3,4; m3 = 4,3,2,1 (r = -1); m2 = 11,23,12,24
    assert c.loc["m1", "m3"] == pytest.approx(-1.0)
    # m1 vs m2 by hand: deviations of m1 (-1.5,-.5,.5,1.5), of m2 (-6.5,5.5,-5.5,6.5);
    # Σ products = 9.75 − 2.75 − 2.75 + 9.75 = 14, Σ squares 5 and 145 → r = 14 / √725
    assert c.loc["m1", "m2"] == pytest.approx(14.0 / math.sqrt(725.0))
    wide = pd.DataFrame({"m1": [1, 2, 3, 4], "m2": [11, 23, 12, 24], "m3": [4, 3, 2, 1]}, dtype=float)
    pd.testing.assert_frame_equal(c, wide.corr())
    sp = correlation_matrix(r, "spearman")
    assert sp.loc["m1", "m2"] == pytest.approx(stats.spearmanr(wide.m1, wide.m2).statistic)
    p = correlation_pvalues(r)
    assert p.loc["m1", "m2"] == pytest.approx(stats.pearsonr(wide.m1, wide.m2).pvalue)
    assert c.shape == (3, 3) and np.allclose(np.diag(c), 1)


def test_correlation_of_differences_to_the_original():
    r = _hand_result()
    c = correlation_matrix(r, difference=True)
    # m2 minus the original's m2 of the same fold: 1, 3, 2, 4 against m1 = 1, 2, 3, 4
    assert c.loc["m1", "m2"] == pytest.approx(stats.pearsonr([1, 2, 3, 4], [1, 3, 2, 4]).statistic)
    only_a = correlation_matrix(r, techniques=["A"])  # two rows: every pair is ±1
    assert only_a.loc["m1", "m3"] == pytest.approx(-1.0)
    with_orig = correlation_matrix(r, include_original=True)
    wide = pd.DataFrame({"m1": [0, 0, 1, 2, 3, 4], "m2": [10, 20, 11, 23, 12, 24]}, dtype=float)
    assert with_orig.loc["m1", "m2"] == pytest.approx(wide.corr().loc["m1", "m2"])
    with pytest.raises(ParameterError):
        correlation_matrix(r, "kendall-ish")


# ---------------------------------------------------------------------- save/load
def test_save_load_round_trip_and_json(registered, tmp_path):
    x, s = _table()
    r = compare(x, s, ["noise-for-tests:level=0.2"], ["t_mad", "t_tree_accuracy"], cv=3)
    out = r.save(tmp_path / "res")
    assert sorted(p.name for p in out.iterdir()) == ["correlations.csv", "meta.json", "results.csv", "summary.csv"]
    back = ComparisonResult.load(out)
    pd.testing.assert_frame_equal(back.data, r.data)
    assert back.labels == r.labels and back.measures == r.measures
    doc = json.loads(r.to_json(tmp_path / "r.json"))
    assert len(doc["results"]) == len(r.data) and doc["meta"]["cv"] == 3
    corr = pd.read_csv(out / "correlations.csv", index_col=0)
    assert list(corr.columns) == ["t_mad", "t_tree_accuracy"]
    # saving again into the existing folder replaces the files
    r.save(out, extra={"report.html": "<html></html>"})
    assert (out / "report.html").exists()


def test_failed_save_leaves_no_folder(registered, tmp_path, monkeypatch):
    import ppdm.experiments.compare as mod

    x, s = _table()
    r = compare(x, s, ["noise-for-tests:level=0.2"], "t_mad", cv=3)

    def broken(*a, **k):
        raise PPDMError("cannot correlate")

    monkeypatch.setattr(mod, "correlation_matrix", broken)
    with pytest.raises(PPDMError):
        r.save(tmp_path / "res")
    assert list(tmp_path.iterdir()) == []


def test_load_refuses_a_folder_that_is_not_a_result(tmp_path):
    with pytest.raises(PPDMError, match="meta.json is missing"):
        ComparisonResult.load(tmp_path)


# ---------------------------------------------------------------------------- CLI
def _cli(args: list[str]):
    from ppdm.cli.app import app

    return CliRunner().invoke(app, args)


def test_cli_compare_writes_every_file_and_prints_the_summary(registered, tmp_path):
    x, _ = _table()
    data = write_table(x, tmp_path / "x.csv")
    out = tmp_path / "out"
    res = _cli(["compare", str(data), "--class", "y", "--technique", "noise-for-tests:level=0.1",
                "--sweep", "noise-for-tests:level=0.3,0.6", "--measures", "t_mad,t_tree_accuracy",
                "--cv", "3", "--repeats", "2", "--seed", "3", "--out", str(out), "--report"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["correlations.csv", "meta.json", "report.html",
                                                     "results.csv", "summary.csv"]
    d = pd.read_csv(out / "results.csv")
    assert len(d) == 3 * (3 * 2 + 1) * 2
    assert "noise-for-tests(level=0.6)" in res.output and "t_tree_accuracy" in res.output
    html = (out / "report.html").read_text()
    assert "x.csv" in html and "<img" in html
    # `ppdm report` renders the same page again from the saved folder
    again = tmp_path / "again.html"
    res2 = _cli(["report", str(out), "--out", str(again), "--title", "ppdm comparison on x.csv"])
    assert res2.exit_code == 0, res2.output
    assert again.read_text() == html


@pytest.mark.parametrize("tech", ["noise-for-tests:level", "no-such-technique", "noise-for-tests:level=-3",
                                  "noise-for-tests:level=0.1,0.2", "noise-for-tests:sigma=1"])
def test_cli_compare_bad_technique_exits_2_and_writes_nothing(registered, tmp_path, tech):
    x, _ = _table()
    data = write_table(x, tmp_path / "x.csv")
    out = tmp_path / "out"
    res = _cli(["compare", str(data), "--class", "y", "--technique", tech, "--measures", "t_mad",
                "--cv", "3", "--out", str(out), "--report"])
    assert res.exit_code == 2, res.output
    assert "error" in res.output.lower()
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


def test_cli_compare_on_a_builtin_dataset_without_out(registered):
    res = _cli(["compare", "builtin:banknote", "--technique", "noise-for-tests:level=0.2",
                "--measures", "t_mad", "--cv", "2"])
    assert res.exit_code == 0, res.output
    assert "banknote" in res.output and "noise-for-tests(level=0.2)" in res.output


def test_cli_report_of_a_missing_folder_exits_2(tmp_path):
    res = _cli(["report", str(tmp_path / "nothing")])
    assert res.exit_code == 2


def test_module_entry_point_exits_2_on_a_bad_technique(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "ppdm.cli", "compare", "builtin:banknote", "--technique",
                           "uniform-noise:level", "--out", str(out)], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "'level' is not key=value" in proc.stderr
    assert not out.exists()


def test_meta_records_effective_parameters_changes_and_measure_info(registered):
    x, s = _table()
    specs = [TechniqueSpec("noise-for-tests", {}), TechniqueSpec("noise-for-tests", {"level": 0.0}, "nothing")]
    r = compare(x, s, specs, ["t_mad"], cv=2)
    techs = {t["label"]: t for t in r.meta["techniques"]}
    # the defaults resolved, not {}; the common arguments left out
    assert techs["noise-for-tests"]["params"] == "{}"
    assert techs["noise-for-tests"]["effective_params"] == {"level": 0.1, "explode": False}
    assert techs["nothing"]["effective_params"] == {"level": 0.0, "explode": False}
    # noise of level 0 returns the training table as it is: it changes nothing
    assert techs["noise-for-tests"]["changes_data"] is True and techs["nothing"]["changes_data"] is False
    assert techs["original"]["changes_data"] is False
    assert r.meta["measure_info"]["t_mad"]["kind"] == "utility"


def test_a_measure_the_table_does_not_allow_is_skipped_and_noted(registered):
    from ppdm.errors import MeasureNotApplicable

    def picky(ctx):
        if ctx.z.equals(ctx.x):
            raise MeasureNotApplicable("z equals x here")
        return MeasureResult(1.0)

    register_measure("t_picky", kind="risk", description="skips the baseline", needs_class=False)(picky)
    try:
        x, s = _table()
        r = compare(x, s, [TechniqueSpec("noise-for-tests", {"level": 0.5})], ["t_mad", "t_picky"], cv=2)
    finally:
        MEASURES.pop("t_picky", None)
    d = r.data
    base = d[(d.label == "original") & (d.measure == "t_picky")]
    assert base["value"].isna().all() and len(base) == 2
    assert (d[(d.label != "original") & (d.measure == "t_picky")]["value"] == 1.0).all()
    assert r.meta["skipped"] == [{"label": "original", "measure": "t_picky", "reason": "z equals x here",
                                  "tasks": 2, "of": 2}]
    assert any("'t_picky' was skipped for original in 2 of 2 run(s): z equals x here" in n for n in r.meta["notes"])


# ------------------------------------------------- a survey table, as evaluate reads it
ATTACKS = ("record_linkage", "inference", "linkability", "singling_out_univariate", "singling_out_multivariate")


def test_cli_compare_measures_every_risk_on_dates_codes_and_missing_cells(tmp_path):
    """compare reads, types and measures a table as evaluate does: the date column, the zip
    codes with leading zeros and the empty income cells (--missing keep) leave every attack
    computed, and the role flags (--id, --qi, --weight) mean what they mean for evaluate."""
    from survey_table import ROLES, write_survey

    data = write_survey(tmp_path / "survey.csv")
    out = tmp_path / "out"
    res = _cli(["compare", str(data), "--class", ROLES["class"], "--id", ROLES["id"], "--qi", ROLES["qi"],
                "--weight", ROLES["weight"], "--missing", "keep", "--technique", "mdav:k=5", "--cv", "2",
                "--seed", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    meta = json.loads((out / "meta.json").read_text())
    skipped = {row["measure"]: row["reason"] for row in meta["skipped"]}
    for m in ATTACKS:
        assert m not in skipped, skipped.get(m)
    d = pd.read_csv(out / "results.csv")
    for m in ATTACKS:
        assert d.loc[d.measure == m, "value"].notna().all(), m
    # the identifier never reached a technique or a measure; the types are evaluate's
    assert meta["removed_identifiers"] == ["person_id"]
    assert "person_id" not in json.dumps(meta["dataset"])
    sch = meta["schema"]
    assert sch["dates"] == {"birth_date": "%Y-%m-%d"} and "zip" in sch["categorical"]
    assert sch["quasi_identifiers"] == ["zip", "birth_date", "sex"] and sch["weight"] == "weight"
    assert meta["missing"] == "keep"
    # the same table without --missing keep is refused, naming the column, as evaluate refuses it
    res = _cli(["compare", str(data), "--class", "diagnosis", "--id", "person_id", "--technique", "mdav:k=5",
                "--cv", "2", "--seed", "0"])
    assert res.exit_code == 2 and "income" in res.output
    # and an undeclared record number is refused as by anonymize, not compared as an attribute
    res = _cli(["compare", str(data), "--class", "diagnosis", "--missing", "drop", "--technique", "mdav:k=5",
                "--cv", "2", "--seed", "0"])
    assert res.exit_code == 2 and "person_id" in res.output and "--id" in res.output


def test_compare_and_evaluate_measure_the_same_working_tables(tmp_path):
    """One path: compare's measures see x as evaluate's do (dates on their time axis, codes as
    text, missing cells as NaN), so the risk of the original against itself agrees."""
    from survey_table import write_survey

    from ppdm.cli.common import load_original, roles_from_options
    from ppdm.experiments.evaluation import measurement_context

    data = write_survey(tmp_path / "survey.csv")
    roles = roles_from_options(["person_id"], ["zip,birth_date,sex"], None, "weight", None)
    x, sch, ids = load_original(str(data), "diagnosis", missing="keep", roles=roles)
    assert ids == ["person_id"] and "person_id" not in x.columns
    ctx = measurement_context(x, x, sch)
    assert ctx.x["birth_date"].dtype == float and ctx.x["zip"].str.startswith("0").any()
    assert ctx.x["income"].isna().any()
    # the typed table goes to the techniques: the date is still a date there
    assert pd.api.types.is_datetime64_any_dtype(x["birth_date"])


def test_compare_and_evaluate_take_the_same_role_and_type_flags():
    import typer

    from ppdm.cli.app import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]

    def flags(name: str) -> set[str]:
        return {o for p in commands[name].params for o in getattr(p, "opts", [])}

    shared = {"--id", "--qi", "--sensitive", "--weight", "--other", "--categorical", "--date", "--missing",
              "--schema", "--sep", "--class", "--seed", "--measures", "--param"}
    assert shared <= flags("evaluate") and shared <= flags("compare")
    help_text = " ".join(p.help or "" for p in commands["compare"].params if "--missing" in getattr(p, "opts", []))
    assert "keep" in help_text
