"""The release that meets a risk policy at the least loss of utility (``ppdm recommend``).

A data owner states a :class:`~ppdm.experiments.policy.Policy` — risk lines every release
must meet, the utility measures that decide among those that do, the techniques allowed —
and :func:`recommend` searches techniques × parameters for the best release:

1. The table is split once into a **training split**, from which every trial's release is
   made, and a **control split** of held-out records (``holdout``, half by default, as
   ``ppdm anonymize --holdout`` does): the attacks' control set (Giomi et al. 2023) and the
   test records of the prediction measures.
2. An Optuna study searches the techniques' declared parameter ranges
   (:mod:`ppdm.anonymize.search_space`, narrowed or widened by the policy): a conditional
   search space (a technique, then its own parameters), a multi-objective TPE sampler
   minimising (risk, utility loss), and one named constraint per policy line, so the sampler
   learns where the policy is met. Studies are stored in SQLite and can be resumed.
3. Each **trial** makes its release on the training split through
   :func:`ppdm.experiments.release.release` (roles, identifiers, rounding, release check),
   measures every risk line against the control split with its confidence interval and judges
   it with :func:`ppdm.metrics.base.judge` — a line is met only when the whole interval is
   within it — and measures the policy's utility. A trial of a differentially private
   technique is judged differently: by its ε and by Laplace-noised utility scores alone, never
   by exact measurements on the records, so that the ε its release claims covers the whole
   search (:mod:`.accounting`).
4. Among the trials that met every line, the **front** holds those no other trial beats on
   both risk and utility loss; the **winner** loses the least utility (weights), or wins on
   the policy's priority order.
5. A differentially private winner's **recommended release** is its trial's own release
   (made again from its seed; a fresh draw, counted, with ``refit=True``), published when the
   policy's ε line meets the total the search spent. Any other winner's technique and
   parameters make the **recommended release** with a fresh seed
   (OS entropy unless a seed is given): by default on the training split again, measured
   against the control split like every trial, and kept only when it meets the policy itself
   (a new draw of a random technique is a new release); with ``refit=True`` on the whole
   table, whose risk then cannot be measured against a control set (see
   ``docs/recommend.md``).

When no trial meets the policy, :attr:`RecommendResult.unmet` says which lines no trial met
and how close the best came, and no release is made. Trials run in this process
(``n_jobs=1``), in worker processes, or on any :class:`concurrent.futures.Executor` such as a
Dask cluster's (``distributed.Client.get_executor()``). A time budget and a trial budget are
honoured; progress goes to :mod:`ppdm.progress`.

The study file is private, like the control set: it holds the seed of the hold-out split,
so with the original table it tells who is in the release.

The package, by concern: :mod:`.spaces` (techniques' search spaces and drawing settings),
:mod:`.measure` (measuring a release against the control split), :mod:`.trials` (making and
measuring one trial's release), :mod:`.judging` (a trial's policy lines, by the library's one
judge :func:`ppdm.metrics.judgement.judge_line`), :mod:`.ranking` (trial records, the front, the
ranking), :mod:`.study` (the Optuna study and its private file), :mod:`.search` (running trials
under the budgets), :mod:`.final` (the recommended release), :mod:`.accounting` (ε spent),
:mod:`.pairing`, :mod:`.repeats`, :mod:`.result`, and :mod:`.core`, whose :func:`recommend` runs
them in order.
"""

from __future__ import annotations

from ppdm.experiments.recommend.common import parse_duration
from ppdm.experiments.recommend.core import (
    DEFAULT_HOLDOUT,
    DEFAULT_TRIALS,
    RecommendOptions,
    recommend,
    search_data,
)
from ppdm.experiments.recommend.final import FINAL_CANDIDATES, FINAL_DRAWS
from ppdm.experiments.recommend.judging import (
    LineVerdict,
    judge_lines,
    risk_value,
    skipped_line,
    utility_loss,
    utility_losses,
)
from ppdm.experiments.recommend.measure import MEASURED_LAST, SearchData, measure_order, measure_release
from ppdm.experiments.recommend.ranking import TrialRecord, pareto_front, rank, record_of, unmet_report
from ppdm.experiments.recommend.result import RecommendResult
from ppdm.experiments.recommend.search import (
    ELITE_SHARE,
    EXHAUSTED_AFTER,
    PENALTY,
    RACE_AFTER,
    race,
)
from ppdm.experiments.recommend.spaces import TechniqueSpace, build_spaces, random_setting, suggest
from ppdm.experiments.recommend.study import STUDY_FORMAT, STUDY_NAME, STUDY_VERSION, study_storage
from ppdm.experiments.recommend.trials import (
    TrialJob,
    make_release,
    measured_data,
    output_schema,
    private_technique,
    run_trial,
)

__all__ = ["DEFAULT_HOLDOUT", "DEFAULT_TRIALS", "ELITE_SHARE", "EXHAUSTED_AFTER", "FINAL_CANDIDATES", "FINAL_DRAWS",
           "MEASURED_LAST", "PENALTY", "RACE_AFTER", "STUDY_FORMAT", "STUDY_NAME", "STUDY_VERSION", "LineVerdict",
           "RecommendOptions", "RecommendResult", "SearchData", "TechniqueSpace", "TrialJob", "TrialRecord", "build_spaces",
           "judge_lines", "make_release", "measure_order", "measure_release", "measured_data", "output_schema",
           "pareto_front", "parse_duration", "private_technique", "race", "random_setting", "rank", "recommend",
           "record_of", "risk_value", "run_trial", "search_data", "skipped_line", "study_storage", "suggest",
           "unmet_report", "utility_loss", "utility_losses"]
