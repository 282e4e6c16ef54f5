"""Pairing-free closeness of a release to the originals: verbatim copies of unique originals and
the distance to the closest record (DCR) — hand-computed values, the search against a full
distance matrix, the releases that used to pass unseen without a private log (each must miss a
threshold), and safe releases that must not be flagged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.experiments.evaluation import load_all_measures, resolve_measures, run_measure
from ppdm.metrics.base import MEASURES, EvaluationContext, judge, result_interval
from ppdm.metrics.closeness import (
    OriginalIndex,
    _gower_inputs,
    closest_distances,
    nearest_record_distance,
    unique_verbatim_copies,
)

load_all_measures()
NAMES = ("verbatim_copies", "nearest_record_distance")


def _judged(x: pd.DataFrame, z: pd.DataFrame, sch: Schema, seed: int = 0) -> dict[str, tuple[float, str]]:
    """Each measure's value and judgement (interval and all) on a release evaluated without a pairing."""
    ctx = EvaluationContext(x=x, z=z, schema=sch, paired=False, random_state=seed)
    out = {}
    for name in NAMES:
        spec = MEASURES[name]
        o = run_measure(spec, ctx)
        assert not o.skipped, o.reason
        out[name] = (o.value, judge(o.value, spec.threshold, spec.direction, result_interval(o.result)))
    return out


def _shuffled(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


# ------------------------------------------------------------------ by hand
def test_verbatim_copies_by_hand() -> None:
    x = pd.DataFrame({"c": ["a", "a", "b", "c"], "v": [1, 1, 2, 3]})
    # unique originals: (b, 2) and (c, 3); (a, 1) is held twice.
    # z: two copies of (b, 2) count once (one original), (c, 3.0) equals (c, 3), (a, 1) is not
    # unique, (d, 4) is no original: 2 copies / 5 released records
    z = pd.DataFrame({"c": ["b", "b", "a", "d", "c"], "v": [2.0, 2.0, 1.0, 4.0, 3.0]})
    r = unique_verbatim_copies(x, z)
    assert r.value == pytest.approx(2 / 5) and r.copies == 2 and r.unique_originals == 2 and r.released == 5
    # z = x in any order: 1 − share of x's records that are not unique = 1 − 2/4
    assert unique_verbatim_copies(x, _shuffled(x, 1)).value == pytest.approx(0.5)
    # a missing value equals a missing value only
    x = pd.DataFrame({"c": ["a", None, "b"], "v": [np.nan, 1.0, 2.0]})
    z = pd.DataFrame({"c": ["a", None, None], "v": [np.nan, 1.0, 2.0]})
    assert unique_verbatim_copies(x, z).copies == 2


def test_verbatim_copies_reads_the_attributes_z_shares() -> None:
    sch = Schema(numeric=["v"], categorical=["c"], class_column="y", identifiers=["id"])
    x = pd.DataFrame({"id": [1, 2, 3], "v": [1.0, 2.0, 3.0], "c": ["a", "a", "b"], "y": [0, 1, 0]})
    # new identifiers and without c: (v, y) decides; all three originals are unique on it
    z = pd.DataFrame({"id": [7, 8, 9], "v": [1.0, 2.0, 5.0], "y": [0, 0, 0]})
    ctx = EvaluationContext(x=x, z=z, schema=sch, paired=False)
    r = MEASURES["verbatim_copies"].fn(ctx)
    assert r.value == pytest.approx(1 / 3) and r.numeric == ["v"] and r.categorical == ["y"]


def test_nearest_record_distance_by_hand() -> None:
    x = pd.DataFrame({"v": [0.0, 1.0, 3.0, 10.0], "c": ["a", "a", "b", "b"]})
    # range of v over x: 10; Gower distance = (|Δv|/10 + [c differs]) / 2 attributes.
    # originals' nearest other: x0–x1 0.1/2, x1–x0 0.1/2, x2–x3 0.7/2, x3–x2 0.7/2
    # → NN = [.05, .05, .35, .35]; no duplicates (p0 = 0); the 0.6-quantile (linear) is
    # .05 + 0.8·(.35 − .05) = 0.29 and the baseline q = 0.6.
    # z: (0, a) a copy (0); (2, b) 0.1/2 = .05 from x2; (6, a) 0.5/2 = .25 from x1;
    # (20, c): every term capped at 1 → 2/2 = 1. Near (0 or < .29): 3 of 4.
    z = pd.DataFrame({"v": [0.0, 2.0, 6.0, 20.0], "c": ["a", "b", "a", "c"]})
    r = nearest_record_distance(x, z, ["v"], ["c"], quantile=0.6)
    assert r.reference_distance == pytest.approx(0.29) and r.reference_exact == 0 and r.baseline == 0.6
    assert r.near == 0.75 and r.value == pytest.approx(0.15) and r.exact_copies == 0.25
    # medians: DCR [0, .05, .25, 1] → .15; NN → .2; ratio .75
    assert r.median_dcr == pytest.approx(0.15) and r.median_nn == pytest.approx(0.2)
    assert r.median_ratio == pytest.approx(0.75)
    assert r.sample_size is None and np.isnan(r.ci_low)  # every record searched: exact


def test_a_monotone_recoding_of_x_is_a_set_of_copies_in_ranks() -> None:
    x = pd.DataFrame({"v": [0.0, 1.0, 3.0, 10.0], "w": [5.0, 2.0, 8.0, 1.0], "c": ["a", "a", "b", "b"]})
    # z: v → 100v + 50, w → 50w, rows reversed. In values (ranges over x: v 10, w 7) every released
    # number lies beyond x's range by more than the range, so both numeric terms are capped at 1 and
    # every DCR is at least 2/3; the originals' NN are [.176, .176, .567, .567] (x0–x1:
    # (.1 + 3/7)/3, x2–x3: (.7 + 1)/3), so Q ≈ .176 and no released record is near in values.
    # In each table's own ranks (mid-rank shares): v → [.25, .5, .75, 1], w → [.75, .5, 1, .25] in both,
    # so every released record sits at distance 0 from its original: near 4/4, baseline q = .01.
    z = pd.DataFrame({"v": 100 * x["v"] + 50, "w": 50 * x["w"], "c": x["c"]}).iloc[::-1].reset_index(drop=True)
    r = nearest_record_distance(x, z, ["v", "w"], ["c"])
    assert r.near == 0 and r.exact_copies == 0  # the values view sees nothing
    assert r.view == "ranks" and r.rank_near == 1 and r.rank_exact_copies == 1
    assert r.value == pytest.approx(0.99)
    # the values view still decides when it is the worse one (the by-hand table above)
    r = nearest_record_distance(x, x, ["v", "w"], ["c"])
    assert r.view == "values" and r.value == pytest.approx(0.99)


def test_nearest_record_distance_baseline_with_duplicated_originals() -> None:
    x = pd.DataFrame({"v": [0.0, 0.0, 5.0, 10.0], "c": ["a"] * 4})
    # c is the same everywhere: d = (|Δv|/10 + 0) / 2. NN = [0, 0, .25, .25]: p0 = 1/2, the
    # positive NN are [.25, .25] so the reference is .25 whatever q; the baseline is
    # p0 + (1 − p0)·q = .5 + .5·.01 = .505 (a fresh draw copies a duplicated original half the time).
    # z (3 records: a release may have its own size): (0, a) copy → near; (4, a) .1/2 = .05 → near;
    # (20, b) → (1 + 1)/2 = 1, far. near = 2/3.
    z = pd.DataFrame({"v": [0.0, 4.0, 20.0], "c": ["a", "a", "b"]})
    r = nearest_record_distance(x, z, ["v"], ["c"])
    assert r.reference_exact == 0.5 and r.reference_distance == pytest.approx(0.25)
    assert r.baseline == pytest.approx(0.505) and r.value == pytest.approx(2 / 3 - 0.505)


def test_closest_distances_equal_a_full_distance_matrix() -> None:
    rng = np.random.default_rng(4)

    def table(n: int) -> pd.DataFrame:
        df = pd.DataFrame({"u": rng.integers(0, 6, n).astype(float), "w": rng.normal(size=n).round(1),
                           "c": rng.choice(["a", "b", "c"], n), "k": rng.choice(["p", "q"], n)})
        df.loc[rng.random(n) < 0.1, "w"] = np.nan
        df.loc[rng.random(n) < 0.1, "c"] = None
        return df

    x, z = table(300), table(200)
    xn, xc, zn, zc, p = _gower_inputs(x, z, ["u", "w"], ["c", "k"])
    index = OriginalIndex(xn, xc)
    # brute force on the same encoding: Σ categorical [≠] + Σ numeric min(|Δ|, 1), NaN rules
    def full(qn: np.ndarray, qc: np.ndarray) -> np.ndarray:
        d = (qc[:, None, :] != xc[None, :, :]).sum(axis=2).astype(float)
        a, b = qn[:, None, :], xn[None, :, :]
        t = np.where(np.isnan(a) & np.isnan(b), 0.0,
                     np.where(np.isnan(a) | np.isnan(b), 1.0, np.minimum(np.abs(a - b), 1.0)))
        return d + t.sum(axis=2)

    assert np.allclose(closest_distances(zn, zc, index), full(zn, zc).min(axis=1), rtol=0, atol=1e-12)
    dx = full(xn, xc)
    np.fill_diagonal(dx, np.inf)
    rows = np.arange(len(x))
    assert np.allclose(closest_distances(xn, xc, index, skip=rows), dx.min(axis=1), rtol=0, atol=1e-12)


def test_sampled_search_gives_an_interval_and_is_seeded() -> None:
    rng = np.random.default_rng(5)
    x = pd.DataFrame({"v": rng.normal(size=3000), "c": rng.choice(list("abc"), 3000)})
    z = x.copy()
    z.loc[:599, "v"] += 1e-6  # 20 % near copies
    z.loc[600:, "v"] = rng.normal(size=2400)
    a = nearest_record_distance(x, z, sample=500, random_state=1)
    assert a.sample_size == 500 and a.n_reference == 500
    assert a.ci_low <= a.value <= a.ci_high and a.ci_high - a.ci_low < 0.15
    assert a.ci_low < 0.2 - a.baseline < a.ci_high  # the true excess is covered here
    b = nearest_record_distance(x, z, sample=500, random_state=1)
    assert a.to_dict() == b.to_dict()


def test_options_are_checked() -> None:
    x = pd.DataFrame({"v": [0.0, 1.0, 2.0]})
    sch = Schema(numeric=["v"])
    for opts in ({"nearest_record_distance.quantile": 1.5}, {"nearest_record_distance": {"sample": 0}},
                 {"nearest_record_distance.sample": "many"}):
        with pytest.raises(ParameterError, match="nearest_record_distance"):
            MEASURES["nearest_record_distance"].fn(EvaluationContext(x=x, z=x, schema=sch, options=opts))
    r = MEASURES["nearest_record_distance"].fn(
        EvaluationContext(x=x, z=x, schema=sch, options={"nearest_record_distance": {"quantile": 0.2}}))
    assert r.quantile == 0.2


def test_registered_for_the_intruder_holding_the_originals() -> None:
    for name in NAMES:
        m = MEASURES[name]
        assert (m.kind, m.direction, m.value_range, m.threshold) == ("risk", "lower", (0.0, 1.0), 0.05)
        assert m.default and not m.needs_class and not m.paired and not m.out_of_core
        assert m.scenario == "originals"


# ------------------------------------------------------------------ releases that must be caught
def _noisy(name: str, share_of_sd: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    from ppdm.datasets import load

    x, sch = load(name)
    rng = np.random.default_rng(seed)
    z = x.copy()
    for c in sch.numeric:
        z[c] = x[c] + rng.normal(0.0, share_of_sd * float(x[c].std()), len(x))
    return x, _shuffled(z, seed), sch


def test_tarragona_with_one_percent_noise_shuffled_is_caught() -> None:
    x, z, sch = _noisy("tarragona", 0.01, 1)
    got = _judged(x, z, sch)
    assert got["verbatim_copies"] == (0.0, "meets")  # no value is kept as it was
    assert got["nearest_record_distance"][1] == "misses" and got["nearest_record_distance"][0] > 0.9


def test_the_risk_verdict_of_a_shuffled_noisy_release_without_its_log_is_high() -> None:
    """The default risk measures on tarragona with 1 %-of-sd noise, shuffled, no private log:
    without the closeness measures the verdict was LOW (record linkage sees copies only), and with
    lower bounds never meeting it would only be UNCERTAIN; they make it HIGH."""
    from ppdm.report.evaluation import evaluation_document

    x, z, sch = _noisy("tarragona", 0.01, 1)
    ctx = EvaluationContext(x=x, z=z, schema=sch, paired=False, random_state=0)
    outcomes = {m.name: run_measure(m, ctx) for m in resolve_measures(None) if m.kind == "risk"}
    risk = evaluation_document(outcomes)["summary"]["risk"]
    assert risk["status"] == "high"
    assert {j["measure"] for j in risk["judged"] if j["judgement"] == "misses"} == {"nearest_record_distance"}
    before = evaluation_document({k: o for k, o in outcomes.items() if k not in NAMES})["summary"]["risk"]
    assert before["status"] == "uncertain"


def test_a_rescaled_shuffled_copy_is_high_without_its_log() -> None:
    """tarragona with every number rescaled (1.7·v + 1000) and the rows shuffled: no released value
    is near an original, so the values view, verbatim copies and record linkage without the log
    saw nothing and the verdict was UNCERTAIN; an intruder who holds x sorts both tables and reads
    the pairing off. The rank view sees every record as a copy, and the verdict is HIGH."""
    from ppdm.datasets import load
    from ppdm.report.evaluation import evaluation_document

    x, sch = load("tarragona")
    z = _shuffled(x.assign(**{c: 1.7 * x[c] + 1000.0 for c in sch.numeric}), 4)
    ctx = EvaluationContext(x=x, z=z, schema=sch, paired=False, random_state=0)
    outcomes = {m.name: run_measure(m, ctx) for m in resolve_measures(None) if m.kind == "risk"}
    near = outcomes["nearest_record_distance"].result
    assert near.near < 0.01 and near.view == "ranks" and near.rank_exact_copies == 1
    risk = evaluation_document(outcomes)["summary"]["risk"]
    assert risk["status"] == "high"
    assert {j["measure"] for j in risk["judged"] if j["judgement"] == "misses"} == {"nearest_record_distance"}


def test_banknote_with_tiny_noise_is_caught() -> None:
    # banknote holds 35 duplicated records (2.6 %): the reference uses positive distances
    x, z, sch = _noisy("banknote", 0.0005, 2)
    got = _judged(x, z, sch)
    assert got["nearest_record_distance"][1] == "misses" and got["nearest_record_distance"][0] > 0.9


def test_shuffled_copy_is_caught() -> None:
    from ppdm.datasets import load

    x, sch = load("banknote")
    got = _judged(x, _shuffled(x, 3), sch)
    # 35 of banknote's 1372 records are not unique
    assert got["verbatim_copies"] == (pytest.approx(1 - 35 / 1372), "misses")
    assert got["nearest_record_distance"][1] == "misses"


def _uniform(x: pd.DataFrame, sch: Schema, n: int, seed: int) -> pd.DataFrame:
    """Uniform over each column's domain: numeric over x's range, categorical over x's values."""
    rng = np.random.default_rng(seed)
    out = {}
    for c in x.columns:
        if c in sch.numeric:
            out[c] = rng.uniform(float(x[c].min()), float(x[c].max()), n)
        else:
            out[c] = rng.choice(pd.unique(x[c]), n)
    return pd.DataFrame(out)


def _marginals(x: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """A synthetic release from independent marginals: each column drawn from x's own values."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: x[c].to_numpy()[rng.integers(0, len(x), n)] for c in x.columns})


def test_synthetic_data_with_ten_percent_near_copies_is_caught() -> None:
    from ppdm.datasets import load

    x, sch = load("adult", missing="drop")
    n = 20_000  # a synthetic release of its own size
    marginals = _marginals(x, n, 4)
    for safe in (_uniform(x, sch, n, 7), marginals):  # no copies: not flagged
        clean = _judged(x, safe, sch)
        assert clean["nearest_record_distance"][1] == "meets" and clean["verbatim_copies"][1] == "meets", clean
    z = marginals.copy()
    rng = np.random.default_rng(5)
    copies = x.iloc[rng.choice(len(x), n // 10, replace=False)].assign(fnlwgt=lambda d: d["fnlwgt"] + 1)
    z.iloc[: n // 10] = copies.to_numpy()
    z = _shuffled(z.astype(x.dtypes.to_dict()), 6)
    got = _judged(x, z, sch)
    assert got["verbatim_copies"][1] == "meets"  # not one record is a verbatim copy
    assert got["nearest_record_distance"][1] == "misses"
    assert 0.06 < got["nearest_record_distance"][0] < 0.12  # 10 % near copies less the 1.1 % baseline


# ------------------------------------------------------------------ releases that must not be flagged
def test_uniform_and_independent_releases_are_not_flagged() -> None:
    """On banknote; on adult in the near-copies test above."""
    from ppdm.datasets import load

    x, sch = load("banknote")
    for z in (_uniform(x, sch, len(x), 7), _marginals(x, len(x), 8)):
        got = _judged(x, z, sch)
        assert got["verbatim_copies"][1] == "meets" and got["nearest_record_distance"][1] == "meets", got


def test_a_fresh_sample_of_the_same_people_is_not_flagged() -> None:
    """Half of banknote judged against the other half: a draw from x's distribution is at the baseline."""
    from ppdm.datasets import load

    x, sch = load("banknote")
    rows = np.random.default_rng(9).permutation(len(x))
    half, other = x.iloc[rows[:686]].reset_index(drop=True), x.iloc[rows[686:]].reset_index(drop=True)
    got = _judged(half, other, sch)
    assert got["nearest_record_distance"][1] == "meets" and got["nearest_record_distance"][0] < 0.03


def test_dpcube_release_is_not_flagged() -> None:
    from ppdm.anonymize import make_technique
    from ppdm.datasets import load

    x, sch = load("banknote")
    tech = make_technique("dpcube", class_column=sch.class_column, random_state=3,
                          params={"epsilon": 0.1, "domain_from_data": True})
    with pytest.warns(UserWarning):  # the domain read from the data: not DP, said so
        z = tech.fit_transform(x)
    got = _judged(x, z, sch)
    assert got["verbatim_copies"] == (0.0, "meets") and got["nearest_record_distance"][1] == "meets"
