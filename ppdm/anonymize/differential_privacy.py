"""Differentially private synthetic data by multidimensional partitioning (DPCube).

Paper 000 §7.2/§8.4 anonymizes the Banknotes dataset with the technique of Xiao, Xiong
& Yuan (2010, "Differentially private data release through multidimensional
partitioning", LNCS 6358, reference [4] of paper 000; journal version: Xiao, Xiong, Fan,
Goryczka & Li, "DPCube", Transactions on Data Privacy 7, 2014): the domain is
partitioned into disjoint sub-domains, the number of records in each is released
through a noisy count query, and new records are generated inside each sub-domain.

:class:`DPCube` follows the two-phase kd-tree form of that technique, over a grid whose
attributes, bins and bin edges are themselves chosen under differential privacy. For a
table of n records and a budget ε, under add/remove-one neighbours (the default):

0. **Table size.** ``n0 = n + DLap(1/ε0)`` (discrete Laplace, i.e. two-sided geometric
   noise). It sizes the grid and, with the partition counts, gives the number of
   released records. Under replace-one neighbours n is public: no phase 0.
S. **Attribute selection** (only when the grid cannot hold every attribute). Each
   attribute's best split of the records by class is scored (Gini purity, sensitivity 1)
   and the exponential mechanism picks, one after the other, the attributes that get
   bins; the others carry nothing of x (numbers at the centre of their declared range,
   categories uniform over their declared values; see ``values``).
Q. **Bin edges.** The bins of a numeric attribute are cut at quantiles of a noisy
   histogram of its values inside the declared bounds, which zooms into pieces that hold
   most records; values are drawn inside the noisy hull of the records.
1. **Cell histogram.** Every cell of the grid (selected attributes × class), empty cells
   included, gets discrete Laplace noise ``DLap(Δ/ε1)``.
2. **kd-tree on the noisy grid** (reads the noisy histogram only: post-processing), then
   **noisy partition counts**: each final box's true count gets ``DLap(Δ/ε2)``.
3. **Synthetic records** drawn inside the partitions, in cells chosen in proportion to
   their phase-1 noisy counts (post-processing). The rows are shuffled.

**Wide tables** (phase S ran, so the grid holds a few attributes chosen for the class):
the kd-tree cuts the class first, so every partition holds one class and its count is a
noisy count of that class alone (``split_dimension="auto"``), and the numeric attributes
left without bins are released at the centre of their declared range rather than
uniformly over it (``values="auto"``). Both read only noisy outputs and the declared
domain: post-processing, no budget. Why: ``docs/differential_privacy.md`` (section "Wide
tables: robust to the learner").

The phases are chosen one after the other from earlier noisy outputs (adaptive
sequential composition), each phase over disjoint cells, boxes or records (parallel
composition), so the release is (ε0 + εS + εQ + ε1 + ε2) = ε-differentially private.

**Everything released comes from the declared domain or from noise.** Types (numeric,
whole, categorical), bounds and category sets are read from the declaration — the
schema given to the technique, or ``bounds=``/``domains=`` — never from the column
dtypes or the records. A table whose domain is not declared is refused, naming the
columns, unless ``domain_from_data=True`` (then the report says, in words, that the
release is not differentially private). A value outside the declared domain never
aborts the run: numbers are clamped to the bounds (whole numbers rounded), a category
outside the declared set goes to the "other" cell (``unknown="other"``) or its record is
dropped (``unknown="drop"``, the default), and a missing cell in a column not declared
``nullable`` drops its record. Dropping records one by one is part of the mechanism: one
record more or less in x changes the kept table by at most that record, so the guarantee
holds for x. How many records were dropped is the owner's secret (``private_report_``).

``docs/differential_privacy.md`` gives the accounting, the assumptions, what is public
and private, and the audits.

This module holds the technique and its fit; the parts live beside it: the grid
(``_dp_grid``), the kd-tree partitioning (``_dp_partition``), the noisy phases
(``_dp_phases``), the declaration and domain (``_dp_domain``), the grid plan (``_dp_plan``),
the report and sidecar (``_dp_report``) and the synthesis (``_dp_synthesis``). Every public
name is importable from here.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize import _dp_phases as phases
from ppdm.anonymize._dp_domain import _names
from ppdm.anonymize._dp_grid import (
    MISSING as MISSING,
)
from ppdm.anonymize._dp_grid import (
    OTHER as OTHER,
)
from ppdm.anonymize._dp_grid import (
    Grid,
    GridDim,
    _fmt_count,
    auto_bins,
    count_cells,
)
from ppdm.anonymize._dp_mechanisms import discrete_laplace
from ppdm.anonymize._dp_partition import _all_cells, box_sums, box_volumes, kd_partition
from ppdm.anonymize._dp_partition import _best_cut_gain as _best_cut_gain
from ppdm.anonymize._dp_phases import (
    _child_rng,
    noisy_histogram,
    noisy_partition_counts,
    noisy_table_size,
    select_attributes,
)
from ppdm.anonymize._dp_plan import _GridPlan
from ppdm.anonymize._dp_report import MAX_WRITTEN_CELLS as MAX_WRITTEN_CELLS
from ppdm.anonymize._dp_report import MEASUREMENTS_SUFFIX as MEASUREMENTS_SUFFIX
from ppdm.anonymize._dp_report import (
    PrivacyStep,
    _Report,
    _scale,
    measurements_path,
)
from ppdm.anonymize._dp_synthesis import _cells_by_weight as _cells_by_weight
from ppdm.anonymize._dp_synthesis import _Synthesis, allocate_counts
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, SchemaError

__all__ = [
    "CoarseGridWarning",
    "DPCube",
    "DomainFromDataWarning",
    "Grid",
    "GridDim",
    "PrivacyStep",
    "allocate_counts",
    "auto_bins",
    "box_sums",
    "box_volumes",
    "count_cells",
    "discrete_laplace",
    "kd_partition",
    "measurements_path",
    "noisy_histogram",
    "noisy_partition_counts",
    "noisy_table_size",
    "select_attributes",
]



class DomainFromDataWarning(UserWarning):
    """Bounds, types or value sets were read from the private table, so the release is not ε-DP."""


class CoarseGridWarning(UserWarning):
    """Some attributes get a single cell of the grid (released uniformly over their domain)."""



# ------------------------------------------------------------------------ technique
@register("dpcube")
class DPCube(_GridPlan, _Report, _Synthesis):
    """Differentially private synthetic data by multidimensional partitioning (Xiao, Xiong & Yuan 2010).

    Paper 000 §7.2/§8.4 releases a DP version of Banknotes with this technique and
    sweeps the privacy budget ε from 1.0 down to 0.001. See the module docstring for
    the algorithm and ``docs/differential_privacy.md`` for the privacy accounting, the
    guarantee and its assumptions.

    Parameters
    ----------
    epsilon:
        Total privacy budget ε > 0 (``inf`` switches the noise off: not private).
    alpha:
        Fraction of the budget left for the two count phases spent on the phase-1 cell
        histogram that shapes the partition; the final partition counts get the rest.
        Strictly in (0, 1).
    partitioning:
        ``"kd"`` (two-phase kd-tree) or ``"cell"`` (the cell-based baseline).
    bins:
        ``"auto"`` (default): the grid holds about ``n0·ε/(Δ·grid_density)`` cells; when
        every attribute fits with ``min_bins`` bins they all share them, otherwise the
        attributes are chosen under DP (``selection``). A whole number ≥ 1: that many
        bins for every numeric attribute (no selection).
    grid_density:
        With ``bins="auto"``, about ``grid_density·Δ/ε`` records per cell on average. Default 2.
    min_bins:
        With ``bins="auto"``, the fewest bins a selected numeric attribute gets. Default 3.
    selection:
        ``"auto"``: when the grid cannot hold every attribute with ``min_bins`` bins (and
        the table has a class), the attributes that get bins are chosen by the exponential
        mechanism on how well each separates the classes; ``"off"``: every attribute
        shares the grid in table order (the first ones get one more bin).
    edges:
        ``"quantile"`` (default): bins of numeric attributes are cut at DP quantiles of
        their values inside the declared bounds; ``"equal"``: equal-width bins over the
        declared bounds (no budget spent on them).
    max_depth, min_count, split_threshold, split, split_dimension:
        The kd-tree (see :func:`kd_partition`); ``min_count=None`` means two noise scales
        ``2·Δ/ε1``; ``split_dimension`` ``"widest"`` (Xiao et al.), ``"class-first"``
        (ppdm's extension beyond the paper) or ``"auto"`` (default: ``"class-first"`` when
        phase S chose the attributes for the class, ``"widest"`` otherwise; the choice made
        is ``split_dimension_``).
    placement:
        ``"cells"`` (default; a cell chosen in proportion to the partition's phase-1 noisy
        cells clipped at zero, then uniformly inside it) or ``"uniform"`` (uniformly over
        the partition, the paper's uniformity assumption).
    values:
        Where a number falls inside its cell (its partition with ``placement="uniform"``):
        ``"uniform"`` (Xiao et al.'s uniformity assumption); ``"center-unbinned"``: uniform,
        except that a numeric attribute with one cell of the grid sits at the centre of its
        declared range (whole numbers rounded down), which says as little as a uniform draw
        over that range without inventing variation a learner would split on; ``"center"``:
        every number at the centre of its cell's range; ``"auto"`` (default):
        ``"center-unbinned"`` when phase S ran, ``"uniform"`` otherwise (the choice made is
        ``values_``). Categories are always drawn uniformly over their cell.
    combine:
        Replace each partition's noisy count by the inverse-variance average of it and
        the sum of its phase-1 noisy cells (free post-processing; off by default).
    neighbouring:
        ``"add-remove"`` (default; Δ = 1; the table size is private, so the number of
        released records is a noisy count) or ``"replace"`` (Δ = 2, bounded DP: the table
        size n is public and the release has exactly n records).
    size_share, selection_share, quantile_share:
        Shares of ε spent on the noisy table size (add/remove only), of what is left on
        the attribute selection (when it runs) and on the DP bin edges (when some
        attribute needs them). Defaults 0.05, 0.15, 0.2.
    bounds:
        Public ``{column: (low, high)}`` of numeric attributes; overrides the schema's
        ``bounds``.
    domains:
        Public ``{column: [values...]}`` of categorical attributes and the class, in the
        order that makes their cells; overrides the schema's ``categories``.
    nullable:
        Columns declared to have missing cells: missing is then a value of their domain
        (categorical: one more cell; numeric: a second dimension, missing or not). A
        missing cell in any other column drops its record.
    unknown:
        What becomes of a category outside the declared set: ``"drop"`` (default; the
        record is left out) or ``"other"`` (it goes to one more cell per attribute,
        released as ``other_label``).
    other_label:
        The released value of the "other" cell (default ``"other"``).
    domain_from_data:
        Read what is not declared (types, bounds, categories, which columns have missing
        cells) from the data and release anyway; the report then says the release is not
        differentially private. Default False: an undeclared domain is refused.
    max_cells:
        Refuse grids with more cells than this.

    Attributes (after ``fit``)
    --------------------------
    grid_, bins_, selected_, split_dimension_, values_, histogram_noisy_, partitions_, noisy_counts_, n_noisy_,
    n_rows_, privacy_report_ (a JSON-able dict), epsilon_spent_: outputs of the mechanism,
    covered by the guarantee. ``partition_counts_`` (true counts) and ``private_report_``
    (exact record counts, drops and clamps) are the owner's secret: never publish them.
    """

    handles_missing = True
    handles_missing_class = True
    missing_policy = "modelled"
    #: the privacy budget ε (capped by a policy's ε line) and its split between the two phases
    search_space = SearchSpace({"epsilon": Real(0.01, 10.0, log=True), "alpha": Real(0.1, 0.9),
                                "partitioning": Choice(("kd", "cell"))}, epsilon="epsilon")
    #: a smaller budget: noisier counts, fewer cells copied from x
    strength_param = ("epsilon", "decreasing", None)
    #: types and domains come from the declaration, never from x (read by release())
    declared_domain_only = True
    # a value outside the public bounds goes to the edge bin (DP's clipping convention), and one
    # outside the declared categories to the 'other' cell or out of the table: never refused
    clips_to_declared_bounds = True

    def __init__(
        self,
        epsilon: float = 1.0,
        alpha: float = 0.5,
        partitioning: str = "kd",
        bins: int | str = "auto",
        grid_density: float = 2.0,
        min_bins: int = 3,
        selection: str = "auto",
        edges: str = "quantile",
        max_depth: int | None = None,
        min_count: float | None = None,
        split_threshold: float = 4.0,
        split: str = "median",
        split_dimension: str = "auto",
        placement: str = "cells",
        values: str = "auto",
        combine: bool = False,
        neighbouring: str = "add-remove",
        size_share: float = 0.05,
        selection_share: float = 0.15,
        quantile_share: float = 0.2,
        bounds: dict | None = None,
        domains: dict | None = None,
        nullable: Sequence[str] | None = None,
        unknown: str = "drop",
        other_label: Any = "other",
        domain_from_data: bool = False,
        max_cells: int = 10**7,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.epsilon = epsilon
        self.alpha = alpha
        self.partitioning = partitioning
        self.bins = bins
        self.grid_density = grid_density
        self.min_bins = min_bins
        self.selection = selection
        self.edges = edges
        self.max_depth = max_depth
        self.min_count = min_count
        self.split_threshold = split_threshold
        self.split = split
        self.split_dimension = split_dimension
        self.placement = placement
        self.values = values
        self.combine = combine
        self.neighbouring = neighbouring
        self.size_share = size_share
        self.selection_share = selection_share
        self.quantile_share = quantile_share
        self.bounds = bounds
        self.domains = domains
        self.nullable = nullable
        self.unknown = unknown
        self.other_label = other_label
        self.domain_from_data = domain_from_data
        self.max_cells = max_cells

    # --------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        extra = [c for c in df.columns if c not in schema.columns]
        if extra:
            # every column is synthesized; one copied through would publish original values
            raise SchemaError(f"DPCube synthesizes every column, but {extra[0]!r} is not in the schema")
        dom = self._domain(df, schema)
        self._dom = dom
        flags, self._grid_values = self._grid_domain(schema, dom)
        fixed_cat = count_cells([len(v) for c, v in self._grid_values.items()
                                 if c in schema.categorical or c == schema.class_column or c in flags])
        if fixed_cat > self.max_cells and (self.bins != "auto" or self.selection == "off"):
            self._refuse_categories(fixed_cat)
        enc_all, keep, notes = self._encode(df, schema)
        enc = enc_all.loc[keep]
        n = len(enc)
        noise_rng = _child_rng(rng, 0)
        delta = self.sensitivity
        eps = float(self.epsilon)
        steps: list[PrivacyStep] = []
        # ---- phase 0: the table size (public under replace-one neighbours: the input's size)
        if self.neighbouring == "add-remove":
            e0 = self.size_share * eps
            n0 = phases.noisy_table_size(n, e0, noise_rng)
            steps.append(PrivacyStep("table size (phase 0)", e0, "discrete Laplace", 1.0, _scale(1.0, e0),
                                     "one count query"))
        else:
            e0, n0 = 0.0, float(len(df))
        rest = eps - e0 if not math.isinf(eps) else eps
        # ---- which attributes get bins, and how many (phase S when the grid cannot hold them all)
        plan = self._plan(schema, dom, flags, n0, rest, enc, noise_rng, steps)
        if plan is None:
            self._refuse_categories(fixed_cat)
        selected, per_bins = plan
        e_sel = sum(s.epsilon for s in steps if s.name.startswith("attribute selection"))
        rest = rest - e_sel if not math.isinf(rest) else rest
        # ---- phase Q: bin edges at DP quantiles
        grid, e_q = self._make_grid(schema, dom, flags, selected, per_bins, rest, n0, enc, noise_rng, steps)
        rest = rest - e_q if not math.isinf(rest) else rest
        if grid.n_cells > self.max_cells:
            raise ParameterError(
                f"the grid has {_fmt_count(grid.n_cells)} cells ({self.bins} bins for each of {len(schema.numeric)} "
                f"numeric attributes × {fixed_cat} categorical/class cells), more than max_cells={self.max_cells}; "
                "use bins='auto' (sized from n, the attributes and ε), fewer bins, or fewer attributes"
            )
        # the DP warnings, kept for the public privacy report too (they quote ε and column names, no count of x)
        self.dp_warnings_: list[tuple[str, str]] = []
        if dom.from_data:  # after every refusal: warn only about a release that is made
            self._warn("domain from data", DomainFromDataWarning,
                f"DPCube read {_names(dom.from_data)} from the data (domain_from_data=True), so the release is not "
                "differentially private; declare public bounds/categories (schema or bounds=/domains=)")
        # the kd-tree's first cuts: with "auto", the class first when phase S chose the attributes
        # for it (a wide table), the widest dimension otherwise (Xiao et al.); public either way
        chosen_for_class = any(s.name.startswith("attribute selection") for s in steps)
        self.split_dimension_ = ("class-first" if self.split_dimension == "class-first"
                                 or (self.split_dimension == "auto" and chosen_for_class) else "widest")
        # where numbers fall in their cell: with "auto", attributes with one cell at its centre on such a table
        self.values_ = self.values if self.values != "auto" else (
            "center-unbinned" if chosen_for_class else "uniform")
        single = [d.name for d in grid.dims if d.name in schema.attributes and (
            d.merged or (d.kind != "categorical" and d.n_bins == 1 and dom.capacity(d.name) != 1))]
        if self.bins == "auto" and single:
            self._warn("coarse grid", CoarseGridWarning,
                f"at this table size and ε = {self.epsilon:g}, DPCube's grid keeps the structure of "
                f"{len(schema.attributes) - len(single)} of the {len(schema.attributes)} attributes; the other "
                f"{len(single)} carry none of it ("
                + ("numbers at the centre of their declared range, categories" if self.values_ != "uniform" else "all")
                + " drawn uniformly over their declared domain, independently of the rest); release "
                "fewer attributes or spend a larger ε to keep more of their structure")
        if self.partitioning == "cell":
            e1, e2 = rest, 0.0
        else:
            e1 = self.alpha * rest
            e2 = rest - e1 if not math.isinf(rest) else rest
        # ---- phase 1: the noisy cell histogram
        hist = grid.histogram(enc)
        noisy_hist = phases.noisy_histogram(hist, delta, e1, noise_rng)
        steps.append(PrivacyStep("cell histogram (phase 1)", e1, "discrete Laplace", delta, _scale(delta, e1),
                                 "parallel over disjoint cells"))
        var1 = phases.discrete_laplace_variance(delta, e1)
        if self.partitioning == "cell":
            boxes = _all_cells(grid.array_shape)
            true = hist.reshape(-1)
            noisy = noisy_hist.reshape(-1)
            var_sum = var1 * grid.n_cells
        else:
            # ---- phase 2a: the kd-tree reads the noisy histogram only
            min_count = self.min_count if self.min_count is not None else (
                0.0 if math.isinf(e1) else 2.0 * delta / e1)
            first: tuple[int, ...] = ()
            if self.split_dimension_ == "class-first" and schema.class_column is not None:
                j = grid.columns.index(schema.class_column)
                first = (grid.active.index(j),) if j in grid.active else ()
            boxes = kd_partition(
                noisy_hist, noise_var=var1, min_count=min_count, split_threshold=float(self.split_threshold),
                max_depth=self.max_depth, split=self.split,  # type: ignore[arg-type]  # a str checked against the choices on fit
                first_dims=first,
            )
            # ---- phase 2b: noisy partition counts
            true = box_sums(hist, boxes)
            noisy = phases.noisy_partition_counts(true, delta, e2, noise_rng)
            steps.append(PrivacyStep("partition counts (phase 2b)", e2, "discrete Laplace", delta,
                                     _scale(delta, e2), "parallel over disjoint partitions"))
            var2 = phases.discrete_laplace_variance(delta, e2)
            if self.combine and var2 > 0 and var1 > 0:
                var_b = box_volumes(boxes) * var1
                phase1 = box_sums(noisy_hist, boxes)
                noisy = (noisy / var2 + phase1 / var_b) / (1.0 / var2 + 1.0 / var_b)
                var2 = 1.0 / (1.0 / var2 + 1.0 / var_b.min())  # a bound: the sum's variance is no larger
            var_sum = var2 * len(boxes)
            self.min_count_ = float(min_count)
        if self.neighbouring == "add-remove":
            # inverse-variance combination of two noisy estimates of n (post-processing)
            var0 = phases.discrete_laplace_variance(1.0, e0)
            total = float(np.sum(noisy))
            if var0 == 0.0:
                n_noisy = n0
            elif var_sum == 0.0:
                n_noisy = total
            else:
                n_noisy = (n0 / var0 + total / var_sum) / (1.0 / var0 + 1.0 / var_sum)
            self.n_noisy_: float | None = n_noisy
            self.n_rows_: int | None = max(1, int(round(n_noisy)))  # a release has at least one record
        else:
            self.n_noisy_ = None
            self.n_rows_ = None
        self.n0_ = n0 if self.neighbouring == "add-remove" else None
        self.grid_ = grid
        self.selected_ = list(selected)
        self.bins_ = {d.name: d.n_bins for d in grid.dims if d.name in schema.numeric}
        self.histogram_noisy_ = noisy_hist  # over grid_.array_shape
        self._boxes = boxes  # over grid_.array_shape
        self.partitions_ = grid.expand(boxes)
        self.partition_counts_ = np.asarray(true, dtype=float)
        self.noisy_counts_ = np.asarray(noisy, dtype=float)
        self.privacy_steps_ = tuple(steps)
        self.epsilon_spent_ = float(sum(s.epsilon for s in steps))
        self.privacy_report_ = self._report(dom, schema)
        # the owner's secret: exact counts of x, never written beside the release
        self.private_report_ = {
            "records": int(len(df)),
            "records_used": int(n),
            "dropped_missing": int(notes["dropped_missing"]),
            "dropped_unknown_category": int(notes["dropped_unknown"]),
            "clamped_to_bounds": {c: int(k) for c, k in notes["clamped"].items() if k},
        }

    def _warn(self, kind: str, category: type[UserWarning], text: str) -> None:
        """Warn, and keep the warning for the public privacy report (it quotes ε and column names, no count of x)."""
        self.dp_warnings_.append((kind, text))
        warnings.warn(text, category, stacklevel=4)  # the caller of fit
