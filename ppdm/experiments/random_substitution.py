"""Experiments of paper 001 §5 (Dowd, Xu & Zhang 2006) for random substitution.

* :func:`error_experiment` — §5.1, Fig. 2: estimation error ``E`` of the distribution
  estimate over γ ∈ {2..21} × N ∈ {5, 10, 15, 20, 30, ..., 100} on two synthetic
  single-attribute datasets with domain 1..200, with and without the error-reduction
  heuristic (five perturbations per cell, averaged).
* :func:`tree_experiment` — §5.2, Figs. 4–5: accuracy on a held-out test set of decision
  trees learned from MR-reconstructed training data, against γ, N and H(M).

The paper's two synthetic distributions are "similar to those studied in" Agrawal &
Srikant (2000), whose reconstruction figures use a *plateau* and a *triangles* shape; the
exact generators are not given, so :func:`synthetic_attribute` documents ppdm's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize.perturbation_matrix import gamma_diagonal, keep_probability, matrix_entropy
from ppdm.anonymize.random_substitution import RandomSubstitution, equal_width_edges, substitute
from ppdm.anonymize.reconstruct import (
    clip_negative,
    estimate_counts,
    estimation_error,
    reconstruct,
    reduce_error,
)
from ppdm.data.io import save_figure
from ppdm.errors import ParameterError
from ppdm.utils import check_random_state

GAMMAS: tuple[int, ...] = tuple(range(2, 22))
NS: tuple[int, ...] = (5, 10, 15, 20, *range(30, 101, 10))
DOMAIN = (1, 200)
TREE_DATASETS: tuple[str, ...] = ("wine", "wbc", "banknote")
Progress = Callable[[int], None] | None


# ------------------------------------------------------------------ synthetic data
def synthetic_attribute(kind: str, n: int = 10_000, random_state: Any = 0) -> np.ndarray:
    """A single integer attribute on 1..200 (001 §5.1).

    ``"plateau"``: uniform on the middle half 51..150, nothing outside.
    ``"triangles"``: an equal mixture of two triangular densities, on 1..100 peaking at 50
    and on 101..200 peaking at 150.
    """
    rng = check_random_state(random_state)
    if kind == "plateau":
        return rng.integers(51, 151, n)
    if kind == "triangles":
        left = rng.random(n) < 0.5
        v = np.where(left, rng.triangular(0.5, 50.5, 100.5, n), rng.triangular(100.5, 150.5, 200.5, n))
        return np.clip(np.rint(v), 1, 200).astype(np.int64)
    raise ParameterError(f"unknown synthetic distribution {kind!r}; use 'plateau' or 'triangles'")


def _check_grid(gammas: Sequence[float], ns: Sequence[int], repeats: int) -> None:
    if not gammas or not ns:
        raise ParameterError("the γ and N grids must not be empty")
    if any(g <= 1 for g in gammas):
        raise ParameterError("every γ must be greater than 1")
    if any(int(n) < 2 for n in ns):
        raise ParameterError("every N must be at least 2")
    if repeats < 1:
        raise ParameterError(f"repeats must be at least 1, got {repeats}")


# -------------------------------------------------------------- §5.1 error surface
def error_experiment(
    *,
    datasets: Sequence[str] = ("plateau", "triangles"),
    gammas: Sequence[float] = GAMMAS,
    ns: Sequence[int] = NS,
    n_records: int = 10_000,
    repeats: int = 5,
    random_state: int = 0,
    progress: Progress = None,
) -> pd.DataFrame:
    """Estimation error ``E`` (001 §5.1) for every dataset × γ × N, averaged over ``repeats``.

    Columns: ``dataset, gamma, N, entropy, keep_probability, error_raw`` (``M⁻¹y``),
    ``error_clipped`` (negatives set to zero, Proposition 1), ``error_heuristic`` (clipped,
    rescaled to n, whole counts — what MR uses) and ``reduction`` (1 − heuristic/raw).
    The domain 1..200 is cut into N equal-width bins over [0.5, 200.5], so every integer
    belongs to exactly one bin.
    """
    _check_grid(gammas, ns, repeats)
    rows = []
    for d_i, name in enumerate(datasets):
        values = synthetic_attribute(name, n_records, random_state + 1000 * d_i)
        for n_bins in ns:
            edges = equal_width_edges(DOMAIN[0] - 0.5, DOMAIN[1] + 0.5, int(n_bins))
            idx = np.searchsorted(edges[1:-1], values, side="right")
            x = np.bincount(idx, minlength=int(n_bins)).astype(float)
            for g in gammas:
                m = gamma_diagonal(g, int(n_bins))
                rng = np.random.default_rng([random_state, d_i, int(n_bins), int(round(g * 1000))])
                raw, clip, heur = [], [], []
                for _ in range(repeats):
                    y = np.bincount(substitute(idx, m, rng), minlength=int(n_bins)).astype(float)
                    xhat = estimate_counts(y, m, gamma=g)
                    raw.append(estimation_error(xhat, x))
                    clip.append(estimation_error(clip_negative(xhat), x))
                    heur.append(estimation_error(reduce_error(xhat, n_records), x))
                rows.append({
                    "dataset": name, "gamma": g, "N": int(n_bins),
                    "entropy": matrix_entropy(g, int(n_bins)), "keep_probability": keep_probability(g, int(n_bins)),
                    "error_raw": float(np.mean(raw)), "error_clipped": float(np.mean(clip)),
                    "error_heuristic": float(np.mean(heur)),
                })
                if progress:
                    progress(1)
    out = pd.DataFrame(rows)
    out["reduction"] = 1.0 - out["error_heuristic"] / out["error_raw"]
    return out


# ------------------------------------------------------------- §5.2 tree accuracy
def default_learner() -> Any:
    """The tree learner used when none is given: ``ppdm.trees.C45Classifier`` with J48's
    defaults, the C4.5 learner of paper 001 §5.2 (imported when first needed)."""
    from ppdm.trees import C45Classifier

    return C45Classifier()


def _new_learner(learner: Any) -> Any:
    from sklearn.base import clone

    if learner is None:
        return default_learner()
    if hasattr(learner, "fit"):
        return clone(learner)
    if callable(learner):
        return learner()
    raise ParameterError(f"learner must be an estimator or a function returning one, got {learner!r}")


def _accuracy(learner: Any, train: pd.DataFrame, test: pd.DataFrame, cls: str) -> float:
    model = _new_learner(learner)
    model.fit(train.drop(columns=[cls]), train[cls])
    pred = model.predict(test.drop(columns=[cls]))
    return float(np.mean(np.asarray(pred) == test[cls].to_numpy()))


@dataclass
class _Split:
    name: str
    train: pd.DataFrame
    test: pd.DataFrame
    schema: Any


def _split(name: str, test_fraction: float, seed: int) -> _Split:
    from sklearn.model_selection import train_test_split

    from ppdm.data.datasets import load

    df, schema = load(name, missing="drop")
    cls = schema.require_class()
    train, test = train_test_split(df, test_size=test_fraction, stratify=df[cls], random_state=seed)
    return _Split(name, train.reset_index(drop=True), test.reset_index(drop=True), schema)


def tree_experiment(
    *,
    datasets: Sequence[str] = TREE_DATASETS,
    gammas: Sequence[float] = GAMMAS,
    ns: Sequence[int] = NS,
    repeats: int = 5,
    test_fraction: float = 0.3,
    learner: Any = None,
    random_state: int = 0,
    progress: Progress = None,
) -> pd.DataFrame:
    """Accuracy of trees learned from reconstructed data (001 §5.2, Figs. 4–5).

    For each dataset a stratified train/test split is drawn once. For every γ × N the
    training set's attributes are perturbed (RSP, class untouched), rebuilt with MR and a
    tree is learned and scored on the original test set; repeated ``repeats`` times.
    ``learner`` is an estimator (cloned for every fit) or a factory; default
    :func:`default_learner`. Columns: ``dataset, gamma, N, entropy, accuracy``,
    ``accuracy_std``, ``accuracy_perturbed`` (tree learned from the release without
    reconstruction) and ``accuracy_original`` (tree learned from the original training set).
    """
    _check_grid(gammas, ns, repeats)
    if not 0 < test_fraction < 1:
        raise ParameterError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    rows = []
    for d_i, name in enumerate(datasets):
        sp = _split(name, test_fraction, random_state)
        cls = sp.schema.class_column
        base = _accuracy(learner, sp.train, sp.test, cls)
        for n_bins in ns:
            for g in gammas:
                acc, acc_p = [], []
                for r in range(repeats):
                    seed = int(np.random.default_rng([random_state, d_i, int(n_bins), int(round(g * 1000)), r])
                               .integers(2**31))
                    t = RandomSubstitution(class_column=cls, schema=sp.schema, gamma=g, n_bins=int(n_bins),
                                           random_state=seed)
                    z = t.fit_transform(sp.train)
                    rec = reconstruct(z, t.metadata_, random_state=seed)
                    acc.append(_accuracy(learner, rec, sp.test, cls))
                    acc_p.append(_accuracy(learner, z, sp.test, cls))
                rows.append({
                    "dataset": name, "gamma": g, "N": int(n_bins), "entropy": matrix_entropy(g, int(n_bins)),
                    "accuracy": float(np.mean(acc)), "accuracy_std": float(np.std(acc)),
                    "accuracy_perturbed": float(np.mean(acc_p)), "accuracy_original": base,
                })
                if progress:
                    progress(1)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- tables and plots
def _pivot_md(df: pd.DataFrame, value: str, gammas: Sequence[float], fmt: str = "{:.3f}") -> str:
    sub = df[df["gamma"].isin(gammas)]
    piv = sub.pivot_table(index="N", columns="gamma", values=value)
    head = "| N \\ γ | " + " | ".join(f"{g:g}" for g in piv.columns) + " |"
    sep = "|---|" + "---|" * len(piv.columns)
    lines = [head, sep]
    for n, row in piv.iterrows():
        lines.append(f"| {n} | " + " | ".join(fmt.format(v) for v in row.to_numpy()) + " |")
    return "\n".join(lines)


def _show_gammas(gammas: Sequence[float]) -> list[float]:
    want = [2, 5, 8, 12, 16, 21]
    chosen = [g for g in gammas if g in want]
    return chosen or list(gammas)[:: max(1, len(gammas) // 6)]


def _grid_heatmap(fig: Any, ax: Any, df: pd.DataFrame, value: str, title: str, **scale: float) -> None:
    """``value`` over the N × γ grid as a colour map with its colour bar (001 Figs. 2 and 4);
    ``scale`` passes ``vmin``/``vmax`` so panels can share one colour range."""
    piv = df.pivot_table(index="N", columns="gamma", values=value)
    im = ax.imshow(piv.to_numpy(), aspect="auto", origin="lower", cmap="viridis", **scale)
    ax.set_xticks(range(len(piv.columns)), [f"{g:g}" for g in piv.columns], fontsize=7)
    ax.set_yticks(range(len(piv.index)), [str(n) for n in piv.index], fontsize=7)
    ax.set_xlabel("γ")
    ax.set_ylabel("N")
    ax.set_title(title)
    fig.colorbar(im, ax=ax)


def error_report(results: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Write ``error_results.csv``, ``error_summary.md`` and one PNG per dataset to ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ppdm.data.io import atomic_write_text, write_table

    out = _out_dir(out_dir)
    paths = [write_table(results, out / "error_results.csv")]
    gs = _show_gammas(sorted(results["gamma"].unique()))
    parts = ["# Estimation error of random substitution (paper 001 §5.1, Fig. 2)", ""]
    for name, df in results.groupby("dataset", sort=False):
        parts += [f"## {name}: E without the heuristic (M⁻¹y)", "", _pivot_md(df, "error_raw", gs), "",
                  f"## {name}: E with the heuristic (clip, rescale, whole counts)", "",
                  _pivot_md(df, "error_heuristic", gs), ""]
    s = results.groupby("dataset", sort=False).agg(
        raw=("error_raw", "mean"), heuristic=("error_heuristic", "mean"),
        median_reduction=("reduction", "median"), cells_improved=("reduction", lambda r: float(np.mean(r > 0))))
    parts += ["## Summary over the grid", "", "| dataset | mean E raw | mean E heuristic | median reduction | share of cells improved |",
              "|---|---|---|---|---|"]
    parts += [f"| {i} | {r.raw:.3f} | {r.heuristic:.3f} | {r.median_reduction:.1%} | {r.cells_improved:.1%} |"
              for i, r in s.iterrows()]
    paths.append(atomic_write_text(out / "error_summary.md", "\n".join(parts) + "\n"))
    for name, df in results.groupby("dataset", sort=False):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        vmax = float(df["error_raw"].max())
        for ax, col, title in ((axes[0], "error_raw", "E without heuristic"),
                               (axes[1], "error_heuristic", "E with heuristic")):
            _grid_heatmap(fig, ax, df, col, f"{name}: {title}", vmin=0, vmax=vmax)
        for n_bins, sub in df.groupby("N"):
            axes[2].plot(sub["gamma"], sub["reduction"] * 100, label=f"N={n_bins}", lw=1)
        axes[2].set_xlabel("γ")
        axes[2].set_ylabel("reduction of E by the heuristic (%)")
        axes[2].legend(fontsize=6, ncol=2)
        fig.tight_layout()
        save_figure(fig, out / f"error_{name}.png")
        paths.append(out / f"error_{name}.png")
    return paths


def tree_report(results: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Write ``tree_results.csv``, ``tree_summary.md``, ``tree_accuracy.png`` (Fig. 4) and
    ``tree_entropy.png`` (Fig. 5) to ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ppdm.data.io import atomic_write_text, write_table

    out = _out_dir(out_dir)
    paths = [write_table(results, out / "tree_results.csv")]
    gs = _show_gammas(sorted(results["gamma"].unique()))
    avg = results.groupby(["gamma", "N"], as_index=False).agg(accuracy=("accuracy", "mean"), entropy=("entropy", "first"))
    parts = ["# Accuracy of trees learned from reconstructed data (paper 001 §5.2, Figs. 4–5)", ""]
    base = results.groupby("dataset", sort=False).agg(
        original=("accuracy_original", "first"), reconstructed=("accuracy", "mean"),
        best=("accuracy", "max"), worst=("accuracy", "min"), perturbed=("accuracy_perturbed", "mean"))
    parts += ["| dataset | original | mean reconstructed | best | worst | mean without reconstruction |",
              "|---|---|---|---|---|---|"]
    parts += [f"| {i} | {r.original:.3f} | {r.reconstructed:.3f} | {r.best:.3f} | {r.worst:.3f} | {r.perturbed:.3f} |"
              for i, r in base.iterrows()]
    parts += [""]
    for name, df in results.groupby("dataset", sort=False):
        parts += [f"## {name}: accuracy", "", _pivot_md(df, "accuracy", gs), ""]
    parts += ["## Average over the datasets", "", _pivot_md(avg, "accuracy", gs), ""]
    rho = float(pd.Series(avg["entropy"]).corr(avg["accuracy"], method="spearman"))
    parts += [f"Spearman correlation of average accuracy with H(M) over the grid: {rho:.3f}", ""]
    paths.append(atomic_write_text(out / "tree_summary.md", "\n".join(parts) + "\n"))

    names = list(results["dataset"].unique())
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        df = results[results["dataset"] == name]
        _grid_heatmap(fig, ax, df, "accuracy", f"{name} (original {df['accuracy_original'].iloc[0]:.3f})")
    fig.tight_layout()
    save_figure(fig, out / "tree_accuracy.png")
    paths.append(out / "tree_accuracy.png")

    fig, ax = plt.subplots(figsize=(8, 5))
    sc = ax.scatter(avg["entropy"], avg["accuracy"] * 100, c=avg["N"], cmap="plasma", marker="^", s=18,
                    label="average accuracy (%)")
    ax.scatter(avg["entropy"], avg["gamma"], marker="D", s=8, color="grey", label="γ")
    ax.scatter(avg["entropy"], avg["N"], marker="s", s=8, color="black", label="N")
    ax.set_xlabel("entropy H(M) (bits)")
    ax.set_ylabel("accuracy (%) / γ / N")
    ax.legend(fontsize=8, loc="lower left")
    fig.colorbar(sc, ax=ax, label="N")
    ax.set_title("Entropy vs γ, N and average accuracy (cf. 001 Fig. 5)")
    fig.tight_layout()
    save_figure(fig, out / "tree_entropy.png")
    paths.append(out / "tree_entropy.png")
    return paths


def _out_dir(out_dir: str | Path) -> Path:
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ParameterError(f"output path {str(out)!r} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    return out
