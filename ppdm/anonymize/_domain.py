"""Released values stay possible: the domain of every numeric attribute, kept by clipping or reflecting.

A numeric attribute's **domain** is where its released values may lie:

* the interval the schema declares (``Schema.bounds``, public metadata such as age in
  [0, 120]); a value of x outside it is bad input and refused (:func:`check_declared_domain`);
* otherwise the range observed in the table given to ``fit`` (x). At transform time an
  observed domain also takes in the range of the table being released, so the records of a
  partition of a larger table, or new records, are never pushed into x's range;
* only **whole numbers** for whole-number attributes (``Schema.integer`` or an integer
  dtype), and only multiples of its resolution for a date (whole days for ``%Y-%m-%d``,
  whole minutes for ``%H:%M``). A non-negative attribute, one whose domain starts at 0 or
  above, stays non-negative because its domain says so.

A technique whose perturbation can leave the domain brings a value back in one of two ways
(:func:`into_domain`), chosen per technique so that its own statistical properties suffer
least (docs/value_domains.md lists the choices):

* **clip**: the value becomes the nearest end. Every value moves as little as possible (the
  projection onto the interval), so means and covariances change least, but every value
  that left the domain lands *on* an end: a spike of mass there.
* **reflect**: the overshoot is folded back inside (``low − δ`` becomes ``low + δ``, again and
  again if the noise is wider than the domain). Symmetric noise stays symmetric near an end
  and no mass piles up on it; a value moves twice as far as clipping would move it.

On a grid of allowed values (whole numbers, dates) a value is first rounded to the grid and
then clipped or reflected between the first and the last allowed value, so both stay on it.

**Clipping never copies a rare extreme of x.** When the domain was read from x, its ends are
x's own extreme values. Clipping onto an end that fewer than :data:`RARE_END` records of x
hold would repeat those records' exact value in the release (the top income of x, to the
cent), which top-coding exists to prevent. At such an end a value is reflected instead; at a
declared bound, or an end many records share (incomes of 0), clipping stays clipping.

**Warning only where it matters.** A domain read from x is the documented default, so it does
not warn by itself (nor do declared bounds, ever). An end of x's range that many records
share (incomes of 0, adult's youngest age 17 held by 395 people) is a natural floor or
ceiling of the attribute, and bringing values back to it changes nothing a declaration
would. It matters when an end is held by fewer than :data:`RARE_END` records (an outlier)
and at least :data:`MOVED_SHARE` of the attribute's released values fell past it: then one
or two records of x decide where a large part of the release lies, and the true domain is
likely wider. A :class:`BoundsFromDataWarning` names those attributes and asks for their
public bounds. The toy noise at its default level, the wrap-around techniques and the
aggregating ones never warn on the shipped tables; GADP on heavily skewed attributes does.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.data.types import resolution_of
from ppdm.errors import ParameterError, SchemaError

#: an end of an observed range held by fewer records of x than this is rare: clipping onto it
#: would repeat those records' exact value in the release, so values are reflected there
RARE_END = 5
#: share of an attribute's released values brought back at a rare end of a range read from x
#: from which on a :class:`BoundsFromDataWarning` asks for declared bounds
MOVED_SHARE = 0.05
#: the ways back into a domain
HOW = ("clip", "reflect")
#: length of one step of a date's resolution, in days (the unit of the time axis)
_DATE_STEP = {"D": 1.0, "h": 1.0 / 24, "min": 1.0 / 1440, "s": 1.0 / 86400}


class BoundsFromDataWarning(UserWarning):
    """Many released values of an attribute were brought back inside its range read from x at
    an end few records hold, so those records shape the release; declare public bounds."""


@dataclass(frozen=True)
class ValueDomain:
    """Where released values of one numeric attribute may lie.

    Attributes
    ----------
    column:
        The attribute.
    low, high:
        The closed interval ``[low, high]``.
    declared:
        ``True`` when the interval is the schema's declared bounds, ``False`` when it is the
        range observed in x.
    step:
        Released values are whole multiples of ``step`` (1 for whole numbers, a date's
        resolution in days); ``None`` allows any real value.
    low_count, high_count:
        Records of x holding ``low`` and ``high`` (observed domains only; 0 when declared).
    """

    column: str
    low: float
    high: float
    declared: bool
    step: float | None = None
    low_count: int = 0
    high_count: int = 0

    def grid(self) -> tuple[float, float]:
        """Indices ``(k_low, k_high)`` of the first and last multiple of ``step`` inside the domain."""
        if self.step is None:
            raise ValueError("a continuous domain has no grid")
        # a small tolerance: an end written on the grid (17.0, a date at midnight) is on it
        k_low = np.ceil(self.low / self.step - 1e-6)
        k_high = np.floor(self.high / self.step + 1e-6)
        return float(k_low), float(k_high)

    def widened(self, values: np.ndarray) -> ValueDomain:
        """An observed domain stretched to also hold ``values`` (a declared one is returned as it is)."""
        if self.declared:
            return self
        v = np.asarray(values, dtype=float)
        v = v[~np.isnan(v)]
        if v.size == 0 or (v.min() >= self.low and v.max() <= self.high):
            return self
        lo, hi = float(v.min()), float(v.max())
        out = self
        if lo < self.low:
            out = replace(out, low=lo, low_count=int((v == lo).sum()))
        if hi > self.high:
            out = replace(out, high=hi, high_count=int((v == hi).sum()))
        return out


def _step_of(column: str, schema: Schema, dtype: np.dtype | pd.api.extensions.ExtensionDtype) -> float | None:
    if column in schema.integer or pd.api.types.is_integer_dtype(dtype):
        return 1.0
    if column in schema.dates:
        return _DATE_STEP.get(resolution_of(schema.dates[column]))
    return None


def value_domains(df: pd.DataFrame, schema: Schema) -> dict[str, ValueDomain]:
    """The domain of every numeric attribute of ``df`` (its working form: dates as days since
    1970-01-01): declared bounds, else the observed range. An attribute with no observed value
    gets none (it has nothing to release)."""
    out: dict[str, ValueDomain] = {}
    for c in schema.numeric:
        if c not in df.columns:
            continue
        step = _step_of(c, schema, df[c].dtype)
        if c in schema.bounds:
            lo, hi = schema.bounds[c]
            dom = ValueDomain(c, float(lo), float(hi), True, step)
            if step is not None:
                k_low, k_high = dom.grid()
                if k_low > k_high:
                    what = "whole number" if step == 1.0 else "date of its resolution"
                    raise SchemaError(f"the declared bounds of {c!r} [{lo:g}, {hi:g}] contain no {what}")
            out[c] = dom
            continue
        v = df[c].to_numpy(dtype=float, na_value=np.nan)
        v = v[~np.isnan(v)]
        if v.size == 0:
            continue
        lo, hi = float(v.min()), float(v.max())
        out[c] = ValueDomain(c, lo, hi, False, step, int((v == lo).sum()), int((v == hi).sum()))
    return out


def check_declared_domain(df: pd.DataFrame, schema: Schema, *, bounds: bool = True, categories: bool = True) -> None:
    """Refuse a table holding a value outside its column's declared bounds (``bounds=True``)
    or declared categories (``categories=True``), naming the column and the first row but
    never the value."""
    if bounds:
        for c, (lo, hi) in schema.bounds.items():
            if c not in df.columns:
                continue
            v = df[c].to_numpy(dtype=float, na_value=np.nan)
            bad = (v < lo) | (v > hi)
            if bad.any():
                raise SchemaError(
                    f"column {c!r} has a value outside its declared bounds [{lo:g}, {hi:g}] at row "
                    f"{df.index[int(bad.argmax())]!r} ({_count(int(bad.sum()))}); correct the data or the "
                    "schema's bounds (to cap outlying values, top/bottom-code them first)"
                )
    for c, values in (schema.categories if categories else {}).items():
        if c not in df.columns:
            continue
        s = df[c]
        ok = s.isna().to_numpy() | s.isin(values).to_numpy()
        if not ok.all():
            # a CSV round trip may turn numeric codes into text or back
            ok |= s.astype(str).isin([str(v) for v in values]).to_numpy()
        if not ok.all():
            raise SchemaError(
                f"column {c!r} has a value outside its declared categories at row {s.index[int((~ok).argmax())]!r} "
                f"({_count(int((~ok).sum()))}); correct the data or add the value to the schema's categories"
            )


def _count(n: int) -> str:
    return "1 such value" if n == 1 else f"{n} such values"


def into_domain(values: np.ndarray, domain: ValueDomain, how: str = "clip", *, whole: bool = True) -> np.ndarray:
    """``values`` brought into ``domain`` by clipping or reflecting (module docstring); missing
    values stay missing. ``whole=False`` ignores the domain's grid (values stay real numbers)."""
    if how not in HOW:
        raise ParameterError(f"values are brought into their domain by {' or '.join(HOW)}, not {how!r}")
    v = np.asarray(values, dtype=float)
    if domain.step is not None and whole:
        return _on_grid(v, domain, how)
    lo, hi = domain.low, domain.high
    if how == "clip":
        return np.clip(v, lo, hi)
    out = v.copy()
    outside = (v < lo) | (v > hi)
    if not outside.any():
        return out
    w = hi - lo
    if w <= 0:
        out[outside] = lo
        return out
    # fold onto a circle of circumference 2w: [lo, hi] forwards, then back down
    r = np.mod(v[outside] - lo, 2.0 * w)
    out[outside] = np.clip(lo + np.where(r <= w, r, 2.0 * w - r), lo, hi)
    return out


def _on_grid(v: np.ndarray, domain: ValueDomain, how: str) -> np.ndarray:
    step = float(domain.step)  # type: ignore[arg-type]  # only domains on a grid (a step) come here
    k_low, k_high = domain.grid()
    k = np.rint(v / step)
    if how == "clip":
        k = np.clip(k, k_low, k_high)
    else:
        m = k_high - k_low
        outside = (k < k_low) | (k > k_high)
        if m <= 0:
            k = np.where(outside, k_low, k)
        elif outside.any():
            r = np.mod(k[outside] - k_low, 2.0 * m)
            k[outside] = k_low + np.where(r <= m, r, 2.0 * m - r)
    return k * step if step != 1.0 else k


class DomainGuard:
    """Keeps one transform's released values in their domains and warns where it matters.

    ``guard(column, values, how)`` returns the values inside the column's domain (a column
    with no domain, e.g. one without an observed value, is returned as it is); ``"clip"``
    reflects instead at a rare end of a range read from x (module docstring). Observed
    domains are widened to the range of ``df``, the table being released (read when the guard
    is made, before the technique changes it). After the last column, :meth:`warn` issues one
    :class:`BoundsFromDataWarning` naming every attribute that had at least
    :data:`MOVED_SHARE` of its released values brought back at a rare end of its range read
    from x.
    """

    def __init__(self, domains: Mapping[str, ValueDomain] | None, df: pd.DataFrame | None = None,
                 technique: str = "the technique") -> None:
        self.domains = dict(domains or {})
        self.n_values: dict[str, int] = {}
        if df is not None:
            for c, dom in self.domains.items():
                if c in df.columns:
                    v = df[c].to_numpy(dtype=float, na_value=np.nan)
                    self.n_values[c] = int((~np.isnan(v)).sum())
                    if not dom.declared:
                        self.domains[c] = dom.widened(v)
        self.technique = technique
        self.moved: dict[str, int] = {}

    def domain(self, column: str) -> ValueDomain | None:
        """The domain of ``column`` for this transform (``None``: no domain to keep)."""
        return self.domains.get(column)

    def widen(self, column: str, values: np.ndarray) -> None:
        """Stretch ``column``'s domain, if read from x, to hold ``values``: released values that
        stand for a set of x's values meeting the range (base rounding's multiples of b)."""
        dom = self.domains.get(column)
        if dom is not None:
            self.domains[column] = dom.widened(values)

    def __call__(self, column: str, values: np.ndarray, how: str = "clip", *, whole: bool = True) -> np.ndarray:
        dom = self.domain(column)
        v = np.asarray(values, dtype=float)
        if dom is None:
            return v
        out = into_domain(v, dom, how, whole=whole)
        if dom.declared:
            return out
        # values that left the range at an end few records of x hold
        rare = ((v < dom.low) & (dom.low_count < RARE_END)) | ((v > dom.high) & (dom.high_count < RARE_END))
        if rare.any():
            if how == "clip":
                # never pin released values on an extreme of x that few records hold
                out = np.where(rare, into_domain(v, dom, "reflect", whole=whole), out)
            self.moved[column] = self.moved.get(column, 0) + int(rare.sum())
        return out

    def warn(self, stacklevel: int = 3) -> None:
        """One :class:`BoundsFromDataWarning` for the attributes that had at least
        :data:`MOVED_SHARE` of their released values brought back at a rare end of their
        range read from x (module docstring)."""
        many = [(c, k / self.n_values[c]) for c, k in self.moved.items()
                if self.n_values.get(c) and k / self.n_values[c] >= MOVED_SHARE]
        if many:
            listed = ", ".join(f"{100 * share:.0f}% of {c!r}" for c, share in many)
            warnings.warn(
                f"{self.technique} brought {listed} released values back inside the range observed in x, at an "
                f"end that fewer than {RARE_END} records of x hold: the values of those few records, not a "
                "declared domain, shape the release there; declare the attributes' public bounds in the schema "
                "('bounds')",
                BoundsFromDataWarning,
                stacklevel=stacklevel,
            )
        self.moved = {}


def technique_name(tech: object) -> str:
    """The registered name of a technique (its class name when it has none)."""
    return str(getattr(type(tech), "method_name", type(tech).__name__))
