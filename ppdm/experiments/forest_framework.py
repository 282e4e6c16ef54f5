"""Paper 004 §7, Fig. 2: prediction accuracy of forests built from perturbed data.

For every dataset a 10-fold cross-validation is run. Each training fold is perturbed
10 times by each technique — Forest Framework (FF), Framework (F), GADP and the
Random Technique (RT) — a forest is built from every perturbed training set and its
accuracy measured on the untouched test fold. "Original" is the forest built from the
unperturbed training fold. The fold's accuracy for a technique is the mean over its
perturbations; the dataset's is the mean over folds (paper 004 §7).

Forests are SysFor with the paper's settings (3 trees, goodness 0.50, separation 0.30,
confidence 0.25, minimum gain ratio 0.01, Table 3 minimum leaf sizes). The paper
combines the trees' predictions by "Credal Voting", which its cited source does not
define; this experiment uses majority voting (``combiner="majority"``, the vote of
SysFor's reference implementation; ties to the larger summed leaf confidence).
Framework's tree is C4.5 with the same minimum leaf size and confidence. GADP is the
papers' unbounded GADP (``clip_to_range=False, round_integers=False``), as the paper
compares against it; ppdm's default GADP keeps its draws in each attribute's domain.
``learner="cart"`` swaps in bagged CART forests and CART trees for a quick check.

With ``structure=True`` every perturbed training fold is also scored as in paper 004 §7
(Figs. 3–4, Table 4): EDUDS (§4) and EDUSC (§5) compare the forest grown on the release
with the forest of the unperturbed training fold, and SERS (§6) compares the release with
the training fold record by record.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, StratifiedKFold

from ppdm.data.io import save_figure
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError

PAPER_MIN_LEAF: dict[str, int] = {"wine": 10, "wbc": 45, "credit": 30, "cmc": 60, "abalone": 180}
PAPER_DATASETS: tuple[str, ...] = tuple(PAPER_MIN_LEAF)
TECHNIQUES: tuple[str, ...] = ("FF", "F", "GADP", "RT")
STRUCTURE_MEASURES: tuple[str, ...] = ("eduds", "edusc", "sers")
LEARNERS = ("sysfor", "cart")

# paper 004 §7 SysFor settings (minimum leaf size per dataset)
SYSFOR_SETTINGS: dict[str, Any] = dict(n_trees=3, goodness=0.5, separation=0.3, cf=0.25, min_gain_ratio=0.01,
                                       combiner="majority")


@dataclass
class Learners:
    """How forests, Framework's tree and DETECTIVE's trees are grown for a minimum leaf size."""

    name: str
    forest: Callable[[int], Any]
    tree: Callable[[int], Any] | None


def learners(name: str) -> Learners:
    """``"sysfor"``: SysFor forests and C4.5 trees (the paper's); ``"cart"``: bagged CART."""
    if name == "sysfor":
        from ppdm.anonymize._learners import paper_learner

        return Learners(
            "SysFor (paper 004 settings, majority vote) / C4.5",
            lambda m: paper_learner("SysForClassifier", min_leaf=m, **SYSFOR_SETTINGS),
            None,  # Framework's default: C4.5 with min_leaf
        )
    if name == "cart":
        from ppdm.trees.cart import CARTClassifier
        from ppdm.trees.cart_forest import CARTForest

        return Learners(
            "bagged CART (3 trees) / CART",
            lambda m: CARTForest(n_trees=3, min_leaf=m, random_state=0),
            lambda m: CARTClassifier(min_samples_leaf=m, max_depth=None),
        )
    raise ParameterError(f"learner must be one of {LEARNERS}, got {name!r}")


@dataclass
class ForestExperimentResult:
    """Accuracies of paper 004 Fig. 2.

    Attributes
    ----------
    runs:
        One row per dataset, technique, fold and repetition: ``accuracy`` on the test fold.
    summary:
        Mean accuracy (%) per dataset (rows) and technique (columns: Original, FF, F, GADP, RT).
    learner:
        Which learners built the forests.
    """

    runs: pd.DataFrame
    summary: pd.DataFrame
    learner: str

    def to_markdown(self) -> str:
        cols = list(self.summary.columns)
        lines = ["| dataset | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for ds, row in self.summary.iterrows():
            lines.append(f"| {ds} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
        return "\n".join(lines) + "\n"

    def structure_summary(self) -> pd.DataFrame:
        """Mean EDUDS, EDUSC and SERS per dataset and technique (paper 004 Figs. 3–4, Table 4):
        the mean over the repetitions of a fold, then over folds. Empty without ``structure=True``."""
        have = [m for m in STRUCTURE_MEASURES if m in self.runs.columns]
        if not have:
            return pd.DataFrame()
        r = self.runs[self.runs["technique"] != "Original"]
        per_fold = r.groupby(["dataset", "technique", "fold"], sort=False)[have].mean()
        out = per_fold.groupby(["dataset", "technique"], sort=False).mean().reset_index()
        return out

    def structure_markdown(self) -> str:
        """One table per measure, datasets as rows and techniques as columns (as paper 004 Table 4)."""
        s = self.structure_summary()
        if s.empty:
            return ""
        parts = []
        titles = {"eduds": "EDUDS (Fig. 3; 1 = same sub-domains)", "edusc": "EDUSC (Fig. 4; 1 = same gain ratios)",
                  "sers": "SERS (Table 4; bits, higher = more secure)"}
        for m in [c for c in STRUCTURE_MEASURES if c in s.columns]:
            wide = s.pivot(index="dataset", columns="technique", values=m)
            wide = wide.reindex(index=list(dict.fromkeys(s["dataset"])),
                                columns=list(dict.fromkeys(s["technique"])))
            cols = list(wide.columns)
            lines = [f"{titles[m]}", "", "| dataset | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
            for ds, row in wide.iterrows():
                lines.append(f"| {ds} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
            parts.append("\n".join(lines))
        return "\n\n".join(parts) + "\n"


def structure_measures(train: pd.DataFrame, z: pd.DataFrame, schema: Schema, forest_x: Any,
                       forest_z: Any) -> dict[str, float]:
    """EDUDS and EDUSC of the forests of x and z, and SERS of z against x (paper 004 §4–6)."""
    from ppdm.metrics.risk import sers, sers_attributes
    from ppdm.metrics.structure import eduds, edusc

    numeric, categorical = sers_attributes(schema)  # ppdm's SERS class policy: the class counts
    return {
        "eduds": float(eduds(train, z, schema=schema, trees_x=forest_x, trees_z=forest_z).value),
        "edusc": float(edusc(train, z, schema=schema, trees_x=forest_x,
                             min_gain_ratio=SYSFOR_SETTINGS["min_gain_ratio"]).value),
        "sers": float(sers(train, z, numeric=numeric, categorical=categorical).value),
    }


def _folds(y: pd.Series, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    if y.value_counts().max() >= k:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # rare classes (abalone) cannot fill every fold
            return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))
    return list(KFold(k, shuffle=True, random_state=seed).split(np.zeros(len(y))))


def _accuracy(model: Any, X: pd.DataFrame, y: pd.Series) -> float:
    return float(np.mean(np.asarray(model.predict(X)) == y.to_numpy()))


def make_techniques(schema: Schema, names: Sequence[str], fitted_forest: Any, lrn: Learners, min_leaf: int) -> dict:
    """The perturbation techniques of Fig. 2, set up for one training fold."""
    from ppdm.anonymize.forest_framework import ForestFramework
    from ppdm.anonymize.framework import Framework
    from ppdm.anonymize.gadp import GADP
    from ppdm.anonymize.random_technique import RandomTechnique

    cls = schema.class_column
    out: dict[str, Any] = {}
    for n in names:
        if n == "FF":
            out[n] = ForestFramework(class_column=cls, schema=schema, forest=fitted_forest, min_leaf=min_leaf)
        elif n == "F":
            tree = None if lrn.tree is None else lrn.tree(min_leaf)
            det = None if lrn.tree is None else lrn.tree(min_leaf)
            out[n] = Framework(class_column=cls, schema=schema, tree=tree, detective_tree=det, min_leaf=min_leaf)
        elif n == "GADP":
            # the paper's comparison technique as Muralidhar et al. define it: unbounded draws
            out[n] = GADP(class_column=cls, schema=schema, clip_to_range=False, round_integers=False)
        elif n == "RT":
            out[n] = RandomTechnique(class_column=cls, schema=schema)
        else:
            raise ParameterError(f"unknown technique {n!r}; choose from {', '.join(TECHNIQUES)}")
    return out


def count_steps(n_datasets: int, folds: int, repeats: int, n_techniques: int = len(TECHNIQUES)) -> int:
    """How many forests :func:`run_forest_experiment` grows (one progress step each)."""
    return n_datasets * folds * (1 + n_techniques * repeats)


def run_forest_experiment(
    datasets: Sequence[str] = PAPER_DATASETS,
    *,
    folds: int = 10,
    repeats: int = 10,
    learner: str = "sysfor",
    techniques: Sequence[str] = TECHNIQUES,
    min_leaf: dict[str, int] | None = None,
    seed: int = 0,
    data: dict[str, tuple[pd.DataFrame, Schema]] | None = None,
    progress: bool = True,
    structure: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> ForestExperimentResult:
    """Run the Fig. 2 experiment.

    Parameters
    ----------
    datasets:
        Shipped dataset names (complete cases are used, as in the paper).
    folds, repeats:
        Cross-validation folds and perturbations per training fold (paper: 10 and 10).
    learner:
        ``"sysfor"`` (paper) or ``"cart"`` (quick stand-in).
    techniques:
        Any of FF, F, GADP, RT.
    min_leaf:
        Minimum leaf size per dataset; default Table 3 of paper 004 (10 for others).
    data:
        Tables to use instead of the shipped ones (name → (table, schema)).
    structure:
        Also score every release with EDUDS, EDUSC and SERS (columns of ``runs``).
    on_step:
        Called with a description after every forest; when given, no progress bar of its own
        is shown (the caller shows one; see :func:`count_steps`).
    """
    if folds < 2 or repeats < 1:
        raise ParameterError(f"folds must be ≥ 2 and repeats ≥ 1, got folds={folds}, repeats={repeats}")
    bad = [t for t in techniques if t not in TECHNIQUES]
    if bad:
        raise ParameterError(f"unknown technique {bad[0]!r}; choose from {', '.join(TECHNIQUES)}")
    lrn = learners(learner)
    tables: dict[str, tuple[pd.DataFrame, Schema]] = {}
    for name in datasets:
        if data is not None and name in data:
            tables[name] = data[name]
        else:
            from ppdm.data.datasets import load

            tables[name] = load(name, missing="drop")
    leaf_sizes = {**PAPER_MIN_LEAF, **(min_leaf or {})}

    rows: list[dict[str, Any]] = []
    total = count_steps(len(tables), folds, repeats, len(techniques))
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  disable=not progress or on_step is not None, transient=False) as bar:
        task = bar.add_task("forest experiment", total=total)
        for name, (df, schema) in tables.items():
            cls = schema.require_class()
            m = int(leaf_sizes.get(name, 10))
            df = df[schema.columns].reset_index(drop=True)
            for f, (tr, te) in enumerate(_folds(df[cls], folds, seed)):
                train, test = df.iloc[tr].reset_index(drop=True), df.iloc[te].reset_index(drop=True)
                Xte, yte = test[schema.attributes], test[cls]
                bar.update(task, description=f"{name} fold {f + 1}/{folds}: Original")
                forest = lrn.forest(m).fit(train[schema.attributes], train[cls])
                rows.append(dict(dataset=name, technique="Original", fold=f, repeat=0,
                                 accuracy=_accuracy(forest, Xte, yte)))
                bar.advance(task)
                if on_step is not None:
                    on_step(f"{name} fold {f + 1}/{folds}: Original")
                for tname, tech in make_techniques(schema, techniques, forest, lrn, m).items():
                    bar.update(task, description=f"{name} fold {f + 1}/{folds}: {tname}")
                    tech.fit(train)
                    for r in range(repeats):
                        tech.set_params(random_state=seed * 1_000_003 + f * 1009 + r)
                        z = tech.transform(train)
                        model = lrn.forest(m).fit(z[schema.attributes], z[cls])
                        row = dict(dataset=name, technique=tname, fold=f, repeat=r,
                                   accuracy=_accuracy(model, Xte, yte))
                        if structure:
                            row.update(structure_measures(train, z, schema, forest, model))
                        rows.append(row)
                        bar.advance(task)
                        if on_step is not None:
                            on_step(f"{name} fold {f + 1}/{folds}: {tname} {r + 1}/{repeats}")
    runs = pd.DataFrame(rows)
    per_fold = runs.groupby(["dataset", "technique", "fold"], sort=False)["accuracy"].mean().reset_index()
    summary = (per_fold.groupby(["dataset", "technique"], sort=False)["accuracy"].mean() * 100).unstack("technique")
    summary = summary[["Original", *[t for t in techniques]]].reindex(list(tables))
    summary.index.name = "dataset"
    return ForestExperimentResult(runs, summary, lrn.name)


def plot_forest_experiment(result: ForestExperimentResult, path: str | Path) -> Path:
    """Grouped bars per dataset and technique: prediction accuracy (paper 004 Fig. 2) and, when
    measured, EDUDS (Fig. 3) and EDUSC (Fig. 4)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    panels: list[tuple[str, pd.DataFrame]] = [("Prediction accuracy (%) — Fig. 2", result.summary)]
    st = result.structure_summary()
    for m, title in (("eduds", "EDUDS — Fig. 3"), ("edusc", "EDUSC — Fig. 4")):
        if m in st.columns:
            wide = st.pivot(index="dataset", columns="technique", values=m)
            panels.append((title, wide.reindex(index=list(result.summary.index),
                                               columns=[c for c in result.summary.columns if c in wide.columns])))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.8), squeeze=False)
    for ax, (title, table) in zip(axes[0], panels, strict=True):
        n = len(table.columns)
        width = 0.8 / max(n, 1)
        pos = np.arange(len(table.index))
        for i, col in enumerate(table.columns):
            ax.bar(pos + i * width - 0.4 + width / 2, table[col].to_numpy(dtype=float), width, label=str(col),
                   hatch="//" if col in ("FF", "F") else None)
        ax.set_xticks(pos, [str(d) for d in table.index])
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path)


def write_outputs(result: ForestExperimentResult, out_dir: str | Path, *, header: str = "") -> list[Path]:
    """Write ``runs.csv``, ``summary.csv``/``summary.md`` (accuracy), ``structure.csv``/``structure.md``
    (EDUDS, EDUSC, SERS when measured) and ``forest_experiment.png`` into ``out_dir``, each atomically."""
    from ppdm.data.io import atomic_write_text, write_table

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    files = [write_table(result.runs, d / "runs.csv"), write_table(result.summary.reset_index(), d / "summary.csv"),
             atomic_write_text(d / "summary.md", header + result.to_markdown())]
    st = result.structure_summary()
    if not st.empty:
        files += [write_table(st, d / "structure.csv"),
                  atomic_write_text(d / "structure.md", header + result.structure_markdown())]
    files.append(plot_forest_experiment(result, d / "forest_experiment.png"))
    return files
