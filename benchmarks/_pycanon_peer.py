"""Compute pyCANON's privacy-model values of one table and print them as one JSON line.

Runs inside pyCANON's own virtual environment (made by ``bench_privacy_models.py``), never in
ppdm's: ``python _pycanon_peer.py SPEC.json``, the spec naming the CSV table, its
quasi-identifiers and the sensitive attributes. For each sensitive attribute, alone: k, the
(α,k) α, distinct and entropy l, recursive (c,l), t, basic and enhanced β and δ, each with
its seconds.
"""

from __future__ import annotations

import json
import sys
import time


def main(spec_path: str) -> int:
    spec = json.loads(open(spec_path, encoding="utf-8").read())
    import pandas as pd
    from pycanon import anonymity as a

    df = pd.read_csv(spec["table"], dtype={c: str for c in spec["text"]})
    qi = spec["qi"]
    out: dict = {"version": _version(), "k": int(a.k_anonymity(df, qi)), "by_sensitive": {}}
    for s in spec["sensitive"]:
        row: dict = {}
        for name, fn in (("alpha_k", lambda s=s: a.alpha_k_anonymity(df, qi, [s])),
                         ("l", lambda s=s: a.l_diversity(df, qi, [s])),
                         ("entropy_l", lambda s=s: a.entropy_l_diversity(df, qi, [s])),
                         ("c_l", lambda s=s: a.recursive_c_l_diversity(df, qi, [s])),
                         ("t", lambda s=s: a.t_closeness(df, qi, [s])),
                         ("basic_beta", lambda s=s: a.basic_beta_likeness(df, qi, [s])),
                         ("enhanced_beta", lambda s=s: a.enhanced_beta_likeness(df, qi, [s])),
                         ("delta", lambda s=s: a.delta_disclosure(df, qi, [s]))):
            start = time.perf_counter()
            v = fn()
            row[name] = [float(x) for x in v] if isinstance(v, tuple) else float(v)
            row[name + "_s"] = time.perf_counter() - start
        out["by_sensitive"][s] = row
    print(json.dumps(out))
    return 0


def _version() -> str:
    from importlib.metadata import version

    return version("pycanon")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
