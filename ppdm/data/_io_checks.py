"""Checks of a CSV file that :func:`ppdm.data.io.read_table` makes around the parser: a binary
file, the header as written, a row with fewer fields than the header, a one-column header holding
another separator, and the parser's errors in ppdm's words (see :mod:`ppdm.data.io`'s
docstring). Split from :mod:`ppdm.data.io`, which keeps reading, typing and writing.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from pathlib import Path

import pandas as pd

from ppdm.errors import PPDMError

#: separators a one-column header is searched for (the hint names the first found)
_OTHER_SEPARATORS = (";", "\t", "|")


def _shown(sep: str) -> str:
    return "\\t" if sep == "\t" else sep


def _open_text(p: Path) -> io.TextIOBase:
    raw = gzip.open(p, "rt", newline="", encoding="utf-8-sig") if p.name.lower().endswith(".gz") \
        else open(p, newline="", encoding="utf-8-sig")  # noqa: SIM115
    return raw


#: control characters no text table holds (tab, line feed, form feed and carriage return are text)
_CONTROL = bytes([*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F])
#: share of control characters in the first 8 KiB from which a file is binary (random bytes hold ~12%)
_CONTROL_SHARE = 0.01


def _binary(p: Path) -> bool:
    """Whether the file's first 8 KiB look binary: a NUL byte, or more than 1 % of control
    characters (binary data without NUL bytes would otherwise reach the parser, whose guess
    about separators, e.g. a tab among the bytes, is no help)."""
    try:
        with (gzip.open(p, "rb") if p.name.lower().endswith(".gz") else open(p, "rb")) as fh:
            head = fh.read(8192)
    except (OSError, EOFError):
        return False  # pandas names the problem
    if b"\x00" in head:
        return True
    return bool(head) and len(head) - len(head.translate(None, _CONTROL)) > _CONTROL_SHARE * len(head)


def _csv_header(p: Path, sep: str) -> list[str] | None:
    """The header fields as written, or ``None`` when the file has no readable first line
    (pandas then reports the problem)."""
    try:
        with _open_text(p) as fh:
            for row in csv.reader(fh, delimiter=sep):
                if row:
                    return row
    except (OSError, UnicodeDecodeError, csv.Error, EOFError):
        return None
    return None


def _short_row(p: Path, sep: str, width: int, nrows: int | None = None) -> tuple[int, int] | None:
    """(line number, fields) of the first data row with fewer fields than the header (among
    the first ``nrows`` rows when given)."""
    with _open_text(p) as fh:
        if nrows is None:
            text = fh.read()
        else:
            import itertools

            text = "".join(itertools.islice(fh, nrows + 1))
    if '"' not in text:
        # no quoting: a row's fields are its separators plus one (fast path, no csv parsing)
        for no, line in enumerate(text.splitlines()[1:], 2):
            if line.strip() and line.count(sep) + 1 < width:
                return no, line.count(sep) + 1
        return None
    with _open_text(p) as fh:
        reader = csv.reader(fh, delimiter=sep)
        first = True
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank lines are not records (pandas skips them too)
            if first:
                first = False
                continue
            if len(row) < width:
                return reader.line_num, len(row)
    return None


def _refuse_other_separator(p: Path, name: str) -> None:
    other = next((s for s in _OTHER_SEPARATORS if s in name), None)
    if other is not None:
        raise PPDMError(
            f"{str(p)!r} reads as one column whose header {name!r} holds '{_shown(other)}'; "
            f"if its fields are separated by '{_shown(other)}', read it with sep='{_shown(other)}' "
            f"(CLI: --sep '{_shown(other)}')"
        )


_EXPECTED_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_OPEN_QUOTE = re.compile(r"EOF inside string starting at row (\d+)")


def _parser_message(p: Path, kind: str, e: Exception, header: list[str] | None) -> str:
    """The parser's error in ppdm's words: the file, the line, what is wrong with it."""
    text = " ".join(str(e).split())
    where = str(p)
    m = _EXPECTED_FIELDS.search(text)
    if m:
        want, line, saw = m.groups()
        hint = ""
        if header is not None and len(header) == 1:
            hint = "; the header has a single name: is another character than ',' separating the fields (--sep)?"
        return (f"{where!r} is malformed: line {line} has {saw} fields, the header has {want}{hint}")
    m = _OPEN_QUOTE.search(text)
    if m:
        return f"{where!r} is malformed: a quote opened near line {int(m.group(1)) + 1} is never closed"
    if isinstance(e, UnicodeDecodeError) or "codec can't decode" in text:
        return f"{where!r} is not UTF-8 text (a binary file, or text in another encoding: save it as UTF-8)"
    if "No columns to parse" in text:
        return f"{where!r} is empty"
    text = re.sub(r"^Error tokenizing data\.\s*C error:\s*", "", text) or type(e).__name__
    return f"cannot read {where!r} as {kind}: {text}"


def _check_csv_shape(p: Path, df: pd.DataFrame, delim: str, sep: str | None, nrows: int | None = None) -> None:
    if not (isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1):
        # pandas takes the first field as an index when every row has one field more than the header
        raise PPDMError(f"{str(p)!r} is malformed: its data rows have more fields than its header "
                        f"({df.shape[1]} names)")
    if df.shape[1] == 1 and sep is None:
        _refuse_other_separator(p, str(df.columns[0]))
    if df.shape[1] > 1 and df.iloc[:, -1].isna().any():
        # a short row is padded with missing values by pandas: tell it apart from empty cells
        short = _short_row(p, delim, df.shape[1], nrows)
        if short is not None:
            line, n = short
            raise PPDMError(f"{str(p)!r} is malformed: line {line} has {n} field(s), the header has {df.shape[1]}; "
                            "fix the row (a short row is not a row with missing values)")
