"""Resolving the tree learners that Framework and Forest Framework perturb around.

A technique's ``forest``/``tree`` parameter may be ``None`` (build the paper's
learner, imported only when needed), a fitted tree or forest, a list of fitted
trees, an unfitted scikit-learn estimator (cloned and fitted on the table) or a
factory ``f(X, y)`` returning a fitted tree, forest or list of trees.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ppdm.errors import ParameterError, PPDMError
from ppdm.trees.base import TreeModel
from ppdm.trees.intersections import forest_trees

# names a learner may use for the settings papers 004 and the spec talk about
_ALIASES: dict[str, tuple[str, ...]] = {
    "n_trees": ("n_trees", "n_estimators", "num_trees"),
    "min_leaf": ("min_leaf", "min_num_obj", "min_samples_leaf", "min_leaf_size"),
    "cf": ("cf", "confidence_factor", "confidence"),
    "goodness": ("goodness", "goodness_threshold"),
    "separation": ("separation", "separation_threshold"),
    "min_gain_ratio": ("min_gain_ratio", "minimum_gain_ratio"),
}


def paper_learner(class_name: str, **settings: Any) -> Any:
    """An unfitted ``ppdm.trees.<class_name>`` with ``settings`` set.

    Imported when first needed, so techniques load even where a learner is not
    installed. A setting the learner has no parameter for is skipped with a warning.
    """
    import ppdm.trees as trees_pkg

    cls = getattr(trees_pkg, class_name, None)
    if cls is None:
        raise PPDMError(
            f"ppdm.trees.{class_name} is not available; pass fitted trees or a learner explicitly"
        )
    known = set(cls().get_params())
    params: dict[str, Any] = {}
    skipped: list[str] = []
    for key, value in settings.items():
        name = next((a for a in _ALIASES.get(key, (key,)) if a in known), None)
        if name is None:
            skipped.append(key)
        else:
            params[name] = value
    if skipped:
        warnings.warn(f"{class_name} has no parameter for {', '.join(skipped)}; using its default", stacklevel=3)
    return cls(**params)


def _is_fitted(est: Any) -> bool:
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    except TypeError:  # not an estimator: treat as fitted if it can route records
        return True
    return True


def resolve_trees(
    spec: Any, X: pd.DataFrame, y: pd.Series, default: Callable[[], Any], what: str = "forest"
) -> list[TreeModel]:
    """The fitted trees ``spec`` stands for (see the module docstring)."""
    if spec is None:
        return forest_trees(default().fit(X, y))
    if isinstance(spec, (list, tuple)):
        out: list[TreeModel] = []
        for t in spec:
            out.extend(resolve_trees(t, X, y, default, what))
        if not out:
            raise ParameterError(f"{what} is an empty list")
        return out
    if hasattr(spec, "fit") and not _is_fitted(spec):
        return forest_trees(clone(spec).fit(X, y))
    if hasattr(spec, "estimators_") or (hasattr(spec, "apply") and hasattr(spec, "leaf_rules")):
        return forest_trees(spec)
    if callable(spec):
        return forest_trees(spec(X, y))
    raise ParameterError(
        f"{what} must be None, a fitted tree or forest, a list of trees, an estimator or a factory f(X, y); "
        f"got {type(spec).__name__}"
    )
