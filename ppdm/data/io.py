"""Reading and writing tables (CSV, Parquet) and other outputs, atomically.

A write goes to a temporary file in the destination folder and is renamed into
place only when complete, so a failed run never leaves a partial output file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ppdm.errors import PPDMError

_CSV = (".csv", ".csv.gz", ".txt")
_PARQUET = (".parquet", ".pq")


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(_PARQUET):
        return "parquet"
    if name.endswith(_CSV):
        return "csv"
    raise PPDMError(f"cannot tell the format of {str(path)!r}: use a .csv or .parquet file")


def check_output_table(path: str | Path) -> Path:
    """Refuse, before any work is done, an output table path ppdm could not write."""
    p = Path(path)
    _kind(p)
    if not p.parent.exists():
        raise PPDMError(f"output folder {str(p.parent)!r} does not exist")
    if p.is_dir():
        raise PPDMError(f"output {str(p)!r} is a folder, not a file")
    return p


def read_table(path: str | Path, **csv_kwargs) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame.

    Empty cells (and ``?``, the UCI missing marker) become missing values.
    A missing or malformed file raises :class:`PPDMError` naming the file.
    """
    p = Path(path)
    if not p.exists():
        raise PPDMError(f"file {str(p)!r} does not exist")
    if p.is_dir():
        raise PPDMError(f"{str(p)!r} is a folder, not a table file")
    kind = _kind(p)
    try:
        if kind == "parquet":
            df = pd.read_parquet(p)
        else:
            kw = {"na_values": ["?"], "skipinitialspace": True}
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
    return df


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place on success only."""
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise PPDMError(f"output folder {str(p.parent)!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    os.close(fd)
    # mkstemp creates 0600 files; give outputs the usual mode (0666 less the umask)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, p)
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
