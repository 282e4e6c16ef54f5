"""Distribution fidelity: does each column, and each pair of columns, of z look like x's?

What an analyst checks first about a release is whether its columns still have the
distributions of the original's: a median charge multiplied by sixty, or an insurance column
come out uniform, spoils every table made from it. The measures here compare the *marginal*
distributions of x and z, so they need no pairing of records and apply to every release,
synthetic ones included. Their definitions are SDMetrics' (the ``sdmetrics`` package, single
column and column pair metrics), so the values can be read against that tool's documentation;
``benchmarks/bench_fidelity.py`` checks them against ``sdmetrics`` within 1e-9.

Per column (:func:`column_fidelity`):

* a number or a date: the **KS complement**, 1 − D where D is the two-sample
  Kolmogorov–Smirnov statistic, the largest gap between the empirical cumulative distribution
  functions of x's and z's values (:func:`ks_complement`). Values are rounded to 14 decimals
  first, as SDMetrics does, so that floating-point noise is not a difference; a date counts as
  its day on the time axis (D depends only on the order of the values);
* a category: the **TV complement**, 1 − ½ Σ_v |p_x(v) − p_z(v)|, one minus the total
  variation distance between the category frequencies (:func:`tv_complement`): the share of
  records that would not have to change category to turn one distribution into the other.

Per pair of columns (:func:`pair_fidelity`):

* two numbers (dates as days): the **correlation similarity**, 1 − |r_x − r_z| / 2 with r
  Pearson's correlation (SDMetrics' default coefficient) over the records that hold both
  values (:func:`correlation_similarity`); undefined (not scored) when a column is constant;
* anything else: the **contingency similarity**, 1 − ½ Σ_(u,v) |p_x(u, v) − p_z(u, v)| over the
  joint frequencies of the pair (:func:`contingency_similarity`). A number or a date in such a
  pair is first cut into ``bins`` (10) equal-width bins of x's values, the outer two open
  (SDMetrics' ``ContingencySimilarity(continuous_column_names=..., num_discrete_bins=10)``), the
  same bins for z, so values of z beyond x's range fall in x's outer bins.

**Blanks** are treated as SDMetrics treats them: a column's own blanks are left out of its KS
and TV complements (each distribution is over the values present, and the ``blank_x``,
``blank_z`` shares beside them say how many there were); a correlation is over the records
holding both values; in a contingency table a blank is one more category (a bin of its own
for a number), so a release that blanks many cells loses contingency similarity.

The headline value of each measure is its *worst* column or pair, named in ``worst``: a
release with one destroyed column is judged on that column, not hidden in a mean. The mean,
SDMetrics' "Column Shapes" and "Column Pair Trends" scores, is in ``mean``. Pairs of a wide
table are many (p(p − 1)/2); above ``max_pairs`` (500) a seeded random sample of the pairs is
scored, and ``pairs_total`` says of how many. SDMetrics' quality report bins a number in a
mixed pair on each table's own range; the metric used here bins both on x's, so a column of z
moved far from x's range shows in its pairs too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure

#: decimals values are rounded to before the KS statistic (SDMetrics' ``sys.float_info.dig - 1``)
KS_DECIMALS = 14
#: equal-width bins of x's values for a number in a contingency table (SDMetrics' default)
DEFAULT_BINS = 10
#: pairs scored at most; a wider table gets a seeded random sample of its pairs
DEFAULT_MAX_PAIRS = 500
#: worst columns or pairs a report names
SHOWN = 5

KS, TV = "KSComplement", "TVComplement"
CORRELATION, CONTINGENCY = "CorrelationSimilarity", "ContingencySimilarity"


# ------------------------------------------------------------------------ one column
def _rounded(v: np.ndarray) -> np.ndarray:
    """``v`` rounded to :data:`KS_DECIMALS` decimals, as SDMetrics rounds before the KS test. Beyond
    2⁵² every double is whole, and rounding there would only overflow (10¹⁴·v), so it is left."""
    small = np.abs(v) < 2.0**52
    if small.all():
        return np.round(v, KS_DECIMALS)
    out = v.copy()
    out[small] = np.round(v[small], KS_DECIMALS)
    return out


def _present(v: Any) -> np.ndarray:
    a = np.asarray(v, dtype=float).ravel()
    return a[~np.isnan(a)]


def _ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample KS statistic of two sets of present values, rounded first."""
    A, B = np.sort(_rounded(a)), np.sort(_rounded(b))
    d = 0.0
    # both CDFs are step functions, so their largest gap is at a value of one of them; each value
    # once (the last of equal ones), with counts over sizes as scipy's ks_2samp computes them
    for P, Q in ((A, B), (B, A)):
        last = np.flatnonzero(np.append(P[1:] != P[:-1], True))
        gap = (last + 1) / P.size - np.searchsorted(Q, P[last], side="right") / Q.size
        d = max(d, float(np.max(np.abs(gap))))
    return d


def ks_complement(x: Any, z: Any) -> float:
    """1 − D, D the two-sample Kolmogorov–Smirnov statistic of x's and z's values (numbers; blanks
    left out): 1 when the two empirical distributions are equal, 0 when every value of one lies
    below every value of the other. NaN when either has no value."""
    a, b = _present(x), _present(z)
    if a.size == 0 or b.size == 0:
        return math.nan
    return 1.0 - _ks_statistic(a, b)


def _codes(x: Any, z: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Shared category codes of x's and z's values (−1 for a blank) and how many categories."""
    if isinstance(x, pd.Series) and isinstance(z, pd.Series):
        # one column of both tables (a text column stays in its own dtype: factorized in place)
        codes, uniques = pd.concat([x, z], ignore_index=True).factorize(use_na_sentinel=True)
        return codes[:len(x)], codes[len(x):], len(uniques)
    xv = np.asarray(x, dtype=object).ravel()
    zv = np.asarray(z, dtype=object).ravel()
    codes, uniques = pd.factorize(np.concatenate([xv, zv]), use_na_sentinel=True)
    return codes[:xv.size], codes[xv.size:], len(uniques)


def _tv_from_codes(cx: np.ndarray, cz: np.ndarray, k: int) -> float:
    fx = np.bincount(cx[cx >= 0], minlength=k).astype(float)
    fz = np.bincount(cz[cz >= 0], minlength=k).astype(float)
    if fx.sum() == 0 or fz.sum() == 0:
        return math.nan
    return 1.0 - 0.5 * float(np.abs(fx / fx.sum() - fz / fz.sum()).sum())


def tv_complement(x: Any, z: Any) -> float:
    """1 − ½ Σ_v |p_x(v) − p_z(v)|: one minus the total variation distance between the category
    frequencies of x and z (blanks left out; a category of one only counts with 0 in the other).
    NaN when either has no value."""
    return _tv_from_codes(*_codes(x, z))


# ------------------------------------------------------------------------ one pair
def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's r, each variable centred and scaled to its largest |value| first (huge values do
    not overflow); NaN for fewer than two records or a constant variable."""
    if a.size < 2:
        return math.nan
    a, b = a - a.mean(), b - b.mean()
    ma, mb = np.max(np.abs(a)), np.max(np.abs(b))
    if ma == 0 or mb == 0 or not (math.isfinite(ma) and math.isfinite(mb)):
        return math.nan
    a, b = a / ma, b / mb
    r = float((a * b).sum()) / math.sqrt(float((a * a).sum()) * float((b * b).sum()))
    return max(-1.0, min(1.0, r))


def _pair_r(u: np.ndarray, v: np.ndarray) -> float:
    keep = ~(np.isnan(u) | np.isnan(v))
    return _pearson(u[keep], v[keep])


def _constant(v: np.ndarray) -> bool:
    """One distinct value, blanks aside (SDMetrics' ``nunique() == 1``)."""
    if v.size == 0 or np.isnan(v).all():
        return False
    return bool(np.nanmin(v) == np.nanmax(v))


def correlation_similarity(x: Any, z: Any) -> float:
    """1 − |r_x − r_z| / 2 for two numeric columns (an (n, 2) array or two-column table each of x
    and z), r Pearson's correlation over the records holding both values: 1 when z keeps x's
    correlation, 0 when it turns +1 into −1. NaN when a column is constant in x or z (SDMetrics
    refuses it: the correlation is undefined)."""
    X, Z = np.asarray(x, dtype=float), np.asarray(z, dtype=float)
    if X.ndim != 2 or X.shape[1] != 2 or Z.ndim != 2 or Z.shape[1] != 2:
        raise ParameterError("correlation_similarity compares two columns: give x and z with two columns each")
    if any(_constant(M[:, j]) for M in (X, Z) for j in (0, 1)):
        return math.nan
    rx, rz = _pair_r(X[:, 0], X[:, 1]), _pair_r(Z[:, 0], Z[:, 1])
    return 1.0 - abs(rx - rz) / 2.0 if math.isfinite(rx) and math.isfinite(rz) else math.nan


def _bin_codes(x: np.ndarray, z: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray, int]:
    """x's and z's numbers as bin codes: ``bins`` equal-width bins of x's present values with the
    outer two open, a blank (and +∞) in a code of its own — ``numpy.digitize`` as SDMetrics does."""
    edges = np.histogram_bin_edges(x[~np.isnan(x)], bins=bins)
    edges[0], edges[-1] = -np.inf, np.inf
    return np.digitize(x, edges).astype(np.int32), np.digitize(z, edges).astype(np.int32), bins + 2


def _joint_tv(a: tuple[np.ndarray, np.ndarray, int], b: tuple[np.ndarray, np.ndarray, int]) -> float:
    """1 − TV between the joint frequencies of two columns given as ``(codes in x, codes in z, how
    many codes)``, codes ≥ 0."""
    (ax, az, ka), (bx, bz, kb) = a, b
    top = ka * kb
    # one code per cell of the contingency table; 32 bits are twice as fast to count
    kind: type[np.signedinteger[Any]] = np.int32 if top < 2**31 else np.int64
    jx, jz = ax.astype(kind) * kind(kb) + bx, az.astype(kind) * kind(kb) + bz
    if top <= 4 * (jx.size + jz.size) + 1024:
        fx, fz = np.bincount(jx, minlength=top), np.bincount(jz, minlength=top)
    else:  # many categories on both sides: count the cells that occur only
        cells, inv = np.unique(np.concatenate([jx, jz]), return_inverse=True)
        fx = np.bincount(inv[:jx.size], minlength=cells.size)
        fz = np.bincount(inv[jx.size:], minlength=cells.size)
    return 1.0 - 0.5 * float(np.abs(fx / jx.size - fz / jz.size).sum())


def _blank_as_code(c: np.ndarray, k: int) -> np.ndarray:
    return np.where(c < 0, k, c).astype(np.int32) if k < 2**31 else np.where(c < 0, k, c)


def contingency_similarity(x: Any, z: Any, *, numeric: Any = (), bins: int = DEFAULT_BINS) -> float:
    """1 − ½ Σ |p_x(u, v) − p_z(u, v)| over the cells of the pair's contingency table (two-column
    tables ``x`` and ``z`` with the same columns): one minus the total variation distance between
    the joint frequencies. A blank is a category of its own; a column named in ``numeric`` is cut
    into ``bins`` equal-width bins of x's values first (the outer two open)."""
    if not isinstance(x, pd.DataFrame) or not isinstance(z, pd.DataFrame) or x.shape[1] != 2 \
            or list(x.columns) != list(z.columns):
        raise ParameterError("contingency_similarity compares two columns: give x and z as tables with the same "
                             "two columns")
    if len(x) == 0 or len(z) == 0:
        return math.nan
    a, b = x.columns
    prep = _Prepared(x, z, [c for c in (a, b) if c in set(numeric)], [c for c in (a, b) if c not in set(numeric)])
    return _joint_tv(prep.cells(a, bins), prep.cells(b, bins))


# ------------------------------------------------------------------------ the tables
@dataclass(frozen=True)
class FidelityOptions:
    """How pairs are scored: ``bins`` equal-width bins of x's values cut a number in a
    contingency table; at most ``max_pairs`` pairs are scored (a random sample of them, drawn
    with ``random_state``, when the table has more)."""

    bins: int = DEFAULT_BINS
    max_pairs: int = DEFAULT_MAX_PAIRS
    random_state: int | None = 0

    def __post_init__(self) -> None:
        for name in ("bins", "max_pairs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ParameterError(f"{name} must be a whole number of at least 1, got {v!r}")


@dataclass
class ColumnFidelityResult(MeasureResult):
    """``value``: the worst column's score (KS complement of a number or date, TV complement of a
    category); ``worst`` names that column, ``mean`` is the mean over the scored columns
    (SDMetrics' Column Shapes score); ``per_column``: one row per column, worst first —
    ``column, kind, metric, score, blank_x, blank_z`` (shares of blank cells)."""

    mean: float = math.nan
    worst: str = ""
    columns: int = 0
    not_scored: str = ""
    per_column: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass
class PairFidelityResult(MeasureResult):
    """``value``: the worst pair's score (correlation similarity of two numbers, contingency
    similarity otherwise); ``worst`` names the pair, ``mean`` is the mean over the scored pairs
    (SDMetrics' Column Pair Trends score); ``pairs`` were scored of ``pairs_total``; ``per_pair``:
    one row per pair, worst first — ``column_1, column_2, metric, score, correlation_x,
    correlation_z``."""

    mean: float = math.nan
    worst: str = ""
    pairs: int = 0
    pairs_total: int = 0
    not_scored: str = ""
    per_pair: pd.DataFrame = field(default_factory=pd.DataFrame)


def _columns(x: pd.DataFrame, z: pd.DataFrame, numeric: Any, categorical: Any,
             measure: str) -> tuple[list[str], list[str]]:
    """The numbers (dates too) and the categories a fidelity measure compares, in x's order."""
    from ppdm.data.types import is_date_dtype

    if not isinstance(x, pd.DataFrame) or not isinstance(z, pd.DataFrame):
        raise SchemaError(f"{measure} compares two DataFrames (the original and the release)")
    if numeric is None and categorical is None:
        numeric = [c for c in x.columns if is_date_dtype(x[c]) or (pd.api.types.is_numeric_dtype(x[c])
                                                                    and not pd.api.types.is_bool_dtype(x[c]))]
        categorical = [c for c in x.columns if c not in numeric]
    numeric, categorical = list(numeric or []), list(categorical or [])
    absent = [c for c in numeric + categorical if c not in x.columns or c not in z.columns]
    if absent:
        raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, absent))} not in both tables")
    if not numeric + categorical:
        raise MeasureNotApplicable(f"{measure} needs at least one column; none was given")
    order = {c: i for i, c in enumerate(x.columns)}
    both = sorted(dict.fromkeys(numeric + categorical), key=lambda c: order[c])
    num = set(numeric)
    return [c for c in both if c in num], [c for c in both if c not in num]


class _Prepared:
    """x's and z's columns in the forms the fidelity measures compare them in, each made once:
    numbers as float arrays (dates as days), categories as shared codes. ``ppdm evaluate`` keeps
    one in its context, so the column and the pair measure read every column once."""

    def __init__(self, x: pd.DataFrame, z: pd.DataFrame, numeric: list[str], categorical: list[str]) -> None:
        from ppdm.data.types import is_date_dtype

        self.x, self.z = x, z
        self.numeric, self.categorical = list(numeric), list(categorical)
        self._num = set(numeric)
        self.columns = [c for c in x.columns if c in set(numeric) | set(categorical)]
        self.dates = {c for c in numeric if is_date_dtype(x[c])}
        self._numbers: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._codes: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}
        self._cells: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, int]] = {}

    def is_number(self, c: str) -> bool:
        return c in self._num

    def numbers(self, c: str) -> tuple[np.ndarray, np.ndarray]:
        if c not in self._numbers:
            from ppdm.data.types import numeric_values

            self._numbers[c] = (numeric_values(self.x[c]), numeric_values(self.z[c]))
        return self._numbers[c]

    def codes(self, c: str) -> tuple[np.ndarray, np.ndarray, int]:
        """Category codes shared by x and z, −1 for a blank, and how many categories."""
        if c not in self._codes:
            self._codes[c] = _codes(self.x[c], self.z[c])
        return self._codes[c]

    def cells(self, c: str, bins: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Codes ≥ 0 of a column in a contingency table: a category's (a blank the last code), or a
        number's bin among ``bins`` equal-width bins of x's values."""
        key = (c, bins if self.is_number(c) else 0)
        if key not in self._cells:
            if self.is_number(c):
                self._cells[key] = _bin_codes(*self.numbers(c), bins)
            else:
                cx, cz, k = self.codes(c)
                self._cells[key] = (_blank_as_code(cx, k), _blank_as_code(cz, k), k + 1)
        return self._cells[key]


def _worst_first(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("score", na_position="last", kind="stable").reset_index(drop=True)


def _why(items: list[tuple[str, str]]) -> str:
    text = "; ".join(f"{name} ({why})" for name, why in items[:SHOWN])
    return text + (f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def column_fidelity(x: pd.DataFrame, z: pd.DataFrame, numeric: Any = None,
                    categorical: Any = None) -> ColumnFidelityResult:
    """The KS complement of every number and date column and the TV complement of every category
    column of x and z (without ``numeric``/``categorical``: numbers, dates and the rest by dtype).
    The value is the worst column's; see the module docstring for the definitions and blanks."""
    return _column_fidelity(_Prepared(x, z, *_columns(x, z, numeric, categorical, "column_fidelity")))


def _column_fidelity(prep: _Prepared) -> ColumnFidelityResult:
    rows, skipped = [], []
    for c in prep.columns:
        if prep.is_number(c):
            vx, vz = prep.numbers(c)
            blank_x, blank_z = np.isnan(vx), np.isnan(vz)
            score = 1.0 - _ks_statistic(vx[~blank_x], vz[~blank_z]) if (~blank_x).any() and (~blank_z).any() \
                else math.nan
            metric, kind = KS, "date" if c in prep.dates else "number"
        else:
            cx, cz, k = prep.codes(c)
            blank_x, blank_z = cx < 0, cz < 0
            score, metric, kind = _tv_from_codes(cx, cz, k), TV, "category"
        if not math.isfinite(score):
            skipped.append((c, "no value in x" if blank_x.all() else "no value in z"))
        rows.append({"column": c, "kind": kind, "metric": metric, "score": score,
                     "blank_x": float(blank_x.mean()) if blank_x.size else math.nan,
                     "blank_z": float(blank_z.mean()) if blank_z.size else math.nan})
    per = _worst_first(pd.DataFrame(rows, columns=["column", "kind", "metric", "score", "blank_x", "blank_z"]))
    scored = per["score"].dropna()
    if scored.empty:
        raise MeasureNotApplicable(f"column_fidelity scored no column: {_why(skipped)}")
    return ColumnFidelityResult(value=float(scored.iloc[0]), mean=float(scored.mean()), worst=str(per["column"].iloc[0]),
                                columns=int(scored.size), not_scored=_why(skipped), per_column=per)


def _correlations(cols: list[np.ndarray]) -> np.ndarray:
    """Pearson correlations of numeric columns (blanks: over the records holding both values), NaN
    for a constant column; each column centred, scaled and normed once when none is blank."""
    p = len(cols)
    R = np.full((p, p), np.nan)
    if not any(np.isnan(v).any() for v in cols):
        units: list[np.ndarray | None] = []
        for v in cols:
            c = v - v.mean()
            top = np.max(np.abs(c)) if c.size else 0.0
            if c.size < 2 or not top > 0 or not math.isfinite(top):
                units.append(None)
                continue
            c = c / top  # scaled to 1 first: huge values do not overflow the norm
            units.append(c / math.sqrt(float((c * c).sum())))
        for i in range(p):
            for j in range(i + 1, p):
                ui, uj = units[i], units[j]
                if ui is not None and uj is not None:
                    # sums rather than BLAS dot products: BLAS threads would spin for a few vectors
                    R[i, j] = R[j, i] = max(-1.0, min(1.0, float((ui * uj).sum())))
        return R
    for i in range(p):
        for j in range(i + 1, p):
            R[i, j] = R[j, i] = _pair_r(cols[i], cols[j])
    return R


def pair_fidelity(x: pd.DataFrame, z: pd.DataFrame, numeric: Any = None, categorical: Any = None,
                  options: FidelityOptions | None = None) -> PairFidelityResult:
    """The correlation similarity of every pair of numbers (dates as days) and the contingency
    similarity of every other pair of columns of x and z (a number in a mixed pair cut into bins
    of x's values). The value is the worst pair's; a table with more than ``options.max_pairs``
    pairs has a seeded random sample of them scored. See the module docstring."""
    return _pair_fidelity(_Prepared(x, z, *_columns(x, z, numeric, categorical, "pair_fidelity")),
                          options or FidelityOptions())


def _pair_fidelity(prep: _Prepared, opts: FidelityOptions) -> PairFidelityResult:
    cols = prep.columns
    p = len(cols)
    if p < 2:
        raise MeasureNotApplicable("pair_fidelity needs at least two columns")
    ii, jj = np.triu_indices(p, k=1)
    total = int(ii.size)
    if total > opts.max_pairs:
        pick = np.sort(np.random.default_rng(opts.random_state).choice(total, opts.max_pairs, replace=False))
        ii, jj = ii[pick], jj[pick]
    # correlations of every pair of numbers at once
    nidx = {c: k for k, c in enumerate(c for c in cols if prep.is_number(c))}
    Rx, Rz = (_correlations([prep.numbers(c)[side] for c in nidx]) for side in (0, 1))
    # SDMetrics refuses a constant column: its correlation is undefined
    const = {c: _constant(prep.numbers(c)[0]) or _constant(prep.numbers(c)[1]) for c in nidx}
    rows, skipped = [], []
    for i, j in zip(ii.tolist(), jj.tolist(), strict=True):
        a, b = cols[i], cols[j]
        rx = rz = math.nan
        if a in nidx and b in nidx:
            metric = CORRELATION
            rx, rz = float(Rx[nidx[a], nidx[b]]), float(Rz[nidx[a], nidx[b]])
            score = 1.0 - abs(rx - rz) / 2.0 if math.isfinite(rx) and math.isfinite(rz) else math.nan
            if const[a] or const[b]:
                score = math.nan
                skipped.append((f"{a} × {b}", f"{a if const[a] else b} is constant: no correlation"))
            elif not math.isfinite(score):
                skipped.append((f"{a} × {b}", "fewer than two records hold both values"))
        else:
            metric = CONTINGENCY
            score = _joint_tv(prep.cells(a, opts.bins), prep.cells(b, opts.bins)) if len(prep.x) and len(prep.z) \
                else math.nan
        rows.append({"column_1": a, "column_2": b, "metric": metric, "score": score,
                     "correlation_x": rx, "correlation_z": rz})
    per = _worst_first(pd.DataFrame(rows, columns=["column_1", "column_2", "metric", "score", "correlation_x",
                                                   "correlation_z"]))
    scored = per["score"].dropna()
    if scored.empty:
        raise MeasureNotApplicable(f"pair_fidelity scored no pair: {_why(skipped)}")
    return PairFidelityResult(value=float(scored.iloc[0]), mean=float(scored.mean()),
                              worst=f"{per['column_1'].iloc[0]} × {per['column_2'].iloc[0]}", pairs=int(scored.size),
                              pairs_total=total, not_scored=_why(skipped), per_pair=per)


# --------------------------------------------------------------- CLI registrations
def _opt(ctx: EvaluationContext, measure: str, name: str, default: Any) -> Any:
    """An option given as ``measure.name`` or ``{measure: {name: ...}}`` (a plain ``bins`` could
    mean something else to another measure)."""
    nested = ctx.options.get(measure)
    if isinstance(nested, dict) and name in nested:
        return nested[name]
    return ctx.options.get(f"{measure}.{name}", default)


def _prepared(ctx: EvaluationContext) -> _Prepared:
    """The context's columns prepared once for both fidelity measures: the schema's numbers
    (dates too) and its sampling weight as numbers, every other column of x as a category."""
    prep = ctx.cache.get("fidelity")
    if prep is None or prep.x is not ctx.x or prep.z is not ctx.z:  # a context copied for other tables
        numbers = {*ctx.schema.numeric, *([ctx.schema.weight] if ctx.schema.weight else [])}
        num = [c for c in ctx.x.columns if c in numbers]
        cat = [c for c in ctx.x.columns if c not in set(num)]
        prep = _Prepared(ctx.x, ctx.z, *_columns(ctx.x, ctx.z, num, cat, "column_fidelity"))
        # the context holds dates on their time axis already: the schema says which they were
        prep.dates |= {c for c in num if c in ctx.schema.dates}
        ctx.cache["fidelity"] = prep
    return ctx.cache["fidelity"]


def _whole(v: Any, name: str) -> int:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a whole number, got {v!r}") from None
    if not f.is_integer():
        raise ParameterError(f"{name} must be a whole number, got {v!r}")
    return int(f)


@register_measure(
    "column_fidelity", kind="utility", needs_class=False, default=True, options=(),
    description="the worst column's distribution score: 1 − Kolmogorov–Smirnov D for a number or a date, 1 − total "
    "variation distance of the category frequencies for a category (SDMetrics' KSComplement and TVComplement); "
    "higher is better",
    direction="higher", value_range=(0.0, 1.0), threshold=0.8,
    meaning="1 means every column of z has the distribution its column has in x; the value is the worst column's "
    "score (named in 'worst'), and 0.8 means its cumulative distributions, or its category shares, are 0.2 apart "
    "at most.")
def _column_fidelity_measure(ctx: EvaluationContext) -> ColumnFidelityResult:
    return _column_fidelity(_prepared(ctx))


@register_measure(
    "pair_fidelity", kind="utility", needs_class=False, default=True, options=("bins", "max_pairs"),
    description="the worst pair of columns: 1 − |r_x − r_z|/2 (Pearson) for two numbers, 1 − total variation "
    "distance of the joint frequencies for any other pair, a number cut into 10 bins of x's values "
    "(SDMetrics' CorrelationSimilarity and ContingencySimilarity); higher is better",
    direction="higher", value_range=(0.0, 1.0), threshold=0.8,
    meaning="1 means every pair of columns of z varies together as in x; the value is the worst pair's score "
    "(named in 'worst'): 0.8 means a correlation moved by 0.4, or a fifth of the records would have to change "
    "cell of the pair's contingency table.")
def _pair_fidelity_measure(ctx: EvaluationContext) -> PairFidelityResult:
    opts = FidelityOptions(bins=_whole(_opt(ctx, "pair_fidelity", "bins", DEFAULT_BINS), "bins"),
                           max_pairs=_whole(_opt(ctx, "pair_fidelity", "max_pairs", DEFAULT_MAX_PAIRS), "max_pairs"),
                           random_state=ctx.random_state)
    return _pair_fidelity(_prepared(ctx), opts)


__all__ = ["CONTINGENCY", "CORRELATION", "ColumnFidelityResult", "FidelityOptions", "KS", "PairFidelityResult", "TV",
           "column_fidelity", "contingency_similarity", "correlation_similarity", "ks_complement", "pair_fidelity",
           "tv_complement"]
