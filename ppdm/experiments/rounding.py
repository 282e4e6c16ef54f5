"""Reproduction of paper 003 (Senavirathne & Torra, rounding for SDC): Tables 1–8.

* Tables 1–3: microaggregation rounding sets (MDAV, OMA, V-MDAV) with k ∈ {167, 100, 50, 34,
  25, 20} on synthetic 2 × 500 data (exponential λ = 0.08, uniform(0, 1), normal(0, 1); §4.1),
  scored by IL metrics, IL1s, IDR, DDR and the IL-DR score (§3.3).
* Tables 4–6: discretization rounding sets (EWD, EFD, KMD, RBD) with c ∈ {3, 5, 10, 15, 20, 25}.
* Table 7: linear regression on Boston housing, every attribute (the response too) rounded;
  MSE and R² of the model trained on rounded data, predicting the original data (§5.2–5.3).
* Table 8: decision trees on Wine: Acc_V (trained and tested on rounded data) and Acc_O (trained
  on rounded data, tested on the original records), 10-fold cross-validation; total Shannon
  entropy of the rounded attributes.

The IL/DR measures are injected as a dict name → ``f(x, z)`` returning an object with
``.value``; by default they are taken from :mod:`ppdm.metrics.info_loss` (``il_metrics``,
``il1s``) and :mod:`ppdm.metrics.risk` (``ddr``, ``idr``, ``il_dr_score``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.tree import DecisionTreeClassifier

from ppdm.anonymize.rounding import Rounding
from ppdm.errors import PPDMError

MeasureFn = Callable[[pd.DataFrame, pd.DataFrame], Any]
MEASURES = ("il_metrics", "il1s", "idr", "ddr", "il_dr_score")

MA_K = (167, 100, 50, 34, 25, 20)
DISC_C = (3, 5, 10, 15, 20, 25)
ML_K = (2, 3, 5, 7, 10, 15, 20, 25)
ML_C = (3, 5, 10, 15, 20, 30)

# paper label → Rounding method
MA_METHODS = {"MDAV": "mdav", "OMA": "optimal", "VMDAV": "vmdav"}
DISC_METHODS = {"EWD": "equal-width", "EFD": "equal-frequency", "KMD": "kmeans", "RBD": "resampling"}
DISTRIBUTIONS = ("exponential", "uniform", "normal")


def default_measures() -> dict[str, MeasureFn]:
    """The IL/DR measures of paper 003 §3.3 from :mod:`ppdm.metrics`."""
    try:
        from ppdm.metrics.info_loss import il1s, il_metrics
        from ppdm.metrics.risk import ddr, idr, il_dr_score
    except ImportError as e:
        raise PPDMError(
            f"the IL/DR measures are not available ({e}); they live in ppdm.metrics.info_loss and ppdm.metrics.risk"
        ) from None
    return {"il_metrics": il_metrics, "il1s": il1s, "idr": idr, "ddr": ddr, "il_dr_score": il_dr_score}


def _value(r: Any) -> float:
    return float(getattr(r, "value", r))


def synthetic(distribution: str, n: int = 500, m: int = 2, seed: int = 0) -> pd.DataFrame:
    """Synthetic m × n data of paper 003 §4.1: exponential (λ = 0.08), uniform(0, 1) or normal(0, 1)."""
    rng = np.random.default_rng(seed)
    if distribution == "exponential":
        x = rng.exponential(1 / 0.08, size=(n, m))
    elif distribution == "uniform":
        x = rng.uniform(0.0, 1.0, size=(n, m))
    elif distribution == "normal":
        x = rng.normal(0.0, 1.0, size=(n, m))
    else:
        raise PPDMError(f"unknown distribution {distribution!r}; choose exponential, uniform or normal")
    return pd.DataFrame(x, columns=[f"x{j + 1}" for j in range(m)])


def shannon_entropy(values: Iterable[Any]) -> float:
    """H = −Σ p_v log2 p_v over the distinct values (bits; paper 003 §5.3)."""
    _, counts = np.unique(np.asarray(list(values) if not isinstance(values, np.ndarray) else values), return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def total_entropy(df: pd.DataFrame) -> float:
    """Sum of the Shannon entropies of the columns (paper 003 Table 8, "Entropy")."""
    return float(sum(shannon_entropy(df[c].to_numpy()) for c in df.columns))


def mean_abs_correlation(df: pd.DataFrame) -> float:
    """Mean |r_ij| over pairs i < j of the correlation matrix (paper 003 Table 7)."""
    # a column the method made constant has no correlation: its pairs come out NaN and nanmean
    # leaves them out, so NumPy's 0/0 warning says nothing the result does not
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.corrcoef(df.to_numpy(dtype=float), rowvar=False)
    iu = np.triu_indices_from(r, k=1)
    return float(np.nanmean(np.abs(r[iu])))


@dataclass
class Setup:
    """What to run: sizes, seed, synthetic size and the progress callback."""

    seed: int = 0
    n: int = 500
    ma_k: tuple[int, ...] = MA_K
    disc_c: tuple[int, ...] = DISC_C
    ml_k: tuple[int, ...] = ML_K
    ml_c: tuple[int, ...] = ML_C
    cv: int = 10
    advance: Callable[[str], None] = field(default=lambda _msg: None)

    @classmethod
    def quick(cls, **kw: Any) -> Setup:
        """A small run for tests: two sizes per family, 100 records, 3 folds."""
        return cls(n=100, ma_k=(34, 20), disc_c=(3, 5), ml_k=(5, 10), ml_c=(3, 5), cv=3, **kw)

    def steps(self) -> int:
        sdc = len(DISTRIBUTIONS) * (len(MA_METHODS) * len(self.ma_k) + len(DISC_METHODS) * len(self.disc_c))
        ml = len(MA_METHODS) * (len(self.ml_k) + 1) + len(DISC_METHODS) * (len(self.ml_c) + 1) + 1
        return sdc + ml + (ml + 2)


def _rounding(method: str, size: dict[str, Any], seed: int, class_column: str | None = None) -> Rounding:
    return Rounding(method=method, class_column=class_column, random_state=seed, **size)


# ------------------------------------------------------------------ Tables 1–6
def sdc_table(
    x: pd.DataFrame, methods: dict[str, str], sizes: Iterable[int], size_name: str,
    measures: dict[str, MeasureFn], setup: Setup, label: str,
) -> pd.DataFrame:
    """IL metrics, IL1s, IDR, DDR and IL-DR score of each method and size (paper 003 Tables 1–6)."""
    rows = []
    for name, method in methods.items():
        for s in sizes:
            z = _rounding(method, {size_name: int(s)}, setup.seed).fit_transform(x)
            row: dict[str, Any] = {"method": f"{name} {label}", size_name: int(s)}
            for key, title in (("il_metrics", "IL metrics"), ("il1s", "IL1s"), ("idr", "IDR"), ("ddr", "DDR"),
                               ("il_dr_score", "IL-DR score")):
                row[title] = _value(measures[key](x, z))
            rows.append(row)
            setup.advance(f"{name} {label} {size_name}={s}")
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- Table 7
def _configs(setup: Setup) -> list[tuple[str, str, dict[str, Any], str]]:
    out: list[tuple[str, str, dict[str, Any], str]] = []
    for name, method in MA_METHODS.items():
        out += [(name, method, {"k": k}, str(k)) for k in setup.ml_k]
        out.append((name, method, {"k": "fd"}, "Freedman–Diaconis rule"))
    for name, method in DISC_METHODS.items():
        out += [(name, method, {"c": c}, str(c)) for c in setup.ml_c]
        out.append((name, method, {"c": "fd"}, "Freedman–Diaconis rule"))
    return out


def regression_table(measures: dict[str, MeasureFn], setup: Setup) -> pd.DataFrame:
    """Linear regression on Boston housing (paper 003 Table 7).

    Every attribute, the response medv included, is rounded (the paper's "fully masked"
    setting, §5.2); the model is fitted on the rounded data and predicts the original records;
    MSE and R² compare those predictions with the original response.
    """
    from ppdm.datasets import load

    df, _ = load("boston")
    df = df.astype(float)
    target = "medv"
    feats = [c for c in df.columns if c != target]

    def fit_score(train: pd.DataFrame) -> tuple[float, float]:
        lr = LinearRegression().fit(train[feats], train[target])
        pred = lr.predict(df[feats])
        resid = df[target].to_numpy() - pred
        mse = float(np.mean(resid**2))
        r2 = 1 - float((resid**2).sum() / ((df[target] - df[target].mean()) ** 2).sum())
        return mse, r2

    mse, r2 = fit_score(df)
    rows = [{"method": "Original model", "k/c": "", "MSE": mse, "R2": r2, "Mean absolute correlation":
             mean_abs_correlation(df), "IL metrics": 0.0, "IL1s": 0.0}]
    setup.advance("boston original")
    for name, method, size, label in _configs(setup):
        z = _rounding(method, size, setup.seed).fit_transform(df)
        mse, r2 = fit_score(z)
        rows.append({"method": name, "k/c": label, "MSE": mse, "R2": r2,
                     "Mean absolute correlation": mean_abs_correlation(z),
                     "IL metrics": _value(measures["il_metrics"](df, z)), "IL1s": _value(measures["il1s"](df, z))})
        setup.advance(f"boston {name} {label}")
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- Table 8
def tree_accuracies(xo: pd.DataFrame, xr: pd.DataFrame, y: np.ndarray, setup: Setup) -> tuple[float, float]:
    """(Acc_V, Acc_O): mean fold accuracy of trees trained on rounded data, tested on the rounded
    and on the original test records (paper 003 §5.1). The tree mimics rpart's defaults
    (minsplit 20, minbucket 7), the learner the paper used."""
    folds = StratifiedKFold(n_splits=setup.cv, shuffle=True, random_state=setup.seed)
    acc_v, acc_o = [], []
    for tr, te in folds.split(xo, y):
        tree = DecisionTreeClassifier(min_samples_split=20, min_samples_leaf=7, random_state=setup.seed)
        tree.fit(xr.iloc[tr], y[tr])
        acc_v.append(float((tree.predict(xr.iloc[te]) == y[te]).mean()))
        acc_o.append(float((tree.predict(xo.iloc[te]) == y[te]).mean()))
    return float(np.mean(acc_v)), float(np.mean(acc_o))


def tree_table(measures: dict[str, MeasureFn], setup: Setup) -> pd.DataFrame:
    """Decision trees on Wine (paper 003 Table 8); the class is never rounded."""
    from ppdm.datasets import load

    df, schema = load("wine")
    cls = schema.class_column or "class"
    attrs = [c for c in df.columns if c != cls]
    xo = df[attrs].astype(float)
    y = df[cls].to_numpy()
    acc_v, acc_o = tree_accuracies(xo, xo, y, setup)
    rows = [{"method": "Original model", "k/c": "", "Acc_V": acc_v, "Acc_O": acc_o, "Entropy": total_entropy(xo),
             "IL metrics": 0.0, "IL1s": 0.0}]
    setup.advance("wine original")
    data = pd.concat([xo, df[[cls]]], axis=1)
    configs = _configs(setup) + [("MDLP", "mdlp", {}, ""), ("ChiM", "chimerge", {}, "")]
    for name, method, size, label in configs:
        z = _rounding(method, size, setup.seed, class_column=cls).fit_transform(data)[attrs]
        acc_v, acc_o = tree_accuracies(xo, z, y, setup)
        rows.append({"method": name, "k/c": label, "Acc_V": acc_v, "Acc_O": acc_o, "Entropy": total_entropy(z),
                     "IL metrics": _value(measures["il_metrics"](xo, z)), "IL1s": _value(measures["il1s"](xo, z))})
        setup.advance(f"wine {name} {label}")
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------ driver
def trend_summary(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Does IL fall and DR rise as groups shrink (paper 003 §4.4–4.5)? Spearman ρ of IL1s and of
    IDR against the group size (k, or n/c) for each method of Tables 1–6."""
    from scipy.stats import spearmanr

    rows = []
    for name, t in tables.items():
        if "IL1s" not in t or "IDR" not in t or not ({"k", "c"} & set(t.columns)):
            continue
        for method, g in t.groupby("method", sort=False):
            size = g["k"] if "k" in g else 1.0 / g["c"]
            if len(g) < 2:
                continue
            with warnings.catch_warnings():  # a constant column (e.g. IDR = 0 throughout) has no ρ
                warnings.simplefilter("ignore")
                rho_il = spearmanr(size, g["IL1s"]).statistic
                rho_dr = spearmanr(size, g["IDR"]).statistic
            rows.append({"table": name, "method": method, "rho(IL1s, group size)": rho_il,
                         "rho(IDR, group size)": rho_dr,
                         "IL falls and DR rises as groups shrink": bool(rho_il > 0 and rho_dr < 0)})
    return pd.DataFrame(rows)


def to_markdown(df: pd.DataFrame, digits: int = 2) -> str:
    """A pipe table with numbers to ``digits`` decimals (as the paper prints them)."""
    def fmt(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if math.isnan(v) else f"{v:.{digits}f}"
        return str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body]) + "\n"


def run_rounding(setup: Setup | None = None, measures: dict[str, MeasureFn] | None = None) -> dict[str, pd.DataFrame]:
    """Compute Tables 1–8 of paper 003 (and a trend summary); returns name → table."""
    setup = setup or Setup()
    measures = dict(measures) if measures is not None else default_measures()
    missing = sorted(set(MEASURES) - set(measures))
    if missing:
        raise PPDMError(f"measures {missing} were not supplied")
    tables: dict[str, pd.DataFrame] = {}
    for i, dist in enumerate(DISTRIBUTIONS):
        x = synthetic(dist, n=setup.n, seed=setup.seed + i)
        tables[f"table{i + 1}"] = sdc_table(x, MA_METHODS, setup.ma_k, "k", measures, setup, dist)
        tables[f"table{i + 4}"] = sdc_table(x, DISC_METHODS, setup.disc_c, "c", measures, setup, dist)
    tables = {k: tables[k] for k in sorted(tables)}
    tables["table7"] = regression_table(measures, setup)
    tables["table8"] = tree_table(measures, setup)
    tables["trends"] = trend_summary(tables)
    return tables


TITLES = {
    "table1": "Table 1 — microaggregation, exponential data",
    "table2": "Table 2 — microaggregation, uniform data",
    "table3": "Table 3 — microaggregation, normal data",
    "table4": "Table 4 — discretization, exponential data",
    "table5": "Table 5 — discretization, uniform data",
    "table6": "Table 6 — discretization, normal data",
    "table7": "Table 7 — linear regression on Boston housing",
    "table8": "Table 8 — decision trees on Wine",
    "trends": "Trends — IL against DR as groups shrink",
}


def write_tables(tables: dict[str, pd.DataFrame], out_dir: str | Path) -> list[Path]:
    """Write every table as CSV and Markdown, plus ``tables.md`` holding them all (atomic writes)."""
    from ppdm.data.io import atomic_write_text, write_table

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    parts = []
    for name, t in tables.items():
        write_table(t, out / f"{name}.csv")
        md = f"### {TITLES.get(name, name)}\n\n{to_markdown(t)}"
        atomic_write_text(out / f"{name}.md", md)
        written += [out / f"{name}.csv", out / f"{name}.md"]
        parts.append(md)
    atomic_write_text(out / "tables.md", "\n".join(parts))
    written.append(out / "tables.md")
    return written
