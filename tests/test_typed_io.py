"""Typed reading and writing: a schema's types apply as a table is read, the same types are
inferred without one, dates and codes are written back as they were, and releases carry no
more decimals than their source columns (ppdm/data/io.py, ppdm/data/types.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.io import align_dtypes, read_table, write_table
from ppdm.data.schema import Schema
from ppdm.data.types import (
    decimals_of,
    detect_date_format,
    from_time_axis,
    parse_decimals,
    round_to_decimals,
    source_decimals,
    to_time_axis,
)
from ppdm.errors import PPDMError, SchemaError

runner = CliRunner()

#: this file is not about the release gate (tests/test_release_gate.py): weak releases are written
GATE_OFF = ["--allow-verbatim", "--allow-untouched-keys"]

TEXT = """zip,flag,n,visit,when,x,label
0150,True,1,2021-03-04,2021-03-04 10:11:12,0.572,a
1200,,,2021-03-05,,1.25,b
0001,False,3,,2021-01-01 00:00:00,,a
"""


# ---------------------------------------------------------------------------- inference
def test_inferred_types_and_an_exact_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text(TEXT)
    df = read_table(src)
    assert df["zip"].tolist() == ["0150", "1200", "0001"]  # a code keeps its leading zero
    assert str(df["flag"].dtype) == "boolean" and df["flag"].isna().tolist() == [False, True, False]
    assert str(df["n"].dtype) == "Int64" and df["n"].isna().tolist() == [False, True, False]
    assert pd.api.types.is_datetime64_any_dtype(df["visit"]) and pd.api.types.is_datetime64_any_dtype(df["when"])
    assert df.attrs["date_formats"] == {"visit": "%Y-%m-%d", "when": "%Y-%m-%d %H:%M:%S"}
    sch = Schema.infer(df, "label")
    assert sch.numeric == ["n", "visit", "when", "x"] and sch.categorical == ["zip", "flag"]
    assert sch.dates == {"visit": "%Y-%m-%d", "when": "%Y-%m-%d %H:%M:%S"} and "visit" in sch.integer
    out = tmp_path / "o.csv"
    write_table(df, out)
    assert out.read_text() == TEXT


def test_date_formats_are_detected_only_when_unambiguous() -> None:
    s = pd.Series
    assert detect_date_format(s(["2021-03-04", None])) == "%Y-%m-%d"
    assert detect_date_format(s(["2021-03-04T10:11:12"])) == "%Y-%m-%dT%H:%M:%S"
    assert detect_date_format(s(["17/03/2021", "01/02/2021"])) == "%d/%m/%Y"  # 17 cannot be a month
    assert detect_date_format(s(["03/17/2021", "01/02/2021"])) == "%m/%d/%Y"
    assert detect_date_format(s(["03/04/2021", "01/02/2021"])) is None  # either order fits: stays text
    assert detect_date_format(s(["2021-02-30"])) is None  # not a date
    assert detect_date_format(s(["abc", "2021-03-04"])) is None


def test_time_axis_hand_computed() -> None:
    d = pd.Series(pd.to_datetime(["1970-01-02 00:00", "2021-03-17 12:00", None]))
    np.testing.assert_array_equal(to_time_axis(d), [1.0, 18703.5, np.nan])
    back = from_time_axis(np.array([1.4, 18703.5, np.nan]), d, "%Y-%m-%d", "d")
    assert back.dt.strftime("%Y-%m-%d").tolist()[:2] == ["1970-01-02", "2021-03-18"]  # rounded to a day
    back = from_time_axis(np.array([18703.5]), d.iloc[:1], "%Y-%m-%d %H:%M", "d")
    assert back.iloc[0] == pd.Timestamp("2021-03-17 12:00")
    with pytest.raises(PPDMError, match="'d'"):
        from_time_axis(np.array([1e9]), d.iloc[:1], None, "d")


# ------------------------------------------------------------------------- with a schema
def test_schema_types_apply_as_the_file_is_read(tmp_path: Path) -> None:
    src = tmp_path / "s.csv"
    src.write_text("code,grade,born,n,y\n007,1,17/03/1990,4,a\n120,2,01/12/1985,,b\n008,1,,6,a\n")
    sch = Schema.from_dict({"numeric": ["n"], "categorical": ["code", "grade"], "class_column": "y",
                            "integer": ["n"], "dates": {"born": "%d/%m/%Y"}})
    assert sch.numeric == ["n", "born"]  # a date named only under "dates" is a numeric attribute
    df = read_table(src, schema=sch)
    assert df["code"].tolist() == ["007", "120", "008"]
    assert df["grade"].tolist() == ["1", "2", "1"]  # an integer-coded category stays a category (text)
    assert str(df["n"].dtype) == "Int64"
    assert df["born"].iloc[0] == pd.Timestamp("1990-03-17")
    out = tmp_path / "o.csv"
    write_table(df, out, date_formats=sch.dates)
    assert out.read_text() == src.read_text()
    with pytest.raises(PPDMError, match=r"'born'.*'12/31/1985'"):
        bad = tmp_path / "b.csv"
        bad.write_text("code,grade,born,n,y\n007,1,12/31/1985,4,a\n")
        read_table(bad, schema=sch)
    with pytest.raises(SchemaError, match="strftime"):
        Schema.from_dict({"numeric": ["d"], "dates": {"d": "day-month-year"}})
    assert Schema.from_json(sch.to_json()) == sch


def test_type_flags_and_their_conflict_with_a_schema(tmp_path: Path) -> None:
    src = tmp_path / "s.csv"
    rows = "".join(f"{i % 4 + 1},{i * 1.5},{'ab'[i % 2]},2021-01-{i % 28 + 1:02d}\n" for i in range(40))
    src.write_text("grade,v,y,day\n" + rows)
    df = read_table(src, categorical=["grade"], dates={"day": None})
    assert df["grade"].dtype != np.int64 and pd.api.types.is_datetime64_any_dtype(df["day"])
    sch_file = tmp_path / "s.json"
    Schema.infer(df, "y").save(sch_file)
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "-m", "uniform-noise", "--class", "y", "--schema", str(sch_file),
                              "--categorical", "grade", "-o", str(out)])
    assert res.exit_code == 2 and "not both" in res.output and not out.exists()
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "-m", "uniform-noise", "--class", "y", "--categorical", "nope",
                              "-o", str(out)])
    assert res.exit_code == 2 and "'nope'" in res.output
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "-m", "uniform-noise", "--class", "y", "--categorical", "grade",
                              "--seed", "1", "--experiment-seed", "-p", "level=0.5", "-o", str(out)])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(out, dtype=str)
    assert z["day"].str.fullmatch(r"2021-\d{2}-\d{2}").all() and z["grade"].isin(list("1234")).all()


def test_a_release_is_read_with_the_types_of_its_original(tmp_path: Path) -> None:
    x = pd.DataFrame({"code": ["01", "02"], "n": pd.array([1, None], dtype="Int64"), "f": [True, False]})
    z = pd.DataFrame({"code": [1, 2], "n": [1.0, np.nan], "f": ["True", "False"]})
    out = align_dtypes(z, x, "z")
    assert list(out.dtypes) == list(x.dtypes)
    assert out["code"].tolist() == ["1", "2"]  # a code z lost its zero in: compared as text, it differs
    with pytest.raises(PPDMError, match="'n'"):
        align_dtypes(pd.DataFrame({"n": ["one", "two"]}), x[["n"]], "z")


# ----------------------------------------------------------------------------- decimals
def test_decimals_hand_computed() -> None:
    assert decimals_of(np.array([0.572, 1.25, np.nan])) == 3
    assert decimals_of(np.array([1.0, 2.0])) == 0
    assert decimals_of(np.array([0.1 + 0.2])) is None  # 0.30000000000000004 needs 17 digits
    assert decimals_of(np.array([1e20])) is None
    df = pd.DataFrame({"a": [0.5, 1.25], "b": [1, 2], "c": [0.1 + 0.2, 1.0]})
    assert source_decimals(df, ["a", "b", "c"]) == {"a": 2}
    r = round_to_decimals(pd.DataFrame({"a": [0.5720000000000001, -0.0004]}), {"a": 3})
    assert r["a"].tolist() == [0.572, 0.0] and str(r["a"].iloc[1]) == "0.0"
    assert parse_decimals("2", ["a", "b"]) == {"a": 2, "b": 2}
    assert parse_decimals("a=0, b=3", ["a", "b"]) == {"a": 0, "b": 3}
    assert parse_decimals(None, ["a"]) is None
    for bad in ("x", "a=-1", "c=2", "99"):
        with pytest.raises(PPDMError, match="--decimals"):
            parse_decimals(bad, ["a", "b"])


@settings(max_examples=80)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=20), st.integers(0, 6))
def test_rounding_to_the_source_decimals_never_changes_a_source_value(vals: list[float], d: int) -> None:
    v = np.round(np.array(vals), d)
    k = decimals_of(v)
    assert k is not None and k <= d
    np.testing.assert_array_equal(np.round(v, k), v)
    # and its shortest text has no more than k decimals
    assert all(len(repr(float(a)).split(".")[1].rstrip("0")) <= k for a in v if "e" not in repr(float(a)))


def test_releases_have_no_float_noise_and_decimals_can_be_set(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 200
    x = pd.DataFrame({"a": np.round(rng.normal(50, 10, n), 2), "b": np.round(rng.random(n), 3),
                      "k": rng.integers(0, 9, n), "y": rng.choice(["p", "q"], n)})
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    for method in ("gadp", "mdav", "gaussian-noise"):
        res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "-m", method, "--class", "y", "-o", str(out)])
        assert res.exit_code == 0, res.output
        z = pd.read_csv(out, dtype=str)
        assert z["a"].str.fullmatch(r"-?\d+(\.\d{1,2})?").all(), (method, z["a"].head().tolist())
        assert z["b"].str.fullmatch(r"-?\d+(\.\d{1,3})?").all(), method
        assert z["k"].str.fullmatch(r"-?\d+").all(), method
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "-m", "gadp", "--class", "y", "-o", str(out),
                              "--decimals", "a=0,b=1"])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(out, dtype=str)
    assert z["a"].str.fullmatch(r"-?\d+\.0").all() and z["b"].str.fullmatch(r"-?\d+\.\d").all()
    import json

    prov = json.loads((tmp_path / "z.provenance.json").read_text())
    assert prov["output"]["decimals"] == {"a": 0, "b": 1}


def test_declared_numeric_categories_keep_their_numbers(tmp_path: Path) -> None:
    src = tmp_path / "c.csv"
    src.write_text("v,g,y\n1.5,01,0\n2.5,02,1\n3.5,01,1\n")
    sch = Schema(numeric=["v"], categorical=["g"], class_column="y", categories={"y": [0, 1], "g": ["01", "02"]})
    df = read_table(src, schema=sch)
    # the class's declared values are numbers: read as numbers, so they match; g's are text
    assert df["y"].tolist() == [0, 1, 1] and df["g"].tolist() == ["01", "02", "01"]
    sch.validate(df)


@pytest.mark.filterwarnings("ignore:The 'future.infer_string' option")
@pytest.mark.parametrize("infer_string", [True, False])
def test_decimal_commas_found_beside_booleans_and_text_with_commas(tmp_path: Path, infer_string: bool) -> None:
    """Columns without a comma are passed over before the decimal-comma check copies them; the
    check still finds a decimal-comma column whether text is read as strings or as objects."""
    src = tmp_path / "x.csv"
    src.write_text("flag;note;amount;code\nTrue;a, b;1,5;007\n;c;2,25;012\nFalse;d, e;3;\nTrue;;4,75;100\n")
    with pd.option_context("future.infer_string", infer_string):
        df = read_table(src, sep=";")
    assert str(df["flag"].dtype) == "boolean" and df["flag"].isna().tolist() == [False, True, False, False]
    assert df["amount"].tolist() == [1.5, 2.25, 3.0, 4.75] and df.attrs["decimal_comma"] == ["amount"]
    assert df["note"].tolist()[:3] == ["a, b", "c", "d, e"] and pd.isna(df["note"].iloc[3])
    assert df["code"].tolist()[:2] == ["007", "012"]
