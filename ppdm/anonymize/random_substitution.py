"""Random substitution perturbation, RSP (Dowd, Xu & Zhang 2006, paper 001 §2, Algorithm 1).

Each perturbed attribute ``A`` has a finite domain ``U = {u_1..u_N}`` and a gamma-diagonal
perturbation matrix ``M`` over it (001 §4). Every record's value ``u_k`` is replaced by
``u_h`` drawn from column ``k`` of ``M``: kept with probability ``γ/(γ+N−1)``, otherwise
replaced by one of the other ``N−1`` values, each with probability ``1/(γ+N−1)``.

* A **categorical** attribute's domain is the set of its values in the fitted table.
* A **numeric** attribute is cut into ``N`` equal-width bins over a public range and every
  released value is the *representative* of its bin (001 §2.2): the centre by default, the
  low/high endpoint, or a random value inside the bin. The range is the ``bounds`` given,
  else the schema's declared bounds, else x's range **narrowed to a grid** (:func:`public_range`):
  bins over x's exact ``[min, max]`` would publish the smallest and largest values of x
  in the matrices sidecar, and in the representatives themselves (two centres give the bin
  width, hence both ends). On the grid an edge says only where the extremes lie to within
  about one bin width, the precision at which every released value is published; values
  beyond it fall into the end bins. The exact observed range stays with the owner
  (``private_report_``, written to the private log). When the attribute has at most ``N``
  distinct values they are used as the domain directly (``distinct_domain=True``; 001 §6
  advises ``N = d`` then).
* Released values stay possible (docs/value_domains.md): a representative lies inside its
  bin, so inside x's range or the bounds given or declared; ``bounds`` may not reach beyond
  the schema's declared bounds. Nothing needs clipping or reflecting.
* **Integer columns** (integer dtype, or listed in ``Schema.integer``) stay whole: their
  representatives are rounded half up (``⌊c + 0.5⌋``), which keeps distinct bins distinct because integer bins are at
  least one unit wide; a random representative is a whole number drawn inside the bin.

The class attribute is left alone unless ``perturb_class=True``. The fitted domains and
matrices (not the seed) are what an analyst needs to rebuild the data
(:mod:`ppdm.anonymize.reconstruct`); :meth:`RandomSubstitution.write_sidecars` writes
them beside a release as ``<stem>.matrices.json``.

This module stays whole (about 630 lines): the registered technique (its class path is recorded
in every release's provenance) with the domains and the sidecar it writes and reads back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.anonymize.base import Technique, check_column_names, check_known, is_whole
from ppdm.anonymize.perturbation_matrix import (
    check_gamma,
    check_stochastic,
    gamma_diagonal,
    gamma_from_privacy,
    keep_probability,
    substitute,
)
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Integer, Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.utils import loads_json

Representative = Literal["centre", "low", "high", "random"]
REPRESENTATIVES = ("centre", "low", "high", "random")
DomainKind = Literal["categorical", "binned", "distinct"]
FORMAT = "ppdm.random-substitution/1"
REFERENCES = {
    "random-substitution": "Dowd, Xu & Zhang 2006, Algorithm 1 (RSP) and Algorithm 2 (MR)",
    "pram": "invariant PRAM (Gouweleeuw et al. 1998; sdcMicro's pram); matrix[h][k] = p(k -> h)",
}
DEFAULT_BINS = 10
#: γ when neither ``gamma`` nor (``rho1``, ``rho2``) is given: the protective end of the range
#: 5 ≤ γ ≤ 12 that Dowd, Xu & Zhang (2006) §6 call reasonable in practice ("large γ provides a
#: poor protection of privacy and small γ reduces the accuracy"). In ρ1-to-ρ2 terms
#: (ρ2 = γρ1 / (1 − ρ1 + γρ1), §4) a prior of 5 % rises to at most 20.8 %, of 10 % to 35.7 %;
#: with N = 10 bins a value keeps its bin with probability 5/14 ≈ 0.36, a binary attribute 5/6
DEFAULT_GAMMA = 5.0
#: the smallest γ the release gate's search of a passing setting tries (γ = 1 makes M singular)
GAMMA_FLOOR = 1.5


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


# --------------------------------------------------------------------------- domain
@dataclass
class AttributeDomain:
    """One perturbed attribute: its domain ``U``, how values map to it, and its matrix.

    ``kind`` is ``"categorical"`` (values are the categories), ``"distinct"`` (a numeric
    attribute whose distinct values are the domain) or ``"binned"`` (equal-width bins with
    ``edges``; ``values`` are the bin representatives, i.e. ``getValue``). ``matrix`` is
    ``M`` with ``M[h, k] = p(k → h)``.
    """

    column: str
    kind: DomainKind
    values: list[Any]
    matrix: np.ndarray
    gamma: float | None = None
    edges: list[float] | None = None
    representative: Representative = "centre"
    integer: bool = False

    @property
    def n(self) -> int:
        return len(self.values)

    # 001 §2.1 getIndex: value -> index of its domain element (vectorised)
    def get_index(self, values: pd.Series | np.ndarray, *, released: bool = False) -> np.ndarray:
        """Indices ``k`` of ``values`` in the domain (``getIndex``).

        For binned attributes an original value goes to the bin containing it (values
        outside the bounds go to the nearest end bin). A ``released`` value (a
        representative) of a fixed-representative attribute goes to the nearest
        representative, so the rounding of integer representatives cannot move it.
        """
        if self.kind == "categorical":
            return self._categorical_index(values)
        v = np.asarray(values, dtype=float)
        if self.kind == "distinct" or (released and self.representative != "random"):
            reps = np.asarray(self.values, dtype=float)
            if reps.size == 1:
                return np.zeros(v.shape, dtype=np.int64)
            mids = (reps[1:] + reps[:-1]) / 2.0
            return np.searchsorted(mids, v, side="right").astype(np.int64)
        edges = np.asarray(self.edges, dtype=float)
        idx = np.searchsorted(edges[1:-1], v, side="right")
        return idx.astype(np.int64)

    def _categorical_index(self, values: pd.Series | np.ndarray) -> np.ndarray:
        s = pd.Series(np.asarray(values, dtype=object))
        lookup = {v: i for i, v in enumerate(self.values)}
        idx = s.map(lookup)
        if idx.isna().any():  # a CSV round trip may turn codes into strings or back
            by_str = {str(v): i for i, v in enumerate(self.values)}
            idx = idx.fillna(s.astype(str).map(by_str))
        if idx.isna().any():
            bad = s[idx.isna()].iloc[0]
            raise SchemaError(f"column {self.column!r} holds {bad!r}, which is not in its perturbation domain")
        return idx.to_numpy(dtype=np.int64)

    def get_values(self, idx: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """``getValue``: the released value of each domain index (a random one inside the bin
        when ``representative="random"`` and ``rng`` is given)."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.kind == "binned" and self.representative == "random" and rng is not None:
            edges = np.asarray(self.edges, dtype=float)
            lo, hi = edges[idx], edges[idx + 1]
            if self.integer:
                # a whole number inside [lo, hi) (the last bin includes hi)
                first = np.ceil(lo)
                last = np.where(idx == len(self.values) - 1, np.floor(hi), np.ceil(hi) - 1)
                last = np.maximum(last, first)
                return first + np.floor(rng.random(idx.size) * (last - first + 1))
            return lo + rng.random(idx.size) * (hi - lo)
        vals = np.asarray(self.values, dtype=object if self.kind == "categorical" else float)
        return vals[idx]

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "kind": self.kind,
            "n": self.n,
            "gamma": self.gamma,
            "keep_probability": float(self.matrix[0, 0]) if self.gamma is not None else None,
            "representative": self.representative,
            "integer": self.integer,
            "values": [_py(v) for v in self.values],
            "edges": None if self.edges is None else [float(e) for e in self.edges],
            "matrix": self.matrix.tolist(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AttributeDomain:
        try:
            column = str(d["column"])
            kind = d["kind"]
            values = list(d["values"])
            gamma = d.get("gamma")
            matrix = d.get("matrix")
        except (KeyError, TypeError) as e:
            raise PPDMError(f"malformed perturbation metadata: an attribute entry lacks {e}") from None
        if kind not in ("categorical", "binned", "distinct"):
            raise PPDMError(f"malformed perturbation metadata: column {column!r} has unknown kind {kind!r}")
        if matrix is None:
            if gamma is None:
                raise PPDMError(f"perturbation metadata for column {column!r} has neither a matrix nor a gamma")
            m = gamma_diagonal(gamma, len(values))
        else:
            m = check_stochastic(matrix, f"the matrix of column {column!r}")
        if m.shape[0] != len(values):
            raise PPDMError(f"column {column!r}: the matrix is {m.shape[0]}×{m.shape[0]} but the domain has {len(values)} values")
        edges = d.get("edges")
        if kind == "binned" and (edges is None or len(edges) != len(values) + 1):
            raise PPDMError(f"column {column!r}: a binned attribute needs {len(values) + 1} bin edges")
        rep = d.get("representative", "centre")
        if rep not in REPRESENTATIVES:
            raise PPDMError(f"column {column!r}: unknown representative {rep!r}")
        return cls(column, kind, values, m, None if gamma is None else float(gamma),
                   None if edges is None else [float(e) for e in edges], rep, bool(d.get("integer", False)))


@dataclass
class SubstitutionMetadata:
    """What an analyst needs to reconstruct a random-substitution release: every perturbed
    attribute's domain and perturbation matrix. It never holds the random seed."""

    attributes: dict[str, AttributeDomain] = field(default_factory=dict)
    class_column: str | None = None
    perturb_class: bool = False
    #: the technique that drew the release: random substitution, or invariant PRAM ("pram")
    method: str = "random-substitution"
    #: method-specific facts kept beside the matrices (PRAM: pd, alpha, the drawn diagonals)
    extra: dict[str, Any] = field(default_factory=dict)
    #: PRAM within strata: one block per stratum ({"stratum": {column: value}, "attributes": [...]});
    #: ``attributes`` is then empty, as no one matrix describes the whole release
    strata: list[dict[str, Any]] = field(default_factory=list)

    def perturbed_columns(self, table: pd.DataFrame, columns: Iterable[str] | None = None) -> list[str]:
        """The attributes to work on (default: every perturbed one), each checked to have a
        matrix here and to be a column of ``table``."""
        if self.strata:
            raise PPDMError("the release was post-randomised within strata, one matrix per stratum; take the "
                            "records of one stratum and its block of the metadata ('strata') to reconstruct")
        cols = list(self.attributes) if columns is None else list(columns)
        for c in cols:
            if c not in self.attributes:
                raise ParameterError(f"column {c!r} has no perturbation matrix in the metadata")
            if c not in table.columns:
                raise SchemaError(f"column {c!r} of the perturbation metadata is not in the table")
        return cols

    def to_json(self) -> str:
        doc: dict[str, Any] = {
            "format": FORMAT,
            "method": self.method,
            "reference": REFERENCES.get(self.method, REFERENCES["random-substitution"]),
            "class_column": self.class_column,
            "perturb_class": self.perturb_class,
            "attributes": [a.to_dict() for a in self.attributes.values()],
        }
        if self.extra:
            doc["extra"] = self.extra
        if self.strata:
            doc["strata"] = self.strata
        return json.dumps(doc, indent=1)

    @classmethod
    def from_json(cls, text: str) -> SubstitutionMetadata:
        d = loads_json(text, "perturbation metadata")
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PPDMError(f"perturbation metadata must be a JSON object with format {FORMAT!r}")
        attrs = d.get("attributes")
        if not isinstance(attrs, list):
            raise PPDMError("perturbation metadata has no list of attributes")
        doms = [AttributeDomain.from_dict(a) for a in attrs]
        strata = d.get("strata") or []
        if not isinstance(strata, list):
            raise PPDMError("perturbation metadata: 'strata' must be a list of blocks")
        return cls({a.column: a for a in doms}, d.get("class_column"), bool(d.get("perturb_class", False)),
                   str(d.get("method", "random-substitution")), dict(d.get("extra") or {}), strata)

    def save(self, path: str | Path) -> Path:
        from ppdm.data.io import atomic_write_text

        return atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> SubstitutionMetadata:
        p = Path(path)
        if not p.is_file():
            raise PPDMError(f"perturbation metadata file {str(p)!r} does not exist")
        return cls.from_json(p.read_text())


def sidecar_path(out_path: str | Path) -> Path:
    """``Z.csv`` → ``Z.matrices.json`` (also for ``.csv.gz``, ``.parquet``, ``.pq``, ``.txt``)."""
    p = Path(out_path)
    name = p.name
    for suf in (".csv.gz", ".csv", ".parquet", ".pq", ".txt"):
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
            break
    else:
        name = p.stem
    return p.with_name(f"{name}.matrices.json")


# ----------------------------------------------------------------------- algorithm 1
def _nice_at_most(v: float) -> float:
    """The largest number 1, 2 or 5 × 10^k that is at most ``v`` (> 0)."""
    k = np.floor(np.log10(v))
    for m in (5.0, 2.0, 1.0):
        if m * 10.0 ** k <= v * (1 + 1e-12):
            return float(m * 10.0 ** k)
    return float(10.0 ** (k - 1) * 5.0)


def public_range(lo: float, hi: float, n: int, integer: bool = False) -> tuple[float, float, float]:
    """The range ``(low, high, unit)`` whose ``n`` bins a numeric attribute observed over
    ``[lo, hi]`` is binned in, when no bounds are given or declared: x's range narrowed to
    the multiples of ``unit``, the largest 1, 2 or 5 × 10^k at most one bin width (at
    least 1 for whole numbers), strictly inside: an extreme that falls on the grid moves one
    unit in. Neither end is then a value of x, and the grid says where the extremes lie only
    to within about ``unit``.
    The unit is halved while the narrowed range is too short for ``n`` bins (whole numbers
    need one unit per bin); a whole-number range of width 1 per bin is then x's own.
    """
    width = (hi - lo) / n
    unit = _nice_at_most(width)
    while True:
        if integer:
            unit = max(unit, 1.0)
        low, high = np.ceil(lo / unit) * unit, np.floor(hi / unit) * unit
        # an extreme of x that falls on the grid is not published: the edge moves one unit inside
        if low == lo:
            low += unit
        if high == hi:
            high -= unit
        if high > low and (not integer or high - low >= n):
            return float(low), float(high), float(unit)
        if integer and unit <= 1.0:
            return float(lo), float(hi), 1.0
        unit = _nice_at_most(unit * 0.99)


def equal_width_edges(lo: float, hi: float, n: int) -> np.ndarray:
    """``N + 1`` edges of equal-width bins ``[l_i, u_i)`` over ``[lo, hi]`` (001 §2.2)."""
    return np.linspace(lo, hi, n + 1)


def bin_representatives(edges: np.ndarray, how: Representative, integer: bool) -> np.ndarray:
    """``getValue`` of each bin: its centre, low or high end (integer columns: rounded half up).

    For ``how="random"`` the centre is returned; it is what a reconstruction writes back.
    """
    if how == "low":
        reps = edges[:-1].astype(float)
    elif how == "high":
        reps = edges[1:].astype(float)
    else:
        reps = (edges[:-1] + edges[1:]) / 2.0
    if integer:
        if how == "low":
            reps = np.ceil(reps)
        elif how == "high":
            # the largest whole number inside [l_i, u_i); the last bin is closed
            reps = np.concatenate([np.ceil(edges[1:-1]) - 1, [np.floor(edges[-1])]])
        else:
            reps = np.floor(reps + 0.5)
    return reps


# ------------------------------------------------------------------------- technique
@register("random-substitution")
class RandomSubstitution(Technique):
    """Random substitution with gamma-diagonal matrices (Dowd et al. 2006, Algorithm 1).

    Parameters
    ----------
    gamma:
        γ > 1 of the gamma-diagonal matrix, a number or a dict column → γ (a ``"*"`` key
        gives the value for columns not named). Larger γ keeps more values (less privacy).
        ``None`` (default) without ``rho1``/``rho2``: :data:`DEFAULT_GAMMA` = 5, the protective
        end of the range 5 ≤ γ ≤ 12 the paper recommends (001 §6).
    rho1, rho2:
        Instead of ``gamma``: the ρ1-to-ρ2 privacy requirement; γ is then the largest value
        allowed, ``ρ2(1−ρ1)/(ρ1(1−ρ2))`` (001 §4). Both or neither.
    n_bins:
        N, the number of equal-width bins of a numeric attribute (≥ 2), a number or a dict
        column → N (``"*"`` for the rest; otherwise 10). Categorical attributes use their
        own domain size.
    representative:
        Released value of a bin: ``"centre"`` (the paper's choice), ``"low"``, ``"high"``
        (endpoints) or ``"random"`` (uniform inside the bin).
    columns:
        Attributes to perturb (default: every non-class attribute).
    perturb_class:
        Perturb the class attribute too (default ``False``).
    distinct_domain:
        A numeric attribute with at most N distinct values uses them as its domain instead
        of bins (001 §6). Must stay ``True`` for integer columns narrower than N units.
    bounds:
        Public ``{column: (low, high)}`` bounds of numeric domains (default: fitted min/max).

    Missing cells stay missing: a domain holds the observed values (or the bins over their
    range), and only observed values are substituted.
    """

    handles_missing = True
    missing_policy = "kept"
    #: γ (larger keeps more values) and the number of bins of numeric attributes
    search_space = SearchSpace({"gamma": Real(1.5, 50.0, log=True), "n_bins": Integer(3, 50, log=True),
                                "representative": Choice(("centre", "random"))})

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        gamma: float | dict[str, float] | None = None,
        rho1: float | None = None,
        rho2: float | None = None,
        n_bins: int | dict[str, int] = DEFAULT_BINS,
        representative: Representative = "centre",
        columns: list[str] | None = None,
        perturb_class: bool = False,
        distinct_domain: bool = True,
        bounds: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.gamma = gamma
        self.rho1 = rho1
        self.rho2 = rho2
        self.n_bins = n_bins
        self.representative = representative
        self.columns = columns
        self.perturb_class = perturb_class
        self.distinct_domain = distinct_domain
        self.bounds = bounds

    # ------------------------------------------------------------------ params
    def _validate_params(self) -> None:
        if self.gamma is None:
            if (self.rho1 is None) != (self.rho2 is None):
                given, lacking = ("rho1", "rho2") if self.rho2 is None else ("rho2", "rho1")
                raise ParameterError(
                    f"{given} needs {lacking}: the privacy requirement is the pair 0 < rho1 < rho2 < 1, e.g. rho1=0.05 "
                    "(CLI: --param rho1=0.05) with rho2=0.5 (CLI: --param rho2=0.5), which give gamma = 19; or give "
                    f"gamma, a number greater than 1 (default {DEFAULT_GAMMA:g}; a larger gamma keeps more values)")
            if self.rho1 is not None:
                gamma_from_privacy(self.rho1, self.rho2)  # type: ignore[arg-type]  # both set: checked above
        else:
            if self.rho1 is not None or self.rho2 is not None:
                raise ParameterError("give either gamma or (rho1, rho2), not both")
            for key, g in (self.gamma.items() if isinstance(self.gamma, Mapping) else [("", self.gamma)]):
                check_gamma(g, f"gamma[{key!r}]" if key else "gamma")
        for key, nb in (self.n_bins.items() if isinstance(self.n_bins, Mapping) else [("", self.n_bins)]):
            name = f"n_bins[{key!r}]" if key else "n_bins"
            if not is_whole(nb, 2):
                raise ParameterError(f"{name} must be a whole number of at least 2, got {nb!r}")
        if self.representative not in REPRESENTATIVES:
            raise ParameterError(f"representative must be one of {', '.join(REPRESENTATIVES)}, got {self.representative!r}")
        if not isinstance(self.perturb_class, bool):
            raise ParameterError(f"perturb_class must be True or False, got {self.perturb_class!r}")
        if not isinstance(self.distinct_domain, bool):
            raise ParameterError(f"distinct_domain must be True or False, got {self.distinct_domain!r}")
        if isinstance(self.columns, str):
            raise ParameterError(f"columns must be a list of column names, got {self.columns!r}")
        check_column_names("columns", self.columns)
        if self.bounds is not None:
            if not isinstance(self.bounds, Mapping):
                raise ParameterError("bounds must be a dict column -> (low, high)")
            for c, b in self.bounds.items():
                try:
                    lo, hi = (float(v) for v in b)
                except (TypeError, ValueError):
                    raise ParameterError(f"bounds[{c!r}] must be a pair (low, high)") from None
                if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                    raise ParameterError(f"bounds[{c!r}] must be finite with low < high, got {b!r}")

    def _gamma_for(self, column: str) -> float:
        if self.gamma is None:
            if self.rho1 is None:
                return DEFAULT_GAMMA
            return gamma_from_privacy(self.rho1, self.rho2)  # type: ignore[arg-type]  # checked: both set without gamma
        if isinstance(self.gamma, Mapping):
            if column in self.gamma:
                return float(self.gamma[column])
            if "*" in self.gamma:
                return float(self.gamma["*"])
            raise ParameterError(f"gamma has no entry for column {column!r} (add it or a '*' default)")
        return float(self.gamma)

    def strength_setting(self) -> tuple[str, str, float | None, Any] | None:
        """γ for the release gate's search (:meth:`Technique.strength_setting`): smaller is
        stronger, down to :data:`GAMMA_FLOOR`; the default γ when none is given. A γ per
        column, or one derived from (rho1, rho2), is the owner's to change: no search."""
        if self.rho1 is not None or self.rho2 is not None or isinstance(self.gamma, Mapping):
            return None
        return "gamma", "decreasing", GAMMA_FLOOR, DEFAULT_GAMMA if self.gamma is None else self.gamma

    def _bins_for(self, column: str) -> int:
        if isinstance(self.n_bins, Mapping):
            return int(self.n_bins.get(column, self.n_bins.get("*", DEFAULT_BINS)))
        return int(self.n_bins)

    def _targets(self, schema: Schema) -> list[str]:
        if self.columns is None:
            cols = list(schema.attributes)
        else:
            check_known("columns", self.columns,
                        [*schema.attributes, *([schema.class_column] if schema.class_column else [])])
            cols = [c for c in self.columns if c != schema.class_column]
        if self.perturb_class:
            cols.append(schema.require_class())
        for name, val in (("gamma", self.gamma), ("n_bins", self.n_bins), ("bounds", self.bounds)):
            if isinstance(val, Mapping):
                extra = sorted(set(val) - set(cols) - {"*"})
                if extra:
                    raise ParameterError(f"{name} names column {extra[0]!r}, which is not perturbed")
        return cols

    # --------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        for c, b in (self.bounds or {}).items():
            lo, hi = (float(v) for v in b)
            if c in schema.bounds and not (schema.bounds[c][0] <= lo and hi <= schema.bounds[c][1]):
                # bins beyond the declared domain would release impossible representatives
                raise ParameterError(
                    f"bounds[{c!r}] = ({lo:g}, {hi:g}) reach beyond the schema's declared bounds "
                    f"[{schema.bounds[c][0]:g}, {schema.bounds[c][1]:g}] of {c!r}; keep them inside"
                )
        attrs: dict[str, AttributeDomain] = {}
        private: dict[str, Any] = {}
        for c in self._targets(schema):
            g = self._gamma_for(c)
            s = df[c].dropna()
            if len(s) == 0:
                raise SchemaError(f"column {c!r} has no observed value to take its domain from")
            if c in schema.numeric:
                # Schema.integer marks whole-valued attributes (also float-typed ones); keep them whole
                whole = c in schema.integer or pd.api.types.is_integer_dtype(s)
                attrs[c] = self._numeric_domain(c, s, g, integer=whole, declared=schema.bounds.get(c),
                                                private=private)
            else:
                values = sorted(s.unique().tolist(), key=_sort_key)
                attrs[c] = AttributeDomain(c, "categorical", [_py(v) for v in values], gamma_diagonal(g, len(values)), g)
        self.metadata_ = SubstitutionMetadata(attrs, schema.class_column, self.perturb_class)
        # the owner's only: the observed ranges the bins were narrowed from (never in the sidecar)
        self.private_report_ = {"technique": "random substitution", "bins_from_x": private} if private else None

    def _numeric_domain(self, c: str, s: pd.Series, g: float, *, integer: bool,
                        declared: tuple[float, float] | None = None,
                        private: dict[str, Any] | None = None) -> AttributeDomain:
        n = self._bins_for(c)
        v = s.to_numpy(dtype=float)
        given = self.bounds is not None and c in self.bounds
        if given:
            lo, hi = (float(b) for b in self.bounds[c])  # type: ignore[index]  # given: bounds is set
        else:
            lo, hi = float(v.min()), float(v.max())
        distinct = np.unique(v)
        if hi <= lo or (self.distinct_domain and distinct.size <= n and not given):
            return AttributeDomain(c, "distinct", distinct.tolist(), gamma_diagonal(g, distinct.size), g,
                                   None, self.representative, integer)
        if not given and declared is not None:
            lo, hi = (float(b) for b in declared)  # a declared domain is public: it says nothing about x
        elif not given:
            if integer and hi - lo < n:
                raise ParameterError(f"integer column {c!r} spans {hi - lo:g} units, fewer than its {n} bins; lower "
                                     "n_bins or keep distinct_domain=True")
            observed = (lo, hi)
            lo, hi, unit = public_range(lo, hi, n, integer)
            if private is not None:
                private[c] = {"observed": [observed[0], observed[1]], "bins": [lo, hi], "grid": unit}
        if integer and hi - lo < n:
            raise ParameterError(
                f"integer column {c!r} spans {hi - lo:g} units, fewer than its {n} bins; lower n_bins or keep distinct_domain=True"
            )
        edges = equal_width_edges(lo, hi, n)
        reps = bin_representatives(edges, self.representative, integer)
        return AttributeDomain(c, "binned", reps.tolist(), gamma_diagonal(g, n), g, edges.tolist(),
                               self.representative, integer)

    # --------------------------------------------------------------- transform
    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        out = df.copy()
        for c, dom in self.metadata_.attributes.items():
            obs = df[c].notna().to_numpy()
            col = df[c] if obs.all() else df[c][obs]
            k = dom.get_index(col)
            h = substitute(k, dom.matrix, rng)
            vals = dom.get_values(h, rng)
            if dom.kind == "categorical":
                new = np.full(len(df), np.nan, dtype=object)
                new[obs] = vals
                out[c] = pd.Series(new, index=df.index).astype(df[c].dtype)
            else:
                new = np.full(len(df), np.nan)
                new[obs] = vals.astype(float)
                out[c] = pd.Series(new, index=df.index)
        return out

    # -------------------------------------------------------------- metadata
    @property
    def matrices_(self) -> dict[str, np.ndarray]:
        """Perturbation matrix of every perturbed attribute."""
        return {c: a.matrix for c, a in self.metadata_.attributes.items()}

    def keep_probabilities(self) -> dict[str, float]:
        """``γ/(γ+N−1)`` of every perturbed attribute."""
        return {c: keep_probability(a.gamma, a.n) if a.gamma is not None else float(a.matrix[0, 0])
                for c, a in self.metadata_.attributes.items()}

    def to_json(self) -> str:
        """The fitted domains and matrices as JSON (see :class:`SubstitutionMetadata`)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "metadata_")
        return self.metadata_.to_json()

    @staticmethod
    def from_json(text: str) -> SubstitutionMetadata:
        """Parse metadata written by :meth:`to_json` / :meth:`write_sidecars`."""
        return SubstitutionMetadata.from_json(text)

    def write_sidecars(self, out_path: str | Path) -> list[Path]:
        """Write ``<out stem>.matrices.json`` beside the release, atomically."""
        from ppdm.data.io import atomic_write_text

        p = sidecar_path(out_path)
        atomic_write_text(p, self.to_json())
        return [p]


def _sort_key(v: Any) -> tuple[int, Any]:
    # mixed-type categories sort numbers first, then by text
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return (0, float(v))
    return (1, str(v))
