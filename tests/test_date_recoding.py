"""Dates recoded as statistics offices recode them: birth cohorts, break dates, age at a
reference date; parameters recoding would ignore are refused; a date's public bounds as dates,
from `ppdm schema --domain-template` into DPCube (issue 30, item 4)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.anonymize.differential_privacy import DomainFromDataWarning, DPCube
from ppdm.anonymize.recoding import Recode
from ppdm.cli.app import app
from ppdm.data.generalization import generalise, parse_date_label
from ppdm.data.schema import Schema
from ppdm.data.types import age_in_years, parse_iso_date
from ppdm.errors import ParameterError, SchemaError

runner = CliRunner()
SCH = Schema(numeric=["birth", "v"], categorical=["sex"], dates={"birth": None})
# boundaries of decades and half-decades, a leap day, the last day of a year, and a missing date
BIRTHS = ["1939-12-31", "1940-01-01", "1944-12-31", "1945-01-01", "1949-12-31", "1950-01-01", "1952-02-29",
          "1968-07-14", "1999-12-31", "2000-01-01", None, "2003-05-06"]


def _table(births: list[str | None] = BIRTHS) -> pd.DataFrame:
    n = len(births)
    return pd.DataFrame({"birth": pd.to_datetime(births), "v": np.arange(n, dtype=float),
                         "sex": ["f", "m"] * (n // 2) + ["f"] * (n % 2)})


def _cells(s: pd.Series) -> list:
    """A column's values with every missing cell as None (text and categorical columns write NaN)."""
    return [None if pd.isna(v) else v for v in s.astype(object)]


def _check_cohorts(births: pd.Series, labels: pd.Series, width: int) -> None:
    """Every record's cohort holds its birth date, is ``width`` years wide and starts at a
    multiple of ``width``; a missing date stays missing."""
    for b, lab in zip(births, labels, strict=True):
        if pd.isna(b):
            assert pd.isna(lab)
            continue
        first, last = (int(p) for p in lab.split("-"))
        assert last - first + 1 == width and first % width == 0, lab
        assert first <= b.year <= last, (b, lab)
        iv = parse_date_label(lab)
        assert iv is not None and iv.contains([parse_iso_date(b.strftime("%Y-%m-%d"), "b")])[0]


# ------------------------------------------------------------------------------ cohorts
def test_ten_and_five_year_birth_cohorts_hold_every_birth_date() -> None:
    x = _table()
    t = Recode(schema=SCH, columns=["birth"], cohort=10)
    z = t.fit_transform(x)
    # by hand: 1939 → 1930-1939, 1940…1949 → 1940-1949, 1950/1952/1968 → their decades, 1999 and 2000 apart
    assert z["birth"].tolist()[:10] == ["1930-1939", "1940-1949", "1940-1949", "1940-1949", "1940-1949",
                                        "1950-1959", "1950-1959", "1960-1969", "1990-1999", "2000-2009"]
    _check_cohorts(x["birth"], z["birth"], 10)
    # released as text, declared categorical with the fitted cohorts in order; other columns untouched
    assert pd.api.types.is_string_dtype(z["birth"]) and z["v"].tolist() == x["v"].tolist()
    out = t.output_schema()
    assert "birth" in out.categorical and "birth" not in out.dates
    assert out.categories["birth"] == ["1930-1939", "1940-1949", "1950-1959", "1960-1969", "1990-1999", "2000-2009"]
    # an evaluation reads x's dates on the release's cohorts
    assert _cells(generalise(x["birth"], out.categories["birth"])) == _cells(z["birth"])
    z5 = Recode(schema=SCH, columns=["birth"], cohort=5).fit_transform(x)
    assert z5["birth"].tolist()[:6] == ["1935-1939", "1940-1944", "1940-1944", "1945-1949", "1945-1949", "1950-1954"]
    _check_cohorts(x["birth"], z5["birth"], 5)


def test_ten_year_birth_cohorts_through_the_cli(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    days = rng.integers(-11000, 12000, 40)  # 1939 to 2002
    x = pd.DataFrame({"birth": (pd.Timestamp("1970-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d"),
                      "sex": rng.choice(["f", "m"], 40)})
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "-m", "recode", "--qi", "birth,sex", "-p", "columns=birth",
                              "-p", "cohort=10", "--keep-order", "-o", str(out)])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(out, dtype=str)
    _check_cohorts(pd.to_datetime(x["birth"]), z["birth"], 10)
    assert z["sex"].tolist() == x["sex"].tolist()


# ---------------------------------------------------------------------- break dates
def test_breaks_given_as_dates_make_bands_closed_on_the_left() -> None:
    x = _table()
    t = Recode(schema=SCH, columns=["birth"], breaks=["-Inf", "1945-01-01", "1950-01-01", "Inf"])
    z = t.fit_transform(x)
    lo, mid, hi = "(-Inf,1945-01-01)", "[1945-01-01,1950-01-01)", "[1950-01-01,Inf)"
    # a break date starts its band: 1945-01-01 is in the middle band, 1949-12-31 too, 1950-01-01 in the last
    assert _cells(z["birth"]) == [lo, lo, lo, mid, mid, hi, hi, hi, hi, hi, None, hi]
    assert list(z["birth"].cat.categories) == [lo, mid, hi] and z["birth"].cat.ordered
    # open ends: no label shows the earliest or latest birth date of x
    assert not any(d in "".join(t.output_schema().categories["birth"]) for d in ("1939-12-31", "2003-05-06"))
    assert _cells(generalise(x["birth"], [lo, mid, hi])) == _cells(z["birth"])
    # closed breaks that leave a date outside: refused, or the date becomes missing on request
    closed = ["1940-01-01", "1960-01-01", "2010-01-01"]
    with pytest.raises(ParameterError, match="outside every interval"):
        Recode(schema=SCH, columns=["birth"], breaks=closed).fit(x)
    z = Recode(schema=SCH, columns=["birth"], breaks=closed, outside="missing").fit_transform(x)
    assert pd.isna(z["birth"].iloc[0]) and z["birth"].iloc[1] == "[1940-01-01,1960-01-01)"
    with pytest.raises(ParameterError, match="increase strictly"):
        Recode(schema=SCH, columns=["birth"], breaks=["1960-01-01", "1950-01-01"]).fit(x)
    with pytest.raises(ParameterError, match="not a date of the calendar"):
        Recode(schema=SCH, columns=["birth"], breaks=["1950-01-01", "1960-02-30"]).fit(x)


# ---------------------------------------------------------------------- age at a date
def test_age_at_a_reference_date_in_whole_years_and_in_bands() -> None:
    at = parse_iso_date("2024-02-28", "at")
    # by hand: born 2000-02-29 is 23 on 2024-02-28 (birthday not yet), born 2000-02-28 is 24
    born = [parse_iso_date(d, "b") for d in ("2000-02-29", "2000-02-28", "1950-03-01")]
    assert age_in_years(np.array(born), at).tolist() == [23.0, 24.0, 73.0]
    x = _table(["1950-01-01", "1984-02-28", "1984-02-29", "2003-05-06", None])
    z = Recode(schema=SCH, columns=["birth"], age_at="2024-02-28").fit_transform(x)
    assert _cells(z["birth"]) == ["74", "40", "39", "20", None]
    assert list(z["birth"].cat.categories) == ["20", "39", "40", "74"]  # in order of age, not of text
    z = Recode(schema=SCH, columns=["birth"], age_at="2024-02-28", breaks=[0, 30, 60, 120]).fit_transform(x)
    assert _cells(z["birth"]) == ["(60,120]", "(30,60]", "(30,60]", "(0,30]", None]
    with pytest.raises(ParameterError, match="comes before 1 date"):
        Recode(schema=SCH, columns=["birth"], age_at="2000-01-01").fit(x)


# -------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(("params", "says"), [
    ({"columns": ["birth"], "breaks": [1, 2, 3]}, "would apply to the date column 'birth'"),
    ({"columns": ["birth"], "breaks": 5}, "no recoded column is cut by them"),
    ({"columns": ["birth"], "breaks": {"birth": 4}}, "would apply to the date column 'birth'"),
    ({"columns": ["birth"], "date_period": "year", "breaks": ["1940-01-01", "2010-01-01"]}, "date_period and break"),
    ({"columns": ["birth"], "date_period": "year", "cohort": 10}, "both date_period and cohort"),
    ({"columns": ["birth"], "cohort": 10, "age_at": "2024-01-01"}, "both cohort and age_at"),
    ({"columns": ["v"], "cohort": 10}, "none of the recoded columns is a date"),
    ({"columns": ["birth", "v"], "cohort": {"v": 10}}, "cohort names column 'v', which is not a date"),
    ({"columns": ["v"], "breaks": ["1940-01-01", "2010-01-01"]}, "are dates, and 'v' is not a date column"),
    ({"columns": ["sex"], "breaks": {"sex": [0, 1]}}, "which is categorical"),
    ({"columns": ["birth", "v"], "min_count": {"v": 3}}, "min_count names column 'v', which is not categorical"),
    ({"columns": ["sex"], "level": 2}, "no recoded column has a hierarchy"),
    ({"columns": ["v"], "ties": "jitter"}, "ties='jitter' concerns equal-frequency"),
    ({"columns": ["sex"], "other": "rest"}, "min_count is not given"),
    ({"columns": ["v"], "outside": "missing"}, "outside='missing' concerns"),
    ({"columns": ["v"], "breaks": {"v": [0, 5, 20]}, "method": {"v": "equal-frequency"}}, "given as break points"),
    ({"columns": ["birth"], "method": "round-width"}, "no recoded column is a number"),
    ({"columns": ["birth"], "cohort": 1}, "cohort must be a whole number of years from 2"),
    ({"columns": ["birth"], "age_at": "01/02/2024"}, "age_at must be a date written as YYYY-MM-DD"),
])
def test_a_parameter_recoding_would_ignore_is_refused(params: dict, says: str) -> None:
    with pytest.raises(ParameterError, match=says.replace("(", r"\(")):
        Recode(schema=SCH, **params).fit(_table())


def test_breaks_on_a_year_recoded_date_are_refused_by_the_cli_in_one_line(tmp_path: Path) -> None:
    src = tmp_path / "x.csv"
    _table().drop(columns="v").dropna().to_csv(src, index=False)
    for extra in (["-p", "date_period=year", "-p", "breaks=[1940, 1960, 2010]"],
                  ["-p", "date_period=year", "-p", 'breaks=["1940-01-01", "2010-01-01"]'],
                  ["-p", "breaks=5"]):
        res = runner.invoke(app, ["anonymize", str(src), "-m", "recode", "--qi", "birth,sex", "-p", "columns=birth",
                                  *extra, "-o", str(tmp_path / "z.csv")])
        text = res.output.strip()
        assert res.exit_code == 2 and len(text.splitlines()) == 1 and "break" in text, (extra, text)
        assert not (tmp_path / "z.csv").exists()


# ------------------------------------------------------------------- DPCube's domain
def test_domain_template_writes_date_bounds_as_dates_and_dpcube_reads_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 40
    x = pd.DataFrame({"birth": (pd.Timestamp("1940-01-01") + pd.to_timedelta(rng.integers(0, 25000, n), unit="D"))
                      .strftime("%Y-%m-%d"), "sex": rng.choice(["f", "m"], n), "stay": rng.integers(1, 30, n)})
    src, sfile = tmp_path / "x.csv", tmp_path / "x.schema.json"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["schema", str(src), "--domain-template", "-o", str(sfile)])
    assert res.exit_code == 0, res.output
    doc = json.loads(sfile.read_text())
    assert doc["bounds"] == {"birth": [None, None], "stay": [None, None]} and "YYYY-MM-DD" in doc["_domain"]
    # the owner fills in the public domain, the date's bounds as dates
    doc["bounds"] = {"birth": ["1900-01-01", "2024-12-31"], "stay": [0, 365]}
    doc["categories"] = {"sex": ["f", "m"]}
    sfile.write_text(json.dumps(doc))
    sch = Schema.load(sfile)
    assert sch.bounds["birth"] == (parse_iso_date("1900-01-01", "b"), parse_iso_date("2024-12-31", "b"))
    # a declared domain is written back as dates by a new template
    res = runner.invoke(app, ["schema", str(src), "--schema", str(sfile), "--domain-template",
                              "-o", str(tmp_path / "again.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "again.json").read_text())["bounds"]["birth"] == ["1900-01-01", "2024-12-31"]
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", str(src), "--schema", str(sfile), "-m", "dpcube", "-p", "epsilon=1",
                              "--seed", "1", "--experiment-seed", "-o", str(out)])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(out)
    born = pd.to_datetime(z["birth"], format="%Y-%m-%d")
    assert born.between("1900-01-01", "2024-12-31").all()
    # days since 1970 are still read, and the same declaration as dates gives the same domain
    xs = pd.DataFrame({"birth": pd.to_datetime(x["birth"]), "sex": x["sex"], "stay": x["stay"].astype(float)})
    base = Schema(numeric=["birth", "stay"], categorical=["sex"], dates={"birth": None}, categories={"sex": ["f", "m"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainFromDataWarning)
        a = DPCube(schema=base, bounds={"birth": ("1900-01-01", "2024-12-31"), "stay": (0, 365)}, random_state=0,
                   edges="equal").fit(xs)
        b = DPCube(schema=base, bounds={"birth": (-25567, 20088), "stay": (0, 365)}, random_state=0,
                   edges="equal").fit(xs)
    assert a.grid_.dims[0].edges.tolist() == b.grid_.dims[0].edges.tolist()
    assert a.grid_.dims[0].edges[[0, -1]].tolist() == [-25567.0, 20088.0]
    # a date bound for a column that is not a date: one line
    with pytest.raises(ParameterError, match="'stay' are dates, and 'stay' is not a date column"):
        DPCube(schema=base, bounds={"birth": (-25567, 20088), "stay": ("2000-01-01", "2001-01-01")}).fit(xs)
    with pytest.raises(SchemaError, match="'stay' are dates"):
        Schema.from_dict({"numeric": ["stay"], "bounds": {"stay": ["2000-01-01", "2001-01-01"]}})


def test_releases_of_cohorts_and_ages_are_evaluated_on_their_own_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    days = rng.integers(-11000, 12000, 30)
    x = pd.DataFrame({"birth": (pd.Timestamp("1970-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d"),
                      "sex": rng.choice(["f", "m"], 30)})
    src = tmp_path / "x.csv"
    x.to_csv(src, index=False)
    for name, extra in (("cohort", ["-p", "cohort=10"]),
                        ("age", ["-p", "age_at=2025-01-01", "-p", "breaks=[0, 20, 40, 60, 80, 100]"])):
        z = tmp_path / f"{name}.csv"
        res = runner.invoke(app, ["anonymize", str(src), "-m", "recode", "--qi", "birth,sex", "-p", "columns=birth",
                                  *extra, "-o", str(z)])
        assert res.exit_code == 0, res.output
        res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(z), "--private",
                                  str(tmp_path / f"{name}.private.json"), "--qi", "birth,sex"])
        assert res.exit_code == 0, (name, res.output)
        # x's dates read on the release's labels: the records share their keys, so k-anonymity is measured
        assert "k_anonymity" in res.output and "internal error" not in res.output, res.output


def test_parameters_for_other_columns_pass_a_date_by_when_it_has_its_own() -> None:
    x = _table()
    dates = ["-Inf", "1950-01-01", "Inf"]
    # break dates for every column: the date is banded, the category is left to its own parameters
    z = Recode(schema=SCH, columns=["birth", "sex"], breaks=dates, min_count=1).fit_transform(x)
    assert z["birth"].iloc[0] == "(-Inf,1950-01-01)" and z["sex"].tolist() == x["sex"].tolist()
    # numbers' breaks for every column, and the date its cohort: each takes its own
    z = Recode(schema=SCH, columns=["birth", "v"], breaks=[-1, 5, 20], cohort=10).fit_transform(x)
    assert z["birth"].iloc[0] == "1930-1939" and z["v"].astype(object).tolist()[:7] == ["(-1,5]"] * 6 + ["(5,20]"]
    # a method named for a column cut into the default number of intervals is used, not refused
    t = Recode(schema=SCH, columns=["birth", "v"], breaks={"birth": dates}, method={"v": "round-width"})
    assert t.fit_transform(x)["v"].cat.categories[0] == "(-2,0]"
