"""Accuracy against anonymeter 1.1.0 on its oracle inputs and settings
(shared/oracles/anonymeter): for every attack on both releases, ppdm's 95 % risk interval
overlaps anonymeter's. Attacks draw targets at random, so risks are compared as intervals,
not digit for digit (the oracle README says so)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppdm.attacks.inference import inference
from ppdm.attacks.linkability import linkability
from ppdm.attacks.singling_out import singling_out

ATTACKS = ["singling_out_univariate", "singling_out_multivariate", "linkability_k1", "linkability_k10",
           "inference_income", "inference_occupation", "inference_capital_gain"]
QUICK = {("un10", "singling_out_univariate"), ("un10", "singling_out_multivariate"), ("un10", "linkability_k10"),
         ("ff", "inference_occupation")}


def _run(shared_dir, release: str, attack: str):
    d = shared_dir / "oracles" / "anonymeter"
    ori = pd.read_csv(d / "adult_ori.csv")
    control = pd.read_csv(d / "adult_control.csv")
    syn = pd.read_csv(d / f"adult_syn_{release}.csv")
    ref = json.loads((d / f"adult_{release}_risks.json").read_text())
    block = ref[attack]
    if attack.startswith("singling_out"):
        mode = attack.split("_")[-1]
        r = singling_out(ori, syn, control, mode=mode, n_attacks=block["n_attacks"], n_cols=3, random_state=0)
    elif attack.startswith("linkability"):
        k = int(attack.split("_k")[1])
        r = linkability(ori, syn, control, tuple(ref["aux_cols"]), n_attacks=ref["n_attacks"], n_neighbors=k,
                        random_state=0)
    else:
        secret = attack[len("inference_"):]
        # anonymeter's default: a guess is right when it equals the secret, numeric or not
        r = inference(ori, syn, control, secret, n_attacks=ref["n_attacks"], regression=False, random_state=0)
    return r, block


def _check(r, block) -> None:
    lo, hi = block["risk"]["ci"]
    assert r.ci_low <= hi and lo <= r.ci_high, (
        f"ppdm [{r.ci_low:.4f}, {r.ci_high:.4f}] does not overlap anonymeter [{lo:.4f}, {hi:.4f}]")
    assert r.ci_low <= r.value <= r.ci_high


@pytest.mark.parametrize(("release", "attack"), sorted(QUICK))
def test_interval_overlaps_anonymeter(shared_dir, release, attack):
    _check(*_run(shared_dir, release, attack))


@pytest.mark.slow
@pytest.mark.parametrize("release", ["un10", "ff"])
@pytest.mark.parametrize("attack", ATTACKS)
def test_every_attack_overlaps_anonymeter(shared_dir, release, attack):
    r, block = _run(shared_dir, release, attack)
    _check(r, block)
    # the attack rates agree too, within a few of their errors
    for name, ours, err in (("main", r.main_rate, r.main_error), ("control", r.control_rate, r.control_error)):
        theirs, their_err = block["rates"][name], block["rates"][f"{name}_err"]
        assert abs(ours - theirs) <= 4 * (err + their_err), (name, ours, theirs)
