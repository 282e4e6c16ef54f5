"""The gate of :func:`ppdm.experiments.release.release`: refusals, warnings and the advice they carry.

:func:`judge_release` holds a release check to the gate (:func:`ppdm.metrics.release_check.gate`)
and raises :class:`ReleaseRefused` or warns with :class:`ReleaseWarning`, each message naming a
technique or parameter that would fix the release (:func:`fix_advice`) and, for a
differentially private release, its ε; :func:`_screen_pass_through` refuses a pass-through
column (the weight) that tells records apart before any work. Split from
:mod:`ppdm.experiments.release`, which re-exports every name here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd

from ppdm.data.roles import pass_through_message, screen_pass_through
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.metrics.release_check import (
    GATE_OVERRIDES,
    Finding,
    GateOptions,
    GateThresholds,
    ReleaseCheck,
    gate,
)


class ReleaseRefused(PPDMError):
    """The release gate refuses it: (almost) the original records, verbatim records unique in x,
    untouched quasi-identifiers that single records out, or a pass-through column that does."""


class ReleaseWarning(UserWarning):
    """The release gate finds a release weak, under its refusal line (the message names the
    column responsible and what would fix it)."""


#: what a technique offers to fix a weak release: name → (parameter, how, what it does)
_FIXES: dict[str, list[tuple[str, str]]] = {
    "uniform-noise": [("level", "raise level (now {level}): each value is replaced with probability level")],
    "gaussian-noise": [("level", "raise level (now {level}): each value is changed with probability level")],
    "random-technique": [("p_rt", "raise p_rt (now {p_rt}): each value is perturbed with probability p_rt")],
    "framework": [("p_cat", "raise p_cat (now {p_cat}) for categorical attributes, or sigma_frac (now "
                            "{sigma_frac}) for numeric ones")],
    "forest-framework": [("sigma_frac", "raise sigma_frac (now {sigma_frac}) for numeric attributes, and keep "
                                        "swap_prob (now {swap_prob}) high for categorical ones")],
    "mdav": [("k", "raise k (now {k})")],
    "rounding": [("c", "use coarser rounding sets: fewer points per attribute (a smaller c) or larger groups "
                       "(a larger k)")],
    "random-substitution": [("gamma", "perturb more (a smaller gamma, now {gamma})")],
    "gadp": [("confidential", "declare them confidential (confidential=[...]) so GADP redraws them")],
    # techniques that change part of a record by design: the target that passes is a chain
    "top-bottom-coding": [("top", "compose top and bottom coding (it codes only the values beyond top={top}, "
                                  "bottom={bottom}) with a technique that changes every record: --method "
                                  "top-bottom-coding --then recode passes on the shipped tables")],
    "local-suppression": [("k", "generalise the keys first and blank only what stays rare: --method recode --then "
                                "local-suppression")],
    "pram": [("pd", "recode the attributes pram leaves as they are into intervals first: --method recode --then "
                    "pram passes on the shipped tables; or post-randomise more (a smaller pd, now {pd}, and a larger "
                    "alpha, now {alpha})")],
    "dpcube": [("epsilon", "lower epsilon (now {epsilon})")],
}
#: techniques that change only the attributes named in their columns= parameter (all numeric ones by default)
_COLUMN_TECHNIQUES = {"mdav", "rounding", "random-substitution"}


def fix_advice(tech: dict[str, Any], columns: list[str], schema: Schema) -> str:
    """A technique or parameter that would change ``columns`` (names only, no value of a record)."""
    if not columns:
        return ""
    name = str(tech.get("name"))
    params = tech.get("parameters") or {}
    names = ", ".join(columns)
    cats = [c for c in columns if c in schema.categorical or c == schema.class_column]
    nums = [c for c in columns if c not in cats]
    given = params.get("columns")
    if name in _COLUMN_TECHNIQUES and given is not None and any(c not in given for c in columns):
        return f"add {names} to columns= ({name} changes only the columns it is given), or generalise them (recode)"
    if name in ("mdav", "rounding", "gadp") and cats:
        return (f"{name} does not change categorical attributes: generalise {', '.join(cats)} (recode) or perturb "
                "them (random-substitution, or pram), e.g. composed before this technique")
    for _, text in _FIXES.get(name, []):
        try:
            return f"to change {names}, " + text.format(**{k: v for k, v in params.items()})
        except (KeyError, IndexError, ValueError):
            break
    if nums and not cats:
        return f"perturb {names} (gaussian-noise) or aggregate them (mdav with them in columns=)"
    return f"generalise {names} (recode) or perturb them (random-substitution, pram)"


def gate_setup(options: GateOptions | None = None, thresholds: GateThresholds | dict[str, float] | None = None,
               **allow: Any) -> GateOptions:
    """The one :class:`~ppdm.metrics.release_check.GateOptions` of a release, from the options
    object, or the thresholds, and the ``allow_...`` arguments (which add to the object's)."""
    if options is not None and thresholds is not None:
        raise ParameterError("give the gate's thresholds either in gate_options or as gate_thresholds, not both")
    if options is not None and not isinstance(options, GateOptions):
        raise ParameterError(f"gate_options must be a GateOptions, got {type(options).__name__}")
    return GateOptions.of(options if options is not None else thresholds, **allow)


def _epsilon_text(eps: float) -> str:
    """ε as a short number: 1e6 rather than 1e+06."""
    return f"{eps:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def _dp_preface(check: ReleaseCheck, privacy: dict[str, Any] | None, rule: str) -> str:
    """For a refused differentially private release: what its ε copies of x."""
    if not isinstance(privacy, dict) or not privacy.get("differentially_private"):
        return ""
    try:
        eps = _epsilon_text(float(privacy.get("epsilon")))  # type: ignore[arg-type]  # a DP release records its epsilon; else caught below
    except (TypeError, ValueError):
        eps = "?"
    if rule in ("unchanged", "verbatim_unique"):
        unique = max(check.unique_in_x_all, 1)
        return (f"ε = {eps} copies {100 * check.records_verbatim_unique / unique:.1f}% of x's unique records "
                f"verbatim ({check.records_verbatim_unique} of {check.unique_in_x_all}), differentially private or "
                "not; ")
    return f"ε = {eps}, differentially private or not: "


def judge_release(check: ReleaseCheck, options: GateOptions, tech: dict[str, Any], schema: Schema, *,
                  privacy: dict[str, Any] | None = None,
                  search: Callable[[list[str]], tuple[Any, str]] | None = None) -> list[dict[str, Any]]:
    """The gate on a release check: raise :class:`ReleaseRefused` for the first refusal
    ``options`` do not allow, emit a :class:`ReleaseWarning` for each warning (and each allowed
    refusal), and return them all as dicts with their full message.

    ``privacy`` is the technique's ``privacy_report_``: a differentially private release is
    judged like any other, and its refusal names ε. ``search`` (:func:`passing_strength`), called
    only on a refusal with the refused finding's columns, names a stronger setting of the
    technique that passes on this table (replacing the general advice) or says what was tried."""
    out = []
    for f in gate(check, options.thresholds):
        advice = fix_advice(tech, f.columns, schema)
        text = f.message + (f"; {advice}" if advice else "")
        if f.level == "refuse":
            lib, cli = GATE_OVERRIDES[f.rule]
            if not options.allows(f):
                value, found = search(list(f.columns)) if search is not None else (None, "")
                # a setting that passes replaces the general advice; what was tried in vain adds to it
                text = f"{f.message}; {found}" if value is not None else text + (f"; {found}" if found else "")
                raise ReleaseRefused(f"{_dp_preface(check, privacy, f.rule)}{text}; change the technique or its "
                                     f"parameters, or release it anyway with {lib} (CLI: {cli})")
            text = f"released although {text} ({cli.split()[0]})"
            level = "allowed"
        else:
            level = "warn"
        warnings.warn(text, ReleaseWarning, stacklevel=3)
        out.append({**Finding(f.rule, level, f.share, f.threshold, f.columns, text).to_dict()})
    return out


def _screen_pass_through(x: pd.DataFrame, sch: Schema, options: GateOptions) -> list[dict[str, Any]]:
    """Refuse a pass-through column nearly unique per record unless declared safe; warn when
    it still singles some records out."""
    thresholds = options.thresholds
    safe = set(options.allow_pass_through)
    unknown = [c for c in safe if c not in x.columns]
    if unknown:
        raise ParameterError(f"allow_pass_through names {', '.join(map(repr, unknown))}, not a column of the table")
    out = []
    for sc in screen_pass_through(x, sch):
        if sc.distinct >= thresholds.pass_through_distinct and sc.records:
            if sc.column not in safe:
                raise ReleaseRefused(pass_through_message(sc, thresholds.pass_through_distinct))
            text = (f"released although column {sc.column!r} passes into the release unchanged with "
                    f"{100 * sc.distinct:.1f}% distinct values (--allow-pass-through {sc.column})")
            level, rule, share, cut = "allowed", "pass_through_distinct", sc.distinct, thresholds.pass_through_distinct
        elif sc.unique > thresholds.warn_pass_through_unique and sc.column not in safe:
            text = (f"column {sc.column!r} passes into the release unchanged and its value alone singles out "
                    f"{100 * sc.unique:.1f}% of the records (warned above "
                    f"{100 * thresholds.warn_pass_through_unique:.0f}%): joining on it finds them; round or group "
                    "the weights, or perturb them")
            level, rule, share, cut = "warn", "warn_pass_through_unique", sc.unique, thresholds.warn_pass_through_unique
        else:
            continue
        warnings.warn(text, ReleaseWarning, stacklevel=3)
        out.append(Finding(rule, level, share, cut, [sc.column], text).to_dict())
    return out
