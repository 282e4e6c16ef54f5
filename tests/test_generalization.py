"""Released values standing for sets of originals: interval labels and category groups."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdm.data.generalization import Interval, covers, format_interval, interval_of_labels, parse_interval


@pytest.mark.parametrize(("label", "want"), [
    ("(10,20]", Interval(10, 20, False, True)),
    ("[0,18]", Interval(0, 18, True, True)),
    ("[-0.89,-0.1675]", Interval(-0.89, -0.1675, True, True)),
    ("(12096299,2.7182818e+08]", Interval(12096299, 2.7182818e8, False, True)),
    ("(60,Inf]", Interval(60, math.inf, False, True)),
    ("[-Inf,20)", Interval(-math.inf, 20, True, False)),
    (" ( 1 , 2 ) ", Interval(1, 2, False, False)),
])
def test_parse_interval(label, want):
    assert parse_interval(label) == want


@pytest.mark.parametrize("label", ["Married", "10-20", "(20,10]", "(a,b]", "", None, 3.0, "(1,2"])
def test_not_an_interval(label):
    assert parse_interval(label) is None


def test_format_is_r_cut_labels():
    # sdcMicro's globalRecode labels: formatC(digits=8, format="g")
    assert format_interval(10, 20) == "(10,20]"
    assert format_interval(10000000, 1e8) == "(10000000,1e+08]"
    assert format_interval(12096299, 271828182.8459) == "(12096299,2.7182818e+08]"
    assert format_interval(-0.89, -0.1675, closed_left=True) == "[-0.89,-0.1675]"
    assert format_interval(60, math.inf) == "(60,Inf]"
    assert parse_interval(format_interval(1.5, 2.25, closed_left=True, closed_right=False)).label() == "[1.5,2.25)"


def test_contains_respects_closedness():
    iv = parse_interval("(10,20]")
    assert iv.contains([10, 10.5, 20, 20.5, np.nan]).tolist() == [False, True, True, False, False]
    iv = parse_interval("[10,20)")
    assert iv.contains([10, 20]).tolist() == [True, False]


def test_covers_row_by_row():
    released = ["(20,30]", "(20,30]", None, "Married", "Married", "x", "5", "[0,10]"]
    original = [25, 31, 99, "Married-civ-spouse", "Never-married", "x", 5, None]
    anc = {"Married-civ-spouse": ["Married", "Any"], "Never-married": ["Single", "Any"]}
    got = covers(released, original, ancestors=anc)
    # in band; out of band; suppressed covers all; ancestor; not an ancestor; equal; code "5" = 5; x unknown
    assert got.tolist() == [True, False, True, True, False, True, True, True]


def test_labels_to_intervals():
    assert interval_of_labels(["(1,2]", "(2,3]", None, "(1,2]"]) == {
        "(1,2]": Interval(1, 2, False, True), "(2,3]": Interval(2, 3, False, True)}
    assert interval_of_labels(["(1,2]", "other"]) is None


def test_covers_needs_equal_lengths():
    with pytest.raises(ValueError, match="same length"):
        covers([1, 2], [1])
