"""Invariant PRAM: post-randomise categorical values with a matrix that keeps their frequencies.

The post-randomisation method (Gouweleeuw, Kooiman, Willenborg & de Wolf 1998) replaces the
category of every record by one drawn from a row of a transition matrix R: a record of
category i becomes j with probability R[i, j]. Random substitution (Dowd et al. 2006,
:mod:`ppdm.anonymize.random_substitution`) is PRAM with a gamma-diagonal matrix; *invariant*
PRAM, as sdcMicro's ``pram`` builds it (Templ, Kowarik & Meindl 2015 §3.6), chooses R so that
the expected frequencies after PRAM equal the original ones (p R = p), so tables of counts
stay unbiased without any correction:

1. for each of the L categories draw a keep probability ``pds[i]`` uniform on [pd, 1];
2. P[i, i] = pds[i], the rest of row i shared equally by the other categories;
3. Q, the backward matrix of P under the category frequencies p;
4. R = alpha·(P Q) + (1 − alpha)·I.

Both techniques draw the new values with :func:`ppdm.anonymize.perturbation_matrix.substitute`.

**What is published.** R is built from x's category frequencies p, and p is R's stationary
distribution (p R = p): a published R, with the number of expected changes Σ n_i(1 − R_ii),
would give x's exact category counts. Invariant PRAM exists so that analysts need no matrix:
counts and shares read from the release are unbiased estimates of x's as they stand. So the
public provenance states only the invariance property and the parameters (``pd``, ``alpha``,
the strata's column names); the matrices, the drawn diagonals, the number of categories and
the expected changes go to the owner's private log (``private_report_``), and no
``<stem>.matrices.json`` is written (random substitution's gamma-diagonal matrices, built from
parameters alone, still are). The owner can rebuild :class:`SubstitutionMetadata` from the
private log's ``technique.metadata`` (:meth:`SubstitutionMetadata.from_json` of its JSON).

Missing values stay missing and are not counted in the frequencies (as sdcMicro).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ppdm.anonymize.base import Technique, check_fraction, check_known, column_list, split_names
from ppdm.anonymize.perturbation_matrix import invariant_pram_matrix, substitute
from ppdm.anonymize.random_substitution import (
    AttributeDomain,
    SubstitutionMetadata,
    _py,
    _sort_key,
)
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, SchemaError


def _levels(values: pd.Series) -> list[Any]:
    """The categories in sdcMicro's level order: numbers numerically, then text in byte order."""
    return sorted(pd.unique(values.dropna()).tolist(), key=_sort_key)


@register("pram")
class Pram(Technique):
    """Invariant PRAM of categorical attributes (sdcMicro's ``pram``).

    Parameters
    ----------
    columns:
        The categorical attributes to post-randomise (default: every categorical attribute;
        the class too with ``perturb_class``). A numeric column is refused: recode it into
        intervals first, or use random-substitution, which bins numbers.
    pd:
        Lower bound of the drawn keep probabilities ``pds`` (0 < pd ≤ 1; sdcMicro's default
        0.8); a number, or a dict column → number (``"*"`` for the others). pd = 1 keeps every
        value.
    alpha:
        Share of the randomisation applied, 0 ≤ alpha ≤ 1 (sdcMicro's default 0.5).
    strata:
        Columns whose combinations are post-randomised separately, each stratum with its own
        frequencies and matrices (sdcMicro's ``strata_variables``).
    perturb_class:
        Post-randomise the class column too (default ``False``).

    PRAM changes categories only: on a table whose numbers single records out, the release gate
    refuses its release whatever pd and alpha are, and names recode then pram, which passes.

    After ``fit``: ``matrices_`` (column → R, rows = original categories, or with strata
    (column, stratum) → R), ``levels_`` and ``metadata_`` (the matrices in random substitution's format), all
    for the owner only: they go to the private log (``private_report_``), never beside the release.
    """

    handles_missing = True
    missing_policy = "kept"
    #: the lowest keep probability and the share of the randomisation applied
    search_space = SearchSpace({"pd": Real(0.5, 0.99), "alpha": Real(0.1, 1.0)}, needs=("categorical",))
    #: PRAM changes categories: a table of numbers alone has nothing for it (scikit-learn's
    #: array checks run its parameter contract only)
    needs_categorical: ClassVar[bool] = True

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        columns: list[str] | str | None = None,
        pd: float | dict[str, float] = 0.8,
        alpha: float = 0.5,
        strata: list[str] | str | None = None,
        perturb_class: bool = False,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.columns = columns
        self.pd = pd
        self.alpha = alpha
        self.strata = strata
        self.perturb_class = perturb_class

    # ------------------------------------------------------------------ checks
    def _validate_params(self) -> None:
        column_list("columns", self.columns)
        column_list("strata", self.strata)
        vals = self.pd.values() if isinstance(self.pd, Mapping) else [self.pd]
        for v in vals:
            check_fraction("pd", v)
            if not v > 0:
                raise ParameterError(f"pd must lie in (0, 1], got {v!r}")
        check_fraction("alpha", self.alpha)
        if not isinstance(self.perturb_class, (bool, np.bool_)):
            raise ParameterError(f"perturb_class must be true or false, got {self.perturb_class!r}")

    def _targets(self, schema: Schema) -> list[str]:
        named = split_names(self.columns)
        cls = schema.class_column
        if named is None:
            cols = [c for c in schema.categorical if c not in (split_names(self.strata) or [])]
        else:
            check_known("columns", named, schema.columns)
            cols = [c for c in named if c != cls]
            if cls is not None and cls in named and not self.perturb_class:
                raise ParameterError(f"columns names the class column {cls!r}, which pram leaves as it is unless "
                                     "perturb_class=true")
        if self.perturb_class and cls is not None and cls not in cols:
            cols.append(cls)
        numeric = [c for c in cols if c in schema.numeric]
        if numeric:
            raise ParameterError(
                f"pram changes categories, and column {numeric[0]!r} is numeric; recode it into intervals first "
                "(recode) or use random-substitution, which bins numbers")
        if not cols:
            raise ParameterError("pram changes no attribute of this table: it has no categorical attribute to "
                                 "post-randomise; choose random-substitution, which bins numbers (or recode them into "
                                 "intervals first: --method recode --then pram), or name columns=...")
        if isinstance(self.pd, Mapping):
            extra = sorted(set(map(str, self.pd)) - set(cols) - {"*"})
            if extra:
                raise ParameterError(f"pd names column {extra[0]!r}, which is not post-randomised")
        return cols

    def _pd_for(self, column: str) -> float:
        if isinstance(self.pd, Mapping):
            if column in self.pd:
                return float(self.pd[column])
            if "*" in self.pd:
                return float(self.pd["*"])
            return 0.8
        return float(self.pd)

    # --------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        cols = self._targets(schema)
        strata = split_names(self.strata) or []
        check_known("strata", strata, df.columns, "a column of the table")
        clash = [c for c in strata if c in cols]
        if clash:
            raise ParameterError(f"{clash[0]!r} is both post-randomised and a stratum; a stratum column stays as it is")
        # the draws of the matrices come from a stream of their own, apart from the release's
        draw = np.random.default_rng([int(rng.integers(2**63)), 1])
        keys = _stratum_keys(df, strata)
        self.columns_ = cols
        self.strata_ = strata
        self.levels_: dict[Any, list[Any]] = {}
        self.matrices_: dict[Any, np.ndarray] = {}
        self.pds_: dict[Any, np.ndarray] = {}
        self._counts: dict[Any, np.ndarray] = {}
        for c in cols:  # sdcMicro's order: variables in the order given, strata within
            for key, rows in keys:
                s = df[c].iloc[rows]
                levels = _levels(s)
                if not levels:
                    continue  # nothing observed in this stratum
                idx = pd.Categorical(s, categories=levels).codes
                counts = np.bincount(idx[idx >= 0], minlength=len(levels)).astype(float)
                pds = draw.uniform(self._pd_for(c), 1.0, size=len(levels))
                name = c if not strata else (c, key)
                self.levels_[name] = levels
                self.pds_[name] = pds
                self._counts[name] = counts
                self.matrices_[name] = invariant_pram_matrix(pds, counts, float(self.alpha))
            if not any((c if not strata else (c, key)) in self.levels_ for key, _ in keys):
                raise SchemaError(f"column {c!r} has no observed value to post-randomise")
        self.metadata_ = self._metadata(schema)
        self.privacy_report_ = self._report()
        self.private_report_ = self._private()

    def _metadata(self, schema: Schema) -> SubstitutionMetadata:
        def domain(name: Any, column: str) -> AttributeDomain:
            vals = [_py(v) for v in self.levels_[name]]
            # random substitution's format is column-stochastic: M[h, k] = p(k -> h) = R[k, h]
            return AttributeDomain(column, "categorical", vals, self.matrices_[name].T.copy())

        extra = {"pd": self.pd if not isinstance(self.pd, Mapping) else dict(self.pd), "alpha": float(self.alpha),
                 "row_stochastic_R": "R = matrix transposed: R[i][j] = p(i -> j)"}
        if not self.strata_:
            attrs = {c: domain(c, c) for c in self.columns_}
            return SubstitutionMetadata(attrs, schema.class_column, bool(self.perturb_class), "pram", extra)
        blocks: dict[Any, dict[str, Any]] = {}
        for (c, key) in self.levels_:
            block = blocks.setdefault(key, {"stratum": {s: _py(v) for s, v in zip(self.strata_, key, strict=True)},
                                            "attributes": []})
            block["attributes"].append(domain((c, key), c).to_dict())
        return SubstitutionMetadata({}, schema.class_column, bool(self.perturb_class), "pram",
                                    {**extra, "strata_columns": list(self.strata_)}, list(blocks.values()))

    # --------------------------------------------------------------- transform
    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        out = df.copy()
        keys = _stratum_keys(df, self.strata_)
        for c in self.columns_:
            col = df[c]
            new = col.to_numpy(dtype=object, copy=True)
            for key, rows in keys:
                name = c if not self.strata_ else (c, key)
                s = col.iloc[rows]
                obs = s.notna().to_numpy()
                if not obs.any():
                    continue
                if name not in self.levels_:
                    raise SchemaError(f"column {c!r} has values in a stratum {key!r} that fit did not see")
                levels = self.levels_[name]
                idx = pd.Categorical(s[obs], categories=levels).codes.astype(np.int64)
                if (idx < 0).any():
                    bad = s[obs][idx < 0].iloc[0]
                    raise SchemaError(f"column {c!r} holds a category fit did not see ({bad!r}); post-randomise the "
                                      "table the matrices were made from")
                h = substitute(idx, self.matrices_[name].T, rng)
                vals = np.asarray(levels, dtype=object)[h]
                new[rows[obs]] = vals
            out[c] = pd.Series(new, index=df.index, name=c).astype(df[c].dtype)
        return out

    # -------------------------------------------------------------- reporting
    def expected_changes(self) -> dict[Any, float]:
        """Σ_i n_i (1 − R[i, i]): the expected number of changed values of each variable (and stratum)."""
        return {name: float(self._counts[name] @ (1.0 - np.diag(R))) for name, R in self.matrices_.items()}

    def _report(self) -> dict[str, Any]:
        """The public claim: the invariance property and the parameters, nothing counted on x."""
        return {"technique": "invariant PRAM", "pd": self.metadata_.extra["pd"], "alpha": float(self.alpha),
                "strata": list(self.strata_), "columns": list(self.columns_),
                "invariance": "p·R = p for every matrix: the expected category frequencies (and shares) of the "
                              "release equal the original ones, so counts read from the release are unbiased "
                              "estimates of the original counts without any matrix",
                "retention": "each category i is kept with probability alpha·(PQ)[i, i] + 1 − alpha, where P keeps "
                             "i with a probability drawn uniformly on [pd, 1]",
                "note": "the matrices are built from the original category frequencies (their stationary "
                        "distribution is the original shares), so they stay in the owner's private log"}

    def _private(self) -> dict[str, Any]:
        """What only the owner may see: per variable (and stratum) the number of categories, the
        smallest keep probability, the expected number of changes, and the matrices themselves."""
        per: dict[str, Any] = {}
        for name, R in self.matrices_.items():
            label = name if isinstance(name, str) else f"{name[0]} | {name[1]}"
            per[label] = {"categories": len(self.levels_[name]), "min_keep_probability": float(np.diag(R).min()),
                          "expected_changes": float(self._counts[name] @ (1.0 - np.diag(R)))}
        return {"technique": "invariant PRAM", "variables": per, "metadata": json.loads(self.metadata_.to_json())}

    def to_json(self) -> str:
        """The fitted matrices as JSON (random substitution's format, method ``"pram"``)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "metadata_")
        return self.metadata_.to_json()


def _stratum_keys(df: pd.DataFrame, strata: list[str]) -> list[tuple[Any, np.ndarray]]:
    """(stratum key, row positions) for every stratum, in sorted order of the keys; one stratum
    holding every row without strata. A missing stratum value is a stratum of its own."""
    if not strata:
        return [((), np.arange(len(df)))]
    idx = df.reset_index(drop=True).groupby(strata, dropna=False, sort=False).indices
    groups: dict[tuple[Any, ...], np.ndarray] = {}
    for key, rows in idx.items():
        t = key if isinstance(key, tuple) else (key,)
        groups[tuple(None if pd.isna(v) else _py(v) for v in t)] = np.asarray(rows, dtype=np.int64)
    order = sorted(groups, key=lambda t: tuple((v is None, _sort_key(v) if v is not None else (0, 0)) for v in t))
    return [(key, groups[key]) for key in order]


__all__ = ["Pram"]
