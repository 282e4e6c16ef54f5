"""A sequence of techniques applied one after the other, as statistics offices chain them.

sdcMicro's workflow applies several methods to one object in turn: recode age into bands,
then suppress the cells that still break k-anonymity, then post-randomise a sensitive
category. :class:`Composition` does the same with ppdm's techniques: each step is fitted on
the previous step's release, under the previous step's *output* schema (after recoding,
``age`` is a categorical key of interval labels, so local suppression and PRAM see it as
such). In Python the natural form is a scikit-learn ``Pipeline`` of techniques;
:func:`as_technique` turns one into a Composition, and
:func:`ppdm.experiments.release.release` accepts either. On the command line:
``ppdm anonymize x.csv -m recode --then local-suppression --then pram -p recode.breaks=...``.

Randomness: each step without a ``random_state`` of its own gets one drawn from the
composition's ``random_state`` (a child of its seed sequence), so one explicit seed makes the
whole sequence reproducible and ``None`` draws every step from the operating system.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ppdm.anonymize.base import Technique
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, SchemaError
from ppdm.utils import check_n_features


class Composition(Technique):
    """Techniques applied in sequence, each on the release of the one before.

    Parameters
    ----------
    steps:
        A list of ``(name, technique)`` pairs (as a scikit-learn ``Pipeline`` holds them), or
        of techniques. Names must be distinct.

    After ``fit``: ``steps_`` holds the fitted copies, ``privacy_report_`` each step's report.
    """

    handles_missing = True
    missing_policy = "kept"

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        steps: list[Any] | None = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.steps = steps

    # ------------------------------------------------------------------ checks
    def _named_steps(self) -> list[tuple[str, Technique]]:
        steps = self.steps
        if not isinstance(steps, (list, tuple)) or not steps:
            raise ParameterError("a composition needs a non-empty list of steps (techniques)")
        out: list[tuple[str, Technique]] = []
        for i, step in enumerate(steps):
            name, est = (step if isinstance(step, tuple) and len(step) == 2 else (None, step))
            if not isinstance(est, Technique):
                raise ParameterError(f"step {i + 1} of the composition is not a ppdm technique: {type(est).__name__}")
            if isinstance(est, Composition):
                raise ParameterError(f"step {i + 1} is itself a composition; list its steps instead")
            out.append((str(name) if name is not None else getattr(est, "method_name", type(est).__name__), est))
        names = [n for n, _ in out]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ParameterError(f"two steps of the composition are named {dup[0]!r}; name them apart")
        writers = [n for n, e in out if callable(getattr(e, "write_sidecars", None))]
        if len(writers) > 1:
            raise ParameterError(f"steps {', '.join(writers)} both write a .matrices.json sidecar beside the release; "
                                 "keep one of them in a composition")
        return out

    def _validate_params(self) -> None:
        for _, est in self._named_steps():
            est._validate_params()

    def _keeps_rows(self) -> bool:
        return all(est._keeps_rows() for _, est in self._named_steps())

    # --------------------------------------------------------------------- fit
    def fit(self, X: pd.DataFrame, y: Any = None) -> Composition:
        """Fit every step in turn, each on the release of the one before."""
        self._fit_steps(X, keep_output=False)
        return self

    def fit_transform(self, X: pd.DataFrame, y: Any = None, **fit_params: Any) -> pd.DataFrame:
        return self._fit_steps(X, keep_output=True)

    def _fit_steps(self, X: Any, *, keep_output: bool) -> Any:
        from ppdm.anonymize.base import _is_dask

        steps = self._named_steps()
        if _is_dask(X):
            raise SchemaError("Composition.fit needs a pandas table: fit on the data (or a sample) in memory, "
                              "then transform the Dask DataFrame")
        df, was_array = self._as_frame(X)
        schema = self._resolve_schema(df)
        left = [str(c) for c in df.columns if c not in set(schema.all_columns)]
        if left:
            raise SchemaError(f"the schema leaves out column(s) {', '.join(map(repr, left))} of the table; give each "
                              "a type or role (numeric, categorical, identifiers, weight) or drop it from the table")
        seeds = _step_seeds(self.random_state, len(steps))
        fitted: list[tuple[str, Technique]] = []
        outputs: list[pd.DataFrame] = []
        cur = df
        current = schema
        for (name, est), seed in zip(steps, seeds, strict=True):
            step = clone(est)
            params: dict[str, Any] = {"schema": current, "class_column": current.class_column}
            if step.random_state is None:
                params["random_state"] = seed
            step.set_params(**params)
            cur = step.fit_transform(cur)
            current = step.output_schema()
            fitted.append((name, step))
            outputs.append(cur)
        _check_intruder_view_of_whole_suppression(df, schema, fitted, outputs)
        self.schema_ = schema
        self.steps_ = fitted
        self.feature_names_in_ = np.asarray(df.columns, dtype=object)
        self.n_features_in_ = df.shape[1]
        self._collect_reports()
        if not keep_output:
            return None
        return cur.to_numpy() if was_array else cur

    def _collect_reports(self) -> None:
        """The composition's reports from its fitted steps' (after fit, or once a partitioned
        release has totalled them)."""
        fitted = self.steps_
        self.privacy_report_ = {
            "composition": [{"step": name, "method": getattr(s, "method_name", type(s).__name__),
                             "privacy": getattr(s, "privacy_report_", None)} for name, s in fitted],
            "note": "each step was applied to the release of the step before; the last step's guarantees hold for "
                    "the release only as far as later steps keep them (a step after local suppression may change "
                    "key values)",
        }
        # what only the owner may see (a step's private_report_), for the private log
        kept = {name: s.private_report_ for name, s in fitted if getattr(s, "private_report_", None)}
        self.private_report_ = {"composition": kept} if kept else None

    # --------------------------------------------------------------- transform
    def transform(self, X: pd.DataFrame) -> pd.DataFrame:
        """Apply the fitted steps in order (a Dask DataFrame partition by partition)."""
        from ppdm.anonymize.base import _is_dask

        check_is_fitted(self, "steps_")
        if _is_dask(X):
            cur = X
            for _, step in self.steps_:
                cur = step.transform(cur)
            return cur
        df, was_array = self._as_frame(X)
        check_n_features(self, df.shape[1])
        cur = df
        for _, step in self.steps_:
            cur = step.transform(cur)
        return cur.to_numpy() if was_array else cur  # type: ignore[return-value]  # an array in, an array out (sklearn)

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        return self.transform(df)  # pragma: no cover - transform is overridden

    def transform_partition(self, X: pd.DataFrame, number: int, base: int) -> pd.DataFrame:
        """Transform partition ``number`` with every step, each step's generator seeded by
        ``(base, step, number)``."""
        return self.transform_partition_reported(X, number, base)[0]

    def transform_partition_reported(self, X: pd.DataFrame, number: int, base: int) -> tuple[pd.DataFrame, Any]:
        """:meth:`transform_partition` with every step's reports of the partition (a list, one
        entry per step, or ``None`` when no step wrote any)."""
        check_is_fitted(self, "steps_")
        cur, reports = X, []
        for i, (_, step) in enumerate(self.steps_):
            cur, rep = step.transform_partition_reported(
                cur, number, int(np.random.SeedSequence([base, i]).generate_state(1)[0]))
            reports.append(rep)
        return cur, reports if any(r is not None for r in reports) else None

    def merge_partition_reports(self, reports: list[Any]) -> None:
        """Every step totals its partitions' reports; the composition's are then made from them."""
        written = [r for r in reports if r is not None]
        if not written:
            return
        for i, (_, step) in enumerate(self.steps_):
            step.merge_partition_reports([r[i] for r in written])
        self._collect_reports()

    def output_schema(self) -> Schema:
        check_is_fitted(self, "steps_")
        return self.steps_[-1][1].output_schema()

    def write_sidecars(self, out_path: str | Path) -> list[Path]:
        """Every step's sidecars (at most one step writes any)."""
        check_is_fitted(self, "steps_")
        written: list[Path] = []
        for _, step in self.steps_:
            w = getattr(step, "write_sidecars", None)
            if callable(w):
                written.extend(Path(p) for p in (w(out_path) or []))
        return written


def _check_intruder_view_of_whole_suppression(x: pd.DataFrame, schema: Schema, steps: list[tuple[str, Technique]],
                                              outputs: list[pd.DataFrame]) -> None:
    """Refuse a chain whose local suppression claims k in the intruder's view that x's records do not have.

    Local suppression's intruder criterion guarantees k candidates for every record's true keys,
    as its *input* holds them. A record an earlier step suppressed whole (``generalize``'s
    record suppression) reaches it as blanks only, so it cannot protect that record's true
    keys, and its partial blanks of other records can leave the record 1 to k−1 candidates.
    The claim is checked here against x itself, on the categories of the step's input, and a
    chain that breaks it is refused (not published with a false claim)."""
    from ppdm.data.blanks import intruder_frequencies, joint_key_codes
    from ppdm.data.generalization import recoded_view

    for i, (name, step) in enumerate(steps):
        # local suppression is known by what it fitted (importing it here would close an import cycle)
        if i == 0 or getattr(step, "criterion_", None) != "intruder" or not hasattr(step, "keys_"):
            continue
        whole = [n for n, s in steps[:i] if int(np.sum(getattr(s, "suppressed_", 0))) > 0]
        if not whole:
            continue
        keys = list(step.keys_)
        _, recode, _ = recoded_view(schema, steps[i - 1][1].output_schema(), keys)
        truth = recode(x[keys].reset_index(drop=True)).astype(object)
        ox, oz = joint_key_codes(truth, outputs[i][keys].reset_index(drop=True).astype(object), keys)
        narrowed = int((intruder_frequencies(ox, oz) < int(step.k)).sum())
        if narrowed:
            raise ParameterError(
                f"{name} (k={step.k}) cannot protect the records {whole[0]} suppressed whole: it sees only their "
                f"blanks, and its partial blanks leave {narrowed} of them fewer than k candidates for an intruder "
                f"who knows their true keys; give {whole[0]}.suppression_limit=0, or the same k to both steps")


def _step_seeds(random_state: Any, n: int) -> list[int | None]:
    """One seed per step drawn from ``random_state`` (``None``: every step draws from the system)."""
    if random_state is None:
        return [None] * n
    if isinstance(random_state, np.random.Generator):
        return [int(v) for v in random_state.integers(0, 2**63, size=n)]
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return [int(s.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
                for s in np.random.SeedSequence(int(random_state)).spawn(n)]
    raise ParameterError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}")


def as_technique(technique: Any) -> Any:
    """A scikit-learn ``Pipeline`` of ppdm techniques as one :class:`Composition` (with the
    pipeline's step names); anything else is returned as it is."""
    from sklearn.pipeline import Pipeline

    if isinstance(technique, Pipeline):
        return Composition(steps=list(technique.steps))
    return technique


__all__ = ["Composition", "as_technique"]


def make_composition(methods: list[str], *, params: dict[str, Any] | None = None, class_column: str | None = None,
                     random_state: Any = None, schema: Any = None) -> Composition:
    """A composition of registered techniques by name (``ppdm anonymize -m A --then B``).

    A parameter ``NAME.param`` goes to the step of that method (``local-suppression.k`` or
    ``local_suppression.k``) or, as ``2.param``, to the second step; a parameter without a
    prefix goes to the one step that has a parameter of that name.
    """
    from ppdm.anonymize.registry import get_technique, make_technique, technique_params

    if not methods:
        raise ParameterError("a composition needs at least one method")
    norm = [m.replace("_", "-") for m in methods]
    per: list[dict[str, Any]] = [{} for _ in methods]
    for key, value in (params or {}).items():
        if "." in key:
            prefix, name = key.split(".", 1)
            p = prefix.replace("_", "-")
            if p.isdigit():
                i = int(p) - 1
                if not 0 <= i < len(methods):
                    raise ParameterError(f"parameter {key!r} names step {p}, but there are {len(methods)} steps")
                per[i][name] = value
                continue
            hits = [i for i, m in enumerate(norm) if m == p]
            if not hits:
                raise ParameterError(f"parameter {key!r} names {prefix!r}, which is not a step ({', '.join(methods)})")
            if len(hits) > 1:
                raise ParameterError(f"{prefix!r} is more than one step; give parameter {key!r} as <step number>.{name}")
            per[hits[0]][name] = value
            continue
        owners = [i for i, m in enumerate(norm) if key in technique_params(get_technique(m))]
        if not owners:
            raise ParameterError(f"no step has a parameter {key!r} (steps: {', '.join(methods)})")
        if len(owners) > 1:
            raise ParameterError(f"parameter {key!r} belongs to several steps ({', '.join(norm[i] for i in owners)}); "
                                 f"give it as <method>.{key}")
        per[owners[0]][key] = value
    steps = []
    for i, (m, step_params) in enumerate(zip(norm, per, strict=True)):
        est = make_technique(m, class_column=class_column, random_state=None, schema=schema, params=step_params)
        steps.append((m if norm.count(m) == 1 else f"{i + 1}:{m}", est))
    return Composition(class_column=class_column, schema=schema, random_state=random_state, steps=steps)
