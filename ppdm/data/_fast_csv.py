"""One pass over a CSV file that gives exactly what :func:`ppdm.data.io.read_table` decides.

The general reader parses the file with pandas, then reads some columns a second time as
text (to tell a code ``0150`` or a whole number ``12`` from ``12.0``) and looks at the
distinct values of every text column. Here the file is read once, every column as the text
written in it (pyarrow's multi-threaded reader), and each column is typed from that text
with vectorised kernels, deciding as the general reader would:

* a column written with digits, ``.`` and ``-`` only is a number column: whole numbers
  (``int64``, or ``Int64`` when cells are missing and every value was written without a
  point), floats, or text when a value is a code with a leading zero;
* a column whose first rows hold only booleans (``True``, ``false``...) or ISO dates
  (``2021-03-04``), and missing cells, is parsed so by the reader itself (a later row that
  is neither makes the file be read again, as text);
* any other column is judged on its distinct values: booleans in the spellings the reader
  accepts, dates in one known layout, or text.

Whenever the text could be read in more than one way by the general reader (an exponent,
spaces around a number, a whole number of more than 15 digits, a decimal comma, a mix of
numbers and words without a word that settles it, a quote inside a field, a malformed row),
:func:`read_csv_typed` returns ``None``: the caller reads the file with the general reader,
so the result never depends on which path ran. A number of at most 15 characters is
converted exactly by both parsers (its digits make an integer below 2⁵³ and one division
by a power of ten rounds it once); longer ones are converted by pandas' own parser.

A file whose first 64 KiB hold no quote is parsed without quoting (the same table when it
holds none, and no search of the whole file for quotes before the parse); a quote further on
shows in a text cell, or breaks a boolean, a date or a row's fields, and the file is then
read again with quoting.
"""

from __future__ import annotations

import csv
import functools
import io
import mmap
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data import types as ty

#: the cells pandas reads as missing by default, and ``?`` (the UCI marker) that ppdm adds
NA_TEXT = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                     "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null", "?"})
#: pandas' text dtype for columns of words (missing cells are NaN)
TEXT_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)
#: the longest number (in characters) both parsers are known to turn into the same float
_MAX_NUMBER_CHARS = 15
#: the rows looked at first for a word that makes a column text (no distinct values needed)
_SAMPLE = 2000

#: the characters of a column typed as numbers here
_NUMBER_CHARS = b"0123456789.-"
#: columns typed side by side
_THREADS = 2
#: what pandas' parser may read as a number (a superset: digits, sign, point, exponent,
#: surrounding spaces; and the infinities it knows)
_NUMBER_LIKE = re.compile(r"^\s*[+-]?[0-9]*\.?[0-9]*([eE][+-]?[0-9]*)?\s*$")
#: a number as written in most files (or an empty cell): the first rows of a number column
_PLAIN_NUMBER = re.compile(r"^(-?([0-9]+\.?[0-9]*|\.[0-9]+))?$")
#: a code with a leading zero among numbers (``^\\s*[+-]?0\\d`` of the general reader)
_CODE = re.compile(r"^-?0[0-9]")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INFINITY = frozenset({"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"})
_DATE_LIKE = [re.compile(pattern) for pattern, _ in ty._DATE_PATTERNS]
_DECIMAL_COMMA = re.compile(r"^[+-]?(\d+(,\d*)?|,\d+)([eE][+-]?\d+)?$")  # as ppdm.data.io reads them

# what a distinct value may be
_NA, _BOOL, _NUMBER, _DATE, _COMMA, _WORD = range(6)


def _kind(v: str) -> int:
    """What the general reader could take one distinct cell for."""
    if v in NA_TEXT:
        return _NA
    if v in ty._TRUE or v in ty._FALSE:
        return _BOOL
    if _NUMBER_LIKE.match(v) or v.strip().lower() in _INFINITY:
        return _NUMBER
    stripped = v.strip()
    if any(p.fullmatch(stripped) for p in _DATE_LIKE):
        return _DATE
    if _DECIMAL_COMMA.match(stripped):
        return _COMMA
    return _WORD


class _Reread(Exception):
    """The file read without quoting holds a quote (or did not parse): it is read again, with
    quoting."""


#: the first bytes of a file looked at for a quote before it is read without quoting
_HEAD = 1 << 16


def read_csv_typed(path: Path, delim: str, header: list[str], decimal: str | None) -> pd.DataFrame | None:
    """The typed table of a CSV file read in one pass, or ``None`` when any column needs the
    general reader (or pyarrow cannot parse the file: the general reader then names the
    problem in its words)."""
    if len(header) < 2 or any(not name or name.startswith("Unnamed:") for name in header) \
            or path.name.lower().endswith(".gz"):
        return None
    # booleans and ISO dates are parsed by the reader itself when the first rows hold nothing
    # else; should a later row hold something else, the file is read again as text
    guessed = _guess(path, delim, header)
    if not _quote_in_head(path):
        # No quote in the first bytes: the file is read without quoting, which gives the same
        # table when it holds no quote at all and shows a later quote in the cells (the file is
        # then read again below); the search of the whole file for quotes before the parse is
        # saved for the files that hold none, most of them.
        try:
            return _read_typed(path, delim, header, decimal, guessed, quoting=None)
        except _Reread:
            pass
    quoted = _quoting(path, delim)
    if quoted is None:
        return None
    return _read_typed(path, delim, header, decimal, guessed, quoting=quoted)


def _quote_in_head(path: Path) -> bool:
    """Whether the first :data:`_HEAD` bytes of the file hold a quote."""
    with open(path, "rb") as fh:
        return b'"' in fh.read(_HEAD)


def _read_typed(path: Path, delim: str, header: list[str], decimal: str | None, guessed: dict[str, Any],
                quoting: bool | None) -> pd.DataFrame | None:
    """:func:`read_csv_typed` once the quoting is known: ``quoting`` is whether values may hold
    line breaks (the file holds quotes), ``None`` to read without quoting, raising
    :class:`_Reread` when a cell then holds a quote or the parser fails."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    def read(types: dict[str, Any]) -> Any:
        parse = pacsv.ParseOptions(delimiter=delim, newlines_in_values=False, quote_char=False) if quoting is None \
            else pacsv.ParseOptions(delimiter=delim, newlines_in_values=quoting)
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=1 << 22),
            parse_options=parse,
            # text is checked to be UTF-8 where it is kept as text (numbers are ASCII)
            convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False, check_utf8=False,
                                                 null_values=sorted(NA_TEXT), true_values=sorted(ty._TRUE),
                                                 false_values=sorted(ty._FALSE)),
        )

    # large strings: pandas keeps text in them, so a text column is handed over as it is
    text = dict.fromkeys(header, pa.large_string())
    try:
        table = read({**text, **guessed})
    except pa.ArrowInvalid as e:
        if not guessed or "conversion error" not in str(e):
            if quoting is None:
                raise _Reread from None  # perhaps a quoted value: read again with quoting
            return None  # malformed rows, quoting pyarrow reads otherwise: the general reader
        try:
            table = read(text)
        except Exception:
            if quoting is None:
                raise _Reread from None
            return None
    except Exception:
        if quoting is None:
            raise _Reread from None
        return None
    if table.column_names != header and quoting is None:
        raise _Reread  # a header whose quotes were read as characters
    if table.column_names != header or table.num_rows == 0:
        return None

    def one(name: str) -> tuple[pd.Series, str | None] | None:
        chunked = table.column(name)
        arr = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
        if pa.types.is_boolean(arr.type):
            return _booleans(arr, name), None
        if pa.types.is_date32(arr.type):
            return _dates(arr, name), ty.DEFAULT_DATE_FORMAT
        if quoting is None and _holds_quote(arr):
            raise _Reread  # a quote read as a character: the file is read again with quoting
        return _column(arr, name, decimal)

    try:
        # the kernels release the GIL: the columns are typed side by side
        with ThreadPoolExecutor(max_workers=min(len(header), _THREADS)) as pool:
            typed = list(pool.map(one, header))
    except _Reread:
        raise
    except Exception:  # anything unforeseen: the general reader decides
        return None
    if any(t is None for t in typed):
        return None
    columns: dict[str, pd.Series] = {}
    formats: dict[str, str] = {}
    for name, (series, fmt) in zip(header, typed, strict=True):  # type: ignore[misc]  # no None is left in typed (checked above); mypy cannot narrow a list
        columns[name] = series
        if fmt is not None:
            formats[name] = fmt
    df = pd.DataFrame(columns, copy=False)
    if formats:
        df.attrs["date_formats"] = formats
    return df


def _holds_quote(arr: Any) -> bool:
    """Whether a cell of a text column holds a quote (one reduction: a quote is byte 34, below
    every letter and digit; compared byte by byte only when a smaller byte is there)."""
    offsets, data = _buffers(arr)
    body = data[offsets[0]:offsets[-1]]
    return bool(body.size) and int(body.min()) <= ord('"') and bool(np.any(body == ord('"')))


def _guess(path: Path, delim: str, header: list[str]) -> dict[str, Any]:
    """Columns the first rows show to be booleans (``True``, ``false``...) or ISO dates
    (``2021-03-04``), each with missing cells perhaps, as pyarrow types to read them with."""
    import pyarrow as pa

    rows: list[list[str]] = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delim)
            next(reader, None)
            for row in reader:
                if len(row) != len(header):
                    return {}  # blank or malformed: nothing is guessed
                rows.append(row)
                if len(rows) >= _SAMPLE:
                    break
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    out: dict[str, Any] = {}
    for i, name in enumerate(header):
        values = {row[i] for row in rows} - NA_TEXT
        if values and values <= (ty._TRUE | ty._FALSE):
            out[name] = pa.bool_()
        elif values and all(len(v) == 10 and _ISO_DATE.fullmatch(v) for v in values):
            out[name] = pa.date32()
    return out


def _booleans(arr: Any, name: str) -> pd.Series:
    """A column pyarrow read as booleans (missing cells are the general reader's markers)."""
    values = _bits(arr.buffers()[1], arr.offset, len(arr))
    if not arr.null_count:
        return pd.Series(values, name=name, copy=False)
    missing = ~_bits(arr.buffers()[0], arr.offset, len(arr))
    values &= ~missing  # the value under a missing cell is undefined: False, as pyarrow gives it
    return pd.Series(pd.arrays.BooleanArray(values, missing), name=name, copy=False)


def _bits(buffer: Any, offset: int, n: int) -> np.ndarray:
    """A pyarrow bitmap (values or validity) as booleans."""
    # unpacked bits are bytes 0 and 1: viewed as booleans, not copied
    return np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), count=offset + n, bitorder="little")[offset:] \
        .view(bool)


def _dates(arr: Any, name: str) -> pd.Series:
    """A column pyarrow read as dates ``2021-03-04``: it takes exactly four, two and two digits
    that make a real date, so the general reader finds the column in that layout and parses
    it to the same days, in the unit pandas gives dates parsed from text."""
    dtype = _date_dtype()
    days = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr), offset=arr.offset * 4)
    per_day = np.timedelta64(1, "D") // np.timedelta64(1, np.datetime_data(dtype)[0])  # type: ignore[call-overload]  # numpy's stubs want a literal unit
    ticks = np.multiply(days, per_day, dtype=np.int64)  # one array, no int64 copy of the days first
    if arr.null_count:
        np.putmask(ticks, ~_bits(arr.buffers()[0], arr.offset, len(arr)), np.iinfo(np.int64).min)  # NaT
    return pd.Series(ticks.view(dtype), name=name, copy=False)


@functools.cache
def _date_dtype() -> Any:
    """The dtype pandas gives dates parsed from text in ``%Y-%m-%d``."""
    return pd.to_datetime(pd.Series(["2021-03-04"], dtype="str"), format=ty.DEFAULT_DATE_FORMAT).dtype


def _quoting(path: Path, delim: str) -> bool | None:
    """Whether the file holds a quote (then a value may hold a line break, which the reader
    looks for at some cost), or ``None`` when a quote stands inside a field rather than at
    its start or end: pandas reads such a quote as a character of the value and pyarrow may
    not (an unclosed quote, for one, is read to the end of the file), so the general reader
    decides."""
    with open(path, "rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            return False
        with mm:
            if mm.find(b'"') < 0:
                return False
            raw = np.frombuffer(mm, dtype=np.uint8)
            try:
                at = np.flatnonzero(raw == ord('"'))
                bounds = np.array([ord(delim), ord("\n"), ord("\r"), ord('"')], dtype=np.uint8)
                before = np.isin(raw[np.maximum(at - 1, 0)], bounds) | (at == 0)
                after = np.isin(raw[np.minimum(at + 1, len(raw) - 1)], bounds) | (at == len(raw) - 1)
                ok = at.size % 2 == 0 and bool(np.all(before | after))
            finally:
                del raw  # the map closes only once no array looks into it
            return True if ok else None


def _column(arr: Any, name: str, decimal: str | None) -> tuple[pd.Series, str | None] | None:
    offsets, data = _buffers(arr)
    try:
        sample = arr.slice(0, _SAMPLE).to_pylist()
    except UnicodeDecodeError:
        return None  # not UTF-8: the general reader says so
    lengths: np.ndarray | None = None  # each cell's length: found when wanted (not for words)
    if all(_PLAIN_NUMBER.match(v) or v in NA_TEXT for v in sample):
        lengths = np.diff(offsets)
        raw = data[offsets[0]:offsets[-1]].tobytes()
        cells, cell_lengths = arr, lengths
        if not _number_chars_only(data[offsets[0]:offsets[-1]], raw):
            # other characters: missing-value markers (NA, ?) among numbers are empty cells
            cells = _markers_emptied(arr)
            if cells is not None:
                offsets, data = _buffers(cells)
                cell_lengths = np.diff(offsets)
                raw = data[offsets[0]:offsets[-1]].tobytes()
                if not _number_chars_only(data[offsets[0]:offsets[-1]], raw):
                    cells = None
        if cells is not None:
            series = _numbers(cells, name, data, offsets, cell_lengths, raw, sample)
            if series is not None:
                return series, None
        offsets, data = _buffers(arr)
    body = data[offsets[0]:offsets[-1]]
    if body.size and int(body.max()) >= 0x80:
        try:
            body.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            return None
    # dates such as 2020-01-31 are written with the same characters as numbers
    return _judged_by_values(arr, name, decimal, sample, lengths)


def _number_chars_only(body: np.ndarray, raw: bytes) -> bool:
    """Whether the bytes ``body`` (``raw`` as bytes) are all digits, points and minus signs:
    the bytes from ``-`` to ``9`` but ``/`` (``_NUMBER_CHARS``). Two vectorised reductions and one
    byte search: several times faster than deleting those characters with ``bytes.translate``."""
    if not body.size:
        return True
    return int(body.min()) >= ord("-") and int(body.max()) <= ord("9") and raw.find(b"/") < 0


def _markers_emptied(arr: Any) -> Any:
    """``arr`` with its missing-value markers other than the empty cell made empty, or
    ``None`` when it has none (both are missing cells to the general reader)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    na = pc.is_in(arr, value_set=pa.array(sorted(NA_TEXT - {""}), arr.type))
    if not pc.any(na).as_py():
        return None
    out = pc.if_else(na, pa.scalar("", arr.type), arr)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _buffers(arr: Any) -> tuple[np.ndarray, np.ndarray]:
    """The offsets and the bytes of a pyarrow string array, as numpy arrays (no copy)."""
    import pyarrow as pa

    buffers = arr.buffers()
    width = 8 if pa.types.is_large_string(arr.type) else 4
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if width == 8 else np.int32, count=len(arr) + 1,
                            offset=arr.offset * width)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def _text(arr: Any, name: str) -> pd.Series:
    """A text column as pandas' parser gives it (nulls are NaN)."""
    return pd.Series(pd.array(arr, dtype=TEXT_DTYPE), name=name, copy=False)


def _numbers(arr: Any, name: str, data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
             raw: bytes, sample: list[str]) -> pd.Series | None:
    """A column written with digits, points and minus signs only, as the general reader types
    it; ``None`` when a cell is not a number (``-``, ``1-2``, ``1.2.3``: pandas keeps such a
    column as text, judged by its values)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(lengths)
    empty = lengths == 0
    missing = bool(empty.any())
    point = b"." in raw
    minus_found = raw.find(b"-") >= 0  # most columns have none: one fast search
    start = offsets[:-1]

    def leading_zero() -> bool:
        # a code such as 0150: read as a number, the zero would be lost (most code columns
        # show one in their first rows)
        if any(_CODE.match(v) for v in sample):
            return True
        return _leading_zero(data, start, lengths, minus_found)

    too_long = int(lengths.max(initial=0)) > _MAX_NUMBER_CHARS  # one pass, no mask unless needed
    if not point:
        if too_long:
            return None  # long whole numbers: int64 or not, exact or not, as pandas decides
        # whole numbers: each cell is digits after at most one leading minus, or empty
        signs = raw.count(b"-") if minus_found else 0
        if signs:
            minus = (np.take(data, start, mode="clip") == ord("-")) & ~empty
            if signs != int(minus.sum()) or bool((minus & (lengths == 1)).any()):
                return None
        if leading_zero():
            return _text(_nulls(arr, empty) if missing else arr, name)
        if not missing:
            return pd.Series(_writable(pc.cast(arr, pa.int64()).to_numpy()), name=name, copy=False)
        if missing and empty.all():
            return pd.Series(np.full(n, np.nan), name=name, copy=False)
        # whole numbers with missing cells, written without a point: Int64 (15 digits fit)
        cast = pc.cast(_nulls(arr, empty), pa.int64())
        ints = np.frombuffer(cast.buffers()[1], dtype=np.int64, count=n, offset=cast.offset * 8)
        ints = np.where(empty, 0, ints)  # the values under a missing cell are undefined
        return pd.Series(pd.arrays.IntegerArray(ints, empty), name=name, copy=False)
    try:
        values = pc.cast(_nulls(arr, empty) if missing else arr, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    v = values.to_numpy(zero_copy_only=False)
    if too_long:
        # beyond 15 digits the two parsers may round differently: pandas' own parser reads those
        long = lengths > _MAX_NUMBER_CHARS
        cells = pc.filter(arr, pa.array(long)).to_pylist()
        exact = pd.read_csv(io.StringIO("\n".join(cells)), header=None, names=["v"], dtype=np.float64,
                            na_filter=False)["v"].to_numpy()
        if len(exact) != len(cells):
            return None
        v = _writable(v)
        v[long] = exact
    if missing and _whole(v) and leading_zero():
        # whole values written with a point (12.0) stay floats; a code 012.0 stays text
        return _text(_nulls(arr, empty), name)
    return pd.Series(_writable(v), name=name, copy=False)


def _writable(v: np.ndarray) -> np.ndarray:
    """``v``, copied when it is a read-only view of pyarrow's memory: a table the general reader
    returns can be assigned to, and so must this one (the copy runs in the typing threads)."""
    return v if v.flags.writeable else v.copy()


def _nulls(arr: Any, empty: np.ndarray) -> Any:
    """``arr`` with its empty cells missing (the same text buffers, a validity bitmap added)."""
    import pyarrow as pa

    # the bitmap starts where the buffers do, before the array's offset
    bits = np.concatenate([np.zeros(arr.offset, dtype=bool), ~empty]) if arr.offset else ~empty
    valid = pa.py_buffer(np.packbits(bits, bitorder="little"))
    buffers = arr.buffers()
    kind = pa.LargeStringArray if pa.types.is_large_string(arr.type) else pa.StringArray
    return kind.from_buffers(len(arr), buffers[1], buffers[2], valid, offset=arr.offset)


def _whole(v: np.ndarray) -> bool:
    """Whether every finite value is a whole number (and there is one); the first values
    are looked at alone first, as a fraction there settles it."""
    head = v[:_SAMPLE]
    head = head[np.isfinite(head)]
    if head.size and not np.all(head == np.round(head)):
        return False
    f = v[np.isfinite(v)]
    return bool(f.size) and bool(np.all(f == np.round(f))) and bool(np.all(np.abs(f) < 2.0**53))


def _leading_zero(data: np.ndarray, start: np.ndarray, lengths: np.ndarray, signs: bool) -> bool:
    """Whether a cell is a code with a leading zero, ``^\\s*[+-]?0\\d`` as the general reader
    looks for them (no spaces or plus signs here): ``0150``, ``-012``, ``00.5``. ``signs``:
    whether any cell holds a minus."""
    if not len(data):
        return False
    # each cell's first character (an empty cell's start is the next cell's: its length rules
    # it out below); only the few cells starting with 0 (or -) are looked at further
    first = np.take(data, start, mode="clip")
    at = np.flatnonzero((first == ord("0")) | (first == ord("-")) if signs else first == ord("0"))
    if not at.size:
        return False
    skip = (first[at] == ord("-")).astype(np.int64)
    keep = lengths[at] >= 2 + skip  # a zero and a digit after it
    at, skip = at[keep], skip[keep]
    if not at.size:
        return False
    zero_then = data[start[at] + skip] == ord("0")
    nxt = data[start[at] + skip + 1]
    return bool(np.any(zero_then & (nxt >= ord("0")) & (nxt <= ord("9"))))


def _iso_dates(arr: Any, name: str, lengths: np.ndarray) -> pd.Series | None:
    """A column of dates written ``2021-03-04`` (or empty), or ``None``. pyarrow's parser
    takes exactly four, two and two digits that make a real date, so every such column is
    one the general reader finds in that layout and parses to the same days."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = lengths == 0
    if not np.all(lengths[~empty] == 10) or empty.all():
        return None
    try:
        days = pc.cast(_nulls(arr, empty), pa.date32())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return _dates(days, name)


def _judged_by_values(arr: Any, name: str, decimal: str | None, sample: list[str],
                      lengths: np.ndarray | None) -> tuple[pd.Series, str | None] | None:
    """A column with other characters than a number's: text, booleans or dates."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def kind(v: str) -> int:
        k = _kind(v)
        return _WORD if k == _COMMA and decimal == "." else k

    def with_nulls(markers: list[str]) -> Any:
        """``arr`` with the cells holding one of ``markers`` missing (``arr`` itself when none
        does: the text is then handed over without a copy)."""
        if not markers:
            return arr
        found = pc.is_in(arr, value_set=pa.array(markers, arr.type))
        if not found.true_count:
            return arr
        return pc.if_else(found, pa.scalar(None, arr.type), arr)

    # a word in the first rows settles it: the column is text (no distinct values needed)
    if any(kind(v) == _WORD for v in set(sample)):
        return _text(with_nulls(sorted(NA_TEXT)), name), None
    if lengths is None:
        lengths = np.diff(_buffers(arr)[0])
    dates_first = all(kind(v) in (_DATE, _NA) for v in sample)
    if dates_first and not any(v in NA_TEXT and v for v in sample):
        iso = _iso_dates(arr, name, lengths)
        if iso is not None:
            return iso, ty.DEFAULT_DATE_FORMAT
    # dates need each cell's distinct value: found with the distinct values themselves
    enc = arr.dictionary_encode() if dates_first else None
    uniq = enc.dictionary.to_pylist() if enc is not None else pc.unique(arr).to_pylist()
    kinds = np.array([kind(v) for v in uniq], dtype=np.int8)
    is_na = kinds == _NA
    markers = [v for v in uniq if v in NA_TEXT]
    present = set(kinds[~is_na].tolist())
    if not present:
        # every cell missing: pandas gives a float column of NaN
        return pd.Series(np.full(len(arr), np.nan), name=name, copy=False), None
    if _WORD in present or (len(present) > 1 and present & {_BOOL, _DATE}):
        # a word; or a boolean or a date beside a value of another kind: no value is then a
        # number to pandas and not all are booleans or dates (nor decimal commas), so text
        return _text(with_nulls(markers), name), None
    if present == {_BOOL}:
        if not {len(v) for v, k in zip(uniq, kinds, strict=True) if k == _NA} & {4, 5}:
            # True/TRUE/true have four characters, the false ones five, no missing marker here either
            values = lengths == 4
            missing = ~values & (lengths != 5)
        else:
            enc = arr.dictionary_encode()
            codes = enc.indices.to_numpy(zero_copy_only=False)
            words = enc.dictionary.to_pylist()
            values = np.array([v in ty._TRUE for v in words], dtype=bool)[codes]
            missing = np.array([v in NA_TEXT for v in words], dtype=bool)[codes]
        if not missing.any():
            return pd.Series(values, name=name, copy=False), None
        return pd.Series(pd.arrays.BooleanArray(values, missing), name=name, copy=False), None
    if present != {_DATE}:
        return None  # numbers written otherwise, decimal commas, mixtures: the general reader decides
    dates = [v for v, k in zip(uniq, kinds, strict=True) if k == _DATE]
    fmt = ty.detect_date_format(pd.Series(dates, dtype=object))
    if fmt is None:
        # dates in no single layout ppdm knows: text, as the general reader leaves them
        return _text(with_nulls(markers), name), None
    # each distinct date parsed once, as the general reader does (a missing cell is NaT)
    if enc is None:
        enc = arr.dictionary_encode()
    words = enc.dictionary.to_pylist()
    parsed = pd.to_datetime(pd.Series([v for v in words if v not in NA_TEXT], dtype="str").str.strip(), format=fmt)
    is_date = np.array([v not in NA_TEXT for v in words], dtype=bool)
    code_of = np.cumsum(is_date) - 1
    code_of[~is_date] = -1
    codes = code_of[enc.indices.to_numpy(zero_copy_only=False)]
    return pd.Series(parsed.array.take(codes, allow_fill=True), name=name, copy=False), fmt
