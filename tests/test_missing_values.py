"""Real tables in: missing cells, codes with leading zeros, dates and booleans through every
technique, and the measures' treatment of missing cells (docs/missing_values.md).

The round trip is parametrized over the technique registry, so a new technique is checked
as soon as it is registered: with 10–30 % of every attribute missing, the release keeps the
table's dtypes, its missing cells (techniques whose ``missing_policy`` is ``"kept"``) or models
them (``"modelled"``), and, written by ``ppdm anonymize --missing keep``, has codes with
their leading zeros, dates in the source format, booleans, whole numbers without a decimal
point and no more decimals than the source columns.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mixed_table import CODES, MISSING_SHARE, PARAMS, mixed_table
from typer.testing import CliRunner

from ppdm.anonymize.registry import TECHNIQUES, _load_all, make_technique
from ppdm.cli.app import app
from ppdm.data.io import read_table
from ppdm.data.provenance import in_input_order, read_private
from ppdm.data.schema import Schema
from ppdm.errors import PPDMError, SchemaError

_load_all()
NAMES = sorted(TECHNIQUES)
runner = CliRunner()
ATTRS = list(MISSING_SHARE)


def _schema(df: pd.DataFrame) -> Schema:
    return Schema.infer(df, "label", categorical=["grade"])


def _release(name: str, df: pd.DataFrame, seed: int = 3, *, fitted: list | None = None) -> pd.DataFrame:
    tech = make_technique(name, class_column="label", schema=_schema(df), random_state=seed,
                          params=PARAMS.get(name, {}))
    if fitted is not None:
        fitted.append(tech)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tech.fit_transform(df)


def test_every_technique_states_a_missing_policy() -> None:
    for name, cls in TECHNIQUES.items():
        assert cls.missing_policy in ("kept", "modelled"), name
        assert cls.handles_missing, name


@pytest.mark.parametrize("name", NAMES)
def test_mixed_table_round_trip_in_memory(name: str) -> None:
    x = mixed_table()
    fitted: list = []
    z = _release(name, x, fitted=fitted)
    assert list(z.columns) == list(x.columns) and list(z.index) == list(x.index)
    # the input's dtypes, except columns the technique declares otherwise (recoded labels,
    # suppressed integer keys)
    declared = fitted[0]._output_dtypes(x)
    assert list(z.dtypes) == [declared.get(c, x[c].dtype) for c in x.columns], name
    policy = TECHNIQUES[name].missing_policy
    if policy == "kept" and TECHNIQUES[name].makes_missing:
        # every missing cell stays missing; local suppression blanks observed key cells on purpose
        assert (z.isna() | ~x.isna()).all().all()
    elif policy == "kept":
        # every missing cell stays missing, and no observed cell becomes missing
        pd.testing.assert_frame_equal(z.isna(), x.isna())
    else:
        for c in ATTRS:
            share = z[c].isna().mean()
            assert abs(share - MISSING_SHARE[c]) < 0.15, (c, share)
    assert z["label"].notna().all()
    assert set(z["zip"].dropna()) <= set(CODES)
    assert set(z["grade"].dropna()) <= set(x["grade"].dropna())
    assert set(z["member"].dropna()) <= {True, False}
    visit = z["visit"].dropna()
    if "visit" not in declared:  # recoding releases a month label instead
        assert (visit == visit.dt.normalize()).all()  # a date stays a date, no time of day
    # same seed, same release
    pd.testing.assert_frame_equal(_release(name, x), z)


@pytest.mark.parametrize("name", NAMES)
def test_mixed_table_round_trip_through_the_cli(name: str, tmp_path: Path) -> None:
    x = mixed_table()
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    params = [a for k, v in PARAMS.get(name, {}).items() for a in ("-p", f"{k}={v!r}")]
    res = runner.invoke(app, ["anonymize", str(src), "-m", name, "-o", str(out), "--class", "label", "--seed", "3", "--experiment-seed",
                              "--missing", "keep", "--categorical", "grade", "--allow-unchanged", "--allow-verbatim",
                              "--allow-untouched-keys", *params])
    assert res.exit_code == 0, res.output
    text = pd.read_csv(out, dtype=str, keep_default_na=False)
    cell = {c: text[c][text[c] != ""] for c in text.columns}
    import json

    from ppdm.data.provenance import provenance_path

    released = json.loads(provenance_path(out).read_text())["output"].get("schema")
    recoded = set() if released is None else set(released["categorical"]) - set(_schema(x).categorical)
    assert cell["zip"].isin(CODES).all()  # leading zeros kept
    assert cell["grade"].str.fullmatch(r"[1-4]").all()
    assert cell["member"].isin(["True", "False"]).all()
    formats = {"age": r"-?\d+",  # whole numbers, no ".0"
               "visit": r"\d{4}-\d{2}-\d{2}",  # the source's date format
               # no more decimals than the source columns had (and no float noise such as 0.5720000000000001)
               "income": r"-?\d+(\.\d{1,2})?", "ratio": r"-?\d+(\.\d{1,3})?"}
    for c, pattern in formats.items():
        if c not in recoded:  # a recoded column holds interval or period labels
            assert cell[c].str.fullmatch(pattern).all(), (c, cell[c].head().tolist())
    if TECHNIQUES[name].missing_policy == "kept":
        src_text = pd.read_csv(src, dtype=str, keep_default_na=False)
        # the release is shuffled: its private log puts each row beside its original again
        text, pos = in_input_order(text, read_private(out))
        src_text = src_text.iloc[pos].reset_index(drop=True)
        blank, src_blank = text == "", src_text == ""
        if TECHNIQUES[name].makes_missing:
            assert (blank | ~src_blank).all().all()
        else:
            pd.testing.assert_frame_equal(blank, src_blank)
    # read back with the release's schema, the release has the original's types (recoded
    # columns are categorical labels)
    from ppdm.data.schema import Schema

    sch = _schema(read_table(src, categorical=["grade"]))
    zsch = sch if released is None else Schema.from_dict(released)
    xr, zr = read_table(src, schema=sch), read_table(out, schema=zsch)
    keep = [c for c in xr.columns if c not in recoded]
    assert list(zr[keep].dtypes) == list(xr[keep].dtypes)


def test_missing_class_value_is_refused_by_every_technique() -> None:
    x = mixed_table()
    x.loc[7, "label"] = None
    for name in NAMES:
        if TECHNIQUES[name].handles_missing_class:
            # DPCube leaves the record out as part of its mechanism (an abort would depend on x)
            z = _release(name, x)
            assert z["label"].notna().all()
            continue
        with pytest.raises(SchemaError, match="class column 'label' has a missing value at row 7"):
            _release(name, x)


def test_cli_keeps_refusing_missing_cells_unless_told() -> None:
    res = runner.invoke(app, ["anonymize", "builtin:adult", "-m", "uniform-noise", "-o", "/tmp/never.csv"])
    assert res.exit_code == 2
    assert "--missing keep" in " ".join(res.output.split()) and "--missing drop" in " ".join(res.output.split())
    res = runner.invoke(app, ["anonymize", "builtin:wine", "-m", "uniform-noise", "-o", "/tmp/never.csv",
                              "--missing", "maybe"])
    assert res.exit_code == 2 and "'keep'" in res.output


# --------------------------------------------------------------------------- techniques
def test_mdav_groups_with_missing_cells_share_observed_centroids() -> None:
    from ppdm.anonymize.microaggregation import MDAV, nan_group_means

    x = pd.DataFrame({"a": [1.0, 2.0, np.nan, 10.0, 11.0, 12.0], "b": [5.0, np.nan, 5.0, 1.0, 1.0, np.nan],
                      "y": list("ppqqpq")})
    # continuous attributes (the inferred schema would take whole-valued floats for whole numbers)
    t = MDAV(schema=Schema(["a", "b"], [], "y"), k=3, random_state=0)
    z = t.fit_transform(x)
    g = t.groups_
    assert sorted(np.bincount(g)) == [3, 3]
    # hand-computed: the two groups are {0, 1, 2} and {3, 4, 5}
    assert len(set(g[:3])) == 1 and len(set(g[3:])) == 1 and g[0] != g[3]
    np.testing.assert_allclose(z["a"], [1.5, 1.5, np.nan, 11.0, 11.0, 11.0])
    np.testing.assert_allclose(z["b"], [5.0, np.nan, 5.0, 1.0, 1.0, np.nan])
    # as whole-number attributes, the centroids are rounded to whole numbers
    whole = MDAV(class_column="y", k=3).fit_transform(x)
    np.testing.assert_allclose(whole["a"], [2.0, 2.0, np.nan, 11.0, 11.0, 11.0])
    np.testing.assert_allclose(nan_group_means(np.array([[np.nan], [np.nan]]), np.array([0, 0])), [[np.nan]])


def test_gadp_complete_records_keep_exact_moments() -> None:
    from ppdm.anonymize.gadp import GADP

    rng = np.random.default_rng(1)
    n = 400
    s = rng.normal(size=n)
    x = pd.DataFrame({"a": 2 * s + rng.normal(size=n), "b": s + rng.normal(size=n), "s": s, "y": "k"})
    x.loc[::7, "a"] = np.nan
    x.loc[::11, "s"] = np.nan
    z = GADP(class_column="y", confidential=["a", "b"], exact=True, clip_to_range=False, random_state=2).fit_transform(x)
    pd.testing.assert_frame_equal(z.isna(), x.isna())
    done = x[["a", "b", "s"]].notna().all(axis=1)
    # EGADP: the complete records' means and covariances are the original's exactly
    np.testing.assert_allclose(z.loc[done, ["a", "b"]].mean(), x.loc[done, ["a", "b"]].mean(), atol=1e-9)
    np.testing.assert_allclose(np.cov(z.loc[done, ["a", "b", "s"]].T), np.cov(x.loc[done, ["a", "b", "s"]].T),
                               atol=1e-9)
    assert (z.loc[~done & x["a"].notna(), "a"] != x.loc[~done & x["a"].notna(), "a"]).all()


def test_forest_framework_permutes_observed_values_only() -> None:
    from ppdm.anonymize.forest_framework import permute_observed

    rng = np.random.default_rng(0)
    labels = np.array([0, 0, 0, 1, 1, 1, 1])
    observed = np.array([True, False, True, True, True, False, True])
    for _ in range(20):
        src = permute_observed(labels, observed, rng)
        assert (src[~observed] == np.flatnonzero(~observed)).all()  # a missing cell keeps its place
        assert observed[src[observed]].all() and (labels[src] == labels).all()
        assert sorted(src) == list(range(7))


def test_dpcube_models_missing_cells_as_values_of_the_domain() -> None:
    from ppdm.anonymize.differential_privacy import DPCube

    x = pd.DataFrame({"a": [1.0, np.nan] * 200, "g": ["p", None, "q", "q"] * 100, "y": ["s", "t"] * 200})
    # which columns may be missing is declared (nullable=), like the rest of the domain
    t = DPCube(class_column="y", epsilon=1e6, bins=2, random_state=0, bounds={"a": (0, 2)},
               domains={"g": ["p", "q"], "y": ["s", "t"]}, nullable=["a", "g"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z = t.fit(x).transform(x)
    assert not any("from the data" in str(w.message) for w in caught)
    assert t.privacy_report_["domain"]["nullable"] == ["a", "g"] and t.privacy_report_["differentially_private"]
    # with (almost) no noise the synthetic table has the same share of missing cells
    assert z["a"].isna().mean() == pytest.approx(0.5, abs=0.02)
    assert z["g"].isna().mean() == pytest.approx(0.25, abs=0.02)
    assert z["a"].dropna().between(0, 2).all() and set(z["g"].dropna()) <= {"p", "q"}


def test_rounding_generalises_dates_to_month_or_year() -> None:
    from ppdm.anonymize.rounding import Rounding
    from ppdm.data.types import generalize_dates

    # hand-computed: 2021-03-17 is day 18703; its month starts on day 18687, its year on 18628
    np.testing.assert_array_equal(generalize_dates(np.array([18703.0, np.nan]), "month"), [18687.0, np.nan])
    np.testing.assert_array_equal(generalize_dates(np.array([18703.0]), "year"), [18628.0])
    x = pd.DataFrame({"d": pd.to_datetime(["2021-03-17", "2020-12-31", None, "2021-03-01"]), "v": [1.0, 2, 3, 4],
                      "y": list("abab")})
    z = Rounding(class_column="y", columns=["d"], date_period="month").fit_transform(x)
    assert z["d"].dt.strftime("%Y-%m-%d").tolist()[:2] == ["2021-03-01", "2020-12-01"]
    assert z["d"].isna().tolist() == [False, False, True, False]
    z = Rounding(class_column="y", columns=["d"], date_period="year").fit_transform(x)
    assert z["d"].dt.year.dropna().tolist() == [2021, 2020, 2021] and (z["d"].dropna().dt.day_of_year == 1).all()
    with pytest.raises(PPDMError, match="date_period"):
        Rounding(class_column="y", date_period="week").fit(x)


def test_noise_on_a_date_is_noise_on_its_time_axis(tmp_path: Path) -> None:
    src = tmp_path / "x.csv"
    src.write_text("when,v,y\n" + "".join(f"{d:02d}/03/2021 10:{d:02d},{d % 5},{'ab'[d % 2]}\n" for d in range(1, 29)))
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", str(src), "-m", "gaussian-noise", "-p", "level=1.0", "--class", "y",
                              "--date", "when=%d/%m/%Y %H:%M", "--seed", "1", "--experiment-seed", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = pd.read_csv(out, dtype=str)["when"]
    assert text.str.fullmatch(r"\d{2}/\d{2}/\d{4} \d{2}:\d{2}").all()  # written back in the source format
    days = pd.to_datetime(text, format="%d/%m/%Y %H:%M")
    orig = pd.to_datetime(pd.read_csv(src, dtype=str)["when"], format="%d/%m/%Y %H:%M")
    assert (days != orig).mean() > 0.8 and abs((days - orig).dt.days).max() < 60


# ----------------------------------------------------------------------------- measures
def test_numeric_measures_leave_missing_cells_out_hand_computed() -> None:
    from ppdm.metrics.info_loss import il1s, sse_sst
    from ppdm.metrics.risk import ddr, idr

    x = pd.DataFrame({"a": [0.0, 2.0, 4.0, np.nan], "b": [1.0, 1.0, 3.0, 3.0]})
    z = pd.DataFrame({"a": [1.0, np.nan, 4.0, 5.0], "b": [1.0, 2.0, 3.0, 3.0]})
    # IL1s: a's cells observed in both are rows 0 and 2, |Δ| = 1 + 0; sd(a) over x's observed cells = 2
    # b: |Δ| = 1, sd(b) = sqrt(4/3); sum = 1/(√2·2) + 1/(√2·sqrt(4/3))
    r = il1s(x, z)
    want = 1 / (np.sqrt(2) * 2) + 1 / (np.sqrt(2) * np.sqrt(4 / 3))
    assert r.value == pytest.approx(want) and r.cells == 6
    assert il1s(x, z, form="mean").value == pytest.approx(want / 6)
    # SSE/SST over the cells observed in both: a → rows 0, 2: SSE 1, SST (0−2)² + (4−2)² = 8; b: SSE 1, SST 4
    assert sse_sst(x, z).value == pytest.approx(100 * 2 / 12)
    # DDR links the records complete in both tables, rows 0 and 2, among themselves: both link to their own
    d = ddr(x, z, standardize="none")
    assert d.n == 2 and d.incomplete == 2 and d.value == pytest.approx(1.0)
    # IDR judges each record on its cells observed in both
    i = idr(x, z, k=0.0)
    assert i.at_risk == 2  # row 2 (equal on a and b) and row 3 (equal on b; a missing in x)


def test_evaluate_keeps_missing_cells_and_every_measure_runs(tmp_path: Path) -> None:
    x = mixed_table(300)
    src = tmp_path / "x.csv"
    x.to_csv(src, index=False)
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", str(src), "-m", "gaussian-noise", "-p", "level=0.3", "-o", str(out),
                              "--class", "label", "--missing", "keep", "--categorical", "grade", "--allow-verbatim"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(out), "--class", "label", "--missing", "keep",
                              "--categorical", "grade", "--measures", "all", "--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    import json

    obj = json.loads(res.stdout[res.stdout.index("{"):])
    for name in ("il1s", "sse_sst", "ddr", "idr", "rule_accuracy", "prediction_accuracy", "release_check", "sers"):
        assert obj["measures"][name]["status"] == "computed", (name, obj["measures"][name].get("reason"))
        assert np.isfinite(obj["measures"][name]["value"]), name
    assert obj["measures"]["ddr"]["details"]["incomplete"] > 0


def test_c45_routes_missing_values_as_weka_j48() -> None:
    """C4.5 against J48 (Weka 3.6.14, ``-M 2``) on the full credit and wbc tables, missing values
    included (tests/data/j48_missing_*.txt): same printed tree, fractional counts included, and
    the same training accuracy."""
    from test_trees_j48_parity import by_value, tree_body

    from ppdm.datasets import load
    from ppdm.trees import C45Classifier
    from ppdm.trees.c45 import j48_summary

    here = Path(__file__).parent / "data"
    for name in ("credit", "wbc"):
        df, schema = load(name)
        assert df[schema.attributes].isna().to_numpy().any()
        X, y = df[schema.attributes], df[schema.class_column]
        tree = C45Classifier(min_leaf=2, schema=schema).fit(X, y)
        expected = (here / f"j48_missing_{name}_M2.txt").read_text()
        assert by_value(tree_body(tree.export_text())) == by_value(tree_body(expected)), name
        acc = float(re.search(r"Correctly Classified Instances\s+\d+\s+([\d.]+) %", expected).group(1))
        assert round(j48_summary(tree, X, y)["train_accuracy_pct"], 4) == pytest.approx(acc, abs=1e-4)


def test_missing_values_doc_states_every_technique_policy() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "missing_values.md").read_text()
    rows: dict[str, str] = {}
    for names, policy in re.findall(r"^\| ((?:`[\w-]+`(?:, )?)+) \| (kept|modelled) \|", text, flags=re.M):
        for n in re.findall(r"`([\w-]+)`", names):
            rows[n] = policy
    assert rows == {n: TECHNIQUES[n].missing_policy for n in NAMES}


def test_reconstruction_keeps_missing_cells_dates_and_precision(tmp_path: Path) -> None:
    x = mixed_table()
    src, z, r = tmp_path / "x.csv", tmp_path / "z.csv", tmp_path / "r.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "-m", "random-substitution", "-p", "gamma=5", "-o", str(z),
                              "--class", "label", "--missing", "keep", "--categorical", "grade", "--seed", "2", "--experiment-seed"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["reconstruct", str(z), "--out", str(r)])
    assert res.exit_code == 0, res.output
    zt, rt = pd.read_csv(z, dtype=str, keep_default_na=False), pd.read_csv(r, dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(zt == "", rt == "")  # missing cells stay missing
    cell = rt["visit"][rt["visit"] != ""]
    assert cell.str.fullmatch(r"\d{4}-\d{2}-\d{2}").all() and cell.str.startswith(("2019", "2020", "2021")).all()
    assert rt["ratio"][rt["ratio"] != ""].str.fullmatch(r"-?\d+(\.\d{1,3})?").all()
    assert rt["zip"][rt["zip"] != ""].isin(CODES).all()
