"""Key-variable frequencies: the counting under every measure of :mod:`ppdm.metrics.keyvar`.

The checks of keys and weights, the key codes and their frequencies fk and Fk
(:func:`key_frequencies`), Benedetti & Franconi's individual risk (:func:`individual_risk`),
the per-key breakdown, the l-diversity counts within key groups (wildcard keys included), and
the result records the measures fill. Split from :mod:`ppdm.metrics.keyvar`, which re-exports
every name here; the partitioned versions (:mod:`ppdm.metrics._keyvar_parts`) share them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.blanks import (
    DEFAULT_READING,
    check_reading,
    distinct_patterns,
    key_codes,
    matching_groups,
    record_frequencies_and_groups,
)
from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, SchemaError
from ppdm.metrics._records import RecordDetailMixin, record_field

#: the registered measures that read quasi-identifiers (named on the command line, they need
#: declared ones; in the default set they fall back on :func:`infer_quasi_identifiers`)
KEY_VARIABLE_MEASURES = ("k_anonymity", "k_anonymity_intruder", "sample_uniques", "reidentification_risk", "l_diversity", "suda2",
                         "restorable_keys", "attribute_disclosure",
                         # the privacy models of ppdm.metrics.privacy_models (ARX, ANJANA, pyCANON)
                         "t_closeness", "recursive_cl_diversity", "alpha_k_anonymity", "basic_beta_likeness",
                         "enhanced_beta_likeness", "delta_disclosure")


#: the options every key-variable measure reads (:func:`context_keys`, :func:`judged_keys`)
KEY_OPTIONS = ("keys", "infer_keys", "all_keys")


HOW_TO_DECLARE = ("declare them with --qi or with quasi_identifiers in a schema file "
                  "(Schema(quasi_identifiers=[...]) in Python)")


# ------------------------------------------------------------------------ inputs
def check_keys(df: pd.DataFrame, keys: Any, *, measure: str) -> list[str]:
    """The key variables as a list of column names of ``df``; refuses none or absent ones."""
    if isinstance(keys, str):
        keys = [k.strip() for k in keys.replace(";", ",").split(",") if k.strip()]
    keys = list(keys or [])
    if not keys:
        raise MeasureNotApplicable(f"{measure} needs quasi-identifiers (key variables); {HOW_TO_DECLARE}")
    if len(set(keys)) != len(keys):
        raise ParameterError(f"{measure}: a quasi-identifier is named twice in {keys}")
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"{measure} reads a pandas DataFrame, got {type(df).__name__}")
    absent = [k for k in keys if k not in df.columns]
    if absent:
        raise SchemaError(f"{measure}: quasi-identifier(s) {', '.join(map(repr, absent))} not in the table")
    if len(df) == 0:
        raise SchemaError(f"{measure}: the table has no rows")
    return keys


def check_weights(df: pd.DataFrame, weight: str | None, *, measure: str) -> np.ndarray | None:
    """The sampling weights as float64, or ``None``; refuses missing, zero or negative ones."""
    if weight is None:
        return None
    if weight not in df.columns:
        raise SchemaError(f"{measure}: weight column {weight!r} is not in the table")
    s = df[weight]
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        raise SchemaError(f"{measure}: weight column {weight!r} is not numeric (dtype {s.dtype})")
    w = s.to_numpy(dtype=float, na_value=np.nan)
    bad = ~np.isfinite(w)
    if bad.any():
        raise SchemaError(f"{measure}: weight column {weight!r} has {int(bad.sum())} missing or infinite "
                          f"value(s), first at row {s.index[int(bad.argmax())]!r}")
    bad = w <= 0
    if bad.any():
        raise SchemaError(f"{measure}: weight column {weight!r} has {int(bad.sum())} zero or negative "
                          f"value(s), first at row {s.index[int(bad.argmax())]!r}; sampling weights are positive")
    return w


def _codes(s: pd.Series) -> np.ndarray:
    """Integer codes of a column's values (compared by value), −1 for a missing value."""
    codes, _ = pd.factorize(s, use_na_sentinel=True)
    return codes.astype(np.int64, copy=False)


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dense codes of the pairs (a_i, b_i) of two dense code arrays (no missing values)."""
    nb = int(b.max()) + 1 if b.size else 1
    codes, _ = pd.factorize(a * nb + b)
    return codes.astype(np.int64, copy=False)


#: a mixed-radix key code is counted with a direct ``bincount`` up to this many cells per record
DIRECT_CELLS_PER_ROW = 8


def _radix(codes: np.ndarray) -> tuple[np.ndarray, int, list[int]] | None:
    """One int64 per row encoding the whole row (mixed radix over the code ranges, −1 shifted to
    0), the number of possible codes and each column's stride; ``None`` when the codes do not
    fit in int64."""
    n, m = codes.shape
    cards = [int(codes[:, j].max()) + 2 if n else 1 for j in range(m)]
    size = 1
    for card in cards:
        if size > (2**62) // card:
            return None
        size *= card
    strides = [int(np.prod(cards[j + 1:], dtype=np.int64)) for j in range(m)]
    out = np.zeros(n, dtype=np.int64)
    for j in range(m):
        out += (codes[:, j].astype(np.int64) + 1) * strides[j]
    return out, size, strides


def _small(size: int, n: int) -> bool:
    """Whether ``size`` possible codes can be counted with a direct ``bincount``."""
    return size <= max(DIRECT_CELLS_PER_ROW * n, 1 << 16)


def _dense(radix: np.ndarray, size: int) -> np.ndarray:
    """Dense ids of radix codes: a lookup table when it is small, else a hash factorisation."""
    if _small(size, len(radix)):
        present = np.zeros(size, dtype=bool)
        present[radix] = True
        ids = np.cumsum(present) - 1
        return ids[radix]
    codes, _ = pd.factorize(radix)
    return codes.astype(np.int64, copy=False)


def group_codes(codes: np.ndarray) -> np.ndarray:
    """Dense group id of each row of a code matrix (rows equal iff same id; −1 is a value here)."""
    n, m = codes.shape
    r = _radix(codes)
    if r is not None:
        return _dense(r[0], r[1])
    g = np.zeros(n, dtype=np.int64)
    for j in range(m):
        g = _combine(g, codes[:, j] + 1)
    return g


# ------------------------------------------------------------------ frequencies
@dataclass
class KeyFrequencies:
    """fk and Fk of every record (sdcMicro ``freqCalc``) and the key group of every record."""

    keys: list[str]
    fk: np.ndarray  # float64 holding whole numbers
    Fk: np.ndarray
    n_groups: int  # distinct key combinations (a missing value counted as a value of its own)
    weighted: bool
    codes: np.ndarray  # (n, len(keys)) value codes, −1 for a missing value
    blanks: str = DEFAULT_READING  # how a blank was read (ppdm.data.blanks.BLANK_READINGS)
    #: per-key summaries already computed from ``codes`` (k-anonymity, sample uniques and the
    #: re-identification risk of one table all list the same one)
    per_key_tables: dict[int, pd.DataFrame] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.fk)

    def per_key(self, uniques: int) -> pd.DataFrame:
        """:func:`_per_key` of this table's keys, computed once."""
        if uniques not in self.per_key_tables:
            self.per_key_tables[uniques] = _per_key(self.keys, self.codes, uniques, self.blanks)
        return self.per_key_tables[uniques].copy()


def key_frequencies(df: pd.DataFrame, keys: Any, weight: str | None = None, *,
                    blanks: str = DEFAULT_READING) -> KeyFrequencies:
    """Sample frequency fk and population frequency Fk of each record's key (sdcMicro ``freqCalc``).

    fk_i is the number of records whose key variables equal record i's, Fk_i the sum of
    their sampling weights (``weight`` names the weight column; without one Fk = fk).
    ``blanks`` says how a missing key value is read (:mod:`ppdm.data.blanks`): ``"wildcard"``
    (default, sdcMicro's rule) matches every value — records i and j match when they agree on
    every key both have; a record whose keys are all missing matches every record (fk = n) but
    does not add to the frequency of complete records; ``"strict"`` (pyCANON, ARX) counts a
    blank as a value of its own.
    """
    keys = check_keys(df, keys, measure="key frequencies")
    w = check_weights(df, weight, measure="key frequencies")
    blanks = check_reading(blanks)
    codes = key_codes(df, keys)
    fk, Fk, n_groups = _frequencies(codes, w, blanks)
    return KeyFrequencies(keys=keys, fk=fk, Fk=Fk, n_groups=n_groups, weighted=w is not None, codes=codes,
                          blanks=blanks)


def _given_or_computed(
    df: pd.DataFrame, keys: list[str], weight: str | None, given: KeyFrequencies | None,
    blanks: str | None = None,
) -> KeyFrequencies:
    """``given`` when it is the frequencies of ``df`` on ``keys`` (weighted and blanks read as
    asked; ``blanks=None``: as given, else the default reading), else computed."""
    if given is None:
        return key_frequencies(df, keys, weight, blanks=check_reading(blanks))
    if list(given.keys) != keys or given.n != len(df) or given.weighted != (weight is not None) or (
            blanks is not None and given.blanks != check_reading(blanks)):
        raise ParameterError("frequencies= must be key_frequencies() of the same table, keys, weight and blanks")
    return given


def _frequencies(codes: np.ndarray, w: np.ndarray | None,
                 blanks: str = DEFAULT_READING) -> tuple[np.ndarray, np.ndarray, int]:
    """fk, Fk (= fk without weights) and the number of distinct keys of a code matrix, blanks read
    as ``blanks`` says (:mod:`ppdm.data.blanks`: the counting the technique shares)."""
    if w is None:
        fk, n_groups = record_frequencies_and_groups(codes, blanks)
        return fk, fk, n_groups
    both, n_groups = record_frequencies_and_groups(codes, blanks, np.column_stack([np.ones(len(codes)), w]))
    return both[:, 0], both[:, 1], n_groups


def individual_risk(fk: np.ndarray, Fk: np.ndarray, weighted: bool = True) -> np.ndarray:
    """Individual re-identification risk r_i of each record, as sdcMicro's ``indivRisk``
    (method "approx", Benedetti & Franconi 1998; Franconi & Polettini 2004).

    Without sampling weights (a census, or weights unknown) r = 1/fk. With weights,
    p = fk/Fk is the key's sampling fraction and

    * fk = 1: r = p/(1−p) · log(1/p),
    * fk = 2: r = p/(1−p) − (p/(1−p))² · log(1/p),
    * fk ≥ 3: r = p / (fk − (1−p)),

    and r = 1/fk whenever Fk = fk (every population unit of the key is in the sample).
    """
    fk = np.asarray(fk, dtype=float)
    Fk = np.asarray(Fk, dtype=float)
    if not weighted:
        return 1.0 / fk
    p = fk / Fk
    r = np.zeros_like(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = p / (1.0 - p)
        log_inv = np.log(1.0 / p)
        r = np.where(fk > 2, p / (fk - (1.0 - p)), r)
        r = np.where(fk == 2, odds - odds * odds * log_inv, r)
        r = np.where(fk == 1, odds * log_inv, r)
    return np.where(fk == Fk, 1.0 / fk, r)


def _check_fraction(kf: KeyFrequencies, weight: str | None, measure: str) -> None:
    bad = kf.Fk < kf.fk * (1.0 - 1e-12)
    if bad.any():
        raise PPDMError(
            f"{measure}: the sampling weights in column {weight!r} give {int(bad.sum())} record(s) a population "
            "frequency Fk below their sample frequency fk; sampling weights are inverse inclusion probabilities (≥ 1)"
        )


# ------------------------------------------------------------ per-key summaries
def _per_key(keys: list[str], codes: np.ndarray, uniques: int, blanks: str = DEFAULT_READING) -> pd.DataFrame:
    """Per key variable: its number of distinct values and missing values, and the sample
    uniques that would remain without it (which keys make records unique)."""
    n, m = codes.shape
    r = _radix(codes) if not (codes < 0).any() else None
    rows = []
    for j, k in enumerate(keys):
        if m == 1:
            u = 0
        elif r is not None and _small(r[1], n):
            # zeroing key j's digit of the radix code gives the code of the other keys
            cnt = np.bincount(r[0] - (codes[:, j] + 1) * r[2][j])
            u = int(np.count_nonzero(cnt == 1))
        else:
            fk, _, _ = _frequencies(np.delete(codes, j, axis=1), None, blanks)
            u = int((fk == 1).sum())
        rows.append({"key": k, "distinct_values": int(codes[:, j].max()) + 1,
                     "missing": int((codes[:, j] < 0).sum()), "uniques_without": u,
                     "uniques_removed_by_dropping": uniques - u})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------- k-anonymity
@dataclass
class KAnonymityResult(RecordDetailMixin):
    """Share of records whose key is shared by fewer than k records (fk < k); lower is better."""

    k: int = 3
    keys: list[str] = field(default_factory=list)
    n: int = 0
    violations: int = 0
    sample_uniques: int = 0
    achieved_k: int = 0  # smallest fk: the table is achieved_k-anonymous on these keys
    n_combinations: int = 0
    weight: str | None = None  # sampling weights: violations counted on Fk (estimated population)
    weighted: bool = False  # value counts Fk < k (True) or fk < k (False)
    violations_weighted: int | None = None  # records with Fk < k, when weights are given
    blanks: str = DEFAULT_READING  # how a blank key cell was read (ppdm.data.blanks)
    original: float | None = None  # the same measure on the original x, for reference
    key_source: str = ""  # 'declared' or 'inferred' (see infer_quasi_identifiers)
    perturbed_keys: list[str] = field(default_factory=list)  # declared keys left out: perturbed in z
    per_key: pd.DataFrame = field(default_factory=pd.DataFrame)
    fk: np.ndarray | None = record_field()
    Fk: np.ndarray | None = record_field()


@dataclass
class SampleUniquesResult(RecordDetailMixin):
    """Share of records that are unique on the key variables (fk = 1); lower is better."""

    keys: list[str] = field(default_factory=list)
    n: int = 0
    sample_uniques: int = 0
    blanks: str = DEFAULT_READING
    original: float | None = None
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)
    per_key: pd.DataFrame = field(default_factory=pd.DataFrame)
    unique: np.ndarray | None = record_field()


# -------------------------------------------------------- re-identification risk
@dataclass
class ReidentificationRiskResult(RecordDetailMixin):
    """Global re-identification risk: the mean individual risk (sdcMicro ``measure_risk``'s
    ``global_risk``); lower is better. ``expected_reidentifications`` = Σ r_i."""

    keys: list[str] = field(default_factory=list)
    weight: str | None = None
    n: int = 0
    expected_reidentifications: float = 0.0
    global_risk_pct: float = 0.0
    max_risk: float = 0.0
    sample_uniques: int = 0
    n_combinations: int = 0
    blanks: str = DEFAULT_READING
    original: float | None = None
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)
    per_key: pd.DataFrame = field(default_factory=pd.DataFrame)
    fk: np.ndarray | None = record_field()
    Fk: np.ndarray | None = record_field()
    risk: np.ndarray | None = record_field()


# ----------------------------------------------------------------- l-diversity
@dataclass
class LDiversityResult(RecordDetailMixin):
    """Distinct l-diversity: the smallest number of distinct sensitive values in a key group
    (over every sensitive attribute); higher is better."""

    keys: list[str] = field(default_factory=list)
    sensitive: list[str] = field(default_factory=list)
    l_target: int = 2
    n: int = 0
    blanks: str = DEFAULT_READING
    original: float | None = None
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)
    per_sensitive: pd.DataFrame = field(default_factory=pd.DataFrame)
    distinct_l: dict[str, np.ndarray] | None = record_field()
    entropy_l: dict[str, np.ndarray] | None = record_field()


def _group_ldiversity(group: np.ndarray, s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per record: distinct values of ``s`` in its group (missing counts as one more value when
    the group also holds a non-missing one, as sdcMicro) and exp(entropy) of the group's values."""
    sc = _codes(s)
    present = sc >= 0
    ng = int(group.max()) + 1
    pair = _combine(group, sc + 1)  # (group, value) cells; missing is value 0
    cell_count = np.bincount(pair).astype(float)
    first = np.zeros(len(cell_count), dtype=np.int64)
    first[pair] = group
    cell_is_value = np.zeros(len(cell_count), dtype=bool)
    cell_is_value[pair] = present
    distinct_vals = np.bincount(first[cell_is_value], minlength=ng)
    has_missing = np.bincount(group[~present], minlength=ng) > 0
    distinct = distinct_vals + (has_missing & (distinct_vals > 0))
    size = np.bincount(group, minlength=ng).astype(float)
    prop = cell_count / size[first]
    ent = np.bincount(first, weights=-prop * np.log(prop), minlength=ng)
    if not present.all():  # a group of missing values only has no sensitive value at all
        only_missing = (distinct_vals == 0)
        ent = np.where(only_missing, 0.0, ent)
    return distinct[group].astype(float), np.exp(ent)[group]


def _value_ldiversity(owner: np.ndarray, value: np.ndarray, count: np.ndarray,
                      n_owners: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct and entropy l of each owner from its (value, count) cells (each (owner, value)
    once; value −1 is a missing sensitive value): distinct counts the present values, plus one
    for missing when the owner also holds a present one (as :func:`_group_ldiversity`)."""
    present = value >= 0
    vals = np.bincount(owner[present], minlength=n_owners)
    has_missing = np.bincount(owner[~present], minlength=n_owners) > 0
    distinct = vals + (has_missing & (vals > 0))
    size = np.bincount(owner, weights=count, minlength=n_owners)
    prop = count / size[owner]
    ent = np.bincount(owner, weights=-prop * np.log(prop), minlength=n_owners)
    ent = np.where(vals > 0, ent, 0.0)  # only missing values: no sensitive value at all
    return distinct.astype(float), np.exp(ent)


def wildcard_value_counts(codes: np.ndarray, values: np.ndarray, counts: np.ndarray
                          ) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    """The records of every (key pattern, sensitive value) pair when a blank key matches any value.

    ``codes`` are the key patterns of cells (rows may repeat), ``values`` each cell's sensitive
    code (−1 missing) and ``counts`` its records. A pattern's group is every record the wildcard
    rule matches with it (:func:`ppdm.data.blanks.matching_groups`, groups overlapping, summed
    block by block: no n × n comparison). Returns the pattern of every cell, the number of
    distinct patterns u, and per (pattern, value) pair present in a pattern's group its pattern
    (0..u−1), its value (as in ``values``) and its records.
    """
    pats, _, inv = distinct_patterns(codes)
    u = len(pats)
    vcode, vals = pd.factorize(values)
    parts = []
    for q_rows, q_gid, p_rows, p_gid in matching_groups(pats):
        gid_of = np.full(u, -1, dtype=np.int64)
        gid_of[p_rows] = p_gid
        cg = gid_of[inv]
        sel = cg >= 0
        cells = pd.DataFrame({"g": cg[sel], "v": vcode[sel], "c": counts[sel]})
        cells = cells.groupby(["g", "v"], sort=False)["c"].sum().reset_index()
        q = pd.DataFrame({"q": q_rows, "g": q_gid})
        parts.append(q.merge(cells, on="g")[["q", "v", "c"]])
    allc = pd.concat(parts, ignore_index=True).groupby(["q", "v"], sort=False)["c"].sum().reset_index()
    value = np.asarray(vals)[allc["v"].to_numpy()]
    return inv, u, allc["q"].to_numpy(dtype=np.int64), value, allc["c"].to_numpy(dtype=float)


def wildcard_ldiversity(codes: np.ndarray, values: np.ndarray,
                        counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """l-diversity of every distinct key pattern when a blank key matches any value.

    Arguments as :func:`wildcard_value_counts`, which gives each pattern's group (every record
    the wildcard rule matches with it); its distinct and entropy l are read from the sensitive
    values of that group. Returns the pattern of every cell and, per pattern, distinct l and
    exp(entropy).
    """
    inv, u, pattern, value, count = wildcard_value_counts(codes, values, counts)
    d, e = _value_ldiversity(pattern, value, count, u)
    return inv, d, e


def _record_ldiversity(group: np.ndarray | None, codes: np.ndarray, s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per record distinct and entropy l of ``s``: within its exact group (``group`` given: the
    strict reading, or no blank key) or among the records the wildcard rule matches with it."""
    if group is not None:
        return _group_ldiversity(group, s)
    sc = _codes(s)
    inv, d, e = wildcard_ldiversity(codes, sc, np.ones(len(sc)))
    return d[inv], e[inv]
