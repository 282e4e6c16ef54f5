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

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
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

JSON_FORMAT_VERSION = 2
_TABLE_SUFFIXES = (".csv.gz", ".csv", ".parquet", ".pq", ".txt")


def json_header(kind: str) -> dict[str, Any]:
    """The fields every JSON document of ppdm starts with (``kind``: evaluation, methods, measures)."""
    from ppdm._version import __version__

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
    status: str  # risk: "low", "high", "uncertain", "not judged"; utility: "kept", "reduced", "uncertain", ...
    sentence: str
    judged: list[dict[str, Any]] = field(default_factory=list)
    not_judged: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "sentence": self.sentence, "judged": self.judged,
                "not_judged": self.not_judged}


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


#: verdict words per topic: title, good status, bad status
_WORDS = {"risk": ("Disclosure risk", "low", "high"), "utility": ("Utility", "kept", "reduced")}
#: status of a verdict whose judged measures all meet or straddle their thresholds, some straddling
UNCERTAIN = "uncertain"

ATTACKS = ("singling_out_univariate", "singling_out_multivariate", "linkability", "inference")


def _advice(uncertain: list[dict[str, Any]], measures: Mapping[str, Mapping[str, Any]]) -> str:
    """How to settle measures whose interval straddles their threshold: measure more."""
    ways = []
    attacks = [j["measure"] for j in uncertain if j["measure"] in ATTACKS]
    if attacks:
        ways.append(f"more attacks (-p {attacks[0]}.n_attacks=N) or a bigger control set (--holdout, --control)")
    sampled = [j["measure"] for j in uncertain if j["measure"] not in ATTACKS
               and (measures[j["measure"]].get("details") or {}).get("sample_size") is not None]
    if sampled:
        ways.append("a bigger sample (--sample-rows, or -p NAME.sample=N)")
    if not ways:
        ways.append("more records or repeated measurement")
    return "measure more to settle it: " + " or ".join(ways)


def verdict(topic: str, measures: Mapping[str, Mapping[str, Any]]) -> Verdict:
    """The verdict on ``topic`` ("risk" or "utility") from the measures of an evaluation document.

    A measure of that kind with a threshold and a value is judged with
    :func:`ppdm.metrics.base.judge`: with a confidence interval (an attack, a sampled
    measure) it meets its threshold only when the whole interval does, misses it only when
    the whole interval is past it, and is uncertain otherwise. A measure whose intruder
    scenario does not apply to the release (``not_judged`` in the document) is named but not
    judged. The verdict is bad ("high" risk, utility "reduced") when a judged measure misses,
    "uncertain" when none misses but some straddle their threshold (with the advice to
    measure more), and good ("low", "kept") when every judged measure meets it.
    """
    from ppdm.metrics.base import judge

    title, good, bad = _WORDS[topic]
    judged, skipped, unjudged = [], [], []
    for name, m in measures.items():
        if m.get("kind") != topic or m.get("threshold") is None or m.get("direction") not in ("higher", "lower"):
            continue
        if m.get("value") is None:
            skipped.append(name)
            continue
        if m.get("not_judged"):
            unjudged.append({"measure": name, "reason": m["not_judged"]})
            continue
        value = float(m["value"])
        # a share printed in percent (option percent=true) is judged as the share it stands for
        scale = 100.0 if (m.get("details") or {}).get("percent") is True else 1.0
        iv = m.get("interval")
        interval = (float(iv[0]) / scale, float(iv[1]) / scale) if iv else None
        outcome = judge(value / scale, m["threshold"], m["direction"], interval)
        judged.append({"measure": name, "value": value, "threshold": m["threshold"] * scale,
                       "direction": m["direction"], "interval": list(iv) if iv else None,
                       "judgement": outcome, "meets": outcome == "meets", "scenario": m.get("scenario")})
    if not judged:
        why = (f"{_join(skipped)} could not be computed (see below)" if skipped
               else f"no {topic} measure with a threshold was computed")
        if unjudged and not skipped:
            why = f"{_join([u['measure'] for u in unjudged])} do not apply to this release"
        hint = " (add e.g. --measures ddr,idr)" if topic == "risk" and not skipped else ""
        return Verdict(topic, "not judged", f"{title} was not judged: {why}{hint}.", [], unjudged)
    misses = [j for j in judged if j["judgement"] == "misses"]
    unsure = [j for j in judged if j["judgement"] == "uncertain"]
    meets = [j for j in judged if j["judgement"] == "meets"]

    def show(j: dict[str, Any], should: bool) -> str:
        rule = f"{_op(j['direction'])} {fmt_number(j['threshold'])}"
        ci = (f" [{fmt_number(j['interval'][0], 3)}, {fmt_number(j['interval'][1], 3)}]"
              if j.get("interval") else "")
        return f"{j['measure']} = {fmt_number(j['value'])}{ci} ({'should be ' if should else ''}{rule})"

    k = len(judged)
    if misses:
        head = f"{title} is {bad.upper()}: {len(misses)} of {k} judged {topic} measures miss their threshold"
        tail = " — " + _join([show(j, True) for j in misses])
        if unsure:
            tail += "; uncertain: " + _join([show(j, False) for j in unsure])
        status = bad
    elif unsure:
        head = (f"{title} is UNCERTAIN: no judged {topic} measure misses its threshold, but the interval of "
                f"{len(unsure)} of {k} straddles it")
        tail = " — " + _join([show(j, False) for j in unsure]) + "; " + _advice(unsure, measures)
        status = UNCERTAIN
    else:
        head = f"{title} is {good.upper()}: every judged {topic} measure meets its threshold"
        tail = ""
        status = good
    if meets:
        tail += ("; within: " if misses or unsure else " — ") + _join([show(j, False) for j in meets])
    return Verdict(topic, status, head + tail + ".", judged, unjudged)


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
        interval = result_interval(res) if not out.skipped else None
        entry["interval"] = list(interval) if interval is not None else None
        why = result_not_judged(res) if not out.skipped else None
        if why:
            entry["not_judged"] = why
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
