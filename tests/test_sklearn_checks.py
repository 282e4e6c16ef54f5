"""scikit-learn's own estimator checks on every registered technique and tree learner.

The project standard takes scikit-learn's estimator contract as the model; these
tests run ``parametrize_with_checks`` on small numeric arrays. Checks that cannot
hold by design are listed with a one-line reason (summarised in docs/architecture.md,
"scikit-learn's estimator checks").
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import (
    check_dont_overwrite_parameters,
    check_estimators_overwrite_params,
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
    parametrize_with_checks,
)

from ppdm.anonymize.registry import TECHNIQUES, _load_all
from ppdm.trees import C45Classifier, CARTClassifier, SysForClassifier

_load_all()

# Parameter settings that work on the checks' small random arrays without a class column.
# DPCube's default release has a noisy number of records (add/remove-one neighbours); the
# checks compare row counts, so they run on its replace-one form, which keeps the rows.
# Local suppression's default (k for an intruder who knows the blanked values) refuses random
# continuous keys, whose every value is unique; the checks take sdcMicro's reading.
SETTINGS: dict[str, dict] = {"random-substitution": {"gamma": 5.0},
                             "dpcube": {"neighbouring": "replace", "domain_from_data": True},
                             "local-suppression": {"criterion": "sdcmicro"}}

WHOLE_TABLE = {
    "check_methods_sample_order_invariance": (
        "a release is drawn for the whole table: reordering rows reorders the random draws"
    ),
    "check_methods_subset_invariance": (
        "a release is drawn for the whole table: a row's release depends on the rows beside it"
    ),
}
OBJECT_IS_CATEGORICAL = {
    "check_dtype_object": "object columns are categorical by design, and this technique masks numeric attributes only",
    "check_transformer_data_not_an_array": (
        "the checks' array-like wrapper arrives as object values, which are categorical by design"
    ),
}
WEKA_ORDER = {
    "check_classifiers_classes": "classes_ keeps the order of first appearance, as Weka declares it, not sorted order",
    "check_classifiers_train": "classes_ keeps the order of first appearance, so argmax of predict_proba is not sorted",
}
NUMERIC_TRANSFORM = {
    "check_transformer_data_not_an_array": (
        "the checks' array-like wrapper arrives as object values, which are categorical by design"
    ),
}

EXPECTED: dict[str, dict[str, str]] = {
    "dpcube": {**WHOLE_TABLE, **NUMERIC_TRANSFORM},
    "gadp": {
        **WHOLE_TABLE,
        **OBJECT_IS_CATEGORICAL,
        "check_methods_subset_invariance": "GADP fits a covariance to the table it releases; one record has none",
    },
    "gaussian-noise": {**WHOLE_TABLE, **NUMERIC_TRANSFORM},
    "uniform-noise": {**WHOLE_TABLE, **NUMERIC_TRANSFORM},
    "random-technique": {**WHOLE_TABLE, **NUMERIC_TRANSFORM},
    "mdav": {
        **OBJECT_IS_CATEGORICAL,
        "check_methods_subset_invariance": "MDAV groups the released table's records: one record makes no group of k",
        "check_fit2d_1sample": "a single record is refused because it cannot form a group of k (message names k)",
        "check_dict_unchanged": "groups_ and centroids_ describe the partition of the last released table",
    },
    "rounding": dict(OBJECT_IS_CATEGORICAL),
    "local-suppression": {
        **WHOLE_TABLE,
        **NUMERIC_TRANSFORM,
        "check_dict_unchanged": "privacy_report_ and suppressed_ describe the cells blanked in the last released table",
    },
    "recode": {c: "recoded numbers are released as interval labels (text), which the checks compare as numbers"
               for c in ("check_pipeline_consistency", "check_estimators_pickle", "check_transformer_general",
                         "check_transformer_preserve_dtypes", "check_methods_sample_order_invariance",
                         "check_methods_subset_invariance", "check_fit_idempotent",
                         "check_transformer_data_not_an_array")},
    "generalize": {
        **{c: "generalised numbers are released as interval labels (text), which the checks compare as numbers"
           for c in ("check_estimators_pickle", "check_transformer_general", "check_transformer_preserve_dtypes",
                     "check_fit_idempotent", "check_transformer_data_not_an_array")},
        "check_methods_sample_order_invariance": "records are suppressed by the classes of the whole released table",
        "check_methods_subset_invariance": "records are suppressed by the classes of the whole released table",
        "check_dict_unchanged": "privacy_report_ and suppressed_ describe the records suppressed in the last release",
    },
    "top-bottom-coding": dict(OBJECT_IS_CATEGORICAL),
    "random-substitution": {**WHOLE_TABLE, **NUMERIC_TRANSFORM},
    "C45Classifier": {
        **WEKA_ORDER,
        "check_sample_weight_equivalence_on_dense_data": (
            "C4.5's MDL correction and pruning count records, so weight 2 is not two copies"
        ),
    },
    "SysForClassifier": dict(WEKA_ORDER),
    "CARTClassifier": {
        "check_dtype_object": "object cells are category labels; an unhashable cell fails as a label, not a number",
        "check_classifiers_train": "min_leaf_frac keeps leaves at a share of the records (paper 004), so fit is coarse",
    },
}


def _name(est: BaseEstimator) -> str:
    return getattr(est, "method_name", type(est).__name__)


ARRAY_TECHNIQUES = [
    cls(random_state=0, **SETTINGS.get(name, {})) for name, cls in sorted(TECHNIQUES.items())
    if not cls.needs_class and not getattr(cls, "needs_categorical", False)
]
LEARNERS = [C45Classifier(), SysForClassifier(n_trees=2), CARTClassifier(random_state=0)]
CLASS_TECHNIQUES = [cls(random_state=0) for _, cls in sorted(TECHNIQUES.items())
                    if cls.needs_class or getattr(cls, "needs_categorical", False)]


def _expected(est: BaseEstimator) -> dict[str, str]:
    return EXPECTED[_name(est)]


# The checks feed random arrays that no schema declares, so the techniques advise declaring bounds,
# domains and keys each time; that advice is tested where it is made, not part of the contract here
@pytest.mark.filterwarnings("ignore::ppdm.anonymize.differential_privacy.DomainFromDataWarning")
@pytest.mark.filterwarnings("ignore::ppdm.anonymize.differential_privacy.CoarseGridWarning")
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
@pytest.mark.filterwarnings("ignore:local-suppression. no quasi-identifiers declared:UserWarning")
@pytest.mark.filterwarnings("ignore:generalize. no quasi-identifiers declared:UserWarning")
@parametrize_with_checks(ARRAY_TECHNIQUES + LEARNERS, expected_failed_checks=_expected)
def test_sklearn_estimator_checks(estimator: BaseEstimator, check: Callable) -> None:
    check(estimator)


# Techniques that need a class column cannot take the array checks (no array carries a
# class column by name), nor can PRAM, which changes categories and refuses the checks' numeric
# arrays; the checks of the parameter contract still apply.
PARAMETER_CHECKS = [
    check_get_params_invariance,
    check_set_params,
    check_no_attributes_set_in_init,
    check_estimators_overwrite_params,
    check_dont_overwrite_parameters,
]


@pytest.mark.parametrize("check", PARAMETER_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("estimator", CLASS_TECHNIQUES, ids=_name)
def test_class_technique_parameter_checks(estimator: BaseEstimator, check: Callable) -> None:
    if check in (check_estimators_overwrite_params, check_dont_overwrite_parameters):
        pytest.skip(f"{check.__name__} fits on a numeric array without a class column, which {_name(estimator)} "
                    "cannot take")
    check(_name(estimator), estimator)


@pytest.mark.parametrize("estimator", CLASS_TECHNIQUES, ids=_name)
def test_class_technique_default_constructible(estimator: BaseEstimator) -> None:
    check_parameters_default_constructible(_name(estimator), estimator)


def test_every_registered_technique_is_checked() -> None:
    checked = {_name(e) for e in ARRAY_TECHNIQUES + CLASS_TECHNIQUES}
    assert checked == set(TECHNIQUES)
    assert set(EXPECTED) == {_name(e) for e in ARRAY_TECHNIQUES + LEARNERS}
