"""SUDA2: minimal sample uniques, SUDA and DIS-SUDA scores — a hand-computed table, a
brute-force definition, and parity with sdcMicro 5.8.1's suda2 on both oracle tables."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppdm.errors import MeasureNotApplicable, ParameterError
from ppdm.metrics.suda import msu_counts, suda2

REL = 1e-9


def _hand() -> pd.DataFrame:
    # r0 = r4 (a duplicate pair); r1, r2, r3 each differ from r0 in one variable
    return pd.DataFrame({"a": [1, 1, 2, 1, 1], "b": [1, 2, 1, 1, 1], "c": [1, 1, 1, 2, 1]})


def test_scores_by_hand():
    r = suda2(_hand(), ["a", "b", "c"])
    # one MSU of size 1 each for r1 {b}, r2 {a}, r3 {c}: score (M - 1)! = 2
    assert r.score.tolist() == [0, 2, 2, 2, 0]
    assert r.msu_counts == {1: 3, 2: 0, 3: 0}
    # U = 3 uniques, P = 2 records in a pair, f = 0.01: U/Dis - U = P(1 - f)/f = 198;
    # Q = 1 + (8 - 3)/20 = 1.25; Σ s^-Q = 3·2^-1.25, so dis = 1/(1 + 198/3) = 1/67
    assert r.dis_score == pytest.approx([0, 1 / 67, 1 / 67, 1 / 67, 0], rel=1e-12)
    assert r.value == pytest.approx(3 / 67 / 5, rel=1e-12)
    assert r.special_uniques == 3 and r.max_score == 2
    per = r.per_key.set_index("key")
    assert per["msus"].tolist() == [1, 1, 1]
    assert per["contribution_pct"].tolist() == pytest.approx([100 / 3] * 3)
    assert r.dis_table.set_index("interval").loc["(0.0, 0.1]", "records"] == 3


def test_larger_msus_by_hand():
    # r0 is unique on {a, b} only (a = 1 and b = 1 each occur twice); r3 is its partner pattern
    t = pd.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 2], "c": [0, 0, 0, 0]})
    r = suda2(t, ["a", "b", "c"])
    # every record is unique on {a, b} and on nothing smaller: one MSU of size 2, weight (3-2)! = 1
    assert r.score.tolist() == [1, 1, 1, 1]
    assert r.msu_counts == {1: 0, 2: 4, 3: 0}
    # P = 0, so every record with an MSU gets dis = 1
    assert r.dis_score.tolist() == [1, 1, 1, 1]


def _brute_msus(codes: np.ndarray) -> np.ndarray:
    n, m = codes.shape
    out = np.zeros((n, m + 1), dtype=int)

    def unique_on(i, s):
        if any(codes[i, j] < 0 for j in s):
            return False
        same = [r for r in range(n) if all(codes[r, j] == codes[i, j] for j in s)]
        return same == [i]

    for i in range(n):
        for size in range(1, m + 1):
            for s in itertools.combinations(range(m), size):
                if unique_on(i, s) and not any(
                        unique_on(i, t) for k in range(1, size) for t in itertools.combinations(s, k)):
                    out[i, size] += 1
    return out


@given(st.lists(st.tuples(*[st.integers(-1, 2)] * 4), min_size=1, max_size=14), st.integers(1, 4))
def test_msus_match_the_definition(rows, m):
    codes = np.array(rows, dtype=np.int64)[:, :m]
    by_size, by_var = msu_counts(codes)
    assert by_size.tolist() == _brute_msus(codes).tolist()
    assert by_var[:, 1:].sum() == sum(s * by_size[:, s].sum() for s in range(1, m + 1))


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("direct", [True, False])
def test_every_counting_path_matches_the_definition(monkeypatch, packed, direct):
    """The search counts a subset's records in a direct or a hash table, on combinations
    packed in one integer or compared code by code: each path gives the definition's MSUs."""
    from ppdm.metrics import suda

    monkeypatch.setattr(suda, "PACKED_BITS", 62 if packed else 0)
    monkeypatch.setattr(suda, "DIRECT_CELLS", (4, 1 << 16) if direct else (0, 0))
    rng = np.random.default_rng(7)
    for trial in range(30):
        n, m = int(rng.integers(1, 40)), int(rng.integers(1, 5))
        codes = rng.integers(-1 if trial % 2 else 0, int(rng.integers(2, 5)), size=(n, m))
        by_size, by_var = msu_counts(codes)
        assert by_size.tolist() == _brute_msus(codes).tolist()
        assert by_var[:, 1:].sum() == sum(s * by_size[:, s].sum() for s in range(1, m + 1))


def test_search_on_a_larger_table_matches_a_plain_level_wise_count():
    """10,000 records with repeated combinations and missing values: the MSUs equal those of
    a plain count over the records of every subset (no candidates, no packing)."""
    rng = np.random.default_rng(3)
    n, m = 10_000, 5
    codes = np.column_stack([rng.integers(0, k, n) for k in (40, 2, 7, 16, 90)])
    codes[rng.random((n, m)) < 0.02] = -1
    got, _ = msu_counts(codes)
    uniq: dict[tuple[int, ...], np.ndarray] = {(): np.zeros(n, dtype=bool)}
    want = np.zeros((n, m + 1), dtype=int)
    for size in range(1, m + 1):
        for s in itertools.combinations(range(m), size):
            sub = codes[:, list(s)]
            ok = (sub >= 0).all(axis=1)
            _, inv, cnt = np.unique(sub[ok], axis=0, return_inverse=True, return_counts=True)
            u = np.zeros(n, dtype=bool)
            u[ok] = cnt[inv.ravel()] == 1
            uniq[s] = u
            minimal = u & ~np.any([uniq[s[:j] + s[j + 1:]] for j in range(size)], axis=0)
            want[minimal, size] += 1
    assert got.tolist() == want.tolist()
    # the table has MSUs of several sizes to find
    assert want[:, 1:].sum() > 1000 and (want[:, 1:].sum(axis=0) > 0).sum() >= 3


@given(st.lists(st.tuples(*[st.integers(0, 2)] * 4), min_size=2, max_size=30))
def test_score_properties(rows):
    t = pd.DataFrame(rows, columns=list("abcd"))
    r = suda2(t, list("abcd"))
    fk = t.groupby(list("abcd"))["a"].transform("size").to_numpy()
    assert np.all((r.score > 0) == (fk == 1))  # only sample uniques have MSUs
    assert np.all((r.dis_score >= 0) & (r.dis_score <= 1))
    # a larger score never gets a smaller DIS score
    order = np.argsort(r.score, kind="stable")
    assert np.all(np.diff(r.dis_score[order]) >= -1e-15)
    assert r.max_score <= 4 * math.factorial(3)  # MSUs form an antichain: at most M·(M−1)! (LYM)


def test_bad_input():
    with pytest.raises(MeasureNotApplicable, match="quasi_identifiers"):
        suda2(_hand(), [])
    with pytest.raises(ParameterError):
        suda2(_hand(), ["a"], dis_fraction=1.5)


@pytest.mark.parametrize("name", ["testdata", "adult"])
def test_parity_with_sdcmicro_suda2(shared_dir, name):
    meta = json.loads((shared_dir / "oracles" / "sdcmicro" / f"{name}_risk.json").read_text())
    df = pd.read_csv(shared_dir / "datasets" / f"{name}.csv")
    if name == "adult":
        df = df.dropna().reset_index(drop=True)
    ref = pd.read_csv(shared_dir / "oracles" / "sdcmicro" / f"{name}_risk.csv")
    r = suda2(df, meta["keys"])
    np.testing.assert_array_equal(r.score, ref["suda_score"].to_numpy())
    np.testing.assert_allclose(r.dis_score, ref["dis_suda"].to_numpy(), rtol=REL, atol=0)
