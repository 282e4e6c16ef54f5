"""SysFor against the Weka SysFor package of its authors' group (``../shared/oracles/sysfor``).

Every one of the 12 oracle forests must come out tree for tree the same: the same tests in
the same order, thresholds equal by value (forced split points exactly, J48 thresholds at
the six decimals J48 prints), and the same leaves (class, weight and errors). The
reference has no minimum gain ratio, so the comparison runs at ``min_gain_ratio=0``; the
paper-004 preset (0.01) must give the same forests on the paper-004 runs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ppdm.datasets import load
from ppdm.trees import SysForClassifier
from ppdm.trees._c45_tree import SMALL, Node, num_incorrect
from ppdm.trees.c45 import C45Classifier, _leaf_prediction, weka_number

RUNS = [f"{d}_{s}" for d in ("wine", "wbc", "credit", "cmc", "abalone", "banknote") for s in ("paper004", "N10")]


@dataclass(frozen=True)
class Line:
    """One printed test of a tree: depth, attribute, operator, value, and the leaf below it
    (class, weight, errors) when the branch ends in a leaf."""

    depth: int
    attr: str
    op: str
    value: str
    leaf: tuple[str, float, float] | None


_LINE = re.compile(r"^(?P<bars>(\|   )*)(?P<attr>\S+) (?P<op><=|>|=) (?P<value>[^:]+?)(: (?P<leaf>.*))?$")
_LEAF = re.compile(r"^(?P<cls>\S+) (\{[^}]*\} )?\((?P<w>[-\d.]+)(/(?P<e>[-\d.]+))?\)$")


def _label(text: str) -> str:
    # Weka's CSV loader read integer labels as 2.0: compare labels by value
    try:
        return repr(float(text))
    except ValueError:
        return text


def parse_forest(text: str) -> list[list[Line]]:
    """The trees of a Weka SysFor printout as lists of :class:`Line`."""
    body = text.split("=== Classifier model (full training set) ===", 1)[1].split("Time taken")[0]
    trees = []
    for chunk in re.split(r"\n?Tree \d+: ?\n", body)[1:]:
        trees.append([_parse(line) for line in chunk.strip("\n").splitlines() if line.strip()])
    return trees


def _parse(line: str) -> Line:
    m = _LINE.match(line.rstrip())
    assert m, f"unparsed line {line!r}"
    leaf = None
    if m["leaf"] is not None:
        lm = _LEAF.match(m["leaf"])
        assert lm, f"unparsed leaf {m['leaf']!r}"
        leaf = (_label(lm["cls"]), float(lm["w"]), float(lm["e"] or 0.0))
    return Line(len(m["bars"]) // 4, m["attr"], m["op"], m["value"].strip(), leaf)


def our_lines(est: C45Classifier) -> list[tuple[int, str, str, float | str, tuple[str, float, float] | None]]:
    """The same view of a fitted tree, thresholds as stored (not rounded)."""
    cols, cats = est.encoding_.columns, est.encoding_.categories
    out: list[tuple[int, str, str, float | str, tuple[str, float, float] | None]] = []

    def walk(node: Node, depth: int) -> None:
        name = cols[node.attr]
        for j, child in enumerate(node.children):
            if node.nominal:
                op, value = "=", str(cats[name][j])
            else:
                op, value = ("<=" if j == 0 else ">"), float(node.threshold)
            leaf = None
            if child.is_leaf:
                tot = float(child.dist.sum())
                wrong = num_incorrect(child.dist) if abs(tot) >= SMALL else 0.0
                leaf = (_label(str(est.classes_[_leaf_prediction(child, node)])), tot, wrong)
            out.append((depth, name, op, value, leaf))
            if not child.is_leaf:
                walk(child, depth + 1)

    walk(est.tree_, 0)
    return out


def same_value(ours: float | str, ref: str) -> bool:
    """A threshold by value: exact when Weka printed every digit (SysFor's own midpoints),
    else equal at the six decimals J48 prints; categorical values by value."""
    if isinstance(ours, str):
        return _label(ours) == _label(ref)
    decimals = len(ref.split(".")[1]) if "." in ref else 0
    if decimals > 6:
        return ours == float(ref)
    return weka_number(ours) == weka_number(float(ref))


def compare(forest: SysForClassifier, ref: list[list[Line]]) -> None:
    assert len(forest.estimators_) == len(ref)
    for t, (est, lines) in enumerate(zip(forest.estimators_, ref, strict=True), start=1):
        ours = our_lines(est)
        assert len(ours) == len(lines), f"tree {t}: {len(ours)} printed tests, the reference has {len(lines)}"
        for i, ((depth, attr, op, value, leaf), r) in enumerate(zip(ours, lines, strict=True)):
            where = f"tree {t}, line {i + 1}"
            assert (depth, attr, op) == (r.depth, r.attr, r.op), where
            assert same_value(value, r.value), f"{where}: {attr} {op} {value!r} against {r.value}"
            assert (leaf is None) == (r.leaf is None), where
            if leaf is not None and r.leaf is not None:
                assert leaf[0] == r.leaf[0], f"{where}: leaf class {leaf[0]} against {r.leaf[0]}"
                assert leaf[1] == pytest.approx(r.leaf[1], abs=0.005), where
                assert leaf[2] == pytest.approx(r.leaf[2], abs=0.005), where


def fit_run(shared: Path, key: str, **overrides: object) -> SysForClassifier:
    spec = json.loads((shared / "oracles/sysfor/summary.json").read_text())[key]
    df, schema = load(spec["dataset"], missing="drop")
    assert list(df.columns) == spec["columns"] and len(df) == spec["rows"]
    assert sorted(schema.categorical) == sorted(spec["nominal"])
    cls = spec["class_column"]
    o = spec["options"]
    params = dict(n_trees=o["n_trees"], min_leaf=o["min_leaf"], goodness=o["goodness"],
                  separation=o["separation"], confidence=o["confidence"], min_gain_ratio=0.0)
    params.update(overrides)
    return SysForClassifier(schema=schema, **params).fit(df.drop(columns=cls), df[cls])


@pytest.mark.parametrize("key", RUNS)
def test_sysfor_parity(shared_dir: Path, key: str) -> None:
    ref = parse_forest((shared_dir / f"oracles/sysfor/{key}.txt").read_text())
    compare(fit_run(shared_dir, key), ref)


@pytest.mark.parametrize("name,min_leaf", [("wine", 10), ("credit", 30), ("abalone", 180)])
def test_paper_004_preset_gives_the_reference_forest(shared_dir: Path, name: str, min_leaf: int) -> None:
    df, schema = load(name, missing="drop")
    cls = schema.class_column
    forest = SysForClassifier.paper_004(min_leaf=min_leaf, schema=schema).fit(df.drop(columns=cls), df[cls])
    compare(forest, parse_forest((shared_dir / f"oracles/sysfor/{name}_paper004.txt").read_text()))


def test_reference_departures_are_what_the_oracle_needs(shared_dir: Path) -> None:
    """Each reference behaviour the defaults follow changes a forest when switched off:
    the empty-value gain picks a13 under a9 = t (credit, tree 5), exact relocation gives
    0.171 (abalone, tree 1), the first class labels the empty branch (abalone, tree 9)."""
    credit = parse_forest((shared_dir / "oracles/sysfor/credit_N10.txt").read_text())
    with pytest.raises(AssertionError):
        compare(fit_run(shared_dir, "credit_N10", empty_value_gain="standard"), credit)
    abalone = parse_forest((shared_dir / "oracles/sysfor/abalone_N10.txt").read_text())
    with pytest.raises(AssertionError, match="tree 1"):
        compare(fit_run(shared_dir, "abalone_N10", threshold_tolerance=1e-6), abalone)
    with pytest.raises(AssertionError, match="tree 9.*leaf class"):
        compare(fit_run(shared_dir, "abalone_N10", empty_leaf_class="parent"), abalone)


def test_parser_reads_forced_and_j48_leaves() -> None:
    assert _parse("|   a13 = p: + {+,0;-,0;} (0/0)") == Line(1, "a13", "=", "p", ("+", 0.0, 0.0))
    assert _parse("proline > 987.5: 1.0 {1.0,44;2.0,0;3.0,0;} (44/0)") == Line(0, "proline", ">", "987.5",
                                                                             ("1.0", 44.0, 0.0))
    assert _parse("|   |   hue > 0.82: 2.0 (12.0/5.0)").leaf == ("2.0", 12.0, 5.0)
    assert same_value(1.7438500000000001, "1.7438500000000001")
    assert same_value(0.171, "0.171") and not same_value(0.1715, "0.171")
