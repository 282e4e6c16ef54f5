"""The helpers issue #32 gathered duplicated code into, each on a tiny hand-checked case."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppdm.anonymize.base import check_known, column_list, split_names
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.experiments._release_records import replay_warnings
from ppdm.metrics._common import observed_sd, sd_from_sums
from ppdm.utils import loads_json


def test_split_names_and_column_list() -> None:
    assert split_names(" a, b;c ,") == ["a", "b", "c"]
    assert split_names(("a", "b")) == ("a", "b")  # anything but text as given
    assert column_list("columns", "a;b") == ["a", "b"]
    assert column_list("columns", None) is None
    with pytest.raises(ParameterError, match="columns must be a column name or a list of column names, got 3"):
        column_list("columns", 3)


def test_check_known_names_the_first_unknown_column() -> None:
    check_known("keys", ["a", "b"], ["b", "a", "c"])
    with pytest.raises(ParameterError, match=r"^keys names 'x', which is not an attribute of the table$"):
        check_known("keys", ["a", "x", "y"], ["a"])
    with pytest.raises(ParameterError, match="which is not a column of the table"):
        check_known("strata", ["z"], ["a"], "a column of the table")


def test_sd_from_sums_by_hand() -> None:
    # column 1: 1, 2, 3 → mean 2, squared deviations 1 + 0 + 1 = 2, sd = √(2 / 2) = 1;
    # column 2: one observed cell → 0
    assert np.allclose(sd_from_sums(np.array([2.0, 0.0]), np.array([3, 1])), [1.0, 0.0])
    a = np.array([[1.0, 5.0], [2.0, np.nan], [3.0, np.nan]])
    assert np.allclose(observed_sd(a), [1.0, 0.0])


def test_loads_json_raises_the_given_error() -> None:
    assert loads_json('{"a": 1}', "x") == {"a": 1}
    with pytest.raises(SchemaError, match=r"^schema file is not valid JSON: "):
        loads_json("{", "schema file", SchemaError)
    with pytest.raises(PPDMError, match=r"^'m.json' is not valid JSON: "):
        loads_json("[1,", "'m.json'")


def test_replay_warnings_lists_each_once_and_reissues_them() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("too   few\nrecords", UserWarning, stacklevel=1)
        warnings.warn("too few records", UserWarning, stacklevel=1)
        warnings.warn("bins", RuntimeWarning, stacklevel=1)
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        lines = replay_warnings(caught)
    assert lines == ["UserWarning: too few records", "RuntimeWarning: bins"]
    assert len(again) == 3
