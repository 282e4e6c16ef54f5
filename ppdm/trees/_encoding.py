"""Turning a DataFrame with numeric and categorical columns into the float matrix the tree
learners work on (categorical values as codes, NaN for unknown values), and back."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import column_or_1d

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.utils import check_table_input


@dataclass
class Encoding:
    """Column order, kinds and declared categorical values learnt at fit time."""

    columns: list[str]
    categories: dict[str, list[Any]]  # categorical column -> declared values, code order
    from_array: bool

    @property
    def is_nom(self) -> np.ndarray:
        return np.array([c in self.categories for c in self.columns], dtype=np.bool_)

    @property
    def nvals(self) -> np.ndarray:
        return np.array([len(self.categories.get(c, ())) for c in self.columns], dtype=np.int64)

    def transform(self, X: Any, order: Literal["C", "F"] = "C") -> np.ndarray:
        """Encode ``X`` (same columns as at fit) as an n × m float matrix (``order="F"``:
        column-major, for routing many records through a tree)."""
        df = _as_frame(X, self.columns if self.from_array else None)
        if not all(isinstance(c, str) for c in df.columns):
            df = df.set_axis([str(c) for c in df.columns], axis=1)
        if not self.from_array:
            absent = [c for c in self.columns if c not in df.columns]
            if absent:
                raise SchemaError(f"column(s) {', '.join(map(repr, absent))} seen at fit time are not in the table")
        elif df.shape[1] != len(self.columns):
            raise SchemaError(f"expected {len(self.columns)} columns, got {df.shape[1]}")
        out = np.empty((len(df), len(self.columns)), dtype=float, order=order)
        for j, c in enumerate(self.columns):
            s = df[c]
            cats = self.categories.get(c)
            if cats is None:
                out[:, j] = _numeric(s, c)
            else:
                # values never seen at fit time are treated as unknown
                codes = _codes(s, cats).astype(float)
                codes[codes < 0] = np.nan
                out[:, j] = codes
        return out


def _codes(s: pd.Series, cats: list[Any]) -> np.ndarray:
    """Position of each value in ``cats`` (−1 for missing or unseen values).

    The column is factorised first and only its distinct values are looked up in ``cats``
    (the same equality as looking up every value, without an object per row)."""
    vals = _plain(s)
    fc, uniq = pd.factorize(vals, use_na_sentinel=True)
    fc = np.asarray(fc, dtype=np.int64)
    lookup = pd.Index(cats, dtype=object).get_indexer(pd.Index(np.asarray(uniq, dtype=object), dtype=object))
    codes = np.where(fc >= 0, lookup[np.maximum(fc, 0)] if lookup.size else -1, -1).astype(np.int64)
    return codes


def _plain(s: pd.Series) -> pd.Series:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.astype(object)
    return s


def _numeric(s: pd.Series, name: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        conv = pd.to_numeric(s, errors="coerce")
        bad = conv.isna() & s.notna()
        if bad.any():
            raise SchemaError(
                f"numeric column {name!r} holds a non-numeric value {s[bad].iloc[0]!r}; "
                "declare it categorical (categorical=[...])"
            )
        s = conv
    v = s.to_numpy(dtype=float, na_value=np.nan)
    if np.isinf(v).any():
        raise SchemaError(f"numeric column {name!r} holds an infinite value")
    return v


def _as_frame(X: Any, columns: list[str] | None) -> pd.DataFrame:
    X = check_table_input(X)
    if isinstance(X, pd.DataFrame):
        return X
    arr = np.asarray(X)
    cols = columns if columns is not None else [f"x{i}" for i in range(arr.shape[1])]
    if len(cols) != arr.shape[1]:
        raise SchemaError(f"X has {arr.shape[1]} features, but it is expecting {len(cols)} features as input")
    return pd.DataFrame(arr, columns=cols)


def declared_values(s: pd.Series, order: str) -> list[Any]:
    """Values of a categorical column in code order: a pandas categorical keeps its declared
    categories; otherwise order of first appearance (as Weka's CSV loader declares them) or
    sorted."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return [_py(v) for v in s.cat.categories]
    vals = [_py(v) for v in pd.unique(s.dropna())]
    if order == "sorted":
        try:
            vals = sorted(vals)
        except TypeError:
            vals = sorted(vals, key=lambda v: (type(v).__name__, str(v)))
    return vals


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def fit_encoding(
    X: Any,
    *,
    categorical: Sequence[Hashable] | None,
    schema: Schema | None,
    value_order: str,
    class_column: str | None = None,
) -> tuple[Encoding, np.ndarray]:
    """Decide each column's kind and declared values; return the encoding and the matrix."""
    from_array = not isinstance(X, pd.DataFrame)
    df = _as_frame(X, None)
    if df.shape[1] == 0:
        raise SchemaError("the table has no attribute columns")
    if len(df) == 0:
        raise SchemaError("the table has no rows")
    if df.columns.has_duplicates:
        raise SchemaError(f"column {df.columns[df.columns.duplicated()][0]!r} appears twice in the table")
    columns = [str(c) for c in df.columns]
    df.columns = columns
    if class_column is not None and class_column in columns:
        raise SchemaError(f"the class column {class_column!r} is also among the attributes")
    cat: set[str] = set()
    if categorical is not None:
        for c in categorical:
            name = columns[c] if isinstance(c, (int, np.integer)) and from_array else str(c)
            if name not in columns:
                raise ParameterError(f"categorical column {c!r} is not in the table")
            cat.add(name)
    if schema is not None:
        for c in schema.categorical:
            if c in columns:
                cat.add(c)
        num_declared = set(schema.numeric)
    else:
        num_declared = set()
    for c in columns:
        s = df[c]
        if c in cat or c in num_declared:
            continue
        if isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            if from_array and s.dtype == object and pd.to_numeric(s, errors="coerce").notna().eq(s.notna()).all():
                continue  # an object array of numbers
            cat.add(c)
    categories = {c: declared_values(df[c], value_order) for c in columns if c in cat}
    enc = Encoding(columns, categories, from_array)
    return enc, enc.transform(df if not from_array else df.to_numpy())


def encode_labels(y: Any, value_order: str) -> tuple[np.ndarray, np.ndarray]:
    """Class labels to codes 0..k−1 and the label array (``classes_``)."""
    y = check_class_labels(y)
    s = y if isinstance(y, pd.Series) else pd.Series(np.asarray(y).ravel() if not isinstance(y, list) else y)
    if s.isna().any():
        raise PPDMError(f"the class has a missing value at row {s.index[s.isna().to_numpy()][0]!r}")
    classes = declared_values(s, value_order)
    codes = _codes(s, classes).astype(np.int64)
    arr = np.empty(len(classes), dtype=object)
    arr[:] = classes
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in classes):
        arr = np.array(classes, dtype=np.int64)
    elif all(isinstance(v, (float, int)) and not isinstance(v, bool) for v in classes):
        arr = np.array(classes, dtype=float)
    return codes, arr


def check_class_labels(y: Any) -> Any:
    """Refuse a missing, continuous or multi-column class the way scikit-learn classifiers do.

    A column vector is accepted with a ``DataConversionWarning`` and flattened; a
    pandas Series is returned as it is (its categories and name are kept).
    """
    if y is None:
        raise PPDMError("a tree requires y to be passed, but the target y is None")
    if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
        y = y.iloc[:, 0]
    if not isinstance(y, pd.Series):
        arr = np.asarray(y, dtype=object if isinstance(y, list) else None)
        if arr.ndim == 2 and arr.shape[1] == 1:
            y = column_or_1d(arr, warn=True)
        elif arr.ndim != 1:
            raise PPDMError(f"the class must be one column, got an array of shape {arr.shape}")
    vals = np.asarray(y)
    if vals.dtype.kind == "f" and not np.all(np.mod(vals[np.isfinite(vals)], 1) == 0):
        name = getattr(y, "name", None)
        if name is not None:
            # a table's column: say which, and what to do (the words of a data owner, not of the library)
            n = int(pd.Series(vals).nunique())
            raise PPDMError(f"the class column {str(name)!r} holds continuous numbers ({n} distinct values); a class "
                            "needs labels: cut it into categories first, or name another class column")
        # an unnamed array: scikit-learn's wording, which its estimator checks expect
        raise PPDMError("Unknown label type: continuous; a tree needs class labels, not a continuous target")
    return y


class EncodedClassifier(ClassifierMixin, BaseEstimator):
    """Base of the tree classifiers that read ``X`` through :func:`fit_encoding` (C4.5, SysFor):
    it stores the parameters of that reading, ``categorical``, ``schema`` and ``value_order``,
    as given (scikit-learn's contract); a subclass's ``__init__`` lists them among its own and
    passes them here."""

    def __init__(self, categorical: Sequence[Hashable] | None = None, schema: Schema | None = None,
                 value_order: str = "appearance") -> None:
        self.categorical = categorical
        self.schema = schema
        self.value_order = value_order
