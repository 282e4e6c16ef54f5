"""Self-contained HTML reports (plots embedded as base64 PNG) rendered with Jinja2.

:func:`render_html` presents a :class:`~ppdm.experiments.compare.ComparisonResult`:
dataset, techniques, the measures with their direction and meaning, the summary
table, per-measure and sweep plots and the correlation matrix of the measures.
:func:`render_evaluation_html` presents the measures of one (x, z) pair with their
per-rule / per-attribute detail tables. The same input gives the same text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from ppdm.data.io import atomic_write_text
from ppdm.metrics.base import MeasureResult
from ppdm.report.measure_info import describe_measure, direction_text
from ppdm.report.plots import (
    correlation_heatmap,
    measure_plot,
    png_base64,
    sweep_plot,
    sweep_series,
)


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
    if v is None:
        return "—"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return "—"
    return f"{f:.{digits}g}"


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


def _measure_rows(names: list[str], descriptions: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        desc = descriptions.get(name) or {}
        info = describe_measure(name, desc.get("description") if isinstance(desc, Mapping) else None)
        kind = (desc.get("kind") if isinstance(desc, Mapping) else None) or info.kind
        rows.append({"name": name, "kind": kind, "direction": direction_text(info.direction),
                     "direction_key": info.direction, "meaning": info.meaning})
    return rows


def render_html(
    result: Any,
    *,
    title: str = "ppdm comparison",
    dataset_info: Mapping[str, Any] | None = None,
    correlation_method: str = "pearson",
    plots: bool = True,
) -> str:
    """The comparison as one self-contained HTML page.

    ``dataset_info`` (rows, columns, roles; see
    :func:`ppdm.experiments.compare.dataset_summary`) defaults to the summary stored in
    the result. ``plots=False`` leaves the images out (a faster, text-only page).
    """
    from ppdm.experiments.compare import correlation_matrix

    meta = result.meta
    summary = result.summary()
    measures = _measure_rows(result.measures, meta.get("measure_info", {}))
    labels = result.labels
    techniques = meta["techniques"]
    tech_of = {t["label"]: t["technique"] for t in techniques}

    # summary table with the best non-baseline technique per measure marked
    means = summary.pivot(index="label", columns="measure", values="mean")
    stds = summary.pivot(index="label", columns="measure", values="std")
    best: dict[str, str | None] = {}
    for m in measures:
        cand = means.loc[[lab for lab in labels if tech_of[lab] != "original"], m["name"]].dropna()
        if m["direction_key"] not in ("higher", "lower") or cand.empty or cand.nunique() < 2:
            best[m["name"]] = None
        else:
            best[m["name"]] = str(cand.idxmax() if m["direction_key"] == "higher" else cand.idxmin())
    summary_rows = []
    for lab in labels:
        cells = []
        for m in measures:
            mu, sd = means.loc[lab, m["name"]], stds.loc[lab, m["name"]]
            text = fmt(mu) if not math.isfinite(float(sd)) else f"{fmt(mu)} ± {fmt(sd, 3)}"
            cells.append({"text": text, "best": best[m["name"]] == lab})
        summary_rows.append({"label": lab, "baseline": tech_of[lab] == "original", "cells": cells})

    measure_plots, sweep_plots = [], []
    if plots:
        for m in measures:
            measure_plots.append({"measure": m["name"], "direction": m["direction"],
                                  "png": png_base64(measure_plot(summary, m["name"], order=labels))})
        for param, series in sweep_series(techniques).items():
            for m in measures:
                sweep_plots.append({"measure": m["name"], "param": param,
                                    "png": png_base64(sweep_plot(summary, m["name"], param, series))})

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
    ctx = {
        "title": title,
        "version": _version(),
        "protocol": protocol,
        "dataset": _dataset(dataset_info if dataset_info is not None else meta.get("dataset")) or _dataset({}),
        "techniques": techniques,
        "measures": measures,
        "summary_rows": summary_rows,
        "measure_plots": measure_plots,
        "sweep_plots": sweep_plots,
        "correlation": corr_ctx,
        "provenance": meta.get("provenance"),
    }
    return _env().get_template("report.html").render(**ctx)


def _detail_html(df: pd.DataFrame, max_rows: int) -> str:
    shown = df.head(max_rows)
    return shown.to_html(index=not isinstance(shown.index, pd.RangeIndex), border=0, classes="detail",
                         na_rep="—", float_format=lambda v: fmt(v, 6), escape=True)


def render_evaluation_html(
    results: Mapping[str, MeasureResult],
    *,
    title: str = "ppdm evaluation",
    dataset_info: Mapping[str, Any] | None = None,
    subtitle: str | None = None,
    max_detail_rows: int = 200,
    provenance: Mapping[str, Any] | None = None,
) -> str:
    """The measures of one (x, z) pair as a self-contained HTML page.

    ``results`` maps measure names to their :class:`MeasureResult`; each result's
    :meth:`~MeasureResult.details` tables (per rule, per attribute...) are shown, at most
    ``max_detail_rows`` rows each, and its other scalar fields listed. ``subtitle`` can name
    the files and technique compared; ``provenance`` (z's provenance record,
    :mod:`ppdm.data.provenance`) is shown when given.
    """
    measures = []
    for name, res in results.items():
        row = _measure_rows([name], {})[0]
        row["value"] = fmt(getattr(res, "value", None), 6)
        scalars: list[tuple[str, str]] = []
        details: list[dict[str, Any]] = []
        if isinstance(res, MeasureResult):
            for k, v in vars(res).items():
                if k == "value" or isinstance(v, pd.DataFrame):
                    continue
                if isinstance(v, (int, float, str, bool, np.generic)) or v is None:
                    scalars.append((k, fmt(v, 6) if not isinstance(v, str) else v))
            for dname, df in res.details().items():
                details.append({"name": dname, "rows": len(df), "shown": min(len(df), max_detail_rows),
                                "truncated": len(df) > max_detail_rows,
                                "html": Markup(_detail_html(df, max_detail_rows))})
        row["scalars"] = scalars
        row["details"] = details
        measures.append(row)
    ctx = {"title": title, "version": _version(), "subtitle": subtitle, "dataset": _dataset(dataset_info),
           "measures": measures, "provenance": provenance}
    return _env().get_template("evaluation.html").render(**ctx)


def write_html(text: str, path: str | Path) -> Path:
    """Write an HTML page atomically."""
    return atomic_write_text(path, text)


def write_evaluation_html(results: Mapping[str, MeasureResult], path: str | Path, **kwargs: Any) -> Path:
    """Render :func:`render_evaluation_html` and write it atomically (for ``ppdm evaluate --html``)."""
    return write_html(render_evaluation_html(results, **kwargs), path)
