"""Start-up time of the command line: ``ppdm --help`` in a fresh interpreter.

Goal: 0.5 s. The command modules import pandas, NumPy and the rest of ppdm inside their
functions, so help loads Typer only. Beside it, the same interpreter importing Typer alone
and importing pandas, measured in the same run (best of the repeats), show what the
floor is and what a single eager import of pandas would add.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _best(args: list[str], repeats: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, capture_output=True, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def run(quick: bool) -> list[dict]:
    repeats = 3 if quick else 7
    help_s = _best(["-m", "ppdm.cli", "--help"], repeats)
    typer_s = _best(["-c", "import typer"], repeats)
    pandas_s = _best(["-c", "import pandas"], repeats)
    return [
        {"benchmark": "cli: ppdm --help", "seconds": help_s, "goal": 0.5, "repeats": repeats},
        {"benchmark": "cli: python -c 'import typer' (floor)", "seconds": typer_s, "ratio_help": help_s / typer_s},
        {"benchmark": "cli: python -c 'import pandas' (avoided)", "seconds": pandas_s},
    ]
