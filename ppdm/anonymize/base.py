"""The contract every anonymization technique follows.

A technique is a scikit-learn transformer over the *whole table*: the class column
is part of the table (several techniques perturb it) and is named by
``class_column=`` or by a :class:`~ppdm.data.Schema`. ``fit_transform(df)`` returns a
table with the same rows, index, columns, column order and dtypes. The same
``random_state`` gives byte-identical output. The one exception to "same rows" is a
synthetic release whose number of records is itself a privacy-protected output
(DPCube under add/remove-one neighbours): such a technique answers ``False`` from
:meth:`Technique._keeps_rows` and returns its own records under a fresh 0..m−1 index.

Subclasses list every parameter explicitly in ``__init__`` (so ``get_params`` and
``clone`` work), check them in :meth:`Technique._validate_params`, and implement
``_fit`` and ``_transform``.

``_fit`` and ``_transform`` see the table in its working form
(:func:`ppdm.data.types.working_frame`): numeric attributes as float64 with NaN for a
missing cell, dates as days since 1970-01-01, nullable integers and booleans with NaN.
The base class turns the result back into the input's dtypes (:func:`restore_table`):
dates in their resolution, whole numbers rounded, missing cells kept.
"""

from __future__ import annotations

import copy
from abc import ABCMeta, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ppdm.anonymize._domain import ValueDomain, check_declared_domain, value_domains
from ppdm.data.schema import MissingPolicy, Schema
from ppdm.data.types import restore_column, working_frame
from ppdm.errors import ParameterError, SchemaError
from ppdm.utils import check_n_features, check_random_state, check_table_input


class Technique(TransformerMixin, BaseEstimator, metaclass=ABCMeta):
    """Base class of ppdm's anonymization techniques.

    Class attributes
    ----------------
    needs_class:
        The technique cannot run without a class column (with at least two values).
    handles_missing:
        The technique accepts missing attribute values and documents what it does with
        them (its docstring, ``docs/missing_values.md``); otherwise they are refused with a
        clear error. A missing class value is always refused.
    missing_policy:
        ``"kept"``, ``"modelled"`` or ``"refused"`` (see below).
    clips_to_declared_bounds:
        The technique itself clips values of x outside the schema's declared bounds and maps
        values outside the declared categories (an "other" cell, or the record dropped), as
        differential privacy treats a public domain (DPCube): whether a run fails must not
        depend on the records. Every other technique refuses such a value as bad input,
        naming the column and row.

    Released values stay possible: ``fit`` stores the domain of every numeric attribute in
    ``value_domains_`` (declared bounds, else the range observed in x; whole numbers; dates
    on their resolution), and a technique whose perturbation can leave it brings values back
    with :class:`ppdm.anonymize._domain.DomainGuard` (clip or reflect, documented per
    technique in docs/value_domains.md).
    """

    needs_class: ClassVar[bool] = False
    handles_missing: ClassVar[bool] = False
    #: what becomes of a missing attribute value: ``"kept"`` (the cell stays missing),
    #: ``"modelled"`` (missingness is part of what the technique learns and releases) or
    #: ``"refused"``; listed by ``ppdm methods`` and in docs/missing_values.md
    missing_policy: ClassVar[str] = "refused"
    #: the technique decides itself what a record with a missing class becomes (DPCube drops it
    #: as part of its mechanism); otherwise such a record is refused
    handles_missing_class: ClassVar[bool] = False
    clips_to_declared_bounds: ClassVar[bool] = False
    #: the technique blanks observed cells (local suppression): they are missing in the release
    makes_missing: ClassVar[bool] = False
    #: the technique's main strength parameter, for the release gate's search of a setting that
    #: passes (:func:`ppdm.experiments.release.passing_strength`): ``(name, "increasing" or
    #: "decreasing", limit)`` — the direction in which protection grows and the furthest value
    #: worth trying (``None``: no limit); ``None`` when the technique has no single such parameter
    strength_param: ClassVar[tuple[str, str, float | None] | None] = None
    #: the attributes :attr:`strength_param` changes: ``"numeric"``, ``"categorical"`` or ``"all"``
    #: (the search tries first the parameters that change the kind of attribute a refusal names)
    strength_acts_on: ClassVar[str] = "all"
    #: the technique's other documented protective parameters, searched too when the main one
    #: finds no setting that passes: ``(name, direction, limit, acts_on)`` as above
    other_strength_params: ClassVar[tuple[tuple[str, str, float | None, str], ...]] = ()
    #: keys of ``private_report_`` that count records or cells of the table transformed: a
    #: partitioned release adds them up over its partitions (:meth:`merge_partition_reports`)
    summed_over_partitions: ClassVar[tuple[str, ...]] = ()

    value_domains_: dict[str, ValueDomain]

    def __init__(self, class_column: str | None = None, schema: Schema | dict | None = None,
                 random_state: Any = None) -> None:
        # the parameters every technique takes, stored as given (scikit-learn's contract): a
        # subclass's __init__ lists them among its own and passes them here
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state

    # ------------------------------------------------------------------ hooks
    def _validate_params(self) -> None:
        """Raise :class:`ParameterError` for impossible parameter values."""

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        """Learn what the technique needs from the original table ``df``.

        Only the schema's attributes and class are the technique's to model; identifier
        and weight columns, if the table has them, are passed through unchanged and never
        enter a model (:func:`ppdm.experiments.release.release` removes identifiers before
        the technique sees the table)."""

    @abstractmethod
    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        """Return the anonymized copy of the validated table ``df`` (a copy the technique may modify)."""

    def _output_dtypes(self, like: pd.DataFrame) -> dict[str, Any]:
        """Columns whose released dtype differs from the input's, with that dtype.

        Most techniques release every column in its input dtype. Local suppression releases a
        suppressed integer key as a nullable integer, and recoding releases intervals and
        category groups as ordered categorical labels. The dtypes are declared before any
        record is seen (they depend on the input's dtypes and the fitted parameters only), so
        every partition of a Dask table gets the same ones.
        """
        return {}

    def _output_schema(self, schema: Schema) -> Schema:
        """The schema of the released table (default: the input's)."""
        return schema

    def output_schema(self) -> Schema:
        """The schema of what :meth:`transform` releases: the fitted schema, with the types,
        declared categories and hierarchies of the columns the technique recodes."""
        check_is_fitted(self, "schema_")
        return self._output_schema(self.schema_)

    def _keeps_rows(self) -> bool:
        """Whether the release has the input's rows (same number, same index).

        A synthetic release whose number of records is drawn by the technique (a
        differentially private count) answers ``False``; the release then gets a fresh
        ``0..m−1`` index and cannot be made partition by partition.
        """
        return True

    def strength_setting(self) -> tuple[str, str, float | None, Any] | None:
        """``(name, direction, limit, current value)`` of the parameter the release gate's search
        varies (:func:`ppdm.experiments.release.passing_strength`): :attr:`strength_param` with
        the parameter's value, or ``None``. A technique whose default leaves the parameter unset
        (rounding's size) or whose strength lies in another parameter depending on the others
        answers for itself."""
        spec = type(self).strength_param
        if not spec:
            return None
        name, direction, limit = spec
        return name, direction, limit, self.get_params(deep=False).get(name)

    def strength_settings(self) -> list[tuple[str, str, float | None, Any, str]]:
        """Every protective parameter the release gate's search may vary, the main one
        (:meth:`strength_setting`) first: ``(name, direction, limit, current value, acts_on)``
        with ``acts_on`` ``"numeric"``, ``"categorical"`` or ``"all"`` (the attributes it changes).
        The others come from :attr:`other_strength_params`, e.g. the Framework's ``p_cat``,
        which changes categorical values where ``sigma_frac`` changes numbers only."""
        main = self.strength_setting()
        out = [(*main, type(self).strength_acts_on)] if main else []
        params = self.get_params(deep=False)
        out += [(name, direction, limit, params[name], acts_on)
                for name, direction, limit, acts_on in type(self).other_strength_params
                if name in params and (not main or name != main[0])]
        return out

    # ---------------------------------------------------------------- helpers
    def _resolve_schema(self, df: pd.DataFrame) -> Schema:
        cls_col = getattr(self, "class_column", None)
        given = getattr(self, "schema", None)
        if given is None:
            schema = Schema.infer(df, cls_col)
        else:
            schema = given if isinstance(given, Schema) else Schema.from_dict(dict(given))
            if cls_col is not None and cls_col != schema.class_column:
                schema = schema.with_class(cls_col)
        if self.needs_class and schema.class_column is None:
            raise SchemaError(f"{type(self).__name__} needs a class column: pass class_column=... (CLI: --class)")
        return schema

    def _as_frame(self, X: Any) -> tuple[pd.DataFrame, bool]:
        X = check_table_input(X)
        if isinstance(X, pd.DataFrame):
            return X, False
        return pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]), True

    # ------------------------------------------------------------ sklearn API
    def fit(self, X: pd.DataFrame, y: Any = None) -> Technique:
        """Learn from the original table (class column included)."""
        self._validate_params()
        if _is_dask(X):
            raise SchemaError(
                f"{type(self).__name__}.fit needs a pandas table: fit on the data (or a sample) in memory, "
                "then transform the Dask DataFrame"
            )
        df, _ = self._as_frame(X)
        schema = self._resolve_schema(df)
        left = [str(c) for c in df.columns if c not in set(schema.all_columns)]
        if left:
            # a column without a type or role would pass into the release unchanged, unnoticed
            raise SchemaError(
                f"the schema leaves out column(s) {', '.join(map(repr, left))} of the table; give each a type "
                "or role (numeric, categorical, identifiers, weight) or drop it from the table"
            )
        missing: MissingPolicy = "keep" if self.handles_missing else "error"
        df, _ = schema.validate(df, missing=missing, min_classes=2 if self.needs_class else 0)
        if not self.handles_missing_class:
            _refuse_missing_class(df, schema)
        if not schema.attributes:
            # nothing to anonymize: a "release" equal to the input must not pass for one
            only = f" besides the class column {schema.class_column!r}" if schema.class_column else ""
            raise SchemaError(f"the table has no attribute columns{only}; there is nothing to anonymize")
        work = working_frame(df, schema.numeric)
        # a value of x outside its declared domain is bad input, refused before anything is learnt
        check_declared_domain(work, schema, bounds=not self.clips_to_declared_bounds,
                              categories=not self.clips_to_declared_bounds)
        self.schema_ = schema
        self.feature_names_in_ = np.asarray(df.columns, dtype=object)
        self.n_features_in_ = df.shape[1]
        self.value_domains_ = value_domains(work, schema)
        self._fit(work, schema, check_random_state(self.random_state))
        return self

    def transform(self, X: pd.DataFrame) -> pd.DataFrame:
        """Return the anonymized copy of ``X`` (same rows, columns, order and dtypes).

        ``X`` may also be a Dask DataFrame: each partition is transformed with what was
        learnt in :meth:`fit` (fit on a pandas table or a sample), drawing from a
        generator seeded by ``(random_state, partition number)``, so the result is
        reproducible. Techniques whose transform mixes records (permutations inside
        groups) then mix them within a partition only.
        """
        check_is_fitted(self, "schema_")
        if _is_dask(X):
            return self._transform_dask(X)
        return self._transform_frame(X, check_random_state(self.random_state))

    def partition_seed(self) -> int:
        """The entropy every partition's generator is seeded from, with the partition number:
        derived from ``random_state``, or fresh operating-system entropy when it is ``None``
        (draw it once per release and pass it to :meth:`transform_partition`)."""
        seed = self.random_state
        if not (seed is None or isinstance(seed, (int, np.integer))):
            raise ParameterError("a partitioned transform needs an int random_state (or None) to seed each partition")
        return int(np.random.SeedSequence(None if seed is None else int(seed)).entropy)  # type: ignore[arg-type]  # None or an int: checked above

    def transform_partition(self, X: pd.DataFrame, number: int, base: int) -> pd.DataFrame:
        """Transform partition ``number`` of a larger table, drawing from a generator seeded by
        ``(base, number)`` (``base`` from :meth:`partition_seed`): the same seed gives the same
        partition, wherever and in whatever order partitions are transformed."""
        check_is_fitted(self, "schema_")
        if len(X) == 0:
            return X
        return self._transform_frame(X, np.random.default_rng([base, int(number)]))

    def transform_partition_reported(self, X: pd.DataFrame, number: int, base: int) -> tuple[pd.DataFrame, Any]:
        """:meth:`transform_partition` on a copy of this technique, with the reports that the
        partition's transform wrote: ``(privacy_report_, private_report_)`` of the copy, or
        ``None`` when the transform wrote none (the fitted reports stand). The fitted technique
        is left as it was, so partitions transformed at once in threads, or on the workers of a
        cluster, do not overwrite one another's reports; :meth:`merge_partition_reports` totals
        them."""
        t = copy.copy(self)
        before = (getattr(t, "privacy_report_", None), getattr(t, "private_report_", None))
        z = t.transform_partition(X, number, base)
        after = (getattr(t, "privacy_report_", None), getattr(t, "private_report_", None))
        if after[0] is before[0] and after[1] is before[1]:
            return z, None
        return z, after

    def merge_partition_reports(self, reports: list[Any]) -> None:
        """Set ``privacy_report_`` and ``private_report_`` of the whole partitioned release from
        its partitions' reports (:meth:`transform_partition_reported`, one per partition, in
        order): the counts named by :attr:`summed_over_partitions` added up, every other entry
        kept when all partitions agree on it, else listed partition by partition. Without any
        partition's report the fitted ones stand."""
        written = [r for r in reports if r is not None]
        if not written:
            return
        self.privacy_report_ = merge_reports([r[0] for r in written], ())
        private = merge_reports([r[1] for r in written], self.summed_over_partitions)
        if private is not None and self.summed_over_partitions:
            private = {**private, "partitions": len(written),
                       "partitions_note": "the technique ran on each partition on its own: "
                                          f"{', '.join(self.summed_over_partitions)} are totals over the partitions, "
                                          "and an entry that differs between partitions is listed per partition"}
        self.private_report_ = private

    def _transform_dask(self, ddf: Any) -> Any:
        if not self._keeps_rows():
            raise ParameterError(
                f"{type(self).__name__} releases its own number of records, so it cannot transform a Dask "
                "DataFrame partition by partition; transform a pandas table"
            )
        base = self.partition_seed()

        def part(pdf: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
            i = 0 if partition_info is None else int(partition_info["number"])
            return self.transform_partition(pdf, i, base)

        meta = ddf._meta
        changed = self._output_dtypes(meta)
        if changed:
            meta = meta.astype(changed)
        return ddf.map_partitions(part, meta=meta)

    def _as_fitted_frame(self, X: Any) -> tuple[pd.DataFrame, bool]:
        """``X`` as a frame with the columns seen in fit (refused otherwise), and whether it was an array."""
        df, was_array = self._as_frame(X)
        check_n_features(self, df.shape[1])
        cols = list(map(str, df.columns))
        fitted = list(map(str, self.feature_names_in_))
        if cols != fitted:
            raise SchemaError(f"the table's columns {cols} differ from those seen in fit {fitted}")
        return df, was_array

    def _transform_frame(self, X: Any, rng: np.random.Generator) -> Any:
        df, was_array = self._as_fitted_frame(X)
        missing: MissingPolicy = "keep" if self.handles_missing else "error"
        df, _ = self.schema_.validate(df, missing=missing)
        _refuse_missing_class(df, self.schema_)
        work = working_frame(df, self.schema_.numeric).copy()
        check_declared_domain(work, self.schema_, bounds=not self.clips_to_declared_bounds,
                              categories=not self.clips_to_declared_bounds)
        # transform draws from a fresh generator, so repeated calls with an int seed agree
        out = self._transform(work, self.schema_, rng)
        out = restore_table(out, df, self.schema_, same_rows=self._keeps_rows(), dtypes=self._output_dtypes(df))
        return out.to_numpy() if was_array else out

    def fit_transform(self, X: pd.DataFrame, y: Any = None, **fit_params: Any) -> pd.DataFrame:
        return self.fit(X, y).transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self, "feature_names_in_")
        return self.feature_names_in_.copy()

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.handles_missing
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.non_deterministic = False
        return tags


def merge_reports(reports: list[Any], summed: tuple[str, ...] = ()) -> Any:
    """One report from the reports of a table's partitions: the entries named in ``summed``
    (counts, or dicts of counts) added up; any other entry kept when every report has the same,
    else the list of the reports' values, partition by partition. ``None`` when no report."""
    dicts = [r for r in reports if isinstance(r, dict)]
    if not dicts:
        return None
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for r in dicts for k in r):
        values = [r.get(key) for r in dicts]
        if key in summed:
            out[key] = _total(values)
        elif all(v == values[0] for v in values[1:]):
            out[key] = values[0]
        else:
            out[key] = values
    return out


def _total(values: list[Any]) -> Any:
    """The sum of counts (``None`` where a partition had none), dicts summed key by key."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    if all(isinstance(v, dict) for v in present):
        keys = dict.fromkeys(k for v in present for k in v)
        return {k: _total([v.get(k) for v in present]) for k in keys}
    return sum(present)


def _is_dask(X: Any) -> bool:
    mod = type(X).__module__
    return mod.startswith("dask") and hasattr(X, "map_partitions")


def _refuse_missing_class(df: pd.DataFrame, schema: Schema) -> None:
    cls = schema.class_column
    if cls is not None and cls in df.columns and df[cls].isna().any():
        row = df.index[df[cls].isna().to_numpy()][0]
        raise SchemaError(f"the class column {cls!r} has a missing value at row {row!r}; a record needs its class "
                          "(drop such records with missing='drop', CLI: --missing drop)")


def restore_table(out: pd.DataFrame, like: pd.DataFrame, schema: Schema | None = None, *,
                  same_rows: bool = True, dtypes: dict[str, Any] | None = None) -> pd.DataFrame:
    """Give ``out`` the index, column order and dtypes of ``like``.

    With ``same_rows=False`` (a release with its own number of records) ``out`` keeps
    its length and gets a fresh ``0..m−1`` index instead of ``like``'s. Integer columns
    are rounded to the nearest whole number before the cast back (perturbations of
    integer attributes stay integers, paper 004 §3), nullable ones keep their missing
    cells; date columns come back from the time axis in the resolution of their format in
    ``schema``. A value that cannot be represented raises instead of being silently altered.
    """
    if list(out.columns) != list(like.columns):
        missing = [c for c in like.columns if c not in out.columns]
        if missing:
            raise AssertionError(f"technique dropped columns {missing}")
        out = out[list(like.columns)]
    if not same_rows:
        out.index = pd.RangeIndex(len(out))
    elif len(out) != len(like):
        raise AssertionError(f"technique changed the number of rows ({len(like)} -> {len(out)})")
    else:
        out.index = like.index
    formats = schema.dates if schema is not None else {}
    dtypes = dict(dtypes or {})
    for c in like.columns:
        if c in dtypes:
            out[c] = cast_column(out[c], dtypes[c])
            continue
        if out[c].dtype == like[c].dtype:
            continue
        # a release with its own records takes the input column's type, not its rows
        # (an empty slice keeps the dtype, name and time zone, none of the values)
        ref = like[c] if same_rows else like[c].iloc[:0]
        out[c] = restore_column(out[c], ref, date_format=formats.get(c))
    return out


def cast_column(values: pd.Series, dtype: Any) -> pd.Series:
    """``values`` in ``dtype``: a nullable integer from floats with NaN (whole numbers only), an
    ordered categorical from labels, anything else by ``astype``."""
    if values.dtype == dtype:
        return values
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_integer_dtype(dtype):
        vals = values.to_numpy(dtype=float, na_value=np.nan)
        if np.isinf(vals).any():
            raise AssertionError(f"technique produced an infinite value in integer column {values.name!r}")
        return pd.Series(pd.array(np.rint(vals), dtype="Float64"), index=values.index,
                         name=values.name).astype(dtype)
    return values.astype(dtype)


def nullable_dtype(dtype: Any) -> Any:
    """The dtype that can hold a missing value beside the values of ``dtype``: a nullable
    integer for an integer dtype, ``"boolean"`` for bool, ``dtype`` itself otherwise."""
    if pd.api.types.is_bool_dtype(dtype) and not isinstance(dtype, pd.BooleanDtype):
        return pd.BooleanDtype()
    if pd.api.types.is_integer_dtype(dtype) and not isinstance(dtype, pd.api.extensions.ExtensionDtype):
        name = np.dtype(dtype).name  # int32 -> Int32, uint8 -> UInt8
        return pd.api.types.pandas_dtype(name.replace("uint", "UInt") if name.startswith("u") else name.capitalize())
    return dtype


def check_column_names(name: str, value: Any) -> list[str] | None:
    """``value`` as a list of column names (a single name is accepted), or ``None``.

    Raises :class:`ParameterError` for anything else (a number, a dict...), so a bad
    ``columns=`` / ``integer_attrs=`` fails with a message instead of a ``TypeError``.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(c, str) for c in value):
        return list(value)
    raise ParameterError(f"{name} must be a column name or a list of column names, got {value!r}")


def split_names(value: Any) -> Any:
    """A column-list parameter given as text (``"a, b;c"``) as its list of names; any other
    value as it is (checked by :func:`check_column_names`)."""
    if isinstance(value, str):
        return [v.strip() for v in value.replace(";", ",").split(",") if v.strip()]
    return value


def column_list(name: str, value: Any) -> list[str] | None:
    """Parameter ``name``'s column names, from a list or a comma- or semicolon-separated text
    (:func:`split_names`), or ``None``; anything else raises :class:`ParameterError`."""
    return check_column_names(name, split_names(value))


def key_list(value: Any, name: str = "keys") -> list[str] | None:
    """A list of column names from a list or a comma-separated text, or ``None``."""
    out = column_list(name, value)
    if out is None:
        return None
    if not out:
        raise ParameterError(f"{name} names no column")
    if len(set(out)) != len(out):
        raise ParameterError(f"{name} names a column twice: {out}")
    return out


def check_known(name: str, names: Iterable[str], known: Iterable[str], what: str = "an attribute of the table") -> None:
    """Raise :class:`ParameterError` naming the first of ``names`` (parameter ``name``'s
    columns) that is not in ``known``, ``what`` saying what ``known`` holds."""
    allowed = set(known)
    bad = [c for c in names if c not in allowed]
    if bad:
        raise ParameterError(f"{name} names {bad[0]!r}, which is not {what}")


def is_whole(value: Any, low: int) -> bool:
    """Whether ``value`` is a whole number (a Python or NumPy integer, not a bool) ≥ ``low``."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and bool(value >= low)


def check_whole(name: str, value: Any, low: int = 1) -> None:
    """Raise :class:`ParameterError` unless ``value`` is a whole number ≥ ``low`` (:func:`is_whole`)."""
    if not is_whole(value, low):
        raise ParameterError(f"{name} must be a whole number ≥ {low}, got {value!r}")


def check_fraction(name: str, value: Any, *, low: float = 0.0, high: float = 1.0, inclusive: bool = True) -> None:
    """Raise :class:`ParameterError` unless ``low <= value <= high`` (a real number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    ok = low <= value <= high if inclusive else low < value < high
    if not ok or not np.isfinite(value):
        raise ParameterError(f"{name} must lie in [{low}, {high}], got {value!r}")
