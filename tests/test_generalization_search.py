"""The generalisation search (``generalize``): optimal levels, suppression within the limit, k, l and t met.

The search's answer is compared with a brute force over every node of a small lattice that uses
nothing of the search: :class:`Recode` at each level vector, the records of failing classes
blanked, the release judged by the measures (``k_anonymity``, ``l_diversity``, ``t_closeness``)
and its loss computed here from the labels.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from ppdm.anonymize.generalization_search import Generalize, nested_widths, release_loss
from ppdm.anonymize.recoding import Recode
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.metrics.keyvar import k_anonymity, l_diversity
from ppdm.metrics.privacy_models import t_closeness
from ppdm.utils import unique_pairs

KEYS = ["age", "city", "sex"]
SENS = ["disease"]
HIER = {"city": {"Leeds": ["North"], "York": ["North"], "Hull": ["North"],
                 "Bath": ["South"], "Bristol": ["South"], "Exeter": ["South"]}}


def small_table(n: int = 160, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """Ages 20–69, six cities in two regions, two sexes, a three-valued diagnosis; the south's
    old patients mostly have one disease, so t and l bite."""
    rng = np.random.default_rng(seed)
    age = rng.integers(20, 70, n)
    city = rng.choice(list(HIER["city"]), n)
    sex = rng.choice(["f", "m"], n)
    south = np.isin(city, ["Bath", "Bristol", "Exeter"])
    disease = np.where(south & (age > 50) & (rng.random(n) < 0.9), "flu",
                       rng.choice(["flu", "cold", "gout"], n))
    df = pd.DataFrame({"age": age, "city": city, "sex": sex, "disease": disease})
    schema = Schema(numeric=["age"], categorical=["city", "sex", "disease"], integer=["age"],
                    quasi_identifiers=KEYS, sensitive=SENS, hierarchies=HIER)
    return df, schema


def _tech(schema: Schema, **params) -> Generalize:
    return Generalize(schema=schema, max_intervals=6, **params)


# ----------------------------------------------------------------------------- brute force
def _column_at(x: pd.DataFrame, fitted: Generalize, c: str, lv: int) -> pd.Series:
    """Column ``c`` of x recoded at level ``lv`` by Recode alone."""
    spec = fitted.level_specs_[c][lv]
    if spec is None:
        return x[c]
    what, v = spec
    rec = Recode(schema=fitted.search_schema_, columns=[c], **{what: {c: v}})
    return rec.fit_transform(x)[c]


def _release_at(x: pd.DataFrame, fitted: Generalize, node: tuple[int, ...], cache: dict | None = None) -> pd.DataFrame:
    """x recoded at ``node`` by Recode alone (no suppression); each key is recoded on its own."""
    cache = {} if cache is None else cache
    z = x.copy()
    for c, lv in zip(fitted.level_specs_, node, strict=True):
        if (c, lv) not in cache:
            cache[c, lv] = _column_at(x, fitted, c, lv)
        z[c] = cache[c, lv]
    return z


def _loss(x: pd.DataFrame, z: pd.DataFrame, keys: list[str], sup: np.ndarray, loss: str = "arx",
          loss_weight: float = 0.5) -> float:
    """The loss worked out from the labels of z (before suppression) and the suppressed records."""
    return _mixed(_both_losses(x, z, keys, sup), loss, loss_weight)


def _mixed(both: tuple[float, float], loss: str, loss_weight: float) -> float:
    arx, dis = both
    return {"arx": arx, "discernibility": dis, "mix": loss_weight * arx + (1 - loss_weight) * dis}[loss]


def _both_losses(x: pd.DataFrame, z: pd.DataFrame, keys: list[str], sup: np.ndarray) -> tuple[float, float]:
    """ARX's loss, per key (originals a label stands for − 1)/(D − 1), 1 when suppressed, and
    discernibility, per record its class's size, n when suppressed, over n²."""
    total = 0.0
    for c in keys:
        d = x[c].nunique()
        stands = pd.DataFrame({"z": z[c].astype(str), "x": x[c]}).groupby("z")["x"].transform("nunique")
        per = (stands.to_numpy(dtype=float) - 1) / (d - 1)
        per[sup] = 1.0
        total += per.sum()
    arx = total / (len(x) * len(keys))
    n = len(x)
    size = z[keys].astype(str).groupby(keys, sort=False)[keys[0]].transform("size").to_numpy(dtype=float)
    dis = float(np.where(sup, n, size).sum()) / n**2  # suppression takes whole classes: kept sizes stand
    return arx, dis


def brute_force(x: pd.DataFrame, fitted: Generalize, k: int, limit: float, l: int | None = None,  # noqa: E741
                t: float | None = None, losses: tuple[tuple[str, float], ...] = (("arx", 0.5),)) -> list[float]:
    """The least of each loss over every node of the lattice whose release meets every model."""
    keys = list(fitted.level_specs_)
    best = [np.inf] * len(losses)
    cache: dict = {}
    dis, values = pd.factorize(x["disease"])
    p = np.bincount(dis) / len(dis)
    for node in itertools.product(*[range(len(s)) for s in fitted.level_specs_.values()]):
        z = _release_at(x, fitted, node, cache)
        cls = z[keys].astype(str).groupby(keys, sort=False).ngroup().to_numpy()
        bad = np.bincount(cls)[cls] < k
        if l is not None:  # distinct diagnoses per class
            bad |= np.bincount(np.unique(np.c_[cls, dis], axis=0)[:, 0])[cls] < l
        if t is not None:  # equal ground distance: half the L1 distance of each class's shares from p
            counts = np.zeros((cls.max() + 1, len(p)))
            np.add.at(counts, (cls, dis), 1)
            emd = 0.5 * np.abs(counts / counts.sum(axis=1, keepdims=True) - p).sum(axis=1)
            bad |= emd[cls] > t + 1e-12
        if bad.sum() > np.floor(limit * len(x) + 1e-9):
            continue
        z = z.astype(object)
        z.loc[bad, keys] = np.nan
        if l is not None and l_diversity(z, keys, SENS).value < l:
            continue
        if t is not None and t_closeness(z, keys, SENS, t).value > t + 1e-12:
            continue
        z = _release_at(x, fitted, node, cache)
        both = _both_losses(x, z, keys, bad)
        best = [min(b, _mixed(both, *lw)) for b, lw in zip(best, losses, strict=True)]
    return best


MODELS = [{"k": 6}, {"k": 4, "l": 2}, {"k": 3, "t": 0.25}, {"k": 2, "l": 3}]
LOSS_CHOICES = (("arx", 0.5), ("discernibility", 0.5), ("mix", 0.3))


@pytest.mark.parametrize("models", MODELS, ids=["k", "k+l", "k+t", "l3"])
def test_search_finds_the_brute_force_optimum(models: dict) -> None:
    x, schema = small_table()
    opt = None
    for loss, weight in LOSS_CHOICES:
        tech = _tech(schema, suppression_limit=0.05, loss=loss, loss_weight=weight, **models)
        z = tech.fit_transform(x)
        # 4 age levels (as in x, width 10, width 50, one interval) × 3 city levels × 2 sex levels
        assert tech.lattice_size_ == 24
        assert [len(v) for v in tech.level_specs_.values()] == [4, 3, 2]
        if opt is None:  # the lattice is the same whatever the loss: one brute force for every loss
            opt = dict(zip(LOSS_CHOICES, brute_force(x, tech, models["k"], 0.05, models.get("l"), models.get("t"),
                                                     LOSS_CHOICES), strict=True))
        assert np.isfinite(opt[loss, weight])
        assert tech.loss_ == pytest.approx(opt[loss, weight], abs=1e-9), loss  # exact, within 10 % a fortiori
        # the release's own losses, worked out from its labels, are the ones reported
        sup = tech.suppressed_
        before = _release_at(x, tech, tuple(tech.levels_.values()))
        assert _loss(x, before, KEYS, sup, loss, weight) == pytest.approx(tech.loss_)
        for name in ("arx", "discernibility"):
            assert _loss(x, before, KEYS, sup, name) == pytest.approx(tech.losses_[name])
            assert release_loss(x, z, KEYS, name) == pytest.approx(tech.losses_[name])
        assert tech.nodes_evaluated_ <= tech.lattice_size_
        _check_release(x, z, tech, **models)


def _check_release(x: pd.DataFrame, z: pd.DataFrame, tech: Generalize, k: int, l: int | None = None,  # noqa: E741
                   t: float | None = None, limit: float = 0.05) -> None:
    keys = tech.keys_
    assert k_anonymity(z, keys, k).achieved_k >= k
    sup = z[keys].isna().all(axis=1)
    assert sup.mean() <= limit + 1e-12
    assert (sup.to_numpy() == tech.suppressed_).all()
    if l is not None:
        assert l_diversity(z, keys, tech.sensitive_, l).value >= l
    if t is not None:
        assert t_closeness(z, keys, tech.sensitive_, t).value <= t + 1e-12
    assert z.shape == x.shape and list(z.columns) == list(x.columns) and z.index.equals(x.index)


def test_without_l_a_class_may_be_homogeneous_and_l_fixes_it() -> None:
    # the release meant to break l-diversity: k alone leaves the south's old patients' class all flu
    x, schema = small_table()
    z = _tech(schema, k=3).fit_transform(x)
    assert l_diversity(z, KEYS, SENS).value < 2
    assert t_closeness(z, KEYS, SENS).value > 0.25
    tech = _tech(schema, k=3, l=2, t=0.25)
    z = tech.fit_transform(x)
    _check_release(x, z, tech, k=3, l=2, t=0.25)


def test_loss_by_hand_and_suppression_against_generalisation() -> None:
    # c = A A A B B B C D, hierarchy A, B -> X and C, D -> Y, k = 2.
    # Level 0: C and D are alone; suppressing them loses 1 each: loss 2/8 = 0.25.
    # Level 1: X stands for 2 of the 4 values, Y too: every record loses (2-1)/(4-1) = 1/3.
    x = pd.DataFrame({"c": list("AAABBBCD"), "v": range(8)})
    schema = Schema(numeric=["v"], categorical=["c"], quasi_identifiers=["c"],
                    hierarchies={"c": {"A": ["X"], "B": ["X"], "C": ["Y"], "D": ["Y"]}})
    tech = Generalize(schema=schema, k=2, suppression_limit=0.25)
    z = tech.fit_transform(x)
    assert tech.levels_ == {"c": 0} and tech.loss_ == pytest.approx(0.25)
    assert z["c"].isna().tolist() == [False] * 6 + [True] * 2
    assert z["v"].tolist() == list(range(8))  # not a key: as it was
    tech = Generalize(schema=schema, k=2, suppression_limit=0.2)  # 1 record at most: generalise
    z = tech.fit_transform(x)
    assert tech.levels_ == {"c": 1} and tech.loss_ == pytest.approx(1 / 3)
    assert z["c"].astype(str).tolist() == ["X"] * 6 + ["Y"] * 2
    # the hierarchy is topped by * (every category): the levels are as in x, X/Y, *
    assert tech.hierarchy_["c"] == ["as in x", "hierarchy level 1", "every category (*)"]
    assert tech.output_schema().hierarchies["c"]["A"] == ["X"]


def test_nested_widths_by_hand() -> None:
    # ages 17–90 in at most 10 intervals: width 10 (8 intervals), then 50 ((0,50], (50,100]): two
    assert nested_widths(17, 90, 10) == [10.0, 50.0]
    # [0, 1]: widths 0.1, 0.5 (three intervals from -0.5), 1 ((-1,0], (0,1]): two
    assert nested_widths(0, 1, 10) == [0.1, 0.5, 1.0]
    assert nested_widths(3, 3, 10) == []


def test_every_level_is_a_coarsening_of_the_one_below() -> None:
    x, schema = small_table()
    bad = {"city": {"Leeds": ["North", "N"], "York": ["North", "S"], "Hull": ["North", "N"],
                    "Bath": ["South", "S"], "Bristol": ["South", "S"], "Exeter": ["South", "S"]}}
    from dataclasses import replace

    with pytest.raises(ParameterError, match="'city' is not nested"):
        _tech(replace(schema, hierarchies=bad), k=3).fit(x)


def test_a_lattice_above_the_limit_is_refused_with_its_size() -> None:
    x, schema = small_table()
    with pytest.raises(ParameterError, match=r"4 × 3 × 2 = 24 level vectors.*max_nodes=10"):
        _tech(schema, k=3, max_nodes=10).fit(x)


def test_no_solution_within_the_limit_is_refused() -> None:
    x, schema = small_table()
    with pytest.raises(ParameterError, match="no level vector meets k=3, l=4"):
        _tech(schema, k=3, l=4).fit(x)


def test_parameters_are_checked() -> None:
    x, schema = small_table()
    for params, needle in (({"k": 0}, "k must"), ({"t": 1.5}, "t must"), ({"suppression_limit": -0.1}, "suppression_limit"),
                           ({"l": 2, "sensitive": ["age"]}, "both a key and sensitive"),
                           ({"sensitive": ["disease"]}, "neither l nor t"), ({"k": 1000}, "n_samples=160"),
                           ({"weights": {"zip": 1.0}}, "'zip'")):
        with pytest.raises(ParameterError, match=needle):
            _tech(schema, **params).fit(x)


def test_table_contract_and_clone() -> None:
    x, schema = small_table()
    x.index = pd.Index([f"r{i}" for i in range(len(x))])
    tech = _tech(schema, k=4, l=2)
    z = tech.fit_transform(x)
    assert z.index.equals(x.index) and list(z.columns) == list(x.columns)
    assert list(z.dtypes) == [tech._output_dtypes(x).get(c, x[c].dtype) for c in x.columns]
    c = clone(tech)
    assert c.get_params() == tech.get_params()
    assert type(c)(**c.get_params()).get_params() == tech.get_params()
    assert c.fit_transform(x).equals(z)
    # what the owner may publish names no count of x; the private log holds them
    assert "suppressed_records" not in tech.privacy_report_
    assert tech.private_report_["suppressed_records"] == int(tech.suppressed_.sum())
    assert tech.privacy_report_["levels"] == {c: tech.hierarchy_[c][lv] for c, lv in tech.levels_.items()}


def test_weights_move_the_loss_to_the_cheap_keys() -> None:
    x, schema = small_table()
    plain = _tech(schema, k=6).fit(x)
    heavy = _tech(schema, k=6, weights={"age": 50.0}).fit(x)
    assert heavy.levels_["age"] <= plain.levels_["age"]
    assert sum(heavy.levels_.values()) >= sum(plain.levels_.values())


@settings(max_examples=15)
@given(n=st.integers(12, 60), k=st.integers(2, 5), limit=st.sampled_from([0.0, 0.05, 0.2]),
       seed=st.integers(0, 10_000), with_l=st.booleans())
def test_release_always_meets_k_within_the_limit(n: int, k: int, limit: float, seed: int, with_l: bool) -> None:
    rng = np.random.default_rng(seed)
    x = pd.DataFrame({"a": rng.integers(0, 40, n), "b": rng.choice(list("pqrs"), n),
                      "s": rng.choice(["u", "v", "w"], n)})
    schema = Schema(numeric=["a"], categorical=["b", "s"], integer=["a"], quasi_identifiers=["a", "b"],
                    sensitive=["s"])
    tech = Generalize(schema=schema, k=k, suppression_limit=limit, l=2 if with_l else None)
    try:
        z = tech.fit_transform(x)
    except ParameterError as e:
        # k alone always has an answer (every key at its top level: one class of n ≥ k records)
        assert with_l and "no level vector" in str(e)
        return
    _check_release(x, z, tech, k=k, l=2 if with_l else None, limit=limit)
    assert list(z.dtypes) == [tech._output_dtypes(x).get(c, x[c].dtype) for c in x.columns]


def test_missing_keys_stay_missing_and_form_no_small_class() -> None:
    x, schema = small_table()
    x["age"] = x["age"].astype(float)
    x.loc[:9, "age"] = np.nan
    schema = Schema(numeric=["age"], categorical=["city", "sex", "disease"], quasi_identifiers=KEYS,
                    sensitive=SENS, hierarchies=HIER)
    tech = _tech(schema, k=3, suppression_limit=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z = tech.fit_transform(x)
    assert z.loc[:9, "age"].isna().all()
    _check_release(x, z, tech, k=3, limit=0.1)


@pytest.mark.slow
def test_adult_k5_and_t_closeness_on_income() -> None:
    from ppdm.datasets import load

    x, schema = load("adult", missing="drop")
    keys = ["age", "education", "marital_status", "race", "sex", "native_country"]
    tech = Generalize(schema=schema, keys=keys, k=5, t=0.2, sensitive=["income"])
    z = tech.fit_transform(x)
    _check_release(x, z, tech, k=5, t=0.2)
    print(f"adult, k=5, t=0.2 on income: loss {tech.loss_:.4f}, suppressed {tech.suppressed_.mean():.2%}, "
          f"levels {tech.privacy_report_['levels']}, {tech.nodes_evaluated_} of {tech.lattice_size_} nodes evaluated")
    assert tech.loss_ < 0.5


def test_l_and_t_need_the_whole_table_so_partitions_are_refused() -> None:
    x, schema = small_table()
    for models in ({"t": 0.3}, {"l": 2}):
        tech = _tech(schema, k=3, **models).fit(x)
        with pytest.raises(ParameterError, match="partition"):
            tech.transform_partition(x.iloc[:50], 0, 1)
    # k holds partition by partition, and then for the whole table
    tech = _tech(schema, k=3).fit(x)
    z = pd.concat([tech.transform_partition(x.iloc[i:i + 80], i, 1) for i in (0, 80)])
    assert z.index.equals(x.index) and k_anonymity(z, KEYS, 3).achieved_k >= 3


def test_intervals_stop_at_a_declared_bound() -> None:
    # ages 0–9 and 61–70 with declared bounds [0, 70]: the grid's first interval (-10,0] would stand
    # for impossible ages, so the intervals start at 0, closed there ([0,10]), as recode's stop at bounds
    x = pd.DataFrame({"age": [0, 3, 5, 9, 9, 61, 64, 66, 70, 70] * 3})
    schema = Schema(numeric=["age"], integer=["age"], quasi_identifiers=["age"], bounds={"age": (0, 70)})
    tech = Generalize(schema=schema, k=6, max_intervals=7, suppression_limit=0.0)
    z = tech.fit_transform(x)
    assert set(z["age"].astype(str)) == {"[0,10]", "(60,70]"}


def _loss_table() -> tuple[pd.DataFrame, Schema]:
    """c = C C B B A A A A D C, s = m except the last C (f); hierarchy A, B -> X and C, D -> Y."""
    x = pd.DataFrame({"c": list("CCBBAAAADC"), "s": list("mmmmmmmmmf")})
    schema = Schema(categorical=["c", "s"], quasi_identifiers=["c", "s"],
                    hierarchies={"c": {"A": ["X"], "B": ["X"], "C": ["Y"], "D": ["Y"]}})
    return x, schema


def test_each_loss_by_hand_picks_its_own_node() -> None:
    # n = 10, k = 2, at most 2 records suppressed; c has D = 4 values, s has 2.
    # (c as in x, s as in x): classes Am 4, Bm 2, Cm 2, Cf 1, Dm 1 -> Cf and Dm suppressed.
    #   ARX: 2 suppressed records lose 1 on both keys: 4 / (10 * 2) = 0.2
    #   discernibility: 16 + 4 + 4 + 2 * 10 = 44 -> 44 / 100 = 0.44
    # (c as in x, s = *): classes A 4, B 2, C 3, D 1 -> D suppressed.
    #   ARX: s loses 1 on every record (10), c 1 on the suppressed one: 11 / 20 = 0.55
    #   discernibility: 16 + 4 + 9 + 10 = 39 -> 0.39
    # (c = X/Y, s as in x): Xm 6, Ym 3, Yf 1 -> Yf suppressed.
    #   ARX: the 9 kept lose (2 - 1)/(4 - 1) = 1/3 on c, the suppressed 2: (3 + 2) / 20 = 0.25
    #   discernibility: 36 + 9 + 10 = 55 -> 0.55
    # every other node loses more by both (c = X/Y, s = *: 0.667 and 0.52; c = *: 0.55 and 0.91 at best).
    x, schema = _loss_table()
    arx = Generalize(schema=schema, k=2, suppression_limit=0.2).fit(x)
    assert arx.levels_ == {"c": 0, "s": 0}
    assert arx.loss_ == pytest.approx(0.2) and arx.losses_ == pytest.approx({"arx": 0.2, "discernibility": 0.44})
    dis = Generalize(schema=schema, k=2, suppression_limit=0.2, loss="discernibility").fit(x)
    assert dis.levels_ == {"c": 0, "s": 1}
    assert dis.loss_ == pytest.approx(0.39) and dis.losses_ == pytest.approx({"arx": 0.55, "discernibility": 0.39})
    # the mix w * ARX + (1 - w) * discernibility: (0, 0) gives 0.44 - 0.24 w, (0, 1) gives 0.39 + 0.16 w,
    # (1, 0) gives 0.55 - 0.3 w: (0, 0) wins above w = 0.125, (0, 1) below
    for w, levels, loss in ((0.5, {"c": 0, "s": 0}, 0.32), (0.1, {"c": 0, "s": 1}, 0.406)):
        mix = Generalize(schema=schema, k=2, suppression_limit=0.2, loss="mix", loss_weight=w).fit(x)
        assert mix.levels_ == levels and mix.loss_ == pytest.approx(loss)
    # the public report names the loss, the private log its values
    z = dis.transform(x)
    assert dis.privacy_report_["loss"] == "discernibility" and "0.39" not in str(dis.privacy_report_)
    assert dis.private_report_["loss_of_fit"] == pytest.approx(0.39)
    assert dis.private_report_["arx_loss_of_fit"] == pytest.approx(0.55)
    assert z["s"].isna().sum() == 1 and z["c"].isna().sum() == 1  # the D record: every key blanked


def test_release_loss_judges_any_release_by_its_labels() -> None:
    x, schema = _loss_table()
    # another tool's release: c as X/Y, s as in x, the Yf record deleted (given back as a row of blanks)
    z = pd.DataFrame({"c": list("YYXXXXXXYY"), "s": list("mmmmmmmmmf")}, dtype=object)
    z.loc[9] = np.nan
    assert release_loss(x, z, ["c", "s"]) == pytest.approx(0.25)
    assert release_loss(x, z, ["c", "s"], "discernibility") == pytest.approx(0.55)
    assert release_loss(x, z, ["c", "s"], "mix", loss_weight=0.5) == pytest.approx(0.4)
    # key weights: c counts 3 times s: (3 * 9/3 + 3 * 1 + 1) / (10 * 4) = 13/40
    assert release_loss(x, z, ["c", "s"], weights={"c": 3.0}) == pytest.approx(13 / 40)
    # one blanked cell (the record kept otherwise) loses 1 on that key only and is no suppressed record
    z2 = x.copy().astype(object)
    z2.loc[0, "s"] = np.nan
    assert release_loss(x, z2, ["c", "s"]) == pytest.approx(1 / 20)
    # classes: A 4, B 2, C? with s blank 1, C m 1, C f 1, D 1 -> 16 + 4 + 1 + 1 + 1 + 1 = 24 / 100
    assert release_loss(x, z2, ["c", "s"], "discernibility") == pytest.approx(0.24)
    with pytest.raises(ParameterError, match="same records"):
        release_loss(x, z.iloc[:9], ["c", "s"])
    with pytest.raises(ParameterError, match="loss must be one of"):
        release_loss(x, z, ["c", "s"], "lm")


def test_loss_parameters_are_checked() -> None:
    x, schema = _loss_table()
    with pytest.raises(ParameterError, match="loss must be one of 'arx', 'discernibility', 'mix'"):
        Generalize(schema=schema, loss="dm").fit(x)
    with pytest.raises(ParameterError, match="loss_weight"):
        Generalize(schema=schema, loss="mix", loss_weight=1.5).fit(x)


def test_discernibility_prunes_above_costly_nodes() -> None:
    # the cost bound of an evaluated node skips its generalisations: fewer nodes than the lattice
    x, schema = small_table()
    tech = _tech(schema, k=3, loss="discernibility").fit(x)
    assert tech.nodes_pruned_["cost"] > 0
    assert tech.nodes_evaluated_ + sum(tech.nodes_pruned_.values()) <= tech.lattice_size_


def test_search_space_raises_k_and_offers_l_and_t_only_with_sensitive_attributes() -> None:
    from dataclasses import replace

    from ppdm.anonymize.search_space import Choice, Integer
    from ppdm.experiments.policy import parse_policy
    from ppdm.experiments.recommend import build_spaces

    _, schema = small_table()
    pol = parse_policy({"risk": {"k_anonymity": {"at_most": 0, "options": {"k": 6}}},
                        "utility": {"weights": {"prediction_accuracy": 1}}, "techniques": ["generalize"]})
    (space,), _ = build_spaces(pol, replace(schema, sensitive=[]), 100)
    assert space.params["k"] == Integer(6, 20, log=True)  # the policy's k, as local suppression's
    assert space.fixed == {"l": None, "t": None}  # no sensitive attribute: nothing for l and t to be about
    (space,), _ = build_spaces(pol, schema, 100)
    assert space.params["l"] == Choice((None, 2, 3)) and "t" in space.params and not space.fixed
    assert space.when == {"loss_weight": {"loss": ("mix",)}}


def test_a_small_recommend_run_picks_generalize() -> None:
    # a policy asking for k = 4 and l-diversity 2 on the diagnosis: local suppression cannot give l
    # (it blanks keys, and the south's old patients stay a class of one diagnosis), generalize can
    from dataclasses import replace

    from ppdm.experiments.recommend import recommend

    x, schema = small_table(200)
    x["label"] = np.where(x["age"] + np.random.default_rng(1).normal(0, 10, len(x)) > 45, "yes", "no")
    schema = replace(schema, class_column="label")
    pol = {"risk": {"k_anonymity": {"at_most": 0, "options": {"k": 4}}, "l_diversity": {"at_least": 2}},
           "utility": {"weights": {"prediction_accuracy": 1}},
           "techniques": {"generalize": None, "local-suppression": None}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = recommend(x, pol, schema=schema, n_trials=3, random_state=0)
    tried = {t.technique for t in res.trials}
    assert tried == {"generalize", "local-suppression"}
    assert all(t.params["k"] >= 4 for t in res.trials)
    assert not any(t.feasible for t in res.trials if t.technique == "local-suppression")
    w = res.winner
    assert w is not None and w.technique == "generalize" and w.feasible
    assert res.release is not None and res.release.provenance["technique"]["name"] == "generalize"
    keys = list(w.params.get("keys") or KEYS)
    z = res.release.data
    assert k_anonymity(z, keys, 4).achieved_k >= 4 and l_diversity(z, keys, SENS).value >= 2


def test_unique_pairs_by_hand() -> None:
    # pairs (2,0) (−1,3) (2,0) (0,−1): three distinct, sorted by the first code then the second
    a, b = unique_pairs(np.array([2, -1, 2, 0]), np.array([0, 3, 0, -1]))
    assert a.tolist() == [-1, 0, 2] and b.tolist() == [3, -1, 0]
    empty = unique_pairs(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert empty[0].size == 0 and empty[1].size == 0


def test_unique_pairs_counts_by_hand() -> None:
    # (1,0) twice, (0,2) once, (1,1) once: sorted (0,2) (1,0) (1,1) with counts 1 2 1
    a, b, n = unique_pairs(np.array([1, 0, 1, 1]), np.array([0, 2, 0, 1]), return_counts=True)
    assert a.tolist() == [0, 1, 1] and b.tolist() == [2, 0, 1] and n.tolist() == [1, 2, 1]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 9)), min_size=1, max_size=40))
def test_unique_pairs_is_the_row_wise_unique(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    want = np.unique(np.stack([a, b]), axis=1)
    got = unique_pairs(a, b)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
