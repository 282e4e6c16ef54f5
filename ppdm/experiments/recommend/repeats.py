"""Releases a search has already measured, recognised by their content (``ppdm recommend``).

Different settings of a deterministic technique often make the same release: MDAV with any
k that gives the same groups, a column set that resolves to the same columns, a rounding
base past every value's spread. Measuring such a release again costs a whole trial and
tells nothing new. Each deterministic trial's release is fingerprinted
(:func:`release_digest`: the release in the training split's order, and the schema it is
measured with); a trial whose release has the fingerprint of one already measured is told
the earlier trial's measures (a repeat of it) without being measured.

Random techniques are left out: each trial is a new draw, and a differentially private draw
spends its ε whatever it looks like (:mod:`ppdm.experiments.recommend.accounting`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ppdm.data.provenance import table_sha256


def release_digest(z: pd.DataFrame, out_schema: Any = None) -> str:
    """The fingerprint of a release as a trial measures it: the table (in the order of the
    records it was made from) and its output schema (a recoding changes how it is measured)."""
    schema = out_schema.to_dict() if out_schema is not None and hasattr(out_schema, "to_dict") else None
    h = hashlib.sha256(table_sha256(z).encode())
    h.update(json.dumps(schema, sort_keys=True, default=str).encode())
    return h.hexdigest()


class MeasuredReleases:
    """Fingerprint → the trial that measured that release first."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}

    def known(self) -> frozenset[str]:
        return frozenset(self.first)

    def note(self, number: int, outcome: Mapping[str, Any], repeat_of: int | None = None) -> None:
        """Remember the release of trial ``number`` (a trial measured in full, not a repeat)."""
        digest = outcome.get("release_digest")
        if digest and repeat_of is None and not outcome.get("same_release") and not outcome.get("error"):
            self.first.setdefault(str(digest), int(number))

    def load(self, trials: Iterable[Any]) -> None:
        """The releases of a resumed study's trials (Optuna trials with an ``outcome``)."""
        for t in trials:
            o = t.user_attrs.get("outcome")
            if o is not None:
                self.note(t.number, o, t.user_attrs.get("repeat_of"))

    def repeat_of(self, outcome: Mapping[str, Any]) -> int | None:
        """The trial that measured this outcome's release first, when the trial stopped short
        because its release had been measured (``same_release``)."""
        if not outcome.get("same_release"):
            return None
        return self.first.get(str(outcome.get("release_digest")))


__all__ = ["MeasuredReleases", "release_digest"]
