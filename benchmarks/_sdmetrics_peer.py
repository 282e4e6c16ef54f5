"""Score a release's distribution fidelity with SDMetrics, for ``bench_fidelity.py``.

Runs inside the benchmark's own virtual environment (never ppdm's, which does not depend on
``sdmetrics``): ``python _sdmetrics_peer.py SPEC.json``. The spec names x's and z's CSV files,
the numeric and the categorical columns and the bins of a number in a contingency table. Each
column gets ``KSComplement`` (numbers) or ``TVComplement`` (categories); each pair of columns
``CorrelationSimilarity`` (Pearson) when both are numbers, else ``ContingencySimilarity`` with the
numbers of the pair named in ``continuous_column_names``. A metric that raises (a constant column
in a correlation) scores null. Prints one JSON object: the scores and the seconds they took.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
import warnings


def read(path: str, numeric: list[str], categorical: list[str]):
    import pandas as pd

    dtypes = {**{c: float for c in numeric}, **{c: object for c in categorical}}
    # only an empty cell is a blank: a category spelt "NA" stays a category
    return pd.read_csv(path, dtype=dtypes, keep_default_na=False, na_values=[""])


def main(spec_path: str) -> int:
    from sdmetrics.column_pairs import ContingencySimilarity, CorrelationSimilarity
    from sdmetrics.single_column import KSComplement, TVComplement

    warnings.simplefilter("ignore")
    spec = json.loads(open(spec_path, encoding="utf-8").read())
    numeric, categorical = spec["numeric"], spec["categorical"]
    x, z = read(spec["x"], numeric, categorical), read(spec["z"], numeric, categorical)
    columns = [c for c in x.columns if c in set(numeric) | set(categorical)]
    start, cpu = time.time(), time.process_time()
    per_column = {}
    for c in columns:
        metric = KSComplement if c in numeric else TVComplement
        per_column[c] = float(metric.compute(x[c], z[c]))
    per_pair = {}
    for a, b in itertools.combinations(columns, 2):
        try:
            if a in numeric and b in numeric:
                score = CorrelationSimilarity.compute(x[[a, b]], z[[a, b]], coefficient="Pearson")
            else:
                score = ContingencySimilarity.compute(x[[a, b]].copy(), z[[a, b]].copy(),
                                                      continuous_column_names=[c for c in (a, b) if c in numeric],
                                                      num_discrete_bins=int(spec["bins"]))
            per_pair[f"{a}|{b}"] = None if score != score else float(score)
        except Exception:  # noqa: BLE001 - SDMetrics refuses a constant column: no score, as in its report
            per_pair[f"{a}|{b}"] = None
    print(json.dumps({"columns": per_column, "pairs": per_pair, "seconds": time.time() - start,
                      "cpu_seconds": time.process_time() - cpu}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
