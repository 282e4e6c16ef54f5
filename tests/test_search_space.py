"""Every registered technique says what a search may try with it: a ``search_space`` whose
parameters are the technique's own, whose conditions and fixed values name them, and every
setting of which the technique accepts — or ``NotSearchable`` with the reason."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppdm.anonymize.registry import TECHNIQUES, _load_all, make_technique, technique_params
from ppdm.anonymize.search_space import (
    Choice,
    Integer,
    NotSearchable,
    Real,
    SearchSpace,
    resolve_column_sets,
    search_space_of,
    space_of,
    unique_valued,
)
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError

_load_all()
NAMES = sorted(TECHNIQUES)
SCHEMA = Schema(numeric=["a", "b"], categorical=["c"], class_column="y", quasi_identifiers=["c"])


@pytest.mark.parametrize("name", NAMES)
def test_every_technique_declares_a_search_space(name: str) -> None:
    space = search_space_of(TECHNIQUES[name])
    if isinstance(space, NotSearchable):
        assert len(space.reason.split()) >= 3, f"{name}: say why it is not searched"
        return
    own = set(technique_params(TECHNIQUES[name]))
    for p in [*space.params, *space.fixed]:
        assert p in own, f"{name}: {p!r} is not a parameter of the technique"
    assert space.params or space.fixed or space.deterministic is not None
    if space.epsilon is not None:
        assert space.epsilon in own


def test_a_technique_without_a_declaration_is_named() -> None:
    class Bare:
        method_name = "bare"

    with pytest.raises(ParameterError, match="'bare' declares no search_space"):
        search_space_of(Bare)


def _settings(space: SearchSpace) -> st.SearchStrategy[dict]:
    """Settings drawn from the space as a search draws them (conditions respected)."""

    @st.composite
    def draw(d):  # type: ignore[no-untyped-def]
        chosen: dict = {}
        for p, dist in space.params.items():
            if not space.active(p, chosen):
                continue
            if isinstance(dist, Choice):
                chosen[p] = d(st.sampled_from(dist.values))
            elif isinstance(dist, Integer):
                chosen[p] = d(st.integers(dist.low, dist.high_for(200)))
            else:
                chosen[p] = d(st.floats(dist.low, dist.high, allow_nan=False))
        return {**space.fixed, **chosen}

    return draw()


SEARCHABLE = [n for n in NAMES if isinstance(search_space_of(TECHNIQUES[n]), SearchSpace)]


@pytest.mark.parametrize("name", SEARCHABLE)
def test_every_setting_of_a_space_is_accepted(name: str) -> None:
    space = search_space_of(TECHNIQUES[name])

    @given(_settings(space))
    def check(params: dict) -> None:
        tech = make_technique(name, class_column="y", schema=SCHEMA, random_state=0, params=params)
        tech._validate_params()

    check()


def test_ranges_refuse_what_cannot_be_searched() -> None:
    with pytest.raises(ParameterError, match="above its high end"):
        Real(2.0, 1.0)
    with pytest.raises(ParameterError, match="log-scale range must stay above 0"):
        Real(0.0, 1.0, log=True)
    with pytest.raises(ParameterError, match="whole numbers"):
        Integer(1, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="lists a value twice"):
        Choice(("a", "a"))
    with pytest.raises(ParameterError, match="at least one value"):
        Choice(())
    with pytest.raises(ParameterError, match="unknown need"):
        SearchSpace({"k": Integer(2, 3)}, needs=("rows",))
    with pytest.raises(ParameterError, match="'b' must come before 'a'"):
        SearchSpace({"a": Real(0, 1), "b": Choice((1, 2))}, when={"a": {"b": (1,)}})
    with pytest.raises(ParameterError, match="both varied and fixed"):
        SearchSpace({"a": Real(0, 1)}, fixed={"a": 0.5})
    with pytest.raises(ParameterError, match="neither varied nor fixed"):
        SearchSpace({"a": Real(0, 1)}, epsilon="eps")
    with pytest.raises(ParameterError, match="needs a reason"):
        NotSearchable(" ")


def test_integer_caps_at_a_share_of_the_records() -> None:
    k = Integer(2, 100, log=True, at_most_share=0.5)
    assert k.high_for(60) == 30
    assert k.high_for(1000) == 100
    assert k.high_for(3) == 2  # never below the low end
    assert k.high_for(None) == 100


def test_conditions_and_needs() -> None:
    space = SearchSpace({"mode": Choice(("a", "b")), "p": Real(0.1, 0.5)}, when={"p": {"mode": ("b",)}},
                        needs=("class", "keys"))
    assert space.active("p", {"mode": "b"}) and not space.active("p", {"mode": "a"})
    assert space.missing_need(SCHEMA) is None
    assert space.missing_need(Schema(numeric=["a"])) == "needs a class column and declared quasi-identifiers"
    assert "when mode is 'b'" in space.describe()["p"]
    # True == 1 in Python; a condition on a boolean must not accept the number
    flag = SearchSpace({"f": Choice((True, False)), "q": Real(0.1, 0.2)}, when={"q": {"f": (True,)}})
    assert flag.active("q", {"f": True}) and not flag.active("q", {"f": 1})


def test_declarations_stay_out_of_the_estimator_parameters() -> None:
    # a class attribute, not an __init__ argument: get_params and clone are unchanged
    for name in NAMES:
        cls = TECHNIQUES[name]
        assert "search_space" not in inspect.signature(cls.__init__).parameters
        assert "search_space" not in cls().get_params()


def test_the_documented_spaces_are_the_declared_ones() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "recommend.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            rows[cells[0].strip("`")] = (cells[1], cells[2])
    for name in SEARCHABLE:
        space = search_space_of(TECHNIQUES[name])
        assert name in rows, f"docs/recommend.md lists no search space for {name!r}"
        text, needs = rows[name]
        assert text == "; ".join(f"`{k}` {v}" for k, v in space.describe().items()), name
        assert needs == (", ".join(space.needs) or "—"), name


def test_choice_values_a_table_does_not_allow_are_dropped() -> None:
    space = space_of("recode>local-suppression")
    assert isinstance(space, SearchSpace)
    assert space.value_needs == {"local-suppression.importance": {"class": "class"}}
    every_key = Schema(numeric=["a", "b", "d"], categorical=["c"], dates={"d": "%Y-%m-%d"}, class_column="y",
                       quasi_identifiers=["a", "c", "d"])
    with_class = space.fitting(every_key)
    assert with_class is space
    no_class = space.fitting(Schema(numeric=["a", "b"], categorical=["c"], quasi_identifiers=["a", "c"]))
    assert "local-suppression.importance" not in no_class.params
    assert no_class.fixed["local-suppression.importance"] is None
    # no date key: recoding is not offered a period for dates
    assert set(no_class.params) == set(space.params) - {"local-suppression.importance", "recode.date_period"}
    # keys that are dates and categories: no intervals of numbers either (recode would refuse
    # them as parameters no column takes); the technique's defaults act instead
    dates_only = space.fitting(Schema(numeric=["a", "d"], categorical=["c"], dates={"d": "%Y-%m-%d"},
                                      class_column="y", quasi_identifiers=["c", "d"]))
    assert set(dates_only.params) == set(space.params) - {"recode.breaks", "recode.method"}
    assert "recode.breaks" not in dates_only.fixed and dates_only.param_needs == {
        "recode.date_period": "date-keys"}
    with pytest.raises(ParameterError, match="must name a parameter the space varies"):
        SearchSpace({"k": Integer(2, 5)}, param_needs={"k": "sunshine"})
    with pytest.raises(ParameterError, match="must name values of a Choice"):
        SearchSpace({"k": Integer(2, 5)}, value_needs={"k": {3: "class"}})
    with pytest.raises(ParameterError, match="unknown need"):
        SearchSpace({"m": Choice(("a", "b"))}, value_needs={"m": {"a": "sunshine"}})


def test_unique_valued_columns_by_hand() -> None:
    import numpy as np
    import pandas as pd

    # 40 records. "w": 3 values of their own (7.5 %), the rest shared; "v": 2 of their own (5 %, not
    # above the share); "q" a key and "y" the class, never offered whatever their values
    w = [1.0, 2.0, 3.0] + [9.0] * 37
    v = [1.0, 2.0] + [5.0] * 38
    ids = list(range(40))
    t = pd.DataFrame({"w": w, "v": v, "q": [float(i) for i in ids], "y": [float(i) for i in ids],
                      "c": ["a"] * 40})
    sch = Schema(numeric=["w", "v", "q"], categorical=["c"], class_column="y", quasi_identifiers=["q"])
    assert unique_valued(t, sch) == ["w"]
    # a missing value is never a value of its own
    t2 = t.assign(v=[1.0, 2.0, np.nan, np.nan] + [5.0] * 36)
    assert unique_valued(t2, sch) == ["w"]
    t3 = t.assign(v=[1.0, 2.0, 3.0, np.nan] + [5.0] * 36)
    assert unique_valued(t3, sch) == ["w", "v"]
    # a chain's step parameter is resolved, other parameters and explicit lists are left alone
    params = {"mdav.columns": "unique-valued", "mdav.k": 3, "other.columns": ["v"]}
    assert resolve_column_sets(params, t3, sch) == {"mdav.columns": ["w", "v"], "mdav.k": 3, "other.columns": ["v"]}
    assert resolve_column_sets({"columns": None}, t, sch) == {"columns": None}
    with pytest.raises(ParameterError, match="no such column"):
        resolve_column_sets({"columns": "unique-valued"}, t.assign(w=9.0), sch)
    # the choice is offered only where the table has such a column
    space = space_of("mdav")
    assert isinstance(space, SearchSpace)
    assert "columns" in space.fitting(sch, t).params
    assert space.fitting(sch, t.assign(w=9.0)).fixed["columns"] is None
