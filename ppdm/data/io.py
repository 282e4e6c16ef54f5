"""Reading and writing tables (CSV, Parquet) and other outputs, atomically.

A write goes to a temporary file in the destination folder and is renamed into
place only when complete, so a failed run never leaves a partial output file.

Reading never loses or silently alters data: the CSV header is read by ppdm itself
(a name given twice is refused instead of being renamed ``a.1``), a row with fewer or
more fields than the header is reported as malformed (never padded with missing values
or folded into an index), a one-column table whose header holds another separator is
refused with the separator to try, and names and values keep their leading and
trailing spaces exactly.

Reading is typed (:func:`read_table`): with a schema, its types apply as the file is read
(categorical columns, the class and identifiers stay text exactly as written, so a code
``0150`` keeps its zero; dates are parsed in their declared format; whole-number columns
with missing cells become nullable ``Int64``). Without one, the same is inferred: a column
of numbers written with a leading zero stays text, a column of dates in one known layout
becomes a date column, ``True``/``False`` columns become booleans, and whole numbers with
missing cells stay whole. :func:`write_table` writes dates back in their format.

Without a schema or typed columns, a CSV file is first read in one pass
(:mod:`ppdm.data._fast_csv`: pyarrow reads every column as text, each column is typed from
it); a file or column whose text could be read in more than one way is left to the general
reader below, so both give the same table.

Reading, typing and writing a table stay in this module: they are one format contract (what
:func:`write_table` writes, :func:`read_table` reads back the same). The checks of a CSV file
around the parser (binary data, the header as written, short rows, another separator, the
parser's errors) live in :mod:`ppdm.data._io_checks`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ppdm.data._io_checks import (
    _binary,
    _check_csv_shape,
    _csv_header,
    _parser_message,
    _refuse_other_separator,
)

# atomic writes live below this module (the schema writes files too); re-exported here
from ppdm.data.atomic import atomic_path, atomic_write_text  # noqa: F401
from ppdm.errors import PPDMError
from ppdm.errors import SchemaError as SchemaErrorType

if TYPE_CHECKING:
    from ppdm.data.schema import Schema

_CSV = (".csv", ".csv.gz", ".txt")
_PARQUET = (".parquet", ".pq")


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(_PARQUET):
        return "parquet"
    if name.endswith(_CSV):
        return "csv"
    raise PPDMError(f"cannot tell the format of {str(path)!r}: use a .csv or .parquet file")


def check_output_table(path: str | Path, *, inputs: tuple[str | Path | None, ...] = ()) -> Path:
    """Refuse, before any work is done, an output table path ppdm could not write.

    The suffix must name a format, the folder must exist and be writable, and the path
    must not be one of ``inputs`` (writing there would destroy the original data).
    """
    p = Path(path)
    _kind(p)
    check_output_path(p, inputs=inputs)
    return p


def check_output_path(path: str | Path, *, inputs: tuple[str | Path | None, ...] = ()) -> Path:
    """Refuse an output file whose folder is missing or not writable, that is a folder,
    or that is one of ``inputs``; the message names the output, never a temporary file."""
    p = Path(path)
    parent = p.parent
    if not parent.exists():
        raise PPDMError(f"output folder {str(parent)!r} does not exist")
    if p.is_dir():
        raise PPDMError(f"output {str(p)!r} is a folder, not a file")
    for src in inputs:
        if src is not None and same_file(p, src):
            raise PPDMError(f"output {str(p)!r} is the input {str(src)!r}; write to another file (the input is left as it is)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PPDMError(f"cannot write output {str(p)!r}: its folder {str(parent)!r} is not writable")
    return p


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same file (links and relative paths resolved)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)
    except OSError:
        pass
    return pa.resolve() == pb.resolve()


def _separator(sep: str | None) -> str:
    if sep is None:
        return ","
    text = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(sep, sep)
    if len(text) != 1 or text in ('"', "\n", "\r"):
        raise PPDMError(f"the separator must be one character (',', ';', '\\t' or 'tab', '|'), got {sep!r}")
    return text


def read_table(path: str | Path, *, sep: str | None = None, schema: Schema | None = None,
               categorical: list[str] | tuple[str, ...] = (), dates: Mapping[str, str | None] | None = None,
               nrows: int | None = None, decimal: str | None = None, **csv_kwargs: Any) -> pd.DataFrame:
    """Read a CSV or Parquet file into a typed DataFrame.

    Empty cells (and ``?``, the UCI missing marker) become missing values; names and
    values keep their spaces. ``sep`` is the CSV field separator (default ``,``;
    ``"\\t"`` or ``"tab"`` for tabs). A missing or malformed file raises
    :class:`PPDMError` naming the file: duplicate header names, rows with fewer or more
    fields than the header, and a one-column table whose header holds ``;``, a tab or
    ``|`` (with the separator to try). The parser's own messages are put in these words
    (the line and its number of fields, an unclosed quote, a file that is not text).

    ``decimal`` is the decimal separator of numbers written in the file: ``","`` reads
    ``30,83`` as 30.83, ``"."`` leaves such text as it is. By default a column whose every
    value is a number with a decimal comma is read as numbers when the fields are separated
    by ``;`` (the convention of the countries that write decimal commas), and refused
    otherwise, naming ``decimal=","`` (CLI: ``--decimal ,``): with commas between fields,
    ``"1,234"`` may as well be a thousand. Columns a schema or ``categorical`` declares
    text are never converted.

    ``schema`` applies its types as the file is read (see the module docstring and
    :func:`typed_columns`); without it the types are inferred the same way. ``categorical``
    and ``dates`` (column → format or ``None``) type some columns without a full schema.
    The text format of every date column found is kept in ``df.attrs["date_formats"]``.
    ``nrows`` reads the first rows only (of a CSV file; the first rows of a Parquet file).
    """
    p = Path(path)
    if not p.exists():
        raise PPDMError(f"file {str(p)!r} does not exist")
    if p.is_dir():
        raise PPDMError(f"{str(p)!r} is a folder, not a table file")
    kind = _kind(p)
    delim = _separator(sep)
    if decimal not in (None, ".", ","):
        raise PPDMError(f"the decimal separator must be '.' or ',', got {decimal!r}")
    if decimal == "," and delim == ",":
        raise PPDMError("with decimal ',' the fields need another separator (--sep ';'), or quotes around every "
                        "number with a decimal comma")
    header: list[str] | None = None
    try:
        if kind == "parquet":
            df = pd.read_parquet(p)
            if nrows is not None:
                df = df.iloc[:nrows]
        else:
            if _binary(p):
                raise PPDMError(f"{str(p)!r} is not a text table: it holds binary data")
            header = _csv_header(p, delim)
            if header is not None:
                seen: set[str] = set()
                for name in header:
                    if name in seen:
                        raise PPDMError(f"{str(p)!r} names the column {name!r} twice in its header; rename one of them")
                    seen.add(name)
                if len(header) == 1 and sep is None:
                    _refuse_other_separator(p, header[0])  # before the parser trips over the data rows
            if header is not None and nrows is None and not csv_kwargs and schema is None and not categorical \
                    and not dates:
                # one pass with pyarrow when every column's type is certain from its text; else
                # (None) the general reader below decides, with its messages
                from ppdm.data._fast_csv import read_csv_typed

                fast = read_csv_typed(p, delim, header, decimal)
                if fast is not None:
                    return fast
            kw: dict[str, Any] = {"na_values": ["?"], "sep": delim}
            if nrows is not None:
                kw["nrows"] = nrows
            text_cols = _text_columns(schema, header, [*categorical, *(dates or {})])
            if text_cols:
                kw["dtype"] = dict.fromkeys(text_cols, str)
            kw.update(csv_kwargs)
            df = pd.read_csv(p, **kw)
    except PPDMError:
        raise
    except Exception as e:  # pandas/pyarrow raise many types for malformed files
        raise PPDMError(_parser_message(p, kind, e, header)) from None
    if df.shape[1] == 0:
        raise PPDMError(f"{str(p)!r} has no columns")
    if len(df) == 0:
        raise PPDMError(f"{str(p)!r} has no data rows")
    unnamed = [c for c in df.columns if str(c).startswith("Unnamed:")]
    if unnamed:
        raise PPDMError(f"{str(p)!r} has a column without a header ({unnamed[0]}); is the header line malformed?")
    if kind == "csv":
        _check_csv_shape(p, df, delim, sep, nrows)
        df = _decimal_commas(df, decimal, delim, _text_columns(schema, list(map(str, df.columns)),
                                                                [*categorical, *(dates or {})]), str(p))

        def raw(cols: list[str]) -> pd.DataFrame:
            return _raw_text(p, delim, cols, nrows)

        return typed_columns(df, schema, raw_text=raw, source=str(p), categorical=categorical, dates=dates)
    df.attrs["_parquet_integer"] = _parquet_integer_columns(p)
    return typed_columns(df, schema, source=str(p), categorical=categorical, dates=dates)


#: a number written with a decimal comma (or a whole number beside such numbers): ``30,83``, ``-0,5``, ``12``
_DECIMAL_COMMA = re.compile(r"^[+-]?(\d+(,\d*)?|,\d+)([eE][+-]?\d+)?$")


def _decimal_commas(df: pd.DataFrame, decimal: str | None, delim: str, text: list[str], source: str) -> pd.DataFrame:
    """Text columns whose every value is a number with a decimal comma, read as numbers (see
    :func:`read_table`'s ``decimal``); ``text`` are the columns declared text."""
    if decimal == ".":
        return df
    found = []
    for c in df.columns:
        s = df[c]
        if c in text or not (pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s)):
            continue
        # a column with no comma at all is passed over before any copy of it is made (a
        # parsed boolean or number never holds one)
        if isinstance(s.dtype, pd.StringDtype):
            if not s.str.contains(",", regex=False, na=False).any():
                continue
        elif not any(isinstance(v, str) and "," in v for v in pd.unique(s.to_numpy())):
            continue
        vals = s.dropna().astype(str).str.strip()
        if vals.empty or not vals.str.match(_DECIMAL_COMMA).all():
            continue
        found.append(c)
    if not found:
        return df
    if decimal is None and delim != ";":
        c = found[0]
        example = next(v for v in df[c].dropna().astype(str) if "," in v)
        raise PPDMError(
            f"column {c!r} of {source} holds numbers written with a comma ({example!r}); if the comma is the "
            "decimal separator, read the file with decimal=',' (CLI: --decimal ,); if the values are text, declare "
            "the column categorical"
        )
    out = df.copy()
    for c in found:
        s = out[c]
        out[c] = pd.to_numeric(s.where(s.isna(), s.astype(str).str.strip().str.replace(",", ".", regex=False)))
    out.attrs["decimal_comma"] = [str(c) for c in found]  # a partitioned read parses them the same way
    return out


def _text_columns(schema: Schema | None, header: list[str] | None, named: list[str]) -> list[str]:
    """Columns to read as text: a schema's categorical ones, the class, identifiers and
    dates (parsed afterwards in their format), and the ``named`` ones."""
    if header is None:
        return []
    want = set(named)
    if schema is not None:
        want |= {*schema.categorical, *schema.identifiers, *schema.dates,
                 *([schema.class_column] if schema.class_column else [])}
    absent = [c for c in named if c not in header]
    if absent:
        raise PPDMError(f"column {absent[0]!r} given a type is not in the table (columns: {', '.join(header)})")
    if schema is not None:
        # a column whose declared categories are numbers keeps its numbers, so they match them
        want -= {c for c, values in schema.categories.items()
                 if c not in named and values and not any(isinstance(v, str) for v in values)}
    return [c for c in header if c in want]


def _raw_text(p: Path, delim: str, columns: list[str], nrows: int | None = None) -> pd.DataFrame:
    """Columns of a CSV file as the text written in it (missing cells as missing)."""
    kw: dict[str, Any] = {"usecols": columns, "dtype": str, "na_values": ["?"], "sep": delim}
    if nrows is not None:
        return pd.read_csv(p, nrows=nrows, **kw)
    try:
        return pd.read_csv(p, engine="pyarrow", **kw)
    except Exception:  # the C parser accepts what pyarrow may not (e.g. some quoting)
        return pd.read_csv(p, **kw)


def typed_columns(df: pd.DataFrame, schema: Schema | None = None, *, raw_text: Any = None,
                  source: str = "the table", categorical: list[str] | tuple[str, ...] = (),
                  dates: Mapping[str, str | None] | None = None) -> pd.DataFrame:
    """Give the columns of a freshly read table their types (see the module docstring).

    ``raw_text(columns)`` returns those columns as the text written in the file; it tells
    codes with leading zeros and whole numbers from floats. With ``schema`` its types rule:
    date columns are parsed in their format (or a detected one), whole-number attributes
    with missing cells become ``Int64``; nothing is guessed for the columns it types, nor
    for ``categorical`` columns (read as text) and ``dates`` (column → format or ``None``).
    """
    from ppdm.data import types as ty

    formats: dict[str, str] = {}
    declared = (set(schema.all_columns) if schema is not None else set()) | set(categorical) | set(dates or {})
    for c in [*categorical, *(dates or {})]:
        if c not in df.columns:
            raise PPDMError(f"column {c!r} given a type is not in {source} (columns: {', '.join(map(str, df.columns))})")
    date_types = {**(schema.dates if schema is not None else {}), **dict(dates or {})}
    if date_types:
        for c, fmt in date_types.items():
            if c not in df.columns:
                continue
            if ty.is_date_dtype(df[c]):
                formats[c] = fmt or ty.default_date_format(df[c])
                continue
            used = fmt or ty.detect_date_format(df[c])
            if used is None:
                raise PPDMError(f"date column {c!r} of {source} is not written in a date layout ppdm knows; "
                                "give its format in the schema, e.g. \"dates\": {\"%s\": \"%%d/%%m/%%Y\"}" % c)
            df[c] = _parse_dates(df[c], used, c, source)
            formats[c] = used
    if schema is not None:
        for c in schema.integer:
            if c in df.columns and pd.api.types.is_float_dtype(df[c]) and df[c].isna().any():
                df[c] = _to_int(df[c])
    # columns the schema does not type: inferred
    free = [c for c in df.columns if c not in declared]
    whole_candidates: list[str] = []
    for c in free:
        s = df[c]
        if pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s):
            if ty.is_bool_column(s) or ty.text_is_bool(s):
                df[c] = ty.as_bool(s)
                continue
            fmt = ty.detect_date_format(s)
            if fmt is not None:
                df[c] = _parse_dates(s, fmt, c, source)
                formats[c] = fmt
        elif pd.api.types.is_integer_dtype(s) or (
                pd.api.types.is_float_dtype(s) and s.isna().any() and _whole(s.to_numpy(dtype=float, na_value=np.nan))):
            whole_candidates.append(c)
    if whole_candidates and raw_text is not None:
        text = raw_text(whole_candidates)
        for c in whole_candidates:
            t = text[c]
            if ty.has_leading_zero_code(t):
                # a code such as 0150: a number would lose its zero
                df[c] = t.astype("str")
            elif pd.api.types.is_float_dtype(df[c]) and df[c].isna().any() and ty.written_as_whole(t):
                df[c] = _to_int(df[c])
    elif raw_text is None:
        for c in whole_candidates:
            if pd.api.types.is_float_dtype(df[c]) and df[c].isna().any() and _declared_int(df, c):
                df[c] = _to_int(df[c])
    df.attrs.pop("_parquet_integer", None)
    if formats:
        df.attrs["date_formats"] = {**df.attrs.get("date_formats", {}), **formats}
    return df


def align_dtypes(df: pd.DataFrame, like: pd.DataFrame, what: str) -> pd.DataFrame:
    """``df`` with the dtypes of ``like`` column by column (e.g. a release read from a file
    given the types of the original it is compared with). A column whose values do not fit
    raises naming it."""
    from ppdm.data import types as ty

    out = df
    for c in like.columns:
        if c not in df.columns or df[c].dtype == like[c].dtype:
            continue
        want = like[c].dtype
        s = df[c]
        conv: pd.Series
        try:
            if ty.is_date_dtype(want) and not ty.is_date_dtype(s):
                conv = pd.to_datetime(s, format=(like.attrs.get("date_formats") or {}).get(c))
            elif isinstance(want, pd.BooleanDtype) or pd.api.types.is_bool_dtype(want):
                conv = ty.as_bool(s)
            elif pd.api.types.is_integer_dtype(want) and s.isna().any():
                conv = pd.to_numeric(s).astype("Int64") if not pd.api.types.is_string_dtype(s) \
                    else pd.to_numeric(s).astype("Float64").astype("Int64")
            elif pd.api.types.is_integer_dtype(want) and pd.api.types.is_string_dtype(s):
                conv = pd.to_numeric(s)
                if not pd.api.types.is_integer_dtype(conv):
                    raise ValueError("not whole numbers")
                conv = conv.astype(want)
            elif pd.api.types.is_float_dtype(want) and pd.api.types.is_integer_dtype(s):
                conv = s.astype(want)
            elif pd.api.types.is_string_dtype(want) or pd.api.types.is_object_dtype(want):
                conv = s if (pd.api.types.is_string_dtype(s) or pd.api.types.is_object_dtype(s)) \
                    else s.astype("str").where(s.notna())
            else:
                continue  # numbers of another width and the like: validation judges them
        except (TypeError, ValueError, SchemaErrorType) as e:
            bad = _first_unfit(s, want)
            if bad is not None:
                raise PPDMError(f"column {c!r} of {what} holds {bad[1]!r} at row {bad[0]!r}, which the original's "
                                f"column (dtype {want}) cannot hold") from None
            raise PPDMError(f"column {c!r} of {what} does not hold the values of the original's column "
                            f"(dtype {want}): {' '.join(str(e).split())[:120]}") from None
        if out is df:
            out = df.copy()
        out[c] = conv
    return out


def _first_unfit(s: pd.Series, want: Any) -> tuple[Any, Any] | None:
    """(row, value) of the first cell of ``s`` that cannot become ``want`` (numbers, dates),
    or None when that cannot be told; the message then names it instead of the parser's words."""
    from ppdm.data import types as ty

    try:
        if ty.is_date_dtype(want):
            conv = pd.to_datetime(s, errors="coerce")
        elif pd.api.types.is_numeric_dtype(want) and not pd.api.types.is_bool_dtype(want):
            conv = pd.to_numeric(s, errors="coerce")
            if pd.api.types.is_integer_dtype(want):
                whole = conv.isna() | (conv == conv.round())
                conv = conv.where(whole)
        else:
            return None
    except (TypeError, ValueError):
        return None
    bad = s.notna().to_numpy() & conv.isna().to_numpy()
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return s.index[i], s.iloc[i]


def _whole(v: np.ndarray) -> bool:
    f = v[np.isfinite(v)]
    return bool(f.size) and bool(np.all(f == np.round(f))) and bool(np.all(np.abs(f) < 2.0**53))


def _parquet_integer_columns(p: Path) -> list[str]:
    """Columns a Parquet file stores as integers."""
    try:
        import pyarrow.parquet as pq
        import pyarrow.types as pat

        return [f.name for f in pq.read_schema(p) if pat.is_integer(f.type)]
    except Exception:  # a dataset folder or an unusual file: nothing is known
        return []


def _declared_int(df: pd.DataFrame, column: str) -> bool:
    """Parquet: whether the file stored ``column`` as integers (pandas reads them as floats
    when a cell is missing)."""
    stored = df.attrs.get("_parquet_integer") or ()
    return column in stored


def _to_int(s: pd.Series) -> pd.Series:
    return pd.Series(pd.array(s.to_numpy(dtype=float, na_value=np.nan), dtype="Float64"),
                     index=s.index, name=s.name).astype("Int64")


def _parse_dates(s: pd.Series, fmt: str, column: str, source: str) -> pd.Series:
    # each distinct date is parsed once (a column of a million dates has a few thousand)
    codes, uniq = pd.factorize(s, use_na_sentinel=True)
    if len(uniq) < len(s) // 2:
        try:
            days = pd.to_datetime(pd.Series(uniq, dtype="str").str.strip(), format=fmt)
        except (ValueError, TypeError, OverflowError):
            pass  # the whole column is parsed below, to name the first bad row
        else:
            # a missing cell (code -1) becomes NaT; a time zone of the format is kept
            return pd.Series(days.array.take(codes, allow_fill=True), index=s.index, name=s.name)
    text = s.astype("str").str.strip().where(s.notna())
    try:
        return pd.to_datetime(text, format=fmt)
    except (ValueError, TypeError, OverflowError):
        parsed = pd.to_datetime(text, format=fmt, errors="coerce")
        bad = parsed.isna() & text.notna()
        row = s.index[bad.to_numpy()][0] if bad.any() else None
        raise PPDMError(f"date column {column!r} of {source} holds {(s.loc[row] if row is not None else None)!r} at row {row!r}, which is not "
                        f"a date in the format {fmt!r}") from None


def write_table(df: pd.DataFrame, path: str | Path, *, date_formats: Mapping[str, str | None] | None = None
                ) -> Path:
    """Write ``df`` to CSV or Parquet (by suffix), atomically. Returns the path.

    In a CSV, date columns are written in their format (``date_formats``, else the one
    recorded in ``df.attrs["date_formats"]``, else ISO); floats in the shortest text that
    reads back as the same number.
    """
    p = Path(path)
    kind = _kind(p)
    with atomic_path(p) as tmp:
        if kind == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            out = dates_as_text(df, date_formats)
            # repr-exact floats so a round trip gives the same values back
            out.to_csv(tmp, index=False, float_format=None, compression="gzip" if p.name.endswith(".gz") else None)
    return p


def dates_as_text(df: pd.DataFrame, date_formats: Mapping[str, str | None] | None = None) -> pd.DataFrame:
    """``df`` with every date column turned into text in its format (a copy when any is)."""
    from ppdm.data import types as ty

    cols = [c for c in df.columns if ty.is_date_dtype(df[c])]
    if not cols:
        return df
    known = {**dict(df.attrs.get("date_formats") or {}), **dict(date_formats or {})}
    out = df.copy()
    for c in cols:
        fmt = known.get(c) or ty.default_date_format(df[c])
        out[c] = df[c].dt.strftime(fmt).where(df[c].notna())
    return out


def save_figure(fig: Any, path: str | Path, *, dpi: int = 110) -> Path:
    """Write a matplotlib figure as a PNG atomically (no metadata, so the same figure gives the
    same bytes) and close it."""
    import matplotlib.pyplot as plt

    p = Path(path)
    try:
        with atomic_path(p) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
    finally:
        plt.close(fig)
    return p
