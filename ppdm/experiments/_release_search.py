"""The search of a refused release for a setting of its technique that passes the gate.

:class:`_Making` turns a technique's output into a checked z the way
:func:`ppdm.experiments.release.release` does, so that :func:`passing_strength` can try
stronger settings (:func:`stronger_values`) on the same records and name the first that
passes. Split from :mod:`ppdm.experiments.release`, which re-exports every name here.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.data.types import round_to_decimals, source_decimals, working_frame
from ppdm.errors import ParameterError, PPDMError
from ppdm.metrics.release_check import GateOptions, GateThresholds, ReleaseCheck, gate, release_check


@dataclass
class _Making:
    """How :func:`release` turns a technique's output into a checked z: typed by the output
    schema, rounded, compared with x. Kept so the strength search makes its tries the same way."""

    work: pd.DataFrame
    schema: Schema
    decimals: dict[str, int] | None
    declared_only: bool
    aligned: bool
    thresholds: GateThresholds

    def finish(self, tech: Any, z: pd.DataFrame) -> tuple[pd.DataFrame, Schema, dict[str, int], ReleaseCheck]:
        """(z rounded, its schema, the decimals, the release check) of the technique's output ``z``."""
        sch = self.schema
        # recoding releases some numeric columns as labels: z is typed by the technique's output schema
        out_sch = tech.output_schema() if hasattr(tech, "output_schema") else sch
        out_sch = replace(out_sch, identifiers=list(sch.identifiers))
        # decimals seen in x are a property of the records: a technique whose output may only
        # depend on the declared domain is rounded to the decimals asked for, never to x's
        seen = {} if self.declared_only else source_decimals(self.work, sch.numeric)
        dec = {**seen, **{c: int(d) for c, d in (self.decimals or {}).items()}}
        dec = {c: d for c, d in dec.items() if c in out_sch.numeric and c not in out_sch.dates}
        z = round_to_decimals(z, dec)
        check = release_check(working_frame(self.work, sch.numeric), working_frame(z, out_sch.numeric), out_sch,
                              record_aligned=self.aligned, thresholds=self.thresholds, decimals=dec)
        return z, out_sch, dec, check

    def check(self, technique: Any) -> ReleaseCheck:
        """The release check of a fresh fit of ``technique`` on the same records (warnings muted)."""
        tech = type(technique)(**technique.get_params(deep=False))
        tech.set_params(schema=replace(self.schema, identifiers=[]), class_column=self.schema.class_column)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = tech.fit_transform(self.work)
        return self.finish(tech, z)[3]


#: a refused release: at most this many stronger settings are tried ...
SEARCH_TRIES = 6
#: ... and no new one is started after this many seconds (nor after three times the release's own time,
#: when that is longer than 10 s)
SEARCH_SECONDS = 60.0


def stronger_values(now: float, direction: str, limit: float | None, tries: int = SEARCH_TRIES) -> list[float]:
    """Up to ``tries`` settings stronger than ``now``, weakest first: a geometric ladder up to
    ``limit`` (its last rung) or, without a limit, doubling ("increasing") or dividing by ten
    ("decreasing"); two significant digits, whole numbers for a whole-number parameter."""
    whole = isinstance(now, (int, np.integer)) and not isinstance(now, bool)
    v = float(now)
    if v <= 0 or not np.isfinite(v):
        return []
    if direction == "increasing":
        if limit is not None and float(limit) <= v:
            return []
        ratio = (float(limit) / v) ** (1 / tries) if limit is not None else 2.0
    elif direction == "decreasing":
        if limit is not None and float(limit) >= v:
            return []
        ratio = (float(limit) / v) ** (1 / tries) if limit is not None else 0.1
    else:
        raise ParameterError(f"a strength parameter grows 'increasing' or 'decreasing', not {direction!r}")
    out: list[float] = []
    for i in range(1, tries + 1):
        c = float(limit) if limit is not None and i == tries else v * ratio ** i
        c = float(round(c)) if whole else float(f"{c:.2g}")
        if (c > v if direction == "increasing" else c < v) and (not out or c != out[-1]):
            out.append(int(c) if whole else c)
    return out


def passing_strength(technique: Any, making: _Making, options: GateOptions, took: float = 0.0,
                     columns: Iterable[str] = ()) -> tuple[Any, str]:
    """A setting of one of the technique's protective parameters that passes the gate on this
    table (:meth:`ppdm.anonymize.base.Technique.strength_settings`: its ``strength_param`` and
    its ``other_strength_params``, e.g. the Framework's ``sigma_frac`` and ``p_cat``).

    The parameters that change the kind of attribute the refusal names (``columns``: categorical
    or numeric) are tried first, then the others, until one passes. For each, a coarse ladder of
    :func:`stronger_values` (three rungs up to the parameter's limit, else doubling or dividing
    by ten) until one passes, then halving the step (geometric midpoints) between the last that
    failed and the first that passed — at most :data:`SEARCH_TRIES` tries per parameter, all
    started within :data:`SEARCH_SECONDS` in all. Returns ``(("p_cat", 0.46), "p_cat ≥ 0.46
    passes on this table (now 0.1)")``, or ``(None, what was tried)`` when none passed, or
    ``(None, "")`` for a technique without such a parameter. Each try is a full release of the
    same records with the same seed, never published."""
    settings = technique.strength_settings() if hasattr(technique, "strength_settings") else []
    settings = [s for s in settings
                if not isinstance(s[3], bool) and isinstance(s[3], (int, float, np.integer, np.floating))]
    if not settings:
        return None, ""
    cols = set(columns)
    sch = making.schema
    kinds = {"categorical" if c in sch.categorical or c == sch.class_column else "numeric" for c in cols}
    # a stable sort: the parameters that change the refused columns' kind first, else the declared order
    settings.sort(key=lambda s: 0 if s[4] == "all" or s[4] in kinds else 1)
    budget = min(SEARCH_SECONDS, max(3 * took, 10.0))
    start = time.monotonic()
    said: list[str] = []
    for name, direction, limit, now, _ in settings:
        if said and time.monotonic() - start > budget:
            said.append(f"{name} not tried (the search stopped after {time.monotonic() - start:.0f} s)")
            continue
        strong, text = _search_one(technique, making, options, name, direction, limit, now, start, budget)
        if strong is not None:
            return (name, strong), text
        said.append(text)
    return None, "; ".join(said)


def _search_one(technique: Any, making: _Making, options: GateOptions, name: str, direction: str,
                limit: float | None, now: Any, start: float, budget: float) -> tuple[Any, str]:
    """:func:`passing_strength` on one parameter: the value that passes (or ``None``) and what to say."""
    whole = isinstance(now, (int, np.integer))
    ladder = stronger_values(now, direction, limit, tries=3 if limit is not None else SEARCH_TRIES)
    if not ladder:
        return None, f"{name} is at its strongest ({now:g}) and does not pass on this table"
    tried: list[str] = []

    def passes(v: float) -> bool:
        tried.append(f"{v:g}")
        try:
            check = making.check(_with(technique, name, v))
        except PPDMError:
            return False
        return not any(f.level == "refuse" and not options.allows(f) for f in gate(check, options.thresholds))

    def out_of_time() -> bool:
        return len(tried) >= SEARCH_TRIES or (bool(tried) and time.monotonic() - start > budget)

    weak, strong = float(now), None
    for v in ladder:
        if out_of_time():
            break
        if passes(v):
            strong = v
            break
        weak = v
    while strong is not None and not out_of_time():
        mid = float(np.sqrt(weak * float(strong)))
        mid = round(mid) if whole else float(f"{mid:.2g}")
        if mid in (weak, strong) or f"{mid:g}" in tried:
            break
        if passes(mid):
            strong = mid
        else:
            weak = mid
    if strong is not None:
        return strong, f"{name} {'≥' if direction == 'increasing' else '≤'} {strong:g} passes on this table (now {now:g})"
    stopped = f"; the search stopped after {time.monotonic() - start:.0f} s" if len(tried) < len(ladder) else ""
    if not tried:
        return None, f"{name} not tried{stopped}"
    return None, f"none of {name} = {', '.join(tried)} passes on this table (now {now:g}{stopped})"


def _with(technique: Any, name: str, value: Any) -> Any:
    """A new, unfitted technique like ``technique`` with ``name`` set to ``value``."""
    return type(technique)(**{**technique.get_params(deep=False), name: value})
