"""Self-contained HTML reports (plots embedded as base64 PNG) rendered with Jinja2.

:func:`render_evaluation_html` presents one release (``ppdm evaluate --html``): a summary
first (what was released, from the provenance sidecar; a risk verdict and a utility
verdict with their numbers and thresholds), then one section per measure with its
direction, range and what a good value means, details folded away, and every detail
table shared by several measures (the per-rule table) once, sortable by any column.

:func:`render_html` presents a :class:`~ppdm.experiments.compare.ComparisonResult`
(``ppdm compare --report``): what was compared, the risk–utility map, the best release
per measure where one is better beyond the confidence interval, the techniques with
their effective parameters, the measures, the summary table, per-measure and sweep
plots and the correlation of the measures.

Reports hold aggregates only, never a record of x or z. The same input gives the same text.
The words and tables of the pages' sections live in :mod:`ppdm.report._html_text`, re-exported here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ppdm.data.io import atomic_write_text
from ppdm.report._html_text import (  # noqa: F401  (re-exported: the public path stays this module)
    _GROUPED,
    _chain_text,
    _dataset,
    _differential_privacy,
    _grouped_columns,
    _html_table,
    _param_words,
    _plain_value,
    _provenance_view,
    _range_text,
    _released,
    describe_technique,
    fmt,
)
from ppdm.report.evaluation import evaluation_document
from ppdm.report.plots import (
    direction_text,
    is_constant,
    png_base64,
    risk_utility_plot,
    sweep_grid,
    sweep_series,
)
from ppdm.report.summary import (
    TechniqueVerdict,
    comparison_verdicts,
    fidelity_summary,
    group_reasons,
    linkage_drivers,
    measure_rows,
    pareto_front,
    plain_columns,
    plausibility_drivers,
    risk_drivers,
    status_class,
    status_slug,
)

#: at most this many risk measures get a risk–utility map each
MAX_MAPS = 3


@cache
def _env() -> Environment:
    return Environment(
        loader=PackageLoader("ppdm.report", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _version() -> str:
    from ppdm import __version__

    return __version__


# ---------------------------------------------------------------- evaluation page
def _evaluation_context(doc: Mapping[str, Any], *, title: str, subtitle: str | None,
                        dataset_info: Mapping[str, Any] | None, max_detail_rows: int) -> dict[str, Any]:
    measures_doc: Mapping[str, Any] = doc["measures"]
    tables: Mapping[str, Any] = doc.get("tables") or {}
    users: dict[str, list[str]] = {}
    for name, m in measures_doc.items():
        for t in m.get("tables") or []:
            users.setdefault(t, []).append(name)
    drivers = risk_drivers(doc)
    # a table shown at the top (the drivers' per-key table) is not shown again below
    on_top = {t for t in users if drivers is not None and drivers.table["columns"] == (tables.get(t) or {}).get(
        "columns") and drivers.table["rows"] == (tables.get(t) or {}).get("rows")}
    shared = [t for t, names in users.items() if len(names) > 1 and t not in on_top]
    rows = {r["name"]: r for r in measure_rows(doc)}
    measures = []
    for name, m in measures_doc.items():
        row = rows[name]
        measures.append({
            "name": name,
            "anchor": _anchor(name),
            "kind": m.get("kind") or "—",
            "value": fmt(m.get("value"), 6),
            "short": fmt(m.get("value"), 4),
            "skipped": m.get("status") == "skipped",
            "reason": m.get("reason"),
            "not_judged": m.get("not_judged") or "",
            "direction": direction_text(m.get("direction")),
            "range": _range_text(m.get("range")),
            "threshold": row["threshold"],
            "status": row["status"],
            "status_text": _STATUS_TEXT.get(row["status"], row["status"]),
            "status_slug": status_slug(row["status"]),
            "meaning": m.get("meaning") or "",
            "description": m.get("description") or "",
            "scalars": [(k, fmt(v, 6) if not isinstance(v, str) else v) for k, v in (m.get("details") or {}).items()],
            "tables": [{"name": t, **_html_table(tables[t], max_detail_rows)} for t in m.get("tables") or []
                       if t not in shared and t not in on_top and t in tables],
            "shared": [{"name": t, "anchor": "t-" + _anchor(t)} for t in m.get("tables") or [] if t in shared],
            "on_top": [t for t in m.get("tables") or [] if t in on_top],
        })
    shared_tables = [{"name": t, "anchor": "t-" + _anchor(t), "users": users[t],
                      **_html_table(tables[t], max_detail_rows)} for t in shared if t in tables]
    groups: dict[str, list[dict[str, Any]]] = {"risk": [], "utility": [], "other": []}
    for m in sorted(measures, key=lambda m: {"risk": 0, "utility": 1}.get(m["kind"], 2)):
        groups[m["kind"] if m["kind"] in ("risk", "utility") else "other"].append(m)
    skipped = [{"names": names, "anchors": [_anchor(n) for n in names], "reason": reason}
               for names, reason in group_reasons((m["name"], m["reason"] or "") for m in measures if m["skipped"])]
    summary = doc.get("summary") or {}
    inputs = doc.get("inputs") or {}
    verdicts = []
    for k in ("risk", "utility"):
        if k in summary:
            v = summary[k]
            verdicts.append({"topic": k, "status": v.get("status"), "sentence": v.get("sentence", ""),
                             "cls": status_class(v.get("status")), "slug": status_slug(v.get("status"))})
    drivers_ctx = None
    if drivers is not None:
        cols = list(drivers.table["columns"])
        body = []
        for r in drivers.table["rows"][:max_detail_rows]:
            body.append({"worst": drivers.worst is not None and str(r[0]) == drivers.worst,
                         "cells": [{"text": fmt(v, 6) if isinstance(v, (int, float)) and not isinstance(v, bool)
                                    else _plain_value(v), "num": isinstance(v, (int, float)) and not isinstance(v, bool)}
                                   for v in r]})
        drivers_ctx = {"sentence": drivers.sentence, "header": plain_columns(cols), "rows": body,
                       "measures": drivers.measures, "key_source": drivers.key_source,
                       "n_rows": len(drivers.table["rows"]), "collapsed": len(drivers.table["rows"]) > 12}
    fid = fidelity_summary(doc)
    fidelity_ctx = None
    if fid is not None:
        fidelity_ctx = {"sentence": fid.sentence(),
                        "tables": [{"title": title_, "measure": m, "threshold": fid.threshold.get(m, "—"),
                                    "status": fid.status.get(m, "not judged"), "head": head,
                                    "rows": [(name, metric, fmt(score, 4)) for name, metric, score in rows_]}
                                   for title_, m, head, rows_ in (
                                       ("Worst columns", "column_fidelity", "column", fid.columns),
                                       ("Worst pairs of columns", "pair_fidelity", "pair", fid.pairs)) if rows_]}
    return {
        "title": title,
        "version": doc.get("ppdm_version") or _version(),
        "subtitle": subtitle,
        "released": _released(doc.get("provenance"), inputs, doc.get("private")),
        "provenance": _provenance_view(doc.get("provenance"), doc.get("private")),
        "dp": _differential_privacy(doc.get("provenance")),
        "technique_text": _chain_text(doc.get("provenance")),
        "verdicts": verdicts,
        "drivers": drivers_ctx,
        "linkage_drivers": linkage_drivers(doc),
        "fidelity": fidelity_ctx,
        "plausibility_drivers": plausibility_drivers(doc),
        "groups": groups,
        "skipped": skipped,
        "dataset": _dataset(dataset_info if dataset_info is not None else doc.get("dataset")),
        "measures": measures,
        "shared_tables": shared_tables,
        "options": inputs.get("options") or {},
    }


#: how the status of a measure reads in the tables (any other status is shown as it is named)
_STATUS_TEXT = {"meets": "meets its threshold", "misses": "misses its threshold",
                "uncertain": "uncertain: its interval straddles the threshold"}


def _anchor(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", name)


def render_evaluation_html(
    results: Mapping[str, Any],
    *,
    title: str = "ppdm evaluation",
    dataset_info: Mapping[str, Any] | None = None,
    subtitle: str | None = None,
    max_detail_rows: int = 200,
    provenance: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> str:
    """One release's evaluation as a self-contained HTML page.

    ``results`` is an evaluation document (:func:`ppdm.report.evaluation.evaluation_document`,
    what ``ppdm evaluate --json`` prints) or a mapping of measure names to
    :class:`~ppdm.experiments.evaluation.MeasureOutcome` or
    :class:`~ppdm.metrics.base.MeasureResult`, from
    which the document is built with ``provenance``, ``inputs`` and ``thresholds``. Detail
    tables show at most ``max_detail_rows`` rows each; ``subtitle`` can name the files.
    """
    if results.get("format") == "ppdm.evaluation" and "measures" in results:
        doc = results
    else:
        doc = evaluation_document(results, provenance=provenance, inputs=inputs, dataset=dataset_info,
                                  thresholds=thresholds)
    ctx = _evaluation_context(doc, title=title, subtitle=subtitle, dataset_info=dataset_info,
                              max_detail_rows=max_detail_rows)
    return _env().get_template("evaluation.html").render(**ctx)


# ---------------------------------------------------------------- comparison page
def _measure_rows(result: Any) -> list[dict[str, Any]]:
    from ppdm.experiments.compare import measure_header, measure_info, measure_unit

    rows = []
    for name in result.measures:
        info = measure_info(result, name)
        rows.append({"name": name, "header": measure_header(name, result.meta),
                     "unit": measure_unit(name, result.meta), "kind": info["kind"],
                     "direction": direction_text(info["direction"]),
                     "direction_key": info["direction"], "range": _range_text(info["range"]),
                     "threshold": info["threshold"],
                     "meaning": info["meaning"] or info["description"], "description": info["description"]})
    return rows


def _params_text(params: Mapping[str, Any], given: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"text": f"{k}={json.dumps(v, default=str)}", "given": k in given} for k, v in params.items()]


def _oriented(value: float, direction: str | None) -> float:
    """A value turned so that lower is better (risk, or utility lost)."""
    return -value if direction == "higher" else value


def _maps(result: Any, summary: pd.DataFrame, measures: list[dict[str, Any]], plots: bool,
          high: Sequence[str] = ()) -> dict[str, Any]:
    """The risk–utility maps: each risk measure with a direction that differs between the
    releases, against the first utility measure with one that does (``--measures`` order).
    A measure that is the same for every release is named, not drawn. The front holds only
    settings whose risk is not judged high (``high``: their labels; drawn greyed out), and
    each axis whose measure has a threshold gets the threshold as a line."""
    cell = summary.set_index(["label", "measure"])
    techniques = {t["label"]: t for t in result.meta["techniques"]}

    def means(name: str) -> dict[str, float]:
        out = {}
        for label in result.labels:
            v = float(cell.loc[(label, name), "mean"])
            if math.isfinite(v):
                out[label] = v
        return out

    # the measures the verdicts judge (with a threshold) first, each kind in --measures order
    directed = sorted((m for m in measures if m["direction_key"] in ("higher", "lower")),
                      key=lambda m: m["threshold"] is None)
    constant: list[dict[str, str]] = []

    def usable(kind: str) -> list[dict[str, Any]]:
        out = []
        for m in directed:
            if m["kind"] != kind:
                continue
            vals = means(m["name"])
            if not vals:
                continue
            if is_constant(list(vals.values())):
                constant.append({"name": m["name"], "value": fmt(next(iter(vals.values())))})
                continue
            out.append(m)
        return out

    risk = usable("risk")
    utility = usable("utility")

    def spread(m: dict[str, Any]) -> float:
        # how far apart the settings are, on the measure's own scale: the map that tells them apart first
        vals = [v for lab, v in means(m["name"]).items() if techniques[lab]["technique"] != "original"]
        if len(vals) < 2:
            return 0.0
        return float(np.ptp(vals)) / max(float(np.max(np.abs(vals))), 1e-300)

    risk.sort(key=lambda m: (m["threshold"] is None, -spread(m)))
    if not risk or not utility:
        kind = "risk" if not risk else "utility"
        if any(m["kind"] == kind for m in directed):
            what = f"every {kind} measure is the same for every release; name others with --measures"
        elif kind == "risk":
            what = "the comparison has no risk measure (e.g. ddr, idr); name one with --measures"
        else:
            what = "the comparison has no utility measure with a direction; name one with --measures"
        return {"maps": [], "front": [], "constant": constant, "note": f"No risk–utility map: {what}."}
    u = utility[0]
    from ppdm.metrics.base import SCENARIO_OF, SCENARIOS

    # each risk measure judges the intruder scenario it models: its map names that intruder and
    # the releases it does not apply to (key frequencies of perturbed quasi-identifiers), which
    # are left off rather than drawn at a meaningless value
    skipped: dict[str, dict[str, str]] = {}
    for row in result.meta.get("skipped") or []:
        skipped.setdefault(row["measure"], {})[row["label"]] = row["reason"]
    out = []
    for r in risk[:MAX_MAPS]:
        points = []
        for label in result.labels:
            a, b = cell.loc[(label, r["name"])], cell.loc[(label, u["name"])]
            if not (math.isfinite(float(a["mean"])) and math.isfinite(float(b["mean"]))):
                continue
            points.append({"label": label, "risk": float(a["mean"]), "utility": float(b["mean"]),
                           "risk_ci": float(a["ci_high"] - a["mean"]), "utility_ci": float(b["ci_high"] - b["mean"]),
                           "baseline": techniques[label]["technique"] == "original",
                           "high": label in high and techniques[label]["technique"] != "original"})
        # the front among the releases that change the data and are not judged high risk: the
        # baseline protects nobody, and a release judged HIGH is no choice whatever it keeps
        cands = [(p["label"], _oriented(p["risk"], r["direction_key"]), _oriented(p["utility"], u["direction_key"]))
                 for p in points if not p["baseline"] and not p["high"]
                 and techniques[p["label"]].get("changes_data", True)]
        front = pareto_front(cands)
        png = None
        if plots and points:
            png = png_base64(risk_utility_plot(points, risk=r["name"], risk_direction=r["direction_key"],
                                               utility=u["name"], utility_direction=u["direction_key"], front=front,
                                               risk_threshold=r["threshold"], utility_threshold=u["threshold"],
                                               utility_unit=u.get("unit")))
        drawn = {p["label"] for p in points}
        left_off = [{"label": lab, "reason": why} for lab, why in skipped.get(r["name"], {}).items()
                    if lab not in drawn]
        out.append({"risk": r["name"], "utility": u["name"], "png": png, "n_points": len(points), "front": front,
                    "high": [p["label"] for p in points if p["high"]],
                    "risk_threshold": r["threshold"], "utility_threshold": u["threshold"],
                    "scenario": SCENARIOS.get(SCENARIO_OF.get(r["name"]) or "", ""), "left_off": left_off,
                    "rows": [{"label": p["label"], "risk": fmt(p["risk"]), "utility": fmt(p["utility"])}
                             for p in points]})
    return {"maps": out, "front": out[0]["front"] if out else [], "constant": constant, "note": None}


def _notes(meta: Mapping[str, Any], labels: list[str]) -> list[str]:
    """The comparison's notes, each once: skipped measures grouped by reason (results saved
    before grouping noted each release apart)."""
    from ppdm.experiments.compare import skip_notes

    general = [n for n in meta.get("notes") or [] if not str(n).startswith(("measure '", "measures '"))]
    return list(dict.fromkeys([*general, *skip_notes(meta.get("skipped") or [], labels)]))


def _corr_colour(v: float) -> str:
    """A correlation's cell colour: blue for negative, red for positive, white at 0."""
    if not math.isfinite(v):
        return ""
    a = min(1.0, abs(v))
    r, g, b = (198, 40, 40) if v > 0 else (31, 95, 153)
    return f"background: rgba({r}, {g}, {b}, {0.75 * a:.2f}); color: {'#fff' if a > 0.6 else '#222'}"


def render_html(
    result: Any,
    *,
    title: str = "ppdm comparison",
    dataset_info: Mapping[str, Any] | None = None,
    correlation_method: str = "pearson",
    plots: bool = True,
    confidence: float = 0.95,
) -> str:
    """The comparison as one self-contained HTML page.

    It opens with one row per technique and parameter setting: its risk verdict and utility
    verdict (judged on the means as ``ppdm evaluate`` judges one release) and whether it is
    on the front of the risk–utility map; then the map, the notes (each once), and the
    mean ± sd table. Details (sweeps, correlations, parameters, measures, dataset) are folded.

    ``dataset_info`` (rows, columns, roles; see
    :func:`ppdm.experiments.compare.dataset_summary`) defaults to the summary stored in
    the result. ``plots=False`` leaves the images out (a faster, text-only page).
    ``confidence`` is the level of the interval a best release must clear
    (:func:`ppdm.experiments.compare.best_releases`).
    """
    from ppdm.experiments.compare import (
        NOT_APPLICABLE_NUMBERS,
        best_releases,
        correlation_matrix,
        not_applicable,
    )

    meta = result.meta
    summary = result.summary(confidence)
    measures = _measure_rows(result)
    labels = result.labels
    techniques = meta["techniques"]
    tech_of = {t["label"]: t["technique"] for t in techniques}
    best = best_releases(result, confidence)
    judged = comparison_verdicts(result, summary)
    maps = _maps(result, summary, measures, plots,
                 high=[v.label for v in judged if str(v.risk.get("status")).lower() == "high"])

    verdict_rows = []
    for v in judged:
        verdict_rows.append({
            "label": v.label, "baseline": v.baseline, "changes": v.changes_data,
            "front": v.label in maps["front"], "high": str(v.risk.get("status")).lower() == "high",
            "cells": [{"status": d["status"], "cls": status_class(d["status"]), "slug": status_slug(d["status"]),
                       "short": TechniqueVerdict.short(d), "sentence": d["sentence"]} for d in (v.risk, v.utility)],
        })

    means = summary.pivot(index="label", columns="measure", values="mean")
    stds = summary.pivot(index="label", columns="measure", values="std")
    na = not_applicable(meta)
    summary_rows = []
    for lab in labels:
        cells = []
        for m in measures:
            if (lab, m["name"]) in na:
                cells.append({"text": na[(lab, m["name"])], "best": False, "na": True})
                continue
            mu, sd = means.loc[lab, m["name"]], stds.loc[lab, m["name"]]
            text = fmt(mu) if not math.isfinite(float(sd)) else f"{fmt(mu)} ± {fmt(sd, 3)}"
            cells.append({"text": text, "best": best[m["name"]].label == lab, "na": False})
        summary_rows.append({"label": lab, "baseline": tech_of[lab] == "original", "cells": cells})
    best_rows = [{"measure": m["name"], "direction": m["direction"], "label": best[m["name"]].label,
                  "note": best[m["name"]].note} for m in measures]

    tech_rows = []
    for t in techniques:
        given = json.loads(t["params"])
        effective = t.get("effective_params")
        if effective is None:  # saved by an older version: only the given parameters are known
            effective = given
        tech_rows.append({"label": t["label"], "technique": t["technique"],
                          "params": _params_text(effective, given), "baseline": t["technique"] == "original",
                          "changes": t.get("changes_data")})

    # every swept numeric parameter: one figure of small multiples, the measures that change
    sweeps = []
    for param, series in sweep_series(techniques).items():
        used = [lab for ser in series for lab in ser["labels"]] + (["original"] if "original" in labels else [])
        drawn, flat = [], []
        for m in measures:
            vals = [float(means.loc[lab, m["name"]]) for lab in used]
            if not any(math.isfinite(v) for v in vals):
                continue
            if is_constant(vals):
                flat.append({"name": m["name"], "value": fmt(next(v for v in vals if math.isfinite(v)))})
            else:
                drawn.append((m["name"], m["direction_key"]))
        png = png_base64(sweep_grid(summary, drawn, param, series)) if plots and drawn else None
        sweeps.append({"param": param, "techniques": sorted({ser["technique"] for ser in series}),
                       "measures": [d[0] for d in drawn], "constant": flat, "png": png})

    corr = correlation_matrix(result, correlation_method)
    n_rows = int(((result.data["technique"] != "original")).sum() // max(1, len(result.measures)))
    corr_ctx: dict[str, Any] = {"method": correlation_method, "n_rows": n_rows, "table": [], "columns": []}
    if len(corr) >= 2 and n_rows >= 3:
        corr_ctx["columns"] = list(corr.columns)
        corr_ctx["table"] = [{"name": r, "cells": [{"text": fmt(v, 2), "style": _corr_colour(float(v))}
                                                   for v in corr.loc[r]]} for r in corr.index]

    protocol = {k: meta.get(k) for k in ("cv", "repeats", "random_state", "splitter")}
    dataset = _dataset(dataset_info if dataset_info is not None else meta.get("dataset")) or _dataset({})
    n_releases = sum(1 for t in techniques if t["technique"] != "original")
    unchanged = [t["label"] for t in techniques if t["technique"] != "original" and t.get("changes_data") is False]
    ctx = {
        "title": title,
        "version": _version(),
        "protocol": protocol,
        "notes": _notes(meta, labels),
        "confidence": confidence,
        "overview": {"n_releases": n_releases, "unchanged": unchanged,
                     "removed": list(meta.get("removed_identifiers") or []), "missing": meta.get("missing")},
        "dataset": dataset,
        "techniques": tech_rows,
        "measures": measures,
        "verdict_rows": verdict_rows,
        "summary_rows": summary_rows,
        "na_text": NOT_APPLICABLE_NUMBERS,
        "best_rows": best_rows,
        "maps": maps,
        "sweeps": sweeps,
        "correlation": corr_ctx,
        "provenance": meta.get("provenance"),
    }
    return _env().get_template("report.html").render(**ctx)


def write_html(text: str, path: str | Path) -> Path:
    """Write an HTML page atomically."""
    return atomic_write_text(path, text)


def write_evaluation_html(results: Mapping[str, Any], path: str | Path, **kwargs: Any) -> Path:
    """Render :func:`render_evaluation_html` and write it atomically (for ``ppdm evaluate --html``)."""
    return write_html(render_evaluation_html(results, **kwargs), path)
