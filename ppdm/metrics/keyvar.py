"""Key-variable disclosure risk of a release: frequencies of the quasi-identifier combinations.

An intruder who knows a person's quasi-identifiers (key variables: age, sex, region...)
looks for records of the release that carry the same combination. The measures here
follow statistical disclosure control as implemented by sdcMicro (Templ, Kowarik & Meindl
2015, JSS 67(4); functions ``freqCalc``, ``measure_risk`` and ``ldiversity``):

* :func:`key_frequencies` — per record, the sample frequency fk of its key (how many
  records of the table share it) and the estimated population frequency Fk (the sum of
  the sampling weights of those records; Fk = fk without weights).
* :func:`k_anonymity` — records whose key is shared by fewer than k records (fk < k),
  and sample uniques (fk = 1) (Sweeney 2002).
* :func:`reidentification_risk` — individual re-identification risk of every record
  (Benedetti & Franconi's approximation, as sdcMicro's ``indivRisk``) and the global
  risk: the expected number of re-identifications Σ r_i and its mean.
* :func:`l_diversity` — distinct (and entropy) l-diversity of a sensitive attribute
  within each key group (Machanavajjhala et al. 2007).
* :func:`intruder_view` — k-anonymity for an intruder who knows the true key values, blanked
  ones included: the original records that fewer than k released records could be.

SUDA2 scores live in :mod:`ppdm.metrics.suda`.

Every function reads the table it is given; the registered measures evaluate the release
``z`` (what an intruder holds) and report the same measure on the original ``x`` beside it
for reference. Keys are compared by value: categorical codes, and numeric keys value for
value (a perturbed numeric key rarely equals another record's, so on a noise release every
record tends to be unique: key-variable risk then describes the release's own uniqueness,
not whether a record can be traced back to ``x`` — record linkage measures that).

A missing key value stands for any value (sdcMicro's convention, ppdm's chosen reading): two
records match when they agree on every key that both have. Every measure here reads a blank
that way unless its ``blanks`` option says ``"strict"`` (a value of its own, as pyCANON and
ARX count); the counting is :mod:`ppdm.data.blanks`, which local suppression uses too.
Quasi-identifiers are never guessed: they are whatever the schema (or the ``keys`` option)
declares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.blanks import (
    BLANK_READINGS,
    DEFAULT_READING,
    check_reading,
    distinct_patterns,
    intruder_frequencies,
    joint_key_codes,
    key_codes,
    matching_groups,
    pattern_frequencies,
    record_frequencies_and_groups,
)
from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, ScenarioNotApplicable, SchemaError
from ppdm.metrics._dask import check_aligned, pair_partitions, reduce_parts
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure

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


def k_anonymity(
    df: pd.DataFrame, keys: Any, k: int = 3, *, weight: str | None = None, weighted: bool | None = None,
    frequencies: KeyFrequencies | None = None, per_key: bool = True, blanks: str | None = None,
) -> KAnonymityResult:
    """k-anonymity on the key variables (Sweeney 2002; sdcMicro's fk < k counts).

    ``value`` is the share of records with fk < k (records that violate k-anonymity),
    ``violations`` their number, ``sample_uniques`` the records with fk = 1 and
    ``achieved_k`` = min fk, the largest k for which the table is k-anonymous.
    ``per_key`` lists, for each key variable, how many sample uniques would remain if
    it were left out. Per-record fk (and Fk) stay in ``fk``/``Fk`` (never printed).

    ``weight`` names a sampling-weight column: then the estimated population frequency Fk
    (the sum of the weights of the records sharing the key) is computed as well, and
    ``violations_weighted`` counts the records with Fk < k — the records estimated to
    violate k-anonymity in the population, sdcMicro's ``kAnon_violations(weighted=TRUE)``.
    ``weighted`` chooses which count ``value`` is (default: the weighted one when weights
    are given).

    ``frequencies`` (the :func:`key_frequencies` of ``df`` on these keys, weighted as asked)
    saves computing them again; ``per_key=False`` leaves ``per_key`` empty (the headline alone).
    ``blanks`` reads a missing key value as :func:`key_frequencies` does: ``"wildcard"`` (the
    default, sdcMicro) or ``"strict"`` (a value of its own, as pyCANON and ARX count; a
    local-suppression release is then rarely k-anonymous). What an intruder who knows the
    blanked values finds is :func:`intruder_view`.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"k-anonymity k must be an integer ≥ 1, got {k!r}")
    keys = check_keys(df, keys, measure="k-anonymity")
    kf = _given_or_computed(df, keys, weight, frequencies, blanks)
    if kf.weighted:
        _check_fraction(kf, weight, "k-anonymity")
    use_weights = kf.weighted if weighted is None else bool(weighted)
    if use_weights and not kf.weighted:
        raise ParameterError("k-anonymity: weighted=True needs a weight column")
    viol = int((kf.fk < k).sum())
    viol_w = int((kf.Fk < k).sum()) if kf.weighted else None
    uniq = int((kf.fk == 1).sum())
    n = kf.n
    counted = viol_w if use_weights else viol
    return KAnonymityResult(value=counted / n, k=int(k), keys=keys, n=n, violations=viol, sample_uniques=uniq,  # type: ignore[operator]  # weights were checked: viol_w is set
                            achieved_k=int(kf.fk.min()), n_combinations=kf.n_groups, weight=weight,
                            weighted=use_weights, violations_weighted=viol_w, blanks=kf.blanks,
                            per_key=kf.per_key(uniq) if per_key else pd.DataFrame(), fk=kf.fk,
                            Fk=kf.Fk)


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


def sample_uniques(
    df: pd.DataFrame, keys: Any, *, frequencies: KeyFrequencies | None = None, per_key: bool = True,
    blanks: str | None = None,
) -> SampleUniquesResult:
    """Sample uniques: records whose combination of key values no other record has (fk = 1).

    ``value`` is their share; ``per_key`` says how many would remain without each key.
    ``frequencies``, ``per_key=False`` and ``blanks`` as in :func:`k_anonymity`.
    """
    keys = check_keys(df, keys, measure="sample uniques")
    kf = _given_or_computed(df, keys, None, frequencies, blanks)
    uniq = kf.fk == 1
    u = int(uniq.sum())
    return SampleUniquesResult(value=u / kf.n, keys=keys, n=kf.n, sample_uniques=u, blanks=kf.blanks,
                               per_key=kf.per_key(u) if per_key else pd.DataFrame(), unique=uniq)


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


def reidentification_risk(
    df: pd.DataFrame, keys: Any, weight: str | None = None, *, frequencies: KeyFrequencies | None = None,
    per_key: bool = True, blanks: str | None = None,
) -> ReidentificationRiskResult:
    """Individual and global re-identification risk on the key variables (sdcMicro ``measure_risk``).

    Each record's risk r_i is :func:`individual_risk` of its fk and Fk (sampling weights in
    column ``weight``; without weights r_i = 1/fk, the chance that an intruder who finds the
    key picks the right one of the fk records). The global risk is the expected number of
    re-identifications ER = Σ r_i; ``value`` is ER/n (sdcMicro's ``global_risk``),
    ``global_risk_pct`` the same in percent. Assumes an intruder who knows the keys of the
    target exactly and that the target is in the population the weights describe.
    ``frequencies``, ``per_key=False`` and ``blanks`` as in :func:`k_anonymity`.
    """
    keys = check_keys(df, keys, measure="re-identification risk")
    kf = _given_or_computed(df, keys, weight, frequencies, blanks)
    if kf.weighted:
        _check_fraction(kf, weight, "re-identification risk")
    r = individual_risk(kf.fk, kf.Fk, kf.weighted)
    er = float(np.nansum(r))
    n = kf.n
    uniq = int((kf.fk == 1).sum())
    return ReidentificationRiskResult(
        value=er / n, keys=keys, weight=weight, n=n, expected_reidentifications=er, global_risk_pct=100.0 * er / n,
        max_risk=float(np.nanmax(r)), sample_uniques=uniq, n_combinations=kf.n_groups, blanks=kf.blanks,
        per_key=kf.per_key(uniq) if per_key else pd.DataFrame(), fk=kf.fk, Fk=kf.Fk, risk=r)


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


def l_diversity(df: pd.DataFrame, keys: Any, sensitive: Any, l_target: int = 2, *,
                blanks: str | None = None) -> LDiversityResult:
    """Distinct and entropy l-diversity of sensitive attributes (Machanavajjhala et al. 2007;
    sdcMicro ``ldiversity``).

    Records are grouped by their key. A blank key value is read as ``blanks`` says, as every
    key-variable measure reads it (:mod:`ppdm.data.blanks`): ``"wildcard"`` (default) puts a
    record with a blank with every record that agrees with it on the keys both have, so groups
    overlap; ``"strict"`` makes the blank a value of its own (exact groups). For each sensitive
    attribute, a record's distinct l is the number of distinct sensitive values in its group
    (a missing value counts as one more when the group holds other values) and its entropy l
    is exp(H) of the group's value distribution. ``value`` is the smallest distinct l over all
    groups and attributes: every group of the table is at least ``value``-diverse.
    ``per_sensitive`` gives per attribute the minimum distinct and entropy l and the share of
    records in groups with distinct l < ``l_target``.
    """
    keys = check_keys(df, keys, measure="l-diversity")
    sensitive = _l_diversity_args(l_target, sensitive, df.columns, keys)
    blanks = check_reading(blanks)
    codes = key_codes(df, keys)
    group = group_codes(codes) if blanks == "strict" or not (codes < 0).any() else None
    rows, dl, el = [], {}, {}
    for s in sensitive:
        d, e = _record_ldiversity(group, codes, df[s])
        dl[s], el[s] = d, e
        rows.append({"sensitive": s, "min_distinct_l": int(d.min()), "min_entropy_l": float(e.min()),
                     "records_below_l_target": float((d < l_target).mean())})
    per = pd.DataFrame(rows)
    return LDiversityResult(value=float(per["min_distinct_l"].min()), keys=keys, sensitive=sensitive,
                            l_target=int(l_target), n=len(df), blanks=blanks, per_sensitive=per, distinct_l=dl,
                            entropy_l=el)


# ------------------------------------------- which keys reach the release as they were
#: how a quasi-identifier reaches the release: every released value equal to its original,
#: every one standing for a set holding it (interval, group, suppressed cell), or neither
KEY_STATUSES = ("unchanged", "generalised", "perturbed")


def _is_number(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def released_covers(released: pd.Series, original: pd.Series,
                    ancestors: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Record by record: whether the released value equals its original (a missing value
    equals a missing one), and whether it stands for it
    (:func:`ppdm.data.generalization.covers`: equal, suppressed, an interval or a group
    holding the original, or an original the intruder does not know)."""
    zm = released.isna().to_numpy()
    xm = original.isna().to_numpy()
    if _is_number(released) and _is_number(original):
        zv = released.to_numpy(dtype=float, na_value=np.nan)
        xv = original.to_numpy(dtype=float, na_value=np.nan)
        eq = (zv == xv) | (zm & xm)
        return eq, eq | zm | xm
    from ppdm.data.generalization import covers

    zo = released.to_numpy(dtype=object)
    xo = original.to_numpy(dtype=object)
    both = ~zm & ~xm
    eq = zm & xm
    eq[both] = zo[both] == xo[both]
    cov = eq | zm | xm
    rest = ~cov
    if rest.any():
        cov[rest] = covers(released[rest], original[rest], ancestors=ancestors)
    return eq, cov


def _unpaired_status(released: pd.Series, original: pd.Series, ancestors: Any = None) -> str:
    """A key's status without a record pairing, from the values alone: unchanged when the
    released values are the originals' (the same multiset); generalised when every released
    value that is not an interval, a group label or a suppressed cell occurs in x at least
    as often as in z; perturbed otherwise."""
    from ppdm.data.generalization import parse_interval

    zc = released.value_counts(dropna=False)
    xc = original.value_counts(dropna=False)
    if len(zc) == len(xc) and zc.sort_index().equals(xc.reindex(zc.index).sort_index()):
        return "unchanged"
    labels = {lab for ups in (ancestors or {}).values() for lab in ups}
    for v, c in zc.items():
        if pd.isna(v) or v in labels or parse_interval(v) is not None:  # type: ignore[call-overload]  # pandas-stubs: isna takes any scalar label at run time
            continue
        if c > int(xc.get(v, 0)):
            return "perturbed"
    return "generalised"


def key_status(x: pd.DataFrame, z: pd.DataFrame, keys: Any, *, paired: bool = True,
               hierarchies: dict[str, Any] | None = None) -> pd.DataFrame:
    """How each quasi-identifier reaches the release, with the shares behind it.

    With ``paired`` records (row i of z releases row i of x, as many rows): a key is
    ``unchanged`` when every released value equals its original, ``generalised`` when every
    one stands for it (:func:`released_covers`: an interval or a hierarchy group holding it,
    a suppressed cell) and some differ, and ``perturbed`` otherwise — noise, swaps,
    microaggregation and synthetic values give a released value that does not stand for the
    original. ``changed`` and ``not_covered`` are the shares of records whose released value
    differs from, and does not stand for, the original. Without a pairing the status is read
    from the values (:func:`_unpaired_status`) and the shares are missing.
    ``hierarchies`` maps a key to its ``{original: [generalised labels]}``.
    """
    keys = check_keys(z, keys, measure="key status")
    absent = [k for k in keys if k not in x.columns]
    if absent:
        raise SchemaError(f"key status: quasi-identifier(s) {', '.join(map(repr, absent))} not in the original")
    rows = []
    for k in keys:
        anc = (hierarchies or {}).get(k)
        if paired and len(x) == len(z):
            eq, cov = released_covers(z[k].reset_index(drop=True), x[k].reset_index(drop=True), anc)
            status = "unchanged" if eq.all() else "generalised" if cov.all() else "perturbed"
            rows.append({"key": k, "status": status, "changed": float(1.0 - eq.mean()),
                         "not_covered": float(1.0 - cov.mean()), "basis": "record pairs"})
        else:
            rows.append({"key": k, "status": _unpaired_status(z[k], x[k], anc), "changed": np.nan,
                         "not_covered": np.nan, "basis": "values"})
    kept = [r["key"] for r in rows if r["basis"] == "values" and r["status"] == "unchanged"]
    if len(kept) > 1 and joint_overlap(x, z, kept) < JOINT_KEPT:
        # each key's values are x's, but their combinations are not: the keys were redrawn one by one
        # (independent marginals, swaps), so no person's combination reaches z as it was
        for r in rows:
            if r["key"] in kept:
                r["status"], r["basis"] = "perturbed", "values (combinations redrawn)"
    return pd.DataFrame(rows, columns=["key", "status", "changed", "not_covered", "basis"])


#: share of z's key combinations that must be x's (as multisets) for keys read by their values to
#: count as reaching the release unchanged together
JOINT_KEPT = 0.95


def joint_overlap(x: pd.DataFrame, z: pd.DataFrame, keys: list[str]) -> float:
    """The share of z's records whose combination of ``keys`` is matched by a record of x, each record
    of x matching once (multiset overlap: Σ min(count in x, count in z) / len(z))."""
    if len(z) == 0:
        return 1.0
    hx = pd.util.hash_pandas_object(x[keys].reset_index(drop=True).astype(object), index=False)
    hz = pd.util.hash_pandas_object(z[keys].reset_index(drop=True).astype(object), index=False)
    both = pd.concat([hx.value_counts().rename("x"), hz.value_counts().rename("z")], axis=1).fillna(0)
    return float(np.minimum(both["x"], both["z"]).sum() / len(z))


# ------------------------------------------------------------ registrations
def infer_quasi_identifiers(schema: Any, df: pd.DataFrame | None = None) -> list[str]:
    """Quasi-identifiers guessed from the roles when none are declared: the categorical
    attributes that are not the class, not sensitive and not the weight, and (given ``df``)
    not nearly unique (fewer distinct values than half the records, so a free-text or code
    column is not taken for a key). At most 12 are taken, in column order.

    Numeric attributes are left out: a released numeric value is compared by value, and a
    perturbed one rarely equals another record's, so every record would look unique. The
    guess stands for an intruder who knows a person's categorical facts (sex, race, job,
    ...); declare the quasi-identifiers for any other intruder.
    """
    skip = {schema.class_column, schema.weight, *schema.sensitive, *schema.identifiers}
    cand = [c for c in schema.categorical if c not in skip]
    if df is None:
        return cand[:12]
    from ppdm.metrics._common import is_dask

    present = [c for c in cand if c in df.columns]
    if is_dask(df):  # counted partition by partition, in one pass
        import dask

        from ppdm.metrics._dask import partition_lengths

        distinct = dict(zip(present, dask.compute(*[df[c].nunique(dropna=True) for c in present]), strict=True))
        n = sum(partition_lengths(df))
    else:
        distinct = {c: df[c].nunique(dropna=True) for c in present}
        n = len(df)
    return [c for c in cand if not (c in distinct and distinct[c] * 2 > n)][:12]


def context_keys(ctx: EvaluationContext, measure: str) -> list[str]:
    """The quasi-identifiers of an evaluation: the ``keys`` option, else the schema's, else
    (option ``infer_keys``, on by default) :func:`infer_quasi_identifiers`. The keys used and
    where they came from are kept on the result (``keys``, ``key_source``)."""
    keys = ctx.options.get(f"{measure}.keys", ctx.options.get("keys")) or ctx.schema.quasi_identifiers
    source = "declared"
    if isinstance(keys, str):
        keys = [k.strip() for k in keys.replace(";", ",").split(",") if k.strip()]
    if not keys and str(ctx.options.get("infer_keys", True)).lower() not in ("false", "0", "no"):
        keys = infer_quasi_identifiers(ctx.schema, ctx.z)
        source = "inferred"
    if not keys:
        raise MeasureNotApplicable(f"{measure} needs quasi-identifiers (key variables) and none could be inferred "
                                   f"(no categorical attribute besides the class); {HOW_TO_DECLARE}")
    ctx.cache["key_source"] = source
    return list(keys)


def context_weight(ctx: EvaluationContext, measure: str) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """x and z with the sampling-weight column of the schema (``None`` when there is none).

    A release keeps its records in the order of x (every technique does), so when z lacks
    the weight column the weights of x are used for z, record for record.
    """
    w = ctx.options.get(f"{measure}.weight", ctx.options.get("weight", ctx.schema.weight))
    x, z = ctx.x, ctx.z
    if w is None:
        return x, z, None
    if w not in x.columns and w not in z.columns:
        raise SchemaError(f"{measure}: weight column {w!r} is in neither the original nor the released table")
    if w not in z.columns:
        if len(z) != len(x):
            raise SchemaError(f"{measure}: the released table has no weight column {w!r}, and its records "
                              "do not match the original's one to one")
        z = z.assign(**{w: x[w].to_numpy()})
    if w not in x.columns:
        x = x.assign(**{w: z[w].to_numpy()}) if len(x) == len(z) else x
    return x, z, w


def _context_frequencies(
    ctx: EvaluationContext, table: str, df: pd.DataFrame, keys: list[str], weight: str | None = None,
    blanks: str = DEFAULT_READING,
) -> KeyFrequencies:
    """fk/Fk of x or z on ``keys``, computed once per evaluation: k-anonymity, sample uniques
    and re-identification risk all count the same key combinations."""
    name = f"key_frequencies:{table}:{weight}:{blanks}:" + "\x1f".join(keys)
    if name not in ctx.cache:
        ctx.cache[name] = key_frequencies(df, keys, weight, blanks=blanks)
    return ctx.cache[name]


def context_blanks(ctx: EvaluationContext, measure: str) -> str:
    """How a key-variable measure of an evaluation reads a blank: its ``blanks`` option
    (``-p k_anonymity.blanks=strict``), else a plain ``blanks`` option shared by every key-variable
    measure, else :data:`ppdm.data.blanks.DEFAULT_READING` (sdcMicro's wildcard)."""
    return check_reading(_opt(ctx, measure, "blanks", ctx.options.get("blanks")))


def _opt(ctx: EvaluationContext, measure: str, name: str, default: Any) -> Any:
    """A measure option given as ``measure.name`` or ``{measure: {name: ...}}``. Plain ``name`` is
    not read: ``k`` and ``l`` mean other things to other measures (IDR's interval width)."""
    nested = ctx.options.get(measure)
    if isinstance(nested, dict) and name in nested:
        return nested[name]
    return ctx.options.get(f"{measure}.{name}", default)


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def context_hierarchies(ctx: EvaluationContext) -> dict[str, Any]:
    """The schema's category hierarchies (``{column: {original: [labels, fine to coarse]}}``), if any."""
    return dict(getattr(ctx.schema, "hierarchies", None) or {})


def context_key_status(ctx: EvaluationContext, keys: list[str]) -> pd.DataFrame:
    """:func:`key_status` of the evaluation's quasi-identifiers, computed once per evaluation
    (partition pair by partition pair for partitioned tables)."""
    name = "key_status:" + "\x1f".join(keys)
    if name not in ctx.cache:
        from ppdm.metrics._common import is_dask

        if is_dask(ctx.x) or is_dask(ctx.z):
            ctx.cache[name] = key_status_parts(ctx.x, ctx.z, keys, context_hierarchies(ctx))
        else:
            ctx.cache[name] = key_status(ctx.x, ctx.z, keys, paired=ctx.is_paired,
                                         hierarchies=context_hierarchies(ctx))
    return ctx.cache[name]


def judged_keys(ctx: EvaluationContext, measure: str) -> tuple[list[str], list[str]]:
    """The quasi-identifiers a key-variable measure judges the release on, and those it leaves out.

    Key frequencies speak of re-identification only for an intruder who can find a person's
    known values in the release: on keys that reach z unchanged or generalised
    (:func:`key_status`). A perturbed key is left out here — the intruder's chance on it is
    what ``qi_matching`` measures. With every key perturbed the measure does not apply
    (:class:`MeasureNotApplicable`, naming the keys). The option ``all_keys=true`` counts
    every key as it is released (the release's own uniqueness, as sdcMicro would on z).
    """
    keys = context_keys(ctx, measure)
    if _truthy(_opt(ctx, measure, "all_keys", False)):
        return keys, []
    st = context_key_status(ctx, keys)
    perturbed = [k for k, v in zip(st["key"], st["status"], strict=True) if v == "perturbed"]
    kept = [k for k in keys if k not in perturbed]
    if not kept:
        how = ", ".join(f"{k} ({c:.1%} of records changed)" if np.isfinite(c) else k
                        for k, c in zip(st["key"], st["changed"], strict=True))
        raise ScenarioNotApplicable(
            # the measure's own name left out and what varies said first, so that reports give the shared
            # reason once for all key-variable measures and every run
            f"all quasi-identifiers are perturbed, {how}: key frequencies judge only unchanged or generalised "
            f"ones — qi_matching judges this intruder (-p <measure>.all_keys=true computes it anyway)")
    return kept, perturbed


def _finish(res: Any, ctx: EvaluationContext, perturbed: list[str]) -> Any:
    res.key_source = ctx.cache.get("key_source", "")
    res.perturbed_keys = list(perturbed)
    return res


@register_measure("k_anonymity", kind="risk", needs_class=False, default=True, direction="lower", value_range=(0.0, 1.0),
                  threshold=0.05, out_of_core=True, options=(*KEY_OPTIONS, "k", "weighted", "weight", "blanks"),
                  meaning="The share of released records that share their quasi-identifier values with fewer than "
                  "k records (k = 3), so an intruder who knows them narrows the person down to under k; 0 is best. "
                  "Judged on quasi-identifiers that reach the release unchanged or generalised.",
                  description="share of released records whose quasi-identifier combination is shared by "
                              "fewer than k records (k = 3; sdcMicro fk < k, or Fk < k with weighted=true)")
def _k_anonymity_measure(ctx: EvaluationContext) -> KAnonymityResult:
    keys, perturbed = judged_keys(ctx, "k_anonymity")
    k = _opt(ctx, "k_anonymity", "k", 3)
    weighted = _truthy(_opt(ctx, "k_anonymity", "weighted", False))
    blanks = context_blanks(ctx, "k_anonymity")
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.z):
        return _finish(k_anonymity_parts(ctx, keys, k, weighted, blanks), ctx, perturbed)
    if weighted:
        x, z, w = context_weight(ctx, "k_anonymity")
        if w is None:
            raise ParameterError("k_anonymity.weighted=true needs a weight column (--weight or weight in a schema)")
        wx = w if w in x.columns else None
    else:
        x, z, w, wx = ctx.x, ctx.z, None, None
    res = k_anonymity(z, keys, k, weight=w, weighted=weighted,
                      frequencies=_context_frequencies(ctx, "z", z, keys, w, blanks))
    res.original = k_anonymity(x, keys, k, weight=wx, weighted=weighted and wx is not None,
                               frequencies=_context_frequencies(ctx, "x", x, keys, wx, blanks), per_key=False).value
    return _finish(res, ctx, perturbed)


# ------------------------------------------------------------- the intruder's view
@dataclass
class IntruderViewResult(RecordDetailMixin):
    """Share of the original records that an intruder who knows their true key values narrows
    down to fewer than k released records; lower is better."""

    k: int = 3
    keys: list[str] = field(default_factory=list)
    n: int = 0  # records of x counted
    narrowed: int = 0  # records with 1 to k − 1 candidates
    narrowed_blanked: int | None = None  # of those, records whose own release has a blank key (paired)
    not_found: int = 0  # records with no candidate (their true keys are in no released record)
    min_candidates: int = 0  # fewest candidates of a record that has one
    original: float | None = None  # the same count of x against itself (= fk < k on x)
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)
    candidates: np.ndarray | None = record_field()


def intruder_view(x: pd.DataFrame, z: pd.DataFrame, keys: Any, k: int = 3, *,
                  paired: bool | None = None) -> IntruderViewResult:
    """k-anonymity in the intruder's view: for every record of ``x``, the released records of
    ``z`` that are candidates for its *true* key values (:func:`ppdm.data.blanks.intruder_frequencies`:
    a released record is a candidate when it agrees with them on every key it has not blanked).

    ``value`` is the share of x's records with at least one and fewer than ``k`` candidates: an
    intruder who knows such a person's keys — blanked ones included, from a register or an
    acquaintance — narrows them down to under k records, although the wildcard reading of z
    (:func:`k_anonymity`) may count fk ≥ k for every released record. A record with no candidate
    is not found and is counted in ``not_found``. Without blanks the count is fk < k of x's keys
    looked up in z. The key values must be coded alike in x and z (a recoded release compared on
    its own categories, as ``ppdm evaluate`` does); with ``paired`` rows (default: as many rows),
    a record whose true values match no released record — its key generalised to a label x does
    not use — takes its own released record's wildcard fk instead, so a generalised key is never
    read as "not found". Grouped by distinct patterns, never an n × n comparison.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"k-anonymity k must be an integer ≥ 1, got {k!r}")
    keys = check_keys(z, keys, measure="intruder view")
    absent = [c for c in keys if c not in x.columns]
    if absent:
        raise SchemaError(f"intruder view: quasi-identifier(s) {', '.join(map(repr, absent))} not in the original")
    if len(x) == 0:
        raise SchemaError("intruder view: the original table has no rows")
    paired = len(x) == len(z) if paired is None else bool(paired and len(x) == len(z))
    cx, cz = joint_key_codes(x, z, keys)
    cand = intruder_frequencies(cx, cz)
    blank = (cz < 0).any(axis=1) & ~(cx < 0).any(axis=1) if paired else None
    if paired and (cand == 0).any():
        own = _frequencies(cz, None, "wildcard")[0]
        cand = np.where(cand == 0, own, cand)
    narrowed = (cand >= 1) & (cand < k)
    found = cand[cand >= 1]
    return IntruderViewResult(value=float(narrowed.mean()), k=int(k), keys=keys, n=len(x), narrowed=int(narrowed.sum()),
                              narrowed_blanked=int((narrowed & blank).sum()) if blank is not None else None,
                              not_found=int((cand == 0).sum()), min_candidates=int(found.min()) if found.size else 0,
                              candidates=cand)


def _intruder_view_parts(ctx: EvaluationContext, keys: list[str], k: int) -> IntruderViewResult:
    """:func:`intruder_view` of partitioned tables, exactly: the distinct key combinations of x and
    z with their counts (aggregates, not records) are brought together and looked up."""

    def combos(df: Any) -> pd.DataFrame:
        g = df[list(keys)].assign(_n=np.int64(1)).groupby(list(keys), dropna=False, observed=True)["_n"].sum()
        return g.compute().reset_index()

    xc, zc = combos(ctx.x), combos(ctx.z)
    cx, cz = joint_key_codes(xc, zc, keys)
    wx = xc["_n"].to_numpy(dtype=float)
    cand = pattern_frequencies(cz, zc["_n"].to_numpy(dtype=float), queries=cx)
    narrowed = (cand >= 1) & (cand < k)
    n = float(wx.sum())
    found = cand[cand >= 1]
    return IntruderViewResult(value=float(wx[narrowed].sum() / n) if n else 0.0, k=int(k), keys=list(keys), n=int(n),
                              narrowed=int(wx[narrowed].sum()), not_found=int(wx[cand == 0].sum()),
                              min_candidates=int(found.min()) if found.size else 0)


@register_measure("k_anonymity_intruder", kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, out_of_core=True, options=(*KEY_OPTIONS, "k"),
                  meaning="The share of original records that an intruder who knows their true quasi-identifier "
                  "values (blanked ones included) narrows down to fewer than k released records (k = 3); a blank "
                  "hides a value from the release, not from the intruder. 0 is best. Judged on quasi-identifiers "
                  "that reach the release unchanged or generalised.",
                  description="k-anonymity in the intruder's view: share of original records whose true "
                              "quasi-identifier values fewer than k released records could carry (a blank matching "
                              "any value)")
def _k_anonymity_intruder_measure(ctx: EvaluationContext) -> IntruderViewResult:
    keys, perturbed = judged_keys(ctx, "k_anonymity_intruder")
    k = _opt(ctx, "k_anonymity_intruder", "k", 3)  # its own option: a measure reads only what it declares
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.z) or is_dask(ctx.x):
        res = _intruder_view_parts(ctx, keys, int(k))
        res.original = _intruder_view_parts(EvaluationContext(ctx.x, ctx.x, ctx.schema), keys, int(k)).value
        return _finish(res, ctx, perturbed)
    res = intruder_view(ctx.x, ctx.z, keys, k, paired=ctx.is_paired)
    res.original = intruder_view(ctx.x, ctx.x, keys, k, paired=True).value
    return _finish(res, ctx, perturbed)


@register_measure("sample_uniques", kind="risk", needs_class=False, default=True, direction="lower", value_range=(0.0, 1.0),
                  out_of_core=True, options=(*KEY_OPTIONS, "blanks"),
                  description="share of released records unique on the quasi-identifiers (fk = 1)",
                  meaning="The share of released records no other record matches on the quasi-identifiers; each "
                  "is a candidate for re-identification, 0 is best.")
def _sample_uniques_measure(ctx: EvaluationContext) -> SampleUniquesResult:
    keys, perturbed = judged_keys(ctx, "sample_uniques")
    blanks = context_blanks(ctx, "sample_uniques")
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.z):
        return _finish(sample_uniques_parts(ctx, keys, blanks), ctx, perturbed)
    res = sample_uniques(ctx.z, keys, frequencies=_context_frequencies(ctx, "z", ctx.z, keys, None, blanks))
    res.original = sample_uniques(ctx.x, keys, frequencies=_context_frequencies(ctx, "x", ctx.x, keys, None, blanks),
                                  per_key=False).value
    return _finish(res, ctx, perturbed)


@register_measure("reidentification_risk", kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, out_of_core=True, options=(*KEY_OPTIONS, "weight", "blanks"),
                  meaning="The expected share of records an intruder who knows their quasi-identifiers (and, with "
                  "weights, that they are in the population) re-identifies correctly; 0 is best. Judged on "
                  "quasi-identifiers that reach the release unchanged or generalised.",
                  description="global re-identification risk on the quasi-identifiers: mean individual risk "
                              "(sdcMicro measure_risk; sampling weights from the schema)")
def _reid_measure(ctx: EvaluationContext) -> ReidentificationRiskResult:
    keys, perturbed = judged_keys(ctx, "reidentification_risk")
    blanks = context_blanks(ctx, "reidentification_risk")
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.z):
        return _finish(reidentification_risk_parts(ctx, keys, blanks), ctx, perturbed)
    x, z, w = context_weight(ctx, "reidentification_risk")
    wx = w if w in x.columns else None
    res = reidentification_risk(z, keys, w, frequencies=_context_frequencies(ctx, "z", z, keys, w, blanks))
    res.original = reidentification_risk(x, keys, wx, frequencies=_context_frequencies(ctx, "x", x, keys, wx, blanks),
                                         per_key=False).value
    return _finish(res, ctx, perturbed)


@register_measure("l_diversity", kind="risk", needs_class=False, direction="higher", value_range=(1.0, None),
                  threshold=2.0, out_of_core=True, options=(*KEY_OPTIONS, "sensitive", "l", "blanks"),
                  meaning="The fewest distinct sensitive values in a group of records sharing their quasi-identifiers; "
                  "1 means some group gives its sensitive value away, higher is better.",
                  description="distinct l-diversity: fewest distinct sensitive values in a quasi-identifier group "
                              "of the release")
def _l_diversity_measure(ctx: EvaluationContext) -> LDiversityResult:
    keys, perturbed = judged_keys(ctx, "l_diversity")
    sens = _opt(ctx, "l_diversity", "sensitive", None) or ctx.schema.sensitive
    l_target = _opt(ctx, "l_diversity", "l", 2)
    blanks = context_blanks(ctx, "l_diversity")
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.z):
        return _finish(l_diversity_parts(ctx, keys, sens, l_target, blanks), ctx, perturbed)
    res = l_diversity(ctx.z, keys, sens, l_target, blanks=blanks)
    res.original = l_diversity(ctx.x, keys, sens, l_target, blanks=blanks).value
    return _finish(res, ctx, perturbed)


@dataclass
class AttributeDisclosureResult(MeasureResult):
    """Share of released records whose sensitive value the group sharing their quasi-identifiers
    gives away (fewer than ``l_target`` distinct values); lower is better."""

    keys: list[str] = field(default_factory=list)
    sensitive: list[str] = field(default_factory=list)
    l_target: int = 2
    worst: str = ""
    original: float | None = None
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)
    per_sensitive: pd.DataFrame = field(default_factory=pd.DataFrame)


def attribute_disclosure(df: pd.DataFrame, keys: Any, sensitive: Any, l_target: int = 2, *,
                         blanks: str | None = None) -> AttributeDisclosureResult:
    """Attribute disclosure: the share of records whose group of equal ``keys`` holds fewer than
    ``l_target`` distinct values of a sensitive attribute (the worst sensitive attribute counts).

    These are the records distinct l-diversity (Machanavajjhala et al. 2007, §4) fails: an
    intruder who knows a person's quasi-identifiers and finds their group learns the sensitive
    value, or narrows it to fewer than ``l_target`` values. Groups and missing values are read as
    :func:`l_diversity` reads them (``blanks`` as there); ``per_sensitive`` gives the share per
    sensitive attribute.
    """
    ld = l_diversity(df, keys, sensitive, l_target, blanks=blanks)
    per = ld.per_sensitive
    worst = per.loc[per["records_below_l_target"].idxmax()]  # type: ignore[call-overload]  # pandas-stubs: loc takes idxmax's label
    return AttributeDisclosureResult(value=float(worst["records_below_l_target"]), keys=list(ld.keys),
                                     sensitive=list(ld.sensitive), l_target=int(l_target),
                                     worst=str(worst["sensitive"]), per_sensitive=per)


@register_measure("attribute_disclosure", kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, out_of_core=True,
                  options=(*KEY_OPTIONS, "sensitive", "l", "blanks"),
                  meaning="The share of released records in a quasi-identifier group with fewer than l (= 2) distinct "
                  "values of a sensitive attribute, so an intruder who knows a person's quasi-identifiers learns "
                  "the sensitive value; 0 is best. Judged when a sensitive attribute is declared.",
                  description="attribute disclosure: share of released records whose quasi-identifier group holds "
                              "fewer than l distinct sensitive values (the records l-diversity fails, "
                              "Machanavajjhala et al. 2007)")
def _attribute_disclosure_measure(ctx: EvaluationContext) -> AttributeDisclosureResult:
    sens = _opt(ctx, "attribute_disclosure", "sensitive", None) or list(ctx.schema.sensitive)
    if isinstance(sens, str):
        sens = [s.strip() for s in sens.replace(";", ",").split(",") if s.strip()]
    if not sens:
        raise ScenarioNotApplicable("no sensitive attribute is declared (--sensitive, or sensitive in a schema "
                                    "file): attribute disclosure is judged for declared sensitive attributes")
    keys, perturbed = judged_keys(ctx, "attribute_disclosure")
    # a sensitive attribute is what the intruder learns, never what they look a person up by
    keys = [k for k in keys if k not in sens]
    if not keys:
        raise ScenarioNotApplicable("every quasi-identifier left to look a person up by is perturbed or sensitive")
    l_target = _opt(ctx, "attribute_disclosure", "l", 2)
    blanks = context_blanks(ctx, "attribute_disclosure")
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.z):
        ld = l_diversity_parts(ctx, keys, sens, l_target, blanks)
        per = ld.per_sensitive
        worst = per.loc[per["records_below_l_target"].idxmax()]
        res = AttributeDisclosureResult(value=float(worst["records_below_l_target"]), keys=list(keys),
                                        sensitive=list(ld.sensitive), l_target=int(l_target),
                                        worst=str(worst["sensitive"]), per_sensitive=per)
        per_x, _ = _ldiversity_table(ctx.x, keys, list(ld.sensitive), int(l_target), blanks)
    else:
        res = attribute_disclosure(ctx.z, keys, sens, l_target, blanks=blanks)
        per_x = l_diversity(ctx.x, keys, sens, l_target, blanks=blanks).per_sensitive
    res.original = float(per_x["records_below_l_target"].max())
    return _finish(res, ctx, perturbed)


__all__ = [
    "AttributeDisclosureResult", "KAnonymityResult", "attribute_disclosure", "KeyFrequencies", "LDiversityResult", "ReidentificationRiskResult", "SampleUniquesResult",
    "BLANK_READINGS", "DEFAULT_READING", "IntruderViewResult", "context_blanks", "intruder_view", "wildcard_ldiversity",
    "wildcard_value_counts",
    "KEY_STATUSES", "KEY_VARIABLE_MEASURES", "check_keys", "check_sensitive", "check_weights", "context_key_status", "context_keys",
    "infer_quasi_identifiers", "individual_risk", "judged_keys", "k_anonymity", "key_codes", "key_frequencies",
    "key_status", "l_diversity", "reidentification_risk", "released_covers", "sample_uniques",
]


# ------------------------------------------------- key-variable risk of partitioned tables
# Here rather than in ppdm.metrics._dask, which holds only measure-free partition helpers, so
# that the two modules do not depend on each other.
def key_status_parts(x: Any, z: Any, keys: list[str], hierarchies: dict[str, Any]) -> pd.DataFrame:
    """:func:`ppdm.metrics.keyvar.key_status` of partitioned tables (record pairs partition by
    partition): the same table as in memory."""

    def counts(xi: pd.DataFrame, zi: pd.DataFrame) -> list[tuple[int, int, int]]:
        out = []
        for k in keys:
            eq, cov = released_covers(zi[k], xi[k], hierarchies.get(k))
            out.append((len(eq), int(eq.sum()), int(cov.sum())))
        return out

    parts = pair_partitions(x, z, counts, what="key status")
    rows = []
    for j, k in enumerate(keys):
        n = sum(p[j][0] for p in parts)
        eq = sum(p[j][1] for p in parts)
        cov = sum(p[j][2] for p in parts)
        status = "unchanged" if eq == n else "generalised" if cov == n else "perturbed"
        rows.append({"key": k, "status": status, "changed": 1.0 - eq / n if n else 0.0,
                     "not_covered": 1.0 - cov / n if n else 0.0, "basis": "record pairs"})
    return pd.DataFrame(rows, columns=["key", "status", "changed", "not_covered", "basis"])


def _with_weight(ctx: Any, measure: str, use: bool) -> tuple[Any, Any, str | None]:
    """The partitioned x and z with the sampling-weight column (z takes x's, partition by partition,
    when it has none), or without one."""
    import dask.dataframe as dd

    w = ctx.options.get(f"{measure}.weight", ctx.options.get("weight", ctx.schema.weight)) if use else None
    x, z = ctx.x, ctx.z
    if w is None:
        return x, z, None
    if w not in x.columns and w not in z.columns:
        raise SchemaError(f"{measure}: weight column {w!r} is in neither the original nor the released table")
    if w not in z.columns:
        check_aligned(x, z, measure)
        meta = z._meta.assign(**{w: x._meta[w]})
        z = dd.map_partitions(lambda a, b: a.assign(**{w: b[w].to_numpy()}), z, x, meta=meta,
                              align_dataframes=False)
    if w not in x.columns:
        check_aligned(x, z, measure)
        meta = x._meta.assign(**{w: z._meta[w]})
        x = dd.map_partitions(lambda a, b: a.assign(**{w: b[w].to_numpy()}), x, z, meta=meta,
                              align_dataframes=False)
    return x, z, w


def _check_weight_parts(df: Any, weight: str, measure: str) -> None:
    """Refuses missing, infinite, zero or negative weights, counted partition by partition."""
    def bad(p: pd.DataFrame) -> tuple[int, int, int]:
        s = p[weight]
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            return (-1, 0, 0)
        v = s.to_numpy(dtype=float, na_value=np.nan)
        return (0, int((~np.isfinite(v)).sum()), int((np.isfinite(v) & (v <= 0)).sum()))

    parts = reduce_parts(df[[weight]], bad)
    if any(p[0] < 0 for p in parts):
        raise SchemaError(f"{measure}: weight column {weight!r} is not numeric")
    nonfinite, nonpos = sum(p[1] for p in parts), sum(p[2] for p in parts)
    if nonfinite:
        raise SchemaError(f"{measure}: weight column {weight!r} has {nonfinite} missing or infinite value(s)")
    if nonpos:
        raise SchemaError(f"{measure}: weight column {weight!r} has {nonpos} zero or negative value(s); "
                          "sampling weights are positive")


def key_classes(df: Any, keys: list[str], weight: str | None,
                blanks: str = DEFAULT_READING) -> tuple[list[Any], int]:
    """Frequencies of the key combinations of a partitioned table by a Dask group-by, exactly as
    :func:`ppdm.metrics.keyvar.key_frequencies` (sdcMicro ``freqCalc``, a missing key value
    matching every value).

    Records with equal keys (a missing value counted as a value of its own) form a *class*;
    every record of a class has the same fk and Fk. Returns frames of classes with the columns
    ``size`` (records), ``wsize`` (their weights), ``fk`` and ``Fk``, and the number of
    records. Without missing keys the classes are the group-by itself, left partitioned. With
    missing keys, a record's frequency counts the classes it matches: the table of distinct key
    combinations (an aggregate, not records) is brought together and the frequencies of
    :func:`ppdm.data.blanks.pattern_frequencies` computed on it, each class weighted by its
    records. ``blanks="strict"`` reads a blank as a value of its own: the classes are then the
    group-by itself.
    """

    cols = list(keys) + ([weight] if weight else [])
    d = df[cols]
    d = d.assign(_one=np.int64(1), _w=d[weight].astype(float) if weight else 1.0)
    split = max(1, df.npartitions)
    any_missing = d[list(keys)].isna().any(axis=1)
    g = d.groupby(list(keys), dropna=False, observed=True)[["_one", "_w"]]
    n_missing, n = dask_compute(any_missing.sum(), d["_one"].sum())
    n = int(n)
    if int(n_missing) == 0 or blanks == "strict":
        cl = g.sum(split_out=split).rename(columns={"_one": "size", "_w": "wsize"})
        return [cl.assign(fk=lambda t: t["size"].astype(float), Fk=lambda t: t["wsize"])], n
    cl = g.sum().compute().reset_index()
    codes = key_codes(cl, list(keys))
    sums = pattern_frequencies(codes, np.column_stack([cl["_one"].to_numpy(dtype=float),
                                                       cl["_w"].to_numpy(dtype=float)]))
    fk, fw = sums[:, 0], sums[:, 1]
    out = pd.DataFrame({"size": cl["_one"].to_numpy(), "wsize": cl["_w"].to_numpy(dtype=float), "fk": fk, "Fk": fw})
    return [out], n


def dask_compute(*items: Any) -> tuple[Any, ...]:
    import dask

    return dask.compute(*items)


def _class_sums(frames: list[Any], fn: Callable[[pd.DataFrame], dict[str, float]], columns: list[str],
                mins: tuple[str, ...] = (), maxs: tuple[str, ...] = ()) -> dict[str, float]:
    """``fn`` over every class frame, summed (``mins``/``maxs``: smallest/largest instead)."""
    import dask

    meta = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    lazy = [f.map_partitions(lambda p: pd.DataFrame([fn(p)], columns=columns), meta=meta) for f in frames
            if not isinstance(f, pd.DataFrame)]
    parts = list(dask.compute(*lazy)) + [pd.DataFrame([fn(f)], columns=columns) for f in frames
                                         if isinstance(f, pd.DataFrame)]
    allp = pd.concat(parts, ignore_index=True)
    out = {}
    for c in columns:
        v = allp[c].dropna()
        out[c] = float(v.min() if c in mins else v.max() if c in maxs else v.sum()) if len(v) else float("nan")
    return out


def _uniques(frames: list[Any]) -> int:
    return int(_class_sums(frames, lambda p: {"u": float(p["size"][p["fk"] == 1].sum())}, ["u"])["u"])


def _cached(cache: dict | None, key: tuple, make: Callable[[], Any]) -> Any:
    """``make()`` once per evaluation: k-anonymity, sample uniques and re-identification risk of a
    partitioned table count the same key combinations (as their in-memory forms share fk/Fk)."""
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _per_key_parts(df: Any, keys: list[str], uniques: int, cache: dict | None = None,
                   blanks: str = DEFAULT_READING) -> pd.DataFrame:
    """The per-key table of :func:`ppdm.metrics.keyvar.k_anonymity` for a partitioned table."""
    return _cached(cache, ("dask_per_key", id(df), tuple(keys), blanks),
                   lambda: _per_key_table(df, keys, uniques, blanks))


def _per_key_table(df: Any, keys: list[str], uniques: int, blanks: str = DEFAULT_READING) -> pd.DataFrame:
    import dask

    distinct, miss = dask.compute([df[k].nunique() for k in keys], [df[k].isna().sum() for k in keys])
    rows = []
    for j, k in enumerate(keys):
        u = 0 if len(keys) == 1 else _uniques(key_classes(df, [c for c in keys if c != k], None, blanks)[0])
        rows.append({"key": k, "distinct_values": int(distinct[j]), "missing": int(miss[j]), "uniques_without": u,
                     "uniques_removed_by_dropping": uniques - u})
    return pd.DataFrame(rows)


def _class_stats(df: Any, keys: list[str], weight: str | None, k: int, cache: dict | None = None,
                 blanks: str = DEFAULT_READING) -> tuple[dict[str, float], int]:
    """Everything the key-variable measures read from the classes of one table, in one pass:
    fk < k and Fk < k counts, sample uniques, classes, the smallest fk, records whose weights give
    Fk < fk, and the expected re-identifications with and without weights."""

    def make() -> tuple[dict[str, float], int]:
        frames, n = key_classes(df, keys, weight, blanks)

        def fn(p: pd.DataFrame) -> dict[str, float]:
            s = p["size"].to_numpy(dtype=float)
            fk, fw = p["fk"].to_numpy(dtype=float), p["Fk"].to_numpy(dtype=float)
            r = individual_risk(fk, fw, weight is not None) if len(p) else np.zeros(0)
            return {"viol": float(s[fk < k].sum()), "viol_w": float(s[fw < k].sum()), "uniq": float(s[fk == 1].sum()),
                    "classes": float(len(p)), "min_fk": float(fk.min()) if len(p) else np.nan,
                    "bad": float(s[fw < fk * (1 - 1e-12)].sum()) if weight is not None else 0.0,
                    "er": float(np.nansum(s * r)), "max": float(np.nanmax(r)) if len(r) else np.nan}

        cols = ["viol", "viol_w", "uniq", "classes", "min_fk", "bad", "er", "max"]
        return _class_sums(frames, fn, cols, mins=("min_fk",), maxs=("max",)), n

    return _cached(cache, ("dask_classes", id(df), tuple(keys), weight, int(k), blanks), make)


def _uniques_cached(df: Any, keys: list[str], cache: dict | None,
                    blanks: str = DEFAULT_READING) -> tuple[int, int]:
    """Sample uniques and records of a table, from any class statistics already counted."""
    if cache is not None:
        for key, value in list(cache.items()):
            if isinstance(key, tuple) and key[:4] == ("dask_classes", id(df), tuple(keys), None) \
                    and key[-1] == blanks:
                return int(value[0]["uniq"]), value[1]
    st, n = _class_stats(df, keys, None, 1, cache, blanks)
    return int(st["uniq"]), n


def k_anonymity_parts(ctx: Any, keys: list[str], k: Any, weighted: bool, blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.k_anonymity` of a partitioned release (and of x, for reference):
    exact, from Dask group-bys on the keys (:func:`key_classes`)."""
    from ppdm.errors import ParameterError, PPDMError

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"k-anonymity k must be an integer ≥ 1, got {k!r}")
    x, z, w = _with_weight(ctx, "k_anonymity", weighted)
    if weighted and w is None:
        raise ParameterError("k_anonymity.weighted=true needs a weight column (--weight or weight in a schema)")
    res = {}
    for label, df in (("z", z), ("x", x)):
        if w is not None:
            _check_weight_parts(df, w, "k-anonymity")
        st, n = _class_stats(df, keys, w, int(k), ctx.cache if w is None else None, blanks)
        if w is not None and st["bad"] > 0:
            raise PPDMError(f"k-anonymity: the sampling weights in column {w!r} give {int(st['bad'])} record(s) a "
                            "population frequency Fk below their sample frequency fk; sampling weights are inverse "
                            "inclusion probabilities (≥ 1)")
        res[label] = (st, n, df)
    st, n, df = res["z"]
    viol_w = int(st["viol_w"]) if w is not None else None
    out = KAnonymityResult(value=(viol_w if weighted else st["viol"]) / n, k=int(k), keys=list(keys), n=n,  # type: ignore[operator]  # weighted needs w: viol_w is set
                           violations=int(st["viol"]), sample_uniques=int(st["uniq"]), achieved_k=int(st["min_fk"]),
                           n_combinations=int(st["classes"]), weight=w, weighted=bool(weighted),
                           violations_weighted=viol_w, blanks=blanks,
                           per_key=_per_key_parts(ctx.z, keys, int(st["uniq"]), ctx.cache, blanks))
    sx, nx, _ = res["x"]
    out.original = (sx["viol_w"] if weighted else sx["viol"]) / nx
    return out


def sample_uniques_parts(ctx: Any, keys: list[str], blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.sample_uniques` of a partitioned release, exactly."""

    u, n = _uniques_cached(ctx.z, keys, ctx.cache, blanks)
    ux, nx = _uniques_cached(ctx.x, keys, ctx.cache, blanks)
    return SampleUniquesResult(value=u / n, keys=list(keys), n=n, sample_uniques=u, blanks=blanks,
                               per_key=_per_key_parts(ctx.z, keys, u, ctx.cache, blanks), original=ux / nx)


def reidentification_risk_parts(ctx: Any, keys: list[str], blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.reidentification_risk` of a partitioned release (weights of the
    schema), exactly: individual risks per class of equal keys, summed over the classes."""
    from ppdm.errors import PPDMError

    x, z, w = _with_weight(ctx, "reidentification_risk", True)
    out = {}
    for label, df, orig in (("z", z, ctx.z), ("x", x, ctx.x)):
        ww = w if (w is not None and w in df.columns) else None
        if ww is not None:
            _check_weight_parts(df, ww, "re-identification risk")
        # unweighted classes of the evaluation's own tables are shared with k-anonymity
        st, n = _class_stats(orig if ww is None else df, keys, ww, 3, ctx.cache if ww is None else None, blanks)
        if st["bad"] > 0:
            raise PPDMError(f"re-identification risk: the sampling weights in column {ww!r} give {int(st['bad'])} "
                            "record(s) a population frequency Fk below their sample frequency fk; sampling weights "
                            "are inverse inclusion probabilities (≥ 1)")
        out[label] = (st, n, ww)
    st, n, ww = out["z"]
    res = ReidentificationRiskResult(value=st["er"] / n, keys=list(keys), weight=ww, n=n,
                                     expected_reidentifications=st["er"], global_risk_pct=100.0 * st["er"] / n,
                                     max_risk=st["max"], sample_uniques=int(st["uniq"]),
                                     n_combinations=int(st["classes"]), blanks=blanks,
                                     per_key=_per_key_parts(ctx.z, keys, int(st["uniq"]), ctx.cache, blanks))
    sx, nx, _ = out["x"]
    res.original = sx["er"] / nx
    return res


def _ldiversity_table(df: Any, keys: list[str], sensitive: list[str], l_target: int,
                      blanks: str = DEFAULT_READING) -> tuple[pd.DataFrame, int]:
    """Per sensitive attribute: the smallest distinct and entropy l over the groups of exact keys
    and the share of records in groups below ``l_target`` — two group-bys (key and value cells,
    then groups), as :func:`ppdm.metrics.keyvar.l_diversity` counts them. With blank keys read as
    wildcards the key and value cells (an aggregate, not records) are brought together and
    :func:`wildcard_ldiversity` reads them."""
    rows = []
    n = None
    split = max(1, df.npartitions)
    if blanks == "wildcard" and int(dask_compute(df[list(keys)].isna().any(axis=1).sum())[0]):
        for s in sensitive:
            cells = df[list(keys) + [s]].groupby(list(keys) + [s], dropna=False, observed=True).size()
            cells = cells.compute().rename("c").reset_index()
            c = cells["c"].to_numpy(dtype=float)
            inv, d, e = wildcard_ldiversity(key_codes(cells, list(keys)), _codes(cells[s]), c)
            size = np.bincount(inv, weights=c, minlength=len(d))
            n = int(c.sum())
            rows.append({"sensitive": s, "min_distinct_l": int(d.min()), "min_entropy_l": float(e.min()),
                         "records_below_l_target": float(size[d < l_target].sum() / n) if n else 0.0})
        return pd.DataFrame(rows), int(n or 0)
    for s in sensitive:
        cells = df[list(keys) + [s]].groupby(list(keys) + [s], dropna=False, observed=True).size(split_out=split)
        cells = cells.to_frame("c").reset_index()
        cells = cells.assign(clogc=cells["c"] * np.log(cells["c"].astype(float)),
                             val=(~cells[s].isna()).astype(np.int64), miss=cells[s].isna().astype(np.int64))
        groups = cells.groupby(list(keys), dropna=False, observed=True)[["c", "clogc", "val", "miss"]].sum(
            split_out=split)

        def fn(p: pd.DataFrame) -> dict[str, float]:
            size = p["c"].to_numpy(dtype=float)
            vals = p["val"].to_numpy()
            distinct = vals + ((p["miss"].to_numpy() > 0) & (vals > 0))
            with np.errstate(divide="ignore", invalid="ignore"):
                ent = np.where(vals > 0, np.log(size) - p["clogc"].to_numpy(dtype=float) / size, 0.0)
            return {"min_d": float(distinct.min()) if len(p) else np.nan,
                    "min_e": float(np.exp(ent).min()) if len(p) else np.nan,
                    "below": float(size[distinct < l_target].sum()), "n": float(size.sum())}

        st = _class_sums([groups], fn, ["min_d", "min_e", "below", "n"], mins=("min_d", "min_e"))
        n = int(st["n"])
        rows.append({"sensitive": s, "min_distinct_l": int(st["min_d"]), "min_entropy_l": st["min_e"],
                     "records_below_l_target": st["below"] / n if n else 0.0})
    return pd.DataFrame(rows), int(n or 0)


def _l_diversity_args(l_target: Any, sensitive: Any, columns: Any, keys: list[str]) -> list[str]:
    """Checks of l-diversity's arguments, shared by the in-memory and partitioned forms; the
    sensitive attributes as a list."""
    if isinstance(l_target, bool) or not isinstance(l_target, (int, np.integer)) or l_target < 1:
        raise ParameterError(f"l-diversity l_target must be an integer ≥ 1, got {l_target!r}")
    return check_sensitive(sensitive, columns, keys, measure="l-diversity")


def check_sensitive(sensitive: Any, columns: Any, keys: list[str], *, measure: str) -> list[str]:
    """The sensitive attributes as a list of column names (a comma list is split): refuses none
    (:class:`MeasureNotApplicable`, saying how to declare one), absent ones, and one that is
    also a quasi-identifier."""
    if isinstance(sensitive, str):
        sensitive = [s.strip() for s in sensitive.replace(";", ",").split(",") if s.strip()]
    sensitive = list(sensitive or [])
    if not sensitive:
        raise MeasureNotApplicable(
            f"{measure} needs a sensitive attribute; declare it with --sensitive or sensitive in a schema file "
            "(Schema(sensitive=[...]) in Python)")
    absent = [s for s in sensitive if s not in columns]
    if absent:
        raise SchemaError(f"{measure}: sensitive column(s) {', '.join(map(repr, absent))} not in the table")
    clash = [s for s in sensitive if s in keys]
    if clash:
        raise ParameterError(f"{measure}: {clash[0]!r} is both a quasi-identifier and the sensitive attribute")
    return sensitive


def l_diversity_parts(ctx: Any, keys: list[str], sensitive: Any, l_target: Any,
                      blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.l_diversity` of a partitioned release, exactly."""
    sensitive = _l_diversity_args(l_target, sensitive, ctx.z.columns, keys)
    per, n = _ldiversity_table(ctx.z, keys, sensitive, int(l_target), blanks)
    per_x, _ = _ldiversity_table(ctx.x, keys, sensitive, int(l_target), blanks)
    return LDiversityResult(value=float(per["min_distinct_l"].min()), keys=list(keys), sensitive=sensitive,
                            l_target=int(l_target), n=n, blanks=blanks, per_sensitive=per,
                            original=float(per_x["min_distinct_l"].min()))
