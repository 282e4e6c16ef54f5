"""The search loop of ``ppdm recommend``: trials are proposed (Optuna, racing, random untried
settings), charged to the privacy filter, run here or on an executor, and told back to the
study, until the trial budget, the time budget, the ε budget or the search space is spent.

The loop's inputs are a :class:`SearchRun` and what changes as it runs a :class:`SearchState`;
each step is a small function of the two.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdm import progress
from ppdm.experiments.policy import Policy
from ppdm.experiments.recommend.accounting import PrivacyFilter, search_accounting, trial_cost
from ppdm.experiments.recommend.common import json_ready, seed_of, setting_key
from ppdm.experiments.recommend.judging import LineVerdict
from ppdm.experiments.recommend.measure import SearchData
from ppdm.experiments.recommend.ranking import TrialRecord, excess, record_of
from ppdm.experiments.recommend.repeats import MeasuredReleases
from ppdm.experiments.recommend.spaces import (
    TechniqueSpace,
    cheapest_cost,
    neighbour_setting,
    setting_params,
    suggest,
    untried_setting,
)
from ppdm.experiments.recommend.study import startup_trials, study_records
from ppdm.experiments.recommend.trials import (
    TrialJob,
    init_worker,
    run_in_worker,
    run_trial,
    run_with_data,
)

#: consecutive suggestions of deterministic settings already tried after which the space counts as exhausted
EXHAUSTED_AFTER = 50
#: racing: once a release has met the policy, a technique with this many trials of its own, none
#: meeting it, is set aside, and each later trial's technique is drawn among the others
RACE_AFTER = 4
#: racing: a technique that has not met the policy stays in the race while its closest trial
#: missed it by less than this many allowances in all (the sum of its lines' margins)
RACE_EXCESS = 1.0
#: racing: the share of the releases meeting the policy that each technique which met it adds
#: to its weight of being drawn (the same for every such technique)
ELITE_SHARE = 0.25
#: the share of trials that explore instead of taking the sampler's proposal: half of them a
#: neighbour of one of the closest trials so far (:func:`~ppdm.experiments.recommend.spaces.neighbour_setting`),
#: half a random setting of a technique not set aside
EXPLORE_SHARE = 0.3
#: how many of the closest trials so far a neighbour is drawn around, and at most how many of
#: them one technique holds (so a technique close to the policy keeps being explored beside the
#: one that met it first)
INCUMBENTS = 5
INCUMBENTS_EACH = 3
#: seconds of a time budget kept for writing the release and the report (at most this share of it)
RESERVE_SECONDS = 3.0
RESERVE_SHARE = 0.05
#: objective values a trial that could not be measured is told with (its constraints are all violated)
PENALTY = (10.0, 1e6)  # constraint value of a line whose measure could not be computed


@dataclass
class _Running:
    trial: Any
    job: TrialJob
    started: float


class Clock:
    """The search's time budget: trials start only while one is expected to finish in time,
    leaving ``reserve`` trial durations and a few seconds (:data:`RESERVE_SECONDS`, at most
    :data:`RESERVE_SHARE` of the budget) for the recommended release and the report."""

    def __init__(self, budget: float | None, start: float, reserve: int) -> None:
        self.budget, self.start, self.reserve = budget, start, reserve
        self.durations: list[float] = []
        self.fallback = 1.0

    def estimate(self) -> float:
        """The time a trial takes: the 75th percentile of the trials that ran (failures end early
        and would make it look short)."""
        return float(np.percentile(self.durations, 75)) if self.durations else self.fallback

    def deadline(self) -> float | None:
        if self.budget is None:
            return None
        return self.start + self.budget - self.reserve * self.estimate() - min(RESERVE_SECONDS,
                                                                               RESERVE_SHARE * self.budget)

    def can_start(self, now: float) -> bool:
        d = self.deadline()
        return d is None or now + self.estimate() <= d

    def fraction(self, now: float) -> float:
        return 0.0 if self.budget is None else min(1.0, (now - self.start) / self.budget)


def race(stu: Any, spaces: Sequence[TechniqueSpace]) -> tuple[dict[str, str], dict[str, int]]:
    """Which techniques a search has set aside (name → why) and the weight each other technique
    is drawn with, from the trials so far.

    Until some release meets the policy the sampler picks the technique (no weights), and only a
    technique none of whose trials, :data:`RACE_AFTER` or more, made a release that could be
    measured (each failed or was refused by the release check) is set aside: it is left out of
    the random settings the search explores. After that a technique is set aside once
    :data:`RACE_AFTER` of its own trials (repeats not counted) ran without one meeting the policy
    and its closest trial missed by :data:`RACE_EXCESS` allowances or more (a technique that came
    closer stays in the race with weight 1: on adult the standard release itself met the
    policy first, and setting aside the chain that beats it, which had only missed by a hair,
    left the search nothing better to find). Every technique that has met the policy is drawn
    with weight 1 + K, K a quarter (:data:`ELITE_SHARE`) of the releases that met it, the same K
    for each; a technique still short of :data:`RACE_AFTER` trials keeps weight 1.
    The techniques that met the policy share the trials equally, and the sampler looks for the
    least loss within each. Ranking them by their best release so far would not be fair: the
    best of n trials improves with n, so the technique drawn most would look best and be drawn
    more (a ten-minute search on adult gave Framework 101 of 171 trials that way, and the chain
    whose good settings beat the standard release only 12). A technique is never set aside when
    it is the only one."""
    from optuna.trial import TrialState

    tried: dict[str, int] = {}
    met: dict[str, int] = {}
    measured: set[str] = set()
    near: dict[str, float] = {}  # each technique's least excess over the policy's lines
    for t in stu.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        o = t.user_attrs.get("outcome")
        if o is None or t.user_attrs.get("repeat_of") is not None:
            continue
        name = o.get("technique")
        tried[name] = tried.get(name, 0) + 1
        if not o.get("error"):
            measured.add(name)
            if t.constraints:
                near[name] = min(excess(t.constraints.values()), near.get(name, math.inf))
        if t.state == TrialState.COMPLETE and t.constraints and all(v <= 0 for v in t.constraints.values()):
            met[name] = met.get(name, 0) + 1
    if len(spaces) < 2:
        return {}, {}
    if not met:
        failing = {s.name: f"set aside after {tried[s.name]} trials, none making a release that could be measured"
                   for s in spaces if s.name not in measured and tried.get(s.name, 0) >= RACE_AFTER}
        return (failing, {}) if len(failing) < len(spaces) else ({}, {})
    aside = {s.name: f"set aside after {tried[s.name]} trials, none meeting the policy, while other techniques "
             "met it" for s in spaces if not met.get(s.name) and tried.get(s.name, 0) >= RACE_AFTER
             and near.get(s.name, math.inf) >= RACE_EXCESS}
    k = max(1, math.ceil(ELITE_SHARE * sum(met.values())))
    weights = {s.name: 1 + (k if s.name in met else 0) for s in spaces if s.name not in aside}
    return aside, weights


#: progress units of a search (its share of the budget spent, in thousandths)
TOTAL_UNITS = 1000


@dataclass
class SearchRun:
    """What a search runs with: the study, the spaces and the search data, the policy, the time
    budget's clock and the trial budget (``target``), where trials run, the root seed, and the
    number of training records (parameter ranges that depend on it)."""

    stu: Any
    spaces: Sequence[TechniqueSpace]
    data: SearchData
    pol: Policy
    clock: Clock
    target: int | None
    workers: int
    executor: Executor | None
    root: int
    n_records: int


@dataclass
class SearchState:
    """What changes while a search runs.

    ``seen`` maps each deterministic setting tried (:func:`ppdm.experiments.recommend.common.setting_key`)
    to the trial that measured it, ``measured`` the releases measured (a setting that makes one
    again is not measured again); ``flt`` is the privacy filter (with an ε line and a
    differentially private technique), ``plain`` the techniques without an ε; ``repeats``
    counts suggestions in a row of settings already tried, ``skips`` trials in a row the filter
    did not run; ``fresh`` is a random untried setting for the next trial, after a repeat;
    ``spent_out`` says no differentially private setting fits the filter any more; ``closest``
    holds the :data:`INCUMBENTS` trials closest to the policy so far (:func:`closeness`), at most
    :data:`INCUMBENTS_EACH` of one technique, as (closeness, technique, parameters)."""

    det: set[str]
    seen: dict[str, int]
    measured: MeasuredReleases
    done0: int
    flt: PrivacyFilter | None
    plain: list[str]
    own_pool: Executor | None
    pool: Executor | None
    slots: int
    step: Any = None
    running: dict[Future, _Running] = field(default_factory=dict)
    repeats: int = 0
    fresh: dict[str, Any] | None = None
    stopped_by: str = "trial budget"
    skips: int = 0
    spent_out: bool = False
    shown: int = 0
    closest: list[tuple[tuple[float, float, int], str, dict[str, Any]]] = field(default_factory=list)

    def consider(self, rec: TrialRecord) -> None:
        """Keep ``rec`` among the closest trials if it is one."""
        c = closeness(rec)
        if c is None:
            return
        kept: list[tuple[tuple[float, float, int], str, dict[str, Any]]] = []
        for e in sorted([*self.closest, (c, rec.technique, dict(rec.params))], key=lambda e: e[0]):
            if len(kept) < INCUMBENTS and sum(k[1] == e[1] for k in kept) < INCUMBENTS_EACH:
                kept.append(e)
        self.closest = kept


def closeness(rec: TrialRecord) -> tuple[float, float, int] | None:
    """How close a measured trial came to the policy, smaller is closer: one that met it by its
    utility loss, before any that missed, which go by their excess (the sum of their lines' margins
    beyond what the lines allow); ``None`` for a repeat or a trial that failed."""
    if rec.repeat_of is not None or rec.error is not None or not rec.lines:
        return None
    if rec.feasible:
        return (0.0, float(rec.utility_loss if rec.utility_loss is not None else math.inf), rec.number)
    return (1.0, excess(v.margin for v in rec.lines), rec.number)


def run_search(run: SearchRun) -> str:
    """Run trials until a budget is spent; returns what stopped the search."""
    st = _start_state(run)
    with progress.steps(TOTAL_UNITS, "searching") as step:
        st.step = step
        try:
            while True:
                _start_trials(run, st)
                stop = _why_stopped(run, st)
                if stop is not None:
                    st.stopped_by = stop
                    break
                if not _wait_for_trials(run, st):
                    break
        finally:
            for fut in st.running:
                fut.cancel()
            if st.own_pool is not None:
                _stop(st.own_pool, kill=bool(st.running))
    return st.stopped_by


def _finished(stu: Any) -> int:
    from optuna.trial import TrialState

    return sum(1 for t in stu.get_trials(deepcopy=False) if t.state in (TrialState.COMPLETE, TrialState.FAIL))


def _start_state(run: SearchRun) -> SearchState:
    """The state a search starts from: what a resumed study already tried and spent, and where
    its trials run."""
    from optuna.trial import TrialState

    stu, spaces, pol = run.stu, run.spaces, run.pol
    det = {s.name for s in spaces if s.deterministic}
    seen: dict[str, int] = {}
    measured = MeasuredReleases()  # a setting that makes a release already measured is not measured again
    measured.load(stu.trials)
    for t in stu.trials:
        o = t.user_attrs.get("outcome")
        if (o is not None and t.state == TrialState.COMPLETE and o.get("technique") in det
                and t.user_attrs.get("repeat_of") is None and not o.get("internal")):
            seen.setdefault(setting_key(o["technique"], o.get("params") or {}), t.number)
    done0 = _finished(stu)
    records = study_records(stu, pol)  # a resumed study's trials, judged once for the filter and the closest
    # with an ε line the search is a privacy filter: its budget is fixed now, before any trial, and a
    # differentially private trial runs only if what is charged so far plus its own ε stays within it
    # (running trials are charged when they start; a resumed study's trials count from the start)
    flt = PrivacyFilter(pol.epsilon.at_most) if pol.epsilon is not None and any(
        s.epsilon is not None for s in spaces) else None
    if flt is not None:
        flt.charge(*(d.epsilon for d in search_accounting(records).draws))
    plain = sorted(s.name for s in spaces if s.epsilon is None)
    own_pool = _process_pool(run.workers, run.data) if run.executor is None and run.workers > 1 else None
    pool = run.executor if run.executor is not None else own_pool
    slots = run.workers if run.executor is None else _executor_slots(run.executor, run.workers)
    st = SearchState(det, seen, measured, done0, flt, plain, own_pool, pool, slots)
    for rec in records:
        st.consider(rec)
    return st


def _report(run: SearchRun, st: SearchState, text: str) -> None:
    """Progress: the larger of the time budget's and the trial budget's share spent."""
    now = time.perf_counter()
    frac = run.clock.fraction(now)
    if run.target is not None:
        frac = max(frac, min(1.0, (_finished(run.stu) - st.done0) / max(1, run.target - st.done0)))
    units = int(frac * TOTAL_UNITS)
    st.step(max(0, units - st.shown), description=text)
    st.shown = max(st.shown, units)


def _tell(run: SearchRun, st: SearchState, trial: Any, job: TrialJob, outcome: dict[str, Any],
          repeat_of: int | None = None) -> None:
    """Record a trial's outcome in the study and tell the sampler (risk and loss, one
    constraint per line)."""
    from optuna.trial import TrialState

    stu = run.stu
    same = st.measured.repeat_of(outcome)
    if same is not None:  # its release is one measured already: that trial's measures are its own
        prev = stu.get_trials(deepcopy=False)[same].user_attrs["outcome"]
        outcome = {**prev, "technique": job.technique, "params": json_ready(job.params),
                   "seconds": outcome.get("seconds"), "release_digest": outcome.get("release_digest")}
        repeat_of = same
    st.measured.note(trial.number, outcome, repeat_of)
    trial.set_user_attr("outcome", outcome)
    if repeat_of is not None:
        trial.set_user_attr("repeat_of", repeat_of)
    rec = record_of(trial.number, outcome, run.pol, repeat_of=repeat_of)
    st.consider(rec)
    for v in rec.lines:
        trial.set_constraint(_constraint_name(v), PENALTY[1] if repeat_of is not None else float(v.margin))
    if repeat_of is not None:
        # the same release again is told as the worst outcome: counted as it is, it would weigh double in
        # the sampler's model of what is good, and told as failed the model would not change, so the
        # sampler proposed it again and again (384 of 450 trials of a search on adult); as the worst, the
        # sampler learns that a setting it measured gains nothing and moves to its neighbours
        stu.tell(trial, list(PENALTY))
    elif rec.error is None and rec.risk is not None and rec.utility_loss is not None:
        stu.tell(trial, [float(rec.risk), float(rec.utility_loss)])
    else:
        # a failure Optuna would ignore; told as the worst outcome (every constraint violated),
        # the sampler learns to avoid techniques and settings that do not run on this table
        stu.tell(trial, list(PENALTY))
    if job.technique in st.det and not outcome.get("internal"):
        st.seen.setdefault(setting_key(job.technique, job.params), trial.number if repeat_of is None else repeat_of)
    if repeat_of is None and outcome.get("seconds") and not outcome.get("error"):
        run.clock.durations.append(float(outcome["seconds"]))
    n_ok = sum(1 for t in stu.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
               if all(v <= 0 for v in t.constraints.values()))
    _report(run, st, f"trial {trial.number + 1} · {n_ok} met the policy")


def _can_start(run: SearchRun, st: SearchState) -> bool:
    """Whether another trial may start: a free slot, room in both budgets, and the space and
    the ε budget not spent."""
    return (len(st.running) < st.slots
            and (run.target is None or _finished(run.stu) + len(st.running) < run.target)
            and run.clock.can_start(time.perf_counter())
            and st.repeats < EXHAUSTED_AFTER and st.skips < EXHAUSTED_AFTER)


def _start_trials(run: SearchRun, st: SearchState) -> None:
    """Start trials while one may start (:func:`_can_start`)."""
    while _can_start(run, st):
        # once a trial did not fit: does any differentially private setting still fit? (what is
        # spent only grows, so once none does, none will)
        st.spent_out = st.spent_out or (st.skips > 0 and st.flt is not None and all(
            c is None or not st.flt.fits(c) for c in (cheapest_cost(s, run.data.score_epsilon) for s in run.spaces
                                                       if s.epsilon is not None)))
        if st.spent_out and not st.plain:  # nothing differentially private fits any more, nor is there else
            st.skips = EXHAUSTED_AFTER
            break
        _enqueue_next(run, st)
        _ask_and_start(run, st)


def _enqueue_next(run: SearchRun, st: SearchState) -> None:
    """Fix the next trial's technique (or whole setting) when the sampler should not choose it:
    only techniques without an ε once the ε budget is spent, a random untried setting after a
    repeat, an exploring setting (:data:`EXPLORE_SHARE` of the trials after the sampler's random
    start), or a technique drawn by racing (:func:`race`). The trial's ``proposed`` attribute
    says which."""
    stu = run.stu
    if st.spent_out:  # the search stops proposing differentially private trials
        rng = np.random.default_rng(seed_of(run.root, 7, len(stu.trials)))
        stu.enqueue_trial({"technique": st.plain[int(rng.integers(len(st.plain)))]},
                          user_attrs={"proposed": "a technique without an ε"})
    elif st.fresh is not None:
        # enqueued only now, so a setting never waits in the study beyond the budget
        stu.enqueue_trial(st.fresh, user_attrs={"proposed": "random, after a repeat"})
        st.fresh = None
    else:
        aside, weights = race(stu, run.spaces)
        # a share of the trials explores: the sampler alone settles in the first region that comes close
        # (on adult, 279 of 549 trials went to one mode of local suppression, whose best missed the
        # Rule Accuracy cap by a hair, and the other mode, which meets it, got 9)
        rng = np.random.default_rng(seed_of(run.root, 8, len(stu.trials)))
        u = rng.random()
        if len(stu.trials) >= startup_trials(len(run.spaces)) and u < EXPLORE_SHARE:
            allowed = [s for s in run.spaces if s.name not in aside]
            near = _neighbour(run, st, allowed, rng) if u < EXPLORE_SHARE / 2 else None
            if near is not None:
                stu.enqueue_trial(near[0], user_attrs={"proposed": f"neighbour of trial {near[1]}"})
                return
            setting = untried_setting(allowed, rng, run.n_records, st.seen)
            if setting is not None:
                stu.enqueue_trial(setting, user_attrs={"proposed": "random"})
                return
        if weights:  # the technique is drawn here; the sampler still draws its parameters
            names = sorted(weights)
            w = np.array([weights[n] for n in names], dtype=float)
            rng = np.random.default_rng(seed_of(run.root, 6, len(stu.trials)))
            stu.enqueue_trial({"technique": names[int(rng.choice(len(names), p=w / w.sum()))]},
                              user_attrs={"proposed": "technique drawn by racing"})


def _neighbour(run: SearchRun, st: SearchState, allowed: Sequence[TechniqueSpace],
               rng: np.random.Generator, draws: int = 20) -> tuple[dict[str, Any], int] | None:
    """A setting one step from one of the closest trials (of a technique in ``allowed``) that is
    not a deterministic setting already tried, and that trial's number; or ``None``."""
    spaces = {s.name: s for s in allowed}
    near = [(c[2], name, params) for c, name, params in st.closest if name in spaces]
    if not near:
        return None
    for _ in range(draws):
        number, name, params = near[int(rng.integers(len(near)))]
        ts = spaces[name]
        setting = neighbour_setting(ts, params, rng, run.n_records)
        if setting is None:
            continue
        if not ts.deterministic or setting_key(name, setting_params(ts, setting)) not in st.seen:
            return setting, number
    return None


def _ask_and_start(run: SearchRun, st: SearchState) -> None:
    """Ask the study for a trial and start it: not run when its ε does not fit the filter, told
    as a repeat when its deterministic setting was tried, else run here or submitted."""
    from optuna.trial import TrialState

    stu, data, flt = run.stu, run.data, st.flt
    trial = stu.ask()
    room = None if flt is None else flt.room - data.score_epsilon
    ts, params = suggest(trial, run.spaces, run.n_records, room)
    job = TrialJob(trial.number, ts.name, params, seed_of(run.root, 2, trial.number),
                   st.measured.known() if ts.deterministic else None)
    trial.set_user_attr("job", {"technique": ts.name, "params": json_ready(params)})
    cost = None if flt is None else trial_cost(ts.name, params, data.score_epsilon)
    if cost is not None and flt is not None and not flt.fits(*cost):
        # not run: it reads nothing, spends nothing, and the sampler learns nothing from it
        trial.set_user_attr("stopped", flt.why_not(*cost))
        trial.set_user_attr("not_run", True)
        stu.tell(trial, state=TrialState.FAIL)
        st.skips += 1
        return
    if cost is not None and flt is not None:
        flt.charge(*cost)
    st.skips = 0
    k = setting_key(ts.name, params)
    if ts.deterministic and k in st.seen:
        prev = stu.get_trials(deepcopy=False)[st.seen[k]].user_attrs["outcome"]
        st.repeats += 1
        _tell(run, st, trial, job, {**prev, "seconds": 0.0}, repeat_of=st.seen[k])
        # the sampler is stuck on what it knows: the next trial explores a setting not
        # tried yet, drawn at random (none found in many draws: the space is spent)
        rng = np.random.default_rng(seed_of(run.root, 5, trial.number))
        racing = race(stu, run.spaces)[0]
        st.fresh = untried_setting([s for s in run.spaces if s.name not in racing], rng, run.n_records, st.seen)
        if st.fresh is None:
            st.repeats = EXHAUSTED_AFTER
        return
    st.repeats = 0
    if st.pool is None:
        _tell(run, st, trial, job, run_trial(job, data))
    else:
        fut = st.pool.submit(run_in_worker, job) if st.own_pool is not None else \
            st.pool.submit(run_with_data, job, data)
        st.running[fut] = _Running(trial, job, time.perf_counter())


def _why_stopped(run: SearchRun, st: SearchState) -> str | None:
    """What stopped the search once no trial runs and none may start, or ``None``."""
    if st.running:
        return None
    if st.skips >= EXHAUSTED_AFTER:
        return "ε budget"
    if st.repeats >= EXHAUSTED_AFTER:
        return "search space exhausted"
    return "trial budget" if run.target is not None and _finished(run.stu) >= run.target else "time budget"


def _wait_for_trials(run: SearchRun, st: SearchState) -> bool:
    """Wait for running trials and tell their outcomes; ``False`` when the time budget ran out
    first (the trials still running are stopped and recorded as such)."""
    from optuna.trial import TrialState

    deadline = run.clock.deadline()
    timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
    done, _ = wait(list(st.running), timeout=timeout, return_when=FIRST_COMPLETED)
    if not done:
        st.stopped_by = "time budget"
        for fut, r in st.running.items():
            fut.cancel()
            r.trial.set_user_attr("stopped", "still running when the time budget ran out")
            run.stu.tell(r.trial, state=TrialState.FAIL)
        st.running.clear()
        _stop(st.own_pool, kill=True)
        st.own_pool = None
        return False
    for fut in done:
        r = st.running.pop(fut)
        try:
            outcome = fut.result()
        except Exception as e:  # noqa: BLE001 - a lost worker is recorded as an internal error
            outcome = {"technique": r.job.technique, "params": json_ready(r.job.params), "measures": {},
                       "privacy": None, "check": None, "internal": True,
                       "error": f"{type(e).__name__}: {' '.join(str(e).split())}",
                       "seconds": time.perf_counter() - r.started}
        _tell(run, st, r.trial, r.job, outcome)
    return True


def _constraint_name(v: LineVerdict) -> str:
    return v.measure


def _process_pool(workers: int, data: SearchData) -> Executor:
    """Worker processes that each receive the search data once; one thread each for the
    numerical libraries, so the workers share the cores instead of fighting over them."""
    from joblib.externals.loky.process_executor import ProcessPoolExecutor

    one = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
    return ProcessPoolExecutor(max_workers=workers, initializer=init_worker, initargs=(data,), env=one)


def _executor_slots(executor: Executor, workers: int) -> int:
    """How many trials to keep running on a given executor: its worker threads when it says
    (a Dask cluster's), else ``workers``."""
    client = getattr(executor, "_client", None)
    if client is not None and hasattr(client, "nthreads"):
        try:
            return max(1, int(sum(client.nthreads().values())))
        except Exception:  # noqa: BLE001 - the count is a hint
            return max(1, workers)
    return max(1, workers)


def _stop(pool: Executor | None, *, kill: bool) -> None:
    """Shut down the search's own worker processes; ``kill`` stops trials still running."""
    if pool is not None:
        pool.shutdown(wait=not kill, kill_workers=kill)  # type: ignore[call-arg]  # loky's executor takes kill_workers; Executor's stub does not
