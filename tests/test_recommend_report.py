"""The recommendation report's answer in the data's units and its map: the winner's settings
read from the public provenance (and the release) alone, worked out by hand on small records;
nothing of x that the release does not publish (a merged rare category) reaches them; and the
map's grouping of overlapping trials."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ppdm.report.recommend import _log_axis, map_groups, winner_in_data_units

GIVEN = {"numeric": ["birth_date", "length_of_stay", "total_charges"], "categorical": ["zip3", "sex"],
         "dates": {"birth_date": "%Y-%m-%d"}, "categories": {}, "class_column": "readmitted",
         "quasi_identifiers": ["birth_date", "zip3", "sex"], "weight": None}


def _recode(params: dict, categories: dict, rules: dict | None = None) -> dict:
    return {"technique": {"name": "recode", "parameters": params}, "schema": GIVEN,
            "privacy": {"technique": "recode", "rare_categories": rules} if rules else None,
            "output": {"schema": {**GIVEN, "categories": categories}}}


def test_recode_shows_cut_points_cohorts_and_the_rare_category_rule() -> None:
    rule = "categories of 'zip3' with fewer than min_count=30 records become 'Other'"
    prov = _recode({"cohort": 10, "breaks": 3, "min_count": 30},
                   {"birth_date": ["1930-1939", "1940-1949"],
                    "length_of_stay": ["[0,3]", "(3,6]", "(6,13]"],
                    "zip3": ["Other", "017", "021"]},
                   {"zip3": rule, "sex": "categories of 'sex' ... become 'Other'"})
    # by hand: the cut points are the upper ends of every interval but the last (3 and 6);
    # sex had no rare category, so its rule held and changed nothing
    assert winner_in_data_units(prov) == [
        ("birth_date", "10-year cohorts: 1930-1939, 1940-1949"),
        ("length_of_stay", "3 intervals, cut at 3, 6: [0,3], (3,6], (6,13]"),
        ("zip3", f"{rule}; the release's categories: Other, 017, 021"),
        ("sex", "categories of 'sex' ... become 'Other' (none did)"),
    ]
    # a date's age bands, a year period; more labels than are listed show both ends and the count
    prov = _recode({"age_at": "2024-01-01", "breaks": 2}, {"birth_date": ["[8,50]", "(50,94]"]})
    assert winner_in_data_units(prov) == [("birth_date", "age in whole years on 2024-01-01, in bands: [8,50], (50,94]")]
    years = [str(y) for y in range(1930, 1950)]
    prov = _recode({"date_period": "year"}, {"birth_date": years})
    assert winner_in_data_units(prov) == [
        ("birth_date", "year only: 1930, 1931, 1932, 1933, 1934, …, 1948, 1949 (20 in all)")]


def test_a_chain_names_its_steps_and_local_suppression_counts_blanks_in_the_release() -> None:
    prov = {"technique": {"name": "recode then local-suppression", "parameters": {"steps": [
        {"step": "recode", "name": "recode", "parameters": {"date_period": "year"}},
        {"step": "local-suppression", "name": "local-suppression", "parameters": {"k": 3}}]}},
        "schema": GIVEN,
        "privacy": {"composition": [{"step": "recode", "privacy": None},
                                    {"step": "local-suppression", "privacy": {
                                        "k": 3, "keys": ["birth_date", "zip3"], "criterion": "intruder"}}]},
        "output": {"schema": {**GIVEN, "categories": {"birth_date": ["1930", "1931"]}}}}
    z = pd.DataFrame({"birth_date": ["1930", None, "1931", None], "zip3": ["017", "021", None, "017"]})
    got = winner_in_data_units(prov, z)
    assert got[0] == ("recode: birth_date", "year only: 1930, 1931")
    assert got[1][0] == "local-suppression: k" and "at least k=3 released records" in got[1][1]
    # by hand: birth_date is blank in rows 1 and 3, zip3 in row 2
    assert got[2][0] == "local-suppression: blank key cells in the release"
    assert got[2][1].startswith("birth_date 2, zip3 1 of 4 records")


def test_noise_scale_in_data_units_is_estimated_from_the_release() -> None:
    prov = {"technique": {"name": "gaussian-noise", "parameters": {"level": 0.25}}, "schema": GIVEN,
            "privacy": None, "output": {}}
    z = pd.DataFrame({"length_of_stay": [1.0, 2.0, 3.0, 4.0, 5.0], "readmitted": ["y"] * 5})
    # by hand: Var z (n − 1) = 10/4 = 2.5 = (1 + 0.25)·Var x, so σ ≈ √2 = 1.414; the class is never noised
    assert winner_in_data_units(prov, z) == [
        ("level", "each value changed with probability 0.25"),
        ("length_of_stay", "a changed value gets Gaussian noise of standard deviation ≈ 1.414 (the column's own, "
                           "estimated from the release)")]
    uniform = {**prov, "technique": {"name": "uniform-noise", "parameters": {"level": 0.25}}}
    assert winner_in_data_units(uniform, z)[1] == (
        "length_of_stay", "a changed value is drawn uniformly over the column's range; the release's standard "
                          "deviation is 1.581")  # √2.5; never the range, which is two records' values


def test_no_value_of_a_record_is_shown() -> None:
    """An outlier planted in the release (its maximum) is not among the noise settings shown."""
    z = pd.DataFrame({"total_charges": [100.0, 200.0, 300.0, 31415.926535]})
    for name in ("gaussian-noise", "uniform-noise"):
        prov = {"technique": {"name": name, "parameters": {"level": 0.2}}, "schema": GIVEN, "privacy": None}
        text = " ".join(b for _, b in winner_in_data_units(prov, z))
        assert "31415" not in text and "3.142e+04" not in text and "100" not in text, text


def test_dp_shows_its_epsilon_and_other_techniques_their_parameters() -> None:
    prov = {"technique": {"name": "dpcube", "parameters": {"epsilon": 0.5, "alpha": 0.3, "partitioning": "kd"}},
            "schema": GIVEN, "output": {},
            "privacy": {"epsilon": 0.5, "differentially_private": True, "neighbouring": {"relation": "add-remove"}}}
    assert winner_in_data_units(prov)[0] == ("ε", "0.5 (add-remove neighbours; differentially private)")
    prov = {"technique": {"name": "rounding", "parameters": {"k": 5, "c": None, "method": "optimal"}},
            "schema": GIVEN, "privacy": None}
    assert winner_in_data_units(prov) == [("k", "5"), ("method", "optimal")]
    assert winner_in_data_units(None) == []


def test_a_merged_rare_category_of_x_never_reaches_the_report() -> None:
    """The release below merges a category held by one person into 'Other': its name is in
    the owner's private log, never among the settings the report shows."""
    from ppdm.anonymize.registry import make_technique
    from ppdm.experiments.release import release
    from ppdm.metrics.release_check import GateOptions

    rng = np.random.default_rng(0)
    n = 60
    x = pd.DataFrame({"town": ["Smallville"] + list(rng.choice(["north", "south"], n - 1)),
                      "v": rng.normal(0, 1, n).round(2), "y": rng.choice(["a", "b"], n)})
    gate = GateOptions(allow_unchanged=True, allow_verbatim=True, allow_untouched_keys=True,
                       allow_pass_through=("v",), suggest=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(x, make_technique("recode", class_column="y", params={"min_count": 5}),
                      quasi_identifiers="town", gate_options=gate)
    shown = " ".join(f"{a} {b}" for a, b in winner_in_data_units(rel.provenance, rel.data))
    assert "Other" in shown and "min_count=5" in shown
    assert "Smallville" not in shown


def test_overlapping_trials_are_one_group_and_decades_go_logarithmic() -> None:
    # by hand: the x span is 0.4, so points within 0.4/120 ≈ 0.0033 share a cell (0.1 and 0.1004
    # both round to cell 30); the y span is 2 (cells of 0.0167: 1.0 is cell 60)
    pts = [(0.1, 1.0), (0.1, 1.0), (0.1004, 1.0), (0.5, 3.0)]
    assert sorted(map(sorted, map_groups(pts))) == [[0, 1, 2], [3]]
    # on a log axis 0.001 and 0.0011 are 0.04 decades apart of a 2-decade span: two cells
    assert len(map_groups([(0.001, 1.0), (0.0011, 1.0), (0.1, 1.0)], log_x=True)) == 3
    assert _log_axis([0.001, 0.1]) and not _log_axis([0.1, 0.5]) and not _log_axis([0.0, 0.1])
    assert map_groups([]) == []
