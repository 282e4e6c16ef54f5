"""Anonymize one table with ANJANA and write each release as a CSV, printing one JSON line.

Runs inside ANJANA's own virtual environment (made by ``bench_anjana.py``), never in ppdm's:
``python _anjana_peer.py SPEC.json``. The spec names the CSV table (every column read as text),
the quasi-identifiers, the sensitive attribute, the hierarchies (per key, one list of labels per
level, level 0 the values themselves, row i of every level the same original value), the
suppression limit in percent and the jobs: ``{"name", "k", "l", "t"}``, ``l`` and ``t`` null
when not asked. A column ``_row`` (x's row number, not a key) comes back in every release, so the
records ANJANA deleted are known. For each job: the seconds ANJANA's call took and whether it
gave a release (it prints and returns an empty table when it cannot).
"""

from __future__ import annotations

import json
import sys
import time


def main(spec_path: str) -> int:
    spec = json.loads(open(spec_path, encoding="utf-8").read())
    import pandas as pd
    from anjana.anonymity import k_anonymity, l_diversity, t_closeness

    df = pd.read_csv(spec["table"], dtype=str, keep_default_na=False)
    keys, sens, supp = spec["qi"], spec["sensitive"], float(spec["supp_level"])
    out: dict = {"version": _version(), "jobs": {}}
    for job in spec["jobs"]:
        # ANJANA turns the levels into Series in place: every job gets its own copy
        hier = {c: {i: list(level) for i, level in enumerate(levels)} for c, levels in spec["hierarchies"].items()}
        start = time.perf_counter()
        if job.get("l") is not None:
            z = l_diversity(df, [], keys, sens, int(job["k"]), int(job["l"]), supp, hier)
        elif job.get("t") is not None:
            z = t_closeness(df, [], keys, sens, int(job["k"]), float(job["t"]), supp, hier)
        else:
            z = k_anonymity(df, [], keys, int(job["k"]), supp, hier)
        seconds = time.perf_counter() - start
        path = f"{spec['out']}/{job['name']}.csv"
        if len(z):
            z[["_row", *keys]].to_csv(path, index=False)
        out["jobs"][job["name"]] = {"seconds": seconds, "released": bool(len(z)), "path": path}
    print(json.dumps(out))
    return 0


def _version() -> str:
    from importlib.metadata import version

    return version("anjana")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
