"""The provenance sidecar written beside every release: what made it, from what.

``ppdm anonymize --out z.csv`` (and :func:`ppdm.experiments.release.save_release`)
writes ``z.provenance.json`` beside the release (``z.csv.gz`` and ``z.parquet`` get
``z.provenance.json`` too). It is a JSON object with these keys:

``format``, ``version``
    ``"ppdm-provenance"`` and the version of this layout (:data:`VERSION`).
``ppdm_version``, ``created``
    The ppdm that made the release and when (UTC, ISO 8601).
``technique``
    ``name`` (as ``ppdm methods`` lists it), ``class`` and ``parameters``: every
    parameter of the technique with defaults resolved.
``seeded``
    Whether an explicit seed was given. The seed itself is never stored: whoever knows
    it can regenerate the random draws and undo much of the release, so a seed is a
    secret kept with the original data, never with the release.
``input``
    ``source`` (path or ``builtin:NAME``), ``sha256`` of the input file (of the table's
    contents when it came from memory), ``rows`` and ``columns`` as read, and
    ``rows_used`` after incomplete rows were dropped.
``schema``
    The schema with its roles (:meth:`ppdm.data.schema.Schema.to_dict`).
``removed_identifiers``
    Identifier columns left out of the release.
``release_check``
    The release check (:mod:`ppdm.metrics.release_check`).
``privacy``
    The technique's ``privacy_report_`` (e.g. DPCube's ε steps) when it has one, else null.

Further keys (``kept_identifiers``, ``warnings``, ``output``: the decimals and date formats
the release was written with, and for a partitioned release its format and number of
partitions) may be added; these are never renamed. A partitioned input's ``input`` also has
``files``, ``partitions``, ``blocksize`` and ``fit_rows`` (the size of the fitting sample), and
its ``sha256`` is taken over its files' names and hashes.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import PPDMError

FORMAT = "ppdm-provenance"
VERSION = 1
SUFFIX = ".provenance.json"
#: the owner's private log of a release (exact counts, hashes and checks of x): never publish it
PRIVATE_SUFFIX = ".private.json"
PRIVATE_FORMAT = "ppdm-private-log"
_TABLE_SUFFIXES = (".csv.gz", ".csv", ".txt", ".parquet", ".pq")


def provenance_path(release: str | Path) -> Path:
    """The sidecar of a release: ``z.csv`` → ``z.provenance.json`` (also for ``.csv.gz``,
    ``.parquet``)."""
    p = Path(release)
    name = p.name
    for suf in _TABLE_SUFFIXES:
        if name.lower().endswith(suf):
            return p.with_name(name[: -len(suf)] + SUFFIX)
    return p.with_name(p.stem + SUFFIX)


def private_path(release: str | Path) -> Path:
    """The owner's private log of a release, beside its control set: ``z.csv`` → ``z.private.json``.

    It holds what the public provenance must not: the input's hash and row counts, the
    release check (a comparison of z with x) and the technique's ``private_report_``. It
    is as secret as x itself."""
    p = provenance_path(release)
    return p.with_name(p.name[: -len(SUFFIX)] + PRIVATE_SUFFIX)


def read_private(release: str | Path) -> dict[str, Any] | None:
    """The private log of ``release``, or ``None`` when there is none."""
    p = private_path(release)
    if not p.is_file():
        return None
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PPDMError(f"private log {str(p)!r} is not valid JSON: {e}") from None
    if not isinstance(record, dict) or record.get("format") != PRIVATE_FORMAT:
        raise PPDMError(f"{str(p)!r} is not a ppdm private log (its 'format' is not {PRIVATE_FORMAT!r})")
    return record


def private_text(private: dict[str, Any]) -> str:
    """The private log as JSON text (with its format marker)."""
    return json.dumps({"format": PRIVATE_FORMAT, "version": VERSION, **jsonable(private)}, indent=2,
                      allow_nan=False) + "\n"


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def table_sha256(df: pd.DataFrame) -> str:
    """SHA-256 of a table's column names and contents (pandas' row hashes, index left out)."""
    h = hashlib.sha256()
    h.update(json.dumps([str(c) for c in df.columns]).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def jsonable(v: Any) -> Any:
    """``v`` as plain JSON data: dataclasses (with their properties), objects with
    ``to_dict``, DataFrames as lists of records, NumPy scalars, NaN as null."""
    if hasattr(v, "to_dict") and callable(v.to_dict) and not isinstance(v, (pd.DataFrame, pd.Series)):
        return jsonable(v.to_dict())
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        out = {f.name: jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
        for name, attr in vars(type(v)).items():
            if isinstance(attr, property) and not name.startswith("_"):
                out[name] = jsonable(getattr(v, name))
        return out
    if isinstance(v, pd.DataFrame):
        return [{str(k): jsonable(x) for k, x in row.items()} for row in v.to_dict(orient="records")]
    if isinstance(v, pd.Series):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [jsonable(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return repr(v)


def build_provenance(
    *,
    technique: dict[str, Any],
    seeded: bool,
    input_info: dict[str, Any],
    schema: dict[str, Any],
    removed_identifiers: list[str],
    release_check: Any,
    privacy: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """The provenance record (keys as in the module docstring; ``extra`` keys appended)."""
    from ppdm._version import __version__

    record = {
        "format": FORMAT,
        "version": VERSION,
        "ppdm_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "technique": jsonable(technique),
        "seeded": bool(seeded),
        "input": jsonable(input_info),
        "schema": jsonable(schema),
        "removed_identifiers": list(removed_identifiers),
        "release_check": jsonable(release_check),
        "privacy": jsonable(privacy) if privacy is not None else None,
    }
    for k, v in extra.items():
        record[k] = jsonable(v)
    return record


def provenance_text(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=2, allow_nan=False) + "\n"


def read_provenance(release: str | Path) -> dict[str, Any] | None:
    """The provenance sidecar of ``release``, or ``None`` when there is none.

    A sidecar that is not a ppdm provenance record raises :class:`PPDMError` naming it.
    """
    p = provenance_path(release)
    if not p.is_file():
        return None
    try:
        record = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PPDMError(f"provenance file {str(p)!r} is not valid JSON: {e}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise PPDMError(f"{str(p)!r} is not a ppdm provenance record (its 'format' is not {FORMAT!r})")
    return record


def describe(record: dict[str, Any]) -> str:
    """One line summing up a provenance record, for terminals and logs (no data values)."""
    tech = record.get("technique") or {}
    inp = record.get("input") or {}
    check = record.get("release_check") or {}
    parts = [f"made by ppdm {record.get('ppdm_version', '?')} on {record.get('created', '?')} "
             f"with {tech.get('name', '?')}"]
    parts.append("seeded: " + ("yes (the seed is not stored)" if record.get("seeded") else "no (OS entropy)"))
    sha = str(inp.get("sha256") or "")
    if sha or "rows" in inp:
        parts.append(f"input {inp.get('source', '?')} sha256 {sha[:12]}… ({inp.get('rows', '?')} rows × "
                     f"{inp.get('columns', '?')} columns)")
    else:  # a differentially private release keeps the input's hash and counts in the private log
        parts.append(f"input {inp.get('source', '?')} ({inp.get('columns', '?')} columns; its hash and counts are "
                     "in the owner's private log)")
    removed = record.get("removed_identifiers") or []
    if removed:
        parts.append(f"identifiers removed: {', '.join(map(str, removed))}")
    if isinstance(check.get("value"), (int, float)):
        parts.append(f"records with unchanged quasi-identifiers {100 * float(check['value']):.1f}%")
    privacy = record.get("privacy")
    if isinstance(privacy, dict) and isinstance(privacy.get("epsilon_spent"), (int, float)):
        parts.append(f"ε spent {privacy['epsilon_spent']:g}")
    return "; ".join(parts)
