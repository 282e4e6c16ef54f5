"""The recommended release's settings in the data's own units, for the report's answer.

:func:`winner_in_data_units` turns the winner's parameters (a noise level, a recoding's
intervals and labels, an ε) into what they mean for each column, read from its public
provenance and the release itself. Split from :mod:`ppdm.report.recommend`, which
re-exports every name here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ppdm.report.evaluation import fmt_number

#: labels of a recoded column listed in full up to this many; longer lists show both ends
MOST_LABELS = 8


def winner_in_data_units(provenance: Mapping[str, Any] | None,
                         release: Any = None) -> list[tuple[str, str]]:
    """What the recommended release did, column by column, in the data's own units: ``(what,
    how)`` pairs for the report, e.g. ``("birth_date", "10-year birth cohorts: 1930-1939, …")``.

    Read from the release's **public** provenance (``technique``, ``privacy``, the public
    ``output.schema``) and, for figures only a table shows (the blanks left by local
    suppression, the spread of a noisy column), from the release ``z`` itself: nothing of x
    that the published files do not say. So a recoding shows its bands and cut points (the
    labels z carries), and for merged categories the rule and the categories z keeps, never
    the list of x's merged categories (the owner's private log holds it); local suppression
    shows the blank cells per key *in the release* (x's own blanks included: the count of
    suppressed cells is counted on x and private); Gaussian noise shows the standard
    deviation of its noise estimated from z (a share ``level`` of the values gets noise of the
    column's own variance, so Var z ≈ (1 + level)·Var x, paper 000 §7.1), uniform noise the
    release's standard deviation (never its range: two records' values); a differentially
    private release shows its ε. A chain lists its steps in order; a technique this function
    has no words for lists its parameters."""
    if not provenance:
        return []
    tech = provenance.get("technique") or {}
    given = provenance.get("schema") or {}
    out_schema = (provenance.get("output") or {}).get("schema") or {}
    privacy = provenance.get("privacy") or {}
    params = tech.get("parameters") or {}
    if isinstance(params.get("steps"), list):
        steps = [(str(s.get("step") or s.get("name")), s.get("parameters") or {},
                  (privacy.get("composition") or [{}] * len(params["steps"]))[i].get("privacy") or {})
                 for i, s in enumerate(params["steps"])]
        out: list[tuple[str, str]] = []
        for name, p, priv in steps:
            out += [(f"{name}: {what}", how) for what, how in
                    _step_in_data_units(name, p, priv, given, out_schema, release)]
        return out
    return _step_in_data_units(str(tech.get("name")), params, privacy, given, out_schema, release)


def _step_in_data_units(name: str, params: Mapping[str, Any], privacy: Mapping[str, Any],
                        given: Mapping[str, Any], out_schema: Mapping[str, Any],
                        release: Any) -> list[tuple[str, str]]:
    if name == "recode":
        return _recode_in_data_units(params, privacy, given, out_schema)
    if name == "local-suppression":
        keys = list(privacy.get("keys") or params.get("keys") or given.get("quasi_identifiers") or [])
        rows = [("k", f"every combination of the keys {', '.join(keys)} is shared by at least k={privacy.get('k', params.get('k'))} "
                      f"released records ({privacy.get('criterion') or params.get('criterion') or 'intruder'} reading), "
                      "a blank key matching any value")]
        if release is not None and keys:
            blanks = ", ".join(f"{c} {int(release[c].isna().sum())}" for c in keys if c in release.columns)
            rows.append(("blank key cells in the release", f"{blanks} of {len(release)} records (the table's own "
                         "blanks included; how many cells were suppressed is counted on the original records and "
                         "kept in the owner's private log)"))
        return rows
    if name == "generalize":
        cats = out_schema.get("categories") or {}
        model = f"k={privacy.get('k', params.get('k'))}"
        for m in ("l", "t"):
            if privacy.get(m) is not None:
                model += f", {m}={privacy[m]}"
        rows = [("model", f"{model}; at most {_share(privacy.get('suppression_limit', params.get('suppression_limit')))} "
                          "of the records may have every key blanked")]
        for c, level in (privacy.get("levels") or {}).items():
            labels = cats.get(c)
            rows.append((c, str(level) + (f": {_labels(labels)}" if labels and level != "as in x" else "")))
        return rows
    if name in ("gaussian-noise", "uniform-noise"):
        return _noise_in_data_units(name, params, given, release)
    if name == "mdav":
        cols = params.get("columns") or "every numeric attribute"
        cols = ", ".join(cols) if isinstance(cols, list) else str(cols)
        return [("k", f"groups of at least k={params.get('k')} records released with their mean on {cols}")]
    if name == "dpcube" and privacy:
        rel = (privacy.get("neighbouring") or {}).get("relation") if isinstance(privacy.get("neighbouring"), Mapping) \
            else privacy.get("neighbouring")
        dp = "differentially private" if privacy.get("differentially_private") else \
            "NOT differentially private (its domain was read from the data)"
        return [("ε", f"{fmt_number(privacy.get('epsilon'))} ({rel or 'add/remove-one'} neighbours; {dp})"),
                ("histogram", f"partitioning {params.get('partitioning')}, alpha {fmt_number(params.get('alpha'))} "
                              "of ε to the cell counts")]
    if name == "pram" and privacy:
        return [("columns", ", ".join(privacy.get("columns") or [])),
                ("retention", f"each category kept with probability at least pd={fmt_number(params.get('pd'))} "
                              f"(alpha={fmt_number(params.get('alpha'))}); expected category shares unchanged")]
    return [(k, _value(v)) for k, v in params.items() if v is not None]


def _recode_in_data_units(params: Mapping[str, Any], privacy: Mapping[str, Any], given: Mapping[str, Any],
                          out_schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    from ppdm.data.generalization import parse_interval

    cats = out_schema.get("categories") or {}
    before = given.get("categories") or {}
    dates = set(given.get("dates") or {})
    numeric = set(given.get("numeric") or [])
    rules = privacy.get("rare_categories") or {}
    rows: list[tuple[str, str]] = []
    for c, labels in cats.items():
        if list(labels) == list(before.get(c, [])):
            continue
        if c in dates:
            age_at, cohort = _reach(params.get("age_at"), c), _reach(params.get("cohort"), c)
            if age_at is not None:
                how = f"age in whole years on {age_at}" + (", in bands" if any(parse_interval(v) for v in labels) else "")
            elif cohort is not None:
                how = f"{cohort}-year cohorts"
            elif any(str(v).startswith("[") for v in labels):
                how = "bands between break dates"
            else:
                how = f"{_reach(params.get('date_period'), c) or 'month'} only"
            rows.append((c, f"{how}: {_labels(labels)}"))
        elif c in numeric:
            ivs = [parse_interval(v) for v in labels]
            cuts = [iv.high for iv in ivs[:-1] if iv is not None]
            rows.append((c, f"{len(labels)} intervals, cut at {', '.join(fmt_number(v) for v in cuts)}: "
                            f"{_labels(labels)}" if cuts else _labels(labels)))
        else:
            rule = rules.get(c)
            level = _reach(params.get("level"), c)
            how = rule or (f"level {level} of the declared hierarchy" if level else "recoded")
            rows.append((c, f"{how}; the release's categories: {_labels(labels)}"))
    for c, rule in rules.items():
        if c not in cats:  # no category was rare: the rule held and changed nothing
            rows.append((c, f"{rule} (none did)"))
    return rows


def _noise_in_data_units(name: str, params: Mapping[str, Any], given: Mapping[str, Any],
                         release: Any) -> list[tuple[str, str]]:
    level = params.get("level")
    rows = [("level", f"each value changed with probability {fmt_number(level)}")]
    if release is None or not _is_number(level):
        return rows
    import numpy as np
    import pandas as pd

    dates = set(given.get("dates") or {})
    cls = given.get("class_column")
    for c in given.get("numeric") or []:
        if c == cls or c == given.get("weight") or c not in release.columns:
            continue
        col = release[c]
        days = c in dates or not pd.api.types.is_numeric_dtype(col)
        v = (pd.to_datetime(col, errors="coerce").to_numpy(dtype="datetime64[D]").astype("float64")
             if days else pd.to_numeric(col, errors="coerce").to_numpy(dtype=float))
        v = v[np.isfinite(v)] if not days else v[~np.isnan(v)]
        if v.size < 2:
            continue
        unit = " days" if days else ""
        if name == "gaussian-noise":
            sd = float(np.std(v, ddof=1)) / math.sqrt(1.0 + float(level or 0.0))  # a number: checked above
            rows.append((c, f"a changed value gets Gaussian noise of standard deviation ≈ {fmt_number(sd)}{unit} "
                            "(the column's own, estimated from the release)"))
        else:
            # the range itself is two records' values: its spread is said by the standard deviation
            rows.append((c, f"a changed value is drawn uniformly over the column's range; the release's standard "
                            f"deviation is {fmt_number(float(np.std(v, ddof=1)))}{unit}"))
    return rows


def _reach(value: Any, column: str) -> Any:
    """A per-column parameter's value for ``column`` (a dict names columns, ``"*"`` the rest)."""
    if isinstance(value, Mapping):
        return value.get(column, value.get("*"))
    return value


def _labels(labels: Sequence[Any]) -> str:
    labels = [str(v) for v in labels]
    if len(labels) <= MOST_LABELS:
        return ", ".join(labels)
    return ", ".join(labels[:MOST_LABELS - 3]) + ", …, " + ", ".join(labels[-2:]) + f" ({len(labels)} in all)"


def _share(v: Any) -> str:
    return f"{float(v):.1%}" if _is_number(v) else str(v)


def _value(v: Any) -> str:
    if isinstance(v, float):
        return fmt_number(v)
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return str(v)


def _is_number(v: Any) -> bool:
    try:
        return v is not None and not isinstance(v, bool) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False
