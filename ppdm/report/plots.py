"""Plots of comparison results as PNG (matplotlib's Agg canvas, no display needed).

Figures are built on :class:`matplotlib.figure.Figure` directly (not pyplot), so
nothing global is touched and the output is byte-identical for the same input:
PNG metadata that would carry a version or a time is dropped.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ppdm.data.io import save_figure

_DPI = 96

__all__ = ["save_figure", "figure_png", "png_base64", "measure_plot", "sweep_series", "sweep_plot", "sweep_grid",
           "sweep_figure", "risk_utility_figure",
           "correlation_heatmap", "risk_utility_plot", "direction_text", "is_constant", "plain_axes"]


def is_constant(values: Sequence[float] | np.ndarray, rtol: float = 1e-9) -> bool:
    """Whether the finite ``values`` are all the same (or fewer than two): a measure that does
    not change across the points of a plot is said in words, not drawn."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return True
    return bool(np.ptp(v) <= rtol * max(1.0, float(np.max(np.abs(v)))))


def plain_axes(ax: Any) -> None:
    """Tick labels as the values themselves: no offset ("+1" beside the axis, values printed
    as their difference from it), which a reader cannot be expected to add back."""
    for axis in (ax.xaxis, ax.yaxis):
        fmt = axis.get_major_formatter()
        if hasattr(fmt, "set_useOffset"):
            fmt.set_useOffset(False)


def direction_text(direction: str | None) -> str:
    """How a reader should read a measure's value: which direction is better."""
    return {"higher": "higher is better", "lower": "lower is better"}.get(direction or "",
                                                                          "neither direction is better")


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes without metadata (so the bytes depend on the content only)."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None}, bbox_inches="tight")
    return buf.getvalue()


def png_base64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def measure_plot(summary: pd.DataFrame, measure: str, *, order: Sequence[str] | None = None,
                 direction: str | None = None) -> bytes:
    """Mean ± standard deviation of one measure for every technique (a point plot, one row per label).

    ``summary`` is :meth:`ComparisonResult.summary`; the baseline is drawn in grey.
    """
    s = summary[summary["measure"] == measure].set_index("label")
    labels = list(order) if order is not None else list(s.index)
    s = s.loc[[lab for lab in labels if lab in s.index]]
    n = len(s)
    fig = Figure(figsize=(6.4, max(1.6, 0.32 * n + 1.0)))
    ax = fig.add_subplot()
    ypos = np.arange(n)[::-1]
    means = s["mean"].to_numpy(dtype=float)
    stds = np.nan_to_num(s["std"].to_numpy(dtype=float))
    colors = ["#888888" if t == "original" else "#1f77b4" for t in s["technique"]]
    ax.barh(ypos, means, color=colors, alpha=0.35, height=0.6)
    ax.errorbar(means, ypos, xerr=stds, fmt="none", ecolor="black", capsize=3, lw=1)
    ax.scatter(means, ypos, color=colors, zorder=3, s=18)
    ax.set_yticks(ypos, labels=list(s.index))
    ax.set_xlabel(f"{measure} (mean ± sd; {direction_text(direction)})")
    ax.grid(axis="x", alpha=0.3)
    plain_axes(ax)
    return figure_png(fig)


def sweep_series(meta_techniques: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Find parameter sweeps among the compared techniques.

    Returns ``{param: [series, ...]}`` where a series is one technique (and one setting of its
    other varying parameters) over several numeric values of ``param``:
    ``{"technique", "fixed", "labels", "values"}``.
    """
    by_name: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for t in meta_techniques:
        if t["technique"] == "original":
            continue
        by_name.setdefault(t["technique"], []).append((t["label"], json.loads(t["params"])))
    out: dict[str, list[dict[str, Any]]] = {}
    for name, items in by_name.items():
        if len(items) < 2:
            continue
        keys = sorted({k for _, p in items for k in p})
        varying = [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for _, p in items}) > 1]
        for k in varying:
            if not all(isinstance(p.get(k), (int, float)) and not isinstance(p.get(k), bool) for _, p in items):
                continue
            groups: dict[str, list[tuple[float, str]]] = {}
            fixed_of: dict[str, dict[str, Any]] = {}
            for label, p in items:
                fixed = {o: p.get(o) for o in varying if o != k}
                key = json.dumps(fixed, sort_keys=True)
                groups.setdefault(key, []).append((float(p[k]), label))
                fixed_of[key] = fixed
            for key, pts in groups.items():
                if len(pts) < 2:
                    continue
                pts.sort()
                out.setdefault(k, []).append({"technique": name, "fixed": fixed_of[key],
                                              "values": [v for v, _ in pts], "labels": [lab for _, lab in pts]})
    return out


def sweep_plot(summary: pd.DataFrame, measure: str, param: str, series: Sequence[dict[str, Any]],
               direction: str | None = None) -> bytes:
    """Mean ± sd of ``measure`` against the swept ``param``: one line per series; the original
    table's value as a dashed line."""
    s = summary[summary["measure"] == measure].set_index("label")
    fig = Figure(figsize=(6.4, 3.6))
    ax = fig.add_subplot()
    for ser in series:
        means = s.loc[ser["labels"], "mean"].to_numpy(dtype=float)
        stds = np.nan_to_num(s.loc[ser["labels"], "std"].to_numpy(dtype=float))
        name = ser["technique"]
        if ser["fixed"]:
            name += " (" + ", ".join(f"{k}={v}" for k, v in ser["fixed"].items()) + ")"
        ax.errorbar(ser["values"], means, yerr=stds, marker="o", ms=4, capsize=3, lw=1.2, label=name)
    if "original" in s.index and math.isfinite(float(s.loc["original", "mean"])):  # type: ignore[arg-type]  # pandas-stubs: a cell of the means table is a number
        ax.axhline(float(s.loc["original", "mean"]), color="#888888", ls="--", lw=1, label="original")  # type: ignore[arg-type]  # pandas-stubs: a cell of the means table is a number
    ax.set_xlabel(param)
    ax.set_ylabel(measure)
    ax.set_title(f"{measure} vs {param} ({direction_text(direction)})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    plain_axes(ax)
    return figure_png(fig)


def sweep_grid(summary: pd.DataFrame, measures: Sequence[tuple[str, str | None]], param: str,
               series: Sequence[dict[str, Any]], *, columns: int = 4) -> bytes:
    """:func:`sweep_figure` as PNG bytes."""
    return figure_png(sweep_figure(summary, measures, param, series, columns=columns))


def sweep_figure(summary: pd.DataFrame, measures: Sequence[tuple[str, str | None]], param: str,
                 series: Sequence[dict[str, Any]], *, columns: int = 4) -> Figure:
    """Every measure against the swept ``param`` as small multiples in one figure (the layout
    of paper 000 Figure 4): one panel per ``(measure, direction)``, mean ± sd of each series,
    the original table's value dashed. The caller leaves out measures that are constant."""
    n = len(measures)
    cols = max(1, min(columns, n))
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(3.0 * cols + 0.4, 2.3 * rows + 0.6))
    s = summary.set_index(["label", "measure"])
    handles: dict[str, Any] = {}
    for k, (measure, direction) in enumerate(measures):
        ax = fig.add_subplot(rows, cols, k + 1)
        for j, ser in enumerate(series):
            means = np.array([float(s.loc[(lab, measure), "mean"]) for lab in ser["labels"]])
            stds = np.nan_to_num(np.array([float(s.loc[(lab, measure), "std"]) for lab in ser["labels"]]))
            name = ser["technique"] + (" (" + ", ".join(f"{a}={b}" for a, b in ser["fixed"].items()) + ")"
                                       if ser["fixed"] else "")
            h = ax.errorbar(ser["values"], means, yerr=stds, marker="o", ms=3, capsize=2, lw=1.1, color=f"C{j % 10}")
            handles.setdefault(name, h)
        if ("original", measure) in s.index and math.isfinite(float(s.loc[("original", measure), "mean"])):  # type: ignore[arg-type]  # pandas-stubs: a cell of the means table is a number
            handles.setdefault("original", ax.axhline(float(s.loc[("original", measure), "mean"]), color="#888888",  # type: ignore[arg-type]  # pandas-stubs: a cell of the means table is a number
                                                      ls="--", lw=1))
        better = {"higher": " (higher better)", "lower": " (lower better)"}.get(direction or "", "")
        ax.set_title(measure + better, fontsize=8.5)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.set_xlabel(param, fontsize=7.5)
        plain_axes(ax)
    fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=min(4, len(handles)), fontsize=8,
               frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.93 if rows > 1 else 0.86))
    return fig


def correlation_heatmap(corr: pd.DataFrame, *, title: str = "") -> bytes:
    """A heat map of a measure × measure correlation matrix, each cell annotated."""
    n = len(corr)
    size = max(3.2, 0.75 * n + 1.6)
    fig = Figure(figsize=(size + 0.8, size))
    ax = fig.add_subplot()
    vals = corr.to_numpy(dtype=float)
    im = ax.imshow(np.ma.masked_invalid(vals), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(n), labels=list(corr.columns), rotation=45, ha="right")
    ax.set_yticks(range(n), labels=list(corr.index))
    for i in range(n):
        for j in range(n):
            v = vals[i, j]
            ax.text(j, i, "—" if not math.isfinite(v) else f"{v:.2f}", ha="center", va="center",
                    fontsize=8, color="white" if math.isfinite(v) and abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if title:
        ax.set_title(title, fontsize=10)
    return figure_png(fig)


def risk_utility_plot(points: Sequence[dict[str, Any]], *, risk: str, risk_direction: str, utility: str,
                      utility_direction: str, front: Sequence[str] = (), risk_threshold: float | None = None,
                      utility_threshold: float | None = None, utility_unit: str | None = None) -> bytes:
    """:func:`risk_utility_figure` as PNG bytes."""
    return figure_png(risk_utility_figure(points, risk=risk, risk_direction=risk_direction, utility=utility,
                                          utility_direction=utility_direction, front=front,
                                          risk_threshold=risk_threshold, utility_threshold=utility_threshold,
                                          utility_unit=utility_unit))


def risk_utility_figure(points: Sequence[dict[str, Any]], *, risk: str, risk_direction: str, utility: str,
                        utility_direction: str, front: Sequence[str] = (), risk_threshold: float | None = None,
                        utility_threshold: float | None = None, utility_unit: str | None = None) -> Figure:
    """The risk–utility map: one point per release, disclosure risk across, utility loss up.

    ``points`` hold ``label``, ``risk`` and ``utility`` (means) with ``risk_ci`` and
    ``utility_ci`` (half-widths of their confidence intervals, drawn as error bars) and
    ``baseline`` (drawn in grey). An axis whose measure is better when higher is reversed,
    so that right always means more risk and up always means more utility lost: the lower
    left corner is the place to be. The releases named in ``front`` (those no other beats on
    both axes) are joined by a dashed line, in that order. A point with ``high`` (its risk is
    judged high) is drawn hollow and grey, labelled so: it is never on the front. The
    thresholds of the judged measures (``risk_threshold``, ``utility_threshold``) are drawn as
    dotted lines; ``utility_unit`` goes into the utility axis label. Tick labels carry no offset.
    """
    fig = Figure(figsize=(9.6, 5.2))
    ax = fig.add_subplot()
    for k, pt in enumerate(points):
        greyed = bool(pt.get("high"))
        color = "#888888" if pt.get("baseline") else "#bbbbbb" if greyed else f"C{k % 10}"
        xerr = pt.get("risk_ci")
        yerr = pt.get("utility_ci")
        ax.errorbar([pt["risk"]], [pt["utility"]],
                    xerr=None if xerr is None or not math.isfinite(xerr) else [[xerr], [xerr]],
                    yerr=None if yerr is None or not math.isfinite(yerr) else [[yerr], [yerr]],
                    fmt="o", ms=6, color=color, ecolor=color, elinewidth=1, capsize=3,
                    mfc="none" if greyed else color,
                    label=pt["label"] + (" (risk judged high: not on the front)" if greyed else ""), zorder=3)
    if risk_threshold is not None and math.isfinite(float(risk_threshold)):
        ax.axvline(float(risk_threshold), ls=":", lw=1.2, color="#c62828", zorder=1,
                   label=f"{risk} threshold {float(risk_threshold):g}")
    if utility_threshold is not None and math.isfinite(float(utility_threshold)):
        ax.axhline(float(utility_threshold), ls=":", lw=1.2, color="#1565c0", zorder=1,
                   label=f"{utility} threshold {float(utility_threshold):g}")
    at = {pt["label"]: (pt["risk"], pt["utility"]) for pt in points}
    line = [at[lab] for lab in front if lab in at]
    if len(line) >= 2:
        ax.plot([p[0] for p in line], [p[1] for p in line], ls="--", lw=1, color="#444444", zorder=2,
                label="front (no release beats these on both)")
    if risk_direction == "higher":
        ax.invert_xaxis()
    if utility_direction == "higher":
        ax.invert_yaxis()
    ax.set_xlabel(f"{risk} — disclosure risk, more to the right ({direction_text(risk_direction)})")
    unit = f" ({utility_unit})" if utility_unit else ""
    ax.set_ylabel(f"{utility}{unit} — utility lost, more upwards\n({direction_text(utility_direction)})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    plain_axes(ax)
    return fig
