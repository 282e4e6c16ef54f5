"""Leaf intersections of a forest (paper 004 §3 steps 2–3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from forest_helpers import cart_trees, grid_table, schema_of, tables
from hypothesis import given, settings

from ppdm.errors import PPDMError
from ppdm.rules.core import Condition, Rule
from ppdm.trees.intersections import AttributeDomain, ForestIntersector, find_intersections


class HandTree:
    """A fixed tree given by its leaf rules, routing records by them."""

    classes_ = np.array(["C1", "C2"])

    def __init__(self, rules: dict[int, Rule]) -> None:
        self.rules = rules

    def leaf_rules(self) -> dict[int, Rule]:
        return self.rules

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        out = np.full(len(X), -1)
        for k, r in self.rules.items():
            out[r.mask(X)] = k
        return out


def _paper_example() -> tuple[pd.DataFrame, list[HandTree]]:
    # paper 004 §3: T1 leaf A > 5 ∧ B > 3 ∧ E > 9, T2 leaf A <= 8 ∧ B > 7
    t1 = HandTree({
        1: Rule((Condition("A", ">", 5), Condition("B", ">", 3), Condition("E", ">", 9)), "C1"),
        2: Rule((Condition("A", "<=", 5),), "C2"),
        3: Rule((Condition("A", ">", 5), Condition("B", "<=", 3)), "C2"),
        4: Rule((Condition("A", ">", 5), Condition("B", ">", 3), Condition("E", "<=", 9)), "C2"),
    })
    t2 = HandTree({
        1: Rule((Condition("A", "<=", 8), Condition("B", ">", 7)), "C1"),
        2: Rule((Condition("A", "<=", 8), Condition("B", "<=", 7), Condition("G", "=", "u")), "C2"),
        3: Rule((Condition("A", "<=", 8), Condition("B", "<=", 7), Condition("G", "!=", "u")), "C2"),
        4: Rule((Condition("A", ">", 8),), "C1"),
    })
    df = pd.DataFrame({
        "A": [6, 7, 8, 2, 9, 3, 12],
        "B": [8, 9, 10, 1, 5, 2, 4],
        "E": [10, 11, 12, 0, 3, 1, 20],
        "G": ["u", "v", "w", "u", "v", "w", "u"],
    })
    return df, [t1, t2]


def test_paper_example_sub_domain():
    df, trees = _paper_example()
    inter = find_intersections(trees, df, ["A", "B", "E"], ["G"])
    # records 0..2 fall in (T1 L1, T2 L1): A ∈ (5, 8], B ∈ (7, max], E ∈ (9, max]
    lab = inter.labels
    assert lab[0] == lab[1] == lab[2]
    sd = inter.sub_domain(int(lab[0]))
    assert sd["A"] == (5.0, 8.0, False, True)  # whole numbers 6..8: the paper's A[R: 6, 8]
    assert sd["B"] == (7.0, 10.0, False, True)
    assert sd["E"] == (9.0, 20.0, False, True)
    assert sd["G"] == ["u", "v", "w"]
    assert list(inter.keys[lab[0]]) == [1, 1]
    assert inter.sizes[lab[0]] == 3
    # record 3: A <= 5 (T1 L2) and A <= 8, B <= 7, G = u (T2 L2)
    sd3 = inter.sub_domain(int(lab[3]))
    assert sd3["A"] == (2.0, 5.0, True, True)  # global min 2 closed, rule bound 5 closed
    assert sd3["G"] == ["u"]
    assert sd3["E"] == (0.0, 20.0, True, True)  # not tested: global domain
    # record 5: T2 L3 (G != u)
    assert inter.sub_domain(int(lab[5]))["G"] == ["v", "w"]
    tested = dict(zip(inter.attributes, inter.tested[lab[5]], strict=True))
    assert tested == {"A": True, "B": True, "E": False, "G": True}
    assert inter.n_intersections == len(set(map(tuple, inter.keys)))
    assert inter.sizes.sum() == len(df)
    assert inter.contains(df).all()


def test_set_conditions_and_open_upper_bounds():
    tree = HandTree({
        0: Rule((Condition("G", "in", {"u", "v", "zz"}), Condition("A", "<", 4), Condition("A", ">=", 1)), "C1"),
        1: Rule((Condition("G", "not in", {"u", "v"}),), "C2"),
        2: Rule((Condition("G", "in", {"u", "v"}), Condition("A", ">=", 4)), "C2"),
        3: Rule((Condition("G", "in", {"u", "v"}), Condition("A", "<", 1)), "C2"),
    })
    df = pd.DataFrame({"A": [0.0, 1.0, 2.0, 5.0, 3.0], "G": ["u", "v", "w", "u", "x"]})
    inter = find_intersections([tree], df, ["A"], ["G"])
    sd = inter.sub_domain(int(inter.labels[1]))
    assert sd["A"] == (1.0, 4.0, True, False)
    assert sd["G"] == ["u", "v"]
    assert inter.sub_domain(int(inter.labels[2]))["G"] == ["w", "x"]
    assert inter.contains(df).all()
    moved = df.assign(A=[0.0, 4.0, 2.0, 5.0, 3.0])  # record 1 now sits on the open end
    assert list(inter.contains(moved)) == [True, False, True, True, True]


def test_unknown_attribute_and_leaf_id_raise():
    bad = HandTree({0: Rule((Condition("Z", "<=", 1),), "C1"), 1: Rule((Condition("Z", ">", 1),), "C2")})
    df = pd.DataFrame({"A": [1.0, 2.0], "Z": [0.0, 3.0]})
    with pytest.raises(PPDMError, match="'Z'"):
        ForestIntersector([bad], AttributeDomain.from_frame(df, ["A"], []))
    tree = HandTree({0: Rule((), "C1")})
    tree.apply = lambda X: np.full(len(X), 7)  # type: ignore[method-assign]
    with pytest.raises(PPDMError, match="leaf id 7"):
        find_intersections([tree], df, ["A"], [])


def test_many_trees_use_row_unique_fallback():
    # a leaf-count product beyond 2**62 cannot be packed into one integer key
    df = grid_table(3, 60, 2, 1, 1)
    trees = cart_trees(df, 4, 2, 2)
    many = find_intersections(trees * 40, df, ["f0", "f1", "i0"], ["c0"])
    few = find_intersections(trees, df, ["f0", "f1", "i0"], ["c0"])
    assert many.n_intersections == few.n_intersections
    pairs = {(a, b) for a, b in zip(many.labels, few.labels, strict=True)}
    assert len(pairs) == few.n_intersections  # the same partition
    for name in ("lower", "upper", "lower_closed", "upper_closed"):
        assert np.array_equal(getattr(many, name)[many.labels], getattr(few, name)[few.labels])


@settings(max_examples=200)
@given(tables())
def test_intersections_partition_and_contain_records(case):
    df, trees = case
    sch = schema_of(df)
    inter = find_intersections(trees, df, sch.numeric, sch.categorical)
    # partition: every record has exactly one intersection, sizes add up, keys distinct
    assert inter.labels.shape == (len(df),)
    assert inter.sizes.sum() == len(df)
    assert np.array_equal(np.bincount(inter.labels, minlength=inter.n_intersections), inter.sizes)
    assert (inter.sizes > 0).all()
    assert len({tuple(k) for k in inter.keys}) == inter.n_intersections
    # records with the same leaf in every tree share an intersection, and only they do
    leaves = np.stack([t.apply(df) for t in trees], axis=1)
    assert np.array_equal(inter.keys[inter.labels], leaves)
    # every record lies inside its intersection's sub-domains ...
    assert inter.contains(df).all()
    # ... which lie inside the rule of each of its leaves: the box corners satisfy the rules
    for t, tree in enumerate(trees):
        rules = tree.leaf_rules()
        for i in range(inter.n_intersections):
            rule = rules[int(inter.keys[i, t])]
            sd = inter.sub_domain(i)
            for cond in rule.conditions:
                if cond.attribute in sch.numeric:
                    lo, hi, lc, hc = sd[cond.attribute]
                    inside = [x for x, ok in ((lo, lc), (hi, hc)) if ok]
                    assert cond.mask(np.array(inside)).all()
                else:
                    assert cond.mask(pd.Series(sd[cond.attribute], dtype=object)).all()
            tested = set(rule.attributes)
            for a in tested:
                assert inter.tested[i, inter.attributes.index(a)]
