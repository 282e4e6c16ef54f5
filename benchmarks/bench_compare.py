"""Overhead of the comparison engine (splitting, copying, dispatch, bookkeeping, report).

A technique that returns its input and a measure that reads one column cost next to
nothing, so the time measured is what ``compare`` itself adds around real techniques
and measures. Goal: on adult (30 162 rows), 10 folds × 5 techniques × 2 repeats
(110 tasks) take under 10 s, and rendering the HTML report under 10 s.
"""

from __future__ import annotations

import numpy as np

from benchmarks._util import measure


def run(quick: bool) -> list[dict]:
    from ppdm.anonymize.base import Technique
    from ppdm.anonymize.registry import TECHNIQUES, register
    from ppdm.datasets import load
    from ppdm.experiments.compare import compare, sweep
    from ppdm.metrics.base import MEASURES, MeasureResult, register_measure
    from ppdm.report.html import render_html

    class Identity(Technique):
        def __init__(self, class_column=None, schema=None, random_state=None, level=0.0):
            self.class_column = class_column
            self.schema = schema
            self.random_state = random_state
            self.level = level

        def _transform(self, df, schema, rng):
            return df

    def first_mean(ctx):
        c = ctx.schema.numeric[0]
        return MeasureResult(float(np.mean(ctx.z[c].to_numpy(float))) + float(len(ctx.test)))

    register("bench-identity")(Identity)
    register_measure("bench_mean", kind="utility", description="benchmark", needs_class=False)(first_mean)
    try:
        x, schema = load("adult", missing="drop")
        if quick:
            x = x.iloc[:3000]
        cv, repeats = (3, 1) if quick else (10, 2)
        specs = sweep("bench-identity", "level", [0.0, 0.1, 0.2, 0.3, 0.4])
        result, secs, rss = measure(lambda: compare(x, schema, specs, "bench_mean", cv=cv, repeats=repeats))
        tasks = cv * (len(specs) * repeats + 1)
        _, secs_html, rss_html = measure(lambda: render_html(result))
    finally:
        TECHNIQUES.pop("bench-identity", None)
        MEASURES.pop("bench_mean", None)
    return [
        {"benchmark": f"compare engine, adult n={len(x)}, {tasks} tasks", "seconds": secs,
         "goal": 10.0, "peak_rss_mb": rss},
        {"benchmark": f"render_html, {len(specs) + 1} techniques, sweep plots", "seconds": secs_html,
         "goal": 10.0, "peak_rss_mb": rss_html},
    ]
