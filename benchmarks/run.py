"""Run ppdm's benchmarks and print one table: ``python benchmarks/run.py [NAME ...]``.

Each ``bench_<name>.py`` module beside this file defines ``run(quick: bool) -> list[dict]``;
every dict is one row with at least ``benchmark``, ``seconds`` and, where there is one,
``goal`` (seconds or a ratio) and ``peak_rss_mb``. ``--quick`` uses small inputs (a smoke
run), the default uses the sizes the goals are stated for.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("names", nargs="*", help="benchmark modules to run (default: all)")
    ap.add_argument("--quick", action="store_true", help="small inputs, for a smoke run")
    args = ap.parse_args(argv)
    mods = sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(HERE)]) if m.name.startswith("bench_"))
    chosen = args.names or mods
    unknown = sorted(set(chosen) - set(mods))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; available: {mods}", file=sys.stderr)
        return 2
    rows: list[dict] = []
    for name in chosen:
        mod = importlib.import_module(f"benchmarks.bench_{name}")
        rows.extend(mod.run(quick=args.quick))
    # one readable table: the common columns, then every other key of a row as "key=value"
    main_cols = ["benchmark", "seconds", "goal", "peak_rss_mb"]
    table = Table(title="ppdm benchmarks" + (" (quick)" if args.quick else ""))
    for c in [*main_cols, "details"]:
        table.add_column(c, overflow="fold")
    for r in rows:
        details = ", ".join(f"{k}={_fmt(v)}" for k, v in r.items() if k not in main_cols)
        table.add_row(*[_fmt(r.get(c, "")) for c in main_cols], details)
    Console(width=max(140, Console().width)).print(table)
    return 0


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


if __name__ == "__main__":
    sys.exit(main())
