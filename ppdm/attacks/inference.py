"""Attribute inference (Giomi et al. 2023, §4.3): guessing a secret attribute of a person from
the release and what the attacker already knows about them.

The attacker knows the target's ``aux_cols`` (by default every other attribute), finds the
released record nearest to it on those attributes (Gower distance, equally near records in
random order) and guesses that record's ``secret``. A guess of a categorical secret is
right when it equals the true value; a numeric secret (``regression=True``) when it lies
within ``tolerance`` of it relatively, |guess − secret| ≤ tolerance·|secret| (so a secret
of 0 must be guessed exactly; anonymeter 1.1.0 divides by the guess instead). A missing
guess of a missing secret is right. Targets are ``n_attacks`` records drawn without
replacement from the original data (main attack) or the control set (control attack).
The baseline attacker guesses the secret of a released record drawn at random (anonymeter
1.1.0 aligns its random guesses by row label, which makes its baseline rate lower than a
random guess; the baseline only shows whether the attack does better than chance and does
not enter the risk).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.attacks._common import (
    AttackResult,
    Encoded,
    attack_encoding,
    attack_tables,
    check_confidence,
    check_n_attacks,
    check_tables,
    context_encoding,
    make_result,
    measure_options,
    nearest,
    numeric_columns,
    rng_of,
)
from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.utils import RandomState


def _correct(guess: np.ndarray, secret: np.ndarray, regression: bool, tolerance: float) -> np.ndarray:
    g = pd.isna(guess)
    s = pd.isna(secret)
    both_missing = g & s
    ok = np.zeros(len(secret), dtype=bool)
    have = ~g & ~s
    if regression:
        gv = guess[have].astype(float)
        sv = secret[have].astype(float)
        ok[have] = np.abs(gv - sv) <= tolerance * np.abs(sv)
    else:
        ok[have] = guess[have] == secret[have]
    return ok | both_missing


def inference(
    ori: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame | None,
    secret: str,
    aux_cols: list[str] | None = None,
    *,
    n_attacks: int = 2000,
    regression: bool | None = None,
    tolerance: float = 0.05,
    confidence: float = 0.95,
    numeric: list[str] | None = None,
    random_state: RandomState = None,
    encoded: Encoded | None = None,
) -> AttackResult:
    """Inference risk of ``secret`` from the release ``syn`` for the records of ``ori`` (see the
    module docstring), with ``control`` records not used to make the release.

    ``aux_cols`` default to every other column. ``regression``: compare guesses within
    ``tolerance`` (default: when ``secret`` is numeric). The result's ``detail`` holds the
    targets and which guesses were right (never printed). ``encoded``: these tables already encoded on all their columns (:func:`~ppdm.attacks._common.context_encoding`), shared by the attacks of one evaluation.
    """
    attack = f"inference ({secret})"
    n_attacks = check_n_attacks(n_attacks)
    confidence = check_confidence(confidence)
    if not (isinstance(tolerance, (int, float)) and tolerance >= 0):
        raise ParameterError(f"inference tolerance must be a number ≥ 0, got {tolerance!r}")
    ori, syn, control = check_tables(ori, syn, control, attack)
    if secret not in ori.columns:
        raise SchemaError(f"inference: secret column {secret!r} is not in the table")
    aux = [c for c in ori.columns if c != secret] if aux_cols is None else list(aux_cols)
    if not aux:
        raise ParameterError("inference needs at least one known attribute besides the secret")
    absent = [c for c in aux if c not in ori.columns]
    if absent:
        raise ParameterError(f"inference aux_cols name column(s) {absent} that are not in the table")
    if secret in aux:
        raise ParameterError(f"inference: the secret {secret!r} is also among the known attributes")
    num = numeric_columns(ori, numeric)
    if regression is None:
        regression = secret in num
    rng = rng_of(random_state)
    enc = attack_encoding(encoded, [ori, syn, control], aux, num)
    syn_secret = syn[secret].to_numpy()
    n_main = min(n_attacks, len(ori))
    n_ctrl = min(n_attacks, len(control))
    n_base = min(n_main, len(syn))
    t_main = rng.choice(len(ori), size=n_main, replace=False)
    t_ctrl = rng.choice(len(control), size=n_ctrl, replace=False)
    g_main = syn_secret[nearest(enc, 0, t_main, 1, aux, 1, rng)[:, 0]]
    g_ctrl = syn_secret[nearest(enc, 2, t_ctrl, 1, aux, 1, rng)[:, 0]]
    ok_main = _correct(g_main, ori[secret].to_numpy()[t_main], regression, tolerance)
    ok_ctrl = _correct(g_ctrl, control[secret].to_numpy()[t_ctrl], regression, tolerance)
    t_base = rng.choice(len(ori), size=n_base, replace=False)
    g_base = syn_secret[rng.choice(len(syn), size=n_base, replace=False)]
    ok_base = _correct(g_base, ori[secret].to_numpy()[t_base], regression, tolerance)
    settings = {"secret": secret, "aux_cols": aux, "regression": bool(regression), "tolerance": float(tolerance)}
    detail = {"targets": t_main, "correct": ok_main, "control_targets": t_ctrl, "control_correct": ok_ctrl}
    return make_result(attack, n_attacks=(n_main, n_base, n_ctrl), n_success=int(ok_main.sum()),
                       n_baseline=int(ok_base.sum()), n_control=int(ok_ctrl.sum()), confidence=confidence,
                       settings=settings, detail=detail)


#: targets of the registered inference measure at most (every original and control record below it)
EVALUATE_ATTACKS = 20_000


@dataclass
class InferenceResult(RecordDetailMixin):
    """Inference risk over several secrets: ``value`` is the largest risk, within
    [``ci_low``, ``ci_high``] (the largest of the secrets' lower and upper bounds);
    ``per_secret`` has each secret's risk, interval and attack rates, ``results`` the full
    results."""

    secrets: list[str] = field(default_factory=list)
    ci_low: float = 0.0  # the largest risk lies in [max of the secrets' lows, max of their highs]
    ci_high: float = 0.0
    per_secret: pd.DataFrame = field(default_factory=pd.DataFrame)
    results: dict[str, AttackResult] | None = record_field()


def _secrets(ctx: EvaluationContext, opts: dict[str, Any]) -> list[str]:
    s = opts.get("secret")
    if isinstance(s, str):
        s = [c.strip() for c in s.split(",") if c.strip()]
    secrets = list(s or ctx.schema.sensitive or ([ctx.schema.class_column] if ctx.schema.class_column else []))
    if not secrets:
        raise MeasureNotApplicable("inference needs a secret attribute: declare sensitive attributes in a schema "
                                   "file (Schema(sensitive=[...]) in Python) or name a class column")
    return secrets


_INFERENCE_OPTIONS = ("secret", "n_attacks", "regression", "tolerance", "confidence")


@register_measure("inference", kind="risk", needs_class=False, default=True, direction="lower",
                  options=_INFERENCE_OPTIONS,
                  value_range=(0.0, 1.0), threshold=0.05,
                  meaning="How much better the release lets an attacker guess a sensitive value of original people "
                  "than of control people, as a share (largest over the secrets); 0 is best.",
                  description="attribute-inference risk of each sensitive attribute (else the class) from the "
                              "nearest released record (Giomi et al. 2023, anonymeter); largest over the "
                              "secrets")
def _inference_measure(ctx: EvaluationContext) -> InferenceResult:
    x, z, control, num = attack_tables(ctx)
    opts = measure_options(ctx, "inference", _INFERENCE_OPTIONS)
    # every record a target (up to EVALUATE_ATTACKS): a guess of a common secret succeeds often for
    # original and control people alike, and the residual risk divides the difference by the
    # control's failures, so a sample of targets would make the verdict depend on the draw
    opts.setdefault("n_attacks", min(max(len(x), len(control) if control is not None else 0), EVALUATE_ATTACKS))
    secrets = _secrets(ctx, opts)
    opts.pop("secret", None)
    results = {}
    rows = []
    for i, s in enumerate(secrets):
        seed = None if ctx.random_state is None else int(ctx.random_state) + i
        r = inference(x, z, control, s, numeric=num, random_state=seed,
                      encoded=context_encoding(ctx, x, z, control, num), **opts)
        results[s] = r
        rows.append({"secret": s, "risk": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high,
                     "main_rate": r.main_rate, "baseline_rate": r.baseline_rate, "control_rate": r.control_rate})
    per = pd.DataFrame(rows)
    return InferenceResult(value=float(per["risk"].max()), secrets=secrets, ci_low=float(per["ci_low"].max()),
                           ci_high=float(per["ci_high"].max()), per_secret=per, results=results)


__all__ = ["InferenceResult", "inference"]
