"""What :func:`ppdm.experiments.recommend.recommend` returns (:class:`RecommendResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ppdm.errors import PPDMError
from ppdm.experiments.policy import Policy
from ppdm.experiments.recommend.accounting import Accounting
from ppdm.experiments.recommend.ranking import TrialRecord
from ppdm.experiments.release import Release, save_release


@dataclass
class RecommendResult:
    """What :func:`recommend` found.

    ``trials`` every trial of the study (also those of earlier runs when resumed);
    ``reference`` the training split released unchanged (how much risk the policy removes);
    ``front`` the feasible trials no other beats on both risk and utility loss; ``ranking``
    the feasible trials, most preferred first; ``winner`` the first of the ranking (``None``
    when no trial met the policy; ``unmet`` then says why). ``release`` is the recommended
    release (a :class:`~ppdm.experiments.release.Release`, with the control split in
    ``control`` unless refitted) and ``verification`` its own measured figures; ``chosen``
    the trial whose technique and parameters made it (the winner, or the next of the
    ranking when fresh draws of the winner missed the policy); ``accounting`` the ε every
    differentially private draw of the search spent on the training records
    (:mod:`ppdm.experiments.recommend.accounting`), once a release was attempted.
    """

    policy: Policy
    trials: list[TrialRecord]
    reference: TrialRecord | None
    front: list[TrialRecord]
    ranking: list[TrialRecord]
    unmet: dict[str, Any] | None
    release: Release | None
    control: pd.DataFrame | None
    verification: TrialRecord | None
    chosen: TrialRecord | None
    refit: bool
    study: dict[str, Any]
    split: dict[str, Any]
    spaces: dict[str, dict[str, Any]]
    left_out: dict[str, str]
    notes: list[str] = field(default_factory=list)
    #: what the search spent on the training records in ε (every differentially private draw)
    accounting: Accounting | None = None

    @property
    def winner(self) -> TrialRecord | None:
        return self.ranking[0] if self.ranking else None

    @property
    def met(self) -> bool:
        """Whether a release meeting the policy was made."""
        return self.release is not None

    @property
    def feasible(self) -> list[TrialRecord]:
        return [r for r in self.trials if r.feasible]

    def outcomes(self) -> dict[str, int]:
        """How many trials met the policy, missed it, failed, were stopped or repeated a setting
        (:attr:`TrialRecord.outcome`): the one count every output shows."""
        out = {k: 0 for k in ("met", "missed", "failed", "stopped", "repeat")}
        for r in self.trials:
            out[r.outcome] += 1
        return out

    def save(self, out: str | Path) -> list[Path]:
        """Write the recommended release as ``ppdm anonymize`` does (table, provenance, the
        control split unless refitted, technique sidecars), all or nothing."""
        if self.release is None:
            raise PPDMError("no release met the policy, so there is nothing to write")
        from ppdm.experiments.release import control_path

        if self.control is not None:
            # the number of held-out records, with the release's, tells the size of x: it is the owner's
            # (the private log's hold-out record), never public
            self.release.provenance["holdout"] = {"fraction": self.split["holdout"],
                                                  "control": control_path(out).name}
        return save_release(self.release, out, self.control)
