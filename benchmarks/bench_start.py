"""Benchmark: what ``ppdm anonymize`` adds to the technique itself, beside ANJANA's whole process.

**Job** (issue #32, fast start): adult's complete records (30 162) with the keys age, education,
marital status, race, sex and native country and the class income, as a CSV file (the table of
``bench_anjana.py``); generalisation to k = 5 on the keys with at most 5 % of the records
suppressed, the job of that benchmark's first row.

**ppdm.** ``ppdm anonymize x.csv --class income --method generalize`` in a fresh interpreter,
wall time, best of the repeats after one run that warms the caches. Beside it, a fresh interpreter runs the same steps through the
library and times each: importing ``ppdm.anonymize`` (scikit-learn's estimator base among it),
reading the table, the release (``ppdm.experiments.release.release``: the technique and the
release check) and writing the release with its provenance and private log. The **overhead**
is the command's wall time less the release's: interpreter start, imports, reading and
writing. **Goal**: at most 0.5 s.

**Floors.** Beside it, the least any command built on pandas can take on the job: a fresh
interpreter that imports pandas, reads x.csv with ``pandas.read_csv`` and writes it back; and the
same with ``sklearn.base`` imported too, the least a command whose techniques are scikit-learn
estimators can take. The overhead beyond the second floor is what ppdm's own code adds.

**ANJANA.** Its whole process on the same job (``_anjana_peer.py`` in its own environment, the
hierarchies of ``bench_anjana.py``), wall time, and the seconds of its ``k_anonymity`` call
inside it.

``python benchmarks/run.py start`` prints the rows and writes them to ``benchmarks/start_adult.md``;
``--quick`` runs one repeat without ANJANA and writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "start_adult.md"
KEYS = ["age", "education", "marital_status", "race", "sex", "native_country"]
GOAL = 0.5

#: the library's steps, timed one by one in a fresh interpreter (printed as one JSON line)
STAGES = r"""
import json, sys, time, warnings
t0 = time.perf_counter()
import ppdm.anonymize
from ppdm.anonymize.registry import make_technique
from ppdm.experiments.release import ReleaseOptions, release, save_release
t1 = time.perf_counter()
from ppdm.data import Schema
from ppdm.data.io import read_table
x = read_table(sys.argv[3])
schema = Schema.infer(x, "income")
t2 = time.perf_counter()
tech = make_technique("generalize", class_column="income", schema=schema, random_state=None,
                      params={"keys": sys.argv[2].split(","), "k": 5, "suppression_limit": 0.05})
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    rel = release(x, tech, ReleaseOptions(), schema=schema)
t3 = time.perf_counter()
save_release(rel, sys.argv[1])
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "read": t2 - t1, "release": t3 - t2, "write": t4 - t3}))
"""


def _env() -> dict[str, str]:
    # an installed package keeps its compiled bytecode: a machine that forbids writing it would
    # count compiling ppdm's sources on every start
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _process(args: list[str]) -> float:
    """Wall seconds of a fresh interpreter running ``args`` (after ``python``)."""
    t = time.perf_counter()
    subprocess.run([sys.executable, *args], env=_env(), capture_output=True, check=True)
    return time.perf_counter() - t


def _cli(src: Path, out: Path) -> float:
    return _process(["-m", "ppdm.cli", "anonymize", str(src), "--class", "income", "--method", "generalize",
                     "--param", f"keys={','.join(KEYS)}", "--param", "k=5", "--param", "suppression_limit=0.05",
                     "--out", str(out)])


#: the least any pandas-based command can take on the job: a fresh interpreter that imports pandas,
#: reads the CSV and writes it back; with ``sklearn.base`` also imported, the least a command
#: whose techniques are scikit-learn estimators can take
FLOOR = "import sys, pandas as pd\n{extra}pd.read_csv(sys.argv[1]).to_csv(sys.argv[2], index=False)\n"


def _floor(src: Path, out: Path, extra: str = "") -> float:
    return _process(["-c", FLOOR.format(extra=extra), str(src), str(out)])


def _stages(src: Path, out: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", STAGES, str(out), ",".join(KEYS), str(src)], env=_env(),
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _anjana(tmp: Path, x: Any, schema: Any) -> tuple[float | None, float | None, str]:
    """ANJANA's whole process on the job and the seconds of its call inside it; (None, None, why)
    when its environment cannot be made or ANJANA fails."""
    from benchmarks.bench_anjana import HERE, LIMIT, SENSITIVE, hierarchies, peer_python

    py, why = peer_python()
    if py is None:
        return None, None, why
    src = tmp / "anjana_x.csv"
    x[KEYS + [SENSITIVE]].astype(str).assign(_row=range(len(x))).to_csv(src, index=False)
    spec = tmp / "anjana.json"
    spec.write_text(json.dumps({"table": str(src), "qi": KEYS, "sensitive": SENSITIVE,
                                "hierarchies": hierarchies(x, schema), "supp_level": LIMIT * 100,
                                "jobs": [{"name": "k5", "k": 5, "l": None, "t": None}], "out": str(tmp)}))
    t = time.perf_counter()
    proc = subprocess.run([str(py), str(HERE / "_anjana_peer.py"), str(spec)], capture_output=True, text=True,
                          timeout=3600)
    whole = time.perf_counter() - t
    if proc.returncode != 0:
        return None, None, "ANJANA failed"
    inner = json.loads(proc.stdout.strip().splitlines()[-1])["jobs"]["k5"]["seconds"]
    return whole, float(inner), ""


def run(quick: bool) -> list[dict]:
    from benchmarks.bench_anjana import SENSITIVE, table

    repeats = 1 if quick else 3
    x, schema = table(False)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        src = tmp / "x.csv"
        x[KEYS + [SENSITIVE]].to_csv(src, index=False)
        _cli(src, tmp / "warm.csv")  # writes the bytecode caches and Numba's, as a first use does
        whole = min(_cli(src, tmp / f"cli{i}.csv") for i in range(repeats))
        runs = [_stages(src, tmp / f"lib{i}.csv") for i in range(repeats)]
        floor = min(_floor(src, tmp / f"floor{i}.csv") for i in range(repeats))
        floor_sk = min(_floor(src, tmp / f"floor_sk{i}.csv", "import sklearn.base\n") for i in range(repeats))
        stage = {k: min(r[k] for r in runs) for k in runs[0]}
        anjana, anjana_call, why = (None, None, "not run with --quick") if quick else _anjana(tmp, x, schema)
    overhead = whole - stage["release"]
    rows: list[dict] = [
        {"benchmark": "start: ppdm anonymize, generalize k=5 on adult's keys (whole process)", "seconds": whole},
        {"benchmark": "start: its release in the library (technique and release check)", "seconds": stage["release"]},
        {"benchmark": "start: overhead (whole process less the release)", "seconds": overhead, "goal": GOAL,
         "meets": "yes" if overhead <= GOAL else "no"},
        {"benchmark": "start: of which importing ppdm.anonymize (scikit-learn's base)", "seconds": stage["import"]},
        {"benchmark": "start: of which reading x.csv", "seconds": stage["read"]},
        {"benchmark": "start: of which writing z, its provenance and private log", "seconds": stage["write"]},
        {"benchmark": "start: floor of any pandas command (start, import pandas, read x.csv, write it)",
         "seconds": floor},
        {"benchmark": "start: floor with scikit-learn's estimator base imported as well", "seconds": floor_sk},
        {"benchmark": "start: overhead beyond that floor", "seconds": overhead - floor_sk},
    ]
    if anjana is not None:
        rows += [{"benchmark": "start: ANJANA k_anonymity on the same job (whole process)", "seconds": anjana},
                 {"benchmark": "start: ANJANA's k_anonymity call", "seconds": anjana_call},
                 {"benchmark": "start: ANJANA's overhead (whole process less its call)",
                  "seconds": anjana - anjana_call}]
    else:
        rows.append({"benchmark": "start: ANJANA (whole process)", "seconds": "-", "meets": f"not run: {why}"})
    if not quick:
        lines = ["| row | seconds | goal | meets |", "|---|---|---|---|"]
        lines += [f"| {r['benchmark'].removeprefix('start: ')} | "
                  + (f"{r['seconds']:.2f}" if isinstance(r["seconds"], float) else str(r["seconds"]))
                  + f" | {r.get('goal', '')} | {r.get('meets', '')} |" for r in rows]
        OUT.write_text("`python benchmarks/run.py start` (module docstring of `benchmarks/bench_start.py`), adult's "
                       f"{len(x)} complete records, keys {', '.join(KEYS)}, class income; best of {repeats} "
                       "runs after one that warms the caches.\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return rows
