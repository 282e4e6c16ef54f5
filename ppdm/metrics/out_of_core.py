"""Measures of tables larger than memory: exact when a measure can be computed partition by
partition, on a declared random sample with a confidence interval otherwise.

An :class:`~ppdm.metrics.base.EvaluationContext` may hold Dask DataFrames (x and z
partitioned alike, as ``ppdm anonymize`` writes a release of a partitioned input).
:func:`evaluate_measure` then

* calls a measure registered with ``out_of_core=True`` as it is: it computes the same value
  as in memory, exactly (column-wise sums, rule counts per partition, the blocked
  nearest-neighbour searches of DDR and record linkage, key frequencies by Dask group-bys,
  the release check). Record linkage and intruder matching past a size attack a sample of
  records, each against *every* record of the other table, with an interval that covers the
  exact value (never a sample of x, which would make every link easier);
* computes any other measure on a uniform random sample of ``sample_rows`` records
  (default :data:`SAMPLE_ROWS`; the same records of x and z), and returns a
  :class:`SampledResult`: the value on the sample, the sample size, and a confidence interval
  from batch means — the sample is split at random into ``batches`` disjoint parts, the
  measure computed on each, and ``value ± t · sd(batch values)/√batches``. The interval
  treats the value as a mean over records (it is one for accuracies, link and disclosure
  rates); for other measures it is an approximation, and it does not include the variation
  of a model's training. It is ``NaN`` when a batch is too small for the measure.

Nothing collects a whole table: each task reads one partition (pair), and the sample's size
is bounded by ``sample_rows``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ppdm.errors import PPDMError
from ppdm.metrics._common import is_dask
from ppdm.metrics.base import EvaluationContext, MeasureResult, MeasureSpec

#: records of the sample a measure without an out-of-core form is computed on, by default
SAMPLE_ROWS = 20_000
#: batches of the sample for the confidence interval
BATCHES = 5
CONFIDENCE = 0.95


@dataclass
class SampledResult(MeasureResult):
    """A measure computed on a random sample of the records of a partitioned table.

    ``value`` is the measure on the whole sample (``result``, the measure's own result);
    ``sample_size`` of ``population`` records were drawn uniformly without replacement (the
    same records of x and z); ``ci_low``/``ci_high`` bound a ``confidence`` interval from
    ``batches`` batch means (see the module docstring); ``exact`` is always ``False``.
    """

    measure: str = ""
    exact: bool = False
    sample_size: int = 0
    population: int = 0
    confidence: float = CONFIDENCE
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    batches: int = 0
    ci_method: str = "batch means"
    result: Any = None

    def scalars(self) -> dict[str, Any]:
        """The sample's fields, after those of the measure's own result on the sample."""
        inner = self.result.scalars() if isinstance(self.result, MeasureResult) else {}
        return {**inner, **super().scalars()}

    def details(self) -> dict[str, Any]:
        """The detail tables of the measure's own result on the sample."""
        return self.result.details() if isinstance(self.result, MeasureResult) else {}


def is_out_of_core(ctx: EvaluationContext) -> bool:
    return is_dask(ctx.x) or is_dask(ctx.z)


def sample_context(ctx: EvaluationContext, *, sample_rows: int = SAMPLE_ROWS) -> tuple[EvaluationContext, int]:
    """An in-memory context on a uniform sample of the records (the same of x and z; of the
    test table too), cached in ``ctx``; also the number of records of x."""
    from ppdm.metrics._dask import sample_pairs

    key = ("out_of_core_sample", int(sample_rows))
    if key not in ctx.cache:
        seed = int(ctx.random_state or 0)
        xs, zs, n = sample_pairs(ctx.x, ctx.z, int(sample_rows), seed)
        ts = None
        if ctx.test is not None:
            ts = sample_pairs(ctx.test, None, int(sample_rows), seed + 1)[0] if is_dask(ctx.test) else ctx.test
        rules = ctx.rules
        sub = replace(ctx, x=xs, z=zs, test=ts, rules=rules, cache={})
        ctx.cache[key] = (sub, n)
    return ctx.cache[key]


def _batch_values(spec: MeasureSpec, sub: EvaluationContext, batches: int, seed: int) -> list[float]:
    n = len(sub.x)
    order = np.random.default_rng([seed, 11]).permutation(n)
    out = []
    for b in np.array_split(order, batches):
        b = np.sort(b)
        part = replace(sub, x=sub.x.iloc[b].reset_index(drop=True), z=sub.z.iloc[b].reset_index(drop=True),
                       cache={})
        try:
            v = float(spec.fn(part).value)
        except (PPDMError, ValueError, ZeroDivisionError):
            return []  # a batch too small for the measure: no interval
        out.append(v)
    return out


def sampled(spec: MeasureSpec, ctx: EvaluationContext, *, sample_rows: int = SAMPLE_ROWS, batches: int = BATCHES,
            confidence: float = CONFIDENCE) -> SampledResult:
    """``spec`` on a random sample of the records, with a batch-means interval."""
    from scipy import stats

    sub, n = sample_context(ctx, sample_rows=sample_rows)
    res = spec.fn(sub)
    value = float(res.value)
    vals = _batch_values(spec, sub, batches, int(ctx.random_state or 0)) if batches > 1 else []
    lo = hi = float("nan")
    finite = [v for v in vals if math.isfinite(v)]
    if len(finite) == batches and batches > 1:
        sd = float(np.std(finite, ddof=1))
        half = float(stats.t.ppf(0.5 + confidence / 2, df=batches - 1)) * sd / math.sqrt(batches)
        lo, hi = value - half, value + half
    return SampledResult(value=value, measure=spec.name, sample_size=len(sub.x), population=n,
                         confidence=confidence, ci_low=lo, ci_high=hi, batches=batches, result=res)


def evaluate_measure(spec: MeasureSpec, ctx: EvaluationContext, *, sample_rows: int = SAMPLE_ROWS,
                     batches: int = BATCHES) -> MeasureResult:
    """The measure ``spec`` on ``ctx``: in memory as usual; for Dask tables exactly when it has
    an out-of-core form, else on a sample (:func:`sampled`)."""
    if not is_out_of_core(ctx):
        return spec.fn(ctx)
    if spec.out_of_core:
        # an exact form that must sample past some size (record linkage, intruder matching) takes
        # the evaluation's sample size, and samples the attacked records only, never x
        ctx.cache["sample_rows"] = int(sample_rows)
        return spec.fn(ctx)
    return sampled(spec, ctx, sample_rows=sample_rows, batches=batches)
