"""Fit one smartnoise-synth synthesizer (MST or AIM) and write its synthetic table.

Runs inside the peer's own virtual environment (``/work/venvs/smartnoise``, see
``bench_dpcube.py``), never in ppdm's: ``python _smartnoise_peer.py SPEC.json`` where the
spec names the training table, the output, ε, the method, the seed, the number of records
to sample and every column's declared domain. Continuous columns are cut into ``bins``
equal-width bins over their declared bounds (smartnoise's ``BinTransformer`` with given
bounds spends no budget) and categorical ones label-encoded over their declared values, so
the peer sees the same public domain as DPCube. Prints one JSON line: seconds (wall and
CPU) and the peak resident memory of this process.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import warnings


def main(spec_path: str) -> int:
    spec = json.loads(open(spec_path, encoding="utf-8").read())
    import numpy as np
    import pandas as pd
    from snsynth import Synthesizer
    from snsynth.transform import BinTransformer, LabelTransformer, TableTransformer

    warnings.simplefilter("ignore")
    np.random.seed(int(spec["seed"]))  # noqa: NPY002 - the peer draws from NumPy's global generator
    x = pd.read_csv(spec["train"])
    transformers = []
    for col in spec["columns"]:
        if col["kind"] == "numeric":
            transformers.append(BinTransformer(bins=int(spec["bins"]), lower=float(col["lo"]), upper=float(col["hi"])))
            x[col["name"]] = x[col["name"]].clip(col["lo"], col["hi"]).astype(float)
        else:
            transformers.append(LabelTransformer(nullable=False))
            # a value outside the declared set would otherwise widen the domain from the data
            x = x[x[col["name"]].isin(col["values"])]
    x = x[[c["name"] for c in spec["columns"]]]
    start, cpu = time.time(), time.process_time()
    tt = TableTransformer(transformers)
    synth = Synthesizer.create(spec["method"], epsilon=float(spec["epsilon"]), verbose=False)
    synth.fit(x, transformer=tt, preprocessor_eps=0.0)
    z = synth.sample(int(spec["rows"]))
    seconds, cpu_seconds = time.time() - start, time.process_time() - cpu
    z.to_csv(spec["out"], index=False)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_mb": rss}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
