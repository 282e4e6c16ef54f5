"""DPCube's report: the privacy accounting, what a release guarantees, and its public sidecar.

Part of :mod:`ppdm.anonymize.differential_privacy`. Everything written here is public
(it goes beside the release or into its provenance): no count of x is in it, which the
files audit of tests/test_dpcube_audit.py checks.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ppdm.anonymize._dp_domain import _Declared, _Domain, _names
from ppdm.anonymize._dp_grid import Grid
from ppdm.data.schema import Schema

#: the public sidecar with the noisy measurements of a release: ``<stem>.dpcube.json``
MEASUREMENTS_SUFFIX = ".dpcube.json"
#: the noisy histogram is written to the sidecar up to this many cells
MAX_WRITTEN_CELLS = 1_000_000


# ---------------------------------------------------------------- privacy accounting
@dataclass(frozen=True)
class PrivacyStep:
    """One use of the privacy budget.

    ``composition`` says why the step costs ``epsilon`` once although it answers many
    queries (disjoint cells, boxes or records: parallel composition; k picks: sequential).
    """

    name: str
    epsilon: float
    mechanism: str
    sensitivity: float
    noise_scale: float
    composition: str



def measurements_path(release: str | Path) -> Path:
    """The public sidecar of a DPCube release: ``z.csv`` → ``z.dpcube.json``."""
    from ppdm.data.provenance import provenance_path

    p = provenance_path(release)
    return p.with_name(p.name[: -len(".provenance.json")] + MEASUREMENTS_SUFFIX)


_RELATION = {
    "add-remove": "neighbouring tables that differ by adding or removing one record",
    "replace": "neighbouring tables of the same, public size that differ in one record",
}



def _approx_exp(eps: float) -> str:
    """`` ≈ e^ε`` for a message, when it is a number a reader can use."""
    return f" ≈ {math.exp(eps):.3g}" if eps < 50 else ""


def _scale(sensitivity: float, epsilon: float) -> float:
    return 0.0 if math.isinf(epsilon) or epsilon == 0 else sensitivity / epsilon


def _json_float(v: float) -> float | None:
    """A float for JSON: ``None`` stands for infinity (no noise), which JSON cannot hold."""
    return None if math.isinf(v) else float(v)



class _Report(_Declared):
    """The public report and measurements of a fitted DPCube."""

    privacy_steps_: tuple[PrivacyStep, ...]
    epsilon_spent_: float
    n_rows_: int | None
    n0_: float | None
    selected_: list[str]
    grid_: Grid
    histogram_noisy_: np.ndarray
    noisy_counts_: np.ndarray
    _boxes: np.ndarray

    # ------------------------------------------------------------------ report
    def _report(self, dom: _Domain, schema: Schema) -> dict[str, Any]:
        """What the release guarantees, as JSON-able data (public: no count of x in it)."""
        eps = float(self.epsilon)
        noise = not math.isinf(eps)
        private = noise and not dom.from_data
        relation = _RELATION[self.neighbouring]
        phases = [{**asdict(s), "epsilon": _json_float(s.epsilon), "noise_scale": _json_float(s.noise_scale)}
                  for s in self.privacy_steps_]
        assumptions = [
            "the declared types, bounds and categories are public and were not chosen by looking at the records",
            # whether a seed was given is not said here (public): the private log says it to the owner
            "the random draws are unpredictable to whoever sees the release (a seed, when one is given, must be a "
            "secret too large to try one by one)",
            "each person contributes one record (someone with k records is protected with k·ε)",
            "the noise samplers are NumPy's, exact up to floating-point rounding of their probabilities",
        ]
        if self.neighbouring == "replace":
            assumptions.append("the number of records n is public")
        if not noise:
            guarantee = ("Not differentially private: epsilon=inf switches the noise off, so the release follows "
                         "the data.")
        elif dom.from_data:
            guarantee = (
                f"Not differentially private: {_names(dom.from_data)} were read from the data "
                f"(domain_from_data=True), so the release can reveal extreme values, rare categories and types of "
                f"the records; only the counts carry noise of ε = {eps:g}."
            )
        else:
            guarantee = (
                f"The release is {eps:g}-differentially private for {relation}: any one person's record changes the "
                f"probability of any output by at most a factor e^{eps:g}{_approx_exp(eps)}, assuming the declared "
                "domain is public and data-independent and the random draws are unknown to the attacker."
            )
        return {
            "mechanism": ("DPCube (Xiao, Xiong & Yuan 2010): noisy cell histogram, kd-tree partitioning, noisy "
                          "partition counts, synthetic records" if self.partitioning == "kd" else
                          "DPCube cell-based baseline (Xiao, Xiong & Yuan 2010): noisy cell histogram, synthetic "
                          "records"),
            "count_noise": "discrete Laplace (two-sided geometric)",
            "differentially_private": bool(private),
            "epsilon": _json_float(eps),
            "epsilon_spent": _json_float(self.epsilon_spent_),
            "neighbouring": {"relation": self.neighbouring, "description": relation,
                             "count_sensitivity": self.sensitivity},
            "phases": phases,
            "rows": ({"source": "noisy count", "released": self.n_rows_,
                      "description": "the number of records is a differentially private estimate of n"}
                     if self.neighbouring == "add-remove" else
                     {"source": "public n", "released": None,
                      "description": "the release has as many records as the table it is made from (n is public)"}),
            "domain_declared": not dom.from_data,
            "domain_from_data": bool(dom.from_data),
            "domain": {"declared": [c for c in schema.columns if c not in dom.from_data],
                       "from_data": list(dom.from_data),
                       "nullable": sorted(dom.nullable),
                       "outside_values": ("a number outside its bounds is clamped to them (whole numbers rounded); "
                                          + ("a category outside the declared set goes to the cell "
                                             f"{self.other_label!r}" if self.unknown == "other" else
                                             "a record with a category outside the declared set is dropped")
                                          + "; a record missing a value of a column not declared nullable is "
                                            "dropped")},
            "selected_attributes": list(self.selected_),
            # the warnings the release was made with, by kind (the coarse grid, a domain read from the data)
            "warnings": [{"kind": k, "text": t} for k, t in getattr(self, "dp_warnings_", [])],
            "assumptions": assumptions,
            "guarantee": guarantee,
        }

    # ------------------------------------------------------------- measurements
    def measurements(self) -> dict[str, Any]:
        """The noisy outputs of every phase as JSON-able data: what the public sidecar holds.

        All of it is covered by the guarantee (noisy counts, DP choices, declared domain);
        none of it is a count of x.
        """
        cells = self.grid_.n_cells
        hist = self.histogram_noisy_
        return {
            "format": "ppdm-dpcube-measurements",
            "version": 1,
            "table_size_noisy": self.n0_,
            "selected_attributes": list(self.selected_),
            "grid": [d.describe() for d in self.grid_.dims],
            "histogram_shape": list(self.grid_.array_shape),
            "histogram_noisy": (np.rint(hist).astype(np.int64).reshape(-1).tolist()
                                if cells <= MAX_WRITTEN_CELLS and np.isfinite(hist).all() else None),
            "partitions": np.asarray(self._boxes).tolist(),
            "partition_counts_noisy": [float(v) for v in self.noisy_counts_],
            "rows_released": self.n_rows_,
        }

    def write_sidecars(self, out_path: str | Path) -> list[Path]:
        """Write ``<out stem>.dpcube.json`` (the noisy measurements, public) beside the release."""
        import json

        from ppdm.data.io import atomic_write_text

        p = measurements_path(out_path)
        atomic_write_text(p, json.dumps(self.measurements(), allow_nan=False) + "\n")
        return [p]
