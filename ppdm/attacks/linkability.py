"""Linkability (Giomi et al. 2023, §4.2): can the release join two datasets about the same people?

The attacker holds two datasets on the same individuals with different attributes:
``aux_cols[0]`` in one, ``aux_cols[1]`` in the other. For a target record, they look up
its ``n_neighbors`` nearest released records on each attribute set; if the two lists share
a record, the release has linked the target's two halves. Targets are ``n_attacks``
records drawn without replacement from the original data (main attack) or from the
control set (control attack); the baseline attacker picks ``n_neighbors`` released records
at random for each half.

Nearness is the Gower distance of :mod:`ppdm.attacks._common` (numeric attributes
divided by their range over all three tables, categorical mismatch counts 1); equally near
released records are ordered at random, the attacker having no reason to prefer one
(anonymeter 1.1.0 takes whichever its sort puts first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ppdm.attacks._common import (
    AttackResult,
    Encoded,
    attack_encoding,
    attack_tables,
    check_confidence,
    check_n_attacks,
    check_tables,
    context_encoding,
    make_result,
    measure_options,
    nearest,
    rng_of,
)
from ppdm.errors import ParameterError
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.utils import RandomState


def _links(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row, whether the two neighbour lists share an index."""
    return (a[:, :, None] == b[:, None, :]).any(axis=(1, 2))


def _distinct_draws(rng: np.random.Generator, rows: int, n: int, k: int) -> np.ndarray:
    """``rows`` draws of k distinct indices below n, each uniform over ordered k-tuples (the
    baseline attacker's guesses). Few neighbours among many records: draw with replacement
    and redraw the rows that repeat an index (rejection keeps every distinct tuple equally
    likely); otherwise each row without replacement."""
    if n <= 64:
        return np.argsort(rng.random((rows, n)), axis=1)[:, :k]
    if 2 * k * k > n:  # repeats would be common: draw each row without replacement
        return np.array([rng.choice(n, size=k, replace=False) for _ in range(rows)])
    out = rng.integers(0, n, size=(rows, k))
    while True:
        srt = np.sort(out, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
        if bad.size == 0:
            return out
        out[bad] = rng.integers(0, n, size=(bad.size, k))


def check_aux_cols(aux_cols: Any, columns: list[str]) -> tuple[list[str], list[str]]:
    """Two non-empty, disjoint lists of columns of the table."""
    if isinstance(aux_cols, str):  # "a,b|c,d" from the command line
        aux_cols = [[c.strip() for c in part.split(",") if c.strip()] for part in aux_cols.split("|")]
    try:
        first, second = (list(a) for a in aux_cols)
    except (TypeError, ValueError):
        raise ParameterError("linkability aux_cols must be two lists of columns (a,b|c,d)") from None
    if not first or not second:
        raise ParameterError("linkability aux_cols must be two non-empty lists of columns")
    absent = [c for c in first + second if c not in columns]
    if absent:
        raise ParameterError(f"linkability aux_cols name column(s) {absent} that are not in the table")
    if set(first) & set(second):
        raise ParameterError(f"linkability aux_cols overlap in {sorted(set(first) & set(second))}")
    return first, second


def linkability(
    ori: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame | None,
    aux_cols: tuple[list[str], list[str]],
    *,
    n_attacks: int = 2000,
    n_neighbors: int = 1,
    confidence: float = 0.95,
    numeric: list[str] | None = None,
    random_state: RandomState = None,
    encoded: Encoded | None = None,
) -> AttackResult:
    """Linkability risk of the release ``syn`` for the records of ``ori`` through the attribute
    sets ``aux_cols`` (see the module docstring), with ``control`` records not used to make it.

    ``n_attacks`` targets each (at most the table's rows), ``n_neighbors`` released records
    looked up per half. The result's ``detail`` holds the target rows and which were linked.
    ``encoded``: these tables already encoded on all their columns (:func:`~ppdm.attacks._common.context_encoding`), shared by the attacks of one evaluation.
    """
    attack = "linkability"
    n_attacks = check_n_attacks(n_attacks)
    n_neighbors = check_n_attacks(n_neighbors, "n_neighbors")
    confidence = check_confidence(confidence)
    ori, syn, control = check_tables(ori, syn, control, attack)
    first, second = check_aux_cols(aux_cols, list(ori.columns))
    rng = rng_of(random_state)
    cols = first + second
    enc = attack_encoding(encoded, [ori, syn, control], cols, numeric)
    k = min(n_neighbors, len(syn))
    n_main = min(n_attacks, len(ori))
    n_ctrl = min(n_attacks, len(control))
    t_main = rng.choice(len(ori), size=n_main, replace=False)
    t_ctrl = rng.choice(len(control), size=n_ctrl, replace=False)
    main = _links(nearest(enc, 0, t_main, 1, first, k, rng), nearest(enc, 0, t_main, 1, second, k, rng))
    ctrl = _links(nearest(enc, 2, t_ctrl, 1, first, k, rng), nearest(enc, 2, t_ctrl, 1, second, k, rng))
    pick = _distinct_draws(rng, 2 * n_main, len(syn), k)
    base = _links(pick[:n_main], pick[n_main:])
    settings = {"aux_cols": [first, second], "n_neighbors": k}
    detail = {"targets": t_main, "linked": main, "control_targets": t_ctrl, "control_linked": ctrl}
    return make_result(attack, n_attacks=(n_main, n_main, n_ctrl), n_success=int(main.sum()),
                       n_baseline=int(base.sum()), n_control=int(ctrl.sum()), confidence=confidence,
                       settings=settings, detail=detail)


_LINKABILITY_OPTIONS = ("aux_cols", "n_attacks", "n_neighbors", "confidence")


def default_aux_cols(ctx: EvaluationContext, columns: list[str]) -> tuple[list[str], list[str]]:
    """The ``aux_cols`` option (``a,b|c,d``), else the quasi-identifiers against the other
    attributes, else the attributes split in two halves in table order (class excluded)."""
    opts = measure_options(ctx, "linkability", _LINKABILITY_OPTIONS)
    if "aux_cols" in opts:
        return check_aux_cols(opts["aux_cols"], columns)
    sch = ctx.schema
    attrs = [c for c in columns if c != sch.class_column]
    qi = [c for c in sch.quasi_identifiers if c in attrs]
    if qi and len(qi) < len(attrs):
        return qi, [c for c in attrs if c not in qi]
    if len(attrs) < 2:
        raise ParameterError("linkability needs at least two attributes to split between the attacker's datasets")
    half = (len(attrs) + 1) // 2
    return attrs[:half], attrs[half:]


@register_measure("linkability", kind="risk", needs_class=False, default=True, direction="lower",
                  options=_LINKABILITY_OPTIONS,
                  value_range=(0.0, 1.0), threshold=0.05,
                  meaning="How much more often the release joins two partial records of the same original person "
                  "than of a control person, as a share; 0 is best.",
                  description="linkability risk: the release joins two halves of a record through nearest "
                              "neighbours (Giomi et al. 2023, anonymeter)")
def _linkability_measure(ctx: EvaluationContext) -> AttackResult:
    x, z, control, num = attack_tables(ctx)
    aux = default_aux_cols(ctx, list(x.columns))
    opts = measure_options(ctx, "linkability", _LINKABILITY_OPTIONS)
    opts.pop("aux_cols", None)
    return linkability(x, z, control, aux, numeric=num, random_state=ctx.random_state,
                       encoded=context_encoding(ctx, x, z, control, num), **opts)


__all__ = ["check_aux_cols", "linkability"]
