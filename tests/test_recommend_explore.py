"""How the search of ``ppdm recommend`` leaves the sampler's region: neighbours of the closest
trials, random settings, a repeat told as the worst outcome, and techniques that never make a
measurable release set aside before anything meets the policy."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import optuna
import pandas as pd

from ppdm.anonymize.search_space import Choice, Integer, Real
from ppdm.data.schema import Schema
from ppdm.experiments.recommend import recommend
from ppdm.experiments.recommend.search import PENALTY, RACE_AFTER, closeness, race
from ppdm.experiments.recommend.spaces import TechniqueSpace, neighbour_setting
from ppdm.experiments.recommend.study import STUDY_NAME

SPACE = TechniqueSpace(
    name="t", params={"mode": Choice(("cover", "sdcmicro")), "weights": Choice(("entropy", "size", "none")),
                      "k": Integer(2, 30), "level": Real(0.1, 1.0)},
    fixed={"columns": None}, when={"weights": {"mode": ("cover",)}}, defaults={"mode": "cover"},
    deterministic=True, epsilon=None)


def _params(setting: dict) -> dict:
    return {k.split(":", 1)[1]: v for k, v in setting.items() if k != "technique"}


def test_a_neighbour_changes_one_parameter_within_a_fifth_of_its_range() -> None:
    rng = np.random.default_rng(0)
    base = {"columns": None, "mode": "cover", "weights": "entropy", "k": 10, "level": 0.5}
    changed: dict[str, int] = {}
    for _ in range(400):
        s = neighbour_setting(SPACE, base, rng, 100)
        assert s is not None and s["technique"] == "t"
        got = _params(s)
        diff = [p for p in ("mode", "weights", "k", "level") if p in got and got[p] != base[p]]
        assert len(diff) == 1, (got, diff)
        p = diff[0]
        changed[p] = changed.get(p, 0) + 1
        if p == "mode":  # sdcMicro's mode takes no weights: the parameter is not named at all
            assert got["mode"] == "sdcmicro" and "weights" not in got
        elif p == "weights":
            assert got["weights"] in ("size", "none")
        elif p == "k":
            # a fifth of the range 2..30 is 5.6: at most 6 away after rounding, and at least one step
            assert isinstance(got["k"], int) and 1 <= abs(got["k"] - 10) <= 6
        else:
            assert abs(got["level"] - 0.5) <= 0.2 * 0.9 + 1e-12
    assert set(changed) == {"mode", "weights", "k", "level"}  # each searched parameter can be the one
    # from sdcMicro's mode, switching to cover draws the weights cover needs
    base2 = {"columns": None, "mode": "sdcmicro", "k": 30, "level": 1.0}
    for _ in range(100):
        got = _params(neighbour_setting(SPACE, base2, rng, 100))
        if got["mode"] == "cover":
            assert got["weights"] in ("entropy", "size", "none") and got["k"] == 30
        if got["k"] != 30:
            assert 24 <= got["k"] <= 29  # at the top end a step goes down
    empty = TechniqueSpace(name="e", params={}, fixed={}, when={}, defaults={}, deterministic=True, epsilon=None)
    assert neighbour_setting(empty, {}, rng, 10) is None


def test_closeness_by_hand() -> None:
    def rec(number, feasible, loss=None, margins=(), error=None, repeat_of=None):
        return SimpleNamespace(number=number, feasible=feasible, utility_loss=loss, error=error, repeat_of=repeat_of,
                               lines=[SimpleNamespace(margin=m) for m in margins])

    assert closeness(rec(3, True, 0.3, (-1.0, -0.2))) == (0.0, 0.3, 3)
    # a miss counts only what lies beyond the lines: 0.5 + 0.25
    assert closeness(rec(4, False, 0.1, (0.5, -1.0, 0.25))) == (1.0, 0.75, 4)
    assert closeness(rec(5, False, 0.1, (0.5,), repeat_of=4)) is None
    assert closeness(rec(6, False, None, (1.0,), error="refused")) is None
    # any release that met the policy comes before every miss, however small
    assert closeness(rec(7, True, 9.0, (-0.1,))) < closeness(rec(8, False, 0.0, (1e-9,)))


def test_before_anything_meets_only_techniques_that_never_made_a_release_are_set_aside() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spaces = [SimpleNamespace(name=n) for n in "ABC"]
    stu = optuna.create_study(directions=["minimize", "minimize"])

    def add(name: str, error: str | None) -> None:
        t = stu.ask()
        t.suggest_categorical("technique", list("ABC"))
        t.set_user_attr("outcome", {"technique": name, "error": error})
        t.set_constraint("record_linkage", 0.2)
        stu.tell(t, list(PENALTY) if error else [0.5, 1.0])

    for _ in range(RACE_AFTER - 1):
        add("A", "refused by the release check")
    add("B", None)
    assert race(stu, spaces) == ({}, {})  # A has fewer than RACE_AFTER trials
    add("A", "refused by the release check")
    for _ in range(RACE_AFTER):
        add("B", "refused")  # B made one release that could be measured: it stays
    aside, weights = race(stu, spaces)
    assert list(aside) == ["A"] and f"after {RACE_AFTER} trials" in aside["A"] and weights == {}
    for _ in range(RACE_AFTER):
        add("C", "refused")
    assert list(race(stu, spaces)[0]) == ["A", "C"]
    for _ in range(RACE_AFTER):
        add("B", "refused")
    stu2 = optuna.create_study(directions=["minimize", "minimize"])
    stu, stu2 = stu2, stu
    for name in "ABC":
        for _ in range(RACE_AFTER):
            add(name, "refused")
    assert race(stu, spaces) == ({}, {})  # never every technique at once


def _table(n: int = 80, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(1)
    return pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(1),
                         "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")})


def test_the_search_explores_neighbours_and_tells_repeats_as_the_worst(tmp_path: Path) -> None:
    x = _table()
    pol = {"risk": {"record_linkage": 0.6}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"mdav": {"k": {"low": 2, "high": 12}, "columns": None},
                          "gaussian-noise": {"level": {"low": 0.05, "high": 1.0}}}}
    res = recommend(x, pol, schema=Schema.infer(x, "label"), n_trials=60, random_state=4, study=tmp_path / "s.db")
    stu = optuna.load_study(study_name=STUDY_NAME, storage=f"sqlite:///{tmp_path / 's.db'}")
    trials = stu.get_trials(deepcopy=False)
    by_number = {t.number: t for t in res.trials}
    neighbours = [t for t in trials if str(t.user_attrs.get("proposed", "")).startswith("neighbour of trial ")]
    assert neighbours, "no trial explored a neighbour"
    for t in neighbours:
        of = by_number[int(t.user_attrs["proposed"].rsplit(" ", 1)[1])]
        mine = by_number[t.number]
        assert of.number < t.number and of.technique == mine.technique and of.repeat_of is None
        assert sum(mine.params.get(p) != of.params.get(p) for p in set(mine.params) | set(of.params)) == 1
    assert any(t.user_attrs.get("proposed") == "random" for t in trials)
    repeats = [t for t in trials if t.user_attrs.get("repeat_of") is not None]
    assert repeats, "MDAV's eleven settings in 60 trials must repeat"
    for t in repeats:
        # the worst outcome: the sampler moves away from a setting it has measured
        assert t.state == optuna.trial.TrialState.COMPLETE and tuple(t.values) == PENALTY
        assert all(v == PENALTY[1] for v in t.constraints.values())
        assert by_number[t.number].outcome == "repeat"
    assert res.outcomes()["repeat"] == len(repeats)


def test_the_closest_trials_hold_at_most_three_of_one_technique() -> None:
    from ppdm.experiments.recommend.search import INCUMBENTS, INCUMBENTS_EACH, SearchState

    st = SearchState(set(), {}, None, 0, None, [], None, None, 1)  # type: ignore[arg-type]

    def rec(number, name, excess, feasible=False, loss=None):
        return SimpleNamespace(number=number, technique=name, params={"n": number}, feasible=feasible,
                               utility_loss=loss, error=None, repeat_of=None,
                               lines=[SimpleNamespace(margin=-1.0 if feasible else excess)])

    for i in range(6):  # A meets the policy six times
        st.consider(rec(i, "A", 0.0, feasible=True, loss=1.0 + i))
    st.consider(rec(6, "B", 0.3))
    st.consider(rec(7, "C", 0.01))
    st.consider(rec(8, "B", 0.2))
    st.consider(rec(9, "D", 5.0))  # farther than every kept trial: not kept
    assert INCUMBENTS == 5 and INCUMBENTS_EACH == 3
    # A's three best releases, then the closest misses of the others
    assert [(c[2], name) for c, name, _ in st.closest] == [(0, "A"), (1, "A"), (2, "A"), (7, "C"), (8, "B")]
