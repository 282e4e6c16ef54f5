"""The J48 parity table of docs/trees.md: C4.5 here against Weka J48 3.6.14 on 12 runs.

``python -m ppdm.experiments.j48_parity [--shared PATH]`` prints a Markdown table with
leaves, tree size, training accuracy and Weka-style 10-fold accuracy (seed 1), ours beside
J48's (the oracle files in ``shared/oracles/j48``), and whether the printed trees agree.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from ppdm.datasets import load
from ppdm.trees.c45 import C45Classifier, j48_summary
from ppdm.trees.evaluation import weka_cross_val_accuracy

DEFAULT_SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def _body(text: str) -> str:
    body = text.split("------------------\n\n", 1)[1].split("\n\nNumber of Leaves")[0]
    return re.sub(r"(?<![\d.])(\d+)\.0\b", r"\1", body.strip("\n"))


def parity_rows(shared: Path) -> list[dict]:
    summary = json.loads((shared / "oracles/j48/summary.json").read_text())
    rows = []
    for key, ref in summary.items():
        name, m = key.rsplit("_M", 1)
        df, schema = load(name, missing="drop")
        cls = schema.class_column
        X, y = df.drop(columns=cls), df[cls]
        start = time.perf_counter()
        tree = C45Classifier(min_leaf=int(m), schema=schema).fit(X, y)
        seconds = time.perf_counter() - start
        ours = j48_summary(tree, X, y)
        cv = weka_cross_val_accuracy(lambda m=int(m): C45Classifier(min_leaf=m), X, y, schema.categorical)  # type: ignore[misc]  # mypy cannot type a lambda's default
        same = _body(tree.export_text()) == _body((shared / f"oracles/j48/{key}.txt").read_text())
        rows.append({
            "run": f"{name} -M {m}", "leaves": (ours["leaves"], ref["leaves"]), "size": (ours["size"], ref["size"]),
            "train": (ours["train_accuracy_pct"], ref["train_accuracy_pct"]), "cv": (cv, ref["cv_accuracy_pct"]),
            "same_text": same, "seconds": seconds,
        })
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["| run | leaves (ours / J48) | size (ours / J48) | train acc % (ours / J48) | 10-fold acc % (ours / J48) "
           "| printed tree identical | our build s |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(
            f"| {r['run']} | {r['leaves'][0]} / {r['leaves'][1]} | {r['size'][0]} / {r['size'][1]} "
            f"| {r['train'][0]:.4f} / {r['train'][1]:.4f} | {r['cv'][0]:.4f} / {r['cv'][1]:.4f} "
            f"| {'yes' if r['same_text'] else 'no'} | {r['seconds']:.2f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="the shared folder holding oracles/j48")
    args = ap.parse_args(argv)
    print(markdown(parity_rows(args.shared)))


if __name__ == "__main__":
    main()
