"""The study of ``ppdm recommend``: the Optuna study (opened, checked on resume, read back into
trial records) and its file, which is private.

The study (an Optuna SQLite file) holds the seed of the search's hold-out split: with the
original table it tells who is in the release, so it is the owner's only, like the control
split and the private log. :func:`make_private` creates it readable and writable by its owner
alone before anything is written into it (SQLite gives its journal the file's own
permissions); :func:`discard_if_empty` removes the file a refused or failed run created before
any trial finished, so it does not block the next run (``--resume`` continues a study that
holds trials).
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any, Literal

from ppdm.errors import ParameterError
from ppdm.experiments.policy import Policy
from ppdm.experiments.recommend.ranking import TrialRecord, record_of

#: files SQLite may leave beside a database
_SIDE = ("-journal", "-wal", "-shm")
STUDY_NAME = "ppdm-recommend"
STUDY_FORMAT = "ppdm.recommend-study"
#: 2: differentially private trials are judged by noisy scores (an older study's were judged by exact values)
STUDY_VERSION = 2


def make_private(path: str | Path) -> Path:
    """Create ``path`` empty with mode 600 when it does not exist, else set its mode to 600
    (where the system allows). An empty file counts as no study (:func:`ppdm.experiments.recommend`
    creates the study in it)."""
    p = Path(path)
    if not p.exists():
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
    try:
        os.chmod(p, 0o600)
    except OSError:
        pass
    return p


def finished_trials(path: str | Path) -> int:
    """How many trials of the study file finished (complete or failed); 0 for an empty file or
    one that holds no Optuna study."""
    p = Path(path)
    if not p.is_file() or p.stat().st_size == 0:
        return 0
    try:
        with closing(sqlite3.connect(f"file:{p}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT COUNT(*) FROM trials WHERE state IN ('COMPLETE', 'FAIL')").fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


def discard_if_empty(path: str | Path) -> bool:
    """Remove the study file ``path`` (and SQLite's side files) when no trial of it finished;
    returns whether it was removed."""
    p = Path(path)
    if not p.exists() or finished_trials(p) > 0:
        return False
    for side in ("", *_SIDE):
        Path(f"{p}{side}").unlink(missing_ok=True)
    return True


def open_study(storage: Any, resume: bool, sampler: Any) -> tuple[Any, bool]:
    """The Optuna study in ``storage`` (created, or loaded with ``resume``) and whether it existed."""
    import optuna

    directions: list[Literal["minimize", "maximize"]] = ["minimize", "minimize"]
    if storage is None:
        return optuna.create_study(directions=directions, sampler=sampler, study_name=STUDY_NAME), False
    names = [s.study_name for s in optuna.get_all_study_summaries(storage)] if _storage_exists(storage) else []
    exists = STUDY_NAME in names
    if exists and not resume:
        raise ParameterError(f"the study file {storage_label(storage)!r} already holds a search; continue it with "
                             "--resume (resume=True) or name another study file")
    if resume and not exists:
        raise ParameterError(f"--resume: the study file {storage_label(storage)!r} holds no ppdm search to continue")
    if exists:
        return optuna.load_study(study_name=STUDY_NAME, storage=storage, sampler=sampler), True
    return optuna.create_study(directions=directions, sampler=sampler, study_name=STUDY_NAME, storage=storage), False


def study_storage(path: str | Path) -> str:
    """The Optuna storage URL of a study file (SQLite)."""
    return f"sqlite:///{Path(path).resolve()}"


def _storage_exists(storage: str) -> bool:
    if storage.startswith("sqlite:///"):
        p = Path(storage[len("sqlite:///"):])
        return p.is_file() and p.stat().st_size > 0
    return True


def storage_label(storage: Any) -> str:
    """A study storage as messages name it: the file of a SQLite URL, else the URL."""
    if isinstance(storage, str) and storage.startswith("sqlite:///"):
        return storage[len("sqlite:///"):]
    return str(storage)


def check_resume(attrs: Mapping[str, Any], pol: Policy, info: Mapping[str, Any]) -> None:
    """Refuse to resume a study made by another search: format and version, table, hold-out, policy."""
    head = attrs.get("ppdm") or {}
    if head.get("format") != STUDY_FORMAT:
        raise ParameterError("the study file holds a study ppdm did not make; name another study file")
    if head.get("version") != STUDY_VERSION:
        raise ParameterError(f"the study was made by another version of ppdm's search (study version "
                             f"{head.get('version')!r}); start a new study")
    data = attrs.get("data") or {}
    if data.get("sha256") != info["sha256"] or data.get("schema") != info["schema"]:
        raise ParameterError("--resume: the study searched another table (or the same table with other column "
                             "roles); resume with the same input, or start a new study")
    if data.get("holdout") != info["holdout"]:
        raise ParameterError(f"--resume: the study held out {data.get('holdout')!r} of the records, not "
                             f"{info['holdout']!r}; resume with the same --holdout")
    if attrs.get("policy_sha256") != pol.sha256():
        raise ParameterError("--resume: the study ran under another policy; resume with the same policy, or start a "
                             "new study to search under this one")


def fail_interrupted(stu: Any) -> None:
    """Trials left running by an interrupted run are closed as failed, saying so."""
    from optuna.trial import TrialState

    for t in stu.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
        stu.tell(t.number, state=TrialState.FAIL)


def startup_trials(n_techniques: int) -> int:
    """How many trials the sampler draws at random before it models the outcomes."""
    return max(8, n_techniques + 3)


def make_sampler(seed: int, n_techniques: int) -> Any:
    """The study's sampler: multivariate TPE with grouped (conditional) parameters and a constant liar
    for trials still running."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True,
                                          n_startup_trials=startup_trials(n_techniques))


def study_records(stu: Any, pol: Policy) -> list[TrialRecord]:
    """Every trial of the study as a :class:`TrialRecord` judged against ``pol``; a trial without an
    outcome (interrupted, or stopped by a budget) as ``stopped``."""
    from optuna.trial import TrialState

    out = []
    for t in stu.get_trials(deepcopy=False):
        o = t.user_attrs.get("outcome")
        if o is None:
            job = t.user_attrs.get("job") or {}
            reason = t.user_attrs.get("stopped") or "did not finish (the run that started it was interrupted)"
            o = {"technique": job.get("technique", "?"), "params": job.get("params") or {}, "measures": {},
                 "privacy": None, "check": None, "error": reason, "internal": False, "seconds": None}
            state = "stopped"
        else:
            # a repeat is told to Optuna as failed (so it does not count twice) but is the trial it repeats
            state = "complete" if t.state == TrialState.COMPLETE or t.user_attrs.get("repeat_of") is not None \
                else "failed"
        rec = record_of(t.number, o, pol, state=state, repeat_of=t.user_attrs.get("repeat_of"))
        rec.ran = not t.user_attrs.get("not_run")
        out.append(rec)
    return out


__all__ = ["STUDY_FORMAT", "STUDY_NAME", "STUDY_VERSION", "discard_if_empty", "finished_trials", "make_private",
           "study_storage"]
