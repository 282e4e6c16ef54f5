"""What the full-domain generalisation search measures at each lattice node.

The ladders of coarser values per attribute (:class:`Ladder`, nested interval widths and date
levels), the information loss of a candidate release (ARX's loss, discernibility or their
mix: :func:`release_loss`), and the privacy models a node must satisfy (k-anonymity,
l-diversity and t-closeness over the equivalence classes: :func:`failing`). Split from
:mod:`ppdm.anonymize.generalization_search`, which keeps the registered technique and
re-exports every name here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize.base import check_fraction
from ppdm.anonymize.recoding import width_breaks
from ppdm.data.class_distributions import cells_from_codes, equal_emd, is_number, ordered_emd
from ppdm.errors import ParameterError
from ppdm.utils import unique_pairs

#: the label of a category's top level, every category (ARX's ``*``)
TOP = "*"


#: the date levels above the day, each a coarsening of the one before
DATE_LEVELS: tuple[tuple[str, Any, str], ...] = (("date_period", "month", "month"), ("date_period", "year", "year"),
                                                 ("cohort", 5, "5-year cohorts"), ("cohort", 10, "10-year cohorts"))


#: the round width units, each dividing the next times ten: intervals of consecutive widths nest
WIDTH_UNITS = (1, 5)


#: the losses the search may minimise (see the module's docstring)
LOSSES = ("arx", "discernibility", "mix")


_LOSS_WORDS = {
    "arx": "ARX's Loss (Iyengar's LM): per key, (original values a released value stands for − 1)/(distinct values "
           "− 1), 1 for a suppressed record",
    "discernibility": "discernibility (Bayardo & Agrawal 2005) / n²: per record, the share of the table in its class, 1 "
                      "for a suppressed record",
    "mix": "loss_weight × ARX's Loss + (1 − loss_weight) × discernibility / n²",
}


_EPS = 1e-12


# ------------------------------------------------------------------------------ hierarchies
@dataclass
class Ladder:
    """One key's generalisation hierarchy as the search sees it.

    ``specs[l]`` is what :class:`Recode` is given for level ``l`` (``None`` at level 0),
    ``describe[l]`` says it in words, ``codes[l]`` is each record's class at level ``l`` (−1 for a
    missing value) and ``loss[l]`` each record's loss there (ARX's Loss, 0 for a missing value).
    """

    column: str
    kind: str
    specs: list[tuple[str, Any] | None] = field(default_factory=list)
    describe: list[str] = field(default_factory=list)
    codes: list[np.ndarray] = field(default_factory=list)
    loss: list[np.ndarray] = field(default_factory=list)

    @property
    def levels(self) -> int:
        return len(self.codes)


def nested_widths(lo: float, hi: float, max_intervals: int) -> list[float]:
    """Round widths 1 and 5 times a power of ten in turn, from the first giving at most
    ``max_intervals`` intervals over ``[lo, hi]`` up to the first giving at most two."""
    cell = (hi - lo) / max(int(max_intervals), 1)
    if not (cell > 0 and math.isfinite(cell)):
        return []
    e = math.floor(math.log10(cell)) - 1
    out: list[float] = []
    while True:
        for u in WIDTH_UNITS:
            w = float(f"{u}e{e}")  # exact decimal widths: 5e-2, not 0.05000000000000001
            if w < cell * (1 - 1e-9):
                continue
            out.append(w)
            if width_breaks(lo, hi, w).size <= 3:
                return out
        e += 1


def _check_nested(column: str, below: np.ndarray, above: np.ndarray, what: str, under: str) -> None:
    """A level must coarsen the one below it: each class of the lower level lies in one class of
    the upper (else the search's monotonicity, and with it its result, would not hold)."""
    ok = below >= 0
    low, _ = unique_pairs(below[ok], above[ok])
    if np.unique(low).size != low.size:
        raise ParameterError(f"the hierarchy of {column!r} is not nested: its level {what!r} splits a group of "
                             f"the level below ({under!r}); every label must have one parent")


def _record_loss(orig: np.ndarray, codes: np.ndarray, domain: int) -> np.ndarray:
    """ARX's Loss of each record's released value: (values it stands for − 1)/(domain − 1)."""
    out = np.zeros(len(codes))
    ok = codes >= 0
    if domain <= 1 or not ok.any():
        return out
    released, _ = unique_pairs(codes[ok], orig[ok])
    size = np.bincount(released, minlength=int(codes.max()) + 1)
    out[ok] = (size[codes[ok]] - 1) / (domain - 1)
    return out


def _factor(values: Any) -> np.ndarray:
    codes, _ = pd.factorize(pd.Series(values, dtype=object) if not isinstance(values, pd.Series) else values,
                            use_na_sentinel=True)
    return codes.astype(np.int64, copy=False)


def release_loss(x: pd.DataFrame, z: pd.DataFrame, keys: list[str], loss: str = "arx", *,
                 weights: Mapping[str, float] | None = None, loss_weight: float = 0.5) -> float:
    """The loss of release ``z`` of ``x`` on ``keys``, worked out from z's labels alone (the row
    order of x and z the same; a record another tool deleted is given back as a row of blanks).

    ``"arx"``: a released label of key q stands for the values x holds under it in the same rows;
    a record loses (those values − 1)/(D_q − 1), D_q the distinct values of x, and a blank in z
    where x has a value loses 1 (suppression); weighted mean over the records and keys.
    ``"discernibility"``: a record costs the records of z with the same keys (a blank a value of
    its own), a record whose keys are all blank in z costs n; the sum over n². ``"mix"``:
    ``loss_weight`` × the first + (1 − ``loss_weight``) × the second. These are the losses
    :class:`Generalize` minimises (see the module's docstring), so another tool's release and
    generalize's are judged by the same numbers."""
    if loss not in LOSSES:
        raise ParameterError(f"loss must be one of {', '.join(map(repr, LOSSES))}, got {loss!r}")
    check_fraction("loss_weight", loss_weight)
    if len(x) != len(z):
        raise ParameterError(f"x and z must hold the same records in the same order (n={len(x)} and {len(z)})")
    bad = [c for c in keys if c not in x.columns or c not in z.columns]
    if bad:
        raise ParameterError(f"key {bad[0]!r} is not a column of both tables")
    n = len(x)
    if not n or not keys:
        return 0.0
    a_w, d_w = {"arx": (1.0, 0.0), "discernibility": (0.0, 1.0)}.get(loss, (float(loss_weight), 1 - float(loss_weight)))
    zcodes = [_factor(z[c].reset_index(drop=True)) for c in keys]
    total = 0.0
    if a_w > 0:
        w = np.array([float((weights or {}).get(c, 1.0)) for c in keys])
        for q, c in enumerate(keys):
            orig = _factor(x[c].reset_index(drop=True))
            domain = int(orig.max()) + 1 if (orig >= 0).any() else 0
            per = _record_loss(orig, zcodes[q], domain)
            per[(zcodes[q] < 0) & (orig >= 0)] = 1.0  # blanked: stands for every value
            total += a_w * w[q] * float(per.sum()) / (n * float(w.sum()))
    if d_w > 0:
        out = np.all(np.stack(zcodes) < 0, axis=0)
        g = class_ids(zcodes, n)
        size = np.bincount(g)[g].astype(float)
        total += d_w * (float(size[~out].sum()) + float(out.sum()) * n) / (float(n) * n)
    return total


# ------------------------------------------------------------------------------ the classes
def class_ids(codes: list[np.ndarray], n: int) -> np.ndarray:
    """Dense class id of every record from its keys' codes (−1, missing, is a value of its own)."""
    g = np.zeros(n, dtype=np.int64)
    top = 1
    for c in codes:
        card = int(c.max()) + 2 if len(c) else 1
        if top * card >= 2**62:  # keep the mixed-radix code inside int64
            g = pd.factorize(g)[0].astype(np.int64)
            top = int(g.max()) + 1 if n else 1
        g = g * card + (c + 1)
        top *= card
    return pd.factorize(g)[0].astype(np.int64) if n else g


@dataclass
class Models:
    """The privacy models a release must meet, with the sensitive attributes' codes."""

    k: int
    l: int | None  # noqa: E741 - the model's name
    t: float | None
    sensitive: list[str]
    scodes: list[np.ndarray]  # value codes (sorted for an ordered attribute), −1 blank
    ordered: list[bool]


def sensitive_codes(df: pd.DataFrame, sensitive: list[str]) -> tuple[list[np.ndarray], list[bool]]:
    """Value codes of the sensitive attributes, in value order for numbers (t-closeness's ordered
    ground distance, as the measure's ``ground="auto"``)."""
    codes, ordered = [], []
    for s in sensitive:
        o = is_number(df[s])
        c, _ = pd.factorize(df[s], sort=o, use_na_sentinel=True)
        codes.append(c.astype(np.int64, copy=False))
        ordered.append(bool(o))
    return codes, ordered


def distinct_l(g: np.ndarray, sc: np.ndarray, n_classes: int) -> np.ndarray:
    """Per class, the distinct sensitive values, a missing value counting as one more beside
    others (:func:`ppdm.metrics.keyvar.l_diversity`'s rule)."""
    ok = sc >= 0
    m = int(sc.max()) + 1 if ok.any() else 1
    cells = np.unique(g[ok] * m + sc[ok])
    dn = np.bincount(cells // m, minlength=n_classes)
    has_missing = np.bincount(g[~ok], minlength=n_classes) > 0
    return dn + (has_missing & (dn > 0))


def failing(g: np.ndarray, blank: np.ndarray, models: Models, *, with_t: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Records in classes failing the monotone models (k, distinct l) and those failing t.

    The blank class (every key missing) is exempt from k: its records match every record
    (:func:`ppdm.metrics.keyvar.k_anonymity`); it is checked as the suppressed class instead."""
    n_classes = int(g.max()) + 1 if len(g) else 0
    size = np.bincount(g, minlength=n_classes)
    bad = size < models.k
    if models.l is not None:
        for sc in models.scodes:
            bad |= distinct_l(g, sc, n_classes) < models.l
    mono = bad[g] & ~blank
    tbad = np.zeros(len(g), dtype=bool)
    if with_t and models.t is not None:
        cls_bad = np.zeros(n_classes, dtype=bool)
        for sc, o in zip(models.scodes, models.ordered, strict=True):
            cells = cells_from_codes(g, sc, ordered=o, n_classes=n_classes)
            cls_bad |= (ordered_emd(cells) if o else equal_emd(cells)) > models.t + _EPS
        tbad = cls_bad[g] & ~blank
    return mono, tbad


def suppressed_class_ok(g: np.ndarray, out: np.ndarray, models: Models) -> bool:
    """Whether the class of suppressed (and blank) records ``out`` meets l and t, the table's
    distribution being that of every record."""
    if not out.any() or (models.l is None and models.t is None):
        return True
    g2 = np.where(out, 0, 1)  # the suppressed class is class 0; the rest do not matter here
    for sc, o in zip(models.scodes, models.ordered, strict=True):
        if models.l is not None and distinct_l(g2[out], sc[out], 1)[0] < models.l:
            return False
        if models.t is not None:
            cells = cells_from_codes(g2, sc, ordered=o, n_classes=2)
            if (ordered_emd(cells) if o else equal_emd(cells))[0] > models.t + _EPS:
                return False
    return True


@dataclass
class Outcome:
    """What one node of the lattice gives: whether the monotone models fit within the limit,
    whether every model does, the records suppressed and the loss."""

    monotone_ok: bool
    ok: bool = False
    suppressed: np.ndarray | None = None
    loss: float = math.inf
    arx: float = math.inf
    discernibility: float = math.inf
