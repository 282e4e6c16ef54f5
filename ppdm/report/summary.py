"""What a data owner reads first about one release, shared by the terminal and the HTML page.

An evaluation document (:func:`ppdm.report.evaluation.evaluation_document`) holds every
measure with its details. Before the details, a reader wants three things:

* the **verdicts** on risk and on utility (``doc["summary"]``), each with a status, a
  sentence and the measures it judged; a status is shown as it is named, whatever it is
  (``low``, ``high``, ``uncertain``, ``not judged``, ...), and :func:`status_class` only
  says whether it is good news, bad news or neither;
* the **drivers of risk** (:func:`risk_drivers`): the per-key table of the key-variable
  measures and the key variable that makes the most records unique;
* **one line per measure** (:func:`measure_rows`): value, threshold and status;
* the **distribution fidelity** (:func:`fidelity_summary`): the columns and pairs of columns
  whose distributions z keeps worst, by name and score (never a record).

Reasons that many measures share (four attacks all needing a control set) are said once
(:func:`group_reasons`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ppdm.experiments.evaluation import group_reasons

__all__ = ["GOOD", "BAD", "status_class", "status_slug", "judged_status", "fmt_value", "fmt_count", "threshold_text",
           "measure_rows", "group_reasons", "Drivers", "risk_drivers", "linkage_drivers", "plausibility_drivers",
           "plain_columns", "Fidelity", "fidelity_summary", "TechniqueVerdict",
           "comparison_verdicts", "pareto_front"]
#: statuses that are good news (a verdict's or a measure's); everything else that is not bad
#: news (``uncertain``, ``not judged``, ``skipped``, ...) is shown as neither
GOOD = frozenset({"low", "kept", "meets"})
BAD = frozenset({"high", "reduced", "misses"})


def status_class(status: Any) -> str:
    """``"good"``, ``"bad"`` or ``"neutral"`` for a status string of any name."""
    s = str(status or "").strip().lower()
    if s in GOOD:
        return "good"
    if s in BAD:
        return "bad"
    return "neutral"


def status_slug(status: Any) -> str:
    """A status as a CSS class suffix: ``not judged`` → ``not-judged``."""
    return re.sub(r"[^a-z0-9]+", "-", str(status or "none").lower()).strip("-") or "none"


def judged_status(entry: Mapping[str, Any]) -> str:
    """The status of one judged measure of a verdict: its ``status`` when it has one (e.g.
    ``uncertain`` for an interval that straddles the threshold), else meets / misses."""
    if entry.get("judgement") or entry.get("status"):
        state = str(entry.get("judgement") or entry["status"])
        return f"{state} (lower bound)" if entry.get("lower_bound") and state == "uncertain" else state
    return "meets" if entry.get("meets") else "misses"


def fmt_value(v: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; missing values as a dash."""
    from ppdm.report.evaluation import fmt_number

    return str(v) if isinstance(v, bool) else fmt_number(v, digits)


def fmt_count(v: Any) -> str:
    """A count with thousands separators (``10,968``)."""
    try:
        return f"{int(v):,}"
    except (TypeError, ValueError):
        return str(v)


def threshold_text(direction: str | None, threshold: Any) -> str:
    if threshold is None or direction not in ("higher", "lower"):
        return "—"
    return f"{'≤' if direction == 'lower' else '≥'} {fmt_value(threshold)}"


# ------------------------------------------------------------------ measure lines
def measure_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per measure of an evaluation document, risk measures first: ``name, kind,
    value, threshold, status`` (texts) and ``reason`` for a skipped one.

    A measure's status is the one its verdict gave it (meets, misses, or any other the
    verdict names); a measure without a threshold is ``not judged``, one the table did not
    allow ``skipped``.
    """
    judged = {j["measure"]: j for v in (doc.get("summary") or {}).values() for j in v.get("judged", [])}
    rows = []
    for name, m in (doc.get("measures") or {}).items():
        if m.get("status") == "skipped":
            status = "skipped"
        elif name in judged:
            status = judged_status(judged[name])
        else:
            status = "not judged"
        threshold = judged[name].get("threshold", m.get("threshold")) if name in judged else m.get("threshold")
        rows.append({"name": name, "kind": m.get("kind") or "—",
                     "value": "—" if m.get("status") == "skipped" else fmt_value(m.get("value")),
                     "threshold": threshold_text(m.get("direction"), threshold), "status": status,
                     # why a skipped measure could not be computed, or why a computed one is not judged
                     "reason": m.get("reason") or m.get("not_judged")})
    order = {"risk": 0, "utility": 1}
    return sorted(rows, key=lambda r: order.get(r["kind"], 2))


# ---------------------------------------------------------------- drivers of risk
@dataclass
class Drivers:
    """The key variables behind the key-variable risk of a release.

    ``table`` is the per-key detail table (``columns``, ``rows``) as the measures give it;
    ``worst`` the key variable that most records are unique because of, ``removed`` how
    many sample uniques dropping it would remove and ``uniques`` how many there are.
    """

    measure: str
    table: dict[str, Any]
    key_source: str | None = None
    worst: str | None = None
    removed: int | None = None
    uniques: int | None = None
    measures: list[str] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return [str(r[0]) for r in self.table.get("rows", [])]

    @property
    def sentence(self) -> str:
        keys = self.keys
        named = ", ".join(keys) if len(keys) <= 4 else f"{len(keys)} variables"
        on = f"on the key variable{'s' if len(keys) != 1 else ''} ({named})" if keys else "on the key variables"
        cols = list(self.table.get("columns") or [])
        if "own_matches" in cols:  # intruder matching: perturbed keys, no key frequencies to speak of
            j, rows = cols.index("own_matches"), self.table.get("rows") or []
            vals = [(float(r[j]) if isinstance(r[j], (int, float)) else -1.0) for r in rows]
            if not rows or max(vals) < 0:
                return f"An intruder matching {on} is judged by {self.measure}."
            best = max(range(len(rows)), key=lambda i: vals[i])
            return (f"An intruder matching {on} finds a record's own released value of {rows[best][0]} "
                    f"for {vals[best]:.0%} of the records, the most of any key variable.")
        if self.uniques == 0:
            return f"No record is unique {on}."
        if self.worst is None or self.removed is None:
            many = f"{fmt_count(self.uniques)} records are" if self.uniques else "Some records are"
            return f"{many} unique {on}; none would stop being unique without any one of them alone."
        if self.uniques:
            share = f"{fmt_count(self.removed)} of the {fmt_count(self.uniques)} records unique {on}"
        else:
            share = f"{fmt_count(self.removed)} records unique {on}"
        return (f"The worst key variable is {self.worst}: {share} are unique because of it "
                "(without it they would share their key values with another record).")


def risk_drivers(doc: Mapping[str, Any]) -> Drivers | None:
    """The drivers of risk of an evaluation document: the first per-key table of a
    computed risk measure, and its worst key variable (the most sample uniques removed by
    dropping it). ``None`` when no risk measure gave a per-key table."""
    tables = doc.get("tables") or {}
    for name, m in (doc.get("measures") or {}).items():
        if m.get("kind") != "risk" or m.get("status") == "skipped":
            continue
        for t in m.get("tables") or []:
            if not re.search(r"(^|\.)per_key$", t) or t not in tables:
                continue
            table = tables[t]
            cols = list(table.get("columns") or [])
            rows = list(table.get("rows") or [])
            users = [n for n, mm in doc["measures"].items() if t in (mm.get("tables") or [])]
            d = Drivers(name, {"columns": cols, "rows": rows}, (m.get("details") or {}).get("key_source"),
                        measures=users)
            removed_col = next((c for c in cols if "removed" in c), None)
            if removed_col is not None and rows:
                j = cols.index(removed_col)
                vals = [(r[j] if isinstance(r[j], (int, float)) else -1) for r in rows]
                best = max(range(len(rows)), key=lambda i: vals[i])
                if vals[best] > 0:
                    d.worst, d.removed = str(rows[best][0]), int(vals[best])
            d.uniques = next((int(doc["measures"][u]["details"]["sample_uniques"]) for u in users
                              if isinstance((doc["measures"][u].get("details") or {}).get("sample_uniques"),
                                            (int, float))), None)
            return d
    return None


def linkage_drivers(doc: Mapping[str, Any]) -> str | None:
    """Why the intruder who holds x's records is judged as they are, when one of its measures misses
    its threshold: the columns the release keeps verbatim that an exact join re-identifies on, or
    the copies and near-copies behind the pairing-free measures. Column names and counts only."""
    measures = doc.get("measures") or {}
    judged = {j["measure"]: j for j in ((doc.get("summary") or {}).get("risk") or {}).get("judged") or []}
    missed = [n for n, j in judged.items() if j.get("judgement") == "misses" and j.get("scenario") == "originals"]
    if not missed:
        return None
    parts = []
    rl = measures.get("record_linkage") or {}
    d = rl.get("details") or {}
    if "record_linkage" in missed:
        share = f"{float(rl['value']):.0%}" if rl.get("value") is not None else "some"
        names = [c for c in str(d.get("joined_on") or "").split(", ") if c]
        cols = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        correct = d.get("exact_join_correct")
        if names and isinstance(correct, (int, float)) and correct > 0:
            parts.append(f"an intruder who holds x links {share} of the released records; an exact join on the "
                         f"columns whose values the release keeps ({cols}, most identifying first) alone "
                         f"re-identifies {fmt_count(int(correct))} of them")
        else:
            parts.append(f"an intruder who holds x links {share} of the released records to the right person")
    for name, what in (("verbatim_copies", "are verbatim copies of records unique in x"),
                       ("nearest_record_distance", "more than a fresh draw would lie as close to an original as "
                                                   "originals lie to each other")):
        if name in missed and measures.get(name, {}).get("value") is not None:
            parts.append(f"{float(measures[name]['value']):.0%} of the released records {what} ({name})")
    # the first reason is the one to act on: one line, not a list
    text = parts[0] if parts else ""
    return text[:1].upper() + text[1:] + "." if text else None


# ------------------------------------------------------------ distribution fidelity
@dataclass
class Fidelity:
    """The worst columns and pairs of columns of a release's distribution fidelity, worst first:
    ``columns`` as ``(column, metric, score)``, ``pairs`` as ``("a × b", metric, score)``, with how
    many were scored and each measure's threshold and status in the verdict."""

    columns: list[tuple[str, str, float]] = field(default_factory=list)
    pairs: list[tuple[str, str, float]] = field(default_factory=list)
    n_columns: int = 0
    n_pairs: int = 0
    pairs_total: int = 0
    threshold: dict[str, str] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def _list(items: list[tuple[str, str, float]], most: int) -> str:
        return ", ".join(f"{name} {fmt_value(score, 3)}" for name, _, score in items[:most])

    def sentence(self, most: int = 3) -> str:
        """One line: the worst columns and pairs with their scores (1: as in x)."""
        parts = []
        if self.columns:
            parts.append(f"columns {self._list(self.columns, most)} (worst of {self.n_columns})")
        if self.pairs:
            among = f", scored among {self.pairs_total}" if self.pairs_total > self.n_pairs else ""
            parts.append(f"pairs {self._list(self.pairs, most)} (worst of {self.n_pairs}{among})")
        return "; ".join(parts) + "; 1 is x's distribution."

    @property
    def all_meet(self) -> bool:
        """Whether every fidelity measure judged meets its threshold."""
        return all(s == "meets" for s in self.status.values())


def fidelity_summary(doc: Mapping[str, Any], most: int = 5) -> Fidelity | None:
    """The worst ``most`` columns and pairs of an evaluation document's ``column_fidelity`` and
    ``pair_fidelity`` tables (their names and scores only), or ``None`` when neither was computed."""
    measures, tables = doc.get("measures") or {}, doc.get("tables") or {}
    judged = {j["measure"]: j for j in ((doc.get("summary") or {}).get("utility") or {}).get("judged") or []}
    out = Fidelity()
    found = False
    for name, key, names in (("column_fidelity", "per_column", ("column",)),
                             ("pair_fidelity", "per_pair", ("column_1", "column_2"))):
        m = measures.get(name) or {}
        table = next((tables[t] for t in m.get("tables") or [] if t.endswith(key) and t in tables), None)
        if m.get("status") == "skipped" or table is None:
            continue
        found = True
        cols = list(table.get("columns") or [])
        at = [cols.index(c) for c in names]
        si, mi = cols.index("score"), cols.index("metric")
        rows = [(" × ".join(str(r[i]) for i in at), str(r[mi]), float(r[si])) for r in table.get("rows") or []
                if isinstance(r[si], (int, float)) and math.isfinite(float(r[si]))]
        rows.sort(key=lambda t: t[2])
        details = m.get("details") or {}
        if name == "column_fidelity":
            out.columns, out.n_columns = rows[:most], int(details.get("columns") or len(rows))
        else:
            out.pairs, out.n_pairs = rows[:most], int(details.get("pairs") or len(rows))
            out.pairs_total = int(details.get("pairs_total") or out.n_pairs)
        out.threshold[name] = threshold_text(m.get("direction"), judged.get(name, {}).get("threshold", m.get("threshold")))
        out.status[name] = judged_status(judged[name]) if name in judged else "not judged"
    return out if found else None
#: the plausibility measures whose ``worst`` detail names what makes released records implausible
PLAUSIBILITY = (("implausible_combinations", "hold a combination x never holds"),
                ("edit_rule_violations", "more than in x break a declared edit rule"))


def plausibility_drivers(doc: Mapping[str, Any]) -> str | None:
    """Why utility is judged reduced on plausibility, when one of its measures misses its
    threshold: the share of implausible released records and the worst combinations or rule,
    by column names, category labels and counts only (never a record)."""
    measures = doc.get("measures") or {}
    judged = {j["measure"]: j for j in ((doc.get("summary") or {}).get("utility") or {}).get("judged") or []}
    parts = []
    for name, what in PLAUSIBILITY:
        m = measures.get(name) or {}
        if (judged.get(name) or {}).get("judgement") != "misses" or m.get("value") is None:
            continue
        # the worst one only (the detail lists up to three, "; " between them): a line, not a list
        worst = str((m.get("details") or {}).get("worst") or "").split("; ")[0]
        parts.append(f"{float(m['value']):.0%} of released records {what}" + (f" ({worst})" if worst else ""))
    return "; ".join(parts) + "." if parts else None


def plain_columns(columns: Sequence[str]) -> list[str]:
    """Column names of a detail table as headings (``uniques_without`` → ``uniques without``)."""
    return [str(c).replace("_", " ") for c in columns]


# ------------------------------------------------------------ comparison verdicts
@dataclass
class TechniqueVerdict:
    """The risk and utility verdicts of one technique setting of a comparison, on the means
    of its measures over folds × repeats (each with its confidence interval)."""

    label: str
    technique: str
    baseline: bool
    changes_data: bool | None
    risk: dict[str, Any]
    utility: dict[str, Any]

    @staticmethod
    def short(verdict: Mapping[str, Any], most: int = 3) -> str:
        """The judged measures that do not meet their threshold, briefly and at most ``most``
        of them (``misses 2 of 5: record_linkage 0.68 (≤ 0.05), inference 0.71 (≤ 0.05)``),
        or ``all n meet`` — the text beside the status."""
        judged = list(verdict.get("judged") or [])
        if not judged:
            return ""
        off = [j for j in judged if judged_status(j) != "meets"]
        if not off:
            return f"all {len(judged)} meet their threshold" if len(judged) > 1 else "meets its threshold"
        parts = []
        for j in off[:most]:
            rule = threshold_text(j.get("direction"), j.get("threshold"))
            extra = "" if judged_status(j) == "misses" else f", {judged_status(j)}"
            parts.append(f"{j['measure']} {fmt_value(j.get('value'), 3)} ({rule}{extra})")
        more = f", and {len(off) - most} more" if len(off) > most else ""
        return f"{len(off)} of {len(judged)} not met: " + ", ".join(parts) + more


def comparison_verdicts(result: Any, summary: Any | None = None) -> list[TechniqueVerdict]:
    """One risk verdict and one utility verdict per technique setting of a comparison
    (:class:`ppdm.experiments.compare.ComparisonResult`), judged as ``ppdm evaluate`` judges
    one release (the library's single judge, :func:`ppdm.metrics.judgement.verdicts`), on the
    mean of each measure over folds × repeats; the mean's confidence interval goes with it
    (``ci_low``, ``ci_high``), and each risk measure with the intruder scenario it models."""
    from ppdm.experiments.compare import measure_info
    from ppdm.experiments.evaluation import load_all_measures
    from ppdm.metrics.judgement import verdicts

    s = result.summary() if summary is None else summary
    info = {m: measure_info(result, m) for m in result.measures}
    registry = load_all_measures()
    cells = {(r["label"], r["measure"]): r for r in s.to_dict(orient="records")}
    out = []
    for t in result.meta["techniques"]:
        measures: dict[str, dict[str, Any]] = {}
        for m in result.measures:
            row = cells.get((t["label"], m)) or {}
            mean = row.get("mean")
            ok = mean is not None and math.isfinite(float(mean))
            details = {k: float(row[k]) for k in ("ci_low", "ci_high")
                       if row.get(k) is not None and math.isfinite(float(row[k]))}
            measures[m] = {"kind": info[m]["kind"], "direction": info[m]["direction"],
                           "threshold": info[m]["threshold"], "value": float(mean) if ok else None,  # type: ignore[arg-type]  # ok: mean is not None
                           "status": "computed" if ok else "skipped", "details": details,
                           "range": info[m]["range"], "scenario": getattr(registry.get(m), "scenario", None)}
        v = verdicts(measures)
        out.append(TechniqueVerdict(t["label"], t["technique"], t["technique"] == "original",
                                    t.get("changes_data"), v["risk"].to_dict(), v["utility"].to_dict()))
    return out


def pareto_front(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Labels of the points ``(label, risk, loss)`` that no other point beats on both
    (lower risk and lower utility loss, at least one strictly), ordered by risk."""
    from ppdm.experiments._front import pareto_front as front

    pts = [(lab, float(r), float(u)) for lab, r, u in points if math.isfinite(float(r)) and math.isfinite(float(u))]
    return [p[0] for p in front(pts, lambda p: p[1], lambda p: p[2])]
