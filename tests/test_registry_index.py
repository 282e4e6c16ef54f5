"""The registry's index of which module registers each technique matches the registrations."""

from __future__ import annotations

import subprocess
import sys


def test_the_index_names_the_module_of_every_registered_technique() -> None:
    from ppdm.anonymize.registry import MODULES, TECHNIQUES, _load_all

    _load_all()
    assert {n: c.__module__.rsplit(".", 1)[1] for n, c in TECHNIQUES.items()} == MODULES


def test_finding_a_technique_imports_its_module_alone() -> None:
    # in a fresh interpreter: this one may have imported every module already
    code = ("import sys; from ppdm.anonymize.registry import get_technique; get_technique('local-suppression'); "
            "print(sorted(m for m in sys.modules if m.startswith('ppdm.anonymize.') and not m.rsplit('.', 1)[1]"
            ".startswith('_')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)  # a list of module names printed by the child
    assert "ppdm.anonymize.suppression" in loaded
    assert "ppdm.anonymize.differential_privacy" not in loaded and "ppdm.anonymize.forest_framework" not in loaded
