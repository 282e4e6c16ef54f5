"""The entry point of ``ppdm recommend``: :func:`recommend` with its settings in a
:class:`RecommendOptions`, and :func:`search_data` for measuring a release made outside a search
as the search measures its trials.
"""

from __future__ import annotations

import math
import os
import secrets
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.provenance import table_sha256
from ppdm.data.roles import Roles, resolve_schema
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.evaluation import load_all_measures
from ppdm.experiments.policy import Policy, load_policy, parse_policy
from ppdm.experiments.recommend import measure
from ppdm.experiments.recommend.accounting import DEFAULT_SCORE_EPSILON, MAX_SCORE_NOISE, score_noise
from ppdm.experiments.recommend.common import parse_duration, seed_of
from ppdm.experiments.recommend.final import make_final
from ppdm.experiments.recommend.measure import SearchData
from ppdm.experiments.recommend.ranking import pareto_front, rank, record_of, unmet_report
from ppdm.experiments.recommend.result import RecommendResult
from ppdm.experiments.recommend.search import Clock, SearchRun, race, run_search
from ppdm.experiments.recommend.spaces import TechniqueSpace, build_spaces
from ppdm.experiments.recommend.study import (
    STUDY_FORMAT,
    STUDY_NAME,
    STUDY_VERSION,
    check_resume,
    fail_interrupted,
    make_private,
    make_sampler,
    open_study,
    storage_label,
    study_records,
    study_storage,
)
from ppdm.experiments.release import holdout_mask

#: trials when neither a trial budget nor a time budget is given
DEFAULT_TRIALS = 100
#: default share of the records held out as the control split
DEFAULT_HOLDOUT = 0.5


@dataclass(frozen=True)
class RecommendOptions:
    """How :func:`recommend` searches: every setting but the table and the policy.

    ``schema``, ``class_column``, ``quasi_identifiers``, ``identifiers``, ``sensitive``:
        column types and roles, as for :func:`ppdm.experiments.release.release`. Key-variable
        measures of a policy need declared quasi-identifiers.
    ``holdout``:
        share of the records held out as the control split (0 < holdout < 1).
    ``refit``:
        make the recommended release on the whole table instead of the training split (no
        control set is left to measure it against; its figures are those of the training
        split's release).
    ``study``:
        a study file (SQLite) or an Optuna storage URL; ``None`` keeps the study in memory.
    ``resume``:
        continue the search stored in ``study`` (same table, hold-out and policy).
    ``budget``:
        wall time of the whole call in seconds or as text (``"10m"``); trials start only while
        one is expected to end in time, and with worker processes a trial still running at the
        end is stopped.
    ``n_trials``:
        trials the study should hold in the end (earlier runs included). Without either
        budget, :data:`DEFAULT_TRIALS`.
    ``n_jobs``:
        trials run at once: 1 in this process, more in worker processes (``-1``: one per
        core). Ignored when ``executor`` is given.
    ``executor``:
        a :class:`concurrent.futures.Executor` to run trials on, e.g. a Dask cluster's
        ``Client.get_executor()``; each trial then carries the search data with it.
    ``random_state``:
        seed of the split, the search and the recommended release (keep it secret, as for any
        release); ``None`` draws from the operating system, and the recommended release is then
        seeded from fresh entropy that is stored nowhere.
    ``input_info``:
        ``source``, ``sha256``, ``rows``, ``columns`` of the input for the provenance.
    ``started``:
        when the budget's clock started (a :func:`time.perf_counter` value; default: now), so a
        command can count the time it spent reading its input.
    ``score_epsilon``:
        the ε each differentially private trial's utility scores spend (Laplace noise;
        :mod:`ppdm.experiments.recommend.accounting`), counted in the total the release claims.
    """

    schema: Schema | None = None
    class_column: str | None = None
    quasi_identifiers: Sequence[str] | str | None = None
    identifiers: Sequence[str] | str | None = None
    sensitive: Sequence[str] | str | None = None
    holdout: float = DEFAULT_HOLDOUT
    refit: bool = False
    study: str | Path | None = None
    resume: bool = False
    budget: float | str | None = None
    n_trials: int | None = None
    n_jobs: int = 1
    executor: Executor | None = None
    random_state: int | None = None
    input_info: Mapping[str, Any] | None = None
    started: float | None = None
    score_epsilon: float = DEFAULT_SCORE_EPSILON

    @classmethod
    def of(cls, options: RecommendOptions | None = None, **settings: Any) -> RecommendOptions:
        """``options`` (default: every setting at its default) with ``settings`` replacing some;
        a name that is no setting raises :class:`TypeError`, as an unknown keyword argument does."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - names)
        if unknown:
            raise TypeError(f"recommend() got an unexpected setting {unknown[0]!r}; its settings are "
                            f"{', '.join(sorted(names))}")
        return replace(options if options is not None else cls(), **settings)


@dataclass(frozen=True)
class _Limits:
    """The options' budgets and places, checked: seconds, trials, worker processes, storage URL."""

    budget_s: float | None
    target: int | None
    workers: int
    storage: str | None


def _checked(opts: RecommendOptions) -> _Limits:
    """The budgets, workers and storage of ``opts``; a setting out of range raises
    :class:`ParameterError`."""
    n_trials, n_jobs, random_state, score_epsilon = opts.n_trials, opts.n_jobs, opts.random_state, opts.score_epsilon
    budget_s = None if opts.budget is None else parse_duration(opts.budget)
    if n_trials is not None and (isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer))
                                 or n_trials < 1):
        raise ParameterError(f"the trial budget must be a whole number of at least 1, got {n_trials!r}")
    target = int(n_trials) if n_trials is not None else (DEFAULT_TRIALS if budget_s is None else None)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0 or n_jobs < -1:
        raise ParameterError(f"n_jobs must be a positive number or -1 (one per core), got {n_jobs!r}")
    workers = (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)
    if random_state is not None and (isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer))
                                     or random_state < 0):
        raise ParameterError(f"random_state must be a non-negative whole number or None, got {random_state!r}")
    study = opts.study
    storage = None if study is None else (str(study) if "://" in str(study) else study_storage(study))
    if isinstance(score_epsilon, bool) or not isinstance(score_epsilon, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(score_epsilon)) or score_epsilon <= 0:
        raise ParameterError(f"score_epsilon must be a number above 0, got {score_epsilon!r}")
    return _Limits(budget_s, target, workers, storage)


def recommend(x: pd.DataFrame, policy: Policy | Mapping[str, Any] | str | Path,
              options: RecommendOptions | None = None, **settings: Any) -> RecommendResult:
    """Search the policy's techniques × parameters for the release that meets every risk line
    at the least loss of utility, and make it (see :mod:`ppdm.experiments.recommend`).

    ``x`` is the original table (class column included; identifier columns are removed
    first); ``policy`` a :class:`~ppdm.experiments.policy.Policy`, the content of a policy file
    as a dict, or the path of a policy file. How to search is a :class:`RecommendOptions`, or
    its settings given by name (``recommend(x, policy, n_trials=30, random_state=0)``), or
    both (the names replace the options' settings).

    Returns a :class:`RecommendResult`, with ``release`` ``None`` when no trial met the policy
    (``unmet`` says why).
    """
    import optuna

    opts = RecommendOptions.of(options, **settings)
    start = time.perf_counter() if opts.started is None else float(opts.started)
    if not isinstance(x, pd.DataFrame):
        raise PPDMError(f"recommend expects a pandas DataFrame, got {type(x).__name__}")
    pol = _as_policy(policy)
    lim = _checked(opts)
    holdout, study = opts.holdout, opts.study

    table, sch, ids = _table(x, pol, opts)
    spaces, left_out = build_spaces(pol, sch, int(round(len(table) * (1 - float(holdout)))), table)
    spaces = _check_scores(spaces, pol, left_out, int(round(float(holdout) * len(table))), float(opts.score_epsilon))

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    info = {"sha256": table_sha256(table), "rows": int(len(table)), "columns": int(table.shape[1]),
            "schema": sch.to_dict(), "holdout": float(holdout), "removed_identifiers": ids}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler0 = make_sampler(0, len(spaces))
        stu, existed = open_study(lim.storage, opts.resume, sampler0)
    if study is not None and "://" not in str(study):
        make_private(study)  # it holds the split's seed: the owner's only
    attrs = stu.user_attrs
    if existed:
        check_resume(attrs, pol, info)
        root = int(attrs["seed"])
    else:
        root = int(opts.random_state) if opts.random_state is not None else secrets.randbits(63)
    base_info = {"source": None, "sha256": table_sha256(x), "rows": int(len(x)), "columns": int(x.shape[1]),
                 **dict(opts.input_info or {})}
    data = replace(_search_data(table, sch, pol, holdout, root, base_info), score_epsilon=float(opts.score_epsilon),
                   private_search=any(s.epsilon is not None for s in spaces))

    ref_outcome = _reference(attrs if existed else None, data)
    reference = record_of(-1, ref_outcome, pol)
    reference.state = "reference"
    if not existed:
        _store_new_study(stu, pol, info, root, ref_outcome)
    else:
        fail_interrupted(stu)
    stu.sampler = make_sampler(seed_of(root, 3, len(stu.trials)), len(spaces))

    clock = Clock(lim.budget_s, start, 1)
    # before any trial has ended, a trial is taken to cost the reference's measures and half as much again
    clock.fallback = 1.5 * float(ref_outcome.get("seconds") or 1.0)
    clock.durations = [float(t.user_attrs["outcome"]["seconds"]) for t in stu.trials
                       if "outcome" in t.user_attrs and t.user_attrs["outcome"].get("seconds")
                       and not t.user_attrs["outcome"].get("error") and t.user_attrs.get("repeat_of") is None]
    before = len(stu.trials)
    stopped_by = run_search(SearchRun(stu, spaces, data, pol, clock, lim.target, lim.workers, opts.executor, root,
                                      len(data.train)))

    records = study_records(stu, pol)
    ranking = rank(records, pol)
    result = RecommendResult(
        policy=pol, trials=records, reference=reference, front=pareto_front([r for r in records if r.feasible]),
        ranking=ranking, unmet=None, release=None, control=None, verification=None, chosen=None,
        refit=bool(opts.refit),
        study={"name": STUDY_NAME, "storage": storage_label(lim.storage) if lim.storage else None,
               "trials": len(records), "new_trials": len(records) - before, "resumed": existed,
               "stopped_by": stopped_by, "budget_seconds": lim.budget_s, "trial_budget": lim.target,
               "set_aside": race(stu, spaces)[0]},
        split={"holdout": float(holdout), "train_rows": int(len(data.train)), "control_rows": int(len(data.control)),
               "rows": int(len(table)), "removed_identifiers": ids},
        spaces={s.name: s.describe(len(data.train)) for s in spaces}, left_out=left_out)
    _add_notes(result)
    if not ranking:
        result.unmet = unmet_report(records, pol)
    else:
        make_final(result, data, table, root, opts.random_state is not None, base_info)
    result.study["seconds"] = time.perf_counter() - start
    result.study["outcomes"] = result.outcomes()
    return result


def _reference(attrs: Mapping[str, Any] | None, data: SearchData) -> dict[str, Any]:
    """The reference's outcome: the training split released unchanged, measured (which also
    checks every measure of the policy runs on this table), or as a resumed study (``attrs``)
    stored it."""
    if attrs is not None and "reference" in attrs:
        return attrs["reference"]
    t0 = time.perf_counter()
    measures = measure.measure_release(data.train, data)
    ref_outcome: dict[str, Any] = {"technique": "original", "params": {}, "measures": measures, "privacy": None,
                                   "check": None, "error": None, "internal": False}
    ref_outcome["seconds"] = time.perf_counter() - t0
    skipped = {n: m["reason"] for n, m in measures.items() if m.get("value") is None}
    if skipped:
        n, why = next(iter(skipped.items()))
        raise ParameterError(f"the policy's measure {n!r} cannot be computed on this table: {why}")
    return ref_outcome


def _store_new_study(stu: Any, pol: Policy, info: Mapping[str, Any], root: int, ref_outcome: Mapping[str, Any]
                     ) -> None:
    """What a new study keeps for a resume: format, policy, table, seed and the reference."""
    stu.set_user_attr("ppdm", {"format": STUDY_FORMAT, "version": STUDY_VERSION, "ppdm_version": _version()})
    stu.set_user_attr("policy", pol.to_dict())
    stu.set_user_attr("policy_sha256", pol.sha256())
    stu.set_user_attr("data", info)
    stu.set_user_attr("seed", root)
    stu.set_user_attr("reference", ref_outcome)


def _add_notes(result: RecommendResult) -> None:
    """The result's notes on the search: trials stopped by a defect."""
    internal = [r for r in result.trials if r.internal]
    if internal:
        result.notes.append(f"{len(internal)} trial(s) stopped on an internal error (a defect of ppdm, reported "
                            f"as such), e.g. trial {internal[0].number} ({internal[0].label}): {internal[0].error}")


def _table(x: pd.DataFrame, pol: Policy, opts: RecommendOptions) -> tuple[pd.DataFrame, Schema, list[str]]:
    """The table a search works on (identifier columns out), its schema, and the identifiers."""
    roles = Roles.of(opts.identifiers, opts.quasi_identifiers, opts.sensitive, None, None)
    sch = resolve_schema(x, schema=opts.schema, class_column=opts.class_column, roles=roles,
                         detect=opts.schema is None)
    ids = [c for c in sch.identifiers if c in x.columns]
    table = x.drop(columns=ids).reset_index(drop=True)
    sch = replace(sch, identifiers=[])
    table, _ = sch.validate(table, missing="keep")
    _check_policy_against_table(pol, sch)
    return table, sch, ids


def _search_data(table: pd.DataFrame, sch: Schema, pol: Policy, holdout: float, root: int,
                 base_info: Mapping[str, Any]) -> SearchData:
    """The splits and measurement settings of the search seeded by ``root``."""
    from ppdm.trees.cart import rules_from_cart

    # the split as hold_out draws it, keeping the positions for the release's private log
    mask = holdout_mask(len(table), holdout, np.random.default_rng(seed_of(root, 0)))
    train, control = table.loc[~mask].reset_index(drop=True), table.loc[mask].reset_index(drop=True)
    measure_seed = seed_of(root, 1)
    rules = None
    if sch.class_column is not None and any(load_all_measures()[m].needs_class for m in pol.measures()):
        rules = rules_from_cart(train, sch, random_state=measure_seed)
    options: dict[str, Any] = {"infer_keys": False, **pol.measure_options()}
    return SearchData(train, control, sch, rules, tuple(pol.measures()), options, measure_seed,
                      {**dict(base_info), "rows_used": int(len(train))},
                      tuple((ln.measure, float(ln.threshold), ln.direction) for ln in pol.risk
                            if not pol.rules_out(ln.measure)),  # a ruled-out line never stops a trial
                      np.flatnonzero(mask), tuple(t.measure for t in pol.utility),
                      ceilings=tuple((t.measure, float(t.at_most)) for t in pol.utility if t.at_most is not None))


def _check_scores(spaces: list[TechniqueSpace], pol: Policy, left_out: dict[str, str], control_rows: int,
                  score_epsilon: float) -> list[TechniqueSpace]:
    """With a differentially private technique in the search, every utility measure of the
    policy must score its trials with a known sensitivity and noise narrow enough to choose by
    (:data:`~ppdm.experiments.recommend.accounting.MAX_SCORE_NOISE` of its range): otherwise
    the techniques are left out (``left_out`` says why), and the search is refused when no
    other technique is left. Returns the spaces kept."""
    if not any(s.epsilon is not None for s in spaces):
        return spaces
    try:
        noise = {t.measure: score_noise(t.measure, control_rows, score_epsilon, len(pol.utility)) for t in pol.utility}
        blind = {m: v for m, v in noise.items() if v[1] > MAX_SCORE_NOISE}
        if blind:
            # the scale falls as 1/ε_s: the score budget at which every score is narrow enough
            needed = float(score_epsilon) * max(share for _, share in blind.values()) / MAX_SCORE_NOISE
            hint = "" if set(noise) == {"prediction_accuracy"} else (
                "; prediction_accuracy (sensitivity 1/|control|) needs the least")
            raise ParameterError(
                "differentially private trials would be scored on "
                + ", ".join(f"{m} with Laplace noise of scale {scale:.3g} ({share:.0%} of its range)"
                            for m, (scale, share) in blind.items())
                + f", more than the {MAX_SCORE_NOISE:.0%} a choice among them can be made by: a score budget "
                f"(--score-epsilon) of at least {needed:.3g} would make them usable{hint}")
    except ParameterError as e:
        # left out, as a technique the table cannot take, even when the policy names it: the
        # search goes on with the others (the screen says why); refused only when none is left
        kept = [s for s in spaces if s.epsilon is None]
        for s in spaces:
            if s.epsilon is not None:
                left_out[s.name] = str(e)
        if not kept:
            raise
        return kept
    return spaces


def search_data(
    x: pd.DataFrame,
    policy: Policy | Mapping[str, Any] | str | Path,
    *,
    random_state: int,
    schema: Schema | None = None,
    class_column: str | None = None,
    quasi_identifiers: Sequence[str] | str | None = None,
    identifiers: Sequence[str] | str | None = None,
    sensitive: Sequence[str] | str | None = None,
    holdout: float = DEFAULT_HOLDOUT,
) -> SearchData:
    """The training and control splits, Ψx and measure settings that :func:`recommend` uses
    with the same arguments and seed, so a release made outside the search (a standard
    workflow) is measured exactly as the search measures its trials:
    ``measure_release(z, data)`` with ``z`` made from ``data.train``, then
    :func:`record_of` to judge it against a policy. The splits are private (original records)."""
    pol = _as_policy(policy)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise ParameterError(f"random_state must be a non-negative whole number, got {random_state!r}")
    table, sch, _ = _table(x, pol, RecommendOptions(schema=schema, class_column=class_column,
                                                    quasi_identifiers=quasi_identifiers, identifiers=identifiers,
                                                    sensitive=sensitive))
    info = {"source": None, "sha256": table_sha256(x), "rows": int(len(x)), "columns": int(x.shape[1])}
    return _search_data(table, sch, pol, holdout, int(random_state), info)


def _version() -> str:
    from ppdm import __version__

    return __version__


def _as_policy(policy: Policy | Mapping[str, Any] | str | Path) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        return parse_policy(policy)
    if isinstance(policy, (str, Path)):
        return load_policy(policy)
    raise ParameterError(f"policy must be a Policy, a dict or the path of a policy file, got {type(policy).__name__}")


def _check_policy_against_table(pol: Policy, sch: Schema) -> None:
    from ppdm.metrics.keyvar import KEY_VARIABLE_MEASURES

    registry = load_all_measures()
    for name in pol.measures():
        if registry[name].needs_class and sch.class_column is None:
            raise ParameterError(f"the policy's measure {name!r} needs a class column; name it with "
                                 "class_column=... (CLI: --class)")
    for line in pol.risk:
        if line.measure in KEY_VARIABLE_MEASURES and not sch.quasi_identifiers and not line.options.get("keys"):
            raise ParameterError(f"the policy's line {line.text()!r} needs declared quasi-identifiers: declare them "
                                 "with quasi_identifiers=... (CLI: --qi) or in the schema")
