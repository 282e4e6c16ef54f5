"""Evaluate a release larger than memory: x and z as partitioned Dask tables.

What :func:`ppdm.experiments.evaluate.evaluate` does in memory, partition by partition: the
same :func:`~ppdm.experiments.evaluate.evaluate` is the way in, for the library and for
``ppdm evaluate`` (a Parquet dataset, a glob of files, ``--engine dask``), and when
:func:`~ppdm.experiments.evaluate.partitioned` says the inputs are partitioned it calls
:func:`_evaluate_partitioned` here. :func:`open_release_datasets` reads x and z lazily with
x's types (and without its identifiers), :func:`repair_partitions` pairs z's rows with x's
through the private log, and :func:`measure_datasets` runs each measure exactly out of core
when it has that form (:mod:`ppdm.metrics.out_of_core`), else on a sample of ``sample_rows``
records, and builds the same :class:`~ppdm.experiments.evaluate.Evaluation`.

:func:`repair_partitions` is the one place a partitioned z is paired with x. A partitioned
release (:func:`ppdm.experiments.out_of_core.release_dataset`) mixes its rows across its
parts, so its part j holds records of every partition of x and as many rows as chance gave
it; a release made in memory was shuffled as a whole. Either way the log says, for row k of
z, which row of x it was made from, and z's rows are moved beside their originals in x's
partitions. The record-by-record measures then compare x's partition i with z's partition i
row for row (:func:`ppdm.metrics._dask.check_aligned`); a z that was not paired so is
refused there with one line, never compared with different people.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppdm.errors import PPDMError, SchemaError
from ppdm.experiments.evaluate_common import CheckedRelease, EvaluateOptions, Evaluation, TableReading
from ppdm.experiments.pairing import Pairing

if TYPE_CHECKING:
    import pandas as pd

    from ppdm.data.partitions import Dataset
    from ppdm.data.schema import Schema


@dataclass
class DatasetInputs:
    """x, z and the test table of a partitioned evaluation, lazily (Dask DataFrames in the
    evaluation's view), with the schema, x's first rows and the block size read with."""

    x: Any
    z: Any
    test: Any
    schema: Schema
    head: pd.DataFrame
    blocksize: Any


def open_release_datasets(
    original: str | Dataset,
    anonymized: str,
    test: str | None = None,
    *,
    pairing: Pairing,
    provenance: Mapping[str, Any] | None = None,
    schema: Schema | None = None,
    reading: TableReading | None = None,
    missing: str = "error",
) -> DatasetInputs:
    """Open x and z (files, Parquet folders, globs) partition by partition, z with x's types,
    x without its identifiers, z paired with x (:func:`repair_partitions`) and both under the
    missing-value policy, the files read as ``reading`` says. The block size is
    ``reading.blocksize``, else the one the release records. ``original`` may be a
    :class:`~ppdm.data.partitions.Dataset` already open (its own types and block size;
    ``reading``'s ``categorical``, ``dates`` and ``blocksize`` are then for z and the test table only)."""
    from ppdm.data.io import align_dtypes
    from ppdm.data.partitions import BLOCKSIZE, Dataset, open_dataset
    from ppdm.data.provenance import owner_view
    from ppdm.data.roles import resolve_schema
    from ppdm.experiments.evaluation import without_identifiers
    from ppdm.metrics._dask import working_parts

    rd = reading if reading is not None else TableReading()
    categorical, dates, sep, decimal = rd.categorical, rd.dates, rd.sep, rd.decimal
    if (categorical or dates) and schema is not None:
        raise PPDMError("give column types either in the schema (--schema) or with --categorical/--date, not both")
    given = original if isinstance(original, Dataset) else None
    if (given is None and str(original).startswith("builtin:")) or anonymized.startswith("builtin:"):
        raise PPDMError("a shipped dataset (builtin:NAME) is evaluated in memory; give files for a partitioned "
                        "evaluation")
    recorded = ((pairing.private or provenance or {}).get("input") or {}).get("blocksize")
    block = rd.blocksize or (given.blocksize if given is not None else None) or recorded or BLOCKSIZE
    xds = given if given is not None else open_dataset(str(original), sep=sep, schema=schema,
                                                       categorical=list(categorical), dates=dict(dates or {}),
                                                       blocksize=block, decimal=decimal)
    head = xds.head.copy()  # a Dataset given keeps its own head
    head.attrs["date_formats"] = dict(xds.date_formats)
    sch = resolve_schema(head, schema=schema, class_column=rd.class_column, roles=rd.roles, detect=False,
                         what="the schema" if rd.schema_name is None else f"schema file {rd.schema_name!r}")
    x, sch, ids = without_identifiers(xds.data, sch, (provenance or {}).get("removed_identifiers") or [])
    read_schema = sch  # x's own types, for the test set read like x
    # a recoded release is compared on its own categories, as in memory: the same view of x, by partition
    x, sch, recode = recoded_parts(x, sch, owner_view(dict(provenance) if provenance else None, pairing.private))
    head = recode(head)
    zds = open_dataset(anonymized, sep=sep, schema=sch, blocksize=block, decimal=decimal)
    cols, want = zds.columns, [str(c) for c in x.columns]
    if set(cols) - set(ids) != set(want):
        lacks = [c for c in want if c not in cols]
        extra = [c for c in cols if c not in want and c not in ids]
        raise SchemaError(f"the anonymized table {anonymized!r} does not have the columns of the original: it "
                          + " and ".join(([f"lacks {', '.join(map(repr, lacks))}"] if lacks else [])
                                         + ([f"has extra {', '.join(map(repr, extra))}"] if extra else [])))
    like = x._meta[want]
    # z read with x's types, column by column (a code read as text in one and as a number in the other never matches)
    z = zds.data[want].map_partitions(align_dtypes, like, f"the anonymized table {anonymized!r}", meta=like)
    if pairing.mode == "private log":
        x, z = repair_partitions(x, z, pairing, missing)
    if missing == "drop":
        keep = sch.columns
        x = x.dropna(subset=keep)
        z = z.dropna(subset=keep)
    elif missing == "error":
        refuse_missing_lazily(x, sch, xds.source)
        refuse_missing_lazily(z, sch, anonymized)
    t = None
    if test is not None:
        t = working_parts(recode(open_dataset(test, sep=sep, schema=read_schema, blocksize=block,
                                              decimal=decimal).data[want]), sch.numeric)
    return DatasetInputs(working_parts(x, sch.numeric), working_parts(z, sch.numeric), t, sch, head, block)


def _evaluate_partitioned(
    x: Any,
    release: Any,
    schema: Schema | None,
    opts: EvaluateOptions,
) -> Evaluation:
    """:func:`ppdm.experiments.evaluate.evaluate` of a partitioned release of the partitioned
    table ``x`` (:func:`open_release_datasets`, :func:`measure_datasets`).

    ``x`` is the table the release was made from, as :func:`ppdm.data.partitions.open_dataset`
    read it (or its path: a folder, a glob, a file); ``release`` is the
    :class:`~ppdm.experiments.out_of_core.DatasetRelease` that
    :func:`~ppdm.experiments.out_of_core.release_dataset` returned, the release's folder
    (its ``.provenance.json`` and ``.private.json`` are read beside it), or the
    :class:`CheckedRelease` of ``ppdm evaluate``. A partitioned release mixes its rows across
    its parts, so z's rows are put beside their originals through the private log's pairing
    (:func:`repair_partitions`), whatever x's partitions; without a log (or with
    ``options.pairing="none"``) a record-by-record measure named in ``options`` raises
    :class:`~ppdm.errors.ParameterError` (for a :class:`CheckedRelease` it is reported skipped,
    as ``ppdm evaluate`` does in memory) and the default set skips it, never comparing
    different people. ``options.pairing="position"`` declares z's parts to hold x's partitions'
    records in order (a release made with ``shuffle=False``). ``schema``: default the
    release's. ``options.control`` is not read (the attacks are skipped, as for
    ``--engine dask``); ``options.test`` and ``options.rules`` may be files.
    """
    from ppdm.data.partitions import Dataset
    from ppdm.errors import ParameterError
    from ppdm.experiments.evaluate_common import check_paired
    from ppdm.experiments.evaluation import resolve_measures
    from ppdm.experiments.pairing import check_pairing_mode

    if not isinstance(x, (Dataset, str, Path)):
        raise ParameterError(f"a partitioned evaluation reads x from files: give x as ppdm.data.partitions."
                             f"open_dataset read it, or its path, not a {type(x).__name__}")
    check_pairing_mode(opts.pairing)
    if isinstance(release, CheckedRelease):
        name, provenance, pair, reading = release.path, release.provenance, release.pairing, release.reading
    else:
        name, provenance, pair = _release_log(x, release, opts)
        schema = schema if schema is not None else _recorded_schema(release, provenance)
        reading = TableReading()
    specs = resolve_measures(opts.measure_spec)
    if opts.named and not isinstance(release, CheckedRelease):
        check_paired(specs, pair)
    if opts.missing is None:
        # read x as the release read it
        opts = replace(opts, missing=((pair.private or {}).get("input") or {}).get("missing") or "error")
    if opts.test is not None and not isinstance(opts.test, (str, Path)):
        raise ParameterError("a partitioned evaluation reads its test table from a file; give its path")
    test = None if opts.test is None else str(opts.test)
    inputs = open_release_datasets(x if isinstance(x, Dataset) else str(x), name, test, pairing=pair,
                                   provenance=provenance, schema=schema, reading=reading, missing=str(opts.missing))
    source = x.source if isinstance(x, Dataset) else str(x)
    return measure_datasets(inputs, pairing=pair, options=opts, provenance=provenance, specs=specs,
                            sources={"original": source, "anonymized": name, "test": test})


def _recorded_schema(release: Any, provenance: Mapping[str, Any] | None) -> Schema | None:
    """The schema a partitioned release records: its DatasetRelease's, else its provenance's."""
    from ppdm.data.schema import Schema
    from ppdm.experiments.out_of_core import DatasetRelease

    if isinstance(release, DatasetRelease):
        return release.schema
    recorded = (provenance or {}).get("schema")
    return Schema.from_dict(recorded) if recorded else None


def _release_log(x: Dataset | str | Path, release: Any,
                 opts: EvaluateOptions) -> tuple[str, dict[str, Any] | None, Pairing]:
    """The files, provenance and pairing of a partitioned release given to the library (a
    :class:`~ppdm.experiments.out_of_core.DatasetRelease` or its folder), its private log
    checked to be x's and z's."""
    from ppdm.data.partitions import Dataset, dataset_files, is_glob
    from ppdm.data.provenance import private_path, read_provenance
    from ppdm.errors import ParameterError
    from ppdm.experiments.out_of_core import DatasetRelease, dataset_sha256
    from ppdm.experiments.pairing import check_private_input, pairing_of, read_private_log

    if isinstance(release, DatasetRelease):
        if opts.private is not None:
            raise ParameterError("a DatasetRelease carries its own private log; give options.private with the "
                                 "release's folder instead")
        folder = Path(release.path)
        provenance: dict[str, Any] | None = release.provenance or None
        private = (release.private or None) if opts.pairing != "position" else None
        private_file = private_path(folder) if private is not None else None
    elif isinstance(release, (str, Path)):
        folder = Path(release)
        if not folder.exists() and not is_glob(str(release)):
            raise PPDMError(f"release {str(folder)!r} does not exist")
        provenance = read_provenance(folder)
        private, private_file = read_private_log(folder, opts.private, opts.pairing)
    else:
        raise PPDMError(f"a partitioned evaluation expects a DatasetRelease or the release's folder, got "
                        f"{type(release).__name__}")
    pair = pairing_of(private, private_file, opts.pairing, provenance)
    # a library user has no --private or --pairing to give: the pairing is said by check_paired
    pair.notes.clear()
    if private is not None:
        inp = private.get("input") or {}
        x_files = x.files if isinstance(x, Dataset) else dataset_files(str(x))
        # the log belongs to these tables: x is the input (every file hashed), z the parts as written
        check_private_input(private, private_file, x_name="x",
                            x_sha256=dataset_sha256(x_files) if inp.get("sha256") and inp.get("partitions") else None,
                            z_sha256=dataset_sha256(dataset_files(str(folder))) if folder.is_dir() else None,
                            pairs=pair.mode == "private log")
    return str(folder), provenance, pair


def recoded_parts(x: Any, schema: Schema, provenance: Mapping[str, Any] | None) -> tuple[Any, Schema, Callable[[Any], Any]]:
    """:func:`ppdm.experiments.evaluate.recoded_view` of a Dask DataFrame, lazily (one
    implementation: the in-memory view applied to each partition). Returns ``(x, schema, f)``,
    ``f`` doing the same to another table, pandas or Dask (the head, the test set)."""
    from ppdm.experiments.evaluate_common import recoded_view

    meta = x._meta
    _, sch, view = recoded_view(meta, schema, provenance)
    if sch is schema:
        return x, schema, lambda df: df

    def recode(df: Any) -> Any:
        if hasattr(df, "map_partitions"):
            return df.map_partitions(view, meta=view(df._meta))
        return view(df)

    return recode(x), sch, recode


def measure_datasets(
    inputs: DatasetInputs,
    *,
    pairing: Pairing,
    options: EvaluateOptions,
    provenance: Mapping[str, Any] | None = None,
    sources: Mapping[str, str | None] | None = None,
    specs: list[Any] | None = None,
    stage: Callable[[str, int, int], None] | None = None,
) -> Evaluation:
    """Measure a partitioned z against x (:func:`open_release_datasets`): each measure exactly
    out of core, or on a sample of ``options.sample_rows`` records (the document says which,
    per measure, in ``out_of_core``: ``"exact"`` or ``"sample"``). ``stage`` hears the
    partitions' progress (:func:`ppdm.data.partitions.reporting`; default: whoever the caller's
    ``reporting`` block names)."""
    from ppdm import progress
    from ppdm.data.partitions import reporting
    from ppdm.experiments.document import evaluation_document
    from ppdm.experiments.evaluate_common import check_class, check_thresholds, load_rules
    from ppdm.experiments.evaluation import declared_in, resolve_measures, run_measure
    from ppdm.experiments.pairing import private_for_report
    from ppdm.metrics._dask import partition_lengths
    from ppdm.metrics.base import EvaluationContext
    from ppdm.metrics.judgement import check_scenarios, verdicts
    from ppdm.metrics.out_of_core import SampledResult, evaluate_measure

    ruled = check_scenarios(options.ruled_out)
    specs = specs if specs is not None else resolve_measures(options.measure_spec)
    x, z, t, sch = inputs.x, inputs.z, inputs.test, inputs.schema
    if options.measures is None:
        specs = declared_in(specs, sch)
    limits = check_thresholds(options.thresholds, [s.name for s in specs])
    src = dict(sources or {})
    check_class(specs, sch, options.named)
    rs = load_rules(options.rules, inputs.head, sch) if options.rules is not None else None
    opts = dict(options.measure_options)
    ctx = EvaluationContext(x=x, z=z, schema=sch, test=t, rules=rs, random_state=options.random_state,
                            options=dict(opts), paired=pairing.paired)
    sample_rows = options.sample_rows

    def run(spec: Any) -> Any:
        # the measure exactly out of core, or on the declared sample; skipped like in memory
        return run_measure(replace(spec, fn=lambda c: evaluate_measure(spec, c, sample_rows=sample_rows)), ctx)

    outcomes: dict[str, Any] = {}
    import contextlib

    heard = reporting(stage) if stage is not None else contextlib.nullcontext()
    with progress.steps(len(specs), "evaluating") as step, heard:
        for spec in specs:
            step(0, description=f"computing {spec.name}")
            outcomes[spec.name] = replace(run(spec), spec=spec)
            step()

    # a measure with an exact form may still attack a sample past some size (record linkage,
    # intruder matching): it then says so with its sample size
    def drew_sample(res: Any) -> bool:
        n, pop = getattr(res, "sample_size", None), getattr(res, "population", None)
        return isinstance(res, SampledResult) or bool(n and pop and n < pop)

    how = {name: ("sample" if drew_sample(o.result) else "exact") for name, o in outcomes.items() if not o.skipped}
    rows_x, rows_z = sum(partition_lengths(x)), sum(partition_lengths(z))
    ncols = len(x.columns)
    info = {"original": {"source": src.get("original"), "rows": rows_x, "columns": ncols, "partitions": x.npartitions},
            "anonymized": {"source": src.get("anonymized"), "rows": rows_z, "columns": ncols,
                           "partitions": z.npartitions},
            "test": None if t is None else {"source": src.get("test"), "rows": sum(partition_lengths(t)),
                                            "columns": ncols},
            "rules": str(options.rules) if options.rules is not None else None, "class_column": sch.class_column,
            "seed": options.random_state, "options": opts, "sample_rows": sample_rows, "pairing": pairing.mode}
    doc = evaluation_document(outcomes, provenance=provenance, inputs=info,
                              dataset=dataset_summary(x, sch, src.get("original"), rows_x), thresholds=limits,
                              private=private_for_report(pairing), ruled_out=ruled)
    for name, h in how.items():
        doc["measures"][name]["out_of_core"] = h
    return Evaluation(outcomes, verdicts(doc["measures"], ruled_out=ruled), pairing, int(rows_x), int(rows_z),
                      list(pairing.notes), doc, dict(provenance) if provenance is not None else None)


def sampled_measures(ev: Evaluation) -> list[str]:
    """The measures of a partitioned evaluation computed on a sample."""
    return [n for n, m in ev.document()["measures"].items() if m.get("out_of_core") == "sample"]


def repair_partitions(x: Any, z: Any, pair: Pairing, missing: str) -> tuple[Any, Any]:
    """x and z of a partitioned evaluation paired through the private log (see the module
    docstring): afterwards partition i of z holds, row for row, the releases of partition i of x.

    The log gives every row of z its position in x (for a partitioned release, x's rows as
    read, before the missing-value policy: ``"counted": "as read"``; for a release made in
    memory, after it, with its held-out records left out of x by position), and Dask moves
    z's rows to x's partitions by position (a shuffle of z, never a whole table in one place),
    so x may be read with any block size. A log of the older layout, each part shuffled
    within its own partition (``"partitions"``), puts each part back in its partition's order."""
    import numpy as np

    from ppdm.data.provenance import decode_positions
    from ppdm.experiments.pairing import kept_rows, positions
    from ppdm.metrics._dask import partition_lengths

    private = pair.private or {}
    if missing != "drop" and (private.get("input") or {}).get("rows_dropped"):
        raise PPDMError(f"the private log {str(pair.private_file)!r} pairs z with the records x had after leaving "
                        "out incomplete ones; read x the same way (--missing drop)")
    rec = private.get("pairing") or {}
    parts = rec.get("partitions")
    if isinstance(parts, list):
        if len(parts) != z.npartitions or len(parts) != x.npartitions:
            raise PPDMError(f"the private log pairs {len(parts)} partitions, but x has {x.npartitions} and z "
                            f"{z.npartitions}; read x with the block size the release was made with (--blocksize)")
        orders = [decode_positions(p.get("positions"), f"pairing of partition {i}") for i, p in enumerate(parts)]
        return x, z.map_partitions(_unshuffle_part, _array_parts(orders), str(pair.private_file), meta=z._meta,
                                   align_dataframes=False)
    # a partitioned release counts x's rows as read, before the missing-value policy, like x here
    as_read = rec.get("counted") == "as read"
    if missing == "drop" and (private.get("input") or {}).get("rows_dropped") and not as_read:
        raise PPDMError("a release made in memory from a table with incomplete records is evaluated in memory: "
                        "leave out --engine dask")
    lx = partition_lengths(x)
    n_x = int(sum(lx))
    kept_rows({"input": {**(private.get("input") or {}), "rows_kept": rec.get("rows_of_x")}} if as_read else private,
              n_x, pair.private_file)
    lz = partition_lengths(z)
    pos = positions(rec.get("positions"), "pairing", n_x, int(sum(lz)), pair.private_file)
    key = "__ppdm_position__"
    xo = np.concatenate([[0], np.cumsum(lx)]).astype(np.int64)
    zo = np.concatenate([[0], np.cumsum(lz)]).astype(np.int64)
    xpos = _array_parts([np.arange(xo[i], xo[i + 1]) for i in range(len(lx))])
    zpos = _array_parts([pos[zo[i]:zo[i + 1]] for i in range(len(lz))])
    x = x.map_partitions(_with_position, xpos, key, meta=x._meta.assign(**{key: np.int64(0)}), align_dataframes=False)
    hold = private.get("holdout") or {}
    if isinstance(hold, dict) and hold.get("positions"):
        held = positions(hold["positions"], "held-out positions", n_x, path=pair.private_file)
        x = x.map_partitions(_without_positions, held, key, meta=x._meta)
    z = z.map_partitions(_with_position, zpos, key, meta=z._meta.assign(**{key: np.int64(0)}), align_dataframes=False)
    # z's rows go to the partition of x that holds their original, sorted by position like x's
    divisions = tuple(int(v) for v in xo[:-1]) + (max(n_x - 1, 0),)
    z = z.set_index(key, divisions=divisions).reset_index(drop=True)
    x = x.drop(columns=key)
    z = z.map_partitions(lambda p: p.reset_index(drop=True), meta=z._meta)
    return x, z


def _array_parts(arrays: list[Any]) -> Any:
    """A Dask DataFrame with one column ``p`` and one partition per array: per-partition data
    that travels beside another table's partitions (``map_partitions(..., align_dataframes=False)``)."""
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    meta = pd.DataFrame({"p": np.array([], dtype=np.int64)})
    return dd.from_map(lambda a: pd.DataFrame({"p": np.asarray(a, dtype=np.int64)}), arrays, meta=meta,
                       enforce_metadata=False)


def _with_position(part: pd.DataFrame, positions: pd.DataFrame, key: str) -> pd.DataFrame:
    return part.assign(**{key: positions["p"].to_numpy()})


def _without_positions(part: pd.DataFrame, held: Any, key: str) -> pd.DataFrame:
    import numpy as np

    return part.loc[~np.isin(part[key].to_numpy(), held)]


def _unshuffle_part(part: pd.DataFrame, order: pd.DataFrame, source: str) -> pd.DataFrame:
    import numpy as np

    pos = order["p"].to_numpy()
    if len(pos) != len(part) or (len(pos) and (int(pos.max()) >= len(part) or len(np.unique(pos)) != len(pos))):
        raise PPDMError(f"a partition's pairing in the private log {source!r} does not fit z's partition "
                        f"({len(part)} rows); the private log is not z's")
    return part.iloc[np.argsort(pos, kind="stable")].reset_index(drop=True)


def dataset_summary(x: Any, sch: Schema, name: str | None, rows: int) -> dict[str, Any]:
    """Rows, columns, roles and class counts of a partitioned x, counted partition by partition."""
    from ppdm.data.partitions import read_partition, run_partitions

    info: dict[str, Any] = {"name": name, "rows": int(rows), "columns": int(len(x.columns)),
                            "numeric": list(sch.numeric), "categorical": list(sch.categorical),
                            "class_column": sch.class_column, "partitions": int(x.npartitions)}
    cls = sch.class_column
    if cls is not None:
        parts = run_partitions(lambda i: read_partition(x, i)[cls].value_counts(), x.npartitions, name="ppdm-classes")
        import pandas as pd

        counts = pd.concat(parts).groupby(level=0, sort=False).sum().sort_values(ascending=False, kind="stable")
        info["class_counts"] = {str(k): int(v) for k, v in counts.items()}
    return info


def refuse_missing_lazily(df: Any, sch: Schema, spec: str) -> None:
    """--missing error for a partitioned table: one pass counting missing cells per column."""
    from ppdm.data.partitions import read_partition, run_partitions

    cols = [c for c in sch.columns if c in df.columns]
    counts = run_partitions(lambda i: read_partition(df, i)[cols].isna().sum().to_dict(), df.npartitions,
                            name="ppdm-missing")
    for i, c in enumerate(counts):
        bad = [k for k, v in c.items() if v]
        if bad:
            raise SchemaError(f"column {bad[0]!r} of {spec!r} has a missing value in partition {i}; drop those rows "
                              "with --missing drop, or keep the missing cells where techniques and measures treat "
                              "them with --missing keep")


__all__ = ["CheckedRelease", "DatasetInputs", "TableReading", "dataset_summary", "measure_datasets",
           "open_release_datasets", "refuse_missing_lazily", "repair_partitions", "sampled_measures"]
