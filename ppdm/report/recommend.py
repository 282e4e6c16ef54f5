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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ppdm.experiments.recommend import skipped_line
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
            "measured": None if v is None else {"lines": [ln.to_dict() for ln in v.lines], "utility": v.utility,
                                                "risk": v.risk, "utility_loss": v.utility_loss,
                                                "on": "the training-split release of the same settings (trial "
                                                      f"{v.number})" if result.refit else "this release"},
            "check": {"share_verbatim": float(rel.check.share_verbatim),
                      "summary": list(rel.check.summary_lines())},
            "warnings": list(rel.warnings),
            "files": [str(p) for p in (written or [])],
            "provenance": rel.provenance,
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
def front_plot(doc: Mapping[str, Any]) -> bytes:
    """The risk–utility map of a search: every measured trial, those that met the policy, the
    front through them, the recommended release and the unchanged training split."""
    from matplotlib.figure import Figure

    from ppdm.report.plots import figure_png

    feas = set(doc["feasible"])
    front = set(doc["front"])
    fig = Figure(figsize=(9.6, 5.4))
    ax = fig.add_subplot()
    pts = [t for t in doc["trials"] if t.get("risk") is not None and t.get("utility_loss") is not None
           and t.get("repeat_of") is None]
    miss = [t for t in pts if t["number"] not in feas]
    ok = [t for t in pts if t["number"] in feas]
    if miss:
        ax.scatter([t["risk"] for t in miss], [t["utility_loss"] for t in miss], marker="x", s=22, color="#999999",
                   label=f"missed the policy ({len(miss)})", zorder=2)
    if ok:
        ax.scatter([t["risk"] for t in ok], [t["utility_loss"] for t in ok], s=26, color="#1f77b4",
                   label=f"met the policy ({len(ok)})", zorder=3)
    fr = sorted((t for t in ok if t["number"] in front), key=lambda t: (t["risk"], t["utility_loss"]))
    if fr:
        xs: list[float] = []
        ys: list[float] = []
        for t in fr:
            if xs:
                xs.append(t["risk"])
                ys.append(ys[-1])
            xs.append(t["risk"])
            ys.append(t["utility_loss"])
        ax.plot(xs, ys, color="#1f77b4", lw=1.2, zorder=3, label="front")
    chosen = _trial(doc, doc.get("chosen"))
    if chosen is not None and chosen.get("risk") is not None:
        ax.scatter([chosen["risk"]], [chosen["utility_loss"]], marker="*", s=220, color="#d62728", zorder=4,
                   label=f"recommended (trial {chosen['number']})")
    ref = doc.get("reference")
    if ref is not None and ref.get("risk") is not None and ref.get("utility_loss") is not None:
        ax.scatter([ref["risk"]], [ref["utility_loss"]], marker="s", s=40, color="#555555", zorder=4,
                   label="training split unchanged")
    axis = doc["policy"].get("risk_axis", "max")
    thresholds = sorted({float(v["at_most"]) for v in (doc["policy"].get("risk") or {}).values()
                         if isinstance(v, Mapping) and _is_number(v.get("at_most"))})
    if axis != "max":
        ax.set_xlabel(f"risk: {axis}, worst end of its interval (lower is better)")
    else:
        ax.set_xlabel("risk: the largest worst interval end among the policy's share lines (lower is better)")
        if len(thresholds) == 1:
            ax.axvline(thresholds[0], color="#c62828", ls="--", lw=1, label=f"policy threshold {thresholds[0]:g}")
    ax.set_ylabel(f"utility loss\n({doc['policy']['utility_text']}; lower is better)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return figure_png(fig)


def _is_number(v: Any) -> bool:
    try:
        return v is not None and not isinstance(v, bool) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


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
           "write_recommendation_html"]
