"""One trial of ``ppdm recommend``: make the release of a setting as ``ppdm anonymize`` makes
one (:func:`make_release`) and measure it (:func:`run_trial`), in this process or in a worker.
Measures are called through their module (``measure.measure_release``) so that one replacement
of a measure function reaches every caller.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize.search_space import SearchSpace, build_technique, resolve_column_sets, space_of
from ppdm.data.schema import Schema
from ppdm.errors import PPDMError
from ppdm.experiments.recommend import accounting, measure
from ppdm.experiments.recommend.common import finite, json_ready
from ppdm.experiments.recommend.measure import SearchData
from ppdm.experiments.recommend.repeats import release_digest
from ppdm.experiments.release import Release, ReleaseRefused, release
from ppdm.metrics.release_check import GateOptions


@dataclass
class TrialJob:
    """One release to make and measure: technique, parameters and the seed of its draws."""

    number: int
    technique: str
    params: dict[str, Any]
    seed: int | None
    #: fingerprints of the releases already measured (a deterministic technique's trial; see
    #: :mod:`ppdm.experiments.recommend.repeats`), or ``None`` for a trial that is always measured
    known: frozenset[str] | None = None


def _technique(job: TrialJob, table: pd.DataFrame, schema: Schema) -> Any:
    """The technique of ``job``, with a named column set (``"unique-valued"``) resolved on the
    table the release is made from."""
    return build_technique(job.technique, resolve_column_sets(job.params, table, schema),
                           class_column=schema.class_column, schema=schema, random_state=job.seed)


#: the release check's refusals that read x's values; they do not decide a differentially private draw
_DATA_REFUSALS = ("unchanged", "verbatim_unique", "untouched_unique")


def private_technique(technique: str) -> bool:
    """Whether ``technique`` declares a differential-privacy ε (its search space names one)."""
    try:
        space = space_of(technique)
    except PPDMError:
        return False
    return isinstance(space, SearchSpace) and space.epsilon is not None


def make_release(job: TrialJob, table: pd.DataFrame, data: SearchData, input_info: dict[str, Any] | None = None
                 ) -> Release:
    """The release of ``job`` on ``table``, made as ``ppdm anonymize`` makes one.

    For a technique with an ε the release check's refusals that read x's values (copies of
    records, unique keys) are recorded as warnings in the owner's log instead of rejecting the
    draw: a rejection by exact measurements on x is a choice no ε covers
    (:mod:`ppdm.experiments.recommend.accounting`). A release of such a technique that turns
    out not differentially private (a domain read from the data) is refused as any other."""
    dp = private_technique(job.technique)
    opts = GateOptions(suggest=False, allow_unchanged=dp, allow_verbatim=dp, allow_untouched_keys=dp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a trial's warnings are not the user's; the final release reports its own
        # a refused trial is one point of the search: no search of its own for a setting that passes
        rel = release(table, _technique(job, table, data.schema), schema=data.schema, detect_identifiers=False,
                      input_info=input_info or data.input_info, gate_options=opts)
    if dp and not (privacy_of(rel.technique) or {}).get("differentially_private"):
        for f in rel.findings:
            if f.get("level") == "allowed" and f.get("rule") in _DATA_REFUSALS:
                raise ReleaseRefused(f"the release check refuses a release that is not differentially private: "
                                     f"{f.get('message')}")
    return rel


def measured_data(rel: Release) -> pd.DataFrame:
    """The release as a trial measures it: a published release is shuffled, and the search
    measures it paired with the records it was made from (the private pairing), never by row
    position; a synthetic release, made from no particular records, as it is."""
    return rel.data if rel.pairing is None else rel.in_input_order()[0]


def run_trial(job: TrialJob, data: SearchData) -> dict[str, Any]:
    """Make and measure one release; returns the trial's outcome as JSON-ready data.

    A technique or release that fails on the table (a :class:`PPDMError`, including a
    release refused as almost the original) gives an outcome with ``error``; any other
    exception is a defect of ppdm and is recorded as such (``internal``)."""
    start = time.perf_counter()
    out: dict[str, Any] = {"technique": job.technique, "params": json_ready(job.params), "measures": {},
                           "privacy": None, "check": None, "error": None, "internal": False}
    try:
        rel = make_release(job, data.train, data)
        out["privacy"] = privacy_of(rel.technique)
        out["check"] = {"share_verbatim": float(rel.check.share_verbatim)}
        # measures pair z's records with x's: the release as published is shuffled
        z, out_schema = measured_data(rel), output_schema(rel.technique)
        if (out["privacy"] or {}).get("differentially_private"):
            # judged by Laplace-noised utility scores alone; the exact values stay in the owner's record
            out["measures"] = measure.measure_release(z, data, out_schema, utility_only=True,
                                              provenance=rel.provenance)
            rng = np.random.default_rng(np.random.SeedSequence(int(job.seed or 0), spawn_key=(7,)))
            out["scores"] = accounting.noisy_scores(out["measures"], data.utility, len(data.control), data.score_epsilon, rng)
            # the winner's release is made again from its seed: its fingerprint tells it is the same
            out["scores"]["release_digest"] = release_digest(z, out_schema)
            return out
        if job.known is not None:
            out["release_digest"] = release_digest(z, out_schema)
            out["same_release"] = out["release_digest"] in job.known  # measured already: not again
        if not out.get("same_release"):
            out["measures"] = measure.measure_release(z, data, out_schema, stop_on_miss=True,
                                              provenance=rel.provenance)
            if data.private_search:
                out["losses"] = release_losses(out["measures"], len(data.control))
    except PPDMError as e:
        out["error"] = " ".join(str(e).split())
    except Exception as e:  # noqa: BLE001 - a defect is recorded and reported, the search goes on
        if os.environ.get("PPDM_DEBUG"):
            raise
        out["error"] = f"{type(e).__name__}: {' '.join(str(e).split())}"
        out["internal"] = True
    finally:
        out["seconds"] = time.perf_counter() - start
    return out


def release_losses(measures: Mapping[str, Mapping[str, Any]], control_rows: int) -> dict[str, float]:
    """The losses that differ from the measure's own value in a search with differentially
    private trials, so every trial is ranked on one scale: ``prediction_accuracy`` as 1 − the
    share of control records Ψz classifies correctly (what a differentially private trial is
    scored by), not Ψx's accuracy minus Ψz's. Ψx's accuracy is the same for every trial, so the
    order among the other trials is unchanged."""
    e = measures.get("prediction_accuracy") or {}
    n_ok = e.get("correct")
    if n_ok is None or control_rows <= 0:
        return {}
    return {"prediction_accuracy": 1.0 - float(n_ok) / control_rows}


def output_schema(tech: Any) -> Schema | None:
    """The schema of a fitted technique's release when it declares one (recoding changes the
    type of the columns it recodes), else ``None``."""
    fn = getattr(tech, "output_schema", None)
    if not callable(fn):
        return None
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a technique that cannot say keeps the input's schema
        return None


def privacy_of(tech: Any) -> dict[str, Any] | None:
    """A fitted technique's privacy claim as a trial records it (``differentially_private``,
    ``epsilon``, ``neighbouring``), or ``None`` when it reports none."""
    rep = getattr(tech, "privacy_report_", None)
    if not isinstance(rep, Mapping):
        return None
    eps = rep.get("epsilon")
    nb = rep.get("neighbouring")
    out = {"differentially_private": bool(rep.get("differentially_private")),
           "epsilon": float(eps) if finite(eps) else None}  # type: ignore[arg-type]  # finite: float(eps) works
    if isinstance(nb, Mapping) and isinstance(nb.get("relation"), str):
        out["neighbouring"] = nb["relation"]  # what the ε is stated for (the accounting counts it)
    return out


# worker processes receive the search data once, through their initializer
_WORKER_DATA: SearchData | None = None


def init_worker(data: SearchData) -> None:
    """A worker process's initializer: keep the search data for every trial it runs."""
    global _WORKER_DATA
    _WORKER_DATA = data


def run_in_worker(job: TrialJob) -> dict[str, Any]:
    """Run a trial in a worker process started by :func:`init_worker`."""
    assert _WORKER_DATA is not None, "worker started without the search data"
    return run_trial(job, _WORKER_DATA)


def run_with_data(job: TrialJob, data: SearchData) -> dict[str, Any]:
    """Run a trial on an executor that is sent the search data with each trial."""
    return run_trial(job, data)
