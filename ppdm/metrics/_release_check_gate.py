"""The release gate: a release check judged into refusals and warnings, with their messages.

:class:`GateThresholds` says where the gate refuses and warns, :class:`GateOptions` carries
them with the owner's overrides, and :func:`gate` turns a :class:`ReleaseCheck` into
:class:`Finding` objects whose messages name shares and columns only. Split from
:mod:`ppdm.metrics.release_check`, which re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ppdm.metrics._release_check_cells import NEAR_TOLERANCE, UNTOUCHED_SHARE
from ppdm.metrics._release_check_result import ReleaseCheck, _pct


@dataclass(frozen=True)
class GateThresholds:
    """Where the release gate refuses and warns (shares between 0 and 1; docs/roles_and_release.md).

    Refusals (each overridden by its own flag, :data:`GATE_OVERRIDES`):

    * ``unchanged`` — at least this share of the records come out unchanged on every column;
    * ``verbatim_unique`` — more than this share are unchanged on every column *and* their
      original is unique in x on its quasi-identifiers;
    * ``untouched_unique`` — the quasi-identifiers no technique touched make more than this
      share of the original records unique;
    * ``pass_through_distinct`` — a column no technique models (the weight) has at least this
      share of distinct values, so joining on it finds people (checked before anonymizing);
    * ``untouched_column_unique`` — any other released column that is untouched (below) and
      whose value alone makes more than this share of x's records unique: a join key like a
      weight, refused like one.

    Measuring: a column counts as untouched from ``untouched_share`` of unchanged cells, and
    a record as near-verbatim when every numeric value is within ``near_verbatim`` standard
    deviations of its original (or within the release's precision) and every categorical one
    equal; near-verbatim records unique in x count with the verbatim ones in ``verbatim_unique``.

    Warnings, below the refusal lines: ``warn_verbatim`` (records unchanged on every column),
    ``warn_unchanged_keys`` (records whose quasi-identifiers are all unchanged),
    ``warn_untouched_unique`` (records the untouched quasi-identifiers make unique) and
    ``warn_pass_through_unique`` (records a pass-through column makes unique) and
    ``warn_restorable_key`` (at least this share of a blanked or recoded quasi-identifier's cells
    are given back by another released column, :mod:`ppdm.metrics.restorable`).
    """

    unchanged: float = 0.95
    verbatim_unique: float = 0.05
    untouched_unique: float = 0.5
    pass_through_distinct: float = 0.9
    warn_verbatim: float = 0.05
    warn_unchanged_keys: float = 0.05
    warn_untouched_unique: float = 0.05
    warn_pass_through_unique: float = 0.05
    untouched_share: float = UNTOUCHED_SHARE
    near_verbatim: float = NEAR_TOLERANCE
    untouched_column_unique: float = 0.05
    warn_restorable_key: float = 0.95

    @classmethod
    def of(cls, value: GateThresholds | dict[str, Any] | None) -> GateThresholds:
        """Thresholds from ``None`` (the defaults), a dict of some of them by name, or themselves."""
        from dataclasses import fields, replace

        from ppdm.errors import ParameterError

        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ParameterError(f"gate thresholds must be a dict of names to shares, got {type(value).__name__}")
        names = [f.name for f in fields(cls)]
        out = {}
        for k, v in value.items():
            if k not in names:
                raise ParameterError(f"unknown gate threshold {k!r}; the thresholds are {', '.join(names)}")
            try:
                f = float(v)
            except (TypeError, ValueError):
                raise ParameterError(f"gate threshold {k} must be a number, got {v!r}") from None
            if not 0.0 <= f <= 1.0:
                raise ParameterError(f"gate threshold {k} is a share between 0 and 1, got {v!r}")
            out[k] = f
        return replace(cls(), **out)


#: refusal rule → (library keyword, command-line flag) that releases anyway
GATE_OVERRIDES = {
    "unchanged": ("allow_unchanged=True", "--allow-unchanged"),
    "verbatim_unique": ("allow_verbatim=True", "--allow-verbatim"),
    "untouched_unique": ("allow_untouched_keys=True", "--allow-untouched-keys"),
    "pass_through_distinct": ("allow_pass_through=[...]", "--allow-pass-through COLUMN"),
    "untouched_column_unique": ("allow_pass_through=[...]", "--allow-pass-through COLUMN"),
}


@dataclass(frozen=True)
class GateOptions:
    """Everything the gate is told, as one object from the command line (``--gate``,
    ``--allow-...``) or the library down to the check: the ``thresholds`` and the refusals
    the owner overrides. ``allow_pass_through`` names the columns declared safe although
    they pass into the release (nearly) unchanged and single records out. ``suggest`` lets a
    refusal of :func:`ppdm.experiments.release.release` re-run the technique to name a setting
    that passes (off for searches that make many releases, such as ``ppdm recommend``)."""

    thresholds: GateThresholds = field(default_factory=GateThresholds)
    allow_unchanged: bool = False
    allow_verbatim: bool = False
    allow_untouched_keys: bool = False
    allow_pass_through: tuple[str, ...] = ()
    suggest: bool = True

    @classmethod
    def of(cls, value: GateOptions | GateThresholds | dict[str, Any] | None = None, **overrides: Any) -> GateOptions:
        """Options from themselves, thresholds (or a dict of some of them), or ``None``; keyword
        ``overrides`` set the ``allow_...`` fields (``True`` ones add to those given, columns
        of ``allow_pass_through`` too)."""
        from dataclasses import replace

        from ppdm.data.roles import split_names

        base = value if isinstance(value, GateOptions) else cls(thresholds=GateThresholds.of(value))
        out: dict[str, Any] = {}
        for k, v in overrides.items():
            if k == "allow_pass_through":
                names = tuple(dict.fromkeys([*base.allow_pass_through, *split_names(v)]))
                out[k] = names
            elif k in ("allow_unchanged", "allow_verbatim", "allow_untouched_keys"):
                out[k] = bool(v) or getattr(base, k)
            else:
                from ppdm.errors import ParameterError

                raise ParameterError(f"unknown gate option {k!r}")
        return replace(base, **out)

    def allows(self, finding: Finding) -> bool:
        """Whether the owner overrides this refusal."""
        if finding.rule in ("pass_through_distinct", "untouched_column_unique"):
            return bool(finding.columns) and all(c in self.allow_pass_through for c in finding.columns)
        return bool({"unchanged": self.allow_unchanged, "verbatim_unique": self.allow_verbatim,
                     "untouched_unique": self.allow_untouched_keys}.get(finding.rule, False))


@dataclass
class Finding:
    """One judgement of the gate: ``level`` "refuse" or "warn", the ``rule`` (a name of
    :class:`GateThresholds`), the measured ``share`` and the ``threshold``, the ``columns``
    responsible (most responsible first) and a ``message`` naming shares and columns only."""

    rule: str
    level: str
    share: float
    threshold: float
    columns: list[str]
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "level": self.level, "share": self.share, "threshold": self.threshold,
                "columns": list(self.columns), "message": self.message}


def _top_unchanged(table: pd.DataFrame, k: int = 3) -> tuple[list[str], str]:
    """The columns most often left unchanged (at least half their cells), as names and text."""
    if table.empty:
        return [], ""
    t = table.sort_values("share_unchanged", ascending=False, kind="stable")
    t = t[t["share_unchanged"] >= 0.5].head(k)
    return list(t["column"]), ", ".join(f"{r.column} {100 * r.share_unchanged:.1f}%" for r in t.itertuples())  # type: ignore[operator, str-bytes-safe]  # pandas-stubs types itertuples' fields as any scalar


def _responsible_keys(check: ReleaseCheck) -> list[str]:
    """Untouched quasi-identifiers, the one whose removal most lowers uniqueness first."""
    keys = check.per_key[check.per_key["untouched"].astype(bool)] if not check.per_key.empty else check.per_key
    if keys.empty:
        return list(check.untouched_keys)
    keys = keys.sort_values(["unique_drop", "unique_alone"], ascending=False, kind="stable")
    return list(keys["column"])


def gate(check: ReleaseCheck, thresholds: GateThresholds | dict[str, Any] | None = None) -> list[Finding]:
    """The refusals and warnings a release check earns under ``thresholds`` (refusals first).

    Nothing is refused or warned twice for one cause: a release refused as (almost) the
    original is not also warned about its verbatim records."""
    t = GateThresholds.of(thresholds)
    n = max(check.n_records, 1)
    out: list[Finding] = []
    refused: set[str] = set()
    if check.share_verbatim >= t.unchanged:
        cols, text = _top_unchanged(check.per_column)
        out.append(Finding("unchanged", "refuse", check.share_verbatim, t.unchanged, cols,
                           f"the release is almost the original: {_pct(check.share_verbatim)} of the records "
                           f"({check.records_verbatim} of {check.n_records}) come out unchanged on every column "
                           f"(refused from {_pct(t.unchanged)})"))
        refused.add("verbatim")
    # a release refused as (almost) the original is not refused again for its verbatim records:
    # allowing the one (allow_unchanged) allows the other
    # near-verbatim records count with the verbatim ones: noise of a hundredth of a standard
    # deviation hides nobody (a check made before near-verbatim records were counted has 0 of them)
    near = max(check.records_near_verbatim_unique, check.records_verbatim_unique)
    if "verbatim" not in refused and near / n > t.verbatim_unique:
        cols, text = _top_unchanged(check.per_key if not check.per_key.empty else check.per_column)
        extra = near - check.records_verbatim_unique
        how = (f"unchanged on every column ({check.records_verbatim_unique}) or within "
               f"{check.near_tolerance:g} standard deviations of their original ({extra})" if extra else
               "unchanged on every column")
        out.append(Finding("verbatim_unique", "refuse", near / n, t.verbatim_unique, cols,
                           f"{_pct(near / n)} of the records ({near} of {check.n_records}) come out {how} while no "
                           "other original record has their quasi-identifiers or all their values (refused above "
                           f"{_pct(t.verbatim_unique)}): whoever knows those finds the record, and all of it is "
                           "(nearly) true" + (f"; quasi-identifiers most often unchanged: {text}" if text else "")))
        refused.add("verbatim")
    # without a pairing a key "untouched" only has x's multiset of values, which tells nothing of
    # a record keeping its own: the copies are judged above, as whole records
    keyed = check.record_aligned and bool(check.untouched_keys)
    if keyed and check.untouched_keys_unique > t.untouched_unique:
        keys = _responsible_keys(check)
        out.append(Finding("untouched_unique", "refuse", check.untouched_keys_unique, t.untouched_unique, keys,
                           f"quasi-identifier(s) {', '.join(keys)} pass into the release untouched and make "
                           f"{_pct(check.untouched_keys_unique)} of the original records unique (refused above "
                           f"{_pct(t.untouched_unique)}); {keys[0]!r} matters most"
                           + _untouched_note(check)))
        refused.add("untouched")
    # any other column that passes (nearly) unchanged and singles records out alone is a join key,
    # like a weight; the weight itself is screened before anonymizing
    named = set(_responsible_keys(check)) if "untouched" in refused else set()
    roles = dict(zip(check.per_column["column"], check.per_column["role"], strict=True)) \
        if not check.per_column.empty else {}
    joins = sorted(((c, u) for c, u in check.untouched_alone.items()
                    if u > t.untouched_column_unique and c not in named and roles.get(c) != "weight"),
                   key=lambda cu: -cu[1])
    if joins:
        share_of = dict(zip(check.per_column["column"], check.per_column["share_unchanged"], strict=True))
        text = ", ".join(f"{c!r} ({_pct(share_of.get(c, 1.0))} unchanged, {_pct(u)} unique)" for c, u in joins)
        out.append(Finding("untouched_column_unique", "refuse", joins[0][1], t.untouched_column_unique,
                           [c for c, _ in joins],
                           f"column(s) {text} pass into the release (nearly) unchanged and alone make more than "
                           f"{_pct(t.untouched_column_unique)} of the original records unique: joining the release "
                           "with the original on them finds those people, as on a weight; round or group them, or "
                           "perturb them"))
    if "verbatim" not in refused and check.share_verbatim > t.warn_verbatim:
        cols, text = _top_unchanged(check.per_column)
        out.append(Finding("warn_verbatim", "warn", check.share_verbatim, t.warn_verbatim, cols,
                           f"{_pct(check.share_verbatim)} of the records ({check.records_verbatim} of "
                           f"{check.n_records}) come out unchanged on every column (warned above "
                           f"{_pct(t.warn_verbatim)})" + (f"; most often unchanged: {text}" if text else "")))
    if "verbatim" not in refused and check.quasi_identifiers and check.value > t.warn_unchanged_keys and \
            check.records_unchanged > check.records_verbatim:
        cols, text = _top_unchanged(check.per_key if not check.per_key.empty else check.per_column)
        out.append(Finding("warn_unchanged_keys", "warn", check.value, t.warn_unchanged_keys, cols,
                           f"{_pct(check.value)} of the records ({check.records_unchanged} of {n}) keep all their "
                           f"quasi-identifiers unchanged (warned above {_pct(t.warn_unchanged_keys)})"
                           + (f"; most often unchanged: {text}" if text else "")))
    if "untouched" not in refused and keyed and check.untouched_keys_unique > t.warn_untouched_unique:
        keys = _responsible_keys(check)
        out.append(Finding("warn_untouched_unique", "warn", check.untouched_keys_unique, t.warn_untouched_unique, keys,
                           f"quasi-identifier(s) {', '.join(keys)} pass into the release untouched and make "
                           f"{_pct(check.untouched_keys_unique)} of the original records unique (warned above "
                           f"{_pct(t.warn_untouched_unique)}); {keys[0]!r} matters most" + _untouched_note(check)))
    out.extend(_restorable_findings(check, t))
    return out


def _restorable_findings(check: ReleaseCheck, t: GateThresholds) -> list[Finding]:
    """A warning per blanked or recoded quasi-identifier that a released column gives back in at
    least ``warn_restorable_key`` of its changed cells (the column restoring most of them named)."""
    table = check.restorable_keys
    if table is None or table.empty:
        return []
    out = []
    best = table.sort_values("share_restored", ascending=False, kind="stable").drop_duplicates("key")
    r: Any  # a row of best; pandas-stubs types its fields as any scalar
    for r in best.itertuples():
        if r.share_restored < t.warn_restorable_key:
            continue
        cells = f"{int(r.affected)} cell(s)"
        out.append(Finding("warn_restorable_key", "warn", float(r.share_restored), t.warn_restorable_key,
                           [str(r.column), str(r.key)],
                           f"{r.key!r} {r.change} in {cells} is restored by the released {r.column!r} in "
                           f"{_pct(r.share_restored)} of them (warned from {_pct(t.warn_restorable_key)}); release "
                           f"{r.column} recoded too, or leave it out"))
    return out


def _untouched_note(check: ReleaseCheck) -> str:
    """Says when a key counts as untouched although a few of its cells changed."""
    if check.untouched_share >= 1.0 or check.per_key.empty:
        return ""
    part = check.per_key[check.per_key["untouched"].astype(bool) & (check.per_key["share_unchanged"] < 1.0)]
    if part.empty:
        return ""
    return (" (a key counts as untouched from " + _pct(check.untouched_share) + " of unchanged cells: "
            + ", ".join(f"{r.column} {100 * r.share_unchanged:.1f}%" for r in part.itertuples()) + ")")  # type: ignore[operator, str-bytes-safe]  # pandas-stubs types itertuples' fields as any scalar
