"""The pieces :func:`ppdm.experiments.compare.compare` runs: the techniques and measures
resolved and checked, the seeds, the task of one technique on one fold and repeat
(:func:`_run_task`, run in worker processes), and the notes on what was skipped. Split from
:mod:`ppdm.experiments.compare`, which re-exports every name here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments._compare_specs import (
    _COMMON_ARGS,
    ORIGINAL,
    TechniqueSpec,
    params_to_json,
    parse_technique,
)
from ppdm.experiments.evaluation import (
    declared_in,
    group_reasons,
    measurement_context,
    resolve_measures,
    run_measure,
)
from ppdm.metrics.base import MeasureSpec


# ------------------------------------------------------------------------ engine
@dataclass
class _Task:
    index: int  # position of the spec in the comparison (0 = baseline)
    spec: TechniqueSpec
    cls: type | None  # technique class; None for the baseline
    fold: int
    repeat: int
    technique_seed: int
    measure_seed: int


def dataset_summary(x: pd.DataFrame, schema: Schema, name: str | None = None) -> dict[str, Any]:
    """Rows, columns and column roles of a table, for reports."""
    info: dict[str, Any] = {
        "name": name,
        "rows": int(len(x)),
        "columns": int(x.shape[1]),
        "numeric": list(schema.numeric),
        "categorical": list(schema.categorical),
        "class_column": schema.class_column,
    }
    if schema.class_column is not None:
        counts = x[schema.class_column].value_counts(sort=True)
        info["class_counts"] = {str(k): int(v) for k, v in counts.items()}
    return info


def skip_notes(skipped: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> list[str]:
    """One note per reason measures were skipped, naming every measure and release it
    concerns (``meta["skipped"]`` rows: ``label, measure, reason, tasks, of``).

    A table that does not allow a measure usually does not allow it for any release, and
    several measures often fail for one reason (no quasi-identifier to key on): the reason
    is said once (:func:`ppdm.experiments.evaluation.group_reasons`), not once per release
    and measure. ``labels`` (every label of the comparison) lets a reason that holds
    everywhere say so.
    """
    where: dict[tuple[str, str], dict[str, set[tuple[int, int]]]] = {}
    for row in skipped:
        key = (str(row["measure"]), " ".join(str(row["reason"]).split()))
        where.setdefault(key, {}).setdefault(str(row["label"]), set()).add((int(row["tasks"]), int(row["of"])))
    keys = list(where)
    notes = []
    for idx, reason in group_reasons((str(i), r) for i, (_, r) in enumerate(keys)):
        members = [keys[int(i)] for i in idx]
        ms = list(dict.fromkeys(m for m, _ in members))
        places: dict[str, set[tuple[int, int]]] = {}
        for key in members:
            for label, counts in where[key].items():
                places.setdefault(label, set()).update(counts)
        head = f"measure {ms[0]!r} was" if len(ms) == 1 else f"measures {', '.join(map(repr, ms))} were"
        full = all(len(c) == 1 and next(iter(c))[0] == next(iter(c))[1] for c in places.values())
        if labels is not None and len(labels) > 1 and full and set(places) == set(labels):
            also = " and of the original" if ORIGINAL in places else ""
            notes.append(f"{head} skipped in every run of every release{also}: {reason}")
            continue
        parts = []
        for label, counts in places.items():
            if len(counts) == 1:
                t, of = next(iter(counts))
                parts.append(f"{label} in {t} of {of} run(s)")
            else:
                parts.append(f"{label} in some runs")
        text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        notes.append(f"{head} skipped for {text}: {reason}")
    return notes


def _seed(ss: np.random.SeedSequence) -> int:
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def _resolve_specs(techniques: Sequence[TechniqueSpec | str]) -> list[TechniqueSpec]:
    specs: list[TechniqueSpec] = []
    for t in techniques:
        if isinstance(t, TechniqueSpec):
            specs.append(TechniqueSpec(t.name, dict(t.params), t.label))
        elif isinstance(t, str):
            specs.extend(parse_technique(t))
        else:
            raise ParameterError(f"expected a TechniqueSpec or 'NAME:key=value' text, got {t!r}")
    if not specs:
        raise ParameterError("no technique to compare")
    labels = [ORIGINAL] + [s.display_label for s in specs]
    dup = [lab for lab in labels if labels.count(lab) > 1]
    if dup:
        raise ParameterError(f"two techniques share the label {dup[0]!r}; give them distinct labels")
    return specs


def _resolve_measure_list(measures: str | Sequence[str | MeasureSpec] | None, schema: Schema) -> list[MeasureSpec]:
    if measures is None or isinstance(measures, str):
        chosen = resolve_measures(measures)
        explicit = measures is not None and measures.strip() != "all"
        if measures is None:
            chosen = declared_in(chosen, schema)
    else:
        chosen = []
        for m in measures:
            chosen.extend([m] if isinstance(m, MeasureSpec) else resolve_measures(str(m)))
        explicit = True
    if schema.class_column is None:
        need = [m.name for m in chosen if m.needs_class]
        if need and explicit:
            raise ParameterError(f"measure {need[0]!r} needs a class column; name it with class_column=... (CLI: --class)")
        chosen = [m for m in chosen if not m.needs_class]
    names = [m.name for m in chosen]
    dup = [n for n in names if names.count(n) > 1]
    if dup:
        raise ParameterError(f"measure {dup[0]!r} is listed twice")
    if not chosen:
        raise ParameterError("no measure to evaluate (none is registered, or every one needs a class column)")
    return chosen


def _validate_spec(spec: TechniqueSpec, schema: Schema) -> tuple[type, dict[str, Any]]:
    """Build the technique once and check its parameters, so mistakes surface before any work.

    Returns the technique class and its effective parameters (defaults resolved)."""
    from ppdm.anonymize.registry import make_technique

    tech = make_technique(spec.name, class_column=schema.class_column, random_state=0, schema=schema,
                          params=spec.params)
    try:
        tech._validate_params()
    except PPDMError as e:
        raise type(e)(f"{spec.describe()}: {e}") from None
    effective = {k: v for k, v in tech.get_params(deep=False).items() if k not in _COMMON_ARGS}
    return type(tech), json.loads(params_to_json(effective))


@dataclass
class _TaskOutput:
    index: int
    fold: int
    repeat: int
    values: list[float]
    rules: Any  # Ψx built by this task, or None
    skipped: dict[str, str]  # measure → reason it could not be computed
    changed: bool  # the release differs from the training table
    numbers_changed: bool = True  # the release differs from the training table on some numeric attribute


def _run_task(
    task: _Task,
    train: pd.DataFrame,
    test: pd.DataFrame,
    schema: Schema,
    measures: list[MeasureSpec],
    options: dict[str, Any],
    rules: Any,
) -> _TaskOutput:
    """Anonymize one training table and evaluate every measure; returns the values in order.

    A measure the release does not allow is skipped (NaN, with its reason) as in
    :func:`ppdm.experiments.evaluation.run_measure`."""
    where = f"fold {task.fold}, repeat {task.repeat}"
    # private copies: a technique or measure that alters its input must not affect the next task
    # (in worker processes every task has its own copy anyway; this keeps n_jobs=1 identical)
    train, test = train.copy(), test.copy()
    if task.cls is None:
        z = train
    else:
        try:
            tech = task.cls(class_column=schema.class_column, schema=schema, random_state=task.technique_seed,
                            **task.spec.params)
            z = tech.fit_transform(train)
        except PPDMError as e:
            raise type(e)(f"{task.spec.describe()} failed on {where}: {e}") from None
        except Exception as e:
            e.add_note(f"while running {task.spec.describe()} on {where}")
            raise
    # the held-out fold was not used to make z: it is the attacks' control set (Giomi et al. 2023).
    # Measures see the tables in the working form evaluate gives them (dates on their time axis)
    ctx = measurement_context(train, z, schema, test=test, control=test, rules=rules,
                              random_state=task.measure_seed, options=options)
    values: list[float] = []
    skipped: dict[str, str] = {}
    for m in measures:
        try:
            out = run_measure(m, ctx)
        except PPDMError as e:
            who = "the original table" if task.cls is None else task.spec.describe()
            raise type(e)(f"measure {m.name!r} failed for {who} on {where}: {e}") from None
        except Exception as e:
            e.add_note(f"while evaluating measure {m.name!r} for {task.spec.display_label} on {where}")
            raise
        if out.skipped:
            skipped[m.name] = str(out.reason)
        values.append(out.value)
    changed = task.cls is not None and not _same_table(train, z)
    nums = [c for c in [*schema.numeric, *schema.dates] if c in train.columns and c in z.columns]
    numbers_changed = changed and (not nums or list(z.columns) != list(train.columns)
                                   or not _same_table(train[nums], z[nums]))
    # only a newly built Ψx travels back, to be shared with the fold's other tasks
    return _TaskOutput(task.index, task.fold, task.repeat, values, ctx.rules if rules is None else None, skipped,
                       changed, numbers_changed)


def _same_table(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether a release holds exactly the training table (same shape, columns and values)."""
    if a.shape != b.shape or list(a.columns) != list(b.columns):
        return False
    return bool(a.reset_index(drop=True).equals(b.reset_index(drop=True)))
