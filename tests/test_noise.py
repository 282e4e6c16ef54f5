"""Toy noise techniques of paper 000 §7.1 (Uniform Noise, Gaussian Noise)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from ppdm.anonymize import get_technique, make_technique
from ppdm.anonymize.noise import GaussianNoise, UniformNoise
from ppdm.errors import ParameterError, SchemaError

NOISES = [UniformNoise, GaussianNoise]


def mixed(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.normal(10, 3, n),
        "b": rng.integers(0, 100, n),
        "g": pd.Series(rng.choice(["x", "y", "z", "w"], n, p=[0.4, 0.3, 0.2, 0.1]), dtype="str"),
        "c": rng.choice(["yes", "no"], n),
    })


def test_registered_names():
    assert get_technique("uniform-noise") is UniformNoise
    assert get_technique("gaussian-noise") is GaussianNoise
    t = make_technique("gaussian-noise", class_column="c", random_state=3, params={"level": 0.3})
    assert t.get_params()["level"] == 0.3 and clone(t).get_params() == t.get_params()


# no bounds declared: that advice is asserted in test_value_domains.py
# (test_the_warning_comes_only_where_a_rare_end_of_x_shapes_the_release)
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
@pytest.mark.parametrize("cls", NOISES)
def test_contract_and_class_untouched(cls):
    x = mixed()
    z = cls(level=0.5, class_column="c", random_state=1).fit_transform(x)
    assert list(z.columns) == list(x.columns) and z.index.equals(x.index)
    assert (z.dtypes == x.dtypes).all()
    assert z["c"].equals(x["c"])
    assert (z["a"] != x["a"]).any() and (z["g"] != x["g"]).any()


@pytest.mark.parametrize("cls", NOISES)
def test_bad_level_is_refused(cls):
    with pytest.raises(ParameterError, match="level"):
        cls(level=1.5, class_column="c").fit(mixed())
    with pytest.raises(ParameterError, match="level"):
        cls(level="lots", class_column="c").fit(mixed())


# no bounds declared: that advice is asserted in test_value_domains.py
# (test_the_warning_comes_only_where_a_rare_end_of_x_shapes_the_release)
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
@pytest.mark.parametrize("cls", NOISES)
def test_missing_cells_stay_missing_and_are_never_drawn(cls):
    x = mixed(400)
    x.loc[x.index % 5 == 0, "a"] = np.nan
    x.loc[x.index % 4 == 0, "g"] = None
    z = cls(level=1.0, class_column="c", random_state=0).fit_transform(x)
    # missing cells stay missing; every observed cell gets a value (level 1: all redrawn)
    assert z["a"].isna().equals(x["a"].isna()) and z["g"].isna().equals(x["g"].isna())
    assert z.loc[x["g"].notna(), "g"].isin(set(x["g"].dropna())).all()
    assert (z.loc[x["a"].notna(), "a"] != x.loc[x["a"].notna(), "a"]).mean() > 0.95
    # a missing class value is still refused
    x.loc[3, "c"] = None
    with pytest.raises(SchemaError, match="class"):
        cls(level=0.1, class_column="c").fit_transform(x)


def test_uniform_noise_values_stay_in_the_range_and_among_the_levels():
    x = mixed(2000)
    z = UniformNoise(level=1.0, class_column="c", random_state=0).fit_transform(x)
    assert z["a"].between(x["a"].min(), x["a"].max()).all()
    assert set(z["g"]) <= set(x["g"])
    # every value redrawn: categories become about equally frequent (flattened, §7.1)
    freq = z["g"].value_counts(normalize=True)
    assert freq.max() - freq.min() < 0.06
    # ... and numeric values about uniform on [min, max]: mean near the centre
    assert abs(z["a"].mean() - (x["a"].min() + x["a"].max()) / 2) < 0.5


def test_gaussian_noise_keeps_the_categorical_distribution_and_adds_var_a_noise():
    x = mixed(4000)
    z = GaussianNoise(level=1.0, class_column="c", random_state=0).fit_transform(x)
    fx = x["g"].value_counts(normalize=True)
    fz = z["g"].value_counts(normalize=True)
    assert (fx - fz).abs().max() < 0.03
    diff = (z["a"] - x["a"]).to_numpy()
    assert abs(diff.std() - x["a"].std()) < 0.1 * x["a"].std()
    assert abs(diff.mean()) < 0.15


def expected_changes(cls, x: pd.DataFrame, level: float) -> float:
    """Expected number of values that end up different: a value is picked with probability
    ``level``; a picked categorical value may be redrawn as itself."""
    n = len(x)
    total = n * level  # column a: a continuous draw never repeats the value
    p = x["g"].value_counts(normalize=True)
    same = 1 / len(p) if cls is UniformNoise else float((p ** 2).sum())
    return total + n * level * (1 - same)


@settings(max_examples=20)
@given(level=st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3, 0.7]), seed=st.integers(0, 10**6),
       cls=st.sampled_from(NOISES))
def test_noise_changes_about_level_n_m_values(level, seed, cls):
    x = mixed(600, seed=seed % 7)[["a", "g", "c"]]
    z = cls(level=level, class_column="c", random_state=seed).fit_transform(x)
    changed = int((z[["a", "g"]] != x[["a", "g"]]).to_numpy().sum())
    mu = expected_changes(cls, x, level)
    # a sum of independent Bernoulli draws: stay within 5 standard deviations
    sd = np.sqrt(2 * len(x) * 0.25)
    assert abs(changed - mu) <= 5 * sd + 1
    if level == 0:
        assert changed == 0


# no bounds declared: that advice is asserted in test_value_domains.py
# (test_the_warning_comes_only_where_a_rare_end_of_x_shapes_the_release)
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
@settings(max_examples=25)
@given(
    n=st.integers(1, 25),
    seed=st.integers(0, 2**32 - 1),
    cls=st.sampled_from(NOISES),
    data=st.data(),
)
def test_level_zero_is_identity_and_same_seed_same_output(n, seed, cls, data):
    vals = data.draw(st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n))
    ints = data.draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    cats = data.draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=n, max_size=n))
    x = pd.DataFrame({"f": vals, "i": ints, "k": cats, "y": ["u"] * n})
    same = cls(level=0.0, class_column="y", random_state=seed).fit_transform(x)
    pd.testing.assert_frame_equal(same, x)
    level = data.draw(st.floats(0, 1))
    z1 = cls(level=level, class_column="y", random_state=seed).fit_transform(x)
    z2 = cls(level=level, class_column="y", random_state=seed).fit_transform(x)
    pd.testing.assert_frame_equal(z1, z2)
    assert (z1.dtypes == x.dtypes).all() and z1["y"].equals(x["y"])
