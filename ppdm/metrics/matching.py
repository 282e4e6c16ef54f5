"""Intruder matching: does an intruder who knows a person's quasi-identifiers find that person's
record in the release?

The key-variable measures (:mod:`ppdm.metrics.keyvar`) count how many released records share
a combination of quasi-identifier values. That is the intruder's chance only when the
person's known values reach the release as they were (unchanged, or generalised into an
interval or group that holds them). When a technique perturbs a quasi-identifier (noise,
microaggregation, swapping, synthetic values), a released record's key says little about
the person: what matters is how many released records *match* the values the intruder knows,
and whether the person's own record is among them.

For every original record x_i, the intruder's match set M_i holds the released records z_j
that agree with x_i on every quasi-identifier a:

* **exact** (a categorical key, or a numeric key that reaches the release unchanged):
  z_ja = x_ia;
* **cover** (a generalised key: interval labels such as ``(20,30]``, hierarchy groups):
  z_ja stands for x_ia (:func:`ppdm.data.generalization.covers`);
* **tolerance** (a perturbed numeric key): |z_ja − x_ia| ≤ t·s_a, with s_a the standard
  deviation of a in x and t the intruder's tolerance in standard deviations;

and a missing value on either side matches anything (a suppressed released cell stands for
every value; a value the intruder does not know constrains nothing — sdcMicro's
``freqCalc`` convention). With the record pairing (row i of z releases row i of x) the
intruder who picks one record of M_i at random re-identifies x_i with probability
[z_i ∈ M_i] / |M_i|; ``value`` is the mean of that over the original records — the expected
share of people re-identified. Without unchanged keys nothing changes from sdcMicro's
individual risk without weights: M_i is the released key group of x_i and
[z_i ∈ M_i] / |M_i| = 1/fk.

The tolerance is the intruder's choice. By default the measure tries t ∈
:data:`TOLERANCES` (0 is exact matching) and reports the intruder's best — a conservative
reading: an intruder can read the noise level of a release from its provenance and tune t.
``tolerance=`` fixes it.

Without a record pairing (a shuffled release whose pairing is not given) the own record is
unknown; a record then counts as found only when a verbatim copy of it (equal on every
column the two tables share) is among its matches — a lower bound that sees only copies.

Counting M_i needs no n×n matrix: records are grouped by their exact and cover codes and,
within a group, released records within tolerance are counted by a k-d tree in the maximum
norm (the tolerance box of every key at once).

This module stays whole (about 610 lines): one registered measure with its compiled counting
and its partitioned form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from ppdm.errors import ParameterError, SchemaError
from ppdm.metrics._common import wilson_interval
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import SYNTHETIC_NOTE, EvaluationContext, register_measure

#: tolerances (in standard deviations of the original attribute) the intruder tries by default
TOLERANCES = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
#: matching rules of a quasi-identifier
RULES = ("exact", "cover", "tolerance")
#: original records attacked when a partitioned table is matched on a sample (against all of z)
SAMPLE_ROWS = 20_000


@dataclass
class MatchingResult(RecordDetailMixin):
    """Expected share of original records an intruder who knows their quasi-identifiers
    re-identifies in the release (matching exactly, on generalised values, or within a
    tolerance on perturbed ones); lower is better."""

    keys: list[str] = field(default_factory=list)
    n: int = 0  # original records attacked
    n_released: int = 0
    paired: bool = True  # own records known from the pairing (False: verbatim copies only)
    tolerance: float = 0.0  # the intruder's tolerance behind value, in standard deviations
    own_matched: float = 0.0  # share of originals whose own released record matches their values
    certain: float = 0.0  # share re-identified with certainty (the own record is the only match)
    mean_matches: float = 0.0  # mean |M_i|
    no_match: float = 0.0  # share of originals no released record matches
    expected_reidentifications: float = 0.0
    key_source: str = ""
    not_judged: str = ""  # why a verdict does not hold the release to this measure ("" when it does)
    sample_size: int | None = None  # originals attacked when sampled (against every released record)
    population: int | None = None
    confidence: float = 0.95
    ci_low: float = float("nan")  # Wilson interval when sampled, missing when exact
    ci_high: float = float("nan")
    per_key: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_tolerance: pd.DataFrame = field(default_factory=pd.DataFrame)
    credit: np.ndarray | None = record_field()
    matches: np.ndarray | None = record_field()

    @property
    def lower_bound(self) -> str | None:
        """Without the pairing only verbatim copies are known to be the own record: the value then
        bounds the risk from below (:mod:`ppdm.metrics.judgement`)."""
        if self.paired or self.not_judged:
            return None
        return ("without the pairing only verbatim copies count as found; the release's private log (--private) "
                "gives the exact value")


# --------------------------------------------------------------------------- rules
def key_rules(x: pd.DataFrame, z: pd.DataFrame, keys: list[str], status: dict[str, str],
              hierarchies: dict[str, Any] | None = None) -> dict[str, str]:
    """The matching rule of each key: ``tolerance`` for a perturbed numeric key, ``cover`` for a
    key whose released values are not plain values of the original (labels, groups) or that has
    a hierarchy, ``exact`` otherwise."""
    out = {}
    for k in keys:
        x_num = pd.api.types.is_numeric_dtype(x[k]) and not pd.api.types.is_bool_dtype(x[k])
        z_num = pd.api.types.is_numeric_dtype(z[k]) and not pd.api.types.is_bool_dtype(z[k])
        if x_num and z_num and not (hierarchies or {}).get(k):
            out[k] = "tolerance" if status.get(k) == "perturbed" else "exact"
        elif (hierarchies or {}).get(k) or x_num != z_num or status.get(k) == "generalised":
            out[k] = "cover"  # labels standing for sets of originals (intervals, groups)
        else:
            out[k] = "exact"
    return out


def _sd(v: pd.Series) -> float:
    a = v.to_numpy(dtype=float, na_value=np.nan)
    a = a[np.isfinite(a)]
    return float(a.std(ddof=1)) if a.size > 1 else 0.0


# ------------------------------------------------------------------------ encoding
def _exact_codes(xv: pd.Series, zv: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the values shared by x and z (equal values, equal codes); −1 for a missing one."""
    num = all(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) for s in (xv, zv))
    if num:
        both = np.concatenate([xv.to_numpy(dtype=float, na_value=np.nan), zv.to_numpy(dtype=float, na_value=np.nan)])
    else:
        both = np.concatenate([xv.to_numpy(dtype=object), zv.to_numpy(dtype=object)])
        both = np.where(pd.isna(both), None, both)  # type: ignore[call-overload]  # numpy's stubs refuse a None fill; an object array takes it
    codes, _ = pd.factorize(both, use_na_sentinel=True)
    codes = codes.astype(np.int64, copy=False)
    return codes[: len(xv)], codes[len(xv):]


def _cover_pairs(xuniq: np.ndarray, zuniq: np.ndarray, ancestors: Any) -> tuple[np.ndarray, np.ndarray]:
    """(d, l) pairs such that released value zuniq[l] stands for original value xuniq[d]."""
    from ppdm.data.generalization import parse_interval

    ds, ls = [], []
    # equal values, compared as values and as text (a code read as a number in one table)
    hit = np.asarray(pd.Index(zuniq, dtype=object).get_indexer(pd.Index(xuniq, dtype=object)))
    d = np.flatnonzero(hit >= 0)
    ds.append(d)
    ls.append(hit[d])
    by_text: dict[str, list[int]] = {}
    for li, v in enumerate(zuniq):
        by_text.setdefault(str(v), []).append(li)
    td: list[int] = []
    tl: list[int] = []
    for di, v in enumerate(xuniq):
        for li in by_text.get(str(v), ()):
            td.append(di)
            tl.append(li)
    ds.append(np.array(td, dtype=np.int64))
    ls.append(np.array(tl, dtype=np.int64))
    xnum = pd.to_numeric(pd.Series(xuniq, dtype=object), errors="coerce").to_numpy(dtype=float)
    for li, lab in enumerate(zuniq):
        iv = parse_interval(lab)
        if iv is None:
            continue
        d = np.flatnonzero(iv.contains(xnum))
        ds.append(d)
        ls.append(np.full(d.size, li))
    if ancestors:
        pos_of = {v: i for i, v in enumerate(zuniq)}
        ad: list[int] = []
        al: list[int] = []
        for di, v in enumerate(xuniq):
            for lab in ancestors.get(v, ()):
                at = pos_of.get(lab)
                if at is not None:
                    ad.append(di)
                    al.append(at)
        ds.append(np.array(ad, dtype=np.int64))
        ls.append(np.array(al, dtype=np.int64))
    d = np.concatenate(ds).astype(np.int64) if ds else np.zeros(0, np.int64)
    lab = np.concatenate(ls).astype(np.int64) if ls else np.zeros(0, np.int64)
    pairs = np.unique(np.stack([d, lab], axis=1), axis=0) if d.size else np.zeros((0, 2), np.int64)
    return pairs[:, 0], pairs[:, 1]


@dataclass
class _Encoded:
    """x expanded to one row per combination of covering released codes, and z, over the keys:
    ``xc``/``zc`` codes of the exact and cover keys (−1: matches anything), ``xn``/``zn`` values
    of the tolerance keys (NaN: matches anything), ``row`` the original row of each x row."""

    row: np.ndarray
    xc: np.ndarray
    zc: np.ndarray
    xn: np.ndarray
    zn: np.ndarray
    expanded: bool


def _encode(xk: pd.DataFrame, zk: pd.DataFrame, rules: dict[str, str], hierarchies: dict[str, Any]) -> _Encoded:
    coded = [k for k in xk.columns if rules[k] != "tolerance"]
    tol = [k for k in xk.columns if rules[k] == "tolerance"]
    n, m = len(xk), len(zk)
    xc = np.zeros((n, len(coded)), np.int64)
    zc = np.zeros((m, len(coded)), np.int64)
    multi: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []  # (column, x code, ptr, labels)
    for j, k in enumerate(coded):
        if rules[k] == "exact":
            xc[:, j], zc[:, j] = _exact_codes(xk[k], zk[k])
            continue
        zcodes, zuniq = pd.factorize(zk[k].astype(object).where(zk[k].notna(), None), use_na_sentinel=True)
        xcodes, xuniq = pd.factorize(xk[k].astype(object).where(xk[k].notna(), None), use_na_sentinel=True)
        d, lab = _cover_pairs(np.asarray(xuniq, dtype=object), np.asarray(zuniq, dtype=object),
                              hierarchies.get(k))
        zc[:, j] = zcodes
        none = len(zuniq)  # the code of an original value no released value stands for
        cnt = np.bincount(d, minlength=len(xuniq))
        first = np.full(len(xuniq), none, np.int64)
        order = np.argsort(d, kind="stable")
        d, lab = d[order], lab[order]
        starts = np.searchsorted(d, np.arange(len(xuniq)))
        has = cnt > 0
        first[has] = lab[starts[has]]
        xc[:, j] = np.where(xcodes < 0, -1, first[np.maximum(xcodes, 0)])
        if (cnt > 1).any():
            multi.append((j, xcodes, np.concatenate([starts, [len(d)]]), lab))
    xn = np.column_stack([xk[k].to_numpy(dtype=float, na_value=np.nan) for k in tol]) if tol else np.zeros((n, 0))
    zn = np.column_stack([zk[k].to_numpy(dtype=float, na_value=np.nan) for k in tol]) if tol else np.zeros((m, 0))
    row = np.arange(n)
    for j, xcodes, ptr, lab in multi:
        # one x row per released code that stands for its value on key j
        xcodes = xcodes[row]
        ok = xcodes >= 0
        c = np.where(ok, ptr[np.maximum(xcodes, 0) + 1] - ptr[np.maximum(xcodes, 0)], 1)
        c = np.maximum(c, 1)
        rep = np.repeat(np.arange(len(row)), c)
        k_in = np.arange(len(rep)) - np.repeat(np.cumsum(c) - c, c)
        new_codes = xc[rep, j].copy()
        sel = ok[rep] & ((ptr[np.maximum(xcodes, 0) + 1] - ptr[np.maximum(xcodes, 0)])[rep] > 0)
        new_codes[sel] = lab[ptr[xcodes[rep][sel]] + k_in[sel]]
        row, xc, xn = row[rep], xc[rep], xn[rep]
        xc[:, j] = new_codes
    return _Encoded(row, xc, zc, xn, zn, expanded=len(row) > n)


def _patterns(miss: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Pattern id of every row's missing mask, and each pattern's mask."""
    if miss.shape[1] == 0:
        return np.zeros(len(miss), np.int64), [np.zeros(0, bool)]
    packed = np.packbits(miss, axis=1)
    ids, uniq = pd.factorize(pd.Series([r.tobytes() for r in packed]) if len(packed) else pd.Series([], dtype=object))
    masks = []
    for p in range(len(uniq)):
        masks.append(miss[np.flatnonzero(ids == p)[0]])
    return ids.astype(np.int64), masks


@njit(cache=True)
def _count_within(gz: np.ndarray, vz: np.ndarray, gx: np.ndarray, vx: np.ndarray) -> np.ndarray:
    """For every (gx_i, vx_i): released points of group gx_i with |vz − vx_i| ≤ 1, the points
    sorted by (group, value). The comparisons are those of a k-d tree in the maximum norm
    (x − z > 1 and z − x > 1 are monotone in z), so counts are exact."""
    n = gx.shape[0]
    m = gz.shape[0]
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        g = gx[i]
        v = vx[i]
        lo, hi = 0, m  # first point of group g
        while lo < hi:
            mid = (lo + hi) // 2
            if gz[mid] < g:
                lo = mid + 1
            else:
                hi = mid
        start = lo
        hi = m  # first point past group g
        while lo < hi:
            mid = (lo + hi) // 2
            if gz[mid] <= g:
                lo = mid + 1
            else:
                hi = mid
        end = lo
        lo, hi = start, end  # first point with v − z ≤ 1
        while lo < hi:
            mid = (lo + hi) // 2
            if v - vz[mid] > 1.0:
                lo = mid + 1
            else:
                hi = mid
        a = lo
        hi = end  # first point with z − v > 1
        while lo < hi:
            mid = (lo + hi) // 2
            if vz[mid] - v > 1.0:
                hi = mid
            else:
                lo = mid + 1
        out[i] = lo - a
    return out


def match_counts(enc: _Encoded, n: int, scales: np.ndarray) -> np.ndarray:
    """|M_i| for every original row i: released records that agree with it on every coded key
    and lie within ``scales`` (one per tolerance key; 0 means equal values) on every tolerance
    key, a missing value on either side matching anything."""
    from scipy.spatial import cKDTree

    from ppdm.metrics.keyvar import group_codes

    out = np.zeros(n, dtype=np.float64)
    xmiss = np.concatenate([enc.xc < 0, np.isnan(enc.xn)], axis=1)
    zmiss = np.concatenate([enc.zc < 0, np.isnan(enc.zn)], axis=1)
    xp, xmasks = _patterns(xmiss)
    zp, zmasks = _patterns(zmiss)
    a = enc.xc.shape[1]
    exact_num = scales <= 0
    for p, pm in enumerate(xmasks):
        xr = np.flatnonzero(xp == p)
        if xr.size == 0:
            continue
        for q, qm in enumerate(zmasks):
            zr = np.flatnonzero(zp == q)
            if zr.size == 0:
                continue
            active = ~(pm | qm) if pm.size else np.zeros(0, bool)
            ac = np.flatnonzero(active[:a])
            an = np.flatnonzero(active[a:])
            en = an[exact_num[an]]
            tn = an[~exact_num[an]]
            rows = xr
            if enc.expanded:
                # expanded copies that differ only on keys inactive here would count z twice
                key = np.column_stack([enc.row[rows], enc.xc[np.ix_(rows, ac)]] +
                                      ([enc.xn[np.ix_(rows, en)]] if en.size else []))
                _, first = np.unique(key, axis=0, return_index=True)
                rows = rows[np.sort(first)]
            if ac.size or en.size:
                parts_x = [enc.xc[np.ix_(rows, ac)]] if ac.size else []
                parts_z = [enc.zc[np.ix_(zr, ac)]] if ac.size else []
                for j in en:  # numeric keys matched exactly: codes of their values
                    codes, _ = pd.factorize(np.concatenate([enc.xn[rows, j], enc.zn[zr, j]]))
                    parts_x.append(codes[: len(rows), None])
                    parts_z.append(codes[len(rows):, None])
                g = group_codes(np.concatenate([np.concatenate(parts_x, axis=1),
                                                np.concatenate(parts_z, axis=1)], axis=0))
                gx, gz = g[: len(rows)], g[len(rows):]
            else:
                gx = np.zeros(len(rows), np.int64)
                gz = np.zeros(len(zr), np.int64)
            if tn.size == 0:
                cnt = np.bincount(gz, minlength=int(max(gx.max(initial=0), gz.max(initial=0))) + 1)
                c = cnt[gx]
            elif tn.size == 1:
                # one tolerance key: released values sorted within their group, two binary searches
                vz = enc.zn[zr, tn[0]] / scales[tn[0]]
                vx = enc.xn[rows, tn[0]] / scales[tn[0]]
                order = np.lexsort((vz, gz))
                c = _count_within(gz[order], vz[order], gx, vx).astype(np.float64)
            else:
                # the group as one more coordinate, 3 apart: never within the unit box of another group
                zcoord = np.column_stack([gz * 3.0, enc.zn[np.ix_(zr, tn)] / scales[tn]])
                xcoord = np.column_stack([gx * 3.0, enc.xn[np.ix_(rows, tn)] / scales[tn]])
                tree = cKDTree(zcoord)
                c = np.asarray(tree.query_ball_point(xcoord, r=1.0, p=np.inf, return_length=True), dtype=np.float64)
            np.add.at(out, enc.row[rows], c)
    return out


def own_matches(xk: pd.DataFrame, zk: pd.DataFrame, rules: dict[str, str], sds: dict[str, float],
                tolerance: float, hierarchies: dict[str, Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Record by record (row i of z releases row i of x): whether z_i matches x_i on every key,
    and on each key."""
    from ppdm.metrics.keyvar import released_covers

    per: dict[str, np.ndarray] = {}
    for k in xk.columns:
        xv, zv = xk[k].reset_index(drop=True), zk[k].reset_index(drop=True)
        if rules[k] == "tolerance":
            a = xv.to_numpy(dtype=float, na_value=np.nan)
            b = zv.to_numpy(dtype=float, na_value=np.nan)
            s = tolerance * sds[k]
            if s > 0:
                # the k-d tree compares the scaled values: the same arithmetic here
                with np.errstate(invalid="ignore"):
                    ok = np.abs(b / s - a / s) <= 1.0
            else:
                ok = a == b
            per[k] = ok | np.isnan(a) | np.isnan(b)
        elif rules[k] == "exact":
            cx, cz = _exact_codes(xv, zv)
            per[k] = (cx == cz) | (cx < 0) | (cz < 0)
        else:
            per[k] = released_covers(zv, xv, hierarchies.get(k))[1]
    own = np.ones(len(xk), dtype=bool)
    for v in per.values():
        own &= v
    return own, per


def verbatim_copies(x: pd.DataFrame, z: pd.DataFrame) -> np.ndarray:
    """Per record of x: whether z holds a record equal to it on every column both tables have."""
    cols = [c for c in x.columns if c in z.columns]
    if not cols:
        return np.zeros(len(x), dtype=bool)
    hx = pd.util.hash_pandas_object(x[cols].reset_index(drop=True), index=False).to_numpy()
    hz = pd.util.hash_pandas_object(z[cols].reset_index(drop=True), index=False).to_numpy()
    return np.isin(hx, hz)


# ------------------------------------------------------------------------ measure
def _check_tolerances(tolerance: Any) -> tuple[float, ...]:
    if tolerance is None:
        return TOLERANCES
    if isinstance(tolerance, str):
        tolerance = [float(t) for t in tolerance.replace(";", ",").split(",") if t.strip()]
    vals = tuple(float(t) for t in (tolerance if isinstance(tolerance, (list, tuple)) else [tolerance]))
    if not vals or any(not math.isfinite(t) or t < 0 for t in vals):
        raise ParameterError(f"qi_matching tolerance must be numbers ≥ 0 (standard deviations), got {tolerance!r}")
    return vals


def qi_matching(
    x: pd.DataFrame,
    z: pd.DataFrame,
    keys: Any,
    *,
    status: dict[str, str] | None = None,
    tolerance: Any = None,
    paired: bool = True,
    hierarchies: dict[str, Any] | None = None,
    sample: int | None = None,
    random_state: int | None = 0,
    confidence: float = 0.95,
) -> MatchingResult:
    """Intruder matching on the quasi-identifiers ``keys`` (see the module docstring).

    ``status`` gives each key's :func:`ppdm.metrics.keyvar.key_status` (computed when
    omitted); it decides the matching rule (:func:`key_rules`). ``tolerance`` fixes the
    intruder's tolerance in standard deviations (a number, or several to choose the best
    from; default :data:`TOLERANCES`). ``paired=False`` counts only verbatim copies as
    found. ``sample=s`` attacks s original records drawn at random (seed ``random_state``),
    each matched against every released record, and gives a Wilson ``confidence`` interval
    of the share; the default attacks every original record (exact).
    """
    from ppdm.metrics.keyvar import check_keys, key_status

    keys = check_keys(z, keys, measure="qi matching")
    absent = [k for k in keys if k not in x.columns]
    if absent:
        raise SchemaError(f"qi matching: quasi-identifier(s) {', '.join(map(repr, absent))} not in the original")
    tols = _check_tolerances(tolerance)
    hier = dict(hierarchies or {})
    paired = bool(paired) and len(x) == len(z)
    if status is None:
        st = key_status(x, z, keys, paired=paired, hierarchies=hier)
        status = dict(zip(st["key"], st["status"], strict=True))
    rules = key_rules(x, z, keys, status, hier)
    sds = {k: _sd(x[k]) for k in keys if rules[k] == "tolerance"}
    for k in list(sds):
        if not sds[k] > 0:  # a constant original: only its value matches
            rules[k] = "exact"
            del sds[k]
    tol_keys = [k for k in keys if rules[k] == "tolerance"]
    if not tol_keys:
        tols = (0.0,)
    population = len(x)
    rows = np.arange(population)
    if sample is not None and int(sample) < population:
        rows = np.sort(np.random.default_rng([int(random_state or 0), 13]).choice(population, int(sample),
                                                                                  replace=False))
    xs = x[keys].iloc[rows].reset_index(drop=True)
    enc = _encode(xs, z[keys].reset_index(drop=True), rules, hier)
    counts = np.stack([match_counts(enc, len(rows), np.array([t * sds[k] for k in tol_keys])) for t in tols])
    zs = z[keys].iloc[rows].reset_index(drop=True) if paired else None
    copy = None if paired else verbatim_copies(x.iloc[rows], z)
    res = summarise_matching(xs, zs, list(keys), rules, sds, status, tols, counts, paired=paired, hierarchies=hier,
                             population=population, copy=copy, confidence=confidence)
    res.n_released = len(z)
    return res


def summarise_matching(
    xs: pd.DataFrame, zs: pd.DataFrame | None, keys: list[str], rules: dict[str, str], sds: dict[str, float],
    status: dict[str, str], tols: tuple[float, ...], counts: np.ndarray, *, paired: bool,
    hierarchies: dict[str, Any], population: int, copy: np.ndarray | None = None, confidence: float = 0.95,
) -> MatchingResult:
    """The result from the match counts of the attacked originals ``xs`` (one row of ``counts`` per
    tolerance): own matches from the pairing (``zs``, the released records of ``xs``) or, without
    it, from verbatim copies (``copy``); the intruder's best tolerance; an interval when ``xs`` is a
    sample of ``population`` records."""
    table, best = [], None
    for ti, t in enumerate(tols):
        if paired:
            own, per = own_matches(xs, zs, rules, sds, t, hierarchies)  # type: ignore[arg-type]  # paired: zs is given
        else:
            own, per = np.asarray(copy, dtype=bool), {}
        c = np.maximum(counts[ti], own)  # the own record is among the matches it satisfies
        credit = np.where(own, 1.0 / np.maximum(c, 1.0), 0.0)
        row = {"tolerance": t, "value": float(credit.mean()), "own_matched": float(own.mean()),
               "certain": float((own & (c == 1)).mean()), "mean_matches": float(c.mean()),
               "no_match": float((c == 0).mean())}
        table.append(row)
        if best is None or row["value"] > best[0]["value"]:
            best = (row, credit, c, per)
    assert best is not None
    row, credit, c, per = best
    per_key = pd.DataFrame([{"key": k, "status": status.get(k, ""), "rule": rules[k], "sd": sds.get(k, np.nan),
                             "own_matches": float(per[k].mean()) if k in per else np.nan} for k in keys])
    m = len(credit)
    res = MatchingResult(value=row["value"], keys=list(keys), n=m, paired=paired, tolerance=row["tolerance"],
                         own_matched=row["own_matched"], certain=row["certain"], mean_matches=row["mean_matches"],
                         no_match=row["no_match"], expected_reidentifications=float(credit.sum()) * population / m,
                         per_key=per_key, per_tolerance=pd.DataFrame(table), credit=credit, matches=c,
                         confidence=confidence)
    if m < population:
        res.sample_size, res.population = m, population
        res.ci_low, res.ci_high = wilson_interval(float(credit.sum()), m, confidence)
    return res


def _opt(ctx: EvaluationContext, name: str, default: Any) -> Any:
    nested = ctx.options.get("qi_matching")
    if isinstance(nested, dict) and name in nested:
        return nested[name]
    return ctx.options.get(f"qi_matching.{name}", default)


@register_measure("qi_matching", kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, out_of_core=True,
                  options=("keys", "infer_keys", "tolerance", "sample"),
                  meaning="The expected share of original records an intruder who knows their quasi-identifiers "
                  "re-identifies, matching them to the release exactly, on generalised values, or within a "
                  "tolerance on perturbed ones; 0 is best. Judged when some quasi-identifier is perturbed.",
                  description="intruder matching on the quasi-identifiers: per original record, the released records "
                              "matching its known values and whether its own is among them")
def _qi_matching_measure(ctx: EvaluationContext) -> MatchingResult:
    from ppdm.metrics._common import is_dask
    from ppdm.metrics.keyvar import context_hierarchies, context_key_status, context_keys

    keys = context_keys(ctx, "qi_matching")
    st = context_key_status(ctx, keys)
    status = dict(zip(st["key"], st["status"], strict=True))
    tolerance = _opt(ctx, "tolerance", None)
    sample = _opt(ctx, "sample", None)
    if is_dask(ctx.x) or is_dask(ctx.z):
        res = qi_matching_parts(ctx, keys, status, tolerance,
                                int(sample) if sample is not None else int(ctx.cache.get("sample_rows", SAMPLE_ROWS)),
                                context_hierarchies(ctx))
    else:
        res = qi_matching(ctx.x, ctx.z, keys, status=status, tolerance=tolerance, paired=ctx.is_paired,
                          hierarchies=context_hierarchies(ctx), sample=int(sample) if sample is not None else None,
                          random_state=ctx.random_state)
    res.key_source = ctx.cache.get("key_source", "")
    if getattr(ctx, "synthetic", False):
        res.not_judged = SYNTHETIC_NOTE
    elif not any(v == "perturbed" for v in status.values()):
        res.not_judged = ("every quasi-identifier reaches the release unchanged or generalised: the key-variable "
                          "measures (k_anonymity, reidentification_risk) judge this intruder")
    return res


__all__ = ["MatchingResult", "RULES", "TOLERANCES", "key_rules", "match_counts", "own_matches", "qi_matching",
           "summarise_matching", "verbatim_copies"]


# --------------------------------------------------------------------- intruder matching
def qi_matching_parts(ctx: Any, keys: list[str], status: dict[str, str], tolerance: Any, sample_rows: int,
                      hier: dict[str, Any]) -> Any:
    """:func:`ppdm.metrics.matching.qi_matching` of partitioned tables: a uniform sample of
    ``sample_rows`` original records (all of them when the table is smaller: then exact), each
    matched against EVERY released record, partition by partition — match counts add up over
    the partitions of z — with a Wilson interval when sampled."""
    import dask

    from ppdm.data.partitions import read_partition, run_partitions
    from ppdm.metrics._dask import sample_pairs

    x, z = ctx.x, ctx.z
    xs, zs, n = sample_pairs(x, z, int(sample_rows), int(ctx.random_state or 0))
    rules = key_rules(xs, zs, keys, status, hier)
    tol_keys = [k for k in keys if rules[k] == "tolerance"]
    sds = dict(zip(tol_keys, (float(v) for v in dask.compute(*[x[k].std() for k in tol_keys])), strict=True))
    for k in list(sds):
        if not sds[k] > 0:
            rules[k] = "exact"
            del sds[k]
    tol_keys = [k for k in keys if rules[k] == "tolerance"]
    tols = _check_tolerances(tolerance) if tol_keys else (0.0,)
    xk = xs[keys].reset_index(drop=True)

    def task(i: int) -> np.ndarray:
        zi = read_partition(z, i)[keys].reset_index(drop=True)
        enc = _encode(xk, zi, rules, hier)
        return np.stack([match_counts(enc, len(xk), np.array([t * sds[k] for k in tol_keys])) for t in tols])

    counts = np.sum(run_partitions(task, z.npartitions, name="ppdm-qi-matching"), axis=0)
    res = summarise_matching(xk, zs[keys].reset_index(drop=True), keys, rules, sds, status, tols, counts,
                             paired=True, hierarchies=hier, population=n)
    res.n_released = n
    return res
