"""Mutation check: plant one fault in each of ten key functions of the papers' techniques
and measures, each in a fresh temporary copy of the committed tree, and run the tests that
should catch it. ``python tests/mutation_check.py [NAME ...]`` prints one line per fault
and a JSON summary; the result is recorded in docs/testing.md. Nothing is ever written to
the checkout: every copy is made with ``git archive HEAD`` in a temporary folder, beside a
link to ``../shared``, and removed afterwards.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    what: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation("c45_add_errs", "ppdm/trees/_c45_kernels.py",
             "    f = (e + 0.5) / n\n    r = (f + (z * z) / (2 * n)", "    f = e / n\n    r = (f + (z * z) / (2 * n)",
             "C4.5 pessimistic error estimate (compiled _add_errs): the continuity correction e + 0.5 dropped",
             ("tests/test_trees_j48_parity.py", "tests/test_trees_c45.py")),
    Mutation("sysfor_candidates", "ppdm/trees/_sysfor_kernels.py",
             "        if lw < min_leaf or rw < min_leaf:", "        if lw <= min_leaf or rw <= min_leaf:",
             "SysFor good split points (numeric_candidates): a side with exactly min_leaf rows refused",
             ("tests/test_trees_sysfor.py", "tests/test_trees_sysfor_parity.py")),
    Mutation("ff_wrap", "ppdm/anonymize/_noise.py", "    z = lov + r\n", "    z = np.clip(v[ok], lov, hiv)\n",
             "Forest Framework step 4 (wrap_continuous): noise clipped to the sub-domain instead of wrapped around",
             ("tests/test_noise.py", "tests/test_forest_framework.py", "tests/test_framework.py")),
    Mutation("ff_permutation", "ppdm/anonymize/forest_framework.py",
             "    values = part[np.lexsort((rng.random(part.size), grp))]", "    values = part[rng.permutation(part.size)]",
             "Forest Framework step 5 (permute_within_groups): values permuted over the whole table, not within "
             "each intersection", ("tests/test_forest_framework.py",)),
    Mutation("eduds_categorical", "ppdm/metrics/structure.py", "    cat_diff = (t_o != t_p).astype(float)",
             "    cat_diff = (t_o == t_p).astype(float)",
             "EDUDS eq. 2 (_sds): Diff 1 when both intersections test a categorical attribute, 0 when one does",
             ("tests/test_metrics_structure.py", "tests/test_metrics_structure_fast.py")),
    Mutation("edusc_k", "ppdm/metrics/structure.py", "                total += s * sizes[s_i] / (k * n_total)",
             "                total += s * sizes[s_i] / (len(attrs) * n_total)",
             "EDUSC eq. 4 (edusc): a node's differences divided by all attributes, not the k counted ones",
             ("tests/test_metrics_structure.py", "tests/test_metrics_structure_fast.py")),
    Mutation("sers_m", "ppdm/metrics/risk.py",
             "    h = sers_rows(np.ascontiguousarray(on[rows]), np.ascontiguousarray(oc[rows]), pn, pc, 1.0 / len(cols),",
             "    h = sers_rows(np.ascontiguousarray(on[rows]), np.ascontiguousarray(oc[rows]), pn, pc, 1.0,",
             "SERS eq. 6 (sers): the record distance not divided by the number of attributes",
             ("tests/test_metrics_sers.py", "tests/test_metrics_risk.py")),
    Mutation("rsd_denominator", "ppdm/metrics/retention.py", "    value = total / (len(rr.rules) * rr.x.n_records)",
             "    value = total / rr.x.n_records",
             "RSD, paper 000 eq. 2 (rule_support_distance): divided by |x| instead of |Ψx|·|x|",
             ("tests/test_retention.py",)),
    Mutation("substitution_inverse", "ppdm/anonymize/perturbation_matrix.py",
             "    np.fill_diagonal(inv, (g + n - 2.0) / (g - 1.0))", "    np.fill_diagonal(inv, (g + n - 1.0) / (g - 1.0))",
             "Random substitution, paper 001 (gamma_diagonal_inverse): the diagonal of M⁻¹ off by one",
             ("tests/test_random_substitution.py",)),
    Mutation("il1s_ddof", "ppdm/metrics/info_loss.py",
             "X.std(axis=0, ddof=1), np.abs(X - Z).sum(axis=0), form)",
             "X.std(axis=0, ddof=0), np.abs(X - Z).sum(axis=0), form)",
             "IL1s, paper 003 §3.3.1 (il1s): population instead of sample standard deviation",
             ("tests/test_metrics_info_loss.py", "tests/test_metrics_sdcmicro_parity.py")),
)


def check(m: Mutation, work: Path) -> dict:
    """Plant ``m`` in a fresh copy of HEAD under ``work`` and run its tests."""
    copy = work / m.name
    copy.mkdir()
    subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {copy}", shell=True, check=True)
    target = copy / m.path
    text = target.read_text()
    if text.count(m.old) != 1:
        return {"what": m.what, "error": f"the code to mutate occurs {text.count(m.old)} times in {m.path}"}
    target.write_text(text.replace(m.old, m.new))
    env = dict(os.environ, PYTHONPATH=str(copy))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *m.tests],
                         cwd=copy, env=env, capture_output=True, text=True, timeout=7200)
    failed = re.findall(r"^FAILED (\S+)", out.stdout, re.M)
    return {"what": m.what, "file": m.path, "tests": list(m.tests), "caught": out.returncode == 1 and bool(failed),
            "failed": failed}


def main(names: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "shared").symlink_to((ROOT.parent / "shared").resolve())  # tests read ../shared
        for m in chosen:
            results[m.name] = r = check(m, work)
            print(f"{m.name}: {'caught by ' + r['failed'][0] if r.get('caught') else 'NOT caught'}", flush=True)
    print(json.dumps(results, indent=1, ensure_ascii=False))
    return 0 if all(r.get("caught") for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
