"""Noise with wrap-around inside an interval, shared by Framework, Forest Framework and RT.

Islam & Brankovic (2011) keep a perturbed numeric value inside the range that
satisfies a leaf's logic rule by *wrapping it around*: a value that overflows the
upper end by δ re-enters at the lower end plus δ, and vice versa (paper 004 §3
step 4 uses the same device inside an intersection's sub-domain). The spec calls
this shared primitive RNT (trees_and_perturbation.md §4 step 7).

Everything here works on whole columns at once: every record carries its own
interval (``lo``, ``hi`` and whether each end is closed).
"""

from __future__ import annotations

import numpy as np


def wrap_continuous(
    v: np.ndarray,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    lo_closed: np.ndarray,
    hi_closed: np.ndarray,
) -> np.ndarray:
    """Wrap ``v`` into each record's interval between ``lo`` and ``hi``.

    ``r = (v − lo) mod (hi − lo)`` puts the value on a circle whose circumference is
    the interval's width; ``lo + r`` is the wrapped value. An open lower end turns a
    landing exactly on ``lo`` into ``hi`` (the two ends are the same point of the
    circle), and floating-point rounding is guarded so an open end is never reached.
    Records whose interval is empty or a single point keep their value.
    """
    v = np.asarray(v, dtype=float)
    lo = np.broadcast_to(np.asarray(lo, dtype=float), v.shape)
    hi = np.broadcast_to(np.asarray(hi, dtype=float), v.shape)
    lo_closed = np.broadcast_to(np.asarray(lo_closed, dtype=bool), v.shape)
    hi_closed = np.broadcast_to(np.asarray(hi_closed, dtype=bool), v.shape)
    w = hi - lo
    ok = _continuous_room(lo, hi, lo_closed, hi_closed)
    out = v.copy()
    if not ok.any():
        return out
    wv, lov, hiv = w[ok], lo[ok], hi[ok]
    loc, hic = lo_closed[ok], hi_closed[ok]
    r = np.mod(v[ok] - lov, wv)
    r = np.where((r == 0) & ~loc, wv, r)
    z = lov + r
    # guards against rounding in lo + r (and against r == w when both ends are open)
    z = np.where(loc, np.maximum(z, lov), np.where(z <= lov, np.nextafter(lov, np.inf), z))
    z = np.where(hic, np.minimum(z, hiv), np.where(z >= hiv, np.nextafter(hiv, -np.inf), z))
    # a value already inside stays put (the modulo would send a closed upper end to lo)
    vv = v[ok]
    inside = np.where(loc, vv >= lov, vv > lov) & np.where(hic, vv <= hiv, vv < hiv)
    out[ok] = np.where(inside, vv, z)
    return out


def _continuous_room(lo: np.ndarray, hi: np.ndarray, lo_closed: np.ndarray, hi_closed: np.ndarray) -> np.ndarray:
    """Whether each (broadcast) interval holds more than one real value to wrap onto: finite,
    wider than zero, and, with both ends open, wider than two neighbouring floats."""
    w = hi - lo
    room = np.isfinite(w) & (w > 0)
    room &= ~(~lo_closed & ~hi_closed & (np.nextafter(lo, np.inf) >= hi))
    return room


def integer_range(
    lo: np.ndarray, hi: np.ndarray, lo_closed: np.ndarray, hi_closed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest whole number inside each interval (``zlo > zhi`` when none)."""
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    zlo = np.where(lo_closed, np.ceil(lo), np.floor(lo) + 1.0)
    zhi = np.where(hi_closed, np.floor(hi), np.ceil(hi) - 1.0)
    return zlo, zhi


# wrap_continuous's parameters again: the two are the public pair over one interval form
# (each record's lo, hi and closed ends); only their bodies differ
def wrap_integer(
    v: np.ndarray,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    lo_closed: np.ndarray,
    hi_closed: np.ndarray,
) -> np.ndarray:
    """Round ``v`` and wrap it onto the whole numbers inside each record's interval.

    With ``Z = {zlo, …, zhi}`` the whole numbers of the interval, the result is
    ``zlo + (round(v) − zlo) mod |Z|``: an overflow past ``zhi`` by δ re-enters at
    ``zlo + δ − 1``. Records whose interval holds no whole number keep ``v``.
    """
    v = np.asarray(v, dtype=float)
    shape = v.shape
    zlo, zhi = integer_range(
        np.broadcast_to(lo, shape), np.broadcast_to(hi, shape),
        np.broadcast_to(lo_closed, shape), np.broadcast_to(hi_closed, shape),
    )
    m = zhi - zlo + 1.0
    ok = np.isfinite(m) & (m >= 1)
    out = v.copy()
    if ok.any():
        rv = np.rint(v[ok])
        out[ok] = zlo[ok] + np.mod(rv - zlo[ok], m[ok])
    return out


def add_wrapped_noise(
    v: np.ndarray,
    noise: np.ndarray,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    lo_closed: np.ndarray,
    hi_closed: np.ndarray,
    *,
    integer: bool,
) -> np.ndarray:
    """``v + noise`` wrapped into each record's interval (whole numbers if ``integer``).

    Where the interval has no room (zero width, or no whole number for an integer
    attribute) the original value is kept, as the spec asks (§3 step 3).
    """
    v = np.asarray(v, dtype=float)
    parts = [np.asarray(a) for a in (noise, lo, hi, lo_closed, hi_closed)]
    if v.ndim == 1 and all(a.shape == v.shape for a in parts):
        # one interval per record: the compiled form of the code below, the same to the bit
        from ppdm.anonymize._noise_kernels import add_wrapped_noise_rows

        nz, a, b, lc, hc = parts
        return add_wrapped_noise_rows(v, nz.astype(float, copy=False), a.astype(float, copy=False),
                                      b.astype(float, copy=False), lc.astype(bool, copy=False),
                                      hc.astype(bool, copy=False), bool(integer))
    return _add_wrapped_noise_numpy(v, noise, lo, hi, lo_closed, hi_closed, integer=integer)


def _add_wrapped_noise_numpy(v: np.ndarray, noise: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float,
                             lo_closed: np.ndarray, hi_closed: np.ndarray, *, integer: bool) -> np.ndarray:
    fn = wrap_integer if integer else wrap_continuous
    out = fn(v + noise, lo, hi, lo_closed, hi_closed)
    # keep v where the interval has no room: wrap_* returned v + noise unchanged there
    shape = v.shape
    lo_b, hi_b = np.broadcast_to(lo, shape), np.broadcast_to(hi, shape)
    if integer:
        zlo, zhi = integer_range(lo_b, hi_b, np.broadcast_to(lo_closed, shape), np.broadcast_to(hi_closed, shape))
        room = np.isfinite(zhi - zlo) & (zhi >= zlo)
    else:
        room = _continuous_room(lo_b, hi_b, np.broadcast_to(lo_closed, shape), np.broadcast_to(hi_closed, shape))
    return np.where(room, out, v)
