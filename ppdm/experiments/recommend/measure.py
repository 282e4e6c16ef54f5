"""Measuring one release of a search (``ppdm recommend``): every measure of the policy on a
release of the training split, against the control split, with its confidence interval
(:func:`measure_release`); the search's data (:class:`SearchData`) every trial shares.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.experiments.evaluation import load_all_measures, run_measure
from ppdm.experiments.recommend.accounting import DEFAULT_SCORE_EPSILON
from ppdm.experiments.recommend.common import finite
from ppdm.experiments.recommend.judging import loss_of
from ppdm.metrics.base import EvaluationContext, result_not_judged
from ppdm.metrics.judgement import judge_line, read_entry, result_lower_bound


@dataclass
class SearchData:
    """What every trial needs: the two splits, the schema, Ψx, the measures and their seed."""

    train: pd.DataFrame
    control: pd.DataFrame
    schema: Schema
    rules: Any
    measures: tuple[str, ...]
    options: dict[str, Any]
    measure_seed: int
    input_info: dict[str, Any]
    #: the policy's risk lines as ``(measure, threshold, direction)``: a trial stops measuring
    #: risk once one of them misses (see :func:`measure_release`)
    lines: tuple[tuple[str, float, str], ...] = ()
    #: positions of the control split's records in the table (the rest, in order, is the training split)
    held: np.ndarray | None = None
    #: the policy's utility measures, which score a differentially private trial (with Laplace noise)
    utility: tuple[str, ...] = ()
    #: the ε each differentially private trial's scores spend (:mod:`ppdm.experiments.recommend.accounting`)
    score_epsilon: float = DEFAULT_SCORE_EPSILON
    #: whether the search has a differentially private technique: every trial's utility loss is then
    #: taken on the scale its noisy scores are (see :func:`utility_losses`)
    private_search: bool = False
    #: the policy's utility ceilings as ``(measure, most loss)``: a trial whose loss passes one
    #: stops before its risk measures, as after a risk line's miss (see :func:`measure_release`)
    ceilings: tuple[tuple[str, float], ...] = ()


#: risk measures a trial measures last, the slowest first to be spared when a cheaper line misses
MEASURED_LAST = ("linkability", "inference", "singling_out_multivariate")


def measure_order(measures: Sequence[str]) -> list[str]:
    """The order a trial measures in: utility first (every trial's loss is known), then the
    risk measures, the slowest (:data:`MEASURED_LAST`) last."""
    registry = load_all_measures()
    utility = [m for m in measures if registry[m].kind != "risk"]
    risk = [m for m in measures if registry[m].kind == "risk"]
    return utility + sorted(risk, key=lambda m: MEASURED_LAST.index(m) + 1 if m in MEASURED_LAST else 0)


def measure_release(z: pd.DataFrame, data: SearchData, out_schema: Schema | None = None, *,
                    stop_on_miss: bool = False, utility_only: bool = False,
                    provenance: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Every measure of the policy on release ``z`` of the training split: value, confidence
    interval (``ci_low``/``ci_high`` when the measure gives one) or the reason it was skipped.

    With ``stop_on_miss`` (what a search's trials do) the measures are taken in
    :func:`measure_order`, and once a risk line of the policy (``data.lines``) misses — its
    whole interval beyond the threshold, by :func:`ppdm.metrics.base.judge` — the remaining
    risk measures are not taken: the release cannot meet the policy whatever they say. They
    are recorded with ``skipped`` naming the line that missed; a utility loss above the
    policy's ceiling (``data.ceilings``, measured first) spares them too. A release that meets every line
    measured so far, and so every release that meets the policy, is measured in full; each
    measure uses the same seed whichever order it is taken in, so its value does not depend on
    the order. With ``utility_only`` (a differentially private trial, which no risk line
    judges) only the utility measures are taken.

    ``out_schema`` is the release's own schema when a technique recoded columns (numbers into
    interval labels, categories into coarser ones; ``Technique.output_schema``). Risk is then
    measured as an intruder who knows the recoding would: the training and control records are
    recoded the same way (:func:`ppdm.data.generalization.generalise`) and compared with z on z's
    categories, as ``ppdm evaluate`` does. Utility is measured against the original table, the
    same reference for every release of a search: an interval label is read as its midpoint (an
    open interval as its finite end) and a coarser category as a category the original does not
    have, so what the recoding removed counts as lost. ``provenance`` is the release's public
    record: a date column it released as ages (recoding's ``age_at``) is read as ages at the
    date it names before the labels, as ``ppdm evaluate`` reads it
    (:func:`ppdm.experiments.evaluate.ages_at`).
    """
    registry = load_all_measures()
    views = _recoded_views(z, data, out_schema, provenance)
    base = dict(rules=data.rules, random_state=data.measure_seed, options=dict(data.options))
    if views is None:
        ctx = _context(data.train, z, data.control, data.schema, base)
        risk_ctx = utility_ctx = ctx
    else:
        (xr, cr, sr), zu = views
        risk_ctx = _context(xr, z, cr, sr, base)
        utility_ctx = _context(data.train, zu, data.control, data.schema, base)
    out: dict[str, dict[str, Any]] = {}
    lines = {m: (t, d) for m, t, d in data.lines} if stop_on_miss else {}
    # a private search ranks by losses on its noisy scores' scale, which only judging reads
    ceilings = dict(data.ceilings) if stop_on_miss and not data.private_search else {}
    missed: str | None = None
    for name in (measure_order(data.measures) if stop_on_miss else data.measures):
        spec = registry[name]
        if utility_only and spec.kind == "risk":
            continue
        if missed is not None and spec.kind == "risk":
            out[name] = {"value": None, "ci_low": None, "ci_high": None, "skipped": missed,
                         "reason": f"not measured: the line on {missed} already misses"}
            continue
        res = run_measure(spec, risk_ctx if spec.kind == "risk" else utility_ctx)
        entry: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None}
        if res.skipped:
            entry["reason"] = res.reason
            if res.not_applicable:  # the intruder the measure models cannot act on this release
                entry["not_applicable"] = True
        else:
            v = res.value
            entry["value"] = float(v) if math.isfinite(v) else None
            lo, hi = getattr(res.result, "ci_low", None), getattr(res.result, "ci_high", None)
            if finite(lo) and finite(hi):
                entry["ci_low"], entry["ci_high"] = float(lo), float(hi)  # type: ignore[arg-type]  # finite: float() works
            if entry["value"] is None:
                entry["reason"] = "the measure gave no value"
            why = result_not_judged(res.result) if spec.kind == "risk" else None
            if why:  # computed, but the intruder scenario it models does not apply to this release
                entry["not_judged"] = why
            bound = result_lower_bound(res.result) if spec.kind == "risk" else None
            if bound:  # a pairing-free value that only bounds the risk from below never meets a line
                entry["lower_bound"] = bound
            if (getattr(res.result, "percent", None) is True):
                entry["percent"] = True
            score_z = getattr(res.result, "score_z", None)
            if name == "prediction_accuracy" and score_z is not None and finite(score_z):
                # the control records Ψz classifies correctly: the count a differentially private trial is scored by
                entry["correct"] = int(round(float(score_z) * int(getattr(res.result, "n_test", 0))))
        out[name] = entry
        if name in ceilings and entry["value"] is not None and loss_of(spec, entry["value"]) > ceilings[name]:
            missed = f"{name} loss"  # the utility ceiling misses: the risk measures are spared
        if name in lines and entry["value"] is not None and not entry.get("not_applicable") \
                and not entry.get("not_judged"):
            if judge_line(read_entry(name, entry), lines[name][0], lines[name][1]).state == "misses":
                missed = name
    return {name: out[name] for name in data.measures if name in out}


def _context(x: pd.DataFrame, z: pd.DataFrame, control: pd.DataFrame, schema: Schema,
             base: Mapping[str, Any]) -> EvaluationContext:
    """The tables in the form measures compute on, as evaluate's (:func:`ppdm.data.types.working_frame`:
    a date on its time axis, a missing cell as NaN). A column of z holding text where x has
    numbers (labels no output schema explains) is left as it is: the measures say they cannot
    compare it."""
    from ppdm.data.types import working_frame

    text = {c for c in schema.numeric if c in z.columns
            and (pd.api.types.is_string_dtype(z[c]) or z[c].dtype == object)}
    return EvaluationContext(x=working_frame(x, schema.numeric), z=working_frame(z, [c for c in schema.numeric
                                                                                    if c not in text]),
                             schema=schema, test=working_frame(control, schema.numeric),
                             control=working_frame(control, schema.numeric), **base)


def _recoded_views(z: pd.DataFrame, data: SearchData, out_schema: Schema | None,
                   provenance: Mapping[str, Any] | None = None) -> Any:
    """``((x, control, schema) recoded for risk, z decoded for utility)``, or ``None`` when the
    release recoded no column (see :func:`measure_release`)."""
    if out_schema is None:
        return None
    sch = data.schema
    from ppdm.data.generalization import parse_interval, recoded_view
    from ppdm.experiments.evaluate import ages_at

    # a date released as ages is read as ages at the release's date, the one evaluate reads it at
    cols, recode, risk_schema = recoded_view(sch, out_schema, list(z.columns), ages=ages_at(provenance, sch))
    if not cols:
        return None

    def point(label: Any) -> float:
        if label is None or (isinstance(label, float) and math.isnan(label)):
            return math.nan
        iv = parse_interval(label)
        if iv is None:
            try:
                return float(label)  # a number kept as it was (top/bottom coding writes them as text)
            except (TypeError, ValueError):
                return math.nan
        lo, hi = iv.low, iv.high
        if math.isfinite(lo) and math.isfinite(hi):
            return (lo + hi) / 2
        return lo if math.isfinite(lo) else hi

    decoded = z.copy()
    for c in cols:
        if c in sch.numeric and c not in sch.dates:
            vals = pd.Series(z[c], dtype=object).to_numpy()
            decoded[c] = np.array([point(v) for v in vals], dtype=float)
        elif c in sch.dates:  # a month or a year of a date: its midpoint, measured on the time axis
            decoded[c] = _period_midpoints(z[c])
        else:
            decoded[c] = pd.Series(z[c], dtype=object).to_numpy()
    return (recode(data.train), recode(data.control), risk_schema), decoded


def _period_midpoints(labels: pd.Series) -> pd.Series:
    """The middle of each released period (``2021-03``: a month, ``2021``: a year) as a date;
    a label that is no period is missing."""
    def mid(v: Any) -> Any:
        text = str(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else ""
        if not re.fullmatch(r"\d{4}(-\d{2})?", text):
            return pd.NaT
        p = pd.Period(text, freq="M" if len(text) == 7 else "Y")
        return p.start_time + (p.end_time - p.start_time) / 2

    return pd.Series([mid(v) for v in pd.Series(labels, dtype=object)], index=labels.index, dtype="datetime64[ns]")
