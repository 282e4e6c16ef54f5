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

The counting (:mod:`ppdm.metrics._keyvar_frequencies`), the keys and their status
(:mod:`ppdm.metrics._keyvar_keys`) and the partitioned versions (:mod:`ppdm.metrics._keyvar_parts`)
live in private modules; every name of theirs is importable from here.
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
    intruder_frequencies,
    joint_key_codes,
    key_codes,
    pattern_frequencies,
)
from ppdm.errors import ParameterError, ScenarioNotApplicable, SchemaError
from ppdm.metrics._common import is_dask
from ppdm.metrics._keyvar_frequencies import (  # noqa: F401  (re-exported: the public path stays this module)
    DIRECT_CELLS_PER_ROW,
    HOW_TO_DECLARE,
    KEY_OPTIONS,
    KEY_VARIABLE_MEASURES,
    KAnonymityResult,
    KeyFrequencies,
    LDiversityResult,
    ReidentificationRiskResult,
    SampleUniquesResult,
    _check_fraction,
    _codes,
    _combine,
    _dense,
    _frequencies,
    _given_or_computed,
    _group_ldiversity,
    _per_key,
    _radix,
    _record_ldiversity,
    _small,
    _value_ldiversity,
    check_keys,
    check_weights,
    group_codes,
    individual_risk,
    key_frequencies,
    wildcard_ldiversity,
    wildcard_value_counts,
)
from ppdm.metrics._keyvar_keys import (  # noqa: F401  (re-exported: the public path stays this module)
    JOINT_KEPT,
    KEY_STATUSES,
    _context_frequencies,
    _finish,
    _is_number,
    _opt,
    _truthy,
    _unpaired_status,
    context_blanks,
    context_hierarchies,
    context_key_status,
    context_keys,
    context_weight,
    infer_quasi_identifiers,
    joint_overlap,
    judged_keys,
    key_status,
    key_status_parts,
    lookup_keys,
    released_covers,
)
from ppdm.metrics._keyvar_parts import (  # noqa: F401  (re-exported: the public path stays this module)
    _cached,
    _check_weight_parts,
    _class_stats,
    _class_sums,
    _l_diversity_args,
    _ldiversity_table,
    _per_key_parts,
    _per_key_table,
    _uniques,
    _uniques_cached,
    _with_weight,
    check_sensitive,
    dask_compute,
    k_anonymity_parts,
    key_classes,
    l_diversity_parts,
    reidentification_risk_parts,
    sample_uniques_parts,
)
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure


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


#: a frequency measure called as measure(table, keys, weight column, frequencies, per_key)
_OnTable = Callable[[pd.DataFrame, list[str], str | None, KeyFrequencies, bool], Any]


def _weighted_tables(ctx: EvaluationContext, measure: str) -> tuple[pd.DataFrame, pd.DataFrame, str | None, str | None]:
    """x, z, z's weight column and x's (``None`` where x has none: x is then measured unweighted)."""
    x, z, w = context_weight(ctx, measure)
    return x, z, w, w if w in x.columns else None


def _with_original(ctx: EvaluationContext, keys: list[str], blanks: str, perturbed: list[str],
                   tables: tuple[pd.DataFrame, pd.DataFrame, str | None, str | None], measure: _OnTable) -> Any:
    """``measure`` on z, with its value on x as ``original`` (no per-key detail for x): both from
    the key frequencies the context caches, which k-anonymity, sample uniques and
    re-identification risk share. ``tables`` is (x, z, z's weight, x's weight)."""
    x, z, w, wx = tables
    res = measure(z, keys, w, _context_frequencies(ctx, "z", z, keys, w, blanks), True)
    res.original = measure(x, keys, wx, _context_frequencies(ctx, "x", x, keys, wx, blanks), False).value
    return _finish(res, ctx, perturbed)


def _frequency_measure(ctx: EvaluationContext, name: str, parts: Callable[[EvaluationContext, list[str], str], Any],
                       weighted: bool, measure: _OnTable) -> Any:
    """The measure ``name`` of the evaluation: on the judged keys, with the blanks reading of its
    options, partition by partition (``parts``) when z is a Dask table, else :func:`_with_original`
    (weighted by the schema's sampling weights when ``weighted``)."""
    keys, perturbed = judged_keys(ctx, name)
    blanks = context_blanks(ctx, name)
    if is_dask(ctx.z):
        return _finish(parts(ctx, keys, blanks), ctx, perturbed)
    tables = _weighted_tables(ctx, name) if weighted else (ctx.x, ctx.z, None, None)
    return _with_original(ctx, keys, blanks, perturbed, tables, measure)


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

    if is_dask(ctx.z):
        return _finish(k_anonymity_parts(ctx, keys, k, weighted, blanks), ctx, perturbed)
    tables = _weighted_tables(ctx, "k_anonymity") if weighted else (ctx.x, ctx.z, None, None)
    if weighted and tables[2] is None:
        raise ParameterError("k_anonymity.weighted=true needs a weight column (--weight or weight in a schema)")
    # weighted on z (it has the weights), and on x where x has them too
    return _with_original(ctx, keys, blanks, perturbed, tables, lambda t, keys, tw, f, per_key: k_anonymity(
        t, keys, k, weight=tw, weighted=weighted and tw is not None, frequencies=f, per_key=per_key))


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
    return _frequency_measure(ctx, "sample_uniques", sample_uniques_parts, False, lambda t, keys, _, f, per_key:
                              sample_uniques(t, keys, frequencies=f, per_key=per_key))


@register_measure("reidentification_risk", kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, out_of_core=True, options=(*KEY_OPTIONS, "weight", "blanks"),
                  meaning="The expected share of records an intruder who knows their quasi-identifiers (and, with "
                  "weights, that they are in the population) re-identifies correctly; 0 is best. Judged on "
                  "quasi-identifiers that reach the release unchanged or generalised.",
                  description="global re-identification risk on the quasi-identifiers: mean individual risk "
                              "(sdcMicro measure_risk; sampling weights from the schema)")
def _reid_measure(ctx: EvaluationContext) -> ReidentificationRiskResult:
    return _frequency_measure(ctx, "reidentification_risk", reidentification_risk_parts, True,
                              lambda t, keys, tw, f, per_key: reidentification_risk(t, keys, tw, frequencies=f,
                                                                                    per_key=per_key))


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
    keys, perturbed = lookup_keys(ctx, "attribute_disclosure", sens)
    l_target = _opt(ctx, "attribute_disclosure", "l", 2)
    blanks = context_blanks(ctx, "attribute_disclosure")

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


