"""``recommend``'s settings as a :class:`RecommendOptions`: given as an object, by name, or both
(names replace the object's settings), checked before any work."""

from __future__ import annotations

import pandas as pd
import pytest

from ppdm.errors import ParameterError
from ppdm.experiments.recommend import RecommendOptions, recommend

POLICY = {"risk": {"record_linkage": 0.05}, "utility": {"weights": {"sse_sst": 1}}}
X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [4.0, 3.0, 2.0, 1.0]})


def test_settings_by_name_replace_those_of_the_options() -> None:
    base = RecommendOptions(n_trials=5, holdout=0.3)
    combined = RecommendOptions.of(base, n_trials=7)
    assert (combined.n_trials, combined.holdout) == (7, 0.3)
    assert base.n_trials == 5  # the options given are not changed
    assert RecommendOptions.of() == RecommendOptions()
    assert RecommendOptions.of(None, budget="10m").budget == "10m"


def test_an_unknown_setting_is_refused_as_an_unknown_keyword() -> None:
    with pytest.raises(TypeError, match="'n_trail'"):
        recommend(X, POLICY, n_trail=3)
    with pytest.raises(TypeError, match="'n_trail'"):
        RecommendOptions.of(RecommendOptions(), n_trail=3)


@pytest.mark.parametrize(("options", "named", "word"), [
    (RecommendOptions(n_jobs=0), {}, "n_jobs"),
    (None, {"n_trials": 0}, "trial budget"),
    (RecommendOptions(n_trials=3), {"score_epsilon": 0.0}, "score_epsilon"),
    (RecommendOptions(random_state=-1), {}, "random_state"),
    (None, {"budget": "soon"}, "budget"),
])
def test_a_setting_out_of_range_is_refused_before_the_search(options: RecommendOptions | None,
                                                              named: dict, word: str) -> None:
    with pytest.raises(ParameterError, match=word):
        recommend(X, POLICY, options, **named)
