"""Privacy models of ARX, ANJANA and pyCANON on the sensitive attribute of a release.

An intruder who knows a person's quasi-identifiers finds the *equivalence class* of the
release that shares them and reads the distribution of a sensitive attribute in it. Distinct
l-diversity (:func:`ppdm.metrics.keyvar.l_diversity`) asks how many values the class holds; the
models here ask how much the class's distribution q tells beyond the table's distribution p:

* :func:`t_closeness` — the Earth Mover's Distance between q and p (Li, Li & Venkatasubramanian
  2007, ICDE, §4): equal ground distance for categories (EMD = ½ Σ|q_i − p_i|, the total
  variation distance, §4.2 eq. 2), ordered distance for numbers (m distinct values in order,
  EMD = 1/(m−1) Σ_i |Σ_{j≤i} (q_j − p_j)|, §4.2 eq. 1); ``value`` = the largest over the classes.
* :func:`recursive_cl_diversity` — recursive (c,l)-diversity (Machanavajjhala et al. 2007, TKDD,
  §4.2 Def. 4.3): with the counts of a class's values in decreasing order r_1 ≥ … ≥ r_m, a class
  is (c,l)-diverse when r_1 < c (r_l + r_{l+1} + … + r_m).
* :func:`alpha_k_anonymity` — (α,k)-anonymity (Wong, Li, Fu & Wang 2006, KDD, §3 Def. 2): the
  table is k-anonymous and no sensitive value makes up more than α of a class.
* :func:`basic_beta_likeness` and :func:`enhanced_beta_likeness` — β-likeness (Cao & Karras
  2012, PVLDB 5(11), §3 Def. 2–3): a value's share may grow in a class by at most β relative to
  the table, (q_i − p_i)/p_i ≤ β; the enhanced form caps the allowed growth of a frequent value
  at −ln p_i as well.
* :func:`delta_disclosure` — δ-disclosure privacy (Brickell & Shmatikov 2008, KDD, §3 Def. 4):
  |ln(q_i/p_i)| < δ for every value present in a class.

**Classes** are read as :func:`ppdm.metrics.keyvar.l_diversity` reads them, a blank key as every
key-variable measure reads it (``blanks``, :mod:`ppdm.data.blanks`). Under the default
``"wildcard"`` reading (sdcMicro's: a blank matches any value) a record's class is every record
the wildcard rule matches with its key pattern, so classes overlap: one class per distinct
pattern, counted once per record in ``records_failing`` (:func:`wildcard_sensitive_cells`);
under ``"strict"`` (pyCANON, ARX) a blank is a value of its own and classes are the records of
equal keys (:func:`ppdm.metrics.keyvar.group_codes`). Without blank keys both are the same. The
k of (α,k)-anonymity is the records of a class, :func:`ppdm.metrics.keyvar.k_anonymity`'s fk
under the same reading.

**Blank sensitive values** tell the intruder nothing: they are left out of the class's and the
table's distributions, and a class whose sensitive values are all blank discloses nothing and
meets every model (``blank_classes`` counts them). sdcMicro's distinct l-diversity counts a blank
as one more value instead.

Every function reads one table (the registered measures evaluate the release ``z`` and report
the same on ``x`` in ``original``) and returns a result whose ``value`` is the worst over the
classes and the sensitive attributes, ``per_sensitive`` the same per attribute with the share of
records in classes that fail the model at the given parameter, and, for the library only,
``per_class`` (class sizes and values, no key or sensitive value, never printed or serialised).

Where pyCANON 1.3 differs (docs/measures.md has the list): it drops records with a missing key
(``blanks="strict"`` keeps them in a class of their own, the default reads them as wildcards);
its recursive c is an integer computed from the counts sorted in *increasing* order; its
enhanced β is max_i min(β_basic, −ln p_i), not the smallest β the enhanced model allows; ARX's
δ uses log base 2 (ours and pyCANON's: the natural log).

This module stays whole (about 620 lines): six registered measures that share one preparation of
the equivalence classes, each beside its function (``tests/test_library_exports.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import pandas as pd

from ppdm.data.class_distributions import SensitiveCells, equal_emd, ordered_emd, sensitive_cells
from ppdm.data.class_distributions import is_number as _is_number
from ppdm.errors import ParameterError
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.metrics.keyvar import (
    DEFAULT_READING,
    KEY_OPTIONS,
    _finish,
    _opt,
    check_keys,
    check_reading,
    check_sensitive,
    context_blanks,
    group_codes,
    key_codes,
    lookup_keys,
    wildcard_value_counts,
)

#: ground distances of t-closeness: equal for categories, ordered for numbers, or read from the dtype
GROUNDS = ("auto", "equal", "ordered")


# ------------------------------------------------------------------ wildcard classes
def _value_codes(s: pd.Series, ordered: bool) -> np.ndarray:
    """Codes of the sensitive values (−1 blank), in the values' order when ``ordered`` (numbers only)."""
    if ordered and not _is_number(s):
        raise ParameterError(f"sensitive attribute {s.name!r} is not numeric: its values have no order "
                             "(t_closeness.ground=equal)")
    codes, _ = pd.factorize(s, sort=ordered, use_na_sentinel=True)
    return codes.astype(np.int64, copy=False)


def wildcard_sensitive_cells(codes: np.ndarray, s: pd.Series, *, ordered: bool = False) -> SensitiveCells:
    """:class:`SensitiveCells` of attribute ``s`` when a blank key matches any value (sdcMicro's
    rule, :mod:`ppdm.data.blanks`): one class per distinct key pattern of ``codes`` (as
    :func:`ppdm.metrics.keyvar.key_codes` gives, −1 a blank), holding every record the wildcard
    rule matches with that pattern — the group :func:`ppdm.metrics.keyvar.l_diversity` reads —
    so classes overlap; ``members`` counts the records whose own pattern it is. The counts come
    from :func:`ppdm.metrics.keyvar.wildcard_value_counts`. ``p`` is the table's distribution,
    each record once."""
    sc = _value_codes(s, ordered)
    inv, u, cls, val, cnt = wildcard_value_counts(codes, sc, np.ones(len(sc)))
    val = val.astype(np.int64, copy=False)
    size = np.rint(np.bincount(cls, weights=cnt, minlength=u)).astype(np.int64)
    ok = val >= 0
    known = np.rint(np.bincount(cls[ok], weights=cnt[ok], minlength=u)).astype(np.int64)
    cls, val, cnt = cls[ok], val[ok], cnt[ok]
    order = np.lexsort((val, cls))  # by class, then value, as sensitive_cells sorts them
    present = sc >= 0
    m = int(sc.max()) + 1 if present.any() else 0
    p = np.bincount(sc[present], minlength=m) / max(int(present.sum()), 1)
    return SensitiveCells(sensitive=str(s.name), ordered=ordered, size=size, known=known, cls=cls[order],
                          val=val[order], count=cnt[order].astype(float), p=p,
                          members=np.bincount(inv, minlength=u))


def relative_gain(c: SensitiveCells) -> np.ndarray:
    """Per cell, the relative growth of its value's share, (q − p)/p, where q > p (else 0)."""
    pv = c.p[c.val]
    return np.where(c.q > pv, (c.q - pv) / pv, 0.0)


# ----------------------------------------------------------------------------- the results
@dataclass
class PrivacyModelResult(RecordDetailMixin):
    """What every privacy model reports: the worst value over the classes and sensitive
    attributes (``value``), per sensitive attribute in ``per_sensitive``, and the share of
    records in classes that fail the model at its parameter (``records_failing``)."""

    # one row per class: kept for library users, left out of details() and to_dict() like per-record data
    record_level: ClassVar[tuple[str, ...]] = ("per_class",)

    keys: list[str] = field(default_factory=list)
    sensitive: list[str] = field(default_factory=list)
    n: int = 0
    n_classes: int = 0
    blanks: str = DEFAULT_READING  # how a blank key was read (ppdm.data.blanks.BLANK_READINGS)
    blank_classes: int = 0  # classes whose sensitive values are all blank (they disclose nothing)
    records_failing: float = 0.0
    worst: str = ""  # the sensitive attribute that gives the value
    original: float | None = None
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)
    per_sensitive: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: per class and sensitive attribute: size and value (no key or sensitive value); library only
    per_class: pd.DataFrame | None = record_field()


@dataclass
class TClosenessResult(PrivacyModelResult):
    """t-closeness: the largest EMD between a class's and the table's sensitive distribution
    (0 to 1); lower is better."""

    t: float = 0.2
    ground: dict[str, str] = field(default_factory=dict)  # per attribute: "equal" or "ordered"


@dataclass
class CLDiversityResult(PrivacyModelResult):
    """Recursive (c,l)-diversity: the share of records in classes with r_1 ≥ c (r_l + … + r_m)
    or fewer than l values; lower is better. ``c_needed``: the largest r_1/(r_l + … + r_m)
    (the table is (c,l)-diverse for every c above it; infinite when a class has fewer than l values)."""

    c: float = 3.0
    l: int = 2  # noqa: E741 - the model's own letter
    c_needed: float = 0.0
    distinct_l: int = 0  # the fewest distinct non-blank values in a class


@dataclass
class AlphaKResult(PrivacyModelResult):
    """(α,k)-anonymity: the largest share of one sensitive value in a class, a class with fewer
    than k records (fk < k) counting as 1; lower is better."""

    alpha: float = 0.5
    k: int = 2
    achieved_k: int = 0  # smallest fk
    achieved_alpha: float = 0.0  # the largest share, whatever the class sizes
    values: list[str] | None = None  # the sensitive values bounded (None: every value)


@dataclass
class BetaLikenessResult(PrivacyModelResult):
    """Basic β-likeness: the largest relative growth (q − p)/p of a sensitive value's share in a
    class; lower is better."""

    beta: float = 1.0


@dataclass
class EnhancedBetaLikenessResult(PrivacyModelResult):
    """Enhanced β-likeness at ``beta``: the largest (q − p)/p over its allowed growth
    min(β, −ln p); at most 1 when the table meets the model; lower is better. ``beta_needed``: the
    smallest β it meets (infinite when some growth exceeds −ln p, which no β allows)."""

    beta: float = 1.0
    beta_needed: float = 0.0
    basic_beta: float = 0.0


@dataclass
class DeltaDisclosureResult(PrivacyModelResult):
    """δ-disclosure privacy: the largest |ln(q/p)| of a sensitive value present in a class;
    lower is better."""

    delta: float = 1.0


# ------------------------------------------------------------------------------ arguments
def _number(v: Any, what: str, *, low: float = 0.0, strict: bool = True, high: float | None = None) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} must be a number, got {v!r}") from None
    if isinstance(v, bool) or not math.isfinite(f) or f < low or (strict and f == low) or (high is not None
                                                                                           and f > high):
        bound = f"> {low:g}" if strict else f"≥ {low:g}"
        raise ParameterError(f"{what} must be a number {bound}{f' and ≤ {high:g}' if high is not None else ''}, "
                             f"got {v!r}")
    return f


def _integer(v: Any, what: str, low: int = 1) -> int:
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ParameterError(f"{what} must be an integer ≥ {low}, got {v!r}")
    return int(v)


_R = TypeVar("_R", bound=PrivacyModelResult)


@dataclass
class _Classes:
    """A table's classes: the checked keys and sensitive attributes, the key codes, each record's
    key pattern (``group``: dense ids, a blank a value of its own) and whether a class is every
    record the wildcard rule matches with a pattern (blank keys read as wildcards) or the records
    of equal keys."""

    keys: list[str]
    sensitive: list[str]
    codes: np.ndarray
    group: np.ndarray
    blanks: str
    wildcard: bool
    #: records of the table
    n: int
    #: the ``per_sensitive`` rows and per-class tables added so far (:meth:`add`, :meth:`add_table`)
    per: list[dict[str, Any]] = field(default_factory=list)
    rows: list[pd.DataFrame] = field(default_factory=list)

    @property
    def n_classes(self) -> int:
        """One class per distinct key pattern, under either reading."""
        return int(self.group.max()) + 1 if len(self.group) else 0

    def cells(self, s: pd.Series, *, ordered: bool = False) -> SensitiveCells:
        """:class:`SensitiveCells` of ``s`` over these classes."""
        if self.wildcard:
            return wildcard_sensitive_cells(self.codes, s, ordered=ordered)
        return sensitive_cells(self.group, s, ordered=ordered)

    def result(self, kind: type[_R], **params: Any) -> _R:
        """An empty ``kind`` result over these classes, with the model's ``params``."""
        return kind(value=0.0, keys=self.keys, sensitive=self.sensitive, n=self.n, n_classes=self.n_classes,
                    blanks=self.blanks, **params)

    def add_table(self, row: dict[str, Any], table: pd.DataFrame) -> None:
        """Add a sensitive attribute's ``per_sensitive`` row (:func:`_row`) and per-class table."""
        self.per.append(row)
        self.rows.append(table)

    def add(self, s: str, c: SensitiveCells, column: str, by_class: np.ndarray, fails: np.ndarray,
            **extra: Any) -> None:
        """Add sensitive attribute ``s``'s outcome: its ``per_sensitive`` row (:func:`_row`, valued at
        the largest ``by_class``) and its per-class table (``by_class`` as ``column``)."""
        self.add_table(_row(c, by_class.max(initial=0.0), fails, self.n, **extra),
                       pd.DataFrame({"sensitive": s, "size": c.size, "known": c.known, column: by_class}))

    def finish(self, res: _R) -> _R:
        """``res`` with the worst attribute's value and the per-attribute and per-class tables."""
        table = pd.DataFrame(self.per)
        i = cast(int, table["value"].idxmax())  # a RangeIndex label
        res.value = float(table["value"].max())  # the value at i
        res.worst = str(table.loc[i, "sensitive"])
        res.records_failing = float(table["records_failing"].max())
        res.blank_classes = int(table["blank_classes"].max())
        res.per_sensitive = table
        res.per_class = pd.concat(self.rows, ignore_index=True) if self.rows else pd.DataFrame()
        return res


def _prepare(df: pd.DataFrame, keys: Any, sensitive: Any, measure: str, blanks: str | None) -> _Classes:
    """The classes of ``df``, blank keys read as ``blanks`` says (:mod:`ppdm.data.blanks`; the
    wildcard reading only changes anything when some key is blank)."""
    keys = check_keys(df, keys, measure=measure)
    sensitive = check_sensitive(sensitive, df.columns, keys, measure=measure)
    blanks = check_reading(blanks)
    codes = key_codes(df, keys)
    return _Classes(keys=keys, sensitive=sensitive, codes=codes, group=group_codes(codes), blanks=blanks,
                    wildcard=blanks == "wildcard" and bool((codes < 0).any()), n=len(df))


def _row(c: SensitiveCells, value: float, fails: np.ndarray, n: int, **extra: Any) -> dict[str, Any]:
    """One ``per_sensitive`` row: the attribute's value, its distinct values, the classes and
    records failing the model (each record once, in the class of its own key), and the blank classes."""
    return {"sensitive": c.sensitive, "value": float(value), "distinct_values": c.m,
            "classes_failing": int(fails.sum()), "records_failing": float(c.own[fails].sum() / n) if n else 0.0,
            "blank_classes": int((c.known == 0).sum()), **extra}


# ----------------------------------------------------------------------------- t-closeness
def t_closeness(df: pd.DataFrame, keys: Any, sensitive: Any, t: float = 0.2, *,
                ground: str | dict[str, str] = "auto", blanks: str | None = None) -> TClosenessResult:
    """t-closeness of the sensitive attributes (Li, Li & Venkatasubramanian 2007, §4).

    For every class, the Earth Mover's Distance between its distribution of the sensitive
    values and the whole table's: under the equal ground distance (categories) it is the total
    variation ½ Σ_i |q_i − p_i|; under the ordered distance (numbers; the table's m distinct
    values in order, neighbours 1/(m−1) apart) it is 1/(m−1) Σ_i |Σ_{j≤i} (q_j − p_j)|. ``ground``
    (one for all attributes, or per attribute) is "equal", "ordered" or "auto" (ordered for a
    numeric column). ``value`` is the largest EMD: the table is t-close for every t at or above it;
    ``records_failing`` is the share of records in classes with EMD > ``t``. ``blanks`` reads a
    blank key as :func:`ppdm.metrics.keyvar.l_diversity` does (module docstring: "wildcard", the
    default, or "strict"); every model here takes it.
    """
    t = _number(t, "t-closeness t", strict=False, high=1.0)
    cl = _prepare(df, keys, sensitive, "t-closeness", blanks)
    grounds = ground if isinstance(ground, dict) else {s: ground for s in cl.sensitive}
    res = cl.result(TClosenessResult, t=t)
    for s in cl.sensitive:
        g = grounds.get(s, "auto")
        if g not in GROUNDS:
            raise ParameterError(f"t-closeness ground must be one of {', '.join(GROUNDS)}, got {g!r}")
        ordered = _is_number(df[s]) if g == "auto" else g == "ordered"
        c = cl.cells(df[s], ordered=ordered)
        emd = ordered_emd(c) if ordered else equal_emd(c)
        res.ground[s] = "ordered" if ordered else "equal"
        cl.add(s, c, "emd", emd, emd > t + 1e-12, ground=res.ground[s])
    return cl.finish(res)


# --------------------------------------------------------------- recursive (c,l)-diversity
def recursive_cl_diversity(df: pd.DataFrame, keys: Any, sensitive: Any, c: float = 3.0, l: int = 2,  # noqa: E741
                           *, blanks: str | None = None) -> CLDiversityResult:
    """Recursive (c,l)-diversity (Machanavajjhala et al. 2007, §4.2): with a class's value counts
    in decreasing order r_1 ≥ r_2 ≥ … ≥ r_m, the class is (c,l)-diverse when
    r_1 < c (r_l + r_{l+1} + … + r_m) — the most frequent value does not dominate the tail left
    after the l−1 most frequent ones. A class with fewer than l distinct values never is.

    ``value`` is the share of records in classes that are not (c,l)-diverse (0: the table is);
    ``c_needed`` is the largest r_1/(r_l + … + r_m) over the classes (the table is (c,l)-diverse
    for every c above it), ``distinct_l`` the fewest distinct values in a class.
    """
    c = _number(c, "(c,l)-diversity c")
    l = _integer(l, "(c,l)-diversity l")  # noqa: E741
    cl = _prepare(df, keys, sensitive, "(c,l)-diversity", blanks)
    res = cl.result(CLDiversityResult, c=c, l=l)
    need_all, distinct_all = 0.0, None
    for s in cl.sensitive:
        cells = cl.cells(df[s])
        # counts in decreasing order within each class: rank 0 is r_1
        order = np.lexsort((-cells.count, cells.cls))
        cls, cnt = cells.cls[order], cells.count[order]
        st = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]]) if len(cls) else np.zeros(0, int)
        rank = np.arange(len(cls)) - np.repeat(st, np.diff(np.r_[st, len(cls)]))
        r1 = np.zeros(cells.n_classes)
        r1[cls[st]] = cnt[st]
        head = np.bincount(cls[rank < l - 1], weights=cnt[rank < l - 1], minlength=cells.n_classes)
        tail = cells.known - head  # r_l + … + r_m
        distinct = np.bincount(cls, minlength=cells.n_classes)
        judged = cells.known > 0
        fails = judged & ((distinct < l) | (r1 >= c * tail))
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(judged, np.where(tail > 0, r1 / tail, np.inf), 0.0)
        c_need = float(need.max(initial=0.0))
        d_min = int(distinct[judged].min()) if judged.any() else 0
        need_all = max(need_all, c_need)
        distinct_all = d_min if distinct_all is None else min(distinct_all, d_min)
        row = _row(cells, 0.0, fails, cl.n, c_needed=c_need, distinct_l=d_min)
        row["value"] = row["records_failing"]
        cl.add_table(row, pd.DataFrame({"sensitive": s, "size": cells.size, "known": cells.known,
                                        "distinct": distinct, "c_needed": need, "fails": fails}))
    res.c_needed, res.distinct_l = need_all, int(distinct_all or 0)
    return cl.finish(res)


# ---------------------------------------------------------------------- (α,k)-anonymity
def alpha_k_anonymity(df: pd.DataFrame, keys: Any, sensitive: Any, alpha: float = 0.5, k: int = 2, *,
                      values: Any = None, blanks: str | None = None) -> AlphaKResult:
    """(α,k)-anonymity (Wong et al. 2006, §3): every class has at least k records and no
    sensitive value makes up more than α of it.

    k is read as :func:`ppdm.metrics.keyvar.k_anonymity` reads it with the same ``blanks``: fk,
    the records of a class (every record a blank key's pattern matches under the wildcard
    reading); shares over the same classes, blank sensitive values left out. ``values``
    names the sensitive values whose share is bounded (Wong et al.'s sensitive values, e.g. a
    diagnosis; compared as text), by default every value. ``value`` is the largest share of
    a bounded value in a class, a class with fewer than k records counting as 1 (it fails
    whatever its values); ``achieved_alpha`` is the largest share whatever the sizes,
    ``achieved_k`` the smallest fk, ``records_failing`` the share of records in classes with
    fk < k or a share above ``alpha``.
    """
    alpha = _number(alpha, "(α,k)-anonymity alpha", high=1.0)
    k = _integer(k, "(α,k)-anonymity k")
    cl = _prepare(df, keys, sensitive, "(α,k)-anonymity", blanks)
    if isinstance(values, str):
        values = [v.strip() for v in values.split(",") if v.strip()]
    bounded = None if values is None else {str(v) for v in values}
    res = cl.result(AlphaKResult, alpha=alpha, k=k, values=None if bounded is None else sorted(bounded))
    for s in cl.sensitive:
        cells = cl.cells(df[s])
        # a class's records are its fk under either reading (k_anonymity's count, whatever s)
        class_fk = cells.size
        small = class_fk < k
        res.achieved_k = int(class_fk.min())
        q = cells.q
        if bounded is not None:
            _, uniques = pd.factorize(df[s], use_na_sentinel=True)
            keep = np.array([str(u) in bounded for u in uniques], dtype=bool)
            q = np.where(keep[cells.val], q, 0.0)
        share = cells.class_max(q)
        value = np.where(small, 1.0, share)
        fails = small | (share > alpha + 1e-12)
        cl.add_table(_row(cells, value.max(initial=0.0), fails, cl.n, achieved_alpha=float(share.max(initial=0.0))),
                     pd.DataFrame({"sensitive": s, "size": cells.size, "fk": class_fk, "alpha": share}))
    res = cl.finish(res)
    res.achieved_alpha = float(res.per_sensitive["achieved_alpha"].max())
    return res


# ------------------------------------------------------------------------------ β-likeness
def basic_beta_likeness(df: pd.DataFrame, keys: Any, sensitive: Any, beta: float = 1.0, *,
                        blanks: str | None = None) -> BetaLikenessResult:
    """Basic β-likeness (Cao & Karras 2012, §3 Def. 2): in every class, every sensitive value
    whose share q exceeds its share p in the table grows by at most β relative to it,
    (q − p)/p ≤ β. ``value`` is the largest (q − p)/p: the table has basic β-likeness for
    every β at or above it; ``records_failing`` the share of records in classes above ``beta``.
    """
    beta = _number(beta, "β-likeness beta")
    cl = _prepare(df, keys, sensitive, "β-likeness", blanks)
    res = cl.result(BetaLikenessResult, beta=beta)
    for s in cl.sensitive:
        cells = cl.cells(df[s])
        gain = cells.class_max(relative_gain(cells))
        cl.add(s, cells, "beta", gain, gain > beta * (1 + 1e-12))
    return cl.finish(res)


def enhanced_beta_likeness(df: pd.DataFrame, keys: Any, sensitive: Any, beta: float = 1.0, *,
                           blanks: str | None = None) -> EnhancedBetaLikenessResult:
    """Enhanced β-likeness (Cao & Karras 2012, §3 Def. 3): (q − p)/p ≤ min(β, −ln p) for every
    value whose share grows in a class — a frequent value (p > e^−β) may grow by −ln p at most,
    so its share in a class stays below p(1 − ln p) < 1.

    No β makes a class meet the model when some growth exceeds −ln p, so the smallest β it
    meets (``beta_needed``) may be infinite. ``value`` is therefore the largest growth over the
    growth allowed at ``beta``, max (q − p)/(p · min(β, −ln p)): the table meets enhanced
    ``beta``-likeness exactly when it is at most 1. ``basic_beta`` is the basic β-likeness
    value; ``records_failing`` the share of records in classes above 1.
    """
    beta = _number(beta, "β-likeness beta")
    cl = _prepare(df, keys, sensitive, "enhanced β-likeness", blanks)
    res = cl.result(EnhancedBetaLikenessResult, beta=beta)
    need_all = basic_all = 0.0
    for s in cl.sensitive:
        cells = cl.cells(df[s])
        gain = relative_gain(cells)
        pv = cells.p[cells.val]
        with np.errstate(divide="ignore"):
            cap = -np.log(pv)
        grows = gain > 0
        ratio = np.where(grows, gain / np.where(grows, np.minimum(beta, cap), 1.0), 0.0)
        cls_ratio = cells.class_max(ratio)
        basic = float(gain.max(initial=0.0))
        need = basic if not (gain > cap * (1 + 1e-12)).any() else math.inf
        need_all, basic_all = max(need_all, need), max(basic_all, basic)
        cl.add(s, cells, "ratio", cls_ratio, cls_ratio > 1 + 1e-12, beta_needed=need,
                       basic_beta=basic)
    res = cl.finish(res)
    res.beta_needed, res.basic_beta = need_all, basic_all
    return res


# ------------------------------------------------------------------- δ-disclosure privacy
def delta_disclosure(df: pd.DataFrame, keys: Any, sensitive: Any, delta: float = 1.0, *,
                     blanks: str | None = None) -> DeltaDisclosureResult:
    """δ-disclosure privacy (Brickell & Shmatikov 2008, §3): |ln(q/p)| < δ for every sensitive
    value present in a class — a class neither raises nor lowers a value's share by more than a
    factor e^δ. As ARX and pyCANON, values absent from a class are not counted (the paper's
    definition would make any such class infinitely disclosing). ``value`` is the largest
    |ln(q/p)| (natural log; ARX's δ uses log₂, so ARX's δ = value / ln 2); ``records_failing``
    the share of records in classes at or above ``delta``.
    """
    delta = _number(delta, "δ-disclosure delta")
    cl = _prepare(df, keys, sensitive, "δ-disclosure", blanks)
    res = cl.result(DeltaDisclosureResult, delta=delta)
    for s in cl.sensitive:
        cells = cl.cells(df[s])
        d = cells.class_max(np.abs(np.log(cells.q / cells.p[cells.val])))
        cl.add(s, cells, "delta", d, d >= delta)
    return cl.finish(res)


# ---------------------------------------------------------------------------- registrations
#: options every privacy-model measure reads besides its own parameters (``blanks``: how a blank
#: key is read, as every key-variable measure reads it, :func:`ppdm.metrics.keyvar.context_blanks`)
_COMMON = (*KEY_OPTIONS, "sensitive", "blanks")


def _context_args(ctx: EvaluationContext, name: str) -> tuple[list[str], list[str], list[str]]:
    """The sensitive attributes and quasi-identifiers a registered privacy model judges z on,
    and the perturbed keys it left out (as :func:`ppdm.metrics.keyvar.attribute_disclosure`)."""
    sens = _opt(ctx, name, "sensitive", None) or list(ctx.schema.sensitive)
    sens = check_sensitive(sens, ctx.z.columns, [], measure=name)
    keys, perturbed = lookup_keys(ctx, name, sens)
    return sens, keys, perturbed


def _both(ctx: EvaluationContext, name: str, fn: Any, **params: Any) -> Any:
    """``fn`` on z (and its value on x in ``original``), blank keys read as the evaluation's
    ``blanks`` option says (``-p blanks=strict``, or ``-p t_closeness.blanks=strict`` for one)."""
    sens, keys, perturbed = _context_args(ctx, name)
    params["blanks"] = context_blanks(ctx, name)
    res = fn(ctx.z, keys, sens, **params)
    res.original = fn(ctx.x, keys, sens, **params).value
    return _finish(res, ctx, perturbed)


_APPLIES = " Judged when a sensitive attribute is declared."


@register_measure("t_closeness", kind="risk", needs_class=False, direction="lower", value_range=(0.0, 1.0),
                  threshold=0.2, scenario="sensitive", options=(*_COMMON, "t", "ground"),
                  meaning="The largest distance (EMD) between a quasi-identifier class's distribution of a sensitive "
                  "attribute and the whole release's: what finding a person's class teaches about their sensitive "
                  "value beyond the table; 0 is best." + _APPLIES,
                  description="t-closeness: largest Earth Mover's Distance between a quasi-identifier class's "
                              "sensitive distribution and the table's (Li et al. 2007; equal distance for "
                              "categories, ordered for numbers)")
def _t_closeness_measure(ctx: EvaluationContext) -> TClosenessResult:
    return _both(ctx, "t_closeness", t_closeness, t=_opt(ctx, "t_closeness", "t", 0.2),
                 ground=_opt(ctx, "t_closeness", "ground", "auto"))


@register_measure("recursive_cl_diversity", kind="risk", needs_class=False, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.0, scenario="sensitive", options=(*_COMMON, "c", "l"),
                  meaning="The share of released records in quasi-identifier classes that are not recursive "
                  "(c,l)-diverse (c = 3, l = 2): the most frequent sensitive value dominates the rest; 0 means "
                  "the release is (c,l)-diverse." + _APPLIES,
                  description="recursive (c,l)-diversity: share of records in classes with r1 ≥ c(r_l + … + r_m) "
                              "(Machanavajjhala et al. 2007; c = 3, l = 2)")
def _cl_measure(ctx: EvaluationContext) -> CLDiversityResult:
    return _both(ctx, "recursive_cl_diversity", recursive_cl_diversity,
                 c=_opt(ctx, "recursive_cl_diversity", "c", 3.0), l=_opt(ctx, "recursive_cl_diversity", "l", 2))


@register_measure("alpha_k_anonymity", kind="risk", needs_class=False, direction="lower", value_range=(0.0, 1.0),
                  threshold=0.5, scenario="sensitive", options=(*_COMMON, "alpha", "k", "values"),
                  meaning="The largest share one sensitive value takes in a quasi-identifier class, a class of fewer "
                  "than k (= 2) records counting as 1: how sure finding a person's class makes an intruder of their "
                  "sensitive value; lower is better." + _APPLIES,
                  description="(α,k)-anonymity: largest share of a sensitive value in a class, 1 for a class of "
                              "fewer than k records (Wong et al. 2006; k = 2)")
def _alpha_k_measure(ctx: EvaluationContext) -> AlphaKResult:
    o = "alpha_k_anonymity"
    return _both(ctx, o, alpha_k_anonymity, alpha=_opt(ctx, o, "alpha", 0.5), k=_opt(ctx, o, "k", 2),
                 values=_opt(ctx, o, "values", None))


@register_measure("basic_beta_likeness", kind="risk", needs_class=False, direction="lower", value_range=(0.0, None),
                  threshold=1.0, scenario="sensitive", options=(*_COMMON, "beta"),
                  meaning="The largest relative growth (q − p)/p of a sensitive value's share in a quasi-identifier "
                  "class over its share in the release: 1 means some class doubles a value's frequency; lower is "
                  "better." + _APPLIES,
                  description="basic β-likeness: largest relative growth of a sensitive value's share in a class "
                              "(Cao & Karras 2012)")
def _basic_beta_measure(ctx: EvaluationContext) -> BetaLikenessResult:
    return _both(ctx, "basic_beta_likeness", basic_beta_likeness, beta=_opt(ctx, "basic_beta_likeness", "beta", 1.0))


@register_measure("enhanced_beta_likeness", kind="risk", needs_class=False, direction="lower",
                  value_range=(0.0, None), threshold=1.0, scenario="sensitive", options=(*_COMMON, "beta"),
                  meaning="The largest growth of a sensitive value's share in a quasi-identifier class over the growth "
                  "enhanced β-likeness allows, min(β, −ln p) with β = 1; at most 1 when the release meets the "
                  "model, lower is better." + _APPLIES,
                  description="enhanced β-likeness: largest (q − p)/p over min(β, −ln p) (Cao & Karras 2012; "
                              "β = 1); ≤ 1 meets the model")
def _enhanced_beta_measure(ctx: EvaluationContext) -> EnhancedBetaLikenessResult:
    return _both(ctx, "enhanced_beta_likeness", enhanced_beta_likeness,
                 beta=_opt(ctx, "enhanced_beta_likeness", "beta", 1.0))


@register_measure("delta_disclosure", kind="risk", needs_class=False, direction="lower", value_range=(0.0, None),
                  threshold=1.0, scenario="sensitive", options=(*_COMMON, "delta"),
                  meaning="The largest |ln(q/p)| of a sensitive value present in a quasi-identifier class: a class "
                  "changes no value's share by more than a factor e^value; lower is better." + _APPLIES,
                  description="δ-disclosure privacy: largest |ln(q/p)| of a sensitive value in a class "
                              "(Brickell & Shmatikov 2008; natural log)")
def _delta_measure(ctx: EvaluationContext) -> DeltaDisclosureResult:
    return _both(ctx, "delta_disclosure", delta_disclosure, delta=_opt(ctx, "delta_disclosure", "delta", 1.0))


__all__ = [
    "AlphaKResult", "BetaLikenessResult", "CLDiversityResult", "DeltaDisclosureResult", "EnhancedBetaLikenessResult",
    "GROUNDS", "PrivacyModelResult", "SensitiveCells", "TClosenessResult", "alpha_k_anonymity", "basic_beta_likeness",
    "delta_disclosure", "enhanced_beta_likeness", "equal_emd", "ordered_emd", "recursive_cl_diversity",
    "sensitive_cells", "t_closeness", "wildcard_sensitive_cells",
]
