"""Reading and writing tables (CSV, Parquet) and other outputs, atomically.

A write goes to a temporary file in the destination folder and is renamed into
place only when complete, so a failed run never leaves a partial output file.

Reading never loses or silently alters data: the CSV header is read by ppdm itself
(a name given twice is refused instead of being renamed ``a.1``), a row with fewer or
more fields than the header is reported as malformed (never padded with missing values
or folded into an index), a one-column table whose header holds another separator is
refused with the separator to try, and names and values keep their leading and
trailing spaces exactly.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ppdm.errors import PPDMError

_CSV = (".csv", ".csv.gz", ".txt")
_PARQUET = (".parquet", ".pq")
#: separators a one-column header is searched for (the hint names the first found)
_OTHER_SEPARATORS = (";", "\t", "|")


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


def _shown(sep: str) -> str:
    return "\\t" if sep == "\t" else sep


def _open_text(p: Path) -> io.TextIOBase:
    raw = gzip.open(p, "rt", newline="", encoding="utf-8-sig") if p.name.lower().endswith(".gz") \
        else open(p, newline="", encoding="utf-8-sig")  # noqa: SIM115
    return raw


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


def _short_row(p: Path, sep: str, width: int) -> tuple[int, int] | None:
    """(line number, fields) of the first data row with fewer fields than the header."""
    with _open_text(p) as fh:
        text = fh.read()
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


def read_table(path: str | Path, *, sep: str | None = None, **csv_kwargs) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame.

    Empty cells (and ``?``, the UCI missing marker) become missing values; names and
    values keep their spaces. ``sep`` is the CSV field separator (default ``,``;
    ``"\\t"`` or ``"tab"`` for tabs). A missing or malformed file raises
    :class:`PPDMError` naming the file: duplicate header names, rows with fewer or more
    fields than the header, and a one-column table whose header holds ``;``, a tab or
    ``|`` (with the separator to try).
    """
    p = Path(path)
    if not p.exists():
        raise PPDMError(f"file {str(p)!r} does not exist")
    if p.is_dir():
        raise PPDMError(f"{str(p)!r} is a folder, not a table file")
    kind = _kind(p)
    delim = _separator(sep)
    header: list[str] | None = None
    try:
        if kind == "parquet":
            df = pd.read_parquet(p)
        else:
            header = _csv_header(p, delim)
            if header is not None:
                seen: set[str] = set()
                for name in header:
                    if name in seen:
                        raise PPDMError(f"{str(p)!r} names the column {name!r} twice in its header; rename one of them")
                    seen.add(name)
            kw = {"na_values": ["?"], "sep": delim}
            kw.update(csv_kwargs)
            df = pd.read_csv(p, **kw)
    except PPDMError:
        raise
    except Exception as e:  # pandas/pyarrow raise many types for malformed files
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PPDMError(f"cannot read {str(p)!r} as {kind}: {msg}") from None
    if df.shape[1] == 0:
        raise PPDMError(f"{str(p)!r} has no columns")
    if len(df) == 0:
        raise PPDMError(f"{str(p)!r} has no data rows")
    unnamed = [c for c in df.columns if str(c).startswith("Unnamed:")]
    if unnamed:
        raise PPDMError(f"{str(p)!r} has a column without a header ({unnamed[0]}); is the header line malformed?")
    if kind == "csv":
        _check_csv_shape(p, df, delim, sep)
    return df


def _check_csv_shape(p: Path, df: pd.DataFrame, delim: str, sep: str | None) -> None:
    if not (isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1):
        # pandas takes the first field as an index when every row has one field more than the header
        raise PPDMError(f"{str(p)!r} is malformed: its data rows have more fields than its header "
                        f"({df.shape[1]} names)")
    if df.shape[1] == 1 and sep is None:
        name = str(df.columns[0])
        other = next((s for s in _OTHER_SEPARATORS if s in name), None)
        if other is not None:
            raise PPDMError(
                f"{str(p)!r} reads as one column whose header {name!r} holds '{_shown(other)}'; "
                f"if its fields are separated by '{_shown(other)}', read it with sep='{_shown(other)}' "
                f"(CLI: --sep '{_shown(other)}')"
            )
    if df.shape[1] > 1 and df.iloc[:, -1].isna().any():
        # a short row is padded with missing values by pandas: tell it apart from empty cells
        short = _short_row(p, delim, df.shape[1])
        if short is not None:
            line, n = short
            raise PPDMError(f"{str(p)!r} is malformed: line {line} has {n} field(s), the header has {df.shape[1]}; "
                            "fix the row (a short row is not a row with missing values)")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place on success only.

    A folder that cannot be written is reported naming ``path`` (the output), never the
    temporary file.
    """
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise PPDMError(f"output folder {str(p.parent)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    except OSError as e:
        raise PPDMError(f"cannot write output {str(p)!r}: {e.strerror or type(e).__name__}") from None
    os.close(fd)
    # mkstemp creates 0600 files; give outputs the usual mode (0666 less the umask)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        try:
            os.replace(tmp_path, p)
        except OSError as e:
            raise PPDMError(f"cannot write output {str(p)!r}: {e.strerror or type(e).__name__}") from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Write ``df`` to CSV or Parquet (by suffix), atomically. Returns the path."""
    p = Path(path)
    kind = _kind(p)
    with atomic_path(p) as tmp:
        if kind == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            # repr-exact floats so a round trip gives the same values back
            df.to_csv(tmp, index=False, float_format=None, compression="gzip" if p.name.endswith(".gz") else None)
    return p


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write a text file atomically."""
    p = Path(path)
    with atomic_path(p) as tmp:
        tmp.write_text(text)
    return p


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
