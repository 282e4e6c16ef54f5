"""The outcome of a policy search as a JSON document and as an HTML page.

:func:`recommendation_document` turns a :class:`~ppdm.experiments.recommend.RecommendResult`
into the document ``ppdm recommend --json`` prints (format ``ppdm.recommendation``, layout in
``docs/ppdm.schema.json``); :func:`render_recommendation_html` renders the report from that
document, so both show the same numbers. The page opens with the answer (the recommended
release and why it won, or the policy lines no release met and how close the best came),
then the front on the risk–utility map, the policy line by line, each technique family
with the line that rejected it, and every trial.

Only aggregates enter: measure values with their intervals, parameters, timings and the
techniques' error messages, never a record of the table or of a release.

The winner's settings in the data's units (:mod:`ppdm.report._recommend_units`) live in a
private module; every name of it is importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ppdm.experiments.recommend import skipped_line
from ppdm.report._recommend_units import (  # noqa: F401  (re-exported: the public path stays this module)
    MOST_LABELS,
    _is_number,
    _labels,
    _noise_in_data_units,
    _reach,
    _recode_in_data_units,
    _share,
    _step_in_data_units,
    _value,
    winner_in_data_units,
)
from ppdm.report.evaluation import fmt_number, json_header

# ------------------------------------------------------------------------- document


def recommendation_document(result: Any, *, inputs: Mapping[str, Any] | None = None,
                            written: Sequence[str | Path] | None = None) -> dict[str, Any]:
    """The JSON document of a policy search (see the module docstring).

    ``inputs`` describes the input (source, class column, ...); ``written`` names the files of
    the recommended release once saved.
    """
    from ppdm.metrics.base import _jsonable

    pol = result.policy
    trials = [t.to_dict() for t in result.trials]
    doc: dict[str, Any] = {
        **json_header("recommendation"),
        "outcome": "met" if result.release is not None else "unmet",
        "summary": "",
        "policy": {**pol.to_dict(), "lines": pol.lines_text(), "utility_text": pol.utility_text(),
                   "sha256": pol.sha256(), "source": pol.source},
        "inputs": _jsonable(dict(inputs or {})),
        "split": _jsonable(dict(result.split)),
        # the study file holds the seed of the hold-out split: the owner's, like the control split
        "study": _jsonable({**dict(result.study), "private": True}),
        "search_space": _jsonable(dict(result.spaces)),
        "left_out": dict(result.left_out),
        "reference": result.reference.to_dict() if result.reference is not None else None,
        "trials": _jsonable(trials),
        "feasible": [t.number for t in result.feasible],
        "front": [t.number for t in result.front],
        "winner": result.winner.number if result.winner is not None else None,
        "chosen": result.chosen.number if result.chosen is not None else None,
        "why": [],
        "families": [],
        "release": None,
        "unmet": _jsonable(result.unmet) if result.unmet is not None else None,
        "notes": list(result.notes),
    }
    if result.release is not None:
        rel = result.release
        v = result.verification
        doc["release"] = _jsonable({
            "refit": bool(result.refit),
            "rows": int(len(rel.data)),
            "columns": int(rel.data.shape[1]),
            "technique": result.chosen.technique if result.chosen else None,
            "params": result.chosen.params if result.chosen else None,
            # a differentially private winner was judged by noisy scores: "utility" is what was measured on
            # it (for the owner), "scored_utility" what the choice read, never one shown as the other
            "measured": None if v is None else {"lines": [ln.to_dict() for ln in v.lines],
                                                "utility": v.utility if v.measured_utility is None
                                                else v.measured_utility,
                                                "scored_utility": None if v.measured_utility is None else v.utility,
                                                "risk": v.risk, "utility_loss": v.utility_loss,
                                                "on": "the training-split release of the same settings (trial "
                                                      f"{v.number})" if result.refit else "this release"},
            "check": {"share_verbatim": float(rel.check.share_verbatim),
                      "summary": list(rel.check.summary_lines())},
            "warnings": list(rel.warnings),
            "files": [str(p) for p in (written or [])],
            "provenance": rel.provenance,
            # the winner's settings in the data's units, from the public provenance and z alone
            "settings": [list(p) for p in winner_in_data_units(rel.provenance, rel.data)],
            # what the whole search spent in ε, when the release claims differential privacy
            "epsilon": (rel.provenance.get("privacy") or {}).get("search"),
        })
    doc["families"] = families(doc)
    doc["why"] = why(doc)
    doc["summary"] = doc["why"][0] if doc["why"] else ""
    return doc


def _trial(doc: Mapping[str, Any], number: int | None) -> Mapping[str, Any] | None:
    if number is None:
        return None
    return next((t for t in doc["trials"] if t["number"] == number), None)


def _interval(line: Mapping[str, Any]) -> str:
    v = line.get("value")
    if v is None:
        return "not measured"
    text = fmt_number(v)
    if line.get("ci_low") is not None and line.get("ci_high") is not None:
        text += f" [{fmt_number(line['ci_low'])}, {fmt_number(line['ci_high'])}]"
    return text


def line_text(line: Mapping[str, Any]) -> str:
    """``linkability ≤ 0.05: 0.021 [0.004, 0.038], meets``."""
    if line.get("verdict") == "not applicable":
        return f"{line['line']}: not applicable ({line.get('reason') or 'no claim'})"
    if line.get("verdict") == "not measured":
        return f"{line['line']}: not measured ({line.get('reason') or 'no value'})"
    if line.get("verdict") == "not judged":
        return f"{line['line']}: not judged ({line.get('reason') or 'its scenario does not apply'})"
    return f"{line['line']}: {_interval(line)}, {line['verdict']}"


def why(doc: Mapping[str, Any]) -> list[str]:
    """Sentences that say why the recommended release won, or why there is none."""
    out: list[str] = []
    pol = doc["policy"]
    n_lines = len(pol["lines"])
    # a deterministic setting drawn again is the same release: counted once
    feasible = [t for t in (_trial(doc, n) for n in doc["feasible"]) if t is not None and t.get("repeat_of") is None]
    ref = doc.get("reference")
    if doc["outcome"] == "met":
        w = _trial(doc, doc["chosen"]) or _trial(doc, doc["winner"])
        best = _trial(doc, doc["winner"])
        assert w is not None and best is not None
        rel = doc["release"]

        def how(t: Mapping[str, Any]) -> str:
            if "weights" in pol["utility"]:
                return f"utility loss {pol['utility_text']} = {fmt_number(t['utility_loss'])}"
            return "utility " + ", ".join(f"{m} {fmt_number(t['utility'].get(m))}" for m in pol["utility"]["priority"])

        rule = "the least utility loss" if "weights" in pol["utility"] else \
            f"the best utility in the priority order {pol['utility_text']}"
        if w["number"] == best["number"]:
            out.append(f"Trial {w['number']}, {w['label']}, meets all {n_lines} line(s) of the policy with {rule} "
                       f"({how(w)}) of the {len(feasible)} release(s) that met it among {len(doc['trials'])} "
                       "trial(s).")
        else:
            out.append(f"Trial {best['number']}, {best['label']}, met all {n_lines} line(s) of the policy with {rule} "
                       f"({how(best)}) of the {len(feasible)} release(s) that met it among {len(doc['trials'])} "
                       f"trial(s), but fresh draws of it missed the policy; the release was made with the next in "
                       f"rank that met it again, trial {w['number']}, {w['label']} ({how(w)}).")
        measured = (rel or {}).get("measured") or {}
        lines = measured.get("lines") or w["lines"]
        judged = [ln for ln in lines if ln.get("verdict") == "meets" and ln.get("margin") is not None]
        if judged:
            tight = max(judged, key=lambda ln: ln["margin"])
            out.append(f"Its closest line is {tight['line']}: {_interval(tight)}.")
        others = [t for t in feasible if t["number"] not in (w["number"], best["number"])]
        if others:
            if "weights" in pol["utility"]:
                nxt = min(others, key=lambda t: (t["utility_loss"], t["number"]))
                out.append(f"The next best release that met the policy, trial {nxt['number']} ({nxt['label']}), "
                           f"loses {fmt_number(nxt['utility_loss'])}.")
            else:
                first = pol["utility"]["priority"][0]
                nxt = min(others, key=lambda t: (t["utility"].get(first), t["number"]))
                out.append(f"The next best on {first}, trial {nxt['number']} ({nxt['label']}), has "
                           f"{fmt_number(nxt['utility'].get(first))}.")
        else:
            out.append("No other trial met the policy.")
        if ref is not None and ref.get("risk") is not None and w.get("risk") is not None:
            out.append(f"Releasing the training split unchanged would reach a risk of {fmt_number(ref['risk'])} on the "
                       f"front's axis; this release reaches {fmt_number(w['risk'])}.")
        if rel is not None:
            if rel["refit"]:
                out.append(f"The release was refitted on all {doc['split']['rows']} records; its risk figures are "
                           f"those of trial {w['number']}'s release of the training split, which the control split "
                           "was held out of.")
            else:
                out.append("The recommended release is a fresh draw of these settings on the training split, "
                           "measured against the control split itself: " +
                           "; ".join(line_text(ln) for ln in lines) + ".")
        return out
    unmet = doc.get("unmet") or {}
    if unmet.get("note"):
        out.append("No release is recommended: " + unmet["note"] + ".")
        return out
    never = unmet.get("never_met") or []
    if not doc["trials"]:
        out.append("No release is recommended: the search ran no trial.")
        return out
    if never:
        parts = []
        for entry in unmet["lines"]:
            if entry["line"] not in never:
                continue
            c = entry.get("closest")
            parts.append(f"{entry['line']} (closest: trial {c['trial']}, {c['label']}: {_interval(c)})" if c
                         else f"{entry['line']} (never measured)")
        out.append(f"No release met the policy: no trial met {'; '.join(parts)}.")
    else:
        out.append("No release met the policy: every line was met by some trial, but no trial met all of them.")
    best = unmet.get("closest_trial")
    if best:
        missed = "; ".join(line_text(ln) for ln in best["missed"]) or "no line (its run failed)"
        out.append(f"The closest trial, {best['trial']} ({best['label']}), missed {missed}.")
    return out


def families(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per technique: trials, and how many of them met the policy, missed it, failed or were
    stopped (each trial's ``outcome``, the counts of
    :meth:`~ppdm.experiments.recommend.RecommendResult.outcomes`; a setting drawn again is a
    ``repeat``), the best utility loss among those that met it, and for a family none of whose
    releases met the policy, the line it missed most often and the closest value it reached on it.
    ``ran`` counts the trials measured (met or missed); a trial that missed no line missed on its
    utility, and the sentence says so rather than count it as a miss of a line."""
    out = []
    names = list(doc["search_space"])
    for name in names:
        every = [t for t in doc["trials"] if t["technique"] == name]
        # a deterministic setting drawn again is the same release: counted once
        ts = [t for t in every if _outcome(t) != "repeat"]
        by = {k: [t for t in ts if _outcome(t) == k] for k in ("met", "missed", "failed", "stopped")}
        met, missed = by["met"], by["missed"]
        ran = met + missed
        entry: dict[str, Any] = {"technique": name, "trials": len(ts), "repeats": len(every) - len(ts),
                                 "ran": len(ran), "met": len(met), "missed": len(missed),
                                 "failed": len(by["failed"]), "stopped": len(by["stopped"]),
                                 "best_utility_loss": None, "best_trial": None, "verdict": "", "lines": []}
        if met:
            best = min(met, key=lambda t: (t["utility_loss"], t["number"]))
            entry["best_utility_loss"], entry["best_trial"] = best["utility_loss"], best["number"]
        for i, line in enumerate(doc["policy"]["lines"]):
            vs = [(t, t["lines"][i]) for t in ran if i < len(t["lines"])]
            # a line left unmeasured after another missed is no miss of its own
            missing = [(t, v) for t, v in vs if v["verdict"] not in ("meets", "not applicable") and not skipped_line(v)]
            measured = [(t, v) for t, v in vs if v["verdict"] not in ("not measured", "not applicable", "not judged")]
            closest = min(measured, key=lambda tv: (tv[1]["margin"], tv[0]["number"])) if measured else None
            entry["lines"].append({
                "line": line, "missed": len(missing), "of": len(vs),
                "closest": None if closest is None else {"trial": closest[0]["number"], **closest[1]}})
        unfinished = [f"{len(by[k])} {word}" for k, word in (("missed", "missed it"), ("failed", "failed to run"),
                                                             ("stopped", "stopped unfinished")) if by[k]]
        if met:
            entry["verdict"] = (f"{len(met)} of {len(ts)} trial(s) met the policy; best utility loss "
                                f"{fmt_number(entry['best_utility_loss'])} (trial {entry['best_trial']})")
            if unfinished:
                entry["verdict"] += f"; {', '.join(unfinished)}"
        elif not ts:
            entry["verdict"] = "not tried (the search ended first)"
        elif not missed:
            first = (by["failed"] or by["stopped"])[0]
            what = ("failed to run" if not by["stopped"] else "stopped unfinished" if not by["failed"]
                    else f"failed to run or stopped ({', '.join(unfinished)})")
            entry["verdict"] = f"every trial {what}: {first.get('why') or first.get('error') or 'no reason given'}"
        else:
            entry["verdict"] = f"rejected: {len(missed)} of {len(ts)} trial(s) missed the policy"
            worst = max(entry["lines"], key=lambda ln: (ln["missed"], -(ln["closest"] or {}).get("margin", 0)),
                        default=None)
            if worst is not None and worst["missed"]:
                c = worst["closest"]
                entry["verdict"] += (f", most often {worst['line']} (missed in {worst['missed']} of {worst['of']} "
                                     f"measured" + (f"; closest: {_interval(c)}, trial {c['trial']}" if c else "") + ")")
            on_utility = [t for t in missed if not any(
                v["verdict"] not in ("meets", "not applicable") and not skipped_line(v) for v in t["lines"])]
            if on_utility:
                entry["verdict"] += (f"; {len(on_utility)} met every line: "
                                     f"{on_utility[0].get('why') or 'its utility could not be measured'}")
            rest = unfinished[1:]  # the misses are counted above
            if rest:
                entry["verdict"] += f"; {', '.join(rest)}"
        out.append(entry)
    for name, reason in doc.get("left_out", {}).items():
        out.append({"technique": name, "trials": 0, "repeats": 0, "ran": 0, "met": 0, "missed": 0, "failed": 0,
                    "stopped": 0, "best_utility_loss": None,
                    "best_trial": None, "verdict": f"left out: {reason}", "lines": []})
    return out


def _outcome(t: Mapping[str, Any]) -> str:
    """A trial's outcome (:attr:`~ppdm.experiments.recommend.TrialRecord.outcome`); a document
    written before trials carried it is read the same way."""
    if t.get("outcome"):
        return str(t["outcome"])
    if t.get("repeat_of") is not None:
        return "repeat"
    if t.get("state") == "stopped":
        return "stopped"
    if t.get("error") is not None or t.get("state") == "failed":
        return "failed"
    return "met" if t.get("feasible") else "missed"


# ------------------------------------------------------------------------------ plot
#: the map's points closer than this share of an axis's span (on its scale) are drawn as one
NEAR = 1 / 120
#: a map whose positive values span this ratio or more is drawn on a log scale
LOG_RATIO = 30.0
#: the most front points labelled with their trial number (the recommended one always is)
MOST_LABELS_ON_MAP = 8


def _log_axis(values: Sequence[float]) -> bool:
    """Whether values spread over decades (all positive, largest/smallest ≥ :data:`LOG_RATIO`)."""
    vs = [float(v) for v in values]
    return bool(vs) and min(vs) > 0 and max(vs) / min(vs) >= LOG_RATIO


def map_groups(points: Sequence[tuple[float, float]], *, log_x: bool = False,
               log_y: bool = False) -> list[list[int]]:
    """Indices of ``points`` grouped where they would overlap on the map: within
    :data:`NEAR` of each axis's span (on a log axis, of the span of the logarithms). Each group
    is drawn as one marker sized by its count, so forty trials of one deterministic setting,
    or of settings that make the same release, read as one heavy point rather than a smear."""
    if not points:
        return []
    xs = [math.log10(x) if log_x else x for x, _ in points]
    ys = [math.log10(y) if log_y else y for _, y in points]
    bx = (max(xs) - min(xs)) * NEAR or 1.0
    by = (max(ys) - min(ys)) * NEAR or 1.0
    cells: dict[tuple[int, int], list[int]] = {}
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        cells.setdefault((round(x / bx), round(y / by)), []).append(i)
    return list(cells.values())


def _size(count: int) -> float:
    return 24.0 * count ** 0.6


def front_plot(doc: Mapping[str, Any]) -> bytes:
    """The risk–utility map of a search: every measured trial, those that met the policy, the
    front through them, the recommended release and the unchanged training split.

    Legible with hundreds of trials: trials that land on (nearly) the same place are one marker
    sized by their count (:func:`map_groups`, with a legend of sizes), an axis whose values span
    decades is logarithmic, and only the front's points carry their trial numbers."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from ppdm.report.plots import figure_png

    feas = set(doc["feasible"])
    front = set(doc["front"])
    fig = Figure(figsize=(9.6, 5.4))
    ax = fig.add_subplot()
    pts = [t for t in doc["trials"] if t.get("risk") is not None and t.get("utility_loss") is not None
           and t.get("repeat_of") is None]
    ref: dict[str, Any] = doc.get("reference") or {}
    has_ref = bool(ref) and _is_number(ref.get("risk")) and _is_number(ref.get("utility_loss"))
    every_x = [t["risk"] for t in pts] + ([ref["risk"]] if has_ref else [])
    every_y = [t["utility_loss"] for t in pts] + ([ref["utility_loss"]] if has_ref else [])
    log_x, log_y = _log_axis(every_x), _log_axis(every_y)
    biggest = 1
    styles: tuple[tuple[list[Any], dict[str, Any]], ...] = (
        ([t for t in pts if t["number"] not in feas],
                          {"marker": "x", "color": "#999999", "zorder": 2, "label": "missed the policy"}),
                         ([t for t in pts if t["number"] in feas],
                          {"marker": "o", "color": "#1f77b4", "alpha": 0.75, "zorder": 3, "label": "met the policy"}))
    for group, style in styles:
        if not group:
            continue
        clusters = map_groups([(t["risk"], t["utility_loss"]) for t in group], log_x=log_x, log_y=log_y)
        counts = [len(c) for c in clusters]
        biggest = max(biggest, *counts)
        label = f"{style.pop('label')} ({len(group)} trial(s)" + (f", {len(clusters)} places" if len(clusters) <
                                                                   len(group) else "") + ")"
        ax.scatter([sum(group[i]["risk"] for i in c) / len(c) for c in clusters],
                   [sum(group[i]["utility_loss"] for i in c) / len(c) for c in clusters],
                   s=[_size(n) for n in counts], label=label, **style)
    fr = sorted((t for t in pts if t["number"] in feas and t["number"] in front),
                key=lambda t: (t["risk"], t["utility_loss"]))
    chosen = _trial(doc, doc.get("chosen"))
    if fr:
        xs: list[float] = []
        ys: list[float] = []
        for t in fr:
            if xs:
                xs.append(t["risk"])
                ys.append(ys[-1])
            xs.append(t["risk"])
            ys.append(t["utility_loss"])
        ax.plot(xs, ys, color="#1f77b4", lw=1.2, zorder=3, label=f"front ({len(fr)} trial(s), numbered)")
        # the front's points carry their numbers; with many, an even sample of them and the recommended one
        step = max(1, math.ceil(len(fr) / MOST_LABELS_ON_MAP))
        named = [t for i, t in enumerate(fr) if i % step == 0 or (chosen is not None and t["number"] == chosen["number"])]
        for i, t in enumerate(named):
            ax.annotate(str(t["number"]), (t["risk"], t["utility_loss"]), xytext=(5, 5 if i % 2 == 0 else -11),
                        textcoords="offset points", fontsize=7, color="#1f4e79", zorder=5)
    if chosen is not None and chosen.get("risk") is not None:
        ax.scatter([chosen["risk"]], [chosen["utility_loss"]], marker="*", s=220, color="#d62728", zorder=4,
                   label=f"recommended (trial {chosen['number']})")
    if has_ref:
        ax.scatter([ref["risk"]], [ref["utility_loss"]], marker="s", s=40, color="#555555", zorder=4,
                   label="training split unchanged")
    axis = doc["policy"].get("risk_axis", "max")
    thresholds = sorted({float(v["at_most"]) for v in (doc["policy"].get("risk") or {}).values()
                         if isinstance(v, Mapping) and _is_number(v.get("at_most"))})
    scale = " (log scale)" if log_x else ""
    if axis != "max":
        ax.set_xlabel(f"risk: {axis}, worst end of its interval (lower is better){scale}")
    else:
        ax.set_xlabel(f"risk: the largest worst interval end among the policy's share lines (lower is better){scale}")
        if len(thresholds) == 1 and (thresholds[0] > 0 or not log_x):
            ax.axvline(thresholds[0], color="#c62828", ls="--", lw=1, label=f"policy threshold {thresholds[0]:g}")
    ax.set_ylabel(f"utility loss{' (log scale)' if log_y else ''}\n({doc['policy']['utility_text']}; lower is better)")
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if biggest > 1:  # what a marker's size says
        for n in sorted({1, max(2, round(biggest ** 0.5)), biggest}):
            handles.append(Line2D([], [], ls="", marker="o", markersize=math.sqrt(_size(n)), markerfacecolor="none",
                                  markeredgecolor="#555555"))
            labels.append(f"{n} trial(s) in one place")
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              labelspacing=1.0)
    return figure_png(fig)


# ------------------------------------------------------------------------------ page
def render_recommendation_html(doc: Mapping[str, Any], *, title: str = "ppdm recommendation",
                               plots: bool = True, max_trials: int = 500) -> str:
    """The search as one self-contained HTML page (see the module docstring)."""
    from ppdm.report.html import _env, _version, fmt
    from ppdm.report.plots import png_base64

    feas = set(doc["feasible"])
    front = set(doc["front"])
    lines = doc["policy"]["lines"]
    chosen = _trial(doc, doc.get("chosen"))
    rows = []
    for t in sorted(doc["trials"], key=lambda t: t["number"])[:max_trials]:
        rows.append({
            "number": t["number"], "label": t["label"], "state": t["state"],
            "met": "yes" if t["feasible"] else "no",
            "front": t["number"] in front, "chosen": chosen is not None and t["number"] == chosen["number"],
            "risk": fmt(t.get("risk")), "loss": fmt(t.get("utility_loss")),
            "cells": [{"text": _cell(ln), "cls": _cls(ln)} for ln in t["lines"]],
            # why a trial that did not run, or ran without a utility, did not meet the policy (the line cells say the rest)
            "error": t.get("error") or ((t.get("why") or "") if t.get("outcome") == "missed"
                                        and str(t.get("why") or "").startswith("its utility") else ""),
            "repeat_of": t.get("repeat_of"),
        })
    release = doc.get("release")
    measured = ((release or {}).get("measured") or {}).get("lines") or []
    ctx = {
        "title": title,
        "version": doc.get("ppdm_version") or _version(),
        "doc": doc,
        "why": doc.get("why") or [],
        "met": doc["outcome"] == "met",
        "lines": lines,
        "measured": [{"line": ln["line"], "value": _interval(ln), "verdict": ln["verdict"], "cls": _cls(ln),
                      "reason": ln.get("reason") or ""} for ln in measured],
        "unmet_lines": [{"line": e["line"], "met_by": e["met_by"], "of": e["of"],
                         "closest": _closest_text(e.get("closest"))} for e in (doc.get("unmet") or {}).get("lines", [])],
        "families": doc.get("families") or [],
        "trials": rows,
        "n_trials": len(doc["trials"]),
        "shown_trials": len(rows),
        "front_png": png_base64(front_plot(doc)) if plots and doc["trials"] else None,
        "front_rows": [{"number": t["number"], "label": t["label"], "risk": fmt(t.get("risk")),
                        "loss": fmt(t.get("utility_loss")),
                        "utility": ", ".join(f"{k} {fmt(v)}" for k, v in (t.get("utility") or {}).items())}
                       for t in sorted((x for x in doc["trials"] if x["number"] in front),
                                       key=lambda x: (x["risk"], x["utility_loss"]))],
        "n_feasible": len(feas),
        "space": [{"technique": k, "params": v} for k, v in doc["search_space"].items()],
        "left_out": doc.get("left_out") or {},
        "study": doc["study"],
        "split": doc["split"],
        "policy": doc["policy"],
        "notes": doc.get("notes") or [],
        "release": release,
    }
    return _env().get_template("recommend.html").render(**ctx)


def _cell(line: Mapping[str, Any]) -> str:
    if line["verdict"] in ("not measured", "not applicable", "not judged"):
        return line["verdict"]
    return _interval(line)


def _cls(line: Mapping[str, Any]) -> str:
    return {"meets": "status-meets", "misses": "status-misses", "uncertain": "status-misses",
            "not measured": "status-skipped", "not judged": "status-misses"}.get(line["verdict"], "")


def _closest_text(c: Mapping[str, Any] | None) -> str:
    if not c:
        return "—"
    return f"trial {c['trial']} ({c['label']}): {_interval(c)}, {c['verdict']}"


def write_recommendation_html(doc: Mapping[str, Any], path: str | Path, **kwargs: Any) -> Path:
    """Render :func:`render_recommendation_html` and write it atomically."""
    from ppdm.report.html import write_html

    return write_html(render_recommendation_html(doc, **kwargs), path)


__all__ = ["families", "front_plot", "line_text", "recommendation_document", "render_recommendation_html", "why",
           "map_groups", "winner_in_data_units", "write_recommendation_html"]
