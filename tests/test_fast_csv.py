"""The one-pass CSV read (ppdm/data/_fast_csv.py) gives what the general reader of
:func:`ppdm.data.io.read_table` gives: the same values, dtypes, column order, missing cells,
date formats and error messages, on generated mixed tables and on the cases at its edges."""

from __future__ import annotations

import csv
import io
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.data import _fast_csv
from ppdm.data.io import read_table
from ppdm.errors import PPDMError


def _general(path: Path, **kw: object) -> pd.DataFrame:
    """read_table with the one-pass read switched off (the reader it must agree with)."""
    saved = _fast_csv.read_csv_typed
    _fast_csv.read_csv_typed = lambda *a, **k: None  # type: ignore[assignment]
    try:
        return read_table(path, **kw)
    finally:
        _fast_csv.read_csv_typed = saved


def _outcome(fn, path: Path, **kw: object) -> tuple[str, object]:
    try:
        return "table", fn(path, **kw)
    except PPDMError as e:
        return "error", str(e)


def _same(path: Path, **kw: object) -> pd.DataFrame | str:
    """Read ``path`` both ways and check they agree; the table (or the message)."""
    want = _outcome(_general, path, **kw)
    got = _outcome(read_table, path, **kw)
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert got[1] == want[1]
        return str(got[1])
    a, b = want[1], got[1]
    assert isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame)
    assert list(b.columns) == list(a.columns)
    assert [str(t) for t in b.dtypes] == [str(t) for t in a.dtypes]
    for c in a.columns:
        assert b[c].dtype == a[c].dtype, c
        pd.testing.assert_series_equal(b[c], a[c], check_exact=True)
        # missing cells in the same places, and -0.0 kept as written
        assert (b[c].isna().to_numpy() == a[c].isna().to_numpy()).all()
        if pd.api.types.is_float_dtype(a[c]):
            assert (np.signbit(b[c].to_numpy()) == np.signbit(a[c].to_numpy())).all()
    assert b.attrs == a.attrs
    assert isinstance(b.index, pd.RangeIndex) and b.index.equals(a.index)
    return b


def _write(tmp: Path, text: str, name: str = "t.csv") -> Path:
    p = tmp / name
    p.write_bytes(text.encode("utf-8"))
    return p


MIXED = """age,income,ratio,zip,visit,member,label
79,2695.59,0.661,0420,2020-11-06,,no
63,3159.71,,0001,2020-01-09,False,yes
,2567.16,0.383,0001,2020-07-25,True,no
37,2622.86,0.575,0150,,True,"a, b"
"""


def test_the_mixed_table_is_read_in_one_pass_and_typed_as_the_general_reader_types_it(tmp_path: Path) -> None:
    p = _write(tmp_path, MIXED)
    header = MIXED.splitlines()[0].split(",")
    fast = _fast_csv.read_csv_typed(p, ",", header, None)
    assert fast is not None  # the one-pass read decided every column itself
    df = _same(p)
    assert isinstance(df, pd.DataFrame)
    assert str(df["age"].dtype) == "Int64" and df["zip"].tolist()[:2] == ["0420", "0001"]
    assert str(df["member"].dtype) == "boolean" and str(df["visit"].dtype).startswith("datetime64")
    assert df.loc[3, "label"] == "a, b" and df.attrs["date_formats"] == {"visit": "%Y-%m-%d"}


def test_every_column_of_a_one_pass_read_can_be_assigned_to(tmp_path: Path) -> None:
    # columns without holes were read-only views of pyarrow's memory: assigning to one failed
    p = _write(tmp_path, "f,i,t,d,b,h\n1.5,2,x,2020-01-03,true,\n2.5,3,y,2021-05-06,false,4\n")
    assert _fast_csv.read_csv_typed(p, ",", ["f", "i", "t", "d", "b", "h"], None) is not None
    df = read_table(p)
    assert [str(t) for t in df.dtypes][:2] == ["float64", "int64"]
    for c in df.columns:
        df.loc[0, c] = df.loc[1, c]
    assert df.loc[0, "f"] == 2.5 and df.loc[0, "i"] == 3 and df.loc[0, "h"] == 4


def test_the_missing_markers_are_pandas_own_and_the_question_mark() -> None:
    parsers = pytest.importorskip("pandas._libs.parsers")
    assert _fast_csv.NA_TEXT == frozenset(parsers.STR_NA_VALUES) | {"?"}


EDGE = {
    "whole numbers": "a,b\n1,2\n3,4\n",
    "whole numbers with holes": "a,b\n1,\n,4\n5,6\n",
    "whole numbers with a point": "a,b\n1.0,\n,4\n5,6\n",
    "negative codes": "a,b\n-012,1\n-3,2\n",
    "a zero and a negative zero": "a,b\n0,-0\n-0,0.0\n,-0.0\n",
    "a double zero": "a,b\n00,1\n1,2\n",
    "a code with a point": "a,b\n00.5,1\n,2\n",
    "a point code, whole": "a,b\n01.0,1\n,2\n",
    "points alone and at the end": "a,b\n12.,.5\n-.5,1\n",
    "a lone point": "a,b\n.,1\n2,3\n",
    "a lone minus": "a,b\n-,1\n2,3\n",
    "a minus inside": "a,b\n1-2,1\n3,4\n",
    "two points": "a,b\n1.2.3,1\n3,4\n",
    "exponents": "a,b\n1e5,1\n2E-3,2\n",
    "spaces around numbers": "a,b\n 12,1\n13 ,2\n",
    "plus signs": "a,b\n+12,1\n13,2\n",
    "infinities": "a,b\ninf,1\n-Infinity,2\n3,3\n",
    "full-precision floats": "a,b\n0.30000000000000004,1\n0.1,2\n,3\n",
    "long whole numbers": "a,b\n1234567890123456789,1\n2,2\n",
    "sixteen digits with a hole": "a,b\n1234567890123456,1\n,2\n",
    "numbers with markers": "a,b\n1.5,NA\n?,2.5\nnan,3\n",
    "whole numbers with markers": "a,b\n1,x\nNA,y\n3,z\n",
    "codes with markers": "a,b\n0150,1\nNA,2\n?,3\n",
    "markers with signs and points": "a,b\n-nan,1\n5,2\n-1.#IND,3\n",
    "whole numbers with a point and markers": "a,b\n1.0,x\nNULL,y\n3.0,z\n",
    "every cell empty": "a,b\n,1\n,2\n",
    "every cell a marker": "a,b\nNA,1\n?,2\nnan,3\n",
    "booleans with holes": "a,b\nTrue,1\n,2\nfalse,3\nTRUE,4\n",
    "booleans with a four-letter marker": "a,b\nTrue,1\nNULL,2\nFalse,3\nNone,4\n",
    "booleans without holes": "a,b\nTrue,1\nFalse,2\n",
    "booleans and numbers": "a,b\nTrue,1\n1,2\n",
    "booleans spelled otherwise": "a,b\nyes,1\nno,2\n",
    "a boolean with a space": "a,b\n True,1\nFalse,2\n",
    "iso dates with holes": "a,b\n2021-03-04,1\n,2\nNA,3\n2021-03-05,4\n",
    "day-first dates": "a,b\n13/04/2021,1\n03/04/2021,2\n",
    "ambiguous dates": "a,b\n03/04/2021,1\n04/03/2021,2\n",
    "dotted dates": "a,b\n13.04.2021,1\n03.04.2021,2\n",
    "datetimes": "a,b\n2021-03-04 10:11:12,1\n2021-03-05 00:00:00,2\n",
    "dates with spaces": "a,b\n 2021-03-04,1\n2021-03-05 ,2\n",
    "impossible dates": "a,b\n2021-02-30,1\n2021-03-05,2\n",
    "year zero": "a,b\n0000-01-01,1\n2021-03-05,2\n",
    "dates and words": "a,b\n2021-03-04,1\nsoon,2\n",
    "dates and numbers": "a,b\n2021-03-04,1\n12,2\n",
    "text with quotes and commas": 'a,b\n"x, y",1\n"say ""hi""",2\nplain,3\n',
    "a line break in a quoted value": 'a,b\n"two\nlines",1\nx,2\n',
    "text with markers": "a,b\nx,1\nNA,2\n?,3\nn/a,4\n",
    "words that look like numbers": "a,b\nNAN,1\n12,2\n",
    "a word after many numbers": "a,b\n" + "".join(f"{i},1\n" for i in range(2500)) + "word,2\n",
    "a code after many numbers": "a,b\n" + "".join(f"{i},1\n" for i in range(1, 2500)) + "0123,2\n",
    "a fraction after many whole numbers": "a,b\n" + "".join(f"{i},\n" for i in range(1, 2500)) + "2.5,2\n",
    "a bad number after many numbers": "a,b\n" + "".join(f"{i},1\n" for i in range(2500)) + "1-2,2\n",
    "a word after many booleans": "a,b\n" + "True,1\n" * 2500 + "maybe,2\n",
    "a marker after many booleans": "a,b\n" + "True,1\nfalse,2\n" * 1250 + "NULL,2\n",
    "an impossible date after many dates": "a,b\n" + "2021-03-04,1\n" * 2500 + "2021-02-30,2\n",
    "another layout after many dates": "a,b\n" + "2021-03-04,1\n" * 2500 + "2021/03/05,2\n",
    "a marker after many dates": "a,b\n" + "2021-03-04,1\n" * 2500 + "n/a,2\n,3\n",
    "decimal commas with commas between fields": 'a,b\n"30,83",1\n"1,5",2\n',
    "unicode text": "a,b\nZürich,1\n東京,2\n",
    "windows line ends": "a,b\r\n1,x\r\n2,y\r\n",
    "old mac line ends": "a,b\r1,x\r2,y\r",
    "a line of spaces": "a,b\n1,x\n  \n2,y\n",
    "a separator at the end of a row": "a,b\n1,x,\n2,y\n",
    "quoted numbers and quoted empty cells": 'a,b\n"12","x"\n"",y\n"3.5",""\n',
    "no line end at the end": "a,b\n1,x\n2,y",
    "a byte order mark": "\ufeffa,b\n1,x\n2,y\n",
    "blank lines": "a,b\n1,x\n\n2,y\n",
    "a short row": "a,b\n1,x\n2\n",
    "a long row": "a,b\n1,x\n2,y,z\n",
    "every row one field longer": "a,b\n1,x,3\n2,y,4\n",
    "an unclosed quote": 'a,b\n1,"x\n2,y\n',
    "an empty header name": "a,\n1,x\n2,y\n",
    "an Unnamed header": "a,Unnamed: 1\n1,x\n2,y\n",
    "a header alone": "a,b\n",
    "one column": "a\n1\n2\n",
    "one column of words": "a\nx\n\ny\n",
    "names with spaces": " a ,b \n1,2\n",
}


@pytest.mark.parametrize("case", sorted(EDGE))
def test_an_edge_case_is_read_as_the_general_reader_reads_it(case: str, tmp_path: Path) -> None:
    _same(_write(tmp_path, EDGE[case]))


@pytest.mark.parametrize("decimal", [None, ".", ","])
def test_decimal_commas_between_semicolons_are_read_as_the_general_reader_reads_them(decimal: str | None,
                                                                                      tmp_path: Path) -> None:
    p = _write(tmp_path, "a;b;c\n30,83;1;x\n1,5;;y\n;3;z\n")
    _same(p, sep=";", decimal=decimal)


def test_a_compressed_file_is_read_as_the_general_reader_reads_it(tmp_path: Path) -> None:
    import gzip

    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wt", encoding="utf-8", newline="") as fh:
        fh.write(MIXED)
    _same(p)


def test_invalid_utf8_is_refused_as_the_general_reader_refuses_it(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_bytes(b"a,b\nx\xff,1\ny,2\n")
    assert "not UTF-8" in str(_same(p))


# ------------------------------------------------------------------ generated tables
NA = st.sampled_from(["", "", "", "NA", "?", "nan", "NULL", "None", "-nan", "#N/A", "<NA>"])
BOOL = st.sampled_from(["True", "False", "true", "false", "TRUE", "FALSE"])
DATE_FORMATS = ["%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y-%m-%d %H:%M:%S", "%Y/%m/%d"]
WORD = st.text(alphabet=st.sampled_from(list("abcXYZ 0123,.-\"'é;\t\n")), min_size=1, max_size=8)


def _cells(kind: str, fmt: str, n: int) -> st.SearchStrategy[list[str]]:
    if kind == "int":
        one = st.integers(-10**6, 10**6).map(str)
    elif kind == "code":
        one = st.from_regex(r"-?0[0-9]{1,5}|[0-9]{1,5}", fullmatch=True)
    elif kind == "short float":
        one = st.from_regex(r"-?[0-9]{1,5}\.[0-9]{0,4}|-?\.[0-9]{1,3}|-?[0-9]{1,4}", fullmatch=True)
    elif kind == "float":
        one = st.floats(allow_nan=False, allow_infinity=False).map(repr)
    elif kind == "whole float":
        one = st.integers(-1000, 1000).map(lambda i: f"{i}.0")
    elif kind == "bool":
        one = BOOL
    elif kind == "date":
        one = st.datetimes(min_value=pd.Timestamp("1900-01-01").to_pydatetime(),
                           max_value=pd.Timestamp("2100-12-31").to_pydatetime()).map(lambda d: d.strftime(fmt))
    elif kind == "decimal comma":
        one = st.from_regex(r"-?[0-9]{1,4},[0-9]{1,3}", fullmatch=True)
    else:
        one = WORD
    # mostly the column's kind, some missing cells, now and then a stray cell of another kind
    cell = st.one_of(one, one, one, one, one, one, NA, st.one_of(BOOL, WORD, st.just("007"), st.just("1e3")))
    return st.lists(cell, min_size=n, max_size=n)


KINDS = ["int", "code", "short float", "float", "whole float", "bool", "date", "decimal comma", "text"]


@st.composite
def tables(draw: st.DrawFn) -> tuple[str, str]:
    sep = draw(st.sampled_from([",", ";"]))
    n = draw(st.integers(1, 12))
    width = draw(st.integers(2, 5))
    columns = []
    for _ in range(width):
        kind = draw(st.sampled_from(KINDS))
        fmt = draw(st.sampled_from(DATE_FORMATS))
        pure = draw(st.booleans())  # a column of one kind only (else strays may appear)
        cells = draw(_cells(kind, fmt, n))
        if pure:
            cells = [draw(_cells(kind, fmt, 1).filter(lambda c: c[0] not in ("007", "1e3")))[0]
                     if c in ("007", "1e3") else c for c in cells]
        columns.append(cells)
    out = io.StringIO()
    writer = csv.writer(out, delimiter=sep, lineterminator="\n")
    writer.writerow([f"c{i}" for i in range(width)])
    for row in zip(*columns, strict=True):
        writer.writerow(row)
    return sep, out.getvalue()


@settings(max_examples=250, deadline=None)
@given(tables(), st.sampled_from([None, "."]))
def test_generated_mixed_tables_are_read_as_the_general_reader_reads_them(table: tuple[str, str],
                                                                          decimal: str | None) -> None:
    sep, text = table
    with tempfile.TemporaryDirectory() as d:
        _same(_write(Path(d), text), sep=None if sep == "," else sep, decimal=decimal)


def test_numbers_of_up_to_fifteen_characters_are_the_floats_pandas_parses(tmp_path: Path) -> None:
    """Numbers of at most 15 characters are typed here (longer ones are left to pandas): on
    thousands of them, with every placement of the point and both signs, each float is the
    one pandas' parser gives, bit for bit (``-0.0`` included)."""
    rng = np.random.default_rng(7)
    cells = []
    for _ in range(20_000):
        k = int(rng.integers(1, 15))
        digits = "".join(rng.choice(list("0123456789"), size=k))
        pos = int(rng.integers(0, k + 1))
        cell = ("-" if rng.random() < 0.3 else "") + digits[:pos] + "." + digits[pos:]
        cells.append(cell if len(cell) <= 15 else cell[1:])
    holes = [c if i % 7 else "" for i, c in enumerate(cells)]
    text = "a,b\n" + "".join(f"{a},{b}\n" for a, b in zip(cells, holes, strict=True))
    p = _write(tmp_path, text)
    assert _fast_csv.read_csv_typed(p, ",", ["a", "b"], None) is not None
    df = _same(p)
    assert isinstance(df, pd.DataFrame) and str(df["a"].dtype) == "float64"
    assert np.array_equal(df["a"].to_numpy().view(np.int64), pd.read_csv(p)["a"].to_numpy().view(np.int64))


def test_longer_numbers_are_the_floats_pandas_parses(tmp_path: Path) -> None:
    """Numbers written in full precision (``0.30000000000000004``, as a release is written)
    are read in the one pass too, their floats taken from pandas' own parser."""
    rng = np.random.default_rng(3)
    values = [repr(float(v)) for v in rng.normal(0, 1e3, 5000)] + ["0.30000000000000004", "-0.0", "12.5"]
    holes = [v if i % 5 else "" for i, v in enumerate(values)]
    text = "a,b,c\n" + "".join(f"{a},{b},x\n" for a, b in zip(values, holes, strict=True))
    p = _write(tmp_path, text)
    assert max(map(len, values)) > 15
    assert _fast_csv.read_csv_typed(p, ",", ["a", "b", "c"], None) is not None
    df = _same(p)
    assert isinstance(df, pd.DataFrame)
    plain = pd.read_csv(p)
    for c in ("a", "b"):
        assert np.array_equal(df[c].to_numpy().view(np.int64), plain[c].to_numpy().view(np.int64))


# ------------------------------------------------------------------ read without quoting
def test_a_file_without_quotes_is_read_without_searching_it_for_quotes(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with no quote is read without quoting (its whole-file search for quotes is
    skipped), and gives the table written by hand: whole numbers with a hole (``Int64``),
    codes with leading zeros (text), ISO dates with a hole, booleans with a hole, text."""
    text = ("n,code,day,ok,word\n"
            "7,0420,2020-11-06,True,no\n"
            ",0001,,False,yes\n"
            "12,1200,2021-02-28,,maybe\n")
    p = _write(tmp_path, text)
    searched: list[Path] = []
    real = _fast_csv._quoting
    monkeypatch.setattr(_fast_csv, "_quoting", lambda path, delim: searched.append(path) or real(path, delim))
    fast = _fast_csv.read_csv_typed(p, ",", ["n", "code", "day", "ok", "word"], None)
    assert fast is not None and searched == []
    want = pd.DataFrame({
        "n": pd.array([7, None, 12], dtype="Int64"),
        "code": pd.Series(["0420", "0001", "1200"], dtype=_fast_csv.TEXT_DTYPE),
        "day": pd.Series(pd.to_datetime(["2020-11-06", None, "2021-02-28"]).as_unit(
            np.datetime_data(_fast_csv._date_dtype())[0])),
        "ok": pd.array([True, False, None], dtype="boolean"),
        "word": pd.Series(["no", "yes", "maybe"], dtype=_fast_csv.TEXT_DTYPE),
    })
    pd.testing.assert_frame_equal(fast, want, check_exact=True)
    assert fast.attrs == {"date_formats": {"day": "%Y-%m-%d"}}
    df = _same(p)
    assert isinstance(df, pd.DataFrame)
    pd.testing.assert_frame_equal(df, want, check_exact=True)


#: rows without a quote filling more than the first bytes looked at for one
_PLAIN_ROWS = "n,t,b,d\n" + "1,x,True,2021-03-04\n" * (_fast_csv._HEAD // 19 + 100)

LATE_QUOTES = {
    "a quoted comma": '2,"x, y",False,2021-03-05\n',
    "a quoted line break": '2,"two\nlines",True,2021-03-05\n',
    "a doubled quote": '2,"say ""hi""",True,2021-03-05\n',
    "a quote inside a field": '2,ab"c,True,2021-03-05\n',
    "a quoted number": '"3",x,True,2021-03-05\n',
    "a quoted boolean": '3,x,"False",2021-03-05\n',
    "a quoted date": '3,x,True,"2021-03-05"\n',
    "a quoted empty cell": '3,"",True,\n',
    "an unclosed quote": '3,"x,True,2021-03-05\n4,y,False,2021-03-06\n',
    "no quote": "3,y,False,2021-03-06\n",
}


@pytest.mark.parametrize("case", sorted(LATE_QUOTES))
def test_a_quote_after_the_first_bytes_is_read_as_the_general_reader_reads_it(case: str, tmp_path: Path) -> None:
    """A quote the first bytes do not show is found among the cells read without quoting (or
    makes the parse fail): the file is then read again with quoting, as the general reader reads it."""
    p = _write(tmp_path, _PLAIN_ROWS + LATE_QUOTES[case] + "5,z,False,2021-03-07\n")
    assert p.stat().st_size > _fast_csv._HEAD
    _same(p)
