"""What the HTML reports say about a release in words: numbers, techniques, data set and provenance.

Number formatting (:func:`fmt`), a technique and its parameters described in a sentence
(:func:`describe_technique`), the data set, released-table and differential-privacy
summaries, and the tables those sections show. Split from :mod:`ppdm.report.html`, which
renders the pages and re-exports every name here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppdm.report.evaluation import fmt_number


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


def _param_words(key: str, v: Any, dates: Sequence[str] = ()) -> str:
    """One parameter in words: ``key: value``, a per-column mapping as ``column value`` pairs,
    numbers given for a date column in days since 1970-01-01 (how the library counts dates)."""
    if isinstance(v, Mapping):
        parts = []
        for col, x in v.items():
            text = _plain_value(x)
            nums = isinstance(x, (int, float)) or (isinstance(x, (list, tuple)) and x
                                                   and all(isinstance(i, (int, float)) for i in x))
            if str(col) in dates and nums and not isinstance(x, bool):
                text += " (days since 1970-01-01)"
            how = " cut at " if key == "breaks" else ": " if isinstance(x, (list, tuple)) else " "
            parts.append(f"{col}{how}{text}")
        return f"{key.replace('_', ' ')}: {'; '.join(parts) or 'none'}"
    return f"{key.replace('_', ' ')} {_plain_value(v)}"


def describe_technique(tech: Mapping[str, Any] | str | None, schema: Mapping[str, Any] | None = None) -> str:
    """A technique record of a provenance (:func:`ppdm.experiments.release.technique_record`) in
    words: its name and the parameters it was given a value for (``None`` left out), and a chain
    (``--then``) step by step, ``"recode (breaks: age cut at 0, 30, 50) then pram (pd 0.8)"``. Numbers
    given for a date column of ``schema`` (the provenance's) are said to be days since 1970.
    Steps recorded by an older ppdm as Python reprs are named, their reprs left out."""
    if tech is None:
        return "an unnamed technique"
    if not isinstance(tech, Mapping):
        return str(tech)
    dates = list(((schema or {}).get("dates") or {}).keys()) if isinstance((schema or {}).get("dates"), Mapping) \
        else list((schema or {}).get("dates") or [])
    params = tech.get("parameters") if isinstance(tech.get("parameters"), Mapping) else {}
    steps = params.get("steps") if isinstance(params, Mapping) else None
    if isinstance(steps, list) and steps:
        words = []
        for step in steps:
            if isinstance(step, Mapping):
                words.append(describe_technique(step, schema))
            elif isinstance(step, (list, tuple)) and step:  # [name, repr] written before chains were recorded
                words.append(f"{step[0]} (parameters recorded as Python text by an older ppdm, not shown)")
            else:
                words.append(str(step))
        return " then ".join(words)
    name = str(tech.get("name") or "an unnamed technique")
    given = [_param_words(str(k), v, dates) for k, v in (params or {}).items() if v is not None]
    return f"{name} ({'; '.join(given)})" if given else name


def _chain_text(provenance: Mapping[str, Any] | None) -> str | None:
    """A chain's steps in words for the provenance table (``None`` for a single technique,
    whose parameters the table shows as recorded)."""
    tech = (provenance or {}).get("technique")
    params = tech.get("parameters") if isinstance(tech, Mapping) else None
    if not isinstance(params, Mapping) or not isinstance(params.get("steps"), list):
        return None
    return describe_technique(tech, (provenance or {}).get("schema"))


def _dataset(info: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if info is None:
        return None
    d: dict[str, Any] = {"name": None, "rows": "—", "columns": "—", "numeric": [], "categorical": [], "class_column": None,
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
    body: list[list[dict[str, Any]]] = []
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


# ------------------------------------------------- sections of the evaluation page
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
    steps = params.get("steps") if isinstance(params, Mapping) else None
    if isinstance(steps, list) and steps:
        how = f"a chain of {len(steps)} techniques, each on the release of the one before: " + describe_technique(
            tech, provenance.get("schema"))
    else:
        how = (name or "an unnamed technique") + (f" with {_plain_value(params)}" if params else "")
    sentence = (f"{z.get('source', 'z')} ({size}) was released by {how}"
                + (f" from {src.get('source')}" if isinstance(src, Mapping) and src.get("source") else "")
                + ("" if seeded is None else (", with a fixed seed" if seeded else ", seeded from the system"))
                + ".")
    rows = []
    if isinstance(tech, Mapping):
        rows.append(("technique", f"{tech.get('name', '—')} ({tech.get('class', '—')})"))
        if isinstance(steps, list) and steps:
            rows.append(("parameters", describe_technique(tech, provenance.get("schema"))))
        else:
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


def _differential_privacy(provenance: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The differential-privacy claim of a release, from its public provenance's ``privacy``
    (DPCube's ``privacy_report_``, docs/differential_privacy.md): ε asked and spent, the
    mechanism, whether the domain was declared, the guarantee and the DP warnings the release
    was made with (the coarse grid, a domain read from the data). ``None`` for a release that
    claims no ε."""
    privacy = (provenance or {}).get("privacy")
    if not isinstance(privacy, Mapping) or "epsilon" not in privacy:
        return None
    declared = privacy.get("domain_declared")
    dom_in = privacy.get("domain")
    dom: Mapping[str, Any] = dom_in if isinstance(dom_in, Mapping) else {}
    if declared is None:
        declared_text = "not said"
    elif declared:
        declared_text = "yes: every column's bounds or categories were declared"
    else:
        names = ", ".join(map(str, dom.get("from_data") or [])) or "some columns"
        declared_text = f"no: {names} read from the data, so the release is not differentially private"
    warns = []
    for w in privacy.get("warnings") or []:
        if isinstance(w, Mapping):
            warns.append({"kind": str(w.get("kind") or "warning"), "text": str(w.get("text") or "")})
        else:
            warns.append({"kind": "warning", "text": str(w)})
    eps, spent = privacy.get("epsilon"), privacy.get("epsilon_spent")
    return {
        "epsilon": "∞ (no noise)" if eps is None else fmt(eps, 6),
        "epsilon_spent": "—" if spent is None else fmt(spent, 6),
        "mechanism": str(privacy.get("mechanism") or "—"),
        "count_noise": privacy.get("count_noise"),
        "neighbouring": ((privacy.get("neighbouring") or {}).get("description")
                         if isinstance(privacy.get("neighbouring"), Mapping) else None),
        "differentially_private": bool(privacy.get("differentially_private")),
        "domain_declared": declared_text,
        "guarantee": privacy.get("guarantee"),
        "warnings": warns,
    }


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
