"""A setting that makes a release the search has already measured is not measured again: it is
told the earlier trial's measures, as a repeat of it (``ppdm.experiments.recommend.repeats``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.experiments.recommend import recommend
from ppdm.experiments.recommend.repeats import MeasuredReleases, release_digest


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(2)
    return pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(2),
                         "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")})


def test_settings_that_make_the_same_release_are_measured_once(monkeypatch) -> None:
    import ppdm.experiments.recommend.measure as rec

    x = _table()
    # 30 training records: MDAV with any k from 16 to 30 makes one group of all 30 (fewer than 2k records
    # are left, so they form one group), hence the same release for every k of the range
    pol = {"risk": {"record_linkage": 0.9}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"mdav": {"k": {"low": 16, "high": 30}, "columns": None}}}
    calls: list[int] = []
    real = rec.measure_release

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(rec, "measure_release", counting)
    res = recommend(x, pol, schema=Schema.infer(x, "label"), n_trials=6, random_state=0)
    first = min(res.trials, key=lambda t: t.number)
    assert first.repeat_of is None
    # every later trial repeats the first, whether its k is the same or another
    assert [t.repeat_of for t in res.trials if t is not first] == [first.number] * 5
    assert len({t.params["k"] for t in res.trials}) > 1
    assert all(t.measures == first.measures for t in res.trials)
    # measured: the reference, the first trial and the recommended release; none of the five repeats
    assert len(calls) == 3
    assert res.chosen is first


def test_release_digest_and_the_measured_releases_by_hand() -> None:
    z = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    assert release_digest(z) == release_digest(z.copy())
    assert release_digest(z) != release_digest(z.iloc[::-1].reset_index(drop=True))  # another pairing
    m = MeasuredReleases()
    m.note(0, {"release_digest": "d0"})
    m.note(1, {"release_digest": "d1", "error": "refused"})  # a failed trial measured nothing
    m.note(2, {"release_digest": "d0"})  # the first to measure a release keeps it
    assert m.known() == frozenset({"d0"})
    assert m.repeat_of({"release_digest": "d0", "same_release": True}) == 0
    assert m.repeat_of({"release_digest": "d0"}) is None
