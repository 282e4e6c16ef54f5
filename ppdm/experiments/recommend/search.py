"""The search loop of ``ppdm recommend``: trials are proposed (Optuna, racing, random untried
settings), charged to the privacy filter, run here or on an executor, and told back to the
study, until the trial budget, the time budget, the ε budget or the search space is spent.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdm import progress
from ppdm.experiments.policy import Policy
from ppdm.experiments.recommend.accounting import (
    PrivacyFilter,
    search_accounting,
    trial_cost,
)
from ppdm.experiments.recommend.common import _json, _key, _seed_of
from ppdm.experiments.recommend.judging import LineVerdict
from ppdm.experiments.recommend.measure import SearchData
from ppdm.experiments.recommend.ranking import record_of
from ppdm.experiments.recommend.repeats import MeasuredReleases
from ppdm.experiments.recommend.spaces import TechniqueSpace, _cheapest, _untried, suggest
from ppdm.experiments.recommend.study import _records
from ppdm.experiments.recommend.trials import (
    TrialJob,
    _init_worker,
    _run_in_worker,
    _run_with_data,
    run_trial,
)

#: consecutive suggestions of deterministic settings already tried after which the space counts as exhausted
EXHAUSTED_AFTER = 50


#: racing: once a release has met the policy, a technique with this many trials of its own, none
#: meeting it, is set aside, and each later trial's technique is drawn among the others
RACE_AFTER = 4


#: racing: the share of the releases meeting the policy, the least utility loss first, that count
#: for their technique's chance of being drawn
ELITE_SHARE = 0.25


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


class _Clock:
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

    Until some release meets the policy nothing is set aside (``({}, {})``: the sampler picks the
    technique). After that a technique is set aside once :data:`RACE_AFTER` of its own trials
    (repeats not counted) ran without one meeting the policy, and each remaining technique is
    drawn with weight 1 + the number of its releases among the best quarter (:data:`ELITE_SHARE`,
    by utility loss) of all releases that met the policy: the search spends its trials where the
    least utility has been lost within the policy, and still tries the techniques it knows
    little about. Counting the best releases rather than every release that met the policy
    keeps a technique that meets it often but loses more from drawing most trials. A technique
    is never set aside when it is the only one."""
    from optuna.trial import TrialState

    tried: dict[str, int] = {}
    met: dict[str, int] = {}
    losses: list[tuple[float, str]] = []
    for t in stu.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        o = t.user_attrs.get("outcome")
        if o is None or t.user_attrs.get("repeat_of") is not None:
            continue
        name = o.get("technique")
        tried[name] = tried.get(name, 0) + 1
        if t.state == TrialState.COMPLETE and t.constraints and all(v <= 0 for v in t.constraints.values()):
            met[name] = met.get(name, 0) + 1
            losses.append((float(t.values[1]), name))
    if not met or len(spaces) < 2:
        return {}, {}
    aside = {s.name: f"set aside after {tried[s.name]} trials, none meeting the policy, while other techniques "
             "met it" for s in spaces if not met.get(s.name) and tried.get(s.name, 0) >= RACE_AFTER}
    elite: dict[str, int] = {}
    for _, name in sorted(losses)[:max(1, math.ceil(ELITE_SHARE * len(losses)))]:
        elite[name] = elite.get(name, 0) + 1
    weights = {s.name: 1 + elite.get(s.name, 0) for s in spaces if s.name not in aside}
    return aside, weights


def run_search(stu: Any, spaces: Sequence[TechniqueSpace], data: SearchData, pol: Policy, *, clock: _Clock,
            target: int | None, workers: int, executor: Executor | None, root: int, n_records: int) -> str:
    """Run trials until a budget is spent; returns what stopped the search."""
    from optuna.trial import TrialState

    det = {s.name for s in spaces if s.deterministic}
    seen: dict[str, int] = {}
    measured = MeasuredReleases()  # a setting that makes a release already measured is not measured again
    measured.load(stu.trials)
    for t in stu.trials:
        o = t.user_attrs.get("outcome")
        if (o is not None and t.state == TrialState.COMPLETE and o.get("technique") in det
                and t.user_attrs.get("repeat_of") is None and not o.get("internal")):
            seen.setdefault(_key(o["technique"], o.get("params") or {}), t.number)

    def finished() -> int:
        return sum(1 for t in stu.get_trials(deepcopy=False) if t.state in (TrialState.COMPLETE, TrialState.FAIL))

    done0 = finished()
    total_units = 1000
    own_pool = None
    running: dict[Future, _Running] = {}
    repeats = 0
    fresh: dict[str, Any] | None = None  # a random untried setting for the next trial, after a repeat
    stopped_by = "trial budget"
    # with an ε line the search is a privacy filter: its budget is fixed now, before any trial, and a
    # differentially private trial runs only if what is charged so far plus its own ε stays within it
    # (running trials are charged when they start; a resumed study's trials count from the start)
    flt = PrivacyFilter(pol.epsilon.at_most) if pol.epsilon is not None and any(
        s.epsilon is not None for s in spaces) else None
    if flt is not None:
        flt.charge(*(d.epsilon for d in search_accounting(_records(stu, pol)).draws))
    plain = sorted(s.name for s in spaces if s.epsilon is None)
    skips = 0  # trials in a row the filter did not run
    spent_out = False
    parallel = executor is not None or workers > 1
    if parallel and executor is None:
        own_pool = _process_pool(workers, data)
    pool = executor if executor is not None else own_pool
    slots = workers if executor is None else _executor_slots(executor, workers)

    with progress.steps(total_units, "searching") as step:
        shown = 0

        def report(text: str) -> None:
            nonlocal shown
            now = time.perf_counter()
            frac = clock.fraction(now)
            if target is not None:
                frac = max(frac, min(1.0, (finished() - done0) / max(1, target - done0)))
            units = int(frac * total_units)
            step(max(0, units - shown), description=text)
            shown = max(shown, units)

        def tell(trial: Any, job: TrialJob, outcome: dict[str, Any], repeat_of: int | None = None) -> None:
            same = measured.repeat_of(outcome)
            if same is not None:  # its release is one measured already: that trial's measures are its own
                prev = stu.get_trials(deepcopy=False)[same].user_attrs["outcome"]
                outcome = {**prev, "technique": job.technique, "params": _json(job.params),
                           "seconds": outcome.get("seconds"), "release_digest": outcome.get("release_digest")}
                repeat_of = same
            measured.note(trial.number, outcome, repeat_of)
            trial.set_user_attr("outcome", outcome)
            if repeat_of is not None:
                trial.set_user_attr("repeat_of", repeat_of)
            rec = record_of(trial.number, outcome, pol, repeat_of=repeat_of)
            for v in rec.lines:
                trial.set_constraint(_constraint_name(v), float(v.margin))
            if repeat_of is not None:
                # the same release told twice would count double in the sampler's model of what is good
                stu.tell(trial, state=TrialState.FAIL)
            elif rec.error is None and rec.risk is not None and rec.utility_loss is not None:
                stu.tell(trial, [float(rec.risk), float(rec.utility_loss)])
            else:
                # a failure Optuna would ignore; told as the worst outcome (every constraint violated),
                # the sampler learns to avoid techniques and settings that do not run on this table
                stu.tell(trial, list(PENALTY))
            if job.technique in det and not outcome.get("internal"):
                seen.setdefault(_key(job.technique, job.params), trial.number if repeat_of is None else repeat_of)
            if repeat_of is None and outcome.get("seconds") and not outcome.get("error"):
                clock.durations.append(float(outcome["seconds"]))
            n_ok = sum(1 for t in stu.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                       if all(v <= 0 for v in t.constraints.values()))
            report(f"trial {trial.number + 1} · {n_ok} met the policy")

        try:
            while True:
                while (len(running) < slots
                       and (target is None or finished() + len(running) < target)
                       and clock.can_start(time.perf_counter())
                       and repeats < EXHAUSTED_AFTER and skips < EXHAUSTED_AFTER):
                    # once a trial did not fit: does any differentially private setting still fit? (what is
                    # spent only grows, so once none does, none will)
                    spent_out = spent_out or (skips > 0 and flt is not None and all(
                        c is None or not flt.fits(c) for c in (_cheapest(s, data.score_epsilon) for s in spaces
                                                               if s.epsilon is not None)))
                    if spent_out and not plain:  # nothing differentially private fits any more, nor is there else
                        skips = EXHAUSTED_AFTER
                        break
                    if spent_out:  # the search stops proposing differentially private trials
                        rng = np.random.default_rng(_seed_of(root, 7, len(stu.trials)))
                        stu.enqueue_trial({"technique": plain[int(rng.integers(len(plain)))]})
                    elif fresh is not None:
                        # enqueued only now, so a setting never waits in the study beyond the budget
                        stu.enqueue_trial(fresh)
                        fresh = None
                    else:
                        aside, weights = race(stu, spaces)
                        if aside:  # the technique is drawn here; the sampler still draws its parameters
                            names = sorted(weights)
                            w = np.array([weights[n] for n in names], dtype=float)
                            rng = np.random.default_rng(_seed_of(root, 6, len(stu.trials)))
                            stu.enqueue_trial({"technique": names[int(rng.choice(len(names), p=w / w.sum()))]})
                    trial = stu.ask()
                    room = None if flt is None else flt.room - data.score_epsilon
                    ts, params = suggest(trial, spaces, n_records, room)
                    job = TrialJob(trial.number, ts.name, params, _seed_of(root, 2, trial.number),
                                   measured.known() if ts.deterministic else None)
                    trial.set_user_attr("job", {"technique": ts.name, "params": _json(params)})
                    cost = None if flt is None else trial_cost(ts.name, params, data.score_epsilon)
                    if cost is not None and flt is not None and not flt.fits(*cost):
                        # not run: it reads nothing, spends nothing, and the sampler learns nothing from it
                        trial.set_user_attr("stopped", flt.why_not(*cost))
                        trial.set_user_attr("not_run", True)
                        stu.tell(trial, state=TrialState.FAIL)
                        skips += 1
                        continue
                    if cost is not None and flt is not None:
                        flt.charge(*cost)
                    skips = 0
                    k = _key(ts.name, params)
                    if ts.deterministic and k in seen:
                        prev = stu.get_trials(deepcopy=False)[seen[k]].user_attrs["outcome"]
                        repeats += 1
                        tell(trial, job, {**prev, "seconds": 0.0}, repeat_of=seen[k])
                        # the sampler is stuck on what it knows: the next trial explores a setting not
                        # tried yet, drawn at random (none found in many draws: the space is spent)
                        rng = np.random.default_rng(_seed_of(root, 5, trial.number))
                        racing = race(stu, spaces)[0]
                        fresh = _untried([s for s in spaces if s.name not in racing], rng, n_records, seen)
                        if fresh is None:
                            repeats = EXHAUSTED_AFTER
                        continue
                    repeats = 0
                    if pool is None:
                        tell(trial, job, run_trial(job, data))
                    else:
                        fut = pool.submit(_run_in_worker, job) if own_pool is not None else \
                            pool.submit(_run_with_data, job, data)
                        running[fut] = _Running(trial, job, time.perf_counter())
                if skips >= EXHAUSTED_AFTER and not running:
                    stopped_by = "ε budget"
                    break
                if repeats >= EXHAUSTED_AFTER and not running:
                    stopped_by = "search space exhausted"
                    break
                if not running:
                    if target is not None and finished() >= target:
                        stopped_by = "trial budget"
                    else:
                        stopped_by = "time budget"
                    break
                deadline = clock.deadline()
                timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
                done, _ = wait(list(running), timeout=timeout, return_when=FIRST_COMPLETED)
                if not done:
                    stopped_by = "time budget"
                    for fut, r in running.items():
                        fut.cancel()
                        r.trial.set_user_attr("stopped", "still running when the time budget ran out")
                        stu.tell(r.trial, state=TrialState.FAIL)
                    running.clear()
                    _stop(own_pool, kill=True)
                    own_pool = None
                    break
                for fut in done:
                    r = running.pop(fut)
                    try:
                        outcome = fut.result()
                    except Exception as e:  # noqa: BLE001 - a lost worker is recorded as an internal error
                        outcome = {"technique": r.job.technique, "params": _json(r.job.params), "measures": {},
                                   "privacy": None, "check": None, "internal": True,
                                   "error": f"{type(e).__name__}: {' '.join(str(e).split())}",
                                   "seconds": time.perf_counter() - r.started}
                    tell(r.trial, r.job, outcome)
        finally:
            for fut in running:
                fut.cancel()
            if own_pool is not None:
                _stop(own_pool, kill=bool(running))
    return stopped_by


def _constraint_name(v: LineVerdict) -> str:
    return v.measure


def _process_pool(workers: int, data: SearchData) -> Executor:
    """Worker processes that each receive the search data once; one thread each for the
    numerical libraries, so the workers share the cores instead of fighting over them."""
    from joblib.externals.loky.process_executor import ProcessPoolExecutor

    one = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
    return ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(data,), env=one)


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
