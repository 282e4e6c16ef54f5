"""The private log of a recommended release pairs it with the table it was searched on.

``ppdm recommend`` makes its release from the search's training split, so the pairing
:func:`ppdm.experiments.release.release` records points into that split, and the log says
nothing of which records were held out. :func:`pair_with_table` rewrites the owner's private
log (:func:`ppdm.data.provenance.build_private`) in the form ``ppdm anonymize --holdout``
writes: the pairing points into the table as the command read it (after its missing-value
policy), the hold-out record lists the control split's positions, and ``input.rows_kept`` is
the table's length. ``ppdm evaluate -x TABLE -z RELEASE`` then pairs every released record
with its original (:func:`ppdm.experiments.pairing.pair_in_memory`), as for any release.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdm.data.provenance import encode_positions
from ppdm.experiments.release import pairing_record


def pair_with_table(private: dict[str, Any], pairing: np.ndarray | None, held: np.ndarray, n_table: int,
                    fraction: float) -> dict[str, Any]:
    """The private log ``private`` of a release made from the training split, paired with the
    ``n_table`` records of the whole table instead: ``pairing`` (z's rows → training-split
    positions, ``None`` for a synthetic release) is mapped through the training split's
    positions in the table (those not in ``held``, in order), and the hold-out record names
    the control split's positions ``held`` (its file is filled in when the release is written)."""
    held = np.sort(np.asarray(held, dtype=np.int64))
    keep = np.ones(int(n_table), dtype=bool)
    keep[held] = False
    train = np.flatnonzero(keep)
    out = dict(private)
    if pairing is not None:
        out["pairing"] = pairing_record(train[np.asarray(pairing, dtype=np.int64)], int(n_table))
    inp = dict(out.get("input") or {})
    inp["rows_kept"] = int(n_table)
    inp["rows_used"] = int(len(train))
    out["input"] = inp
    out["holdout"] = {"fraction": float(fraction), "rows": int(len(held)), "control": None,
                      "positions": encode_positions(held)}
    return out


__all__ = ["pair_with_table"]
