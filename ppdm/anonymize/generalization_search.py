"""Generalisation search: the hierarchy levels and record suppression ARX would choose.

Global recoding (:mod:`ppdm.anonymize.recoding`) publishes the levels a data owner gives it.
``generalize`` chooses them itself, as ARX (Prasser & Kohlmayer 2015), ANJANA and sdcMicro's
users do by hand: for every quasi-identifier one level of its generalisation hierarchy, and for
the records that still stand out, suppression of the whole record, so that the release meets a
set of privacy models at the least loss of information.

**Hierarchies** (level 0 is the value itself; every level is a coarsening of the one below,
which the search relies on and :func:`_check_nested` verifies on x):

* categories: the levels of the schema's hierarchy (``Schema.hierarchies``), topped by ``*`` (every
  category) when the hierarchy's last level still has several labels; a category without a
  hierarchy has the two levels ``value`` and ``*``, as ARX's default hierarchy;
* numbers: intervals ``(a, a + w]`` of round widths anchored at multiples of ``w``
  (:func:`ppdm.anonymize.recoding.width_breaks`), the widths 1 and 5 times a power of ten in turn
  (…, 1, 5, 10, 50, 100, …: each divides the next, so the intervals nest), from the width that
  gives at most ``max_intervals`` intervals up to one interval;
* dates: month, year, 5-year and 10-year cohorts (recoding's ``date_period`` and ``cohort``).

A level that merges no observed value of the level below is left out. The release is made by
:class:`ppdm.anonymize.recoding.Recode` at the chosen levels (the same labels, output schema and
hierarchies a recoding publishes).

**Privacy models**, met together on the released classes (records with equal released keys; a
missing key value is a value of its own, as ARX and the l-diversity and t-closeness measures
group them, which overstates the risk of records with missing keys):

* k-anonymity: every class holds at least ``k`` records;
* distinct l-diversity (``l``): every class holds at least ``l`` distinct values of each
  sensitive attribute, a missing value counting as one more beside others
  (:func:`ppdm.metrics.keyvar.l_diversity`, the measure);
* t-closeness (``t``): every class's distribution of each sensitive attribute is within EMD ``t``
  of the table's, equal ground distance for categories, ordered for numbers (Li, Li &
  Venkatasubramanian 2007, §4; :func:`ppdm.metrics.privacy_models.t_closeness`, the measure, whose
  EMDs come from the same code, :mod:`ppdm.data.class_distributions`).

**Record suppression** (ARX's): the records of the classes that fail a model have all their key
values blanked (missing, which :func:`ppdm.metrics.keyvar.k_anonymity` matches to any value), the
row count is kept, and at most ``suppression_limit`` of the records may be suppressed. The
suppressed records form one more class, which must meet l-diversity and t-closeness as well
(the measures see it as a class); records whose keys are all missing in x belong to it.

**Loss**, the quantity minimised, one of (``loss``):

* ``"arx"``, ARX's "Loss" (Iyengar 2002's LM): for a key q with D_q distinct observed values, a
  released value standing for s of them loses (s − 1)/(D_q − 1); a suppressed record loses 1 on
  every observed key; a missing value loses nothing. The loss of a release is the weighted mean
  over the records and the keys (``weights``, default equal):

      loss = Σ_i Σ_q w_q · loss_iq / (n · Σ_q w_q),  in [0, 1];

* ``"discernibility"``, Bayardo & Agrawal 2005's discernibility metric (§2, C_DM): a record
  costs the size of its class (the records it cannot be told from) and a suppressed record costs
  n (it cannot be told from any record); records whose keys are all missing in x are costed as
  suppressed. Divided by n², it is the mean over the records of the share of the table each
  cannot be told from, in [1/n, 1]. It knows no key weights: it counts records, not values;
* ``"mix"``: ``loss_weight`` · ARX's loss + (1 − ``loss_weight``) · discernibility, both in
  [0, 1]. ARX's loss charges a coarse label on every record that carries it, whatever the class
  sizes; discernibility charges large classes and suppression, whatever the labels.

:func:`release_loss` computes either loss of any release from its labels and x, so a release made
by another tool is judged by the same numbers.

**Search.** The level vectors form a lattice (node ≤ node' when every level is at most as
coarse). Two monotonicities make an exact search cheap:

* with a fixed suppression limit, "the records of classes smaller than k, or with fewer than l
  distinct sensitive values, are at most the limit" is monotone: if a node meets it, so does every
  generalisation, and if it fails, so does every specialisation (Flash's and OLA's predictive
  tagging: Kohlmayer et al. 2012, §3; El Emam et al. 2009, §4). A node below a failed one is never
  evaluated. t-closeness with suppression is not monotone (a t-close class merged with another
  may not be), so it is checked on every node evaluated;
* the losses are monotone from below. ARX's loss a node's levels cause without suppression
  bounds the loss of the node and of every generalisation of it (coarser levels lose more per
  record, a suppressed record loses most); it is additive over the keys, so it is known for the
  whole lattice before any record is grouped. Discernibility without suppression, known once a
  node's classes are formed, bounds that of the node and of every generalisation of it (a class
  of a generalisation holds the classes of the node, and a suppressed record costs n, the most),
  as Bayardo & Agrawal's pruning by cost bounds (§4); before any node is evaluated, each record
  costs at least k (its class) or n (blank in x).

Nodes are visited in order of ARX's bound; a node whose bound (for ``"discernibility"``, the
largest discernibility of an evaluated node below it; for ``"mix"``, the weighted sum of both
bounds) is not below the best loss found is skipped, and the search stops at the first node whose
bound before any evaluation is not below it. The result is the lattice's optimum for the loss
chosen (the brute force over every node in ``tests/test_generalization_search.py`` finds the same
for each loss). A lattice of more than ``max_nodes`` nodes is refused, naming its size, rather
than searched blindly.

Missing values: a missing key value stays missing and groups with the other missing values of
its key; it loses nothing. A missing sensitive value is handled as each measure handles it.

Partitions (Dask): each partition is recoded at the fitted levels and its failing records are
suppressed, so every partition's classes, and hence the whole release's, hold at least k
records (the limit is then not enforced per partition). With l or t a pandas table is needed:
t compares a class with the whole table, and one partition's suppressed records need not hold l
values.
The ladders, losses and privacy models live in :mod:`ppdm.anonymize._generalization_models`
(re-exported here).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize._generalization_models import (  # noqa: F401  (re-exported: the public path stays this module)
    _EPS,
    _LOSS_WORDS,
    DATE_LEVELS,
    LOSSES,
    TOP,
    WIDTH_UNITS,
    Ladder,
    Models,
    Outcome,
    _check_nested,
    _factor,
    _record_loss,
    class_ids,
    distinct_l,
    failing,
    nested_widths,
    release_loss,
    sensitive_codes,
    suppressed_class_ok,
)
from ppdm.anonymize.base import (
    Technique,
    check_fraction,
    check_known,
    check_whole,
    is_whole,
    key_list,
    nullable_dtype,
)
from ppdm.anonymize.recoding import Recode, width_breaks
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Integer, Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError


# ------------------------------------------------------------------------------ the technique
@register("generalize")
class Generalize(Technique):
    """Choose every key's hierarchy level and suppress records to meet k (and l, t) at least loss.

    Parameters
    ----------
    keys:
        The quasi-identifiers; default: the schema's, or, when none are declared, every attribute
        (with a warning). A key with one value and no missing cell tells nothing and is left as it is.
    k:
        Every class of records with equal released keys holds at least ``k`` records (default 5).
    l:
        Distinct l-diversity of each sensitive attribute in every class (``None``: not asked).
    t:
        t-closeness (EMD, 0..1) of each sensitive attribute in every class (``None``: not asked).
    sensitive:
        The sensitive attributes l and t are about (default: the schema's); may be the class.
    suppression_limit:
        The largest share of records that may be suppressed (default 0.05, ARX's common choice).
    weights:
        The weight of each key in ARX's loss (dict key → positive number; default 1 each).
    loss:
        The loss minimised: ``"arx"`` (ARX's loss, the default), ``"discernibility"`` (Bayardo &
        Agrawal's, a suppressed record costing n) or ``"mix"`` of the two (see the module's docstring).
    loss_weight:
        With ``loss="mix"``, the weight of ARX's loss; discernibility has 1 − ``loss_weight``.
    max_intervals:
        The finest interval level of a numeric key has at most about this many intervals.
    max_nodes:
        The largest lattice searched; a larger one is refused with its size (coarsen the
        hierarchies, fewer keys, or a larger limit if the time is there).

    After ``fit``: ``levels_`` (key → level chosen), ``hierarchy_`` (key → the levels' descriptions),
    ``level_specs_`` (key → what :class:`Recode` is given at each level, ``None`` at level 0),
    ``search_schema_`` (the schema with the categorical keys' top level ``*``),
    ``loss_`` (the loss minimised, of the release of x, suppression included), ``losses_`` (ARX's
    loss and discernibility of that release, by name), ``lattice_size_``,
    ``nodes_evaluated_``, ``nodes_pruned_`` (nodes skipped by predictive tagging and by the cost
    bound), ``recode_`` (the fitted :class:`Recode`, ``None`` when no key is
    generalised). After ``transform``: ``privacy_report_`` (the guarantee, public) and
    ``private_report_`` (records suppressed, the loss: counts of x, for the owner's private log);
    ``suppressed_`` is the mask of suppressed records of the last release (not written anywhere).
    """

    handles_missing = True
    #: the private log's count: a partitioned release totals it over its partitions
    summed_over_partitions = ("suppressed_records",)
    missing_policy = "kept"
    makes_missing = True
    #: what a policy search varies: the models' parameters (l and t only where sensitive attributes are declared:
    #: a policy's l_diversity or t_closeness line is met by trials that ask for it), the suppression limit and the
    #: loss; the levels are this technique's own exact search. k starts at a policy's k_anonymity line's k,
    #: l at its l_diversity line's threshold, and t at most its t_closeness line's.
    search_space = SearchSpace(
        {"k": Integer(2, 20, log=True), "suppression_limit": Real(0.0, 0.1),
         "l": Choice((None, 2, 3)), "t": Choice((None, 0.5, 0.3, 0.2, 0.15)),
         "loss": Choice(LOSSES), "loss_weight": Real(0.1, 0.9)},
        when={"loss_weight": {"loss": ("mix",)}}, needs=("keys",), deterministic=True,
        guarantees={"k": ("k_anonymity", "k")}, value_bounds={"l": "l_diversity", "t": "t_closeness"},
        value_needs={"l": {2: "sensitive", 3: "sensitive"}, "t": {v: "sensitive" for v in (0.5, 0.3, 0.2, 0.15)}})

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        keys: list[str] | str | None = None,
        k: int = 5,
        l: int | None = None,  # noqa: E741 - the privacy model's name
        t: float | None = None,
        sensitive: list[str] | str | None = None,
        suppression_limit: float = 0.05,
        weights: dict[str, float] | None = None,
        loss: str = "arx",
        loss_weight: float = 0.5,
        max_intervals: int = 100,
        max_nodes: int = 200_000,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.keys = keys
        self.k = k
        self.l = l
        self.t = t
        self.sensitive = sensitive
        self.suppression_limit = suppression_limit
        self.weights = weights
        self.loss = loss
        self.loss_weight = loss_weight
        self.max_intervals = max_intervals
        self.max_nodes = max_nodes

    # ------------------------------------------------------------------ checks
    def _validate_params(self) -> None:
        key_list(self.keys)
        key_list(self.sensitive, "sensitive")
        for name, low in (("k", 1), ("max_intervals", 2), ("max_nodes", 1)):
            check_whole(name, getattr(self, name), low)
        if self.l is not None and not is_whole(self.l, 1):
            raise ParameterError(f"l must be a whole number ≥ 1 (distinct sensitive values per class) or None, "
                                 f"got {self.l!r}")
        if self.t is not None:
            check_fraction("t", self.t)
        check_fraction("suppression_limit", self.suppression_limit)
        if self.loss not in LOSSES:
            raise ParameterError(f"loss must be one of {', '.join(map(repr, LOSSES))}, got {self.loss!r}")
        check_fraction("loss_weight", self.loss_weight)
        if self.weights is not None:
            if not isinstance(self.weights, Mapping):
                raise ParameterError(f"weights must be a dict key -> positive number, got {self.weights!r}")
            for c, v in self.weights.items():
                if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (
                        np.isfinite(v) and v > 0):
                    raise ParameterError(f"weights[{c!r}] must be a positive number, got {v!r}")

    def _resolve(self, df: pd.DataFrame, schema: Schema) -> tuple[list[str], list[str]]:
        keys = key_list(self.keys)
        if keys is None:
            keys = list(schema.quasi_identifiers)
            if not keys:
                keys = list(schema.attributes)
                warnings.warn("generalize: no quasi-identifiers declared, so every attribute is taken as a key; "
                              "declare the ones an intruder could know (--qi, or keys=...)", UserWarning, stacklevel=4)
        check_known("keys", keys, schema.columns)
        sens = key_list(self.sensitive, "sensitive")
        if sens is None:
            sens = [c for c in schema.sensitive if c not in keys] if (self.l is not None or self.t is not None) else []
        elif self.l is None and self.t is None:
            raise ParameterError("sensitive names the attributes l and t are about, and neither l nor t is given")
        check_known("sensitive", sens, schema.columns, "a column of the table")
        both = [c for c in sens if c in keys]
        if both:
            raise ParameterError(f"{both[0]!r} is both a key and sensitive; a sensitive attribute is not generalised")
        if (self.l is not None or self.t is not None) and not sens:
            raise ParameterError("l and t are about sensitive attributes, and none is named: give sensitive=... "
                                 "(or declare them in the schema)")
        if isinstance(self.weights, Mapping):
            extra = sorted(set(map(str, self.weights)) - set(keys))
            if extra:
                raise ParameterError(f"weights names {extra[0]!r}, which is not a key ({', '.join(keys)})")
        if self.k > len(df):
            raise ParameterError(f"k={self.k} is more than the records of the table (n_samples={len(df)})")
        return keys, sens

    # ------------------------------------------------------------- hierarchies
    def _search_schema(self, df: pd.DataFrame, schema: Schema, keys: list[str]) -> Schema:
        """The schema with every categorical key's hierarchy topped by ``*`` (ARX's top level)."""
        hier = dict(schema.hierarchies)
        for c in keys:
            if c in schema.numeric:
                continue
            obs = pd.unique(df[c].dropna())
            h = schema.hierarchies.get(c)
            if h is None:
                hier[c] = {v.item() if isinstance(v, np.generic) else v: [TOP] for v in obs}
                continue
            depth = min(len(v) for v in h.values())
            tops = {str(schema.hierarchy_level(c, v, depth)) for v in obs}
            if depth and len(tops) == 1:
                hier[c] = {k: list(v[:depth]) for k, v in h.items()}
            else:
                hier[c] = {k: [*list(v[:depth]), TOP] for k, v in h.items()}
        return replace(schema, hierarchies=hier)

    def _recode(self, spec: Mapping[str, tuple[str, Any]], df: pd.DataFrame, schema: Schema,
                rng: np.random.Generator) -> Recode:
        """A :class:`Recode` fitted on ``df`` with each column of ``spec`` at its level."""
        by: dict[str, dict[str, Any]] = {"breaks": {}, "level": {}, "date_period": {}, "cohort": {}}
        for c, (what, value) in spec.items():
            by[what][c] = value
        rec = Recode(columns=list(spec), breaks=by["breaks"] or None, level=by["level"] or 1,
                     date_period=by["date_period"] or None, cohort=by["cohort"] or None)
        rec._validate_params()
        rec._fit(df, schema, rng)
        return rec

    def _ladder(self, c: str, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> Ladder | None:
        s = df[c]
        orig = _factor(s)
        domain = int(orig.max()) + 1 if len(orig) else 0
        if domain <= 1 and not (orig < 0).any():
            return None  # one value, nothing missing: it tells nothing about anyone
        kind = "date" if c in schema.dates else "numeric" if c in schema.numeric else "categorical"
        lad = Ladder(column=c, kind=kind, specs=[None], describe=["as in x"], codes=[orig],
                     loss=[np.zeros(len(s))])
        if domain <= 1:
            return lad
        if kind == "date":
            cands = [((what, v), words) for what, v, words in DATE_LEVELS]
        elif kind == "numeric":
            x = s.dropna().to_numpy(dtype=float)
            lo, hi = float(x.min()), float(x.max())
            cands = []
            last = None
            bounds = schema.bounds.get(c)
            for w in nested_widths(lo, hi, int(self.max_intervals)):
                last = width_breaks(lo, hi, w)
                if bounds is not None:  # intervals stop at declared bounds (the lowest then closed), as recode's
                    last = np.unique(np.clip(last, float(bounds[0]), float(bounds[1])))
                cands.append((("breaks", [float(b) for b in last]), f"intervals of width {w:g}"))
            if last is not None and last.size > 2:
                cands.append((("breaks", [float(last[0]), float(last[-1])]), "one interval"))
        else:
            h = schema.hierarchies.get(c, {})
            depth = min((len(v) for v in h.values()), default=0)
            top = schema.hierarchy_level(c, s.dropna().iloc[0], depth) if depth else None
            cands = [(("level", lv), "every category (*)" if lv == depth and top == TOP else f"hierarchy level {lv}")
                     for lv in range(1, depth + 1)]
        seen = domain
        for spec, words in cands:
            rec = self._recode({c: spec}, df, schema, rng)
            codes = _factor(rec._transform(df[[c]], schema, rng)[c]) if c in rec.labels_ else orig
            _check_nested(c, lad.codes[-1], codes, words, lad.describe[-1])
            classes = int(codes.max()) + 1
            if classes >= seen:
                continue  # merges nothing observed: not a level of its own
            seen = classes
            lad.specs.append(spec)
            lad.describe.append(words)
            lad.codes.append(codes)
            lad.loss.append(_record_loss(orig, codes, domain))
        return lad

    # --------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        keys, sens = self._resolve(df, schema)
        self.keys_ = keys
        self.sensitive_ = sens
        self.search_schema_ = self._search_schema(df, schema, keys)
        ladders = [lad for c in keys if (lad := self._ladder(c, df, self.search_schema_, rng)) is not None]
        self.hierarchy_ = {lad.column: list(lad.describe) for lad in ladders}
        self.level_specs_ = {lad.column: list(lad.specs) for lad in ladders}
        n = len(df)
        sizes = [lad.levels for lad in ladders]
        size = int(np.prod(sizes, dtype=object)) if sizes else 1
        self.lattice_size_ = size
        if size > self.max_nodes:
            raise ParameterError(f"the lattice of {' × '.join(map(str, sizes))} = {size} level vectors is larger than "
                                 f"max_nodes={self.max_nodes}; use fewer keys, coarser hierarchies (max_intervals) or "
                                 "a larger max_nodes")
        scodes, ordered = sensitive_codes(df, sens)
        models = Models(k=int(self.k), l=None if self.l is None else int(self.l),
                        t=None if self.t is None else float(self.t), sensitive=sens, scodes=scodes, ordered=ordered)
        w = np.array([float((self.weights or {}).get(lad.column, 1.0)) for lad in ladders])
        node, out = self._search(ladders, models, w, n)
        self.levels_ = {lad.column: int(lv) for lad, lv in zip(ladders, node, strict=True)}
        self.loss_ = float(out.loss)
        self.losses_ = {"arx": float(out.arx), "discernibility": float(out.discernibility)}
        spec = {lad.column: lad.specs[lv] for lad, lv in zip(ladders, node, strict=True) if lv > 0}
        self.recode_ = self._recode(spec, df, self.search_schema_, rng) if spec else None  # type: ignore[arg-type]
        self.released_keys_ = [lad.column for lad in ladders]
        self.models_ = replace(models, scodes=[], ordered=[])  # the codes are x's: not kept

    def _loss_weights(self) -> tuple[float, float]:
        """The weights of ARX's loss and of discernibility in the loss minimised."""
        if self.loss == "arx":
            return 1.0, 0.0
        if self.loss == "discernibility":
            return 0.0, 1.0
        return float(self.loss_weight), 1.0 - float(self.loss_weight)

    def _search(self, ladders: list[Ladder], models: Models, w: np.ndarray, n: int) -> tuple[tuple[int, ...], Outcome]:
        """The node of least loss meeting every model within the limit (see the module's docstring)."""
        m = len(ladders)
        a_w, d_w = self._loss_weights()
        wsum = float(w.sum()) if m else 1.0
        scale = n * wsum if n and wsum else 1.0
        dscale = float(n) * float(n) if n else 1.0
        # the loss of each key's levels without suppression, summed over the records: additive bound
        base = [np.array([w[q] * float(lad.loss[lv].sum()) for lv in range(lad.levels)]) for q, lad in enumerate(ladders)]
        grid = np.array(list(itertools.product(*[range(lad.levels) for lad in ladders])), dtype=np.int64)
        grid = grid.reshape(len(grid), m)
        bound = np.zeros(len(grid))
        for q in range(m):
            bound += base[q][grid[:, q]]
        bound /= scale
        order = np.lexsort((grid.sum(axis=1), bound))
        observed = np.zeros(n)
        for q, lad in enumerate(ladders):
            observed += w[q] * (lad.codes[0] >= 0)
        blank = np.ones(n, dtype=bool) if m else np.zeros(n, dtype=bool)
        for lad in ladders:
            blank &= lad.codes[0] < 0
        n_blank = int(blank.sum())
        # before any node is grouped: a kept record's class holds ≥ k records, a blank one costs n
        d_floor = ((n - n_blank) * min(int(models.k), n) + n_blank * n) / dscale
        limit = math.floor(float(self.suppression_limit) * n + 1e-9)
        failed: list[np.ndarray] = []
        failed_arr = np.zeros((0, m), dtype=np.int64)
        seen: list[np.ndarray] = []  # nodes grouped, with their discernibility before suppression
        seen_arr = np.zeros((0, m), dtype=np.int64)
        seen_d: list[float] = []
        seen_d_arr = np.zeros(0)
        best: tuple[tuple[int, ...], Outcome] | None = None
        evaluated = 0
        pruned = {"tagging": 0, "cost": 0}
        for idx in order:
            if best is not None and a_w * bound[idx] + d_w * d_floor >= best[1].loss - _EPS:
                break  # every node left loses at least its bound, which is no better
            node = grid[idx]
            if len(failed_arr) and np.all(node[None, :] <= failed_arr, axis=1).any():
                pruned["tagging"] += 1
                continue  # below a node that fails the monotone models: fails them too (predictive tagging)
            if d_w > 0 and best is not None and len(seen_arr):
                below = np.all(seen_arr <= node[None, :], axis=1)
                if below.any() and a_w * bound[idx] + d_w * max(d_floor, float(seen_d_arr[below].max())) \
                        >= best[1].loss - _EPS:
                    pruned["cost"] += 1
                    continue  # above a node whose classes already cost more: no better (cost bound)
            evaluated += 1
            g = class_ids([lad.codes[lv] for lad, lv in zip(ladders, node, strict=True)], n)
            size = np.bincount(g)[g].astype(float)
            if d_w > 0:
                seen.append(node)
                seen_arr = np.array(seen, dtype=np.int64).reshape(len(seen), m)
                seen_d.append((float(size[~blank].sum()) + n_blank * n) / dscale)
                seen_d_arr = np.array(seen_d)
            mono, tbad = failing(g, blank, models)
            if int(mono.sum()) > limit:
                failed.append(node)
                failed_arr = np.array(failed, dtype=np.int64).reshape(len(failed), m)
                continue
            sup = mono | tbad
            if int(sup.sum()) > limit or not suppressed_class_ok(g, sup | blank, models):
                continue
            kept = float(bound[idx] * scale)
            if sup.any():
                kept -= sum(w[q] * float(lad.loss[lv][sup].sum()) for q, (lad, lv) in enumerate(zip(ladders, node,
                                                                                                        strict=True)))
            arx = (kept + float(observed[sup].sum())) / scale
            out = sup | blank
            # a kept class is whole (suppression takes whole classes), so its records' sizes stand
            dis = (float(size[~out].sum()) + float(out.sum()) * n) / dscale
            loss = a_w * arx + d_w * dis
            if best is None or loss < best[1].loss - _EPS:
                best = (tuple(int(v) for v in node), Outcome(True, True, sup, loss, arx, dis))
        self.nodes_evaluated_ = evaluated
        self.nodes_pruned_ = pruned
        if best is None:
            asked = f"k={models.k}" + (f", l={models.l}" if models.l is not None else "") + (
                f", t={models.t:g}" if models.t is not None else "")
            raise ParameterError(f"no level vector meets {asked} with at most suppression_limit="
                                 f"{float(self.suppression_limit):g} of the records suppressed; raise the limit, ask "
                                 "less, or give coarser hierarchies")
        return best

    # ---------------------------------------------------------------- output
    def _output_dtypes(self, like: pd.DataFrame) -> dict[str, Any]:
        rec = getattr(self, "recode_", None)
        out = rec._output_dtypes(like) if rec is not None else {}
        for c in getattr(self, "released_keys_", []):
            if c in like.columns and c not in out:
                want = nullable_dtype(like[c].dtype)
                if want != like[c].dtype:
                    out[c] = want
        return out

    def _output_schema(self, schema: Schema) -> Schema:
        if self.recode_ is None:
            return schema
        out = self.recode_._output_schema(self.search_schema_)
        # the keys left at level 0 keep the schema's own hierarchies (the added top level is the search's)
        hier = {c: h for c, h in schema.hierarchies.items() if c not in self.recode_.labels_}
        for c, h in out.hierarchies.items():
            if c in self.recode_.labels_:
                if TOP not in self.recode_.labels_[c]:  # the top level the search added is not released
                    h = {v: [u for u in ups if u != TOP] for v, ups in h.items()}
                    h = {v: ups for v, ups in h.items() if ups}
                if h:
                    hier[c] = h
        return replace(out, hierarchies=hier)

    def transform_partition(self, X: pd.DataFrame, number: int, base: int) -> pd.DataFrame:
        if self.t is not None or self.l is not None:
            # t compares a class with the whole table, and the suppressed records of one partition, as a class,
            # need not hold l distinct values: a partition cannot check either for the whole release
            raise ParameterError("with l or t, generalize checks the suppressed records and the table's distribution "
                                 "over the whole table, which a partition does not hold; transform a pandas table")
        return super().transform_partition(X, number, base)

    # --------------------------------------------------------------- transform
    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        out = self.recode_._transform(df, self.search_schema_, rng) if self.recode_ is not None else df.copy()
        keys = self.released_keys_
        n = len(df)
        codes = [_factor(out[c]) for c in keys]
        blank = np.ones(n, dtype=bool) if keys else np.zeros(n, dtype=bool)
        for c in keys:
            blank &= df[c].isna().to_numpy()
        scodes, ordered = sensitive_codes(df, self.sensitive_)
        models = replace(self.models_, scodes=scodes, ordered=ordered)
        g = class_ids(codes, n)
        mono, tbad = failing(g, blank, models)
        sup = mono | tbad
        if not suppressed_class_ok(g, sup | blank, models):
            raise PPDMError("the suppressed records of this table do not meet l or t together at the fitted levels; "
                            "fit generalize on these records")
        for c in keys:
            if sup.any():
                col = out[c]
                if col.dtype == bool:
                    col = col.astype(object)
                out[c] = col.mask(pd.Series(sup, index=col.index))
        self.suppressed_ = sup
        self.privacy_report_ = self._report()
        self.private_report_ = {
            "technique": "generalize",
            "suppressed_records": int(sup.sum()),
            "suppressed_share": float(sup.mean()) if n else 0.0,
            "loss_of_fit": self.loss_,
            "arx_loss_of_fit": self.losses_["arx"],
            "discernibility_of_fit": self.losses_["discernibility"],
            "lattice_size": int(self.lattice_size_),
            "nodes_evaluated": int(self.nodes_evaluated_),
            "note": "suppressed_records counts the records of this release whose keys were all blanked; loss_of_fit "
                    "is the loss minimised (loss) of the release of the fitted table, suppression included; "
                    "arx_loss_of_fit and discernibility_of_fit are its two parts, each in [0, 1]",
        }
        return out

    def _report(self) -> dict[str, Any]:
        models = ["k-anonymity"] + (["distinct l-diversity"] if self.l is not None else []) + (
            ["t-closeness"] if self.t is not None else [])
        return {
            "technique": "generalize",
            "guarantee": " + ".join(models),
            "k": int(self.k),
            "l": None if self.l is None else int(self.l),
            "t": None if self.t is None else float(self.t),
            "keys": list(self.keys_),
            "sensitive": list(self.sensitive_),
            "suppression_limit": float(self.suppression_limit),
            "levels": {c: self.hierarchy_[c][lv] for c, lv in self.levels_.items()},
            "rule": "classes are records with equal released keys, a missing value being a value of its own; the "
                    "records of classes failing a model have every key blanked (at most suppression_limit of them), "
                    "and the blanked records, as one class, meet l and t too",
            "loss": self.loss,
            "loss_weight": float(self.loss_weight) if self.loss == "mix" else None,
            "loss_rule": _LOSS_WORDS[self.loss] + "; its value on x is in the owner's private log",
        }


__all__ = ["DATE_LEVELS", "Generalize", "LOSSES", "Ladder", "TOP", "class_ids", "distinct_l", "failing", "nested_widths",
           "release_loss", "suppressed_class_ok"]
