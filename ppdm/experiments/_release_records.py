"""What a release records of how it was made, and the records it holds out.

The technique's record (:func:`technique_record`), the release's own random streams
(:func:`release_rng`), the private log's pairing (:func:`pairing_record`), the schema the
public provenance may state (:func:`public_output_schema`), the hold-out of a control set
(:func:`holdout_mask`, :func:`hold_out`, :func:`without_held_out`) and where that control set
is written (:func:`control_path`). Split from :mod:`ppdm.experiments.release`, which
re-exports every name here.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.provenance import encode_positions, jsonable
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError

_COMMON = ("class_column", "schema", "random_state")


def technique_record(technique: Any) -> dict[str, Any]:
    """Name, class and every parameter (defaults resolved) of a technique; no seed.

    A chain (:class:`~ppdm.anonymize.composition.Composition`, ``--then``) is named by its
    steps (``"recode then pram"``) and records each step as a technique record of its own
    under ``parameters.steps`` (with ``step``, its name in the chain), so that reports describe
    it in words and readers find each step's parameters (never a Python repr of a step, its
    schema or its hierarchies)."""
    from ppdm.anonymize.composition import Composition

    cls = f"{type(technique).__module__}.{type(technique).__name__}"
    if isinstance(technique, Composition):
        steps = [{"step": name, **technique_record(est)} for name, est in technique._named_steps()]
        return {"name": " then ".join(str(s["name"]) for s in steps), "class": cls, "parameters": {"steps": steps}}
    params = {k: v for k, v in technique.get_params(deep=False).items() if k not in _COMMON}
    return {"name": getattr(technique, "method_name", type(technique).__name__),
            "class": cls,
            "parameters": jsonable(params)}


def release_rng(random_state: Any, stream: int) -> np.random.Generator:
    """The generator of one of the release's own steps (:data:`HOLDOUT_STREAM`,
    :data:`SHUFFLE_STREAM`): operating-system entropy without a seed, else derived from the
    seed and the step, so that the step's draws are reproducible and independent of the
    technique's."""
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.default_rng([int(random_state), stream])
    from ppdm.utils import check_random_state

    gen = check_random_state(random_state)
    return np.random.default_rng([*(int(v) for v in gen.integers(0, 2**63, size=2)), stream])


def pairing_record(positions: np.ndarray, rows_of_x: int) -> dict[str, Any]:
    """The private log's pairing of one table: ``rows`` of z, ``rows_of_x`` (the length of the
    table the positions point into) and the encoded ``positions``."""
    return {"rows": int(len(positions)), "rows_of_x": int(rows_of_x), "positions": encode_positions(positions)}


def public_output_schema(out: Schema, given: Schema, z: pd.DataFrame | None = None) -> dict[str, Any]:
    """The release's schema as the public provenance may state it: nothing learnt from x that z
    does not show.

    A technique's output schema may name categories of x: recoding's hierarchy maps every
    original category to its label (with ``min_count``, the rare ones merged into "Other", some
    held by one person and absent from z), and its declared categories could list labels no
    released record has. Public are the hierarchies the given schema declared (the user's) and,
    per column, the categories the given schema declared or that z holds (all of them when z is
    not at hand, e.g. a partitioned release: recoding's labels, each the label of some record).
    The full schema goes to the private log (``output_schema``).
    """
    d = out.to_dict()
    d["hierarchies"] = {c: h for c, h in given.to_dict().get("hierarchies", {}).items()
                        if c in d.get("hierarchies", {})}
    if z is not None:
        declared = given.categories
        cats = {}
        for c, values in d.get("categories", {}).items():
            if c in z.columns and list(values) != list(declared.get(c, [])):
                present = {str(v) for v in pd.unique(z[c].dropna())}
                mine = {str(v) for v in declared.get(c, [])}
                values = [v for v in values if str(v) in present or str(v) in mine]
            cats[c] = values
        d["categories"] = cats
    return d


def holdout_mask(n: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Which of ``n`` records to hold out: a simple random sample of ``round(fraction · n)``
    (at least one, and at least one left to release), drawn from ``rng``."""
    try:
        f = float(fraction)
    except (TypeError, ValueError):
        raise ParameterError(f"holdout must be a fraction between 0 and 1, got {fraction!r}") from None
    if not 0.0 < f < 1.0:
        raise ParameterError(f"holdout must be a fraction strictly between 0 and 1, got {fraction!r}")
    k = int(round(f * n))
    if n < 2 or k < 1 or k >= n:
        raise ParameterError(f"holdout={f:g} of {n} records leaves no control record or no record to release")
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=k, replace=False)] = True
    return mask


def hold_out(x: pd.DataFrame, fraction: float, random_state: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split ``x`` before anonymizing: (records to release, control set).

    The control set is a simple random sample of ``round(fraction · n)`` records (at least
    one, and at least one left to release), kept in the order of ``x``; the attacks of
    :mod:`ppdm.attacks` compare what the release tells about the released people with what
    it tells about these (Giomi et al. 2023 §3). The split is drawn from ``random_state``
    (OS entropy when ``None``). :func:`release` with ``holdout=`` does this itself and keeps
    the held-out positions in the private log.
    """
    from ppdm.utils import check_random_state

    mask = holdout_mask(len(x), fraction, check_random_state(random_state))
    return x.loc[~mask].reset_index(drop=True), x.loc[mask].reset_index(drop=True)


def without_held_out(x: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """``x`` without the records of ``control`` (as a multiset: each control record removes
    one equal record of x), in x's order: the records a release made with a hold-out was
    made from. Refuses a control record that ``x`` does not hold."""
    cols = list(x.columns)
    key = "__ppdm_occurrence__"
    left = x.reset_index(drop=True).assign(**{key: 0})
    left[key] = left.groupby(cols, dropna=False, sort=False).cumcount()
    right = control[cols].reset_index(drop=True).assign(**{key: 0})
    right[key] = right.groupby(cols, dropna=False, sort=False).cumcount()
    hit = left.merge(right, on=[*cols, key], how="left", indicator=True)["_merge"].to_numpy() == "both"
    if int(hit.sum()) != len(control):
        raise PPDMError(f"{len(control) - int(hit.sum())} record(s) of the control set are not in the original "
                        "table, so it was not held out of this original")
    return x.loc[~hit].reset_index(drop=True)


def control_path(out: str | Path) -> Path:
    """Where the control set of release ``out`` goes: ``<out stem>.control<suffix>``."""
    out = Path(out)
    for suffix in (".csv.gz", ".csv", ".parquet", ".pq"):
        if out.name.lower().endswith(suffix):
            return out.with_name(out.name[: -len(suffix)] + ".control" + out.name[-len(suffix):])
    return out.with_name(f"{out.stem}.control{out.suffix}")


def _owner_only(path: Path) -> None:
    """Make a private file readable and writable by its owner only (where the system allows)."""
    try:
        os.chmod(path, 0o600)
    except OSError:
        pass


def replay_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The distinct ``"Category: message"`` lines (whitespace folded) of the warnings a technique
    gave while fitted, for the release's record; each warning is issued again, so the caller
    still sees it as it was raised."""
    lines: list[str] = []
    for w in caught:
        line = f"{w.category.__name__}: {' '.join(str(w.message).split())}"
        if line not in lines:
            lines.append(line)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return lines
