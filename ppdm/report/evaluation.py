"""The evaluation of one release as a JSON document, with a verdict on risk and on utility.

:func:`evaluation_document` turns the outcomes of ``ppdm evaluate`` into the document
``ppdm evaluate --json`` prints and the HTML report shows; its layout is the JSON
Schema ``docs/ppdm.schema.json`` (format ``ppdm.evaluation``, version
:data:`JSON_FORMAT_VERSION`):

* ``ppdm_version``, ``provenance`` (the public sidecar ``<release stem>.provenance.json``
  written next to the release, or ``null``), ``private`` (what may be shown of the owner's
  private log ``<release stem>.private.json`` when the evaluation was given it — input,
  release check, hold-out size; never the pairing — else ``null``), ``inputs`` (file names
  and sizes, options, how x and z were paired);
* ``summary``: the ``risk`` and ``utility`` verdicts (:func:`verdicts`);
* ``measures`` by name: ``value`` (``null`` when skipped, with ``reason``), ``status``,
  ``kind``, ``direction``, ``range``, ``threshold``, ``meaning``, ``description``,
  ``details`` (the result's single-valued fields) and ``tables`` (names of its detail
  tables);
* ``tables`` by name, each once even when several measures share it (the per-rule table
  of the three rule-retention measures).

Only aggregates enter the document: fields a result marks as record-level
(:attr:`ppdm.metrics.base.MeasureResult.record_level`) are left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ppdm.experiments.evaluation import MeasureOutcome, load_all_measures
from ppdm.metrics.base import MEASURES, MeasureResult, MeasureSpec, _jsonable

JSON_FORMAT_VERSION = 1
_TABLE_SUFFIXES = (".csv.gz", ".csv", ".parquet", ".pq", ".txt")


def json_header(kind: str) -> dict[str, Any]:
    """The fields every JSON document of ppdm starts with (``kind``: evaluation, methods, measures)."""
    from ppdm import __version__

    return {"format": f"ppdm.{kind}", "format_version": JSON_FORMAT_VERSION, "ppdm_version": __version__}


# ------------------------------------------------------------------------ provenance
def table_json(df: pd.DataFrame) -> dict[str, Any]:
    """A detail table as ``{"columns": [...], "rows": [[...], ...]}`` (a named index becomes the
    first column; NaN becomes null)."""
    if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
        df = df.reset_index()
    return {"columns": [str(c) for c in df.columns],
            "rows": [[_jsonable(v) for v in row] for row in df.itertuples(index=False, name=None)]}


# --------------------------------------------------------------------------- verdicts
@dataclass
class Verdict:
    """One sentence on risk or utility, with the numbers and thresholds behind it."""

    topic: str  # "risk" or "utility"
    status: str  # risk: "low", "high", "not judged"; utility: "kept", "reduced", "not judged"
    sentence: str
    judged: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "sentence": self.sentence, "judged": self.judged}


def fmt_number(v: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; missing values as a dash."""
    if v is None:
        return "—"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return "—"
    return f"{f:.{digits}g}"


def _op(direction: str) -> str:
    return "≤" if direction == "lower" else "≥"


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


_WORDS = {
    "risk": ("Disclosure risk", "low", "high", "every judged risk measure meets its threshold",
             "{n} of {k} judged risk measures miss their threshold"),
    "utility": ("Utility", "kept", "reduced", "every judged utility measure meets its threshold",
                "{n} of {k} judged utility measures miss their threshold"),
}


def verdict(topic: str, measures: Mapping[str, Mapping[str, Any]]) -> Verdict:
    """The verdict on ``topic`` ("risk" or "utility") from the measures of an evaluation
    document: a measure of that kind with a threshold and a value is judged; the verdict is
    good ("low" risk, utility "kept") when every judged measure meets its threshold."""
    title, good, bad, all_ok, some_bad = _WORDS[topic]
    judged, skipped = [], []
    for name, m in measures.items():
        if m.get("kind") != topic or m.get("threshold") is None or m.get("direction") not in ("higher", "lower"):
            continue
        if m.get("value") is None:
            skipped.append(name)
            continue
        value = float(m["value"])
        # a share printed in percent (option percent=true) is judged as the share it stands for
        scale = 100.0 if (m.get("details") or {}).get("percent") is True else 1.0
        ok = value / scale <= m["threshold"] if m["direction"] == "lower" else value / scale >= m["threshold"]
        judged.append({"measure": name, "value": value, "threshold": m["threshold"] * scale,
                       "direction": m["direction"], "meets": bool(ok)})
    if not judged:
        why = (f"{_join(skipped)} could not be computed (see below)" if skipped
               else f"no {topic} measure with a threshold was computed")
        hint = " (add e.g. --measures ddr,idr)" if topic == "risk" and not skipped else ""
        return Verdict(topic, "not judged", f"{title} was not judged: {why}{hint}.", [])
    misses = [j for j in judged if not j["meets"]]
    meets = [j for j in judged if j["meets"]]

    def show(j: dict[str, Any], should: bool) -> str:
        rule = f"{_op(j['direction'])} {fmt_number(j['threshold'])}"
        return f"{j['measure']} = {fmt_number(j['value'])} ({'should be ' if should else ''}{rule})"

    if misses:
        head = f"{title} is {bad.upper()}: " + some_bad.format(n=len(misses), k=len(judged))
        tail = " — " + _join([show(j, True) for j in misses])
        if meets:
            tail += "; within: " + _join([show(j, False) for j in meets])
        status = bad
    else:
        head = f"{title} is {good.upper()}: {all_ok}"
        tail = " — " + _join([show(j, False) for j in meets])
        status = good
    return Verdict(topic, status, head + tail + ".", judged)


def verdicts(measures: Mapping[str, Mapping[str, Any]]) -> dict[str, Verdict]:
    """Risk and utility verdicts of an evaluation document's ``measures``."""
    return {"risk": verdict("risk", measures), "utility": verdict("utility", measures)}


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
) -> dict[str, Any]:
    """The JSON document of one evaluation (see the module docstring).

    ``outcomes`` maps measure names to :class:`MeasureOutcome` (or bare results, taken as
    computed); ``thresholds`` replaces registered thresholds by name; ``dataset`` is
    :func:`ppdm.experiments.compare.dataset_summary` of x.
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
        res = out.result
        entry["details"] = res.scalars() if isinstance(res, MeasureResult) else {}
        entry["tables"] = [keys[i] for i in used[name]]
        measures[name] = entry
    doc = {
        **json_header("evaluation"),
        "provenance": dict(provenance) if provenance is not None else None,
        "private": _jsonable(dict(private)) if private is not None else None,
        "inputs": _jsonable(dict(inputs or {})),
        "dataset": _jsonable(dict(dataset)) if dataset is not None else None,
        "summary": {k: v.to_dict() for k, v in verdicts(measures).items()},
        "measures": measures,
        "tables": tables,
    }
    return doc
