"""Small shared helpers: random generators, parameter parsing, input vectors and code pairs."""

from __future__ import annotations

import ast
import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from ppdm.errors import ParameterError, PPDMError, SchemaError

RandomState = int | np.random.Generator | np.random.RandomState | None


def check_random_state(random_state: RandomState) -> np.random.Generator:
    """Return a NumPy ``Generator`` for ``random_state``.

    An int (or None) seeds a fresh PCG64 generator, so the same seed always gives
    byte-identical output; a Generator is used as is.
    """
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(None if random_state is None else int(random_state))
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise ParameterError(f"random_state must be an int, a numpy Generator or None, got {random_state!r}")


def finite_vector(x: object, *, task: str) -> np.ndarray:
    """``x`` flattened to a float64 vector; empty input or NaN/inf refused.

    ``task`` names what the caller does (``"discretize"``, ``"microaggregate"``) so the
    error says "cannot <task> an empty attribute".
    """
    v = np.asarray(x, dtype=float).ravel()
    if v.size == 0:
        raise ParameterError(f"cannot {task} an empty attribute")
    if not np.all(np.isfinite(v)):
        raise ParameterError(f"cannot {task} an attribute holding NaN or infinite values")
    return v


def unique_pairs(a: np.ndarray, b: np.ndarray, *, return_counts: bool = False) -> tuple[np.ndarray, ...]:
    """The distinct pairs ``(a[i], b[i])`` of two arrays of integer codes (−1 for a missing value
    allowed), sorted by ``a`` then ``b``, with how often each occurs when ``return_counts``.

    Each pair is one integer ``(a − min a)·w + (b − min b)``, so one 1-D sort does what
    ``np.unique(np.stack([a, b]), axis=1)`` does with a far slower row-wise sort (codes are
    below the number of records, so the integer fits for any table that fits in memory)."""
    if a.size == 0:
        empty = (a[:0].astype(np.int64), b[:0].astype(np.int64))
        return (*empty, np.zeros(0, dtype=np.int64)) if return_counts else empty
    a0, b0 = int(a.min()), int(b.min())
    width = int(b.max()) - b0 + 1
    key = (a.astype(np.int64) - a0) * width + (b.astype(np.int64) - b0)
    if return_counts:
        pair, counts = np.unique(key, return_counts=True)
        return pair // width + a0, pair % width + b0, counts
    pair = np.unique(key)
    return pair // width + a0, pair % width + b0


def parse_value(text: str) -> Any:
    """Parse a ``--param`` value: Python literals (``3``, ``0.1``, ``True``, ``None``,
    ``[1, 2]``) become those objects, anything else stays a string."""
    t = text.strip()
    low = t.lower()
    if low in {"true", "false"}:
        return low == "true"
    if low in {"none", "null"}:
        return None
    try:
        return ast.literal_eval(t)
    except (ValueError, SyntaxError):
        return t


def parse_params(pairs: list[str] | None) -> dict[str, Any]:
    """Turn ``["k=v", ...]`` into a dict, rejecting malformed pairs."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ParameterError(f"--param expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        key = key.strip().replace("-", "_")
        if not key:
            raise ParameterError(f"--param has an empty key in {pair!r}")
        out[key] = parse_value(value)
    return out


def check_table_input(X: Any) -> Any:
    """Refuse input no table can be made of, with the wording scikit-learn's checks expect.

    Sparse matrices, complex numbers, arrays that are not 2-D and tables without rows
    or columns are refused here, before any column is looked at. Returns ``X`` (a
    DataFrame unchanged, anything else as a NumPy array).
    """
    import scipy.sparse as sp

    if sp.issparse(X):
        raise SchemaError("sparse input is not supported; pass a dense table (X.toarray())")
    if not hasattr(X, "shape") or not hasattr(X, "dtype") and not hasattr(X, "dtypes"):
        try:
            X = np.asarray(X, dtype=object if isinstance(X, list) else None)
        except Exception:
            raise SchemaError(f"expected a pandas DataFrame or a 2-D array, got {type(X).__name__}") from None
    if not hasattr(X, "dtypes"):
        X = np.asarray(X)
        if X.dtype.kind == "c" or (X.dtype == object and X.size and any(isinstance(v, complex) for v in X.flat)):
            raise SchemaError("Complex data not supported: a table holds real numbers or categories")
    if len(X.shape) != 2:
        raise SchemaError(
            f"expected a 2-D table, got an array of shape {X.shape}; Reshape your data "
            "(array.reshape(-1, 1) for a single feature, array.reshape(1, -1) for a single sample)"
        )
    n, m = X.shape
    if m == 0:
        raise SchemaError(f"Found array with 0 feature(s) (shape=({n}, 0)) while a minimum of 1 is required; the table has no columns.")
    if n == 0:
        raise SchemaError(f"Found array with 0 sample(s) (shape=(0, {m})) while a minimum of 1 is required; the table has no rows.")
    return X


def check_n_features(owner: object, n_features: int) -> None:
    """Raise when a fitted estimator is given a table with another number of columns."""
    expected = getattr(owner, "n_features_in_", None)
    if expected is not None and n_features != expected:
        raise SchemaError(
            f"X has {n_features} features, but {type(owner).__name__} is expecting {expected} features as input"
        )


def check_k(k: object, n: int, *, name: str = "k", too_large: str = "no group of {k} records can be formed") -> int:
    """``k`` as an int, or :class:`ParameterError` unless it is a whole number in 1..n.

    The one check of a group size k against a table of n records (microaggregation's groups,
    local suppression's k-anonymity); ``too_large`` says, with ``{k}`` filled in, why a k above
    n cannot be met.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ParameterError(f"{name} must be a whole number ≥ 1, got {k!r}")
    if k < 1:
        raise ParameterError(f"{name} must be at least 1, got {k}")
    if k > n:
        raise ParameterError(f"{name}={k} is larger than the table ({n} records): {too_large.format(k=k)}")
    return int(k)


_Choice = TypeVar("_Choice", bound=str)


def check_choice(value: Any, choices: tuple[_Choice, ...], what: str) -> _Choice:
    """``value`` when it is one of ``choices``, else :class:`ParameterError` listing them.

    ``None`` reads as ``"none"`` where that is a choice: ``--param scaling=none`` parses to
    ``None`` (:func:`parse_value`), and ``scaling=None`` is how Python says "no scaling" too.
    """
    # the choice itself is returned (an equal str), so a tuple of literals types the result
    if value is None and "none" in choices:
        return choices[choices.index("none")]
    if isinstance(value, str) and value in choices:
        return choices[choices.index(value)]
    listed = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}" if len(choices) > 1 else repr(choices[0])
    raise ParameterError(f"{what} must be {listed}, got {value!r}")


def unknown_name(what: str, name: str, known: list[str] | tuple[str, ...]) -> str:
    """``unknown technique 'mdva'; did you mean 'mdav'?`` (or the known names, when none is close)."""
    import difflib

    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    if close:
        return f"unknown {what} {name!r}; did you mean {close[0]!r}?"
    return f"unknown {what} {name!r}; known: {', '.join(sorted(known))}"


def lazy_attributes(package: str, modules: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A package's module ``__getattr__`` (PEP 562): ``name`` is imported on first use from the
    package's submodule ``modules[name]`` and bound in ``namespace`` (the package's globals),
    so later lookups find it directly; any other name raises ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__


def loads_json(text: str, what: str, error: type[PPDMError] = PPDMError) -> Any:
    """``text`` parsed as JSON; malformed JSON raises ``error`` with one line naming ``what``
    (a file, a field) and the parser's message, without the traceback of the parser."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{what} is not valid JSON: {e}") from None
