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
from ppdm.report.evaluation import evaluation_document, fmt_number
from ppdm.report.plots import (
    correlation_heatmap,
    direction_text,
    measure_plot,
    png_base64,
    risk_utility_plot,
    sweep_plot,
    sweep_series,
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


def fmt(v: Any, digits: int = 4) -> str:
    """A number for a table: ``digits`` significant digits; missing values as a dash."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return fmt_number(v, digits)


def _range_text(rng: Sequence[Any] | None) -> str:
    lo, hi = (list(rng) + [None, None])[:2] if rng else (None, None)
    if lo is None and hi is None:
        return "unbounded"
    return f"{'−∞' if lo is None else fmt(lo)} to {'∞' if hi is None else fmt(hi)}"


def _threshold_text(direction: str | None, threshold: Any) -> str:
    if threshold is None or direction not in ("higher", "lower"):
        return "—"
    return f"{'≤' if direction == 'lower' else '≥'} {fmt(threshold)}"


def _plain_value(v: Any) -> str:
    """A provenance or parameter value as short text."""
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={_plain_value(x)}" for k, x in v.items()) or "none"
    if isinstance(v, (list, tuple)):
        return ", ".join(_plain_value(x) for x in v) or "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return fmt(v, 6)
    return "—" if v is None else str(v)


def _dataset(info: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if info is None:
        return None
    d = {"name": None, "rows": "—", "columns": "—", "numeric": [], "categorical": [], "class_column": None,
         "class_counts": {}}
    d.update(dict(info))
    d["numeric"] = list(d.get("numeric") or [])
    d["categorical"] = list(d.get("categorical") or [])
    d["class_counts"] = dict(d.get("class_counts") or {})
    return d


# ------------------------------------------------------------------ detail tables
_GROUPED = re.compile(r"^(.+)\[(.+)\]$")


def _grouped_columns(columns: list[str]) -> tuple[list[str], dict[str, list[tuple[int, str]]]]:
    """Columns shown as they are, and ``prefix[key]`` columns (e.g. class counts per class)
    gathered into one text column per prefix, so wide tables stay readable."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for j, c in enumerate(columns):
        m = _GROUPED.match(c)
        if m:
            groups.setdefault(m.group(1), []).append((j, m.group(2)))
    groups = {k: v for k, v in groups.items() if len(v) > 1}
    grouped = {j for v in groups.values() for j, _ in v}
    shown = [c for j, c in enumerate(columns) if j not in grouped]
    return shown, groups


def _html_table(table: Mapping[str, Any], max_rows: int) -> dict[str, Any]:
    """A JSON detail table (``columns``, ``rows``) as header and cell texts for the template."""
    columns = list(table["columns"])
    rows = list(table["rows"])
    shown, groups = _grouped_columns(columns)
    index = {c: j for j, c in enumerate(columns)}
    # headers wrap at the underscores of column names; long texts (rules) get room to breathe
    header = [c.replace("_", " ") for c in shown] + [f"{prefix.replace('_', ' ')}[…]" for prefix in groups]
    body = []
    for r in rows[:max_rows]:
        cells = []
        for c in shown:
            v = r[index[c]]
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            cells.append({"text": fmt(v, 6) if numeric else _plain_value(v), "num": numeric})
        for items in groups.values():
            cells.append({"text": ", ".join(f"{k}: {fmt(r[j], 6)}" for j, k in items), "num": False})
        body.append(cells)
    n_cols = len(header)
    long_cols = {j for j in range(n_cols) if any(len(row[j]["text"]) > 40 for row in body)}
    for row in body:
        for j, cell in enumerate(row):
            cell["cls"] = "num" if cell["num"] else ("long" if j in long_cols else "")
    return {"header": header, "rows": body, "n_rows": len(rows), "shown": min(len(rows), max_rows),
            "truncated": len(rows) > max_rows}


# ---------------------------------------------------------------- evaluation page
def _released(provenance: Mapping[str, Any] | None, inputs: Mapping[str, Any],
              private: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What was released, as sentence and rows, from the provenance sidecar when there is one
    (and from the owner's private log when the evaluation was given it)."""
    z = inputs.get("anonymized") or {}
    x = inputs.get("original") or {}
    size = (f"{z.get('rows', '—')} rows × {z.get('columns', '—')} columns" if z else "")
    if provenance is None:
        sentence = (f"The release {z.get('source', 'z')} ({size}) has no provenance file beside it, so the "
                    "technique and parameters that made it are not known to this report.")
        return {"sentence": sentence, "rows": [], "known": False}
    tech = provenance.get("technique") or {}
    name = tech.get("name") if isinstance(tech, Mapping) else str(tech)
    params = tech.get("parameters") if isinstance(tech, Mapping) else None
    src = provenance.get("input") or (private or {}).get("input") or {}
    seeded = provenance.get("seeded")
    sentence = (f"{z.get('source', 'z')} ({size}) was released by {name or 'an unnamed technique'}"
                + (f" with {_plain_value(params)}" if params else "")
                + (f" from {src.get('source')}" if isinstance(src, Mapping) and src.get("source") else "")
                + ("" if seeded is None else (", with a fixed seed" if seeded else ", seeded from the system"))
                + ".")
    rows = []
    if isinstance(tech, Mapping):
        rows.append(("technique", f"{tech.get('name', '—')} ({tech.get('class', '—')})"))
        rows.append(("parameters", _plain_value(tech.get("parameters") or {})))
    else:
        rows.append(("technique", _plain_value(tech)))
    if isinstance(src, Mapping) and src:
        rows.append(("input", _plain_value({k: v for k, v in src.items()})))
    for key in ("seeded", "created", "ppdm_version", "removed_identifiers", "release_check", "privacy"):
        if key in provenance:
            rows.append((key.replace("_", " "), _plain_value(provenance[key])))
        elif key == "release_check" and private and private.get("release_check") is not None:
            rows.append(("release check (private log)", _plain_value(private["release_check"])))
    shown = {"technique", "input", "seeded", "created", "ppdm_version", "removed_identifiers", "release_check",
             "privacy", "schema", "format", "version"}
    for key, v in provenance.items():
        if key not in shown:
            rows.append((key.replace("_", " "), _plain_value(v)))
    if x:
        rows.append(("compared with", f"{x.get('source', 'x')} ({x.get('rows', '—')} rows)"))
    return {"sentence": sentence, "rows": rows, "known": True}


def _provenance_view(provenance: Mapping[str, Any] | None,
                     private: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The public provenance, with the input and release check of the private log when the
    evaluation was given it (never its pairing)."""
    if provenance is None or not private:
        return provenance
    view = dict(provenance)
    for key in ("input", "release_check"):
        if private.get(key) is not None:
            view[key] = private[key]
    return view


def _evaluation_context(doc: Mapping[str, Any], *, title: str, subtitle: str | None,
                        dataset_info: Mapping[str, Any] | None, max_detail_rows: int) -> dict[str, Any]:
    measures_doc: Mapping[str, Any] = doc["measures"]
    tables: Mapping[str, Any] = doc.get("tables") or {}
    users: dict[str, list[str]] = {}
    for name, m in measures_doc.items():
        for t in m.get("tables") or []:
            users.setdefault(t, []).append(name)
    shared = [t for t, names in users.items() if len(names) > 1]
    judged = {j["measure"]: j for v in (doc.get("summary") or {}).values() for j in v.get("judged", [])}
    measures = []
    for name, m in measures_doc.items():
        status = "skipped" if m.get("status") == "skipped" else (
            ("meets" if judged[name]["meets"] else "misses") if name in judged else "shown")
        measures.append({
            "name": name,
            "anchor": re.sub(r"[^A-Za-z0-9_-]", "-", name),
            "kind": m.get("kind") or "—",
            "value": fmt(m.get("value"), 6),
            "skipped": m.get("status") == "skipped",
            "reason": m.get("reason"),
            "direction": direction_text(m.get("direction")),
            "range": _range_text(m.get("range")),
            "threshold": _threshold_text(m.get("direction"), m.get("threshold")),
            "status": status,
            "meaning": m.get("meaning") or "",
            "description": m.get("description") or "",
            "scalars": [(k, fmt(v, 6) if not isinstance(v, str) else v) for k, v in (m.get("details") or {}).items()],
            "tables": [{"name": t, **_html_table(tables[t], max_detail_rows)} for t in m.get("tables") or []
                       if t not in shared and t in tables],
            "shared": [{"name": t, "anchor": "t-" + re.sub(r"[^A-Za-z0-9_-]", "-", t)}
                       for t in m.get("tables") or [] if t in shared],
        })
    shared_tables = [{"name": t, "anchor": "t-" + re.sub(r"[^A-Za-z0-9_-]", "-", t), "users": users[t],
                      **_html_table(tables[t], max_detail_rows)} for t in shared if t in tables]
    summary = doc.get("summary") or {}
    inputs = doc.get("inputs") or {}
    return {
        "title": title,
        "version": doc.get("ppdm_version") or _version(),
        "subtitle": subtitle,
        "released": _released(doc.get("provenance"), inputs, doc.get("private")),
        "provenance": _provenance_view(doc.get("provenance"), doc.get("private")),
        "verdicts": [{"topic": k, **summary[k]} for k in ("risk", "utility") if k in summary],
        "dataset": _dataset(dataset_info if dataset_info is not None else doc.get("dataset")),
        "measures": measures,
        "shared_tables": shared_tables,
        "options": inputs.get("options") or {},
    }


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
    from ppdm.experiments.compare import measure_info

    rows = []
    for name in result.measures:
        info = measure_info(result, name)
        rows.append({"name": name, "kind": info["kind"], "direction": direction_text(info["direction"]),
                     "direction_key": info["direction"], "range": _range_text(info["range"]),
                     "meaning": info["meaning"] or info["description"], "description": info["description"]})
    return rows


def _params_text(params: Mapping[str, Any], given: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"text": f"{k}={json.dumps(v, default=str)}", "given": k in given} for k, v in params.items()]


def _maps(result: Any, summary: pd.DataFrame, measures: list[dict[str, Any]], plots: bool) -> dict[str, Any]:
    """The risk–utility maps: each risk measure with a direction against the first utility
    measure with one (the order of ``--measures``)."""
    finite = set(summary.loc[np.isfinite(summary["mean"].to_numpy(dtype=float)), "measure"])
    # risk measures that were computed somewhere (a table without categorical keys skips the
    # key-variable ones), in --measures order
    risk = [m for m in measures if m["kind"] == "risk" and m["direction_key"] in ("higher", "lower")
            and m["name"] in finite][:MAX_MAPS]
    utility = next((m for m in measures if m["kind"] == "utility" and m["direction_key"] in ("higher", "lower")),
                   None)
    if not risk or utility is None:
        missing = "risk measure (e.g. ddr, idr)" if not risk else "utility measure with a direction"
        return {"maps": [], "note": f"No risk–utility map: the comparison has no {missing}; "
                                    "name one with --measures."}
    techniques = {t["label"]: t for t in result.meta["techniques"]}
    cell = summary.set_index(["label", "measure"])
    out = []
    for r in risk:
        points = []
        for label in result.labels:
            a, b = cell.loc[(label, r["name"])], cell.loc[(label, utility["name"])]
            if not (math.isfinite(float(a["mean"])) and math.isfinite(float(b["mean"]))):
                continue
            points.append({"label": label, "risk": float(a["mean"]), "utility": float(b["mean"]),
                           "risk_ci": float(a["ci_high"] - a["mean"]), "utility_ci": float(b["ci_high"] - b["mean"]),
                           "baseline": techniques[label]["technique"] == "original"})
        png = None
        if plots and points:
            png = png_base64(risk_utility_plot(points, risk=r["name"], risk_direction=r["direction_key"],
                                               utility=utility["name"], utility_direction=utility["direction_key"]))
        out.append({"risk": r["name"], "utility": utility["name"], "png": png, "n_points": len(points),
                    "rows": [{"label": p["label"], "risk": fmt(p["risk"]), "utility": fmt(p["utility"])}
                             for p in points]})
    return {"maps": out, "note": None}


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

    ``dataset_info`` (rows, columns, roles; see
    :func:`ppdm.experiments.compare.dataset_summary`) defaults to the summary stored in
    the result. ``plots=False`` leaves the images out (a faster, text-only page).
    ``confidence`` is the level of the interval a best release must clear
    (:func:`ppdm.experiments.compare.best_releases`).
    """
    from ppdm.experiments.compare import best_releases, correlation_matrix

    meta = result.meta
    summary = result.summary(confidence)
    measures = _measure_rows(result)
    labels = result.labels
    techniques = meta["techniques"]
    tech_of = {t["label"]: t["technique"] for t in techniques}
    best = best_releases(result, confidence)

    means = summary.pivot(index="label", columns="measure", values="mean")
    stds = summary.pivot(index="label", columns="measure", values="std")
    summary_rows = []
    for lab in labels:
        cells = []
        for m in measures:
            mu, sd = means.loc[lab, m["name"]], stds.loc[lab, m["name"]]
            text = fmt(mu) if not math.isfinite(float(sd)) else f"{fmt(mu)} ± {fmt(sd, 3)}"
            cells.append({"text": text, "best": best[m["name"]].label == lab})
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

    measure_plots, sweep_plots = [], []
    if plots:
        for m in measures:
            measure_plots.append({"measure": m["name"], "direction": m["direction"],
                                  "png": png_base64(measure_plot(summary, m["name"], order=labels,
                                                                 direction=m["direction_key"]))})
        for param, series in sweep_series(techniques).items():
            for m in measures:
                sweep_plots.append({"measure": m["name"], "param": param,
                                    "png": png_base64(sweep_plot(summary, m["name"], param, series,
                                                                 direction=m["direction_key"]))})

    corr = correlation_matrix(result, correlation_method)
    n_rows = int(((result.data["technique"] != "original")).sum() // max(1, len(result.measures)))
    corr_ctx: dict[str, Any] = {"method": correlation_method, "n_rows": n_rows, "table": [], "columns": [],
                                "png": None}
    if len(corr) >= 2 and n_rows >= 3:
        corr_ctx["columns"] = list(corr.columns)
        corr_ctx["table"] = [{"name": r, "cells": [fmt(v, 3) for v in corr.loc[r]]} for r in corr.index]
        if plots:
            corr_ctx["png"] = png_base64(correlation_heatmap(corr))

    protocol = {k: meta.get(k) for k in ("cv", "repeats", "random_state", "splitter")}
    protocol["notes"] = list(meta.get("notes") or [])
    dataset = _dataset(dataset_info if dataset_info is not None else meta.get("dataset")) or _dataset({})
    n_releases = sum(1 for t in techniques if t["technique"] != "original")
    unchanged = [t["label"] for t in techniques if t["technique"] != "original" and t.get("changes_data") is False]
    ctx = {
        "title": title,
        "version": _version(),
        "protocol": protocol,
        "confidence": confidence,
        "overview": {"n_releases": n_releases, "unchanged": unchanged},
        "dataset": dataset,
        "techniques": tech_rows,
        "measures": measures,
        "summary_rows": summary_rows,
        "best_rows": best_rows,
        "maps": _maps(result, summary, measures, plots),
        "measure_plots": measure_plots,
        "sweep_plots": sweep_plots,
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
