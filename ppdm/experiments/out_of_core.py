"""Releases of tables larger than memory: fit on a sample, transform partition by partition,
write a partitioned Parquet dataset atomically.

:func:`release_dataset` is :func:`ppdm.experiments.release.release` for a
:class:`~ppdm.data.partitions.Dataset` (what ``ppdm anonymize`` runs for a Parquet folder, a
glob of files or a big file). It makes four passes over the input, none of which holds
more than one partition per task in memory:

1. **scan**: every partition's number of rows, the decimals of its float columns and the
   moments (count, mean, spread, largest magnitude) of its numeric columns;
2. **sample**: a uniform random sample of ``fit_rows`` records (default
   :data:`FIT_ROWS`; every record when the table has fewer), drawn without replacement
   across partitions with the release's randomness. Roles are settled and identifiers
   screened on it, and the technique is fitted on it;
3. **release**: every partition is transformed with what was fitted, by a generator seeded
   from the release's seed and the partition's number (so the same seed gives the same
   files), rounded to the source decimals and checked against its original records; its
   release-check counts are returned. Each released row is then drawn an output part at
   random (another generator of the same seed and number), and the partition is staged,
   sorted by output part, in an Arrow file beside the output;
3b. **mix**: output part j gathers the rows every staged partition drew into it (slices of
   the memory-mapped files, so no task holds more than about one partition), shuffles them
   and writes one Parquet part into a temporary folder beside the output. A part of z thus
   holds records from every partition of x, not its input partition's records: which records
   of x share a file (a registry's region, a month) is not published. ``shuffle=False`` keeps
   each partition's records in its own part, in order. The pairing (which record of x each
   released row was made from) is returned;
4. **check**: the records unique on their quasi-identifiers in z are counted by Dask over
   the written parts (a hash per record, counted across partitions).

Then the public provenance is written, the temporary folder renamed into place and the
owner's private log written (input, release check and the pairing: row k of z, its parts
read in order, was made from row ``positions[k]`` of x as read, before the missing-value policy,
``"counted": "as read"``, with the number of rows of each part: :mod:`ppdm.data.provenance`); on any error all of it is removed and nothing is left behind.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.partitions import (
    Dataset,
    DatasetWriter,
    check_output_dataset,
    run_partitions,
    sample_counts,
    write_part,
)
from ppdm.data.provenance import (
    build_private,
    build_provenance,
    check_sidecars_free,
    decode_positions,
    encode_positions,
    file_sha256,
    private_path,
    private_text,
    provenance_path,
    provenance_text,
)
from ppdm.data.roles import resolve_schema
from ppdm.data.schema import MissingPolicy, Schema
from ppdm.data.types import decimals_of, merge_decimals, round_to_decimals, working_frame
from ppdm.errors import PPDMError
from ppdm.experiments.release import (
    GATE_SETTINGS,
    ROW_ORDER_KEPT,
    ROW_ORDER_SHUFFLED,
    SHUFFLE_STREAM,
    ReleaseOptions,
    ReleaseRecord,
    _owner_only,
    _screen_pass_through,
    gate_setup,
    judge_release,
    pairing_record,
    public_output_schema,
    replay_warnings,
    technique_record,
)
from ppdm.metrics.release_check import (
    CheckPart,
    GateOptions,
    GateThresholds,
    KeyCounts,
    check_columns,
    check_partition,
    column_kinds,
    column_moments,
    column_spread,
    dask_copies,
    merge_moments,
    qi_hashes,
    release_check_from_parts,
)

#: a partitioned release's pairing counts x's rows as read, before the missing-value policy
PAIRING_AS_READ = "as read"
#: records the technique is fitted on, by default
FIT_ROWS = 100_000

#: progress(stage, done, total): stage is "scan", "sample", "release" or "check"
StageProgress = Callable[[str, int, int], None]


@dataclass(kw_only=True)
class DatasetRelease(ReleaseRecord):
    """A partitioned release and how it was made (see :class:`ppdm.experiments.release.Release`)."""

    path: Path
    n_records: int
    n_partitions: int
    fit_rows: int
    written: list[Path] = field(default_factory=list)


def _stage(progress: StageProgress | None, stage: str) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    return lambda done, total: progress(stage, done, total)


# ------------------------------------------------------------------------- the passes
def _scan(i: int, ds: Dataset) -> dict[str, Any]:
    pdf = ds.partition(i)
    num = [c for c in pdf.columns if _numeric_like(pdf[c])]
    work = working_frame(pdf, num)
    return {
        "rows": len(pdf),
        # None: the column needs full precision in this partition
        "decimals": {c: decimals_of(pdf[c].to_numpy(dtype=float, na_value=np.nan))
                     for c in pdf.columns if pd.api.types.is_float_dtype(pdf[c])},
        "moments": {c: column_moments(work[c].to_numpy(dtype=float, na_value=np.nan)) for c in num},
    }


def _numeric_like(s: pd.Series) -> bool:
    from ppdm.data.types import is_date_dtype

    return is_date_dtype(s) or (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s))


def _sample_part(i: int, ds: Dataset, counts: np.ndarray, base: int) -> pd.DataFrame:
    pdf = ds.partition(i)
    k = int(counts[i])
    if k >= len(pdf):
        return pdf
    rows = np.sort(np.random.default_rng([base, i, 1]).choice(len(pdf), size=k, replace=False))
    return pdf.iloc[rows]


@dataclass
class _Job:
    """Everything a release task needs (sent to workers on a cluster)."""

    ds: Dataset
    tech: Any
    schema: Schema
    base: int
    missing: MissingPolicy
    ids: list[str]
    keep_ids: bool
    decimals: dict[str, int]
    columns: list[str]
    spreads: dict[str, tuple[float, float]]
    tmp: Path
    shuffle: bool = True
    thresholds: GateThresholds = field(default_factory=GateThresholds)
    #: where the released partitions wait, sorted by the output part each row goes to
    stage: Path | None = None
    #: the position in x (as read) of each partition's first row, once every partition is released
    first_row: np.ndarray | None = None


#: the stream of the output part each released row is drawn into (the release's streams are 1 and 2)
MIX_STREAM = 3
#: the column of a staged row that keeps its position in x's partition (as read)
_LOCAL = "__ppdm_local__"


def _stage_path(job: _Job, i: int) -> Path:
    return job.stage / f"stage.{i:05d}.arrow"  # type: ignore[operator]  # stage is set before any part is staged


def _release_part(i: int, job: _Job) -> tuple[CheckPart, int, int, np.ndarray, Any]:
    """Release x's partition ``i`` and stage it for mixing: every released row is drawn an
    output part at random (the input's own part with ``shuffle=False``), and the rows are
    written sorted by it, with their position in x's partition, to an Arrow file that the
    mixing pass slices. Returns the check's counts, the rows dropped, the rows read, how
    many rows go to each output part and the partition's privacy reports
    (:meth:`ppdm.anonymize.base.Technique.transform_partition_reported`)."""
    x = job.ds.partition(i).reset_index(drop=True)
    n_read = len(x)
    sch = job.schema
    x, dropped = sch.validate(x, missing=job.missing)
    local = np.asarray(x.index, dtype=np.int64)  # positions in the partition as read (the policy drops some)
    work = x.drop(columns=job.ids) if job.ids else x
    # the reports travel back with the counts: a worker's copy of the technique is not the caller's
    z, reports = job.tech.transform_partition_reported(work, i, job.base)
    z = round_to_decimals(z, job.decimals)
    if job.keep_ids and job.ids:
        z = z.copy()
        for c in job.ids:
            z[c] = x[c].to_numpy()
        z = z[list(x.columns)]
    # recoding releases some numeric columns as labels: z is typed by the technique's output schema
    zsch = _released_schema(job.tech, sch)
    part = check_partition(working_frame(x, sch.numeric), working_frame(z, zsch.numeric), zsch, job.columns,
                           job.spreads, thresholds=job.thresholds, decimals=job.decimals)
    n_out = job.ds.npartitions
    # each released row goes to an output part drawn at random: a part of z holds no partition of x
    dest = (np.random.default_rng([job.base, i, MIX_STREAM]).integers(0, n_out, len(z)) if job.shuffle
            else np.full(len(z), i, dtype=np.int64))
    order = np.argsort(dest, kind="stable")
    staged = z.iloc[order].reset_index(drop=True)
    staged[_LOCAL] = local[order]
    _write_arrow(staged, _stage_path(job, i))
    return part, dropped, n_read, np.bincount(dest, minlength=n_out), reports


def _write_arrow(df: pd.DataFrame, path: Path) -> None:
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _mix_part(j: int, job: _Job, cuts: np.ndarray) -> dict[str, Any]:
    """Output part ``j``: the rows every staged partition drew into it (``cuts[i, j]`` to
    ``cuts[i, j + 1]`` of staged partition ``i``, sliced from its memory-mapped Arrow file),
    shuffled, written as ``part.j.parquet``. Returns the position in x (as read) of each
    written row's original, encoded (:func:`ppdm.data.provenance.encode_positions`: a task
    returns no column of a table)."""
    import pyarrow as pa

    frames, sources = [], []
    empty = None
    for i in range(cuts.shape[0]):
        a, b = int(cuts[i, j]), int(cuts[i, j + 1])
        if b <= a and empty is not None:
            continue
        with pa.memory_map(str(_stage_path(job, i))) as src:
            table = pa.ipc.open_file(src).read_all()
            if b <= a:
                empty = table.slice(0, 0).to_pandas()
                continue
            frames.append(table.slice(a, b - a).to_pandas())
        sources.append(np.full(b - a, i, dtype=np.int64))
    z = pd.concat(frames, ignore_index=True) if frames else empty
    assert z is not None
    local = z.pop(_LOCAL).to_numpy(dtype=np.int64)
    src = np.concatenate(sources) if sources else np.arange(0, dtype=np.int64)
    # shuffled within the part too: its rows' order says nothing of where they came from
    perm = (np.random.default_rng([job.base, j, SHUFFLE_STREAM]).permutation(len(z)) if job.shuffle
            else np.arange(len(z)))
    write_part(z.iloc[perm].reset_index(drop=True), job.tmp / f"part.{j:05d}.parquet")
    return encode_positions(job.first_row[src[perm]] + local[perm])  # type: ignore[index]  # first_row is set before parts are written


def _working_x(ds: Dataset, sch: Schema, missing: MissingPolicy, columns: list[str], meta: pd.DataFrame) -> Any:
    """x's partitions as the release check saw them (missing-value policy, working form), lazily."""

    def part(pdf: pd.DataFrame) -> pd.DataFrame:
        if len(pdf):
            pdf, _ = sch.validate(pdf, missing=missing)
        return working_frame(pdf, sch.numeric)[columns]

    return ds.data.map_partitions(part, meta=meta[columns], enforce_metadata=False)


def _working_z(tmp: Path, sch: Schema, columns: list[str], meta: pd.DataFrame) -> Any:
    """The written parts of the release, in working form, lazily."""
    import dask.dataframe as dd

    z = dd.read_parquet(str(tmp), columns=list(columns))
    return z.map_partitions(lambda p: working_frame(p, sch.numeric)[columns], meta=meta[columns],
                            enforce_metadata=False)


def _released_schema(tech: Any, sch: Schema) -> Schema:
    """The schema of the release (the technique's output schema with the identifiers' roles)."""
    if not hasattr(tech, "output_schema"):
        return sch
    return replace(tech.output_schema(), identifiers=list(sch.identifiers))


def _unique_in_z(tmp: Path, qi: list[str], n_parts: int) -> int:
    """Records of the written release unique on their quasi-identifiers (Dask counts hashes)."""
    if not qi:
        return 0
    import dask.dataframe as dd

    z = dd.read_parquet(str(tmp), columns=list(qi))
    h = z.map_partitions(lambda p: pd.Series(qi_hashes(p, qi), dtype="uint64"), meta=("h", "uint64"))
    counts = h.value_counts(split_out=max(1, n_parts // 8))
    return int((counts == 1).sum().compute())


def dataset_sha256(files: list[Path]) -> str:
    """SHA-256 over the files of a dataset: of each file's name and SHA-256, in name order."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda p: str(p)):
        h.update(f"{f.name}\0{file_sha256(f)}\n".encode())
    return h.hexdigest()


# ------------------------------------------------------------------------------ release
def release_dataset(
    ds: Dataset,
    technique: Any,
    out: str | Path,
    options: ReleaseOptions | None = None,
    *,
    schema: Schema | None = None,
    gate_options: GateOptions | None = None,
    missing: MissingPolicy = "error",
    fit_rows: int = FIT_ROWS,
    progress: StageProgress | None = None,
    **settings: Any,
) -> DatasetRelease:
    """Anonymize the partitioned table ``ds`` with ``technique`` into the Parquet dataset folder
    ``out`` (and ``<out>.provenance.json``, public, and ``<out>.private.json``, the owner's),
    as the module docstring describes.

    ``options`` (:class:`~ppdm.experiments.release.ReleaseOptions`) and ``gate_options`` are
    those of :func:`ppdm.experiments.release.release`, and so are the ``settings`` by name
    (``keep_identifiers=True``, ``allow_verbatim=True``, ...); no hold-out. ``shuffle=False``
    keeps each partition's rows in the input's order; ``input_info`` adds keys to the private
    log's ``input`` (the CLI's ``missing`` policy).

    ``fit_rows`` is the size of the sample the technique is fitted on; ``decimals`` overrides
    the source decimals per column; ``missing`` is applied to every partition ("drop" leaves
    out a partition's incomplete records). The gate and its ``allow_...`` arguments are those
    of :func:`ppdm.experiments.release.release` (x's records counted by key across partitions,
    pass-through columns screened on the fitting sample); a refused release raises
    :class:`~ppdm.experiments.release.ReleaseRefused` and the output does not appear.
    """
    gate_settings = {k: settings.pop(k) for k in GATE_SETTINGS if k in settings}
    ropts = ReleaseOptions.of(options, **settings)
    if ropts.holdout is not None:
        raise PPDMError("a partitioned release holds no records out; hold records out with --control on "
                        "ppdm evaluate instead")
    opts = gate_setup(gate_options, gate_settings.pop("gate_thresholds", None), **gate_settings)
    roles, keep_identifiers, detect_identifiers = ropts.roles, ropts.keep_identifiers, ropts.detect_identifiers
    decimals, shuffle, input_info = ropts.decimals, ropts.shuffle, ropts.input_info
    if isinstance(fit_rows, bool) or not isinstance(fit_rows, (int, np.integer)) or fit_rows < 2:
        raise PPDMError(f"fit_rows (the size of the fitting sample) must be a whole number ≥ 2, got {fit_rows!r}")
    if not technique._keeps_rows():
        # its record count is itself protected: one noisy count per partition would spend the budget again
        raise PPDMError(f"{type(technique).__name__} with these parameters releases its own number of records, "
                        "which a release partition by partition cannot do; for DPCube use neighbouring='replace' "
                        "(the table size public), or release an in-memory table")
    out = check_output_dataset(out, inputs=[str(f) for f in ds.files])
    check_sidecars_free(out)
    prov_path = provenance_path(out)
    priv_path = private_path(out)
    for side in (prov_path, priv_path):
        if side.exists():
            raise PPDMError(f"output {str(side)!r} exists; remove it or choose another name")
    n_parts = ds.npartitions
    seeded = technique.random_state is not None
    base = int(np.random.SeedSequence(None if not seeded else int(technique.random_state)).entropy)  # type: ignore[arg-type]  # an int when set: the technique checked it

    # 1. scan
    scans = run_partitions(_scan, n_parts, args=(ds,), progress=_stage(progress, "scan"), name="ppdm-scan")
    lengths = [s["rows"] for s in scans]
    n_rows = int(sum(lengths))
    if n_rows == 0:
        raise PPDMError(f"{ds.source!r} has no data rows")

    # 2. sample, roles, fit
    k = min(int(fit_rows), n_rows)
    counts = sample_counts(lengths, k, np.random.default_rng([base, 0, 0]))
    parts = run_partitions(_sample_part, n_parts, args=(ds, counts, base), progress=_stage(progress, "sample"),
                           name="ppdm-sample")
    sample = pd.concat(parts, ignore_index=True)
    sample.attrs["date_formats"] = dict(ds.date_formats)
    sch = resolve_schema(sample, schema=schema, class_column=technique.class_column, roles=roles,
                         detect=detect_identifiers)
    sample, _ = sch.validate(sample, missing=missing)
    ids = [c for c in sch.identifiers if c in sample.columns]
    thresholds = opts.thresholds
    passing = _screen_pass_through(sample, sch, opts)
    tech = type(technique)(**technique.get_params(deep=False))
    tech.set_params(schema=replace(sch, identifiers=[]), class_column=sch.class_column)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tech.fit(sample.drop(columns=ids))
    lines = replay_warnings(caught)

    # 3. release, partition by partition
    dec = {c: d for c, d in merge_decimals(s["decimals"] for s in scans).items()}
    dec = {**dec, **{c: int(d) for c, d in (decimals or {}).items()}}
    zsch = _released_schema(tech, sch)
    dec = {c: d for c, d in dec.items() if c in zsch.numeric and c not in zsch.dates}
    moments = {c: merge_moments([s["moments"][c] for s in scans if c in s["moments"]])
               for c in scans[0]["moments"]}
    spreads = {c: column_spread(m) for c, m in moments.items()}
    columns = [c for c in ds.columns if keep_identifiers or c not in ids]
    import shutil
    import tempfile

    from ppdm.data.atomic import hold_temporary, release_temporary

    with DatasetWriter(out) as writer:
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".stage", dir=out.parent))
        hold_temporary(stage)
        try:
            job = _Job(ds, tech, sch, base, missing, ids, keep_identifiers, dec, columns, spreads, writer.tmp,
                       shuffle, thresholds, stage)
            results = run_partitions(_release_part, n_parts, args=(job,), progress=_stage(progress, "release"),
                                     name="ppdm-release")
            # mixing: output part j gathers the rows every partition drew into it
            cuts = np.zeros((n_parts, n_parts + 1), dtype=np.int64)
            for i, r in enumerate(results):
                cuts[i, 1:] = np.cumsum(r[3])
            job = replace(job, first_row=np.concatenate([[0], np.cumsum([r[2] for r in results])]).astype(np.int64))
            mixed = run_partitions(_mix_part, n_parts, args=(job, cuts), progress=_stage(progress, "mix"),
                                   name="ppdm-mix")
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            release_temporary(stage)
        checks = [r[0] for r in results]
        # the privacy record of the whole release: every partition's counts, totalled
        tech.merge_partition_reports([r[4] for r in results])
        dropped = int(sum(r[1] for r in results))
        # the pairing: row k of z (its parts read in order) was made from row positions[k] of x as read
        positions = (np.concatenate([decode_positions(m, f"pairing of part {j}") for j, m in enumerate(mixed)])
                     if mixed else np.arange(0, dtype=np.int64))
        qi = check_columns(sch, columns)[0]
        if progress is not None:
            progress("check", 0, 1)
        unique = _unique_in_z(writer.tmp, qi, n_parts)
        if progress is not None:
            progress("check", 1, 1)
        head = working_frame(sample.head(0), sch.numeric)
        kinds = column_kinds(zsch, head, head, columns)
        xw = _working_x(ds, sch, missing, columns, head)
        zw = _working_z(writer.tmp, zsch, columns, head)
        cands = np.unique(np.concatenate([c.verbatim_keys for c in checks])) if checks else None
        near = np.unique(np.concatenate([c.near_keys for c in checks])) if checks else None
        check = release_check_from_parts(checks, zsch, columns, unique, keys=KeyCounts(xw, kinds),
                                         copies=dask_copies(xw, zw, columns, kinds, cands, near),
                                         thresholds=thresholds)
        # no strength search here: each try would be a full pass over the partitioned table
        findings = passing + judge_release(check, opts, technique_record(tech), sch,
                                           privacy=getattr(tech, "privacy_report_", None))
        info = {"source": ds.source, "sha256": dataset_sha256(ds.files), "rows": n_rows, "columns": len(ds.columns),
                "missing": missing, "rows_dropped": dropped, "rows_kept": n_rows - dropped,
                "rows_used": n_rows - dropped, "files": len(ds.files), "partitions": n_parts,
                "blocksize": ds.blocksize, "fit_rows": k, **(input_info or {})}
        record = build_provenance(
            technique=technique_record(tech), schema=sch.to_dict(),
            removed_identifiers=[] if keep_identifiers else ids,
            privacy=getattr(tech, "privacy_report_", None), kept_identifiers=ids if keep_identifiers else [],
            output={"row_order": ROW_ORDER_SHUFFLED if shuffle else ROW_ORDER_KEPT, "decimals": dec,
                    "date_formats": {c: f for c, f in zsch.dates.items() if c in columns},
                    "format": "parquet dataset", "partitions": n_parts,
                    **({"schema": public_output_schema(zsch, sch)} if zsch.to_dict() != sch.to_dict() else {})},
        )
        pairing = {**pairing_record(positions, n_rows), "counted": PAIRING_AS_READ,
                   "parts": [int(m["count"]) for m in mixed]}
        private = build_private(input_info=info, release_check=check, pairing=pairing,
                                technique=getattr(tech, "private_report_", None), warnings=lines, seeded=seeded,
                                gate={"thresholds": thresholds, "findings": findings},
                                **({"output_schema": zsch.to_dict()} if zsch.to_dict() != sch.to_dict() else {}))
        written = _commit(writer, prov_path, record, tech, out, priv_path, private)
    return DatasetRelease(path=out, technique=tech, schema=sch, check=check,
                          removed_identifiers=[] if keep_identifiers else ids,
                          kept_identifiers=ids if keep_identifiers else [], seeded=seeded,
                          n_records=n_rows - dropped, n_partitions=n_parts, fit_rows=k, warnings=lines,
                          provenance=record, decimals=dec, written=written, private=private, findings=findings)


def _commit(writer: DatasetWriter, prov_path: Path, record: dict[str, Any], tech: Any, out: Path,
            priv_path: Path, private: dict[str, Any]) -> list[Path]:
    """Provenance, folder, private log and the technique's sidecars, all or nothing."""
    from ppdm.data.io import atomic_path
    from ppdm.data.partitions import dataset_files

    written: list[Path] = []
    try:
        with atomic_path(prov_path) as tmp_prov:
            tmp_prov.write_text(provenance_text(record), encoding="utf-8")
            written.append(writer.commit())
        written.append(prov_path)
        private["release"] = out.name
        private["release_sha256"] = dataset_sha256(dataset_files(str(out)))
        with atomic_path(priv_path) as tmp_priv:
            tmp_priv.write_text(private_text(private), encoding="utf-8")
            _owner_only(tmp_priv)
        written.append(priv_path)
        extra = getattr(tech, "write_sidecars", None)
        if callable(extra):
            written.extend(Path(p) for p in (extra(out) or []))
    except BaseException:
        import shutil

        for p in written:
            if Path(p).is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                Path(p).unlink(missing_ok=True)
        raise
    return written
