"""Tables too large for one machine's memory: Dask DataFrames read from files, worked on
partition by partition, and written as partitioned Parquet datasets.

An input is read with Dask (:func:`wants_dask`) when it is

* a folder: a Parquet dataset (its ``*.parquet`` files, also in ``key=value`` sub-folders);
* a glob of CSV or Parquet files (``data/part-*.csv``);
* a single file read with ``engine="dask"`` (CLI ``--engine dask``), or with ``engine="auto"``
  (the default) when it is larger than :data:`DASK_AUTO_BYTES` (1 GiB).

Types are settled as for an in-memory table (:func:`ppdm.data.io.read_table`), from the
schema or, without one, inferred from the first :data:`HEAD_ROWS` rows of the first file.
Every partition is then given exactly those types (whole numbers and booleans as their
nullable forms, ``Int64`` and ``boolean``, so that a later partition may have an empty cell);
a later partition that contradicts them (a code with a leading zero in a column the head
showed as whole numbers, a number with decimals there, a date in another layout) is refused
naming the column and the partition, never converted silently.

Nothing here ever collects a whole table into memory: :func:`run_partitions` runs one task
per partition (locally, or on a ``distributed`` cluster when a ``Client`` is active) and
returns what each task returns, which callers keep small (counts, sums, sample rows).
"""

from __future__ import annotations

import contextlib
import contextvars
import glob as _glob
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ppdm.data.atomic import hold_temporary, release_temporary
from ppdm.errors import PPDMError

if TYPE_CHECKING:
    from ppdm.data.schema import Schema

#: a single file above this size is read with Dask when the engine is "auto"
DASK_AUTO_BYTES = 1 << 30
#: rows of the first file that settle the column types when no schema gives them
HEAD_ROWS = 20_000
#: bytes of CSV per partition
BLOCKSIZE = "64MB"
ENGINES = ("auto", "pandas", "dask")

Progress = Callable[[int, int], None]
#: progress(stage, done, total) for every :func:`run_partitions` without a callback of its own
_REPORT: contextvars.ContextVar[Callable[[str, int, int], None] | None] = contextvars.ContextVar(
    "ppdm_partition_report", default=None)


@contextlib.contextmanager
def reporting(progress: Callable[[str, int, int], None] | None) -> Iterator[None]:
    """Within the block, partitioned work reports ``progress(stage, done, total)`` after every
    partition (``stage`` names the pass, e.g. ``ppdm-linkage``), unless given its own callback."""
    token = _REPORT.set(progress)
    try:
        yield
    finally:
        _REPORT.reset(token)


def is_glob(spec: str) -> bool:
    return any(ch in spec for ch in "*?[")


def check_engine(engine: str) -> None:
    """``engine`` is one of :data:`ENGINES`."""
    if engine not in ENGINES:
        raise PPDMError(f"--engine must be 'auto', 'pandas' or 'dask', got {engine!r}")


def wants_dask(spec: str, engine: str = "auto") -> bool:
    """Whether input ``spec`` is read with Dask (see the module docstring)."""
    check_engine(engine)
    if spec.startswith("builtin:"):
        if engine == "dask":
            raise PPDMError("a shipped dataset (builtin:NAME) is read into memory; use --engine auto or pandas")
        return False
    p = Path(spec)
    many = p.is_dir() or (is_glob(spec) and not p.exists())
    if many:
        if engine == "pandas":
            raise PPDMError(f"{spec!r} names several files; read it with --engine dask (or auto)")
        return True
    if engine == "dask":
        return True
    return engine == "auto" and p.is_file() and p.stat().st_size > DASK_AUTO_BYTES


def dataset_files(spec: str) -> list[Path]:
    """The table files ``spec`` names: a folder's Parquet (or CSV) files, the matches of a
    glob, or the file itself; refused when there are none or when formats are mixed."""
    p = Path(spec)
    if p.is_dir():
        files = sorted(q for q in p.rglob("*") if q.is_file() and _kind_of(q) == "parquet"
                       and not q.name.startswith((".", "_")))
        if not files:
            files = sorted(q for q in p.rglob("*") if q.is_file() and _kind_of(q) == "csv"
                           and not q.name.startswith((".", "_")))
        if not files:
            raise PPDMError(f"folder {spec!r} holds no Parquet or CSV file")
    elif is_glob(spec) and not p.exists():
        files = sorted(Path(f) for f in _glob.glob(spec, recursive=True) if Path(f).is_file())
        if not files:
            raise PPDMError(f"no file matches {spec!r}")
    else:
        if not p.exists():
            raise PPDMError(f"file {spec!r} does not exist")
        files = [p]
    kinds = {_kind_of(f) for f in files}
    if None in kinds:
        bad = next(f for f in files if _kind_of(f) is None)
        raise PPDMError(f"cannot tell the format of {str(bad)!r}: use .csv or .parquet files")
    if len(kinds) > 1:
        raise PPDMError(f"{spec!r} mixes CSV and Parquet files; give one format")
    return files


def _kind_of(p: Path) -> str | None:
    name = p.name.lower()
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".csv.gz", ".txt")):
        return "csv"
    return None


# ------------------------------------------------------------------------------ reading
@dataclass
class Dataset:
    """A table read lazily with Dask: ``data`` is the typed Dask DataFrame, one partition per
    block of CSV (``blocksize``) or per Parquet file (or row group)."""

    data: Any
    source: str
    files: list[Path]
    kind: str
    head: pd.DataFrame = field(repr=False)
    date_formats: dict[str, str] = field(default_factory=dict)
    blocksize: str | None = None

    @property
    def npartitions(self) -> int:
        return int(self.data.npartitions)

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.data.columns]

    def partition(self, i: int) -> pd.DataFrame:
        """Partition ``i`` as a pandas DataFrame, read where this runs."""
        return read_partition(self.data, i, self.source)


def read_partition(ddf: Any, i: int, source: str = "the table") -> pd.DataFrame:
    """Partition ``i`` of a Dask DataFrame, computed synchronously in the calling thread (also
    inside a task on a cluster worker, where the files must be readable)."""
    try:
        return ddf.partitions[i].compute(scheduler="sync")
    except PPDMError:
        raise
    except (ValueError, UnicodeDecodeError, OSError) as e:
        msg = " ".join(str(e).split())[:200] or type(e).__name__
        raise PPDMError(f"cannot read partition {i} of {source}: {msg}") from None


def open_dataset(
    spec: str,
    *,
    sep: str | None = None,
    schema: Schema | None = None,
    categorical: Sequence[str] = (),
    dates: Mapping[str, str | None] | None = None,
    blocksize: str | None = BLOCKSIZE,
    decimal: str | None = None,
) -> Dataset:
    """Read ``spec`` (a folder, a glob or a file) lazily, with the types of
    :func:`ppdm.data.io.read_table` (see the module docstring; ``decimal`` as there, decided
    on the first rows)."""
    import dask.dataframe as dd

    from ppdm.data.io import _separator, read_table

    files = dataset_files(spec)
    kind = _kind_of(files[0]) or "csv"
    head = read_table(files[0], sep=sep, schema=schema, categorical=list(categorical), dates=dates, nrows=HEAD_ROWS,
                      decimal=decimal)
    formats = dict(head.attrs.get("date_formats") or {})
    plan = _plan(head)
    names = [str(c) for c in head.columns]
    if kind == "csv":
        read_as = {c: (str if plan[c] != "float" else "float64") for c in names}
        comma = bool(head.attrs.get("decimal_comma"))
        ddf = dd.read_csv([str(f) for f in files], sep=_separator(sep), na_values=["?"], dtype=read_as,
                          blocksize=blocksize, compression="gzip" if files[0].name.lower().endswith(".gz") else None,
                          **({"decimal": ","} if comma else {}))
    else:
        ddf = dd.read_parquet([str(f) for f in files])
        blocksize = None
    got = [str(c) for c in ddf.columns]
    if got != names:
        raise PPDMError(f"the files of {spec!r} do not all have the columns {names}; found {got}")
    meta = head.iloc[:0].copy()
    meta.attrs = {}
    for c, how in plan.items():
        if how in ("Int64", "boolean"):
            meta[c] = meta[c].astype(pd.api.types.pandas_dtype(how))
    # every partition's dates in the head's unit (a partition of only empty dates would parse
    # to another one, and the parts of a release must share one schema)
    units = {c: str(meta[c].dtype) for c, how in plan.items() if how == "date"}
    typed = ddf.map_partitions(_apply_plan, plan, formats, spec, units, meta=meta)
    return Dataset(typed, spec, files, kind, head, formats, blocksize)


def _plan(head: pd.DataFrame) -> dict[str, str]:
    """How each column of a typed head is typed: text, bool, boolean, Int64 (whole numbers,
    nullable in every partition), float, date."""
    from ppdm.data import types as ty

    plan: dict[str, str] = {}
    for c in head.columns:
        s = head[c]
        if ty.is_date_dtype(s):
            plan[str(c)] = "date"
        elif pd.api.types.is_bool_dtype(s):
            plan[str(c)] = "boolean"  # nullable in every partition, as whole numbers
        elif pd.api.types.is_integer_dtype(s):
            # whole numbers are nullable in every partition: a later one may have an empty cell
            plan[str(c)] = "Int64"
        elif pd.api.types.is_float_dtype(s):
            plan[str(c)] = "float"
        else:
            plan[str(c)] = "text"
    return plan


def _apply_plan(pdf: pd.DataFrame, plan: dict[str, str], formats: dict[str, str], source: str,
                units: dict[str, str] | None = None, partition_info: dict | None = None) -> pd.DataFrame:
    """Give one partition the types of the plan, refusing values that contradict it."""
    from ppdm.data import types as ty

    where = f"partition {partition_info['number']}" if partition_info else "a partition"
    out = {}
    for c, how in plan.items():
        s = pdf[c]
        try:
            if how == "text":
                out[c] = s.astype("str").where(s.notna()) if not pd.api.types.is_object_dtype(s) else s
            elif how == "float":
                out[c] = s.astype("float64")
            elif how == "Int64":
                if pd.api.types.is_string_dtype(s) or pd.api.types.is_object_dtype(s):
                    if ty.has_leading_zero_code(s):
                        raise PPDMError(f"column {c!r} of {source} holds a code with a leading zero in {where}, "
                                        "but its first rows held whole numbers; declare it categorical "
                                        f"(--categorical {c} or a schema file)")
                    if not ty.written_as_whole(s) and s.notna().any():
                        raise PPDMError(f"column {c!r} of {source} holds a number with decimals in {where}, "
                                        "but its first rows held whole numbers; declare it numeric in a schema file")
                out[c] = s.astype("Int64")
            elif how == "boolean":
                out[c] = ty.as_bool(s).astype("boolean")
            else:  # date
                if ty.is_date_dtype(s):
                    out[c] = s
                else:
                    fmt = formats.get(c)
                    text = s.astype("str").str.strip().where(s.notna())
                    parsed = pd.to_datetime(text, format=fmt, errors="coerce")
                    bad = parsed.isna() & text.notna()
                    if bad.any():
                        raise PPDMError(f"date column {c!r} of {source} holds {text[bad].iloc[0]!r} in {where}, "
                                        f"which is not a date in the format {fmt!r}")
                    out[c] = parsed
                if units and c in units and str(out[c].dtype) != units[c]:
                    out[c] = out[c].astype(pd.api.types.pandas_dtype(units[c]))
        except PPDMError:
            raise
        except (TypeError, ValueError) as e:
            raise PPDMError(f"column {c!r} of {source} does not fit its type ({how}) in {where}: "
                            f"{' '.join(str(e).split())[:120]}") from None
    return pd.DataFrame(out, index=pdf.index)


# ---------------------------------------------------------------------------- running
def active_client() -> Any:
    """The ``distributed`` client in use, or ``None`` (then tasks run on the local scheduler)."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None


def run_partitions(fn: Callable[..., Any], n: int, *, args: Sequence[Any] = (), progress: Progress | None = None,
                   name: str = "ppdm-partition") -> list[Any]:
    """``[fn(i, *args) for i in range(n)]``, one task per partition, in parallel, with
    ``progress(done, n)`` called as each task finishes. On a ``distributed`` cluster (an
    active ``Client``) the tasks run on its workers; otherwise on Dask's local scheduler."""
    import dask

    if n == 0:
        return []
    hook = _REPORT.get()
    if progress is None and hook is not None:

        def progress(done: int, total: int) -> None:
            hook(name, done, total)

    client = active_client()
    if client is not None:
        from distributed import as_completed

        bound = _Bound(fn, tuple(args))
        futures = [client.submit(bound, i, key=f"{name}-{i}-{os.getpid()}-{id(bound)}", pure=False)
                   for i in range(n)]
        out: list[Any] = [None] * n
        index = {f.key: i for i, f in enumerate(futures)}
        done = 0
        for fut in as_completed(futures):
            out[index[fut.key]] = fut.result()
            done += 1
            if progress is not None:
                progress(done, n)
        return out
    # the arguments travel inside the task: Dask must not look into them for collections to compute
    bound = _Bound(fn, tuple(args))
    tasks = [dask.delayed(bound, pure=False, name=f"{name}-{i}")(i) for i in range(n)]
    if progress is None:
        return list(dask.compute(*tasks))
    from dask.callbacks import Callback

    finished = [0]
    keys = {t.key for t in tasks}

    class _Count(Callback):
        def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
            if key in keys and progress is not None:  # always set here; mypy cannot see it in the class
                finished[0] += 1
                progress(finished[0], n)

    with _Count():
        return list(dask.compute(*tasks))


class _Bound:
    """``fn`` with its trailing arguments, called with a partition number."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args

    def __call__(self, i: int) -> Any:
        return self.fn(i, *self.args)


# ---------------------------------------------------------------------------- writing
def check_output_dataset(path: str | Path, *, inputs: Sequence[str | Path | None] = ()) -> Path:
    """Refuse, before any work, a dataset folder that cannot be written: it must not exist yet
    (a release never replaces another silently), its parent must be a writable folder, and it
    must not be one of the inputs."""
    p = Path(path)
    if p.name.lower().endswith((".csv", ".csv.gz", ".txt")):
        raise PPDMError(f"the release of a partitioned table is a Parquet dataset folder; give --out a folder name, "
                        f"not {str(p)!r}")
    if p.exists():
        raise PPDMError(f"output {str(p)!r} exists; remove it or choose another name (a dataset is never replaced)")
    parent = p.parent
    if not parent.exists():
        raise PPDMError(f"output folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PPDMError(f"cannot write output {str(p)!r}: its folder {str(parent)!r} is not writable")
    for src in inputs:
        if src is not None and Path(src).resolve() == p.resolve():
            raise PPDMError(f"output {str(p)!r} is the input; write to another folder")
    return p


def part_name(i: int) -> str:
    return f"part.{i:05d}.parquet"


@dataclass
class DatasetWriter:
    """Writes the parts of a Parquet dataset into a temporary folder beside ``path`` and
    renames it into place only when every part is written (:meth:`commit`); :meth:`abort`
    (or leaving the ``with`` block on an error) removes it."""

    path: Path
    tmp: Path = field(init=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        try:
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent))
        except OSError as e:
            raise PPDMError(f"cannot write output {str(self.path)!r}: {e.strerror or type(e).__name__}") from None
        hold_temporary(self.tmp)  # removed on a signal too (ppdm.data.atomic)

    def part_path(self, i: int) -> Path:
        return self.tmp / part_name(i)

    def commit(self) -> Path:
        if self.path.exists():
            raise PPDMError(f"output {str(self.path)!r} appeared while the release was made; nothing was replaced")
        os.replace(self.tmp, self.path)
        release_temporary(self.tmp)
        return self.path

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        release_temporary(self.tmp)

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc_type is not None or self.tmp.exists():
            self.abort()


def write_part(df: pd.DataFrame, path: Path) -> None:
    """One part of a dataset: Parquet, index left out, dates and nullable types as they are."""
    df.to_parquet(path, index=False)


def iter_chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for a in range(0, n, size):
        yield a, min(n, a + size)


def sample_counts(lengths: Sequence[int], k: int, rng: np.random.Generator) -> np.ndarray:
    """How many of ``k`` records drawn uniformly without replacement from the whole table fall
    in each partition (a multivariate hypergeometric draw over the partitions' lengths)."""
    counts = np.asarray(lengths, dtype=np.int64)
    total = int(counts.sum())
    if k >= total:
        return counts.copy()
    return rng.multivariate_hypergeometric(counts, k)
