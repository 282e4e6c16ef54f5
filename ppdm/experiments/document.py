"""The evaluation of one release as a JSON document, with a verdict on risk and on utility.

:func:`evaluation_document` turns the outcomes of an evaluation
(:func:`ppdm.experiments.evaluate.evaluate`, ``ppdm evaluate``) into the document
``ppdm evaluate --json`` prints and the HTML report shows; its layout is the JSON
Schema ``docs/ppdm.schema.json`` (format ``ppdm.evaluation``, version
:data:`JSON_FORMAT_VERSION`):

* ``ppdm_version``, ``provenance`` (the public sidecar ``<release stem>.provenance.json``
  written next to the release, or ``null``), ``private`` (what may be shown of the owner's
  private log ``<release stem>.private.json`` when the evaluation was given it — input,
  release check, hold-out size; never the pairing — else ``null``), ``inputs`` (file names
  and sizes, options, how x and z were paired);
* ``summary``: the ``risk`` and ``utility`` verdicts (:func:`verdicts`): low / high /
  uncertain risk, utility kept / reduced / uncertain;
* ``measures`` by name: ``value`` (``null`` when skipped, with ``reason``), ``status``,
  ``kind``, ``direction``, ``range``, ``threshold``, ``meaning``, ``description``,
  ``details`` (the result's single-valued fields) and ``tables`` (names of its detail
  tables); ``scenario`` (the intruder scenario a risk measure models), ``interval`` (the
  confidence interval of an attack or a sampled value, else ``null``: verdicts judge the
  whole interval) and, for a measure whose scenario does not apply to this release,
  ``not_judged`` (why the verdict leaves it out);
* ``tables`` by name, each once even when several measures share it (the per-rule table
  of the three rule-retention measures).

Only aggregates enter the document: fields a result marks as record-level
(:attr:`ppdm.metrics.base.MeasureResult.record_level`) are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ppdm.experiments.evaluation import MeasureOutcome, load_all_measures
from ppdm.metrics.base import (
    MEASURES,
    MeasureResult,
    MeasureSpec,
    _jsonable,
    result_interval,
    result_not_judged,
)
from ppdm.metrics.judgement import result_lower_bound, verdicts

JSON_FORMAT_VERSION = 2


def json_header(kind: str) -> dict[str, Any]:
    """The fields every JSON document of ppdm starts with (``kind``: evaluation, methods, measures)."""
    from ppdm._version import __version__

    return {"format": f"ppdm.{kind}", "format_version": JSON_FORMAT_VERSION, "ppdm_version": __version__}


# ---------------------------------------------------------------------------- tables
def table_json(df: pd.DataFrame) -> dict[str, Any]:
    """A detail table as ``{"columns": [...], "rows": [[...], ...]}`` (a named index becomes the
    first column; NaN becomes null)."""
    if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
        df = df.reset_index()
    return {"columns": [str(c) for c in df.columns],
            "rows": [[_jsonable(v) for v in row] for row in df.itertuples(index=False, name=None)]}


# -------------------------------------------------------------------------- document
def _outcome(name: str, item: MeasureOutcome | MeasureResult) -> MeasureOutcome:
    if isinstance(item, MeasureOutcome):
        return item
    spec = MEASURES.get(name) or load_all_measures().get(name) or MeasureSpec(name, lambda ctx: item, "utility", "")
    return MeasureOutcome(spec, item, None)


def evaluation_document(
    outcomes: Mapping[str, MeasureOutcome | MeasureResult],
    *,
    provenance: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
    dataset: Mapping[str, Any] | None = None,
    thresholds: Mapping[str, float] | None = None,
    private: Mapping[str, Any] | None = None,
    ruled_out: Iterable[str] = (),
) -> dict[str, Any]:
    """The JSON document of one evaluation (see the module docstring).

    ``outcomes`` maps measure names to :class:`MeasureOutcome` (or bare results, taken as
    computed); ``thresholds`` replaces registered thresholds by name; ``dataset`` is
    :func:`ppdm.experiments.compare.dataset_summary` of x; ``ruled_out`` names the intruder
    scenarios the owner excluded (:func:`ppdm.metrics.judgement.verdict`).
    """
    overrides = dict(thresholds or {})
    outs = {name: _outcome(name, item) for name, item in outcomes.items()}
    # each detail table once, however many measures share it (the same object or equal content)
    distinct: list[tuple[pd.DataFrame, str, str]] = []  # (table, field, first measure)
    used: dict[str, list[int]] = {}
    for name, out in outs.items():
        details = out.result.details() if isinstance(out.result, MeasureResult) else {}
        refs = []
        for field_name, df in details.items():
            k = next((i for i, (d, f, _) in enumerate(distinct)
                      if f == field_name and (d is df or (d.shape == df.shape and d.equals(df)))), None)
            if k is None:
                distinct.append((df, field_name, name))
                k = len(distinct) - 1
            refs.append(k)
        used[name] = refs
    # a field name that stands for one table keeps its name (per_rule); others get the measure's
    fields = [f for _, f, _ in distinct]
    keys = [f if fields.count(f) == 1 else f"{m}.{f}" for _, f, m in distinct]
    tables = {keys[i]: table_json(d) for i, (d, _, _) in enumerate(distinct)}
    measures: dict[str, Any] = {}
    for name, out in outs.items():
        info = out.spec.info()
        for key in ("default", "needs_class", "requires", "out_of_core", "paired"):
            info.pop(key, None)
        if name in overrides:
            info["threshold"] = float(overrides[name])
        entry: dict[str, Any] = {"value": None if out.skipped else _jsonable(out.value),
                                 "status": "skipped" if out.skipped else "computed", **info}
        if out.skipped:
            entry["reason"] = out.reason
            if out.not_applicable:  # the intruder scenario it models does not act on this release
                entry["not_judged"] = out.reason
        res = out.result
        interval = result_interval(res) if not out.skipped else None
        entry["interval"] = list(interval) if interval is not None else None
        why = result_not_judged(res) if not out.skipped else None
        if why:
            entry["not_judged"] = why
        bound = result_lower_bound(res) if not out.skipped else None
        if bound:
            entry["lower_bound"] = bound
        entry["details"] = res.scalars() if isinstance(res, MeasureResult) else {}
        entry["tables"] = [keys[i] for i in used[name]]
        measures[name] = entry
    doc = {
        **json_header("evaluation"),
        "provenance": dict(provenance) if provenance is not None else None,
        "private": _jsonable(dict(private)) if private is not None else None,
        "inputs": _jsonable(dict(inputs or {})),
        "dataset": _jsonable(dict(dataset)) if dataset is not None else None,
        "summary": {k: v.to_dict() for k, v in verdicts(measures, ruled_out=ruled_out).items()},
        "measures": measures,
        "tables": tables,
    }
    return doc


__all__ = ["JSON_FORMAT_VERSION", "evaluation_document", "json_header", "table_json"]
