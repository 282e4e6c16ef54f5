"""The distribution of a sensitive attribute in every equivalence class of a table.

An equivalence class is a group of records with equal quasi-identifiers (dense ids, a missing
key value being a value of its own). The privacy models of :mod:`ppdm.metrics.privacy_models`
(the measures) and the generalisation search of :mod:`ppdm.anonymize.generalization_search`
(which must meet them) read the classes' distributions through this one implementation:
:func:`sensitive_cells` lists the (class, value) cells and the table's distribution ``p``, and
:func:`equal_emd` / :func:`ordered_emd` give each class's Earth Mover's Distance from ``p``
(Li, Li & Venkatasubramanian 2007, ICDE, §4.2: equal ground distance for categories, ordered
for numbers). Blank sensitive values are left out of the class's and the table's distributions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError


@dataclass
class SensitiveCells:
    """The distribution of one sensitive attribute in every class of a table, as cells.

    A cell is a (class, value) pair present in the table; cells are sorted by class, then by
    value index (for an ordered attribute, by value). ``p`` is the table's distribution over the
    ``m`` distinct non-blank values, ``known`` the non-blank records of each class.
    """

    sensitive: str
    ordered: bool
    size: np.ndarray  # records per class
    known: np.ndarray  # records with a non-blank sensitive value, per class
    cls: np.ndarray  # class of each cell
    val: np.ndarray  # value index of each cell, 0..m-1
    count: np.ndarray  # records of each cell
    p: np.ndarray  # table share of each value
    # under the wildcard reading of blank keys classes overlap (a class is every record a key
    # pattern matches): the records whose own pattern it is, each record in one class
    members: np.ndarray | None = None

    @property
    def own(self) -> np.ndarray:
        """Records whose own key is each class's: ``members``, else ``size`` (exact classes)."""
        return self.size if self.members is None else self.members

    @property
    def m(self) -> int:
        return len(self.p)

    @property
    def n_classes(self) -> int:
        return len(self.size)

    @property
    def q(self) -> np.ndarray:
        """The class share of each cell's value (over the class's non-blank records)."""
        return self.count / self.known[self.cls]

    @property
    def starts(self) -> np.ndarray:
        """Index of each class's first cell, for the classes that have cells."""
        return np.flatnonzero(np.r_[True, self.cls[1:] != self.cls[:-1]]) if len(self.cls) else np.zeros(0, int)

    def class_max(self, v: np.ndarray) -> np.ndarray:
        """The largest of ``v`` over each class's cells (0 for a class without cells)."""
        out = np.zeros(self.n_classes)
        if len(v):
            st = self.starts
            out[self.cls[st]] = np.maximum.reduceat(v, st)
        return out


def is_number(s: pd.Series) -> bool:
    """Whether a column holds numbers with an order (booleans do not)."""
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def sensitive_cells(group: np.ndarray, s: pd.Series, *, ordered: bool = False) -> SensitiveCells:
    """:class:`SensitiveCells` of attribute ``s`` over the classes ``group`` (dense ids, as
    :func:`ppdm.metrics.keyvar.group_codes` gives). ``ordered`` sorts the values, which must be
    numbers."""
    if ordered and not is_number(s):
        raise ParameterError(f"sensitive attribute {s.name!r} is not numeric: its values have no order "
                             "(t_closeness.ground=equal)")
    codes, _ = pd.factorize(s, sort=ordered, use_na_sentinel=True)
    return cells_from_codes(group, codes.astype(np.int64, copy=False), sensitive=str(s.name), ordered=ordered)


def cells_from_codes(group: np.ndarray, codes: np.ndarray, *, sensitive: str = "", ordered: bool = False,
                     n_classes: int | None = None) -> SensitiveCells:
    """:class:`SensitiveCells` from value codes (0..m−1, in value order when ``ordered``; −1 for a
    blank value) over the classes ``group`` (dense ids 0..``n_classes``−1)."""
    if n_classes is None:
        n_classes = int(group.max()) + 1 if len(group) else 0
    size = np.bincount(group, minlength=n_classes)
    ok = codes >= 0
    known = np.bincount(group[ok], minlength=n_classes)
    m = int(codes.max()) + 1 if ok.any() else 0
    pair, count = np.unique(group[ok] * max(m, 1) + codes[ok], return_counts=True)
    p = np.bincount(codes[ok], minlength=m) / max(int(ok.sum()), 1)
    return SensitiveCells(sensitive=sensitive, ordered=ordered, size=size, known=known,
                          cls=pair // max(m, 1), val=pair % max(m, 1), count=count.astype(float), p=p)


def equal_emd(c: SensitiveCells) -> np.ndarray:
    """Per class, the EMD between q and p under the equal ground distance: ½ Σ_i |q_i − p_i|
    (values absent from the class count p_i each)."""
    pv = c.p[c.val]
    dev = np.bincount(c.cls, weights=np.abs(c.q - pv), minlength=c.n_classes)
    covered = np.bincount(c.cls, weights=pv, minlength=c.n_classes)
    out = 0.5 * (dev + 1.0 - covered)
    return np.where(c.known > 0, np.clip(out, 0.0, 1.0), 0.0)


def ordered_emd(c: SensitiveCells) -> np.ndarray:
    """Per class, the EMD between q and p under the ordered ground distance (values 0..m−1 in
    order, |i − j|/(m−1) apart): 1/(m−1) Σ_i |Q(i) − P(i)| with Q, P the cumulative shares.

    Q is constant between two values present in the class, so each cell's stretch of values is
    summed at once from prefix sums of P, where P crosses Q (P increases): O(cells · log m),
    never a classes × values matrix.
    """
    m = c.m
    if m <= 1:
        return np.zeros(c.n_classes)
    P = np.cumsum(c.p)
    CP = np.r_[0.0, np.cumsum(P)]  # CP[i] = Σ_{t<i} P(t)
    q = c.q
    cum = np.cumsum(q)
    st = c.starts
    first = np.zeros(len(q), dtype=bool)
    first[st] = True
    offset = np.repeat(cum[st] - q[st], np.diff(np.r_[st, len(q)]))
    Q = cum - offset  # the class's cumulative share through each cell's value
    a = c.val
    last = np.r_[c.cls[1:] != c.cls[:-1], True]
    b = np.where(last, m, np.r_[c.val[1:], m])  # up to the class's next value present
    s = np.clip(np.searchsorted(P, Q, side="left"), a, b)
    seg = Q * (s - a) - (CP[s] - CP[a]) + (CP[b] - CP[s]) - Q * (b - s)
    total = np.bincount(c.cls, weights=seg, minlength=c.n_classes)
    total += np.bincount(c.cls[first], weights=CP[a[first]], minlength=c.n_classes)  # Q = 0 before the first
    return np.where(c.known > 0, np.clip(total / (m - 1), 0.0, 1.0), 0.0)


__all__ = ["SensitiveCells", "cells_from_codes", "equal_emd", "is_number", "ordered_emd", "sensitive_cells"]
