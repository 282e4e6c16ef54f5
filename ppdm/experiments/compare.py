"""Compare techniques and parameter sweeps by cross-validation.

The experimental protocol is the one papers 000 (§7) and 004 (§7) use: split the
table into k folds; for every fold the other k−1 folds form the training table x
and the held-out fold is the test table t; every technique anonymizes x into z
(``repeats`` times, with different seeds) and every measure compares x with z,
prediction measures training on z and testing on t. An ``original`` baseline
(z = x) gives prediction measures their reference value.

The result is one tidy long table (one row per technique × fold × repeat ×
measure) with :meth:`ComparisonResult.summary` (mean, standard deviation and a
confidence interval per technique and measure) and :func:`correlation_matrix`
(paper 000 §7.3 / §8.3, Table 6: the correlation of every pair of measures).

Seeds come from one :class:`numpy.random.SeedSequence` built from
``random_state``: one child seeds the fold split, one child per fold seeds the
measures of that fold (so Ψx and every measure's learner are the same for all
techniques of a fold), and one grandchild per fold and repeat seeds the
techniques. Every technique of a given fold and repeat gets the same seed
(common random numbers), which makes the comparison between techniques a paired
one and keeps a technique's results unchanged when other techniques are added
to or removed from the list.

The technique specifications (:mod:`ppdm.experiments._compare_specs`) and the tasks
(:mod:`ppdm.experiments._compare_tasks`) live in private modules; every name of theirs is
importable from here. This module stays above 600 lines because :class:`ComparisonResult` and the
tables read from it (correlations, best releases) belong together: apart, they would import each
other (``tests/test_layers.py`` refuses the cycle).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.io import atomic_write_text, read_table, write_table
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments._compare_specs import (  # noqa: F401  (re-exported: the public path stays this module)
    _COMMON_ARGS,
    _KEY_START,
    NOT_APPLICABLE_NUMBERS,
    NUMERIC_LOSS,
    ORIGINAL,
    RESULT_COLUMNS,
    ProgressFn,
    TechniqueSpec,
    _plain,
    _split_top,
    grid,
    measure_header,
    measure_unit,
    not_applicable,
    params_to_json,
    parse_technique,
    sweep,
)
from ppdm.experiments._compare_tasks import (  # noqa: F401  (re-exported: the public path stays this module)
    _resolve_measure_list,
    _resolve_specs,
    _run_task,
    _same_table,
    _seed,
    _Task,
    _TaskOutput,
    _validate_spec,
    dataset_summary,
    skip_notes,
)
from ppdm.experiments.evaluation import (
    check_measure_options,
    load_all_measures,
    without_identifiers,
)
from ppdm.metrics.base import MEASURES, MeasureSpec
from ppdm.utils import loads_json


# ------------------------------------------------------------------------- result
@dataclass
class ComparisonResult:
    """Outcome of :func:`compare`.

    ``data`` is the tidy long table with columns ``technique, label, params, fold,
    repeat, measure, value``; ``meta`` records the protocol (folds, repeats, seed,
    splitter), the dataset summary, the techniques in order and the measures.
    """

    data: pd.DataFrame
    meta: dict[str, Any]

    # ---------------------------------------------------------------- views
    @property
    def labels(self) -> list[str]:
        """Row labels in comparison order (the baseline first)."""
        return [t["label"] for t in self.meta["techniques"]]

    @property
    def measures(self) -> list[str]:
        return list(self.meta["measures"])

    def summary(self, confidence: float = 0.95) -> pd.DataFrame:
        """Mean, standard deviation (ddof=1) and a Student-t confidence interval of the mean
        per technique × measure, over folds and repeats.

        Folds share training records, so the interval is the usual optimistic one
        reported in cross-validation studies; read it as a guide, not a test.
        """
        from scipy import stats

        if not 0 < confidence < 1:
            raise ParameterError(f"confidence must lie in (0, 1), got {confidence!r}")
        d = self.data
        rows = []
        for t in self.meta["techniques"]:
            sub_t = d[d["label"] == t["label"]]
            for m in self.measures:
                v = sub_t.loc[sub_t["measure"] == m, "value"].to_numpy(dtype=float)
                v = v[np.isfinite(v)]
                n = int(v.size)
                mean = float(v.mean()) if n else math.nan
                std = float(v.std(ddof=1)) if n > 1 else math.nan
                if n > 1:
                    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / math.sqrt(n)
                    lo, hi = mean - half, mean + half
                else:
                    lo = hi = math.nan
                rows.append({"technique": t["technique"], "label": t["label"], "params": t["params"],
                             "measure": m, "n": n, "mean": mean, "std": std, "ci_low": lo, "ci_high": hi})
        return pd.DataFrame(rows, columns=["technique", "label", "params", "measure", "n", "mean", "std",
                                           "ci_low", "ci_high"])

    def mean_table(self) -> pd.DataFrame:
        """Means as a technique (rows) × measure (columns) table."""
        s = self.summary()
        t = s.pivot(index="label", columns="measure", values="mean")
        return t.loc[self.labels, self.measures]

    # ---------------------------------------------------------------- output
    def to_csv(self, path: str | Path) -> Path:
        """Write the long table as CSV (atomically)."""
        return write_table(self.data, path)

    def to_json(self, path: str | Path | None = None) -> str:
        """The protocol and every row as JSON (NaN → null); written atomically when ``path`` is given."""
        records = [
            {k: (None if isinstance(v, float) and not math.isfinite(v) else _plain(v)) for k, v in r.items()}
            for r in self.data.to_dict(orient="records")
        ]
        text = json.dumps({"meta": self.meta, "results": records}, indent=2, sort_keys=False) + "\n"
        if path is not None:
            atomic_write_text(path, text)
        return text

    def save(self, out_dir: str | Path, *, extra: Mapping[str, str] | None = None) -> Path:
        """Write ``results.csv``, ``summary.csv``, ``correlations.csv`` and ``meta.json`` into
        ``out_dir`` (plus ``extra`` text files by name), all or nothing.

        A new folder is assembled under a temporary name and renamed into place; into an
        existing folder each file is written to a temporary folder first and moved in
        only once every file is complete.
        """
        out = Path(out_dir)
        parent = out.parent if str(out.parent) else Path(".")
        if not parent.exists():
            raise PPDMError(f"output folder {str(parent)!r} does not exist")
        if out.exists() and not out.is_dir():
            raise PPDMError(f"{str(out)!r} exists and is not a folder")
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
        try:
            os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the result is an ordinary folder
            self.to_csv(tmp / "results.csv")
            write_table(self.summary(), tmp / "summary.csv")
            corr = correlation_matrix(self)
            atomic_write_text(tmp / "correlations.csv", corr.to_csv(index_label="measure"))
            atomic_write_text(tmp / "meta.json", json.dumps(self.meta, indent=2) + "\n")
            for name, text in (extra or {}).items():
                atomic_write_text(tmp / name, text)
            if not out.exists():
                os.rename(tmp, out)
            else:
                for f in sorted(tmp.iterdir()):
                    os.replace(f, out / f.name)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return out

    @classmethod
    def load(cls, results_dir: str | Path) -> ComparisonResult:
        """Read a folder written by :meth:`save` (``results.csv`` + ``meta.json``)."""
        d = Path(results_dir)
        if not d.is_dir():
            raise PPDMError(f"results folder {str(d)!r} does not exist")
        meta_p, res_p = d / "meta.json", d / "results.csv"
        for p in (meta_p, res_p):
            if not p.exists():
                raise PPDMError(f"{str(d)!r} is not a comparison results folder: {p.name} is missing")
        meta = loads_json(meta_p.read_text(), repr(str(meta_p)))
        text_cols = {"technique": str, "label": str, "params": str, "measure": str}
        data = read_table(res_p, keep_default_na=False, na_values=[""], dtype=text_cols)
        missing = [c for c in RESULT_COLUMNS if c not in data.columns]
        if missing:
            raise PPDMError(f"{str(res_p)!r} lacks column(s) {', '.join(missing)}")
        data = data[RESULT_COLUMNS].astype({"technique": str, "label": str, "params": str, "measure": str})
        data["value"] = data["value"].astype(float)
        for key in ("techniques", "measures"):
            if key not in meta:
                raise PPDMError(f"{str(meta_p)!r} lacks the {key!r} entry")
        return cls(data, meta)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------ correlations
def _measure_frame(
    result: ComparisonResult, *, difference: bool, include_original: bool, techniques: Sequence[str] | None
) -> pd.DataFrame:
    d = result.data
    wide = d.pivot_table(index=["label", "fold", "repeat"], columns="measure", values="value",
                         aggfunc="first", dropna=False, sort=False)
    wide = wide[[m for m in result.measures if m in wide.columns]]
    if difference:
        base = d[d["technique"] == ORIGINAL]
        if base.empty:
            raise PPDMError("difference=True needs the 'original' baseline rows in the result")
        ref = base.pivot_table(index="fold", columns="measure", values="value", aggfunc="mean")
        folds = wide.index.get_level_values("fold")
        wide = wide - ref.reindex(index=folds, columns=wide.columns).to_numpy()
    labels = wide.index.get_level_values("label")
    keep = np.ones(len(wide), dtype=bool)
    if not include_original:
        orig = {t["label"] for t in result.meta["techniques"] if t["technique"] == ORIGINAL}
        keep &= ~labels.isin(list(orig))
    if techniques is not None:
        tech_of = {t["label"]: t["technique"] for t in result.meta["techniques"]}
        chosen = set(techniques)
        keep &= np.array([lab in chosen or tech_of.get(lab) in chosen for lab in labels], dtype=bool)
    return wide.loc[keep]


def _correlation_frame(
    result: ComparisonResult,
    method: str,
    *,
    difference: bool,
    include_original: bool,
    techniques: Sequence[str] | None,
) -> pd.DataFrame:
    """The float measure frame that :func:`correlation_matrix` and :func:`correlation_pvalues`
    correlate, after checking ``method``."""
    if method not in ("pearson", "spearman"):
        raise ParameterError(f"method must be 'pearson' or 'spearman', got {method!r}")
    return _measure_frame(result, difference=difference, include_original=include_original,
                          techniques=techniques).astype(float)


def correlation_matrix(
    result: ComparisonResult,
    method: str = "pearson",
    *,
    difference: bool = False,
    include_original: bool = False,
    techniques: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Correlation of every pair of measures across technique × fold × repeat rows.

    Paper 000 §8.3 (Table 6) reports Pearson's r between its measures; ``method`` may
    be ``"pearson"`` or ``"spearman"``. ``difference=True`` first subtracts, fold by
    fold, the value each measure gives the original table (paper 000 §7.3: results are
    taken as the change from zero noise). The baseline rows themselves are left out
    unless ``include_original``; ``techniques`` keeps only the named techniques or
    labels (the paper correlates each noise type separately). Pairs are computed on
    rows where both measures are defined; a constant measure has no correlation (NaN).
    """
    wide = _correlation_frame(result, method, difference=difference, include_original=include_original,
                              techniques=techniques)
    out = wide.corr(method=method)  # type: ignore[arg-type]  # pandas-stubs wants a literal; pandas refuses an unknown name itself
    out.index.name = None
    out.columns.name = None
    return out


def correlation_pvalues(
    result: ComparisonResult,
    method: str = "pearson",
    *,
    difference: bool = False,
    include_original: bool = False,
    techniques: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Two-sided p values of :func:`correlation_matrix` (the bracketed numbers of paper 000 Table 6)."""
    from scipy import stats

    wide = _correlation_frame(result, method, difference=difference, include_original=include_original,
                              techniques=techniques)
    cols = list(wide.columns)
    out = pd.DataFrame(np.nan, index=cols, columns=cols)
    test = stats.pearsonr if method == "pearson" else stats.spearmanr
    for i, a in enumerate(cols):
        for b in cols[i:]:
            ok = wide[a].notna() & wide[b].notna()
            va, vb = wide.loc[ok, a].to_numpy(), wide.loc[ok, b].to_numpy()
            if len(va) < 3 or np.ptp(va) == 0 or np.ptp(vb) == 0:
                continue
            p = 0.0 if a == b else float(test(va, vb)[1])
            out.loc[a, b] = out.loc[b, a] = p
    return out


# ------------------------------------------------------------------- best release
def measure_info(result: ComparisonResult, name: str) -> dict[str, Any]:
    """Kind, direction, range, threshold, description and meaning of measure ``name``: as
    stored in the result, completed from the registry for results saved by older versions."""
    stored = dict((result.meta.get("measure_info") or {}).get(name) or {})
    spec = MEASURES.get(name) or load_all_measures().get(name)
    known = spec.info() if spec is not None else {}
    out: dict[str, Any] = {"kind": None, "direction": None, "range": [None, None], "threshold": None,
                           "description": "", "meaning": ""}
    for key in out:
        if stored.get(key) not in (None, "", [None, None]):
            out[key] = stored[key]
        elif known.get(key) not in (None, "", [None, None]):
            out[key] = known[key]
    return out


@dataclass(frozen=True)
class BestMark:
    """The verdict on one measure of a comparison: the best release, or why none is marked."""

    measure: str
    label: str | None
    note: str
    candidates: tuple[str, ...] = ()


def _fold_means(result: ComparisonResult, label: str, measure: str) -> pd.Series:
    d = result.data
    sub = d[(d["label"] == label) & (d["measure"] == measure)]
    return sub.groupby("fold")["value"].mean()


def best_releases(result: ComparisonResult, confidence: float = 0.95) -> dict[str, BestMark]:
    """Per measure, the release that is best beyond the noise, if any.

    Only releases that change the data compete (the ``original`` baseline and any
    technique whose release equalled x in every run, e.g. noise of level 0, are left out:
    they protect nobody). The candidate with the best mean (in the measure's direction) is
    marked only when, against every other candidate, the paired difference of the fold
    means (techniques of a fold share their training table and seeds) has a Student-t
    confidence interval that excludes 0. Folds share training records, so the interval is
    the optimistic cross-validation one: a guide, not a test.
    """
    from scipy import stats

    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must lie in (0, 1), got {confidence!r}")
    techniques = result.meta["techniques"]
    cands = [t["label"] for t in techniques if t["technique"] != ORIGINAL and t.get("changes_data", True)]
    out: dict[str, BestMark] = {}
    for m in result.measures:
        direction = measure_info(result, m)["direction"]
        if direction not in ("higher", "lower"):
            out[m] = BestMark(m, None, "no direction: neither higher nor lower is better", tuple(cands))
            continue
        means = {lab: _fold_means(result, lab, m) for lab in cands}
        finite = {lab: s[np.isfinite(s)] for lab, s in means.items()}
        finite = {lab: s for lab, s in finite.items() if len(s)}
        if len(finite) < 2:
            out[m] = BestMark(m, None, "fewer than two releases that change the data have a value", tuple(finite))
            continue
        overall = {lab: float(s.mean()) for lab, s in finite.items()}
        best = (max if direction == "higher" else min)(overall, key=lambda lab: overall[lab])
        decisive = True
        for other in finite:
            if other == best:
                continue
            both = pd.concat([finite[best], finite[other]], axis=1, join="inner").to_numpy(dtype=float)
            diff = both[:, 0] - both[:, 1]
            n = len(diff)
            if n < 2:
                decisive = False
                break
            sd = float(diff.std(ddof=1))
            half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
            lo, hi = float(diff.mean()) - half, float(diff.mean()) + half
            if lo <= 0 <= hi:
                decisive = False
                break
        if decisive:
            out[m] = BestMark(m, best, f"better than every other release beyond the {confidence:.0%} interval",
                              tuple(finite))
        else:
            out[m] = BestMark(m, None, f"no release is better than all others beyond the {confidence:.0%} "
                              "interval of the paired fold differences", tuple(finite))
    return out


def compare(
    x: pd.DataFrame,
    schema: Schema | None,
    techniques: Sequence[TechniqueSpec | str],
    measures: str | Sequence[str | MeasureSpec] | None = None,
    *,
    cv: int = 10,
    repeats: int = 1,
    random_state: int = 0,
    n_jobs: int | None = 1,
    progress: ProgressFn | None = None,
    baseline: bool = True,
    measure_options: Mapping[str, Any] | None = None,
    dataset_name: str | None = None,
    missing: str = "error",
) -> ComparisonResult:
    """Cross-validated comparison of techniques (and parameter sweeps) on every measure.

    Parameters
    ----------
    x:
        The whole table (class column included).
    schema:
        Column roles; inferred from dtypes when ``None``.
    techniques:
        :class:`TechniqueSpec` items (see :func:`sweep`, :func:`grid`) or ``"NAME:key=value"`` text.
    measures:
        Measure names, :class:`~ppdm.metrics.base.MeasureSpec` objects, a comma list, ``"all"``
        or ``None`` (the default set). With ``"all"``/``None`` and no class column, measures
        that need a class are left out; naming one explicitly is an error.
    cv:
        Number of folds: stratified on the class when there is one, plain k-fold otherwise.
    repeats:
        Anonymizations per fold and technique, each with its own seed (paper 000 §7 uses 10).
    random_state:
        Seed of the whole run: the same seed gives a byte-identical result.
    n_jobs:
        Parallel workers (joblib); 1 runs in-process. Results do not depend on it.
    progress:
        ``progress(done, total, description)`` called after each fold × technique × repeat.
    baseline:
        Add the ``original`` row (z = x) once per fold, repeat 0.
    measure_options:
        Passed to every measure as ``ctx.options``; an option no measure of ``measures`` reads is
        refused (:func:`~ppdm.experiments.evaluation.check_measure_options`).
    dataset_name:
        The table's name in the result's dataset summary.
    missing:
        Incomplete records: ``"error"`` refuses them, ``"drop"`` leaves them out before the
        folds are drawn, ``"keep"`` keeps the empty cells for the techniques and measures
        to treat as ``docs/missing_values.md`` says (as ``ppdm evaluate --missing keep``).

    The table is taken as read (:func:`ppdm.data.io.read_table`: dates as dates, codes as
    text): techniques anonymize it so, and measures compute on its working form, exactly
    as in ``ppdm evaluate`` (:func:`ppdm.experiments.evaluation.measurement_context`).
    Identifier columns of the schema are left out before anything runs: no technique sees
    them and no measure compares them.

    Raises
    ------
    PPDMError
        Unknown technique or measure, impossible parameters (checked before any work), or a
        technique/measure failing on a fold: the message names the technique and its parameters.
    """
    from sklearn.model_selection import KFold, StratifiedKFold

    if not isinstance(x, pd.DataFrame):
        raise PPDMError(f"compare expects a pandas DataFrame, got {type(x).__name__}")
    schema = Schema.infer(x) if schema is None else schema
    if isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2:
        raise ParameterError(f"cv must be an integer of at least 2, got {cv!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ParameterError(f"repeats must be a positive integer, got {repeats!r}")
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise ParameterError(f"random_state must be a non-negative integer, got {random_state!r}")
    specs = _resolve_specs(techniques)
    mlist = _resolve_measure_list(measures, schema)
    check_measure_options(mlist, measure_options or {})
    from ppdm.metrics._common import pick_options

    il1s_form = pick_options(dict(measure_options or {}), "il1s", ["form"]).get("form")
    if any(m.name == "il1s" for m in mlist) and il1s_form is None:
        # compared per attribute: a setting's IL1s in sd units, not a sum over thousands of records
        measure_options = {**dict(measure_options or {}), "il1s.form": "mean"}
        il1s_form = "mean"
    if missing not in ("error", "drop", "keep"):
        raise ParameterError(f"missing must be 'error', 'drop' or 'keep', got {missing!r}")
    x, schema, identifiers = without_identifiers(x, schema)
    x, _ = schema.validate(x, missing=missing, min_classes=2 if schema.class_column else 0)  # type: ignore[arg-type]  # missing is one of the three (checked above)
    x = x.reset_index(drop=True)
    validated = [_validate_spec(s, schema) for s in specs]
    classes = [c for c, _ in validated]
    effective = [p for _, p in validated]
    if len(x) < cv:
        raise ParameterError(f"cv={cv} folds need at least {cv} rows; the table has {len(x)}")

    root = np.random.SeedSequence(int(random_state))
    split_ss, work_ss = root.spawn(2)
    notes: list[str] = []
    if schema.class_column is not None:
        y = x[schema.class_column].astype(str).to_numpy()
        smallest = int(pd.Series(y).value_counts().min())
        if smallest < cv:
            notes.append(f"the rarest class has {smallest} record(s), fewer than the {cv} folds; "
                         "some folds lack it")
        splitter: Any = StratifiedKFold(n_splits=cv, shuffle=True, random_state=_seed(split_ss))
    else:
        y = None
        splitter = KFold(n_splits=cv, shuffle=True, random_state=_seed(split_ss))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the rare-class warning is recorded in notes
        try:
            splits = list(splitter.split(np.zeros(len(x)), y))
        except ValueError as e:
            raise PPDMError(f"cannot split the table into {cv} folds: {e}") from None

    fold_ss = work_ss.spawn(cv)
    measure_seeds, tech_seeds = [], []
    for f in range(cv):
        m_ss, t_ss = fold_ss[f].spawn(2)
        measure_seeds.append(_seed(m_ss))
        tech_seeds.append([_seed(s) for s in t_ss.spawn(repeats)])

    base_spec = TechniqueSpec(ORIGINAL, {}, ORIGINAL)
    base_tasks = [_Task(0, base_spec, None, f, 0, 0, measure_seeds[f]) for f in range(cv)] if baseline else []
    tech_tasks = [
        _Task(i + 1, spec, cls, f, r, tech_seeds[f][r], measure_seeds[f])
        for f in range(cv)
        for i, (spec, cls) in enumerate(zip(specs, classes, strict=True))
        for r in range(repeats)
    ]
    total = len(base_tasks) + len(tech_tasks)
    folds = [(x.iloc[tr].reset_index(drop=True), x.iloc[te].reset_index(drop=True)) for tr, te in splits]
    options = dict(measure_options or {})
    rules: dict[int, Any] = {}
    done = 0
    values: dict[tuple[int, int, int], list[float]] = {}
    skipped: dict[tuple[int, str, str], int] = {}  # (spec index, measure, reason) → number of tasks
    changed: dict[int, bool] = {}
    numbers_changed: dict[int, bool] = {}

    def args(t: _Task) -> tuple:
        return (t, folds[t.fold][0], folds[t.fold][1], schema, mlist, options, rules.get(t.fold))

    def collect(outs: Iterable[_TaskOutput], tasks: list[_Task]) -> None:
        nonlocal done
        for out, t in zip(outs, tasks, strict=True):
            f, r = out.fold, out.repeat
            values[(out.index, f, r)] = out.values
            if out.rules is not None and f not in rules:
                rules[f] = out.rules  # Ψx of this fold, shared with every technique of the fold
            for m, reason in out.skipped.items():
                skipped[(out.index, m, reason)] = skipped.get((out.index, m, reason), 0) + 1
            changed[out.index] = changed.get(out.index, False) or out.changed
            numbers_changed[out.index] = numbers_changed.get(out.index, False) or out.numbers_changed
            done += 1
            if progress is not None:
                progress(done, total, f"fold {f + 1}/{cv} · {t.spec.display_label} · repeat {r + 1}/{repeats}")

    # the baseline runs first so Ψx (built from each training fold) is computed once per fold
    for batch in (base_tasks, tech_tasks):
        if not batch:
            continue
        if n_jobs in (None, 1) or len(batch) == 1:
            collect((_run_task(*args(t)) for t in batch), batch)
        else:
            from joblib import Parallel, delayed

            par = Parallel(n_jobs=n_jobs, return_as="generator")
            collect(par(delayed(_run_task)(*args(t)) for t in batch), batch)

    all_specs = ([base_spec] if baseline else []) + specs
    all_effective: list[dict[str, Any]] = ([{}] if baseline else []) + effective
    offset = 0 if baseline else 1
    rows = []
    na_rows: list[dict[str, str]] = []
    for i, spec in enumerate(all_specs):
        idx = i + offset
        tech_name = spec.name
        reps = 1 if idx == 0 else repeats
        # a setting that changed the data but no numeric value in any run: its numeric losses do not apply
        na = (set(NUMERIC_LOSS) if idx != 0 and changed.get(idx, False) and not numbers_changed.get(idx, True)
              else set())
        na_rows.extend({"label": spec.display_label, "measure": m.name, "reason": NOT_APPLICABLE_NUMBERS}
                       for m in mlist if m.name in na)
        for f in range(cv):
            for r in range(reps):
                vals = values[(idx, f, r)]
                for m, v in zip(mlist, vals, strict=True):
                    rows.append((tech_name, spec.display_label, spec.params_json, f, r, m.name,
                                 float("nan") if m.name in na else v))
    data = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    data = data.astype({"fold": "int64", "repeat": "int64", "value": "float64"})
    label_of = {i + offset: spec.display_label for i, spec in enumerate(all_specs)}
    n_tasks = {i + offset: cv * (1 if i + offset == 0 else repeats) for i in range(len(all_specs))}
    skipped_rows = [{"label": label_of[i], "measure": m, "reason": reason, "tasks": n, "of": n_tasks[i]}
                    for (i, m, reason), n in sorted(skipped.items())]
    notes.extend(skip_notes(skipped_rows, list(label_of.values())))
    meta = {
        "cv": int(cv),
        "repeats": int(repeats),
        "random_state": int(random_state),
        "splitter": type(splitter).__name__,
        "fold_sizes": [int(len(te)) for _, te in splits],
        "dataset": dataset_summary(x, schema, dataset_name),
        "schema": schema.to_dict(),
        "missing": missing,
        "removed_identifiers": identifiers,
        "techniques": [
            {"technique": s.name, "label": s.display_label, "params": s.params_json, "effective_params": eff,
             "changes_data": bool(changed.get(i + offset, False))}
            for i, (s, eff) in enumerate(zip(all_specs, all_effective, strict=True))
        ],
        "measures": [m.name for m in mlist],
        "measure_info": {m.name: m.info() for m in mlist},
        "skipped": skipped_rows,
        "not_applicable": na_rows,
        "il1s_form": il1s_form,
        "notes": notes,
    }
    return ComparisonResult(data, meta)
