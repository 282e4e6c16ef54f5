"""Local suppression: blank the few key values that keep records from being k-anonymous.

Statistical disclosure control's standard last step (sdcMicro's ``localSuppression``,
Templ, Kowarik & Meindl 2015 §3.5; ARX's cell suppression): after global recoding, a few
records still carry a rare combination of quasi-identifiers (key variables). Local
suppression replaces some of their key values by a missing value, so that every record
shares its keys with at least k − 1 others. A blank is read as sdcMicro reads it (ppdm's
reading, :mod:`ppdm.data.blanks`): a blanked (or missing) key value matches any value, so two
records match when they agree on every key both have (with several keys a complete record
does not count records whose keys are all missing). That is what the ``k_anonymity`` measure
of ``ppdm evaluate`` counts.

A blank hides a value from the release, not from an intruder who already knows it. What such
an intruder finds is the *intruder's view* (``k_anonymity_intruder`` in ``ppdm evaluate``):
the released records that agree with a person's true key values on every key they have not
blanked. fk ≥ k under sdcMicro's reading does not give k there — a blanked record may be the
only one left that agrees with its own true values — so the default criterion asks for k in the
intruder's view.

Two modes (algorithms in :mod:`ppdm.anonymize._suppression`):

* ``mode="cover"`` (default) is a weighted greedy cover: it blanks, for the least total cost,
  cells whose blanking protects most records at once (a blanked record matches every record
  of its projection group). Its criterion:

  - ``criterion="intruder"`` (default): every record's *original* key values match at least
    k released records, so an intruder who knows a person's keys (blanked ones included)
    always finds k candidates; this implies fk ≥ k under sdcMicro's reading too.
  - ``criterion="sdcmicro"``: fk ≥ k under sdcMicro's reading only, each record losing only the
    fewest cells that make it safe on its own and freed cells given back where fk ≥ k still
    holds. It blanks fewer cells (on the shared benchmark tables 37–53 % of sdcMicro's, against
    52–83 % for the default), but an intruder who knows the blanked values may narrow a blanked
    record below k (docs/sdc.md).

* ``mode="sdcmicro"`` reproduces sdcMicro 5.8.1's localSuppression cell for cell (default or
  given importance, ``combs``): a greedy pass that blanks, in each record with fk < k, the
  most suppressible key where it differs from its nearest records. It reaches sdcMicro's own
  rule only (criterion ``"sdcmicro"``).

The intruder criterion takes all keys together: with ``combs``, ask for ``criterion="sdcmicro"``
(the refusal says so). A key value missing in the input is one the intruder does not know
either; the cover counts it as matching nobody else, which can only undercount candidates.

Missing values: a missing key value stays missing and is counted as sdcMicro counts it
(it matches any value); missing values of other columns stay as they are.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize import _suppression as alg
from ppdm.anonymize.base import (
    Technique,
    check_known,
    check_whole,
    is_whole,
    key_list,
    nullable_dtype,
)
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Integer, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.utils import check_k

MODES = ("cover", "sdcmicro")
COMBS_IMPORTANCE = ("keys", "columns")
RULE = ("sdcMicro's freqCalc rule (alpha = 1): a missing or blanked key value matches any value; records match "
        "when they agree on every key both have; with several keys a complete record does not count records "
        "whose keys are all missing")


@register("local-suppression")
class LocalSuppression(Technique):
    """Local suppression of key values until every record is k-anonymous (sdcMicro's rule).

    Parameters
    ----------
    keys:
        The key variables (quasi-identifiers); default: the schema's quasi-identifiers, or,
        when none are declared, every attribute (the cautious choice, with a warning: declare
        them).
    k:
        Minimum number of records that must share each record's keys (fk ≥ k); a minimum
        group size, not a fixed one. At most the number of records.
    mode:
        ``"cover"`` (default: fewest cells for the cost) or ``"sdcmicro"`` (sdcMicro's
        localSuppression, cell for cell).
    criterion:
        ``"intruder"`` (the default in cover mode: every record's original keys match at least
        k released records, k in the intruder's view) or ``"sdcmicro"`` (fk ≥ k under
        sdcMicro's reading only; fewer cells, and the only criterion of ``mode="sdcmicro"``).
        ``None`` (default) picks the mode's own.
    importance:
        sdcMicro's importance of each key, 1 = most important (blanked last), ties allowed:
        a list in key order or a dict key → number. Default: sdcMicro's (keys with fewer
        distinct values are more important). ``"class"``: the keys that say most about the
        class column (symmetrical uncertainty) are the most important, so the blanking falls on
        keys an analysis of the class needs least. In cover mode it decides between blankings
        of equal merit.
    weights:
        Cover mode: the cost of blanking one cell of each key — ``None`` (every cell costs the
        same, so the number of blanked cells is minimised), ``"entropy"`` (a key's Shannon
        entropy: blanking an informative key costs more) or a dict key → positive number.
    combs:
        Sizes of key subsets (sdcMicro's ``combs``): k-anonymity is reached on every subset of
        each size instead of on all keys together, e.g. ``[4]``.
    combs_importance:
        ``"keys"`` (default, as sdcMicro documents: the importance of a subset's keys) or
        ``"columns"`` (sdcMicro 5.8.1's code: the importance vector is indexed by the keys'
        column positions in the table, which picks other keys' importance unless the keys
        are the table's first columns; see docs/sdc.md).

    After ``transform``: ``privacy_report_`` states the guarantee (public), ``private_report_``
    counts the blanked cells per key and the records left below k (the owner's private log:
    they are counts of x's records); ``suppressed_`` is the boolean mask of blanked cells of the last release
    (not written anywhere).
    """

    handles_missing = True
    missing_policy = "kept"
    #: k, the algorithm, and (cover mode) whether informative keys cost more to blank
    search_space = SearchSpace({"k": Integer(2, 20, log=True), "mode": Choice(("cover", "sdcmicro")),
                                "weights": Choice((None, "entropy")), "importance": Choice((None, "class"))},
                               when={"weights": {"mode": ("cover",)}}, needs=("keys",), deterministic=True,
                               guarantees={"k": ("k_anonymity", "k")}, value_needs={"importance": {"class": "class"}})
    makes_missing = True
    #: the private log's counts: a partitioned release totals them over its partitions
    summed_over_partitions = ("suppressed_cells", "suppressed_by_key", "records_with_suppression", "records_below_k",
                              "records_below_k_for_intruder")

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        keys: list[str] | str | None = None,
        k: int = 3,
        mode: str = "cover",
        criterion: str | None = None,
        importance: list[int] | dict[str, int] | str | None = None,
        weights: str | dict[str, float] | None = None,
        combs: list[int] | int | None = None,
        combs_importance: str = "keys",
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.keys = keys
        self.k = k
        self.mode = mode
        self.criterion = criterion
        self.importance = importance
        self.weights = weights
        self.combs = combs
        self.combs_importance = combs_importance

    # ------------------------------------------------------------------ checks
    def _validate_params(self) -> None:
        key_list(self.keys)
        check_whole("k", self.k)
        if self.mode not in MODES:
            raise ParameterError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.criterion is not None and self.criterion not in alg.CRITERIA:
            raise ParameterError(f"criterion must be one of {', '.join(alg.CRITERIA)}, got {self.criterion!r}")
        if self.criterion == "intruder" and self.mode != "cover":
            raise ParameterError("criterion='intruder' belongs to mode='cover'; sdcMicro's algorithm reaches "
                                 "its own rule only")
        if self.combs_importance not in COMBS_IMPORTANCE:
            raise ParameterError(f"combs_importance must be one of {', '.join(COMBS_IMPORTANCE)}, "
                                 f"got {self.combs_importance!r}")
        combs = _combs(self.combs)
        if combs and self._criterion() == "intruder":
            raise ParameterError("criterion='intruder' (the default in cover mode) covers all keys together; with "
                                 "combs ask for criterion='sdcmicro'")
        if self.weights is not None and not (self.weights == "entropy" or isinstance(self.weights, Mapping)):
            raise ParameterError(f"weights must be None, 'entropy' or a dict key -> cost, got {self.weights!r}")
        if self.weights is not None and self.mode == "sdcmicro":
            raise ParameterError("weights belong to mode='cover'; sdcMicro's algorithm orders keys by importance")
        if isinstance(self.importance, str):
            if self.importance != "class":
                raise ParameterError(f"importance must be a list, a dict key -> number or 'class', "
                                     f"got {self.importance!r}")
        elif self.importance is not None and not isinstance(self.importance, (list, tuple, np.ndarray, Mapping)):
            raise ParameterError(f"importance must be a list of numbers in key order, a dict key -> number or "
                                 f"'class', got {self.importance!r}")

    def _criterion(self) -> str:
        """The criterion in force: the one given, else the mode's own (intruder for the cover)."""
        if self.criterion is not None:
            return str(self.criterion)
        return "intruder" if self.mode == "cover" else "sdcmicro"

    # --------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        keys = key_list(self.keys)
        if keys is None:
            keys = list(schema.quasi_identifiers)
            if not keys:
                keys = list(schema.attributes)
                warnings.warn(
                    "local-suppression: no quasi-identifiers declared, so every attribute is taken as a key (an "
                    "intruder who knows them all); declare the ones an intruder could know (--qi, or keys=...) to "
                    "blank far fewer cells", UserWarning, stacklevel=3)
        check_known("keys", keys, schema.columns)
        m = len(keys)
        self.keys_ = keys
        if self.importance == "class":
            cls = schema.class_column
            if cls is None or cls not in df.columns:
                raise ParameterError("importance='class' ranks the keys by what they say about the class, and the "
                                     "table has no class column (name it with --class)")
            if cls in keys:
                raise ParameterError(f"importance='class' ranks the keys by the class column {cls!r}, which is "
                                     "itself a key")
            self.importance_: str | np.ndarray | None = "class"
        else:
            self.importance_ = _importance(self.importance, keys)
        self.costs_ = _weights(self.weights, keys)
        combs = _combs(self.combs)
        too_big = [c for c in combs if c > m]
        if too_big:
            raise ParameterError(f"combs asks for subsets of {too_big[0]} keys, but there are only {m} keys")
        self.combs_ = combs
        self.criterion_ = self._criterion()
        cols = list(map(str, df.columns))
        self.key_positions_ = np.array([cols.index(c) + 1 for c in keys], dtype=np.int64)

    def _output_dtypes(self, like: pd.DataFrame) -> dict[str, Any]:
        out = {}
        for c in getattr(self, "keys_", []):
            if c in like.columns:
                want = nullable_dtype(like[c].dtype)
                if want != like[c].dtype:
                    out[c] = want
        return out

    # --------------------------------------------------------------- transform
    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        keys = self.keys_
        codes = alg.encode_keys(df, keys)
        n, m = codes.shape
        k = check_k(self.k, n, too_large="no release of it can be {k}-anonymous")
        if isinstance(self.importance_, str):  # "class": computed on the table being released
            y = alg.encode_keys(df, [schema.class_column])[:, 0]  # type: ignore[list-item]  # "class" is set only with a class column (fit)
            imp = alg.class_importance(codes, y)
        else:
            imp = alg.default_importance(codes) if self.importance_ is None else self.importance_
        order = alg.suppression_order(imp)
        if self.mode == "sdcmicro":
            if self.combs_:
                pos = self.key_positions_ if self.combs_importance == "columns" else None
                new = alg.sdcmicro_combs(codes, k, imp, self.combs_, positions=pos)
            else:
                new = alg.sdcmicro_suppress(codes, k, order)
        else:
            if self.criterion_ == "intruder" and not self.combs_:
                refuse_unreachable_keys(codes, keys, k)
            cost = alg.entropy_costs(codes) if isinstance(self.costs_, str) else self.costs_
            new = self._cover(codes, k, cost, order)
        blank = (new < 0) & (codes >= 0)
        out = df.copy()
        for j, c in enumerate(keys):
            if blank[:, j].any():
                col = out[c]
                if col.dtype == bool:
                    col = col.astype(object)
                out[c] = col.mask(pd.Series(blank[:, j], index=col.index))
        self.suppressed_ = blank
        self.privacy_report_ = self._report(codes, new, blank, k, imp)
        return out

    def _cover(self, codes: np.ndarray, k: int, cost: np.ndarray, order: np.ndarray) -> np.ndarray:
        m = codes.shape[1]
        n = codes.shape[0]
        if not self.combs_:
            new = alg.cover_suppress(codes, k, cost, criterion=self.criterion_, tie=order)
            if self.criterion_ == "sdcmicro" and n * int((new < 0).sum()) <= alg.PRUNE_BUDGET:
                alg.prune(new, codes, k, [tuple(range(m))], cost)
            return new
        subsets = [S for c in self.combs_ for S in combinations(range(m), c)]
        if n * len(subsets) <= alg.JOINT_BUDGET:
            # a few deterministic orders of equal-merit choices; the cheapest release is kept
            best, best_cost = None, np.inf
            for tie in (order, None):
                new = alg.joint_suppress(codes, k, cost, subsets, tie=tie)
                if n * int((new < 0).sum()) * len(subsets) <= alg.PRUNE_BUDGET:
                    alg.prune(new, codes, k, subsets, cost)
                total = float((((new < 0) & (codes >= 0)) * cost[None, :]).sum())
                if total < best_cost - 1e-9:
                    best, best_cost = new, total
            return best  # type: ignore[return-value]  # set: the first release costs less than inf
        new = codes.copy()
        for S in subsets:
            cols = list(S)
            local = np.array([cols.index(j) for j in order if j in cols], dtype=np.int64)
            new[:, cols] = alg.cover_suppress(new[:, cols], k, cost[cols], tie=local)
        return new

    def _report(self, codes: np.ndarray, new: np.ndarray, blank: np.ndarray, k: int,
                imp: np.ndarray) -> dict[str, Any]:
        keys = self.keys_
        if self.combs_:
            subsets = [S for c in self.combs_ for S in combinations(range(len(keys)), c)]
            below = int(max(int((alg.record_frequencies(new[:, list(S)]) < k).sum()) for S in subsets))
            scope = f"every subset of {', '.join(map(str, self.combs_))} keys"
            intruder = None
        else:
            below = int((alg.record_frequencies(new) < k).sum())
            scope = "all keys together"
            intruder = int((alg.intruder_frequencies(codes, new) < k).sum()) if len(codes) else 0
        public = {
            "guarantee": "k-anonymity",
            "k": int(k),
            "keys": list(keys),
            "scope": scope,
            "rule": RULE,
            "mode": self.mode,
            "criterion": self.criterion_,
            "intruder_view": ("every record's true key values match at least k released records (an intruder who "
                              "knows the blanked values finds k candidates)" if self.criterion_ == "intruder" else
                              "not guaranteed: an intruder who knows a blanked value may narrow its record below k"),
            "counts": "how many cells and records were blanked and how many stay below k are counted on the "
                      "original records: they are in the owner's private log, not here",
        }
        # counts of x's records (and an importance worked out from x's keys) are the owner's: a small count
        # says how many people have a rare combination, which the public files must not say
        self.private_report_ = {
            "technique": "local suppression",
            "importance": {c: float(v) for c, v in zip(keys, imp, strict=True)},
            "suppressed_cells": int(blank.sum()),
            "suppressed_by_key": {c: int(blank[:, j].sum()) for j, c in enumerate(keys)},
            "records_with_suppression": int(blank.any(axis=1).sum()),
            "records_below_k": below,
            "records_below_k_for_intruder": intruder,
            "note": ("records_below_k counts records whose released keys match fewer than k released records "
                     "under the rule; records_below_k_for_intruder those whose original keys do (an intruder "
                     "who knows the blanked values); criterion='intruder' brings the second to 0"),
        }
        return public


#: a key is *measured* (a measurement rather than a category) when more than this share of the
#: records hold a value of it that fewer than k records share
MEASURED_SHARE = 0.5


def rare_cells(codes: np.ndarray, k: int) -> np.ndarray:
    """Boolean (n, m): the key cells whose value fewer than ``k`` records hold. A missing cell
    counts as rare: the intruder criterion's cover takes it as a value no other record has."""
    rare = np.ones(codes.shape, dtype=bool)
    for j in range(codes.shape[1]):
        c = codes[:, j]
        seen = c >= 0
        if seen.any():
            counts = np.bincount(c[seen])
            rare[seen, j] = counts[c[seen]] < k
    return rare


def refuse_unreachable_keys(codes: np.ndarray, keys: list[str], k: int) -> None:
    """Refuse, before any blanking, keys on which the intruder criterion cannot be reached.

    Under ``criterion="intruder"`` a record keeps its own values as the intruder knows them, so
    its candidates are records that agree with it on every key they have not blanked. The
    cover blanks at most ``top`` keys of a record (:func:`ppdm.anonymize._suppression.
    _largest_subset_size`: all of them but one up to 13 keys), so a record needs k − 1 others that
    agree with it on the ``m − top`` keys left; a record holding a value fewer than k records
    share on more than ``top`` keys cannot get them, and the cover would stop there after its
    work. That happens on *measured* keys — amounts, weights, concentrations — where nearly
    every value is rare: local suppression is made for categorical keys (Templ, Kowarik &
    Meindl 2015 §3.5 apply it after recoding). The refusal names the measured keys (more than
    :data:`MEASURED_SHARE` of the records rare on them; else the keys rarest for the records
    concerned) and what works instead."""
    n, m = codes.shape
    if n == 0 or m == 0 or k <= 1:
        return
    rare = rare_cells(codes, k)
    top = alg._largest_subset_size(m, len(np.unique(codes, axis=0)))
    stuck = (rare.sum(axis=1) > top) & ~(codes < 0).all(axis=1)
    if not stuck.any():
        return
    share = rare.mean(axis=0)
    order = np.argsort(-share, kind="stable")
    measured = [j for j in order if share[j] > MEASURED_SHARE]
    named = measured or [j for j in order if rare[stuck, j].any()]
    text = ", ".join(f"{keys[j]} {100 * share[j]:.0f}%" for j in named[:5])
    more = f" and {len(named) - 5} more" if len(named) > 5 else ""
    what = "measured key(s)" if measured else "key(s)"
    where = ("on their only key, which cannot be blanked for them" if m == 1 else
             f"on more of their {m} keys than the {top} it may blank in a record")
    raise ParameterError(
        f"local-suppression cannot protect {int(stuck.sum())} of {n} records in the intruder's view "
        f"(criterion='intruder', the default, k={k}): they hold a value fewer than {k} records share {where}, so "
        f"no blanking gives them {k} candidates; {what} {text}{more} (share of records holding such a value): "
        "recode them into intervals first (--method recode --then local-suppression), declare as keys (--qi) only "
        "the attributes an intruder knows, or ask for k under sdcMicro's reading only (criterion='sdcmicro', CLI: "
        "--param criterion=sdcmicro)")


def _combs(value: Any) -> list[int]:
    if value is None:
        return []
    vals = [value] if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else value
    if isinstance(vals, str) or not isinstance(vals, (list, tuple)) or not vals:
        raise ParameterError(f"combs must be a whole number or a list of them (subset sizes), got {value!r}")
    out = []
    for v in vals:
        if not is_whole(v, 1):
            raise ParameterError(f"combs must hold whole numbers ≥ 1 (subset sizes), got {value!r}")
        out.append(int(v))
    return out


def _importance(value: Any, keys: list[str]) -> np.ndarray | None:
    """sdcMicro's importance vector in key order (1..m, ties allowed), or ``None`` (default)."""
    if value is None:
        return None
    m = len(keys)
    if isinstance(value, Mapping):
        extra = sorted(set(map(str, value)) - set(keys))
        if extra:
            raise ParameterError(f"importance names {extra[0]!r}, which is not a key ({', '.join(keys)})")
        lacking = [c for c in keys if c not in value]
        if lacking:
            raise ParameterError(f"importance gives no number for key {lacking[0]!r}; give one for every key")
        vals = [value[c] for c in keys]
    else:
        vals = list(value)
        if len(vals) != m:
            raise ParameterError(f"importance has {len(vals)} value(s) but there are {m} keys ({', '.join(keys)}); "
                                 "give one number per key, in key order")
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
            raise ParameterError(f"importance must hold numbers 1..{m}, got {value!r}")
        if not (1 <= v <= m) or float(v) != int(v):
            raise ParameterError(f"importance values must be whole numbers from 1 to {m} (the number of keys), "
                                 f"got {v!r}")
        out.append(int(v))
    return np.array(out, dtype=np.int64)


def _weights(value: Any, keys: list[str]) -> np.ndarray | str:
    if value is None:
        return np.ones(len(keys))
    if isinstance(value, str):
        return value  # "entropy": computed on the table being released
    extra = sorted(set(map(str, value)) - set(keys))
    if extra:
        raise ParameterError(f"weights names {extra[0]!r}, which is not a key ({', '.join(keys)})")
    out = []
    for c in keys:
        v = value.get(c, 1.0)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (
                np.isfinite(v) and v > 0):
            raise ParameterError(f"weights[{c!r}] must be a positive number (the cost of blanking one cell), got {v!r}")
        out.append(float(v))
    return np.array(out)


__all__ = ["MEASURED_SHARE", "LocalSuppression", "MODES", "RULE", "key_list", "rare_cells", "refuse_unreachable_keys"]
