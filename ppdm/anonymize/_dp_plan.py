"""DPCube's grid plan: which attributes get bins, how many, and where the bin edges fall.

Part of :mod:`ppdm.anonymize.differential_privacy`: phase S (the attributes picked by the
exponential mechanism when the grid cannot hold them all) and phase Q (bin edges at DP
quantiles), both calling the noisy phases through :mod:`ppdm.anonymize._dp_phases`.
"""

from __future__ import annotations

import math
from typing import NoReturn

import numpy as np
import pandas as pd

from ppdm.anonymize import _dp_phases as phases
from ppdm.anonymize._dp_domain import _Declared, _Domain
from ppdm.anonymize._dp_grid import _GAP, Grid, GridDim, _bins_within, _fmt_count, _grid_target, count_cells
from ppdm.anonymize._dp_mechanisms import split_purity_scores
from ppdm.anonymize._dp_report import PrivacyStep, _scale
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError


class _GridPlan(_Declared):
    """The grid of a DPCube fit, planned from the noisy table size and the budget left."""

    def _refuse_categories(self, fixed: int) -> NoReturn:
        vals = {c: v for c, v in self._grid_values.items()}
        widest = max(vals, key=lambda c: len(vals[c]))
        raise ParameterError(
            f"the categorical attributes and the class alone make {_fmt_count(fixed)} cells, more than "
            f"max_cells={self.max_cells}; drop categorical attributes or merge their values "
            f"(largest: {widest!r} with {len(vals[widest])} values)"
        )

    def _plan(self, schema: Schema, dom: _Domain, flags: list[str], n0: float, rest: float, enc: pd.DataFrame,
              rng: np.random.Generator, steps: list[PrivacyStep]) -> tuple[list[str], dict[str, int]] | None:
        """The attributes that get more than one cell and the bins of the numeric ones.

        With ``bins`` a number, or ``selection="off"``, or no class: every attribute,
        numeric ones in table order (``None`` when the categorical cells alone exceed
        ``max_cells``). Otherwise, when every attribute fits with ``min_bins`` bins, all of
        them; else the attributes picked by the exponential mechanism (phase S), in the
        order picked, as many as fit.
        """
        num = list(schema.numeric)
        cls = schema.class_column
        vals = self._grid_values
        if self.bins != "auto":
            return list(schema.attributes), dict.fromkeys(num, int(self.bins))
        delta = self.sensitivity
        target = _grid_target(n0, float(self.epsilon), delta, float(self.grid_density), self.max_cells)
        fixed = count_cells([len(vals[c]) for c in [*([cls] if cls else []), *flags]])
        cat_cells = {c: len(vals[c]) for c in schema.categorical}
        caps = {c: dom.capacity(c) for c in num}

        def need(c: str) -> int:
            return cat_cells[c] if c in cat_cells else min(self.min_bins, caps[c] or self.min_bins)

        everything = count_cells([need(c) for c in schema.attributes]) * fixed
        if self.selection == "off" or cls is None or everything <= target:
            if count_cells(list(cat_cells.values())) * fixed > self.max_cells:
                return None
            budget = target / (fixed * count_cells(list(cat_cells.values())))
            per = _bins_within(budget, [caps[c] for c in num])
            return list(schema.attributes), dict(zip(num, per, strict=True))
        # phase S: rank the attributes by how well each one separates the classes
        cands = list(schema.attributes)
        room = target / fixed
        # picks revealed: about as many attributes as can get min_bins cells each (one more, as
        # two-valued categorical attributes take fewer); each pick costs its share of the budget
        k_max = max(0, min(len(cands), int(math.floor(math.log(room) / math.log(self.min_bins))) + 1)
                    if room >= 2 else 0)
        if k_max == 0:
            return [], {}
        e_sel = self.selection_share * rest
        y = enc[cls].to_numpy(dtype=np.int64)
        cols = [enc[c].to_numpy() for c in cands]
        kinds = ["codes" if c in cat_cells else "values" for c in cands]
        scores = split_purity_scores(cols, kinds, y, len(vals[cls]))
        # the Gini purity changes by at most 1 per added or removed record (2 under replace-one)
        s_sens = delta
        each = e_sel / k_max if not math.isinf(e_sel) else e_sel
        order = phases.select_attributes(scores, k_max, each, s_sens, rng)
        steps.append(PrivacyStep(f"attribute selection (phase S, {k_max} picks)", e_sel, "exponential mechanism",
                                 s_sens, _scale(2.0 * s_sens, each), "sequential over the picks"))
        chosen: list[str] = []
        for i in order:
            c = cands[int(i)]
            trial = [*chosen, c]
            if count_cells([need(a) for a in trial]) <= room:
                chosen.append(c)
        chosen_num = [c for c in chosen if c in num]
        budget = room / count_cells([cat_cells[c] for c in chosen if c in cat_cells])
        per = _bins_within(budget, [caps[c] for c in chosen_num])
        # keep the table's column order for the grid, the picking order for the extra bins
        bins = dict(zip(chosen_num, per, strict=True))
        bins.update(dict.fromkeys([c for c in num if c not in chosen], 1))
        return [c for c in schema.attributes if c in chosen], bins

    def _make_grid(self, schema: Schema, dom: _Domain, flags: list[str], selected: list[str], bins: dict[str, int],
                   rest: float, n0: float, enc: pd.DataFrame, rng: np.random.Generator,
                   steps: list[PrivacyStep]) -> tuple[Grid, float]:
        """The grid, with the bin edges of the numeric attributes (phase Q when at DP quantiles)."""
        delta = self.sensitivity
        num = list(schema.numeric)
        want = {c: (bins.get(c, 1) if c in selected else 1) for c in num}
        # attributes whose bins are cut at DP quantiles: more than one bin, fewer than their whole numbers
        quant = [c for c in num if want[c] > 1 and self.edges == "quantile" and dom.capacity(c) != 1
                 and not (c in dom.integer and (dom.capacity(c) or 0) <= want[c])]
        e_q = self.quantile_share * rest if quant else 0.0
        each = e_q / len(quant) if quant and not math.isinf(e_q) else e_q
        # pieces of the noisy histograms: about n0·ε_first/(4Δ) of them (a piece must hold a few
        # noise scales of records to stand out), a power of two from 4 to 64
        share = max(1.0, n0) * (each / 2.0) / (4.0 * delta) if not math.isinf(each) else 64.0
        pieces = int(2 ** min(6, max(2, round(math.log2(max(share, 1.0))))))
        if quant:
            steps.append(PrivacyStep(f"bin edges (phase Q, quantiles of {len(quant)} attributes)", e_q,
                                     "discrete Laplace (noisy histograms of pieces of the bounds)", delta,
                                     _scale(2.0 * delta, each),
                                     "sequential over attributes and zoom levels; parallel over the disjoint pieces "
                                     "of one count"))
        dims: list[GridDim] = []
        for c in schema.columns:
            if c in schema.numeric:
                lo, hi = dom.bounds[c]
                nb = want[c]
                if c in dom.integer:
                    ilo, ihi = math.ceil(lo), math.floor(hi)
                    m = ihi - ilo + 1
                    nb = min(nb, m)
                    support = None
                    if c in quant:
                        cuts, support = phases.dp_bin_edges(enc[c].to_numpy(), lo, hi, nb, each, delta, True, rng,
                                                            pieces=pieces)
                        starts = np.concatenate([[ilo], cuts.astype(np.int64)]).astype(np.int64)
                    else:
                        starts = ilo + (np.arange(nb, dtype=np.int64) * m) // nb
                    ends = np.append(starts[1:] - 1, ihi)
                    dims.append(GridDim(c, "integer", len(starts), int_lo=starts, int_hi=ends, support=support))
                else:
                    nb = nb if hi > lo else 1
                    support = None
                    if c in quant:
                        inner, support = phases.dp_bin_edges(enc[c].to_numpy(), lo, hi, nb, each, delta, False, rng,
                                                             pieces=pieces)
                        edges = np.concatenate([[lo], inner, [hi]])
                    else:
                        edges = lo + (hi - lo) * np.arange(nb + 1, dtype=float) / nb
                        edges[-1] = hi
                    dims.append(GridDim(c, "numeric", len(edges) - 1, edges=edges, support=support))
                if c + _GAP in flags:
                    dims.append(GridDim(c + _GAP, "categorical", 2, values=self._grid_values[c + _GAP]))
            else:
                values = self._grid_values[c]
                merged = c != schema.class_column and c not in selected
                dims.append(GridDim(c, "categorical", 1 if merged else len(values), values=values, merged=merged))
        return Grid(dims), e_q
