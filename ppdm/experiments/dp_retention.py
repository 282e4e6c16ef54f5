"""Rule retention of differentially private data (paper 000 §8.4, Figure 5).

Paper 000 releases Banknotes through the DP technique of Xiao, Xiong & Yuan 2010
(:class:`ppdm.anonymize.differential_privacy.DPCube`) for privacy budgets between 1.0
and 0.001 and follows Rule Accuracy, RSD, RLD and Prediction Accuracy as the budget
shrinks. As in the rest of its experiments (§7), 10-fold cross-validation splits the
data into a training table x and a test table t, the anonymization of x is repeated
10 times, and Ψx are the leaves of a CART tree on x (minimum leaf 0.02·|x|, depth 12).
For comparison the same measures are taken for the paper's toy noises (§7.1),
uniform noise (UN) and Gaussian noise (GN) — the registered techniques
:class:`~ppdm.anonymize.noise.UniformNoise` and :class:`~ppdm.anonymize.noise.GaussianNoise` —
and for x itself (ε = ∞).

Measures are looked up by name at run time through
:func:`ppdm.experiments.evaluation.resolve_measures`, each called with an
:class:`~ppdm.metrics.base.EvaluationContext` ``(x, z, schema, test, rules)``.

The domain of every DPCube release is the public one the schema declares (``bounds`` of
the numeric attributes, ``categories`` of the categorical ones and of the class; the
shipped Banknotes carries them in its metadata), never one read from the records: a
table without a declared domain is refused, so every fold's release is ε-DP with
respect to its training records.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, StratifiedKFold

from ppdm.anonymize.differential_privacy import CoarseGridWarning, DPCube
from ppdm.anonymize.noise import GaussianNoise, UniformNoise
from ppdm.data.io import atomic_write_text, save_figure, write_table
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError

# Paper 000 §7.2: "Common values for the privacy budget parameter range from 0.001 to 1.0";
# §8.4 names 0.8, 0.08 and 0.02 as points of its Figure 5, whose full axis is not in the text.
DEFAULT_EPSILONS: tuple[float, ...] = (1.0, 0.8, 0.5, 0.2, 0.1, 0.08, 0.05, 0.02, 0.01, 0.005, 0.001)
# §7.1 raises UN/GN from 0 % to 30 %; three levels of that range are enough for a comparison
DEFAULT_NOISE_LEVELS: tuple[float, ...] = (0.1, 0.2, 0.3)
DEFAULT_MEASURES = "rule_accuracy,rule_support_distance,rule_label_distance,prediction_accuracy,auc,f_measure"
# DPCube settings of the experiment: the technique's own defaults (grid sized from n, d
# and ε; docs/differential_privacy.md). ``--param`` overrides them.
DEFAULT_DPCUBE_PARAMS: dict[str, Any] = {}

#: what the reproduction says about the kd-tree's split dimension (``class-first`` is not in Xiao et al.)
SPLIT_NOTES: dict[str, str] = {
    "widest": ("kd-tree cuts: the widest dimension first, as Xiao et al.; `split_dimension='class-first'` "
               "(separate the class values first) is ppdm's extension beyond the paper and is not used here."),
    "auto": ("kd-tree cuts (`split_dimension='auto'`, the default): the widest dimension first, as Xiao et al.; "
             "`split_dimension='class-first'` (separate the class values first, ppdm's extension beyond the paper) is "
             "taken only where phase S chose the attributes for the class (wide tables), and on a table phase S "
             "leaves whole it is not used here."),
    "class-first": ("kd-tree cuts: `split_dimension='class-first'` separates the class values first, then the widest "
                    "dimension; this is ppdm's extension beyond the paper (Xiao et al. cut the widest dimension)."),
}


# ---------------------------------------------------------------------- result
@dataclass
class DPRetentionResult:
    """Every measured value (``raw``) and their means over folds × repeats (``summary``)."""

    raw: pd.DataFrame
    summary: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per (technique, level), one ``mean ± std`` column per measure."""
        s = self.summary.copy()
        s["cell"] = [
            "n/a" if pd.isna(m) else f"{m:.4f} ± {0.0 if pd.isna(d) else d:.4f}"
            for m, d in zip(s["mean"], s["std"], strict=True)
        ]
        order = {t: i for i, t in enumerate(["original", "dpcube", "uniform-noise", "gaussian-noise"])}
        wide = s.pivot_table(index=["technique", "parameter", "level"], columns="measure", values="cell",
                             aggfunc="first", sort=False)
        wide = wide[[m for m in self.settings.get("measures", list(wide.columns)) if m in wide.columns]]
        wide = wide.reset_index()
        wide["_o"] = wide["technique"].map(order).fillna(99)
        wide["_l"] = np.where(wide["technique"] == "dpcube", -wide["level"].astype(float), wide["level"].astype(float))
        return wide.sort_values(["_o", "_l"]).drop(columns=["_o", "_l"]).reset_index(drop=True)

    def to_markdown(self) -> str:
        """The summary as a Markdown table (mean ± standard deviation over folds × repeats)."""
        t = self.table()
        cols = list(t.columns)
        lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
        for _, row in t.iterrows():
            lines.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
        st = self.settings
        split = (st.get("dpcube_params") or {}).get("split_dimension", "auto")
        head = (
            f"Rule retention of DPCube releases of {st.get('dataset', 'the data')} "
            f"({st.get('folds')}-fold cross-validation, {st.get('repeats')} anonymizations per fold and level; "
            f"DPCube parameters {st.get('dpcube_params')}; seed {st.get('random_state')}).\n"
            f"Public domain declared in the schema (never read from the records): {st.get('domain_note', '')}.\n"
            f"{SPLIT_NOTES.get(split, '')}\n"
            "Cells: mean ± standard deviation over folds × repeats; `n/a`: the measure could not be computed.\n\n"
        )
        return head + "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "∞" if math.isinf(v) else f"{v:g}"
    return str(v)


# ---------------------------------------------------------------------- runner
def _levels(name: str, values: Sequence[float], *, positive: bool) -> list[float]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or math.isnan(v):
            raise ParameterError(f"{name} must be numbers, got {v!r}")
        if positive and v <= 0:
            raise ParameterError(f"{name} must be positive privacy budgets, got {v!r}")
        if not positive and not 0.0 <= v <= 1.0:
            raise ParameterError(f"a noise level must be a fraction in [0, 1], got {v!r}")
        out.append(float(v))
    return out


def count_runs(n_epsilons: int, n_noise_levels: int, repeats: int, folds: int) -> int:
    """How many anonymized tables z one run evaluates (for progress bars)."""
    return folds * (1 + (n_epsilons + 2 * n_noise_levels) * repeats)


def run_dp_retention(
    x: pd.DataFrame,
    schema: Schema,
    *,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    noise_levels: Sequence[float] = DEFAULT_NOISE_LEVELS,
    repeats: int = 10,
    folds: int = 10,
    measures: str = DEFAULT_MEASURES,
    dpcube_params: dict[str, Any] | None = None,
    random_state: int = 0,
    dataset: str = "data",
    progress: Callable[[], None] | None = None,
) -> DPRetentionResult:
    """Run paper 000 §8.4 on ``x``: measures of DPCube releases per ε, UN/GN per level, and x itself.

    Public domain: DPCube takes the domain ``schema`` declares (``bounds`` for every numeric
    attribute, ``categories`` for every categorical attribute and the class), never one
    read from ``x``; a schema that leaves a column undeclared is refused. Every fold's
    release is then ε-DP with respect to its training records (assuming that declared
    domain is public).
    """
    cls = schema.require_class()
    eps = _levels("epsilons", epsilons, positive=True)
    noise = _levels("noise levels", noise_levels, positive=False)
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ParameterError(f"repeats must be a whole number ≥ 1, got {repeats!r}")
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ParameterError(f"folds must be a whole number ≥ 2, got {folds!r}")
    x, _ = schema.validate(x, missing="error", min_classes=2)
    x = x.reset_index(drop=True)
    if folds > len(x):
        raise ParameterError(f"cannot make {folds} folds of {len(x)} records")
    specs = _resolve(measures)
    params = dict(DEFAULT_DPCUBE_PARAMS if dpcube_params is None else dpcube_params)
    for k in ("epsilon", "bounds", "domains", "class_column", "schema", "random_state"):
        if k in params:
            raise ParameterError(f"DPCube parameter {k!r} is set by the experiment itself")
    undeclared = [c for c in schema.numeric if c not in schema.bounds]
    undeclared += [c for c in [*schema.categorical, cls] if c not in schema.categories]
    if undeclared:
        raise ParameterError(
            f"the DP experiment needs a public domain declared in the schema, but {undeclared[0]!r} has none "
            "(schema 'bounds' for numeric attributes, 'categories' for categorical ones and the class); it is never "
            "read from the records"
        )
    DPCube(**params)._validate_params()  # fail before any work

    from ppdm.metrics.base import EvaluationContext
    from ppdm.trees.cart import rules_from_cart

    y = x[cls].to_numpy()
    counts = pd.Series(y).value_counts()
    splitter = (StratifiedKFold(folds, shuffle=True, random_state=random_state) if counts.min() >= folds
                else KFold(folds, shuffle=True, random_state=random_state))
    rows: list[dict[str, Any]] = []
    for fold, (tr, te) in enumerate(splitter.split(x, y)):
        train = x.iloc[tr].reset_index(drop=True)
        test = x.iloc[te].reset_index(drop=True)
        rules = rules_from_cart(train, schema, random_state=random_state)
        jobs: list[tuple[str, str, float, int, Callable[[int], pd.DataFrame]]] = [
            ("original", "epsilon", math.inf, 0, _const(train))
        ]
        for e in eps:
            for r in range(repeats):
                jobs.append(("dpcube", "epsilon", e, r, _dp_job(train, schema, e, params)))
        for name, cls_ in (("uniform-noise", UniformNoise), ("gaussian-noise", GaussianNoise)):
            for p in noise:
                for r in range(repeats):
                    jobs.append((name, "p", p, r, _noise_job(cls_, train, schema, p)))
        for j, (tech, pname, level, rep, make) in enumerate(jobs):
            seed = int(np.random.SeedSequence([random_state, fold, j]).generate_state(1)[0])
            z = make(seed)
            ctx = EvaluationContext(x=train, z=z, schema=schema, test=test, rules=rules, random_state=random_state)
            for spec in specs:
                value, error = math.nan, ""
                try:
                    value = float(spec.fn(ctx).value)
                except PPDMError as err:  # e.g. a release with a single class: the measure is undefined
                    error = str(err)
                rows.append({"technique": tech, "parameter": pname, "level": level, "fold": fold, "repeat": rep,
                             "measure": spec.name, "value": value, "error": error})
            if progress is not None:
                progress()
    raw = pd.DataFrame(rows)
    g = raw.groupby(["technique", "parameter", "level", "measure"], sort=False)["value"]
    summary = g.agg(mean="mean", std="std", count="count").reset_index()
    summary["n_failed"] = g.apply(lambda s: int(s.isna().sum())).to_numpy()
    settings = {"dataset": dataset, "epsilons": eps, "noise_levels": noise, "repeats": repeats, "folds": folds,
                "measures": [s.name for s in specs], "dpcube_params": params, "random_state": random_state,
                "domain_note": _domain_note(schema)}
    return DPRetentionResult(raw, summary, settings)


def _resolve(measures: str) -> list:
    from ppdm.experiments.evaluation import resolve_measures

    return resolve_measures(measures)


def _dp_job(train: pd.DataFrame, schema: Schema, eps: float, params: dict):
    def make(seed: int) -> pd.DataFrame:
        # the domain comes from the schema's declaration; a one-bin grid at small ε is expected here
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CoarseGridWarning)
            t = DPCube(epsilon=eps, schema=schema, random_state=seed, **params)
            return t.fit_transform(train)

    return make


def _domain_note(schema: Schema) -> str:
    """The declared domain in words, for the report."""
    parts = [f"{c} [{lo:g}, {hi:g}]" for c, (lo, hi) in schema.bounds.items()]
    parts += [f"{c} {{{', '.join(map(str, v))}}}" for c, v in schema.categories.items()]
    return "; ".join(parts)


def _const(table: pd.DataFrame):
    return lambda seed: table


def _noise_job(technique: type, train: pd.DataFrame, schema: Schema, p: float):
    return lambda seed: technique(level=p, schema=schema, random_state=seed).fit_transform(train)


# ---------------------------------------------------------------------- output
def plot_dp_retention(result: DPRetentionResult, path: str | Path) -> Path:
    """Figure 5 of paper 000: each measure's mean (± std band) against ε on a log axis,
    budget decreasing to the right; the dashed line is the value on x itself."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result.summary
    names = list(result.settings.get("measures", s["measure"].unique()))
    ncol = min(3, max(1, len(names)))
    nrow = math.ceil(len(names) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
    for ax, m in zip(axes.ravel(), names, strict=False):
        dp = s[(s["technique"] == "dpcube") & (s["measure"] == m)].sort_values("level")
        ax.plot(dp["level"], dp["mean"], marker="o", label="DPCube")
        ax.fill_between(dp["level"], dp["mean"] - dp["std"].fillna(0), dp["mean"] + dp["std"].fillna(0), alpha=0.2)
        orig = s[(s["technique"] == "original") & (s["measure"] == m)]["mean"]
        if len(orig) and not pd.isna(orig.iloc[0]):
            ax.axhline(float(orig.iloc[0]), ls="--", color="grey", label="x (ε = ∞)")
        ax.set_xscale("log")
        ax.invert_xaxis()
        ax.set_xlabel("privacy budget ε")
        ax.set_title(m)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(names):]:
        ax.set_visible(False)
    fig.suptitle(f"DPCube on {result.settings.get('dataset', 'the data')}: rule retention vs ε")
    fig.tight_layout()
    return save_figure(fig, path)


def write_outputs(result: DPRetentionResult, out_dir: str | Path) -> list[Path]:
    """Write ``dp_retention_raw.csv``, ``dp_retention_summary.csv``, ``dp_retention.md`` and
    ``dp_retention.png`` into ``out_dir`` (created if needed), each atomically."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    return [
        write_table(result.raw, d / "dp_retention_raw.csv"),
        write_table(result.summary, d / "dp_retention_summary.csv"),
        atomic_write_text(d / "dp_retention.md", result.to_markdown()),
        plot_dp_retention(result, d / "dp_retention.png"),
    ]


# ------------------------------------------------------------------ correlations
CORRELATION_GROUPS: dict[str, tuple[str, ...]] = {
    "UN": ("uniform-noise",), "GN": ("gaussian-noise",), "DPCube": ("dpcube",),
    "all": ("uniform-noise", "gaussian-noise", "dpcube"),
}


def as_comparison(result: DPRetentionResult) -> Any:
    """The runs as a :class:`ppdm.experiments.compare.ComparisonResult` (one label per
    technique and level, the untouched training fold as the ``original`` baseline), so the
    comparison tools — correlation matrices among them — apply to them."""
    from ppdm.experiments.compare import ORIGINAL, ComparisonResult

    raw = result.raw.copy()
    raw["label"] = [ORIGINAL if t == "original" else f"{t} {p}={lv:g}"
                    for t, p, lv in zip(raw["technique"], raw["parameter"], raw["level"], strict=True)]
    raw["technique"] = raw["technique"].replace({"original": ORIGINAL})
    raw["params"] = [json_params(p, lv) for p, lv in zip(raw["parameter"], raw["level"], strict=True)]
    techniques = (raw.drop_duplicates("label")[["label", "technique", "params"]].to_dict("records"))
    data = raw[["technique", "label", "params", "fold", "repeat", "measure", "value"]].reset_index(drop=True)
    meta = {"techniques": techniques, "measures": list(result.settings.get("measures", raw["measure"].unique())),
            "folds": result.settings.get("folds"), "repeats": result.settings.get("repeats"),
            "seed": result.settings.get("random_state")}
    return ComparisonResult(data, meta)


def json_params(parameter: str, level: float) -> str:
    import json

    return json.dumps({parameter: None if math.isinf(level) else level})


def measure_correlations(result: DPRetentionResult, groups: dict[str, tuple[str, ...]] | None = None) -> pd.DataFrame:
    """Pearson's r (and its two-sided p value) between every pair of measures over the
    fold × repeat × level runs of each technique group (paper 000 §7.3, §8.3, Table 6).

    As in §7.3 each value is first taken as its difference from the value on the
    untouched training fold; the baseline rows themselves are left out. Returns a long
    table: ``group, measure, other, r, p, n``.
    """
    from ppdm.experiments.compare import correlation_matrix, correlation_pvalues

    cr = as_comparison(result)
    rows = []
    for name, techs in (groups or CORRELATION_GROUPS).items():
        if not set(techs) & set(result.raw["technique"]):
            continue
        r = correlation_matrix(cr, difference=True, techniques=list(techs))
        p = correlation_pvalues(cr, difference=True, techniques=list(techs))
        mine = result.raw[result.raw["technique"].isin(techs)]
        n = mine.groupby(["technique", "level", "fold", "repeat"]).ngroups
        cols = list(r.columns)
        for i, a in enumerate(cols):
            for b in cols[i + 1:]:
                rows.append({"group": name, "measure": a, "other": b, "r": float(r.loc[a, b]),  # type: ignore[arg-type]  # pandas-stubs: see below
                             "p": float(p.loc[a, b]), "n": n})  # type: ignore[arg-type]  # pandas-stubs: loc[a, b] of these numeric frames is a number
    return pd.DataFrame(rows, columns=["group", "measure", "other", "r", "p", "n"])


def correlations_markdown(corr: pd.DataFrame) -> str:
    """Upper-triangular ``r (p)`` matrices, one per group, laid out as paper 000 Table 6."""
    parts = []
    for name, g in corr.groupby("group", sort=False):
        measures = list(dict.fromkeys([*g["measure"], *g["other"]]))
        cols, rows_ = measures[1:], measures[:-1]
        lines = [f"**{name}** ({int(g['n'].iloc[0])} runs)", "",
                 "| measure | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        cell = {(a, b): (r, p) for a, b, r, p in zip(g["measure"], g["other"], g["r"], g["p"], strict=True)}
        for a in rows_:
            out = []
            for b in cols:
                if (a, b) not in cell:
                    out.append("")
                    continue
                r, p = cell[(a, b)]
                out.append("n/a" if math.isnan(r) else f"{r:.2f} ({p:.2f})")
            lines.append(f"| {a} | " + " | ".join(out) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"
