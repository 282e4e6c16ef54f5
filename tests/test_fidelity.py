"""Distribution fidelity (ppdm.metrics.fidelity): SDMetrics' KS and TV complements per column,
correlation and contingency similarity per pair, worked out by hand on tiny tables; a release
with one destroyed column judged REDUCED on that column by name; z = x scores 1 everywhere."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError
from ppdm.experiments.evaluate import EvaluateOptions, evaluate
from ppdm.metrics.base import MEASURES
from ppdm.metrics.fidelity import (
    CONTINGENCY,
    CORRELATION,
    FidelityOptions,
    column_fidelity,
    contingency_similarity,
    correlation_similarity,
    ks_complement,
    pair_fidelity,
    tv_complement,
)

NAN = float("nan")


# ------------------------------------------------------------------------ the four measures by hand
def test_ks_complement_by_hand() -> None:
    # x = 1 2 3 4, z = 3 4 5 6: F_x − F_z at 1..6 is .25 .5 .5 .5 .25 0 → D = 0.5
    assert ks_complement([1, 2, 3, 4], [3, 4, 5, 6]) == pytest.approx(0.5, abs=1e-15)
    # a blank is left out: z's values are 2 and 2, so F_z jumps to 1 at 2, where F_x = 2/5 → D = 0.6
    assert ks_complement([1, 2, 3, 4, 5], [2, NAN, 2]) == pytest.approx(0.4, abs=1e-15)
    # disjoint ranges: D = 1; equal samples in another order: D = 0
    assert ks_complement([1, 2], [10, 20, 30]) == 0.0
    assert ks_complement([3, 1, 2, 2], [2, 3, 2, 1]) == 1.0
    # float noise below 14 decimals is not a difference (SDMetrics rounds first)
    assert ks_complement([0.1 + 0.2], [0.3]) == 1.0
    assert math.isnan(ks_complement([NAN], [1.0]))


def test_tv_complement_by_hand() -> None:
    # p_x: a .5, b .25, c .25; p_z over its 4 present values: a .25, b .5, d .25
    # |diff|: a .25 + b .25 + c .25 + d .25 = 1 → TV = .5 → complement .5
    assert tv_complement(["a", "a", "b", "c"], ["a", "b", "b", "d", None]) == pytest.approx(0.5, abs=1e-15)
    # x: a a a b; z: a b → |.75 − .5| + |.25 − .5| = .5 → TV .25
    assert tv_complement(pd.Series(["a", "a", "a", "b"]), pd.Series(["a", "b"])) == pytest.approx(0.75, abs=1e-15)
    assert tv_complement(["a", "b"], ["b", "a"]) == 1.0
    assert tv_complement(["a"], ["b"]) == 0.0


def test_correlation_similarity_by_hand() -> None:
    # x: u = 1 2 3, v = 1 2 3 → r = 1. z: v = 1 3 2 → centred u (−1, 0, 1), v (−1, 1, 0):
    # r = (1 + 0 + 0) / (√2·√2) = 0.5 → 1 − |1 − 0.5| / 2 = 0.75
    x = np.array([[1, 1], [2, 2], [3, 3], [4, NAN]])  # the fourth record lacks v: left out of r
    z = np.array([[1, 1], [2, 3], [3, 2]])
    assert correlation_similarity(x, z) == pytest.approx(0.75, abs=1e-15)
    # a sign turned over: 1 − |1 − (−1)| / 2 = 0
    assert correlation_similarity(x, np.array([[1, 3], [2, 2], [3, 1]])) == pytest.approx(0.0, abs=1e-15)
    # a constant column has no correlation (SDMetrics refuses it)
    assert math.isnan(correlation_similarity(x, np.array([[1, 5], [2, 5], [3, 5]])))
    # huge values do not overflow: the same correlation, scaled by 1e300
    assert correlation_similarity(x, z * 1e300) == pytest.approx(0.75, abs=1e-12)
    with pytest.raises(ParameterError):
        correlation_similarity(x[:, :1], z[:, :1])


def test_contingency_similarity_by_hand() -> None:
    x = pd.DataFrame({"c": ["a", "a", "b", "b"], "d": ["1", "1", "2", "1"]})
    z = pd.DataFrame({"c": ["a", "b", "b", None], "d": ["1", "2", "2", "1"]})
    # p_x: (a,1) .5, (b,2) .25, (b,1) .25; p_z: (a,1) .25, (b,2) .5, (blank,1) .25 — a blank is a category
    # |diff|: .25 + .25 + .25 + .25 = 1 → TV .5 → .5
    assert contingency_similarity(x, z) == pytest.approx(0.5, abs=1e-15)
    # a number is cut into equal-width bins of x's values, the outer two open: bins = 2 over x's 0..10
    # gives edges (−∞, 5, ∞), so z's 100 and −50 fall in x's outer bins
    xn = pd.DataFrame({"c": ["a", "a", "b", "b"], "n": [0.0, 10.0, 0.0, 10.0]})
    zn = pd.DataFrame({"c": ["a", "a", "b", "b"], "n": [4.0, 6.0, 100.0, -50.0]})
    assert contingency_similarity(xn, zn, numeric=["n"], bins=2) == 1.0
    # every z value in the low bin: (a,low) .5, (b,low) .5 against x's four cells of .25 → TV .5
    zl = zn.assign(n=[4.0, 4.0, 4.0, 4.0])
    assert contingency_similarity(xn, zl, numeric=["n"], bins=2) == pytest.approx(0.5, abs=1e-15)
    # a blank number has a bin of its own: (b, blank) is a cell x does not have → TV .25
    zb = zn.assign(n=[4.0, 6.0, NAN, -50.0])
    assert contingency_similarity(xn, zb, numeric=["n"], bins=2) == pytest.approx(0.75, abs=1e-15)


# ------------------------------------------------------------------------ the table measures
def _table() -> tuple[pd.DataFrame, pd.DataFrame]:
    x = pd.DataFrame({"age": [20.0, 30.0, 40.0, 50.0], "pay": [1.0, 2.0, 3.0, 4.0],
                      "sex": ["f", "m", "f", "m"]})
    # z: age kept, pay moved beyond x's range, sex all "f"
    z = pd.DataFrame({"age": [50.0, 40.0, 30.0, 20.0], "pay": [101.0, 102.0, 103.0, 104.0],
                      "sex": ["f", "f", "f", "f"]})
    return x, z


def test_column_fidelity_names_the_worst_column() -> None:
    x, z = _table()
    res = column_fidelity(x, z)
    # age: the same values in another order → 1; pay: disjoint → 0; sex: |.5 − 1| + |.5 − 0| = 1 → .5
    assert res.per_column["column"].tolist() == ["pay", "sex", "age"]
    assert res.per_column["score"].tolist() == [0.0, 0.5, 1.0]
    assert res.per_column["metric"].tolist() == ["KSComplement", "TVComplement", "KSComplement"]
    assert (res.value, res.worst, res.columns) == (0.0, "pay", 3)
    assert res.mean == pytest.approx(0.5)


def test_pair_fidelity_scores_every_pair() -> None:
    x, z = _table()
    res = pair_fidelity(x, z, options=FidelityOptions(bins=2))
    per = res.per_pair.set_index(["column_1", "column_2"])
    # age × pay: r_x = 1; z's pay rises as age falls → r_z = −1 → 0
    assert per.loc[("age", "pay"), "metric"] == CORRELATION
    assert per.loc[("age", "pay"), "score"] == pytest.approx(0.0, abs=1e-15)
    assert per.loc[("age", "pay"), ["correlation_x", "correlation_z"]].tolist() == pytest.approx([1.0, -1.0])
    # pay × sex: x's bins (−∞, 2.5, ∞) → x cells (lo,f) (lo,m) (hi,f) (hi,m) .25 each; every z pay in the
    # high bin, every sex f → (hi,f) 1 → |.25 − 1| + 3 × .25 = 1.5 → TV .75 → .25
    assert per.loc[("pay", "sex"), "metric"] == CONTINGENCY
    assert per.loc[("pay", "sex"), "score"] == pytest.approx(0.25, abs=1e-15)
    # age × sex: x (lo,f) (lo,m) (hi,f) (hi,m); z (hi,f) (hi,f) (lo,f) (lo,f) → |.25 − .5|·2 + .25·2 = 1 → .5
    assert per.loc[("age", "sex"), "score"] == pytest.approx(0.5, abs=1e-15)
    assert (res.value, res.worst, res.pairs, res.pairs_total) == (pytest.approx(0.0, abs=1e-15), "age × pay", 3, 3)


def test_a_constant_column_is_not_scored_in_a_correlation_and_said_so() -> None:
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [2.0, 1.0, 3.0], "c": ["u", "v", "u"]})
    z = x.assign(b=[7.0, 7.0, 7.0])
    res = pair_fidelity(x, z)
    assert res.not_scored == "a × b (b is constant: no correlation)"
    assert res.pairs == 2 and math.isnan(res.per_pair.set_index(["column_1", "column_2"]).loc[("a", "b"), "score"])
    with pytest.raises(MeasureNotApplicable, match="scored no pair"):
        pair_fidelity(x[["a", "b"]], z[["a", "b"]])


def test_many_pairs_are_sampled_and_the_sample_is_said() -> None:
    rng = np.random.default_rng(0)
    x = pd.DataFrame(rng.normal(size=(50, 12)), columns=[f"c{i}" for i in range(12)])
    res = pair_fidelity(x, x, options=FidelityOptions(max_pairs=10, random_state=1))
    assert (res.pairs, res.pairs_total) == (10, 66)
    again = pair_fidelity(x, x, options=FidelityOptions(max_pairs=10, random_state=1))
    assert res.per_pair[["column_1", "column_2"]].equals(again.per_pair[["column_1", "column_2"]])
    with pytest.raises(ParameterError):
        FidelityOptions(bins=0)


def test_dates_are_compared_on_the_time_axis() -> None:
    x = pd.DataFrame({"d": pd.to_datetime(["2020-01-01", "2020-06-01", "2021-01-01"]), "n": [1.0, 2.0, 3.0]})
    z = x.assign(d=pd.to_datetime(["2020-01-01", "2020-06-01", "2030-01-01"]))
    res = column_fidelity(x, z)
    row = res.per_column.set_index("column").loc["d"]
    # two of three dates equal, the third later: F_x − F_z reaches 1 − 2/3 at 2021-01-01 → 1/3
    assert row["kind"] == "date" and row["score"] == pytest.approx(2 / 3, abs=1e-15)


# ------------------------------------------------------------------------ z = x scores 1
@settings(max_examples=25, deadline=None)
@given(st.data())
def test_z_equal_to_x_scores_one_everywhere(data: st.DataObject) -> None:
    n = data.draw(st.integers(min_value=2, max_value=30))
    num = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False), st.integers(-3, 3).map(float))
    x = pd.DataFrame({"u": data.draw(st.lists(num, min_size=n, max_size=n)),
                      "v": data.draw(st.lists(num, min_size=n, max_size=n)),
                      "c": data.draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))})
    x[["u", "v"]] = x[["u", "v"]].astype(float)
    order = data.draw(st.permutations(range(n)))
    for z in (x.copy(), x.iloc[list(order)].reset_index(drop=True)):  # no pairing: any order scores the same
        try:
            col = column_fidelity(x, z, ["u", "v"], ["c"])
        except MeasureNotApplicable:
            continue
        assert col.per_column["score"].dropna().eq(1.0).all() and col.value == 1.0
        try:
            pairs = pair_fidelity(x, z, ["u", "v"], ["c"])
        except MeasureNotApplicable:
            continue
        scored = pairs.per_pair["score"].dropna()
        assert scored.to_numpy() == pytest.approx(1.0, abs=1e-12) and pairs.value == pytest.approx(1.0, abs=1e-12)


# ------------------------------------------------------------------------ the verdict names the column
def _survey(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    x = pd.DataFrame({"age": rng.integers(18, 90, n).astype(float),
                      "charges": rng.lognormal(9.5, 0.8, n).round(2),
                      "stay": rng.integers(1, 15, n).astype(float),
                      "insurance": rng.choice(["private", "medicare", "medicaid"], n, p=[0.6, 0.3, 0.1]),
                      "readmitted": rng.choice(["no", "yes"], n, p=[0.8, 0.2])})
    return x, Schema(numeric=["age", "charges", "stay"], categorical=["insurance"],
                     class_column="readmitted")


def test_a_destroyed_column_makes_utility_reduced_by_name() -> None:
    x, schema = _survey()
    rng = np.random.default_rng(1)
    z = x.copy()
    z["age"] = (z["age"] + rng.normal(0, 1, len(z))).round()  # a little noise: kept
    opts = EvaluateOptions(measures=["column_fidelity", "pair_fidelity"], pairing="none")
    kept = evaluate(x, z, schema, options=opts)
    assert kept.verdicts["utility"].status == "kept", kept.verdicts["utility"].sentence
    # the charges replaced by huge values (DPCube's median of $995 608 against $15 694, and worse)
    z["charges"] = rng.uniform(5e5, 5e6, len(z))
    ev = evaluate(x, z, schema, options=opts)
    v = ev.verdicts["utility"]
    assert v.status == "reduced"
    assert "column_fidelity = 0 at charges (should be ≥ 0.8)" in v.sentence, v.sentence
    assert "pair_fidelity = " in v.sentence and " at " in v.sentence
    line = next(j for j in v.judged if j["measure"] == "column_fidelity")
    assert line["at"] == "charges" and line["judgement"] == "misses"
    doc = ev.document()
    assert doc["measures"]["column_fidelity"]["details"]["worst"] == "charges"
    # the report's summary names the worst columns and pairs, with numbers only
    from ppdm.report.summary import fidelity_summary

    fid = fidelity_summary(doc)
    assert fid is not None and fid.columns[0][:2] == ("charges", "KSComplement") and fid.columns[0][2] == 0.0
    assert fid.pairs[0][0].startswith("charges × ") or " × charges" in fid.pairs[0][0]
    assert fid.sentence().startswith("columns charges 0, ") and not fid.all_meet
    assert fid.status == {"column_fidelity": "misses", "pair_fidelity": "misses"}


def test_the_report_shows_the_worst_columns_and_pairs(tmp_path) -> None:
    from ppdm.report.html import render_evaluation_html

    x, schema = _survey(200)
    z = x.assign(charges=x["charges"] * 1000)
    ev = evaluate(x, z, schema, options=EvaluateOptions(measures=["column_fidelity", "pair_fidelity"],
                                                         pairing="none"))
    html = render_evaluation_html(ev.document())
    assert 'id="fidelity-column"' in html and 'id="fidelity-pair"' in html
    assert "Worst columns" in html and "<td>charges</td>" in html
    # no record: no value of charges, in x or z, is printed
    for v in list(x["charges"].head(20)) + list(z["charges"].head(20)):
        assert f"{v:g}" not in html and f"{v}" not in html


def test_registered_as_default_utility_measures() -> None:
    for name in ("column_fidelity", "pair_fidelity"):
        spec = MEASURES[name]
        assert (spec.kind, spec.direction, spec.threshold, spec.default, spec.paired, spec.needs_class) == (
            "utility", "higher", 0.8, True, False, False)
    assert MEASURES["pair_fidelity"].options == ("bins", "max_pairs")


def test_in_an_evaluation_dates_stay_dates_and_the_weight_is_a_number() -> None:
    from ppdm.experiments.evaluation import measurement_context

    x = pd.DataFrame({"d": pd.to_datetime(["2020-01-01", "2020-06-01", "2021-01-01", "2021-06-01"]),
                      "w": [1.5, 2.5, 3.5, 4.5], "c": ["u", "v", "u", "v"]})
    schema = Schema(numeric=["d"], categorical=["c"], weight="w", dates={"d": "%Y-%m-%d"})
    z = x.assign(w=[1.6, 2.6, 3.6, 4.6])
    ctx = measurement_context(x, z, schema, paired=False)  # dates on their time axis, as evaluate holds them
    per = MEASURES["column_fidelity"].fn(ctx).per_column.set_index("column")
    assert per.loc["d", "kind"] == "date" and per.loc["d", "score"] == 1.0
    # the weight as a number: every value up by 0.1 → F_x − F_z = 1/4 at most → 0.75 (as categories, none
    # shared: 0)
    assert per.loc["w", "metric"] == "KSComplement" and per.loc["w", "score"] == pytest.approx(0.75, abs=1e-15)
    assert ctx.cache["fidelity"] is not None and MEASURES["pair_fidelity"].fn(ctx).pairs == 3
