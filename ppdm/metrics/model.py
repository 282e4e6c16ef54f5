"""Model-performance measures: a CART model trained on z against one trained on x, both tested on t.

Paper 000 §3 describes the usual way of judging an anonymized table: build a model
Ψz on z and a model Ψx on x, test both on held-out records t, and compare
Prediction Accuracy ``α(Ψ|t) = (1/|t|) Σ_{r∈t} 1(Ψ(r) = r_C)``, F-measure
``F_β = (1+β²)·precision·recall / (β²·precision + recall)`` (β = 1) and AUC, the area
under the ROC curve. The models are CART trees with the paper's settings (minimum
leaf 0.02·|training table|, maximum depth 12, §7).

Every result carries ``score_x`` (Ψx on t) and ``score_z`` (Ψz on t); ``value`` is the
paper's comparison ``score_x − score_z`` (§4: α(Ψx|t) − α(Ψz|t)), so a positive value
is the performance lost by anonymizing and 0 means no change.

Missing values: CART cannot route a missing value, so each model is trained on the
records of its table that are complete on the attributes, and tested on the complete
records of t (``n_test`` counts them).

AUC and F-measure are defined for two classes with one "positive" (important) label
(§3). ``pos_label`` names it; by default it is the less frequent class of x (the one a
user usually tries to find; ties go to the last class in sorted order). With more than
two classes they are averaged over the classes, one class against the rest, as
``average`` says ("macro", "weighted" or "micro"); without ``average`` the plain mean
over the classes, "macro" (:data:`DEFAULT_MULTICLASS_AVERAGE`), is used and recorded in
the result's ``average``, so every class counts the same however rare it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import fbeta_score, roc_auc_score
from sklearn.model_selection import train_test_split

from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, SchemaError
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.trees._encoding import check_class_labels
from ppdm.trees.cart import CARTClassifier

AUC_AVERAGES = ("macro", "weighted", "micro")
F_AVERAGES = ("binary", "macro", "weighted", "micro")
#: averaging of AUC and F-measure over more than two classes when none is named
DEFAULT_MULTICLASS_AVERAGE = "macro"


@dataclass
class ModelComparison:
    """Ψx and Ψz (CART on x and on z) applied to the test table t."""

    classes: list[Any]
    y_test: np.ndarray
    pred_x: np.ndarray
    pred_z: np.ndarray
    proba_x: np.ndarray  # columns follow ``classes``
    proba_z: np.ndarray
    class_counts_x: dict[Any, int]
    test_source: str = "given"


@dataclass
class ModelMeasureResult(MeasureResult):
    """A model-performance measure of Ψx and Ψz on t; ``value = score_x − score_z``."""

    score_x: float = float("nan")
    score_z: float = float("nan")
    n_test: int = 0
    test_source: str = "given"
    #: the test records in words (which table, how many records, what each model was trained on)
    tested_on: str = ""
    pos_label: Any = None
    average: str | None = None
    classes: list[Any] = field(default_factory=list)


def _sorted(values) -> list[Any]:
    return sorted(values, key=lambda v: (type(v).__name__, v))


def _predictions(model: CARTClassifier, X: pd.DataFrame, classes: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The model's predicted class of each record and its class probabilities in ``classes``'
    order, from one pass of the records through the tree: the prediction is the class of
    highest probability, the first in the model's order on a tie, as scikit-learn's
    ``predict`` takes it."""
    p = model.predict_proba(X)
    pred = model.classes_.take(np.argmax(p, axis=1), axis=0).astype(object)
    out = np.zeros((len(X), len(classes)))
    where = {c: j for j, c in enumerate(classes)}
    for i, c in enumerate(model.classes_):
        out[:, where[c.item() if isinstance(c, np.generic) else c]] = p[:, i]
    return pred, out


def compare_models(
    x: pd.DataFrame,
    z: pd.DataFrame,
    t: pd.DataFrame,
    class_column: str,
    schema: Schema | None = None,
    *,
    min_leaf_frac: float = 0.02,
    max_depth: int | None = 12,
    random_state: int | None = 0,
    test_source: str = "given",
) -> ModelComparison:
    """Train CART on x and on z (paper 000 §7 settings) and predict the records of t
    (complete records only, when some have a missing attribute value)."""
    if schema is None:
        schema = Schema.infer(x, class_column)
    feats = schema.attributes

    def complete(d: pd.DataFrame) -> pd.DataFrame:
        gaps = d[feats].isna().to_numpy().any(axis=1) if feats and isinstance(d, pd.DataFrame) else None
        return d.loc[~gaps] if gaps is not None and gaps.any() else d  # type: ignore[index]  # numpy's stubs: any(axis=1) may be a scalar

    x, z, t = complete(x), complete(z), complete(t)
    for name, d in (("x", x), ("z", z), ("t", t)):
        if not isinstance(d, pd.DataFrame):
            raise SchemaError(f"{name} must be a pandas DataFrame, got {type(d).__name__}")
        missing = [c for c in [*feats, class_column] if c not in d.columns]
        if missing:
            raise SchemaError(f"table {name} lacks column(s) {missing}")
        if len(d) == 0:
            raise SchemaError(f"table {name} has no rows")
    for d in (x, z):
        check_class_labels(d[class_column])  # a continuous class is named, in the data owner's words
    for name, d in (("x", x), ("z", z)):
        if d[class_column].nunique() < 2:
            raise SchemaError(f"class column {class_column!r} has fewer than 2 values in {name}; no model can be trained")
    classes = _sorted(set(pd.unique(x[class_column])) | set(pd.unique(z[class_column])) | set(pd.unique(t[class_column])))
    classes = [c.item() if isinstance(c, np.generic) else c for c in classes]

    def fit(d: pd.DataFrame) -> CARTClassifier:
        return CARTClassifier(min_leaf_frac=min_leaf_frac, max_depth=max_depth, categorical=schema.categorical,
                              random_state=random_state).fit(d[feats], d[class_column].to_numpy())

    mx, mz = fit(x), fit(z)
    tx = t[feats]
    counts = x[class_column].value_counts()
    pred_x, proba_x = _predictions(mx, tx, classes)
    pred_z, proba_z = _predictions(mz, tx, classes)
    return ModelComparison(
        classes=classes,
        y_test=t[class_column].to_numpy(dtype=object),
        pred_x=pred_x,
        pred_z=pred_z,
        proba_x=proba_x,
        proba_z=proba_z,
        class_counts_x={(k.item() if isinstance(k, np.generic) else k): int(v) for k, v in counts.items()},
        test_source=test_source,
    )


def holdout(
    x: pd.DataFrame, z: pd.DataFrame, class_column: str, *, test_size: float = 1 / 3, random_state: int | None = 0
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Split ``x`` into a training part and a test table t, stratified by class and seeded.

    When z has as many rows as x (an anonymized copy, row i of z from row i of x), the
    rows of z that come from t are removed too, so neither model has seen t. Otherwise
    (e.g. synthetic z) all of z is kept. Falls back to an unstratified split when a class
    is too rare to stratify. Returns ``(x_train, z_train, t)``.
    """
    if not 0 < test_size < 1:
        raise ParameterError(f"test_size must lie in (0, 1), got {test_size!r}")
    idx = np.arange(len(x))
    y = x[class_column].to_numpy()
    try:
        train, test = train_test_split(idx, test_size=test_size, random_state=random_state, stratify=y)
    except ValueError:
        try:
            train, test = train_test_split(idx, test_size=test_size, random_state=random_state)
        except ValueError as e:
            raise PPDMError(f"cannot hold out a test set from x: {e}") from None
    train, test = np.sort(train), np.sort(test)
    z_train = z.iloc[train] if len(z) == len(x) else z
    return x.iloc[train], z_train, x.iloc[test]


def _check_average(average: str | None, allowed: tuple[str, ...], what: str) -> None:
    if average is not None and average not in allowed:
        raise ParameterError(f"{what} average must be one of {', '.join(allowed)}; got {average!r}")


def _resolve_pos_label(mc: ModelComparison, pos_label: Any) -> Any:
    if pos_label is None:
        counts = mc.class_counts_x
        return min(_sorted(counts)[::-1], key=lambda c: counts[c])
    if pos_label not in mc.classes:
        # a positive label given on the command line arrives as text
        as_text = {str(c): c for c in mc.classes}
        if str(pos_label) in as_text:
            return as_text[str(pos_label)]
        raise ParameterError(f"positive label {pos_label!r} is not a class; classes: {mc.classes}")
    return pos_label


def _binary(mc: ModelComparison, average: str | None) -> tuple[bool, str | None]:
    """Whether the classes are two, and the averaging to use when they are more."""
    if len(mc.classes) <= 2:
        return True, average
    return False, average or DEFAULT_MULTICLASS_AVERAGE


#: what each model was trained on and t is, by ``test_source``
TESTED_ON = {
    "given": "trained on x and on z, both tested on the {n} records of the test table given (--test)",
    "control": "trained on x and on z, both tested on the {n} records of the control set (people held out before "
               "anonymizing, in neither x's measured part nor z)",
    "holdout": "trained on the rest of x and the same records of z, both tested on the {n} records of x held out "
               "(a stratified part, test_size)",
}


def _result(mc: ModelComparison, sx: float, sz: float, pos: Any, average: str | None) -> ModelMeasureResult:
    n = len(mc.y_test)
    tested = TESTED_ON.get(mc.test_source, "tested on {n} records").format(n=n)
    return ModelMeasureResult(
        value=float(sx - sz), score_x=float(sx), score_z=float(sz), n_test=n,
        test_source=mc.test_source, tested_on=tested, pos_label=pos, average=average, classes=list(mc.classes),
    )


def prediction_accuracy_from(mc: ModelComparison) -> ModelMeasureResult:
    """Prediction Accuracy α(Ψx|t) − α(Ψz|t) from trained models (paper 000 §3–4)."""
    return _result(mc, float(np.mean(mc.pred_x == mc.y_test)), float(np.mean(mc.pred_z == mc.y_test)), None, None)


def _auc(y: np.ndarray, proba: np.ndarray, classes: list[Any], binary: bool, pos: Any, average: str | None) -> float:
    if binary:
        j = classes.index(pos)
        yb = y == pos
        if yb.all() or not yb.any():
            raise MeasureNotApplicable("the test set t holds only one class, so AUC is undefined")
        return float(roc_auc_score(yb, proba[:, j]))
    present = [c for c in classes if (y == c).any()]
    if len(present) < 2:
        raise MeasureNotApplicable("the test set t holds only one class, so AUC is undefined")
    cols = [classes.index(c) for c in present]
    # one-vs-rest over the classes present in t, as scikit-learn's multi_class="ovr"
    Y = np.stack([y == c for c in present], axis=1)
    P = proba[:, cols]
    if average == "micro":
        return float(roc_auc_score(Y.ravel(), P.ravel()))
    aucs = np.array([roc_auc_score(Y[:, j], P[:, j]) for j in range(len(present))])
    if average == "weighted":
        w = Y.sum(axis=0)
        return float(np.sum(aucs * w) / w.sum())
    return float(aucs.mean())


def auc_from(mc: ModelComparison, *, pos_label: Any = None, average: str | None = None) -> ModelMeasureResult:
    """AUC of Ψx on t minus AUC of Ψz on t (paper 000 §3).

    Scores are the CART leaf class frequencies (``predict_proba``). Two classes: the
    ROC of ``pos_label`` against the rest (``average`` is then irrelevant). More
    classes: one-vs-rest AUC averaged as ``average`` says ("macro", the default: plain
    mean, "weighted": by class prevalence in t, "micro": pooled), as scikit-learn's
    ``roc_auc_score(multi_class="ovr")``.
    """
    _check_average(average, AUC_AVERAGES, "AUC")
    binary, average = _binary(mc, average)
    pos = _resolve_pos_label(mc, pos_label) if binary else None
    sx = _auc(mc.y_test, mc.proba_x, mc.classes, binary, pos, average)
    sz = _auc(mc.y_test, mc.proba_z, mc.classes, binary, pos, average)
    return _result(mc, sx, sz, pos, None if binary else average)


def f_measure_from(
    mc: ModelComparison, *, pos_label: Any = None, average: str | None = None, beta: float = 1.0
) -> ModelMeasureResult:
    """F_β of Ψx on t minus F_β of Ψz on t (paper 000 §3; β = 1 as in the paper).

    Two classes and no ``average`` (or ``"binary"``): the F-measure of ``pos_label``.
    Otherwise per-class F-measures averaged as ``average`` says ("macro", the default for
    more than two classes, "weighted", "micro"), as scikit-learn's ``fbeta_score``; an
    undefined precision or recall counts 0.
    """
    _check_average(average, F_AVERAGES, "F-measure")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
        raise ParameterError(f"beta must be a positive number, got {beta!r}")
    if average == "binary":
        average = None
    binary, average = _binary(mc, average)
    y = mc.y_test
    if binary and average is None:
        pos = _resolve_pos_label(mc, pos_label)

        def score(pred: np.ndarray) -> float:
            return float(fbeta_score(y == pos, pred == pos, beta=beta, zero_division=0))
    else:
        pos = None
        labels = [c for c in mc.classes if (y == c).any() or (mc.pred_x == c).any() or (mc.pred_z == c).any()]
        codes = {c: i for i, c in enumerate(mc.classes)}

        def score(pred: np.ndarray) -> float:
            yc = np.array([codes[v] for v in y])
            pc = np.array([codes[v] for v in pred])
            return float(fbeta_score(yc, pc, beta=beta, average=average, labels=[codes[c] for c in labels],
                                     zero_division=0))
    return _result(mc, score(mc.pred_x), score(mc.pred_z), pos, average)


def _comparison(x, z, t, class_column, schema, **kw) -> ModelComparison:
    return compare_models(x, z, t, class_column, schema, **kw)


def prediction_accuracy(
    x: pd.DataFrame, z: pd.DataFrame, t: pd.DataFrame, class_column: str, schema: Schema | None = None, **cart: Any
) -> ModelMeasureResult:
    """Prediction Accuracy of CART trained on z vs on x, both tested on t (paper 000 §3):
    ``value = α(Ψx|t) − α(Ψz|t)``. ``cart`` passes ``min_leaf_frac``, ``max_depth``, ``random_state``."""
    return prediction_accuracy_from(_comparison(x, z, t, class_column, schema, **cart))


def auc(
    x: pd.DataFrame, z: pd.DataFrame, t: pd.DataFrame, class_column: str, schema: Schema | None = None, *,
    pos_label: Any = None, average: str | None = None, **cart: Any,
) -> ModelMeasureResult:
    """AUC of CART trained on z vs on x, both tested on t (paper 000 §3); see :func:`auc_from`."""
    return auc_from(_comparison(x, z, t, class_column, schema, **cart), pos_label=pos_label, average=average)


def f_measure(
    x: pd.DataFrame, z: pd.DataFrame, t: pd.DataFrame, class_column: str, schema: Schema | None = None, *,
    pos_label: Any = None, average: str | None = None, beta: float = 1.0, **cart: Any,
) -> ModelMeasureResult:
    """F-measure of CART trained on z vs on x, both tested on t (paper 000 §3); see :func:`f_measure_from`."""
    return f_measure_from(_comparison(x, z, t, class_column, schema, **cart), pos_label=pos_label,
                          average=average, beta=beta)


# ----------------------------------------------------------------- CLI registration
#: the options :func:`comparison_from_context` reads, shared by the three model measures
MODEL_OPTIONS = ("test_size", "min_leaf_frac", "max_depth")


def comparison_from_context(ctx: EvaluationContext) -> ModelComparison:
    """Ψx and Ψz trained once per context and shared by the three model measures.

    The test records t are, in this order: the test table given (``ctx.test``, ``--test``);
    else the control set (``ctx.control``: the records ``ppdm anonymize --holdout`` held out
    before anonymizing), so Ψx is trained on all of x (the control records already left it)
    and Ψz on all of z, and both are tested on people neither saw — the only honest test of a
    synthetic release, whose records cannot be held out with their originals; else a
    stratified part of x (``test_size``, default 1/3, seeded by ``ctx.random_state``) with the
    same records of z, which needs z's rows paired with x's (:func:`holdout`). The result's
    ``test_source`` says which (``"given"``, ``"control"``, ``"holdout"``) and ``tested_on``
    says it in words. Options: ``test_size``, ``min_leaf_frac`` (0.02), ``max_depth`` (12).
    """
    o = ctx.options
    key = ("model_comparison", o.get("test_size", 1 / 3), o.get("min_leaf_frac", 0.02), o.get("max_depth", 12))
    if key not in ctx.cache:
        cls = ctx.schema.require_class()
        if ctx.test is None and ctx.control is not None:
            # people left out before anonymizing: neither model has seen them, whatever z is
            x, z, t, source = ctx.x, ctx.z, ctx.control, "control"
        elif ctx.test is None and not ctx.paired:
            # the held-out third of x must leave z too; without the pairing z would train on their records
            raise MeasureNotApplicable("holds out a third of x and the same records of z, but z's rows are not paired "
                                       "with x's: give a test table with --test, a control set (ppdm anonymize "
                                       "--holdout, or --control), the release's private log (--private), or "
                                       "--pairing position")
        elif ctx.test is None:
            x, z, t = holdout(ctx.x, ctx.z, cls, test_size=key[1], random_state=ctx.random_state)
            source = "holdout"
        else:
            x, z, t, source = ctx.x, ctx.z, ctx.test, "given"
        ctx.cache[key] = compare_models(x, z, t, cls, ctx.schema, min_leaf_frac=key[2], max_depth=key[3],
                                        random_state=ctx.random_state, test_source=source)
    return ctx.cache[key]


@register_measure(
    "prediction_accuracy", kind="utility", default=True, options=MODEL_OPTIONS,
    description="Prediction Accuracy α(Ψx|t) − α(Ψz|t) of CART trained on x and on z (paper 000 §3)",
    direction="lower", value_range=(-1.0, 1.0), threshold=0.02,
    meaning="0 means a model trained on z classifies the test records as well as one trained on x; 0.02 means it "
    "gets 2 % more of them wrong (below 0: z happened to give the better model).",
)
def _prediction_accuracy_measure(ctx: EvaluationContext) -> ModelMeasureResult:
    return prediction_accuracy_from(comparison_from_context(ctx))


@register_measure(
    "auc", kind="utility", default=True, options=(*MODEL_OPTIONS, "pos_label", "average"),
    description="AUC of CART trained on x minus that of CART trained on z, tested on t (paper 000 §3); "
    "more than two classes: macro average",
    direction="lower", value_range=(-1.0, 1.0), threshold=0.02,
    meaning="0 means a model trained on z ranks the test records as well as one trained on x; a positive value is "
    "the area under the ROC curve lost.",
)
def _auc_measure(ctx: EvaluationContext) -> ModelMeasureResult:
    return auc_from(comparison_from_context(ctx), pos_label=ctx.options.get("pos_label"),
                    average=ctx.options.get("average"))


@register_measure(
    "f_measure", kind="utility", default=True, options=(*MODEL_OPTIONS, "pos_label", "average", "beta"),
    description="F-measure (β=1) of CART trained on x minus that of CART trained on z, tested on t (paper 000 §3); "
    "more than two classes: macro average",
    direction="lower", value_range=(-1.0, 1.0), threshold=0.05,
    meaning="0 means a model trained on z finds the positive (rarer) class as well as one trained on x; a positive "
    "value is the F-measure lost.",
)
def _f_measure_measure(ctx: EvaluationContext) -> ModelMeasureResult:
    return f_measure_from(comparison_from_context(ctx), pos_label=ctx.options.get("pos_label"),
                          average=ctx.options.get("average"), beta=ctx.options.get("beta", 1.0))
