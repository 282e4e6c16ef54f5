"""How a release z is paired with its original x for an evaluation.

A release is shuffled (:func:`ppdm.experiments.release.release`, step 6): row ``j`` of z is
not the person of row ``j`` of x. Measures that compare each released record with its own
original (IL1s, DDR, ...: :attr:`ppdm.metrics.base.MeasureSpec.paired`) need the pairing the
owner keeps in the private log (:func:`ppdm.data.provenance.build_private`); without it they
would compare different people. This module reads that log, checks it belongs to the tables
given, and puts z's rows beside their originals (:func:`pair_in_memory`); the partitioned
form is :func:`ppdm.experiments.evaluate_partitioned.repair_partitions` (a partitioned
release mixes its rows across its parts, so its partitions never pair with x's by position;
:func:`ppdm.experiments.evaluate.evaluate` is the library's one way in, in memory and partitioned).

:class:`Pairing` says how x and z were paired: ``"private log"``, ``"position"`` (the owner
declares z's rows to be x's, in order), ``"none"`` (record-by-record measures use their
pairing-free forms or are skipped) or ``"synthetic"`` (z's records are not made from
particular records of x).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppdm.errors import ParameterError, PPDMError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: the pairings a user may ask for ("auto": through the private log when there is one)
PAIRINGS = ("auto", "position", "none")


@dataclass
class Pairing:
    """How x and z were paired for an evaluation, and from what.

    ``mode`` is ``"private log"`` (z re-paired with x through the release's private log),
    ``"position"`` (the owner declared z's rows to be x's, in order), ``"none"`` (no pairing:
    record-by-record measures use their pairing-free forms) or ``"synthetic"`` (z's records
    are not made from particular records of x). ``notes`` are what the evaluation should tell
    the owner about it; ``dropped_pairs`` counts the record pairs left out because one of
    the two was incomplete (``missing="drop"``).
    """

    mode: str
    private: dict[str, Any] | None = None
    private_file: Path | None = None
    control: str | None = None
    notes: list[str] = field(default_factory=list)
    dropped_pairs: int = 0

    @property
    def paired(self) -> bool:
        return self.mode in ("private log", "position")


def check_pairing_mode(pairing: str) -> str:
    if pairing not in PAIRINGS:
        raise ParameterError(f"--pairing must be one of {', '.join(PAIRINGS)}, got {pairing!r}")
    return pairing


def read_private_log(release: str | Path | None, given: str | Path | None,
                     pairing: str) -> tuple[dict[str, Any] | None, Path | None]:
    """The private log of the release file ``release`` (``given``, or the one beside it,
    :func:`ppdm.data.provenance.private_path`) and its path; ``(None, None)`` when there is
    none or ``pairing="position"`` declares the pairing instead. ``release=None``: a table
    that is no file (a shipped dataset, a DataFrame)."""
    from ppdm.data.provenance import private_path, read_private

    check_pairing_mode(pairing)
    if given is not None:
        if pairing == "position":
            raise ParameterError("--pairing position declares z's rows to be x's in order; it cannot be used with "
                                 "the private log given by --private")
        return read_private(release or given, given), Path(given)
    if release is None or pairing == "position":
        return None, None
    record = read_private(release)
    return (record, private_path(release)) if record is not None else (None, None)


def pairing_of(private: dict[str, Any] | None, private_file: Path | None, pairing: str,
               provenance: dict[str, Any] | None = None) -> Pairing:
    """The :class:`Pairing` of an evaluation from the private log found (if any) and the
    pairing asked for (:data:`PAIRINGS`)."""
    check_pairing_mode(pairing)
    if private is not None:
        if private.get("pairing") is None:
            return Pairing("synthetic", private, private_file)
        if pairing == "none":
            return Pairing("none", private, private_file)
        return Pairing("private log", private, private_file)
    if pairing == "position":
        return Pairing("position")
    notes = []
    if pairing == "auto":
        # never trust row positions in a file the owner did not pair: pairing-free forms only
        notes.append("z has no private log (give it with --private, or declare z's rows to be x's in order with "
                     "--pairing position): measures that compare each record with its own original are skipped, "
                     "and the release check looks records up among all of x")
    return Pairing("none", notes=notes)


def check_private_input(private: dict[str, Any], path: Path | None, *, x_sha256: str | None,
                        z_sha256: str | None, pairs: bool = True, x_name: str = "--original") -> None:
    """The private log belongs to these tables: x is the input z was made from (``x_sha256``
    equals the one it records) and, when its pairing is used (``pairs``), z is the release as
    written (``z_sha256``), so its recorded pairing applies; ``x_name`` names x in the message. A hash given as ``None`` (a table
    that is no file) is not checked; the row counts still are (:func:`kept_rows`)."""
    where = str(path) if path is not None else "of the release"
    recorded = (private.get("input") or {}).get("sha256")
    if recorded and x_sha256 is not None and x_sha256 != recorded:
        raise PPDMError(f"{x_name} is not the table z was made from: its sha256 differs from the one the "
                        f"private log {where!r} records, so z's rows cannot be paired with its records; give "
                        "that table, or evaluate without the pairing (--pairing none)")
    made = private.get("release_sha256")
    if made and pairs and z_sha256 is not None and z_sha256 != made:
        raise PPDMError(f"z is not the release the private log {where!r} was written for (its sha256 "
                        "differs): its rows may no longer be in the order the pairing records; evaluate it "
                        "without the pairing (--pairing none)")


def kept_rows(private: dict[str, Any], n: int, path: Path | None) -> None:
    """x has as many records as the private log pairs z with (after the release's missing-value policy)."""
    inp = private.get("input") or {}
    kept = inp.get("rows_kept")
    if isinstance(kept, int) and kept != n:
        how = inp.get("missing")
        hint = f" --missing {how}" if how else " the same --missing policy"
        where = f" {str(path)!r}" if path is not None else ""
        raise PPDMError(f"the private log{where} pairs z with the {kept} records x had after its missing-value "
                        f"policy, but x has {n} here; read x as the release did, with{hint}")


def positions(obj: Any, what: str, n_x: int, n: int | None = None, path: Path | None = None) -> np.ndarray:
    """Positions the private log records (:func:`ppdm.data.provenance.decode_positions`),
    checked to point into x's ``n_x`` records one to one (and to number ``n`` when given)."""
    import numpy as np

    from ppdm.data.provenance import decode_positions

    pos = decode_positions(obj, what)
    where = f" in {str(path)!r}" if path is not None else ""
    if n is not None and len(pos) != n:
        raise PPDMError(f"the {what}{where} has {len(pos)} rows but z has {n}; the private log is not z's")
    if len(pos) and (int(pos.max()) >= n_x or len(np.unique(pos)) != len(pos)):
        raise PPDMError(f"the {what}{where} does not point into x's {n_x} records one to one; the private log is "
                        "damaged or not z's")
    return pos


def pair_in_memory(x: pd.DataFrame, z: pd.DataFrame, control: pd.DataFrame | None, pairing: Pairing,
                   missing: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """x and z paired as ``pairing`` says: through the private log (z's rows put in x's order,
    held-out records left out of x by their positions), by position, or not at all (control
    records left out of x as a multiset). Notes for the owner go to ``pairing.notes``."""
    import numpy as np

    from ppdm.experiments.release import without_held_out

    private, path = pairing.private, pairing.private_file
    if private is not None:
        kept_rows(private, len(x), path)
        hold = private.get("holdout") or {}
        held = (positions(hold["positions"], "held-out positions", len(x), path=path)
                if isinstance(hold, dict) and hold.get("positions") else None)
        rec = private.get("pairing")
        if rec is not None and rec.get("counted") == "as read" and (private.get("input") or {}).get("rows_dropped"):
            raise PPDMError("the private log pairs this partitioned release with x's rows as read, before the "
                            "incomplete ones were left out; evaluate it partition by partition (--engine dask)")
        if rec is not None and pairing.mode == "private log":
            pos = positions(rec.get("positions"), "pairing", len(x), len(z), path)
            order = np.argsort(pos, kind="stable")
            # row k of each table now holds one person: x's records in their order, z's rows beside them
            z = z.iloc[order].reset_index(drop=True)
            x = x.iloc[pos[order]].reset_index(drop=True)
        elif held is not None:
            keep = np.ones(len(x), dtype=bool)
            keep[held] = False
            x = x.loc[keep].reset_index(drop=True)
    elif control is not None:
        # control records are, by definition, not among those z was made from: each one found in x
        # leaves it (as a multiset, so which of two equal copies goes does not matter)
        try:
            left = without_held_out(x, control)
        except PPDMError:
            pairing.notes.append(f"the control set holds records that are not in x, so no record of x is taken "
                                 f"out as held out ({len(control)} control records)")
        else:
            if len(left):
                x = left
            else:
                pairing.notes.append("the control set holds every record of x, so none is taken out as held out")
    if pairing.mode == "position" and len(x) != len(z):
        # each measure that pairs records says so when it is skipped; the others still run
        pairing.notes.append(f"--pairing position, but x has {len(x)} records and z {len(z)}: measures that "
                             "compare records one by one cannot run")
    if missing == "drop" and pairing.paired and len(x) == len(z):
        # a record is left out when its original is incomplete, with its release, so the pairs stay
        # pairs; a blank the release made (local suppression) is part of what was published, never a
        # reason to leave the record out of the evaluation
        incomplete = x.isna().any(axis=1).to_numpy()
        if incomplete.any():
            pairing.dropped_pairs = int(incomplete.sum())
            x = x.loc[~incomplete].reset_index(drop=True)
            z = z.loc[~incomplete].reset_index(drop=True)
    return x, z


def private_control(pairing: Pairing, release: str | Path | None,
                    provenance: dict[str, Any] | None) -> tuple[Path | None, str | None]:
    """The control set the private log names (beside it), or a version-1 provenance's
    hold-out (beside z), and a line saying where it came from (or that it is absent: then the
    path is None and the attacks are skipped)."""
    if pairing.private is not None:
        name = (pairing.private.get("holdout") or {}).get("control")
        base = (pairing.private_file.parent if pairing.private_file is not None
                else Path(release).parent if release is not None else None)
        what = "the private log"
    else:
        name = ((provenance or {}).get("holdout") or {}).get("control")
        base = Path(release).parent if release is not None else None
        what = "the provenance"
    if not name or base is None:
        return None, None
    path = base / Path(str(name)).name
    if not path.is_file():
        return None, f"note: {what} names the control set {str(path)!r}, which is absent; the attacks are skipped"
    return path, f"control set: {path} (held out before anonymizing, named by {what})"


def private_for_report(pairing: Pairing) -> dict[str, Any] | None:
    """What a report may show of the private log it was given: no pairing, no positions."""
    if pairing.private is None:
        return None
    from ppdm.data.provenance import private_summary

    out = private_summary(pairing.private)
    if pairing.private_file is not None:
        out["file"] = str(pairing.private_file)
    return out


__all__ = ["PAIRINGS", "Pairing", "check_pairing_mode", "check_private_input", "kept_rows", "pair_in_memory",
           "pairing_of", "positions", "private_control", "private_for_report", "read_private_log"]
