"""EDUDS and EDUSC (paper 004 §4–§5): hand-built trees, a CART wrapper, invariants."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, SchemaError
from ppdm.experiments.evaluation import resolve_measures
from ppdm.metrics.base import EvaluationContext
from ppdm.metrics.structure import eduds, edusc, split_score, trees_of
from ppdm.rules.core import Condition, Rule
from ppdm.trees.base import TreeModel


# ------------------------------------------------------------------ test trees
class HandTree:
    """A fixed tree given as its leaves: leaf id → Rule; records go to the first leaf they satisfy."""

    def __init__(self, leaves: dict[int, Rule]):
        self.leaves = leaves
        self.classes_ = np.array(sorted({r.prediction for r in leaves.values()}))

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        out = np.full(len(X), -1)
        for leaf, rule in self.leaves.items():
            out[(out < 0) & rule.mask(X)] = leaf
        return out

    def leaf_rules(self) -> dict[int, Rule]:
        return dict(self.leaves)


def stump(attr: str, t: float) -> HandTree:
    return HandTree({1: Rule((Condition(attr, "<=", t),), "A"), 2: Rule((Condition(attr, ">", t),), "B")})


class CartTree:
    """scikit-learn's CART on numeric attributes, exposing ppdm's TreeModel protocol."""

    def __init__(self, max_depth: int = 3, random_state: int = 0, max_features=None):
        self.max_depth = max_depth
        self.random_state = random_state
        self.max_features = max_features

    def fit(self, X: pd.DataFrame, y) -> CartTree:
        self.columns_ = list(X.columns)
        self.model_ = DecisionTreeClassifier(max_depth=self.max_depth, random_state=self.random_state,
                                             max_features=self.max_features).fit(X.to_numpy(float), np.asarray(y))
        self.classes_ = self.model_.classes_
        return self

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        return self.model_.apply(X[self.columns_].to_numpy(float))

    def leaf_rules(self) -> dict[int, Rule]:
        t = self.model_.tree_
        out: dict[int, Rule] = {}

        def walk(node: int, conds: tuple[Condition, ...]) -> None:
            if t.children_left[node] < 0:
                counts = t.value[node][0] * t.n_node_samples[node] / max(t.value[node][0].sum(), 1e-300)
                cc = {c: float(v) for c, v in zip(self.classes_, counts, strict=True)}
                out[node] = Rule(conds, self.classes_[int(np.argmax(counts))], cc)
                return
            name, thr = self.columns_[t.feature[node]], float(t.threshold[node])
            walk(t.children_left[node], (*conds, Condition(name, "<=", thr)))
            walk(t.children_right[node], (*conds, Condition(name, ">", thr)))

        walk(0, ())
        return out


class CartForest:
    """A few CART trees on random attribute subsets, exposed as ``trees_``."""

    def __init__(self, n_trees: int = 3, max_depth: int = 3):
        self.n_trees = n_trees
        self.max_depth = max_depth

    def fit(self, X: pd.DataFrame, y) -> CartForest:
        self.trees_ = [CartTree(self.max_depth, random_state=s, max_features=0.6).fit(X, y)
                       for s in range(self.n_trees)]
        self.classes_ = self.trees_[0].classes_
        return self


def test_wrappers_satisfy_the_protocol():
    x = pd.DataFrame({"a": [1.0, 2, 3, 4], "y": list("AABB")})
    tree = CartTree().fit(x[["a"]], x["y"])
    assert isinstance(tree, TreeModel)
    assert isinstance(stump("a", 2), TreeModel)
    assert len(trees_of(CartForest(2).fit(x[["a"]], x["y"]))) == 2
    with pytest.raises(ParameterError, match="not a tree model"):
        trees_of(object())


# ----------------------------------------------------------------------- EDUDS
def test_eduds_spec_example():
    # spec §5.2: domain [0, 10]; F_O splits a ≤ 5, F_P splits a ≤ 4
    x = pd.DataFrame({"a": [3.0, 4.5], "y": ["A", "B"]})
    r = eduds(x, x, class_column="y", trees_x=stump("a", 5), trees_z=stump("a", 4), domain={"a": (0, 10)})
    assert r.value == pytest.approx(0.5)
    assert r.per_attribute.loc[0, "mean_similarity"] == pytest.approx(0.5)
    # record-wise: [0,5] vs [0,4] → 0.9 and [0,5] vs (4,10] → 0.1


def test_eduds_forest_intersection_and_categorical_rule():
    x = pd.DataFrame({"a": [2.0, 8.0], "g": ["u", "v"], "y": ["A", "B"]})
    # forest of x: a ≤ 5 and a ≤ 3 → record a=2 lies in [0, 3]; record a=8 in (5, 10]
    fo = [stump("a", 5), stump("a", 3)]
    # forest of z: a ≤ 4, and a tree testing g
    g_tree = HandTree({1: Rule((Condition("g", "=", "u"),), "A"), 2: Rule((Condition("g", "!=", "u"),), "B")})
    fp = [stump("a", 4), g_tree]
    r = eduds(x, x, class_column="y", trees_x=fo, trees_z=fp, domain={"a": (0, 10)})
    # record 1: a: [0,3] vs [0,4] → Diff 0.1; g tested by z only → Diff 1 → (0.9 + 0) / 2
    # record 2: a: (5,10] vs (4,10] → Diff 0.1; g → Diff 1 → 0.45
    assert r.value == pytest.approx(0.45)
    assert r.n_trees_original == 2 and len(r.per_tree) == 2
    # per tree: tree 0 pair (a≤5 vs a≤4): both records Diff 0.1 → 0.9
    assert r.per_tree.loc[0, "similarity"] == pytest.approx(0.9)
    cat = r.per_attribute.set_index("attribute")
    assert cat.loc["g", "mean_similarity"] == pytest.approx(0.0)
    assert cat.loc["a", "records_counted"] == 2


def test_eduds_untested_and_domain_options():
    x = pd.DataFrame({"a": [3.0, 4.5], "b": [0.0, 1.0], "y": ["A", "B"]})
    base = eduds(x, x, class_column="y", trees_x=stump("a", 5), trees_z=stump("a", 4),
                 domain={"a": (0, 10), "b": (0, 1)})
    assert base.value == pytest.approx(0.5)  # b is tested by neither: discounted
    with_b = eduds(x, x, class_column="y", trees_x=stump("a", 5), trees_z=stump("a", 4),
                   domain={"a": (0, 10), "b": (0, 1)}, count_untested=True)
    assert with_b.value == pytest.approx((0.9 + 1) / 2 / 2 + (0.1 + 1) / 2 / 2)
    seg = eduds(x, x, class_column="y", trees_x=stump("a", 5), trees_z=stump("a", 4), domain="segment")
    # segment widths from the original forest over the original domain [3, 4.5]: both records in [3, 4.5]
    assert 0.0 <= seg.value <= 1.0
    none = eduds(x, x, class_column="y", trees_x=HandTree({0: Rule((), "A")}), trees_z=HandTree({0: Rule((), "A")}))
    assert none.skipped == 2
    assert np.isnan(none.value)
    assert eduds(x, x, class_column="y", trees_x=HandTree({0: Rule((), "A")}), trees_z=HandTree({0: Rule((), "A")}),
                 empty_records="one").value == 1.0


# ---------------------------------------------- EDUDS by hand, one branch of eq. 1–3 each
def _eduds_tables() -> tuple[pd.DataFrame, pd.DataFrame, HandTree]:
    # original a spans [0, 10]; the release moves the last record to 12 (union domain [0, 12])
    x = pd.DataFrame({"a": [0.0, 2, 6, 10], "g": list("uvuv"), "y": list("AABB")})
    z = x.assign(a=[0.0, 2, 6, 12])
    g_tree = HandTree({1: Rule((Condition("g", "=", "u"),), "A"), 2: Rule((Condition("g", "!=", "u"),), "B")})
    return x, z, g_tree


def test_eduds_by_hand_numeric_both_tested_and_the_domain_choice():
    x, z, g_tree = _eduds_tables()
    # eq. 1, both forests test a: a ≤ 5 against a ≤ 4. Records 0, 2: [0, 5] vs [0, 4]; records
    # 6, 10: (5, 10] vs (4, 10]. Diff = 1/10 for each over the original domain (default);
    # g is tested by the release's forest only: eq. 2 gives Diff 1. SDS = (0.9 + 0)/2.
    r = eduds(x, z, class_column="y", trees_x=stump("a", 5), trees_z=[stump("a", 4), g_tree])
    assert r.domain == "original" and r.value == pytest.approx(0.45, abs=1e-12)
    # over original ∪ perturbed, [0, 12]: Diff = 1/12 → (11/12 + 0)/2
    u = eduds(x, z, class_column="y", trees_x=stump("a", 5), trees_z=[stump("a", 4), g_tree], domain="union")
    assert u.value == pytest.approx(11 / 24, abs=1e-12)


def test_eduds_by_hand_categorical_tested_by_both_and_numeric_by_one():
    x, z, g_tree = _eduds_tables()
    # eq. 2: g tested by both forests → Diff 0; a as before → (0.9 + 1)/2
    both = eduds(x, z, class_column="y", trees_x=[stump("a", 5), g_tree], trees_z=[stump("a", 4), g_tree])
    assert both.value == pytest.approx(0.95, abs=1e-12)
    # eq. 1 with a tested by the original forest only: the release's region is the whole
    # domain [0, 10]; [0, 5] vs [0, 10] and (5, 10] vs [0, 10] both give Diff 5/10; g tested
    # by the release only (Diff 1): (0.5 + 0)/2
    one = eduds(x, z, class_column="y", trees_x=stump("a", 5), trees_z=g_tree)
    assert one.value == pytest.approx(0.25, abs=1e-12)
    pa = one.per_attribute.set_index("attribute")
    assert pa.loc["a", "mean_similarity"] == pytest.approx(0.5) and pa.loc["g", "mean_similarity"] == 0.0


def test_eduds_by_hand_threshold_outside_the_original_domain_is_clipped():
    x, z, _ = _eduds_tables()
    # the release's forest splits at 11 > max(original a) = 10: its region [0, 11] is clipped to
    # [0, 10]. Records 0, 2: [0, 5] vs [0, 10] → 5/10; records 6, 10: (5, 10] vs [0, 10] → 5/10.
    # Without clipping the first two would give (0 + 6)/10.
    r = eduds(x, z, class_column="y", trees_x=stump("a", 5), trees_z=stump("a", 11))
    assert r.value == pytest.approx(0.5, abs=1e-12)


def _data(n: int = 200, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    x = pd.DataFrame({"a": rng.normal(0, 1, n), "b": rng.uniform(0, 10, n), "c": rng.normal(5, 2, n)})
    x["y"] = np.where(x["a"] + 0.3 * x["b"] > 1.5, "hi", "lo")
    z = x.copy()
    z[["a", "b", "c"]] = z[["a", "b", "c"]] + rng.normal(0, 1.0, (n, 3))
    return x, z


def test_eduds_and_edusc_of_x_against_itself_are_one():
    x, _ = _data()
    assert eduds(x, x, class_column="y", make_tree=lambda: CartTree(3)).value == pytest.approx(1.0)
    assert eduds(x, x, class_column="y", make_tree=lambda: CartForest(3)).value == pytest.approx(1.0)
    assert edusc(x, x, class_column="y", make_tree=lambda: CartForest(3)).value == pytest.approx(1.0)


def test_noise_lowers_similarity():
    x, z = _data()
    rz = eduds(x, z, class_column="y", make_tree=lambda: CartForest(3))
    assert 0.0 <= rz.value < 1.0
    assert len(rz.per_tree) == 3
    rs = edusc(x, z, class_column="y", make_tree=lambda: CartForest(3))
    assert 0.0 <= rs.value < 1.0
    assert rs.n_trees == 3 and list(rs.per_tree["tree"]) == [0, 1, 2]


# ----------------------------------------------------------------------- EDUSC
def test_split_score_hand_values():
    y = np.array([0, 0, 1, 1])
    assert split_score(np.array([1.0, 2, 3, 4]), y, 2, numeric=True) == pytest.approx(1.0)
    # a' = [1, 3, 2, 4]: best cut 1.5 (tie with 3.5 → smallest), IG 0.311278, split info 0.811278
    assert split_score(np.array([1.0, 3, 2, 4]), y, 2, numeric=True) == pytest.approx(0.311278 / 0.811278, abs=1e-6)
    assert split_score(np.array([1.0, 3, 2, 4]), y, 2, numeric=True, criterion="info_gain") == pytest.approx(
        0.311278, abs=1e-6)
    assert split_score(np.array(["p", "p", "q", "q"], dtype=object), y, 2, numeric=False) == pytest.approx(1.0)
    assert split_score(np.array([1.0, 1, 2, 2]), y, 2, numeric=True, criterion="gini") == pytest.approx(0.5)
    assert split_score(np.array([], dtype=float), y[:0], 2, numeric=True) == 0.0
    assert split_score(np.array([5.0, 5, 5, 5]), y, 2, numeric=True) == 0.0


def test_split_score_exact_tie_goes_to_the_smallest_threshold():
    # 7 records, classes 4:3. Cut 1.5 leaves (1,0 | 3,3), cut 2.5 (3,1 | 1,2), cut 3.5 (3,3 | 1,0):
    # 6·H(3,3) = 4·H(3,1) + 3·H(1,2) = 6 bits, so all three gains are H(4,3) − 6/7 exactly.
    # The smallest threshold wins, whatever the last bit of log2 says: split info H(1/7, 6/7).
    v = np.array([1.0, 2, 2, 2, 3, 3, 4])
    y = np.array([0, 0, 0, 1, 1, 1, 0])
    h43 = -(4 / 7) * np.log2(4 / 7) - (3 / 7) * np.log2(3 / 7)
    si = -(1 / 7) * np.log2(1 / 7) - (6 / 7) * np.log2(6 / 7)
    assert split_score(v, y, 2, numeric=True) == pytest.approx((h43 - 6 / 7) / si, rel=1e-12)
    assert split_score(v, y, 2, numeric=True) == pytest.approx(0.2164799, abs=1e-7)
    from ppdm.metrics.structure import _first_best

    g = 0.12808527889139443
    assert _first_best(np.array([g, g + 2e-17, g])) == 0  # an ulp above is still a tie
    assert _first_best(np.array([g, g + 1e-9, g])) == 1
    # the compiled path agrees on the tie (EDUSC of a root-only tree on this segment)
    x = pd.DataFrame({"a": v, "y": np.where(y == 0, "A", "B")})
    z = x.assign(a=v[::-1])
    r = edusc(x, z, class_column="y", trees_x=HandTree({0: Rule((), "A")}), min_gain_ratio=0.0)
    gz = split_score(v[::-1].copy(), y, 2, numeric=True)
    assert r.per_attribute.loc[0, "mean_abs_difference"] == pytest.approx(abs(0.2164799 - gz), abs=1e-7)


def test_edusc_spec_example():
    # spec §5.3: a tree that is only its root; y = AABB; a = 1..4, b = 1,1,2,2; perturbed a' = 1,3,2,4
    x = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1.0, 1, 2, 2], "y": list("AABB")})
    z = x.assign(a=[1.0, 3, 2, 4])
    root = HandTree({0: Rule((), "A")})
    r = edusc(x, z, class_column="y", trees_x=root)
    assert r.value == pytest.approx(0.691844, abs=1e-6)
    pa = r.per_attribute.set_index("attribute")
    assert pa.loc["b", "mean_abs_difference"] == pytest.approx(0.0)
    assert pa.loc["a", "mean_abs_difference"] == pytest.approx(1 - 0.311278 / 0.811278, abs=1e-6)


def test_edusc_nodes_and_weights():
    # one split a ≤ 2.5: root + two leaves; leaves are pure so their criteria are 0 on x
    x = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1.0, 1, 2, 2], "y": list("AABB")})
    z = x.assign(y=list("ABAB"))
    r = edusc(x, z, class_column="y", trees_x=stump("a", 2.5), min_gain_ratio=0.0)
    assert r.per_tree.loc[0, "nodes"] == 3
    # root: G_O(a)=G_O(b)=1, G_P(a)=G_P(b)=0.3837 (a: cut 1.5; b: multi-/binary 0) → check by hand
    ga = split_score(np.array([1.0, 2, 3, 4]), np.array([0, 1, 0, 1]), 2, numeric=True)
    gb = split_score(np.array([1.0, 1, 2, 2]), np.array([0, 1, 0, 1]), 2, numeric=True)
    root = ((1 - ga) + (1 - gb)) * 4 / (2 * 4)
    # leaves: on z each leaf holds A,B with a and b values {1,2}/{3,4} and {1,1}/{2,2}
    gl = split_score(np.array([1.0, 2]), np.array([0, 1]), 2, numeric=True)
    leaf = gl * 2 / (1 * 4)  # only a separates the classes inside a leaf; b is constant there
    assert r.value == pytest.approx(1 - (root + 2 * leaf) / 3)
    assert edusc(x, z, class_column="y", trees_x=stump("a", 2.5), min_gain_ratio=0.0,
                 node_count="all").value == pytest.approx(r.value)


# ---------------------------------------------- EDUSC by hand, one branch of eq. 4–5 each
def test_edusc_by_hand_every_branch():
    # x: a = 1..4, g = p q p q, h constant, y = A A B B; the release swaps a of records 2, 3
    # and sets g = p p q q. Gain ratios (G), threshold 0.01:
    x = pd.DataFrame({"a": [1.0, 2, 3, 4], "g": list("pqpq"), "h": [5.0] * 4, "y": list("AABB")})
    z = x.assign(a=[1.0, 3, 2, 4], g=list("ppqq"))
    gr15 = 0.3112781244591328 / 0.8112781244591328  # cut 1.5 of A|BAB: gain 1 − ¾H(⅓,⅔), split info H(¼,¾)
    gr_13 = 0.2516291673878229 / 0.9182958340544896  # 2 of 3 records split off: (H(⅓,⅔) − ⅔)/H(⅓,⅔)
    # tree 1: a ≤ 2.5, nodes root, left, right (leaves count, eq. 4)
    #   root: G_O(a) = 1, G_P(a) = gr15 (cuts 1.5 and 3.5 tie, the smaller wins); G_O(g) = 0,
    #         G_P(g) = 1; h is 0 in both: not counted (max(G_O, G_P) ≤ 0.01). k = 2, |D_O| = 4
    root = ((1 - gr15) + 1) * 4 / (2 * 4)
    #   left: x records A, A are pure (all G_O = 0); the release's segment holds a' = 1 (A, p)
    #         and a' = 2 (B, q): G_P(a) = G_P(g) = 1 → (1 + 1)·2/(2·4); the right leaf alike
    leaf = 2 * 2 / (2 * 4)
    sim1 = 1 - (root + 2 * leaf) / 3
    # tree 2: a ≤ 1.5. The left leaf holds one record in both tables: every G is 0, k = 0, so
    # it adds 0 to the sum but counts in S_t. Right: x (a 2, 3, 4; A B B; g q p q): G_O(a) = 1,
    # G_O(g) = gr_13; z (a' 3, 2, 4; A B B; g p q q): G_P(a) = gr_13, G_P(g) = 1.
    right = ((1 - gr_13) + (1 - gr_13)) * 3 / (2 * 4)
    sim2_all, sim2_counted = 1 - (root + 0 + right) / 3, 1 - (root + right) / 2
    r = edusc(x, z, class_column="y", trees_x=[stump("a", 2.5), stump("a", 1.5)])
    assert r.per_tree["similarity"].tolist() == pytest.approx([sim1, sim2_all], abs=1e-12)
    assert r.per_tree["nodes"].tolist() == [3, 3] and r.per_tree["nodes_counted"].tolist() == [3, 2]
    assert r.value == pytest.approx((sim1 + sim2_all) / 2, abs=1e-12)  # eq. 5
    assert r.value == pytest.approx(0.4732002838645508, abs=1e-12)
    c = edusc(x, z, class_column="y", trees_x=[stump("a", 2.5), stump("a", 1.5)], node_count="counted")
    assert c.per_tree["similarity"].tolist() == pytest.approx([sim1, sim2_counted], abs=1e-12)
    pa = r.per_attribute.set_index("attribute")
    assert pa.loc["h", "nodes_counted"] == 0  # never above the threshold
    # with threshold 0.5 the root's a still counts (1 > 0.5) but right's pair (1, gr_13) too,
    # while nothing changes for h; at threshold 1 no attribute counts anywhere: Sim = 1
    assert edusc(x, z, class_column="y", trees_x=stump("a", 2.5), min_gain_ratio=1.0).value == 1.0


def test_edusc_by_hand_empty_perturbed_segment():
    # x: a = 1..4, b = 1 2 1 2, y = A B A B; the release moves a to 3 3 4 4, so no perturbed
    # record reaches the left leaf of a ≤ 2.5: there G_P = 0 for every attribute.
    x = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1.0, 2, 1, 2], "y": list("ABAB")})
    z = x.assign(a=[3.0, 3, 4, 4])
    gr15 = 0.3112781244591328 / 0.8112781244591328
    root = (gr15 + 0) * 4 / (2 * 4)   # G(a): gr15 vs 0 (AB|AB); G(b): 1 vs 1
    left = (1 + 1) * 2 / (2 * 4)      # x: a and b separate A from B (G 1); z: empty segment
    right = (1 + 0) * 2 / (2 * 4)     # x: G(a) = G(b) = 1; z (all four records): G(a') = 0, G(b) = 1
    r = edusc(x, z, class_column="y", trees_x=stump("a", 2.5))
    assert r.value == pytest.approx(1 - (root + left + right) / 3, abs=1e-12)
    assert r.value == pytest.approx(0.6860519089006092, abs=1e-12)


def test_structure_errors():
    x, z = _data(20)
    with pytest.raises(SchemaError, match="class"):
        eduds(x.drop(columns="y"), z.drop(columns="y"), make_tree=lambda: CartTree())
    with pytest.raises(SchemaError, match="'c'"):
        edusc(x, z.drop(columns="c"), class_column="y", make_tree=lambda: CartTree())
    with pytest.raises(ParameterError):
        edusc(x, z, class_column="y", make_tree=lambda: CartTree(), criterion="chi2")
    with pytest.raises(ParameterError):
        eduds(x, z, class_column="y", make_tree=lambda: CartTree(), domain="whole")


@settings(max_examples=15)
@given(st.integers(0, 10_000), st.floats(0.0, 3.0))
def test_similarities_stay_in_unit_interval(seed, noise):
    rng = np.random.default_rng(seed)
    n = 40
    x = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    x["y"] = np.where(x["a"] > 0, "p", "q")
    z = x.copy()
    z[["a", "b"]] += rng.normal(0, noise + 1e-9, (n, 2))
    v = eduds(x, z, class_column="y", make_tree=lambda: CartTree(2)).value
    assert np.isnan(v) or 0.0 <= v <= 1.0
    s = edusc(x, z, class_column="y", make_tree=lambda: CartTree(2)).value
    assert 0.0 <= s <= 1.0


# -------------------------------------------------------------------- registry
def test_registered_adapters_use_the_factory_option():
    x, z = _data(80)
    ctx = EvaluationContext(x=x, z=z, schema=Schema(["a", "b", "c"], [], "y"),
                            options={"make_tree": lambda: CartForest(2)})
    specs = {s.name: s for s in resolve_measures("eduds,edusc")}
    assert specs["eduds"].needs_class and specs["edusc"].needs_class
    a = specs["eduds"].fn(ctx)
    b = specs["edusc"].fn(ctx)
    assert 0 <= a.value <= 1 and 0 <= b.value <= 1
    json.dumps(a.to_dict())
    json.dumps(b.to_dict())
    assert a.value == pytest.approx(eduds(x, z, class_column="y", make_tree=lambda: CartForest(2)).value)
    # the forest of x was fitted once and shared
    assert sum(1 for k in ctx.cache if k[0] == "structure_forest") == 2


def test_unknown_leaf_id_is_reported():
    x = pd.DataFrame({"a": [1.0, 9.0], "y": ["A", "B"]})
    partial = HandTree({1: Rule((Condition("a", "<=", 5.0),), "A")})  # record a=9 reaches no leaf (-1)
    with pytest.raises(ParameterError, match="leaf id"):
        eduds(x, x, class_column="y", trees_x=partial, trees_z=stump("a", 5))
