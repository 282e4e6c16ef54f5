"""Speed of the disclosure-risk measures: key-variable risk, SUDA2, mixed record linkage and
the attacks after Giomi et al. 2023.

Goals: key-variable risk (fk, Fk with sampling weights, individual and global risk, the
per-key uniques) on 10⁶ records ≤ 2 s; each attack at least 10× faster than the wall time
anonymeter 1.1.0 recorded on the oracle inputs (``../shared/oracles/anonymeter``, a 2-core
machine), so the goal of an attack row is a tenth of that time. When anonymeter can be
imported, it runs on the same inputs in the same process right after ppdm, and its time
and the ratio are shown beside ppdm's. Numba kernels are compiled before the timings;
each ppdm time is the best of three runs. Run with ``python benchmarks/run.py risk``
(``--quick``: small inputs, no anonymeter).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._util import measure

ORACLE = Path(__file__).resolve().parents[2] / "shared" / "oracles" / "anonymeter"
KEYS = ["age", "sex", "race", "marital_status", "education", "native_country"]


def _row(name: str, n: int, seconds: float, rss: float, goal_s: float | None, **extra) -> dict:
    meets = "-" if goal_s is None else ("yes" if seconds <= goal_s else f"no (time ×{seconds / goal_s:.2f})")
    return {"benchmark": name, "n": n, "seconds": seconds, "peak_rss_mb": rss,
            "goal": f"≤{goal_s:.3g} s" if goal_s is not None else "-", "meets": meets, **extra}


def _best(fn, repeats: int = 3):
    best = None
    for _ in range(repeats):
        res, sec, rss = measure(fn)
        if best is None or sec < best[1]:
            best = (res, sec, rss)
    return best


def _adult_resampled(n: int, seed: int = 0) -> pd.DataFrame:
    from ppdm.datasets import load

    x, _ = load("adult", missing="drop")
    rng = np.random.default_rng(seed)
    big = x.iloc[rng.integers(0, len(x), n)].reset_index(drop=True)
    big["weight"] = rng.uniform(50, 150, n)
    return big


def _keyvar_rows(quick: bool) -> list[dict]:
    from ppdm.metrics.keyvar import k_anonymity, l_diversity, reidentification_risk
    from ppdm.metrics.suda import suda2

    n = 100_000 if quick else 1_000_000
    big = _adult_resampled(n)
    rows = []
    res, sec, rss = _best(lambda: reidentification_risk(big, KEYS, "weight"))
    rows.append(_row("key-variable risk: fk, Fk (weights), individual + global risk, per-key uniques", n, sec, rss,
                     2.0, keys=len(KEYS), value=round(res.value, 6)))
    res, sec, rss = _best(lambda: (k_anonymity(big, KEYS, 3), l_diversity(big, KEYS, "occupation")))
    rows.append(_row("k-anonymity (k = 3) + distinct/entropy l-diversity", n, sec, rss, None, keys=len(KEYS),
                     value=round(res[0].value, 6)))
    adult = _adult_resampled(3000 if quick else 30_162, 1)
    suda2(adult.iloc[:200], KEYS)
    res, sec, rss = _best(lambda: suda2(adult, KEYS))
    rows.append(_row("suda2 (6 keys, all MSU sizes) + DIS-SUDA", len(adult), sec, rss, None,
                     value=round(res.value, 6)))
    return rows


def _linkage_rows(quick: bool) -> list[dict]:
    from ppdm.metrics.linkage import record_linkage

    if not ORACLE.is_dir():
        return []
    ori = pd.read_csv(ORACLE / "adult_ori.csv")
    rows = []
    record_linkage(ori.iloc[:100], ori.iloc[:100])
    for rel in ("un10", "ff"):
        syn = pd.read_csv(ORACLE / f"adult_syn_{rel}.csv")
        x, z = (ori.iloc[:3000], syn.iloc[:3000]) if quick else (ori, syn)
        res, sec, rss = _best(lambda x=x, z=z: record_linkage(x, z), 2)
        rows.append(_row(f"record linkage, 15 mixed attributes, adult vs {rel} release", len(x), sec, rss, None,
                         value=round(res.value, 4)))
    return rows


ATTACKS = ["singling_out_univariate", "singling_out_multivariate", "linkability_k1", "linkability_k10",
           "inference_income", "inference_occupation", "inference_capital_gain"]


def _ppdm_attack(name: str, ori, syn, control, ref: dict, n_attacks: int | None = None):
    from ppdm.attacks.inference import inference
    from ppdm.attacks.linkability import linkability
    from ppdm.attacks.singling_out import singling_out

    if name.startswith("singling_out"):
        n = n_attacks or ref[name]["n_attacks"]
        return lambda: singling_out(ori, syn, control, mode=name.split("_")[-1], n_attacks=n, random_state=0)
    if name.startswith("linkability"):
        k = int(name.split("_k")[1])
        return lambda: linkability(ori, syn, control, tuple(ref["aux_cols"]), n_attacks=n_attacks or ref["n_attacks"],
                                   n_neighbors=k, random_state=0)
    secret = name[len("inference_"):]
    return lambda: inference(ori, syn, control, secret, n_attacks=n_attacks or ref["n_attacks"], regression=False,
                             random_state=0)


def _anonymeter_attack(name: str, ori, syn, control, ref: dict):
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

    if name.startswith("singling_out"):
        mode = name.split("_")[-1]
        return lambda: SinglingOutEvaluator(ori=ori, syn=syn, control=control, n_attacks=ref[name]["n_attacks"],
                                            n_cols=3, seed=0).evaluate(mode=mode).risk()
    if name.startswith("linkability"):
        k = int(name.split("_k")[1])
        return lambda: LinkabilityEvaluator(ori=ori, syn=syn, control=control, aux_cols=tuple(ref["aux_cols"]),
                                            n_attacks=ref["n_attacks"], n_neighbors=k).evaluate(n_jobs=2).risk()
    secret = name[len("inference_"):]
    cols = [c for c in ori.columns if c != secret]
    return lambda: InferenceEvaluator(ori=ori, syn=syn, control=control, aux_cols=cols, secret=secret,
                                      n_attacks=ref["n_attacks"]).evaluate(n_jobs=2).risk()


def _attack_rows(quick: bool) -> list[dict]:
    if not ORACLE.is_dir():
        return []
    try:
        import anonymeter  # noqa: F401

        have_anonymeter = not quick
    except ImportError:
        have_anonymeter = False
    ori = pd.read_csv(ORACLE / "adult_ori.csv")
    control = pd.read_csv(ORACLE / "adult_control.csv")
    rows = []
    # compile the kernels outside the timings
    small = ori.iloc[:300]
    ref0 = json.loads((ORACLE / "adult_un10_risks.json").read_text())
    for name in ATTACKS:
        _ppdm_attack(name, small, small, control.iloc[:300], ref0, 20)()
    for rel in ("un10", "ff"):
        syn = pd.read_csv(ORACLE / f"adult_syn_{rel}.csv")
        ref = json.loads((ORACLE / f"adult_{rel}_risks.json").read_text())
        o, s, c = (ori.iloc[:3000], syn.iloc[:3000], control.iloc[:3000]) if quick else (ori, syn, control)
        for name in ATTACKS:
            res, sec, rss = _best(_ppdm_attack(name, o, s, c, ref, 200 if quick else None))
            recorded = ref[name]["seconds"]
            extra = {"value": f"{res.value:.3f} [{res.ci_low:.3f}, {res.ci_high:.3f}]"}
            if not quick:
                extra.update({"anonymeter_recorded_s": round(recorded, 2),
                              "speedup_vs_recorded": round(recorded / sec, 1)})
            if have_anonymeter:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    risk = _anonymeter_attack(name, o, s, c, ref)()
                    theirs = time.perf_counter() - t0
                extra.update({"anonymeter_now_s": round(theirs, 2), "speedup_same_run": round(theirs / sec, 1),
                              "anonymeter_risk": f"{risk.value:.3f} [{risk.ci[0]:.3f}, {risk.ci[1]:.3f}]"})
            rows.append(_row(f"{name.replace('_', ' ')}, adult vs {rel} release", len(o), sec, rss,
                             None if quick else recorded / 10, **extra))
    return rows


def run(quick: bool = False) -> list[dict]:
    return _keyvar_rows(quick) + _linkage_rows(quick) + _attack_rows(quick)
