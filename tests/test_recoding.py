"""Global recoding and top/bottom coding: sdcMicro parity (globalRecode, topBotCoding), labels
that ``covers`` reads, monotone recoding, hierarchies from the schema file, rare categories,
dates, Dask partitions and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdm.anonymize.recoding import (
    Recode,
    TopBottomCoding,
    cut,
    interval_labels,
    r_jitter,
    round_breaks,
    round_width,
    sdc_breaks,
)
from ppdm.cli.app import app
from ppdm.data.generalization import covers, generalise, parse_interval
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError, SchemaError

runner = CliRunner()
METHODS = {"equidistant": "equal-width", "logEqui": "log-equal-width", "equalAmount": "equal-frequency"}


def _oracle(shared_dir: Path, tag: str) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    d = shared_dir / "oracles" / "sdcmicro_sdc"
    meta = json.loads((d / f"{tag}.json").read_text())
    gr = pd.read_csv(d / f"{tag}_globalrecode.csv", dtype=str, keep_default_na=False, na_values=[""])
    tb = pd.read_csv(d / f"{tag}_topbot.csv")
    return meta, gr, tb


# ---------------------------------------------------------------------- parity
@pytest.mark.parametrize("tag", ["adult", "testdata"])
def test_global_recode_matches_sdcmicro_breaks_labels_and_cells(shared_dir: Path, tag: str) -> None:
    meta, gr, _ = _oracle(shared_dir, tag)
    calls = meta["globalRecode"]
    for g in calls:
        c = g["column"]
        df = pd.DataFrame({c: gr[c].astype(float)})
        if "error" in g:
            # sdcMicro's logEqui fails on a zero ("'from' must be a finite number"); so does this
            with pytest.raises(ParameterError, match="positive values"):
                Recode(columns=[c], breaks=5, method="log-equal-width").fit(df)
            continue
        if g["spec"].startswith("n"):
            t = Recode(columns=[c], breaks=int(g["breaks_arg"][0]), method=METHODS[g["method"]])
        else:
            t = Recode(columns=[c], breaks=g["breaks_arg"], outside="missing")
        z = t.fit_transform(df)
        assert t.breaks_[c].tolist() == [float(b) for b in g["breaks_used"]], g["spec"]
        assert t.labels_[c] == g["levels"], g["spec"]
        assert t.include_lowest_[c] == g["include_lowest"]
        got = z[c].astype(object).where(z[c].notna(), None).tolist()
        want = gr[g["csv_column"]].astype(object).where(gr[g["csv_column"]].notna(), None).tolist()
        assert got == want, g["spec"]
        assert int(z[c].isna().sum()) == g["n_NA"]
        counts = z[c].value_counts().reindex(g["levels"]).fillna(0).astype(int).to_dict()
        assert counts == g["counts"]
        # every label parses as the interval it stands for, and covers its originals
        ok = z[c].notna().to_numpy()
        assert covers(z[c].astype(object)[ok], df[c][ok]).all()


@pytest.mark.parametrize("tag", ["adult", "testdata"])
def test_top_bottom_coding_matches_sdcmicro(shared_dir: Path, tag: str) -> None:
    meta, _, tb = _oracle(shared_dir, tag)
    for g in meta["topBotCoding"]:
        c = g["column"]
        kw: dict = {"top": None, "bottom": None, g["kind"]: g["value"], f"{g['kind']}_replacement": g["replacement"]}
        z = TopBottomCoding(columns=[c], **kw).fit_transform(tb[[c]])
        np.testing.assert_array_equal(z[c].to_numpy(dtype=float), tb[g["csv_column"]].to_numpy(dtype=float))
        assert z[c].dtype == tb[c].dtype
        assert int((z[c] != tb[c]).sum()) == g["n_changed"]
        assert z[c].min() == g["min_after"] and z[c].max() == g["max_after"]


def test_break_rules_by_hand() -> None:
    x = np.array([0.5, 1.0, 2.0, 3.5])
    # equal width: seq(−0.5, 4.5, length 3) = −0.5, 2, 4.5; rounded −0, 2, 4 (halves to even) distinct
    b, lowest, _ = sdc_breaks(x, 2, "equal-width")
    assert b.tolist() == [-0.0, 2.0, 4.0] and lowest
    assert interval_labels(b, True) == ["[-0,2]", "(2,4]"] or interval_labels(b, True) == ["[0,2]", "(2,4]"]
    # one interval: no include.lowest, as sdcMicro
    assert sdc_breaks(x, 1, "equal-width")[1] is False
    # cut: (a, b], the lowest closed only with include.lowest
    assert cut(np.array([0.0, 1.0, 1.5, 3.0, np.nan]), np.array([0.0, 1.0, 3.0]), False).tolist() == [-1, 0, 1, 1, -1]
    assert cut(np.array([0.0]), np.array([0.0, 1.0]), True).tolist() == [0]
    # labels gain digits until neighbouring break points differ (R's cut)
    assert interval_labels(np.array([1.000000001, 1.000000002, 2.0]), False)[0] == "(1.000000001,1.000000002]"
    assert interval_labels(np.array([1e7, 1e8]), False) == ["(10000000,1e+08]"]
    # a label must hold what its break points put in it: 100000.625 needs more than 8 digits
    b = np.array([0.0, 50000.3125, 100000.625])
    assert interval_labels(b, True) == ["[0,50000.312]", "(50000.312,100000.62]"]
    assert interval_labels(b, True, np.array([0.0, 100000.625])) == ["[0,50000.3125]", "(50000.3125,100000.625]"]


def test_round_widths_are_the_bands_a_statistics_office_publishes() -> None:
    # ages 17 to 90: a span of 73; about 7 intervals → 10.4 a cell → width 10
    assert round_width(17, 90, 7) == 10.0
    assert [round_width(17, 90, n) for n in (2, 3, 11, 24)] == [50.0, 20.0, 5.0, 2.0]
    assert round_breaks(np.array([17.0, 90.0]), 7).tolist() == [10, 20, 30, 40, 50, 60, 70, 80, 90]
    # the first break lies strictly below the smallest value; the last at or above the largest
    assert round_breaks(np.array([20.0, 41.0]), 2).tolist() == [10, 20, 30, 40, 50]
    assert round_breaks(np.array([0.12, 0.97]), 10).tolist() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    ages = pd.DataFrame({"age": [17, 25, 30, 31, 64, 90]})
    z = Recode(columns=["age"], breaks=7, method="round-width").fit_transform(ages)
    assert z["age"].astype(str).tolist() == ["(10,20]", "(20,30]", "(20,30]", "(30,40]", "(60,70]", "(80,90]"]
    # the same release as explicit 10-year break points
    e = Recode(columns=["age"], breaks=[10, 20, 30, 40, 50, 60, 70, 80, 90]).fit_transform(ages)
    assert z["age"].astype(str).tolist() == e["age"].astype(str).tolist()
    # a declared lower bound stops the first band there, closed
    sch = Schema(numeric=["age"], bounds={"age": (15, 120)})
    zb = Recode(columns=["age"], breaks=7, method="round-width", schema=sch).fit_transform(ages)
    assert zb["age"].astype(str).tolist()[0] == "[15,20]"


def test_tied_quantiles_are_merged_or_jittered_as_sdcmicro() -> None:
    x = np.array([1.0] * 10 + [2.0, 3.0])
    b, _, jit = sdc_breaks(x, 4, "equal-frequency")
    assert b.tolist() == [1.0, 3.0] and not jit  # the 0, 25, 50 and 75% quantiles all are 1
    rng = np.random.default_rng(0)
    jb, _, jit = sdc_breaks(x, 4, "equal-frequency", rng=rng, ties="jitter")
    assert jit and jb.size == 5 and np.all(np.diff(jb) > 0)
    # R's jitter: ±d/5 with d the smallest gap of the distinct values (here 1, 1, 1, 1, 3: d = 2)
    q = np.quantile(x, np.arange(5) / 4)
    j = r_jitter(q, np.random.default_rng(1))
    assert np.all(np.abs(j - q) <= 2 / 5) and np.any(np.abs(j - q) > 0.25)
    df = pd.DataFrame({"v": x})
    # a jittered lowest break may leave values out: refused unless they may become missing
    with pytest.raises(ParameterError, match="jittered break points"):
        for seed in range(50):
            Recode(columns=["v"], breaks=4, method="equal-frequency", ties="jitter", random_state=seed).fit(df)
    z = Recode(columns=["v"], breaks=4, method="equal-frequency", ties="jitter", outside="missing",
               random_state=3).fit_transform(df)
    assert len(z) == len(df)


# ---------------------------------------------------------------- properties
@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=60),
       st.integers(1, 8), st.sampled_from(["equal-width", "equal-frequency", "round-width"]))
def test_recoding_is_monotone_and_labels_cover_their_values(values, n, method) -> None:
    x = pd.DataFrame({"v": values})
    if x["v"].nunique() == 1:
        return
    t = Recode(columns=["v"], breaks=n, method=method)
    z = t.fit_transform(x)
    codes = z["v"].cat.codes.to_numpy()
    assert (codes >= 0).all()  # fitted breaks hold every value
    order = np.argsort(x["v"].to_numpy(), kind="stable")
    assert np.all(np.diff(codes[order]) >= 0)  # a larger value never gets an earlier interval
    assert covers(z["v"].astype(object), x["v"]).all()
    for lab in z["v"].cat.categories:
        assert parse_interval(lab) is not None
    assert generalise(x["v"], list(z["v"].cat.categories)).tolist() == z["v"].astype(object).tolist()


# ------------------------------------------------------------- categories, dates
def test_hierarchy_from_an_arx_file_in_the_schema(tmp_path: Path) -> None:
    (tmp_path / "edu.csv").write_text("Bachelors;Higher;Any\nMasters;Higher;Any\nHS-grad;School;Any\n"
                                      "11th;School;Any\n")
    (tmp_path / "schema.json").write_text(json.dumps({"categorical": ["edu", "sex"], "quasi_identifiers": ["edu"],
                                                       "hierarchies": {"edu": "edu.csv"}}))
    sch = Schema.load(tmp_path / "schema.json")
    assert sch.hierarchies["edu"]["Masters"] == ["Higher", "Any"]
    x = pd.DataFrame({"edu": ["Bachelors", "Masters", "HS-grad", "11th", None], "sex": list("mfmfm")})
    t = Recode(schema=sch)
    z = t.fit_transform(x)
    assert z["edu"].astype(object).tolist()[:4] == ["Higher", "Higher", "School", "School"]
    assert pd.isna(z["edu"].iloc[4]) and z["sex"].tolist() == x["sex"].tolist()
    out = t.output_schema()
    assert out.categories["edu"] == ["Higher", "School"]
    assert covers(z["edu"].astype(object), x["edu"], ancestors=out.hierarchies["edu"]).all()
    assert Recode(schema=sch, level=2).fit_transform(x)["edu"].astype(object).tolist()[:4] == ["Any"] * 4
    # the schema round trip keeps the hierarchy (inline)
    assert Schema.from_json(sch.to_json()).hierarchies == sch.hierarchies
    # a category the hierarchy leaves out: one clear line, exit 2
    bad = pd.DataFrame({"edu": ["Bachelors", "Doctorate"], "sex": ["m", "f"]})
    with pytest.raises(SchemaError, match="does not cover category 'Doctorate'"):
        Recode(schema=sch).fit(bad)
    src = tmp_path / "x.csv"
    bad.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "--schema", str(tmp_path / "schema.json"), "-m", "recode",
                              "-o", str(tmp_path / "z.csv")])
    out_text = res.output.strip()
    assert res.exit_code == 2 and len(out_text.splitlines()) == 1 and "Doctorate" in out_text, out_text
    assert not (tmp_path / "z.csv").exists()


def test_rare_categories_merge_until_the_group_is_large_enough() -> None:
    x = pd.DataFrame({"c": ["a"] * 10 + ["b"] * 6 + ["c"] * 2 + ["d"] * 1})
    t = Recode(columns=["c"], min_count=5, other="rest")
    z = t.fit_transform(x)
    # c (2) and d (1) are rare; together 3 < 5, so the next rarest (b, 6) joins them
    assert z["c"].astype(object).value_counts().to_dict() == {"a": 10, "rest": 9}
    assert t.output_schema().hierarchies["c"] == {"b": ["rest"], "c": ["rest"], "d": ["rest"]}
    with pytest.raises(ParameterError, match="already one of its categories"):
        Recode(columns=["c"], min_count=5, other="a").fit(x)


def test_dates_become_months_or_years() -> None:
    x = pd.DataFrame({"d": pd.to_datetime(["2021-03-17", "2020-12-31", None, "2021-03-01"]), "v": [1.0, 2, 3, 4]})
    sch = Schema(numeric=["d", "v"], dates={"d": None})
    z = Recode(schema=sch, columns=["d"]).fit_transform(x)
    assert z["d"].tolist()[:2] == ["2021-03", "2020-12"] and pd.isna(z["d"].iloc[2])
    z = Recode(schema=sch, columns=["d"], date_period="year").fit_transform(x)
    assert z["d"].dropna().tolist() == ["2021", "2020", "2021"]
    assert generalise(x["d"], ["2020", "2021"]).tolist()[:2] == ["2021", "2020"]


def test_labelled_top_coding_and_quantile_bounds() -> None:
    x = pd.DataFrame({"h": [10, 20, 40, 40, 60, 80, 99]})
    t = TopBottomCoding(columns=["h"], top=60, top_replacement="label")
    z = t.fit_transform(x)
    assert z["h"].astype(object).tolist() == ["10", "20", "40", "40", "60", "(60,Inf)", "(60,Inf)"]
    assert list(z["h"].cat.categories) == ["10", "20", "40", "60", "(60,Inf)"]
    assert covers(z["h"].astype(object), x["h"]).all()
    # quantile bounds (R's type 7): 50% is 40, 20% is 20 + 0.2·(40 − 20) = 24
    q = TopBottomCoding(columns=["h"], top="50%", bottom="q0.2").fit(x)
    assert q.bounds_["h"] == (24.0, 40.0)
    assert TopBottomCoding(columns=["h"], top="50%").fit_transform(x)["h"].tolist() == [10, 20, 40, 40, 40, 40, 40]
    with pytest.raises(ParameterError, match="not a whole number"):
        TopBottomCoding(columns=["h"], top=60, top_replacement=65.5).fit(x)
    with pytest.raises(ParameterError, match="categorical"):
        TopBottomCoding(columns=["c"]).fit(pd.DataFrame({"c": list("ab"), "h": [1, 2]}))


# --------------------------------------------------------------------- scale
def test_recoding_and_top_coding_run_partition_wise_on_dask() -> None:
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"age": rng.integers(17, 91, 2000), "inc": rng.lognormal(10, 1, 2000)})
    for t in (Recode(columns=["age"], breaks=[0, 20, 40, 60, 90]), TopBottomCoding(columns=["inc"], top="95%")):
        t.fit(x)
        lazy = t.transform(dd.from_pandas(x, npartitions=4))
        z = lazy.compute()
        pd.testing.assert_frame_equal(z, t.transform(x))
        assert z.dtypes.equals(lazy.dtypes)


# ----------------------------------------------------------------- bad input
def test_breaks_that_leave_values_outside_are_refused(tmp_path: Path) -> None:
    x = pd.DataFrame({"age": [15, 25, 35, 75], "s": list("abab")})
    with pytest.raises(ParameterError, match="leave 2 value"):
        Recode(columns=["age"], breaks=[20, 30, 40, 50, 60, 70]).fit(x)
    z = Recode(columns=["age"], breaks=[20, 30, 40, 50, 60, 70], outside="missing").fit_transform(x)
    assert z["age"].isna().tolist() == [True, False, False, True]
    src = tmp_path / "x.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "-m", "recode", "-p", "columns=age",
                              "-p", "breaks=[20,30,40,50,60,70]", "-o", str(tmp_path / "z.csv")])
    out = res.output.strip()
    assert res.exit_code == 2 and len(out.splitlines()) == 1 and "outside every interval" in out, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]
    with pytest.raises(PPDMError, match="increase strictly"):
        Recode(columns=["age"], breaks=[30, 20]).fit(x)


def test_a_recoded_release_is_evaluated_on_its_own_categories(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = pd.DataFrame({"age": rng.integers(17, 91, 400), "sex": rng.choice(["f", "m"], 400),
                      "job": rng.choice(list("abcdef"), 400), "y": rng.choice(["p", "q"], 400)})
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "-m", "recode", "-p", "columns=age", "-p",
                              "breaks=[10,30,50,70,90]", "--class", "y", "--qi", "age,sex,job", "-o", str(out)])
    assert res.exit_code == 0, res.output
    prov = json.loads((tmp_path / "z.provenance.json").read_text())
    assert prov["output"]["schema"]["categories"]["age"] == ["(10,30]", "(30,50]", "(50,70]", "(70,90]"]
    res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(out), "--class", "y", "--qi", "age,sex,job",
                              "--measures", "k_anonymity,prediction_accuracy", "--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{"):])["measures"]
    assert doc["k_anonymity"]["status"] == "computed" and doc["prediction_accuracy"]["status"] == "computed"
    # the original's value is counted on the bands as well: the release changed nothing else
    assert doc["k_anonymity"]["value"] == pytest.approx(doc["k_anonymity"]["details"]["original"])
