"""The two files written beside every release: the public provenance and the owner's private log.

``ppdm anonymize --out z.csv`` (and :func:`ppdm.experiments.release.save_release`) writes

* ``z.provenance.json`` — **public**, published with z: what made the release, so that an
  analyst knows how to read it. It holds nothing counted, hashed or measured on x;
* ``z.private.json`` — **private**, the owner's secret, kept with x and the control set
  ``z.control.csv`` and never published: where the release came from (the input's name,
  hash and row counts), its release check, and the **pairing** of z's rows with x's, which
  ``ppdm evaluate`` needs to compare each released record with its own original.

(``z.csv.gz``, ``z.parquet`` and a partitioned release in the folder ``z`` get the same two
names.)

The public record (``format`` ``"ppdm-provenance"``, :data:`VERSION`) has these keys:

``format``, ``version``, ``ppdm_version``, ``created``
    The layout, the ppdm that made the release and when (UTC, ISO 8601).
``technique``
    ``name`` (as ``ppdm methods`` lists it), ``class`` and ``parameters``: every parameter
    of the technique with defaults resolved.
``schema``
    The schema with its roles (:meth:`ppdm.data.schema.Schema.to_dict`).
``removed_identifiers``
    Names of the identifier columns left out of the release.
``privacy``
    The technique's ``privacy_report_`` (e.g. DPCube's ε steps) when it has one, else null:
    the claim the release makes, with its assumptions.
``output``
    How the table is written: ``row_order`` (``"shuffled"``, or ``"as the input"`` when the
    owner kept it), ``decimals``, ``date_formats``, and for a partitioned release ``format``
    and ``partitions``.

Further keys (``kept_identifiers``) may be added; these are never renamed. Whether a seed was
given is not said (a seeded release invites a search for the seed): the private log's
``seeded`` says it to the owner. Records written before said it as ``seeded``; they are still read. Version 1
records (before the private log existed) also carried ``input``, ``release_check``,
``warnings`` and ``holdout``; they are still read.

The private record (``format`` ``"ppdm-private"``, :data:`PRIVATE_VERSION`):

``release``, ``release_sha256``
    The file name of the release and the SHA-256 of the release as written (of its parts'
    names and hashes for a partitioned one): a release whose rows were reordered since no
    longer matches its pairing.
``input``
    ``source`` (path or ``builtin:NAME``), ``sha256`` of the input file (of a dataset's
    files' names and hashes; of the table's contents when it came from memory), ``rows``
    and ``columns`` as read, ``missing`` (the missing-value policy), ``rows_dropped`` by it,
    ``rows_kept`` after it (the table the pairing points into) and ``rows_used`` (the records
    the release was made from, held-out ones left out).
``release_check``
    The release check (:mod:`ppdm.metrics.release_check`).
``pairing``
    Which record of x each row of z was made from: ``positions`` — row ``j`` of z was made
    from row ``positions[j]`` (0-based) of x as read after the missing-value policy — encoded
    by :func:`encode_positions`. A partitioned release's rows are mixed across its parts: its
    ``positions`` count z's rows with its parts read in order and x's rows as read, *before*
    the missing-value policy (``"counted": "as read"``), and ``parts`` gives each part's number
    of rows. (Releases written before the parts were mixed have ``partitions``: one object per
    partition, positions counted within x's partition; they are still read.) ``null`` for a synthetic release
    (DPCube under add/remove-one neighbours), whose records are not made from particular
    records of x.
``holdout``
    With a control set: ``fraction``, ``rows``, ``control`` (its file name, beside this
    file) and ``positions`` (0-based rows of x as read after the missing-value policy, in
    increasing order, encoded like the pairing); else null.
``technique``
    The technique's ``private_report_`` when it has one (what only the owner may see), else null.
``seeded``
    Whether an explicit seed was given (never the seed).
``warnings``
    The technique's warnings (they may quote counts of x).

No value of any record is written into either file.

Positions are encoded compactly (:func:`encode_positions`): the integers as little-endian
unsigned integers of the smallest width that holds the largest (1, 2, 4 or 8 bytes),
compressed with zlib and written in base64, as ``{"encoding": "zlib-base64", "dtype": "<u4",
"count": n, "data": "..."}``. A shuffled pairing of 10⁶ records takes about 4 MB of text.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import hashlib
import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import PPDMError

FORMAT = "ppdm-provenance"
VERSION = 2
SUFFIX = ".provenance.json"
PRIVATE_FORMAT = "ppdm-private"
PRIVATE_VERSION = 1
PRIVATE_SUFFIX = ".private.json"
#: what the private log says about itself in its first key
PRIVATE_NOTICE = ("Secret: keep this file with the original data and never publish it beside the release. "
                  "It pairs every released row with the original record it was made from.")
POSITIONS_ENCODING = "zlib-base64"
_TABLE_SUFFIXES = (".csv.gz", ".csv", ".txt", ".parquet", ".pq")


def _beside(release: str | Path, suffix: str) -> Path:
    p = Path(release)
    name = p.name
    for suf in _TABLE_SUFFIXES:
        if name.lower().endswith(suf):
            return p.with_name(name[: -len(suf)] + suffix)
    return p.with_name(p.stem + suffix)


def provenance_path(release: str | Path) -> Path:
    """The public sidecar of a release: ``z.csv`` → ``z.provenance.json`` (also for
    ``.csv.gz``, ``.parquet`` and a dataset folder ``z``)."""
    return _beside(release, SUFFIX)


def private_path(release: str | Path) -> Path:
    """The owner's private log of a release: ``z.csv`` → ``z.private.json``, beside the
    control set ``z.control.csv``."""
    return _beside(release, PRIVATE_SUFFIX)


def _stem(release: Path) -> str:
    name = release.name
    for suf in _TABLE_SUFFIXES:
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return release.stem


def check_sidecars_free(release: str | Path) -> None:
    """Refuse to write ``release`` when its sidecars belong to another release of the same stem.

    ``z.csv`` and ``z.parquet`` (and a dataset folder ``z``) share ``z.provenance.json`` and
    ``z.private.json``: a second release would silently replace the first one's private log,
    the owner's only record of its pairing. The private log names its release; when it names
    another file that still exists (or, without a readable log, when another table of the same
    stem stands beside a provenance file), the release is refused with
    :class:`PPDMError`. Writing the same release again is allowed.
    """
    p = Path(release)
    priv, prov = private_path(p), provenance_path(p)
    owner: str | None = None
    if priv.is_file():
        try:
            record = json.loads(priv.read_text(encoding="utf-8"))
            owner = record.get("release") if isinstance(record, dict) else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            owner = None
        if isinstance(owner, str) and owner != p.name and (p.parent / owner).exists():
            raise PPDMError(f"{priv.name} beside {str(p)!r} is the private log of the release {owner!r}, which a "
                            f"release {p.name!r} would replace; choose another output name, or remove {owner!r} and "
                            "its sidecars first")
    if not isinstance(owner, str) and (prov.is_file() or priv.is_file()):
        stem = _stem(p)
        others = [q.name for q in (p.with_name(stem + suf) for suf in _TABLE_SUFFIXES) if q.exists() and q.name != p.name]
        folder = p.with_name(stem)
        if folder.is_dir() and folder.name != p.name:
            others.append(folder.name)
        if others:
            raise PPDMError(f"{prov.name} beside {str(p)!r} may belong to the release {others[0]!r}, which a release "
                            f"{p.name!r} would replace; choose another output name, or remove {others[0]!r} and its "
                            "sidecars first")


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def input_sha256(spec: str) -> str:
    """SHA-256 of an input file, or of a shipped dataset's compressed file (``builtin:NAME``):
    the hash a private log records of x."""
    if spec.startswith("builtin:"):
        from importlib import resources

        name = spec[len("builtin:"):]
        with resources.as_file(resources.files("ppdm.data").joinpath(f"builtin/{name}.csv.gz")) as p:
            return file_sha256(p)
    return file_sha256(spec)


def table_sha256(df: pd.DataFrame) -> str:
    """SHA-256 of a table's column names and contents (pandas' row hashes, index left out)."""
    h = hashlib.sha256()
    h.update(json.dumps([str(c) for c in df.columns]).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------- positions
def encode_positions(positions: np.ndarray | list[int]) -> dict[str, Any]:
    """Non-negative whole numbers (row positions) as a small JSON object: little-endian
    unsigned integers of the smallest width holding the largest, zlib-compressed, base64."""
    a = np.asarray(positions)
    if a.ndim != 1:
        raise PPDMError("positions must be a one-dimensional array")
    a = a.astype(np.int64, copy=False)
    if a.size and int(a.min()) < 0:
        raise PPDMError("positions must not be negative")
    top = int(a.max()) if a.size else 0
    width = next(w for w in (1, 2, 4, 8) if top < 1 << (8 * w))
    dtype = f"<u{width}"
    raw = a.astype(dtype).tobytes()
    return {"encoding": POSITIONS_ENCODING, "dtype": dtype, "count": int(a.size),
            "data": base64.b64encode(zlib.compress(raw, 6)).decode("ascii")}


def decode_positions(obj: Any, what: str = "positions") -> np.ndarray:
    """The positions :func:`encode_positions` wrote, as an int64 array (a malformed object is
    refused with :class:`PPDMError` naming ``what``)."""
    try:
        if obj.get("encoding") != POSITIONS_ENCODING:
            raise ValueError(f"unknown encoding {obj.get('encoding')!r}")
        dtype = str(obj["dtype"])
        if dtype not in ("<u1", "<u2", "<u4", "<u8"):
            raise ValueError(f"unknown dtype {dtype!r}")
        a = np.frombuffer(zlib.decompress(base64.b64decode(obj["data"], validate=True)), dtype=dtype)
        if a.size != int(obj["count"]):
            raise ValueError(f"{a.size} numbers where {obj['count']} were recorded")
    except (AttributeError, KeyError, TypeError, ValueError, zlib.error) as e:
        raise PPDMError(f"the private log's {what} cannot be read: {e}") from None
    return a.astype(np.int64)


def in_input_order(z: pd.DataFrame, private: dict[str, Any]) -> tuple[pd.DataFrame, np.ndarray]:
    """``(z sorted back into x's order, positions)`` from a release read whole and its private
    log: row ``k`` of the result was made from row ``positions[k]`` of x as read after the
    missing-value policy (before it, for a partitioned release: ``"counted": "as read"``; z's
    parts read in order). A release written before partitioned parts were mixed has one
    pairing per partition: its parts are taken in order, each sorted within itself (positions
    then count within x's partition)."""
    rec = private.get("pairing")
    if rec is None:
        raise PPDMError("the private log records no pairing: the release's records are synthetic")
    if "partitions" in rec:
        pos_parts = [decode_positions(p["positions"], f"pairing of partition {i}")
                     for i, p in enumerate(rec["partitions"])]
        if sum(len(p) for p in pos_parts) != len(z):
            raise PPDMError(f"the private log pairs {sum(len(p) for p in pos_parts)} rows, the release has {len(z)}")
        offsets = np.cumsum([0, *[len(p) for p in pos_parts]])
        order = np.concatenate([off + np.argsort(p, kind="stable") for off, p in zip(offsets, pos_parts, strict=False)]
                               ) if pos_parts else np.arange(0)
        return z.iloc[order].reset_index(drop=True), np.concatenate([np.sort(p) for p in pos_parts])
    pos = decode_positions(rec["positions"], "pairing")
    if len(pos) != len(z):
        raise PPDMError(f"the private log pairs {len(pos)} rows, the release has {len(z)}")
    order = np.argsort(pos, kind="stable")
    return z.iloc[order].reset_index(drop=True), pos[order]


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


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def build_provenance(
    *,
    technique: dict[str, Any],
    schema: dict[str, Any],
    removed_identifiers: list[str],
    privacy: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """The public provenance record (keys as in the module docstring; ``extra`` keys appended).
    Nothing about x beyond its schema belongs here: counts, hashes and the release check go to
    :func:`build_private`."""
    from ppdm._version import __version__

    record = {
        "format": FORMAT,
        "version": VERSION,
        "ppdm_version": __version__,
        "created": _now(),
        "technique": jsonable(technique),
        "schema": jsonable(schema),
        "removed_identifiers": list(removed_identifiers),
        "privacy": jsonable(privacy) if privacy is not None else None,
    }
    for k, v in extra.items():
        record[k] = jsonable(v)
    return record


def build_private(
    *,
    input_info: dict[str, Any],
    release_check: Any,
    pairing: dict[str, Any] | None,
    holdout: dict[str, Any] | None = None,
    technique: Any = None,
    warnings: list[str] | None = None,
    seeded: bool | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The owner's private log (keys as in the module docstring; ``pairing`` and the hold-out's
    ``positions`` already encoded by :func:`encode_positions`). ``release`` and
    ``release_sha256`` are filled in when the release is written."""
    from ppdm._version import __version__

    record: dict[str, Any] = {
        "format": PRIVATE_FORMAT,
        "version": PRIVATE_VERSION,
        "notice": PRIVATE_NOTICE,
        "ppdm_version": __version__,
        "created": _now(),
        "release": None,
        "release_sha256": None,
        "input": jsonable(input_info),
        "release_check": jsonable(release_check),
        "pairing": pairing,
        "holdout": holdout,
        "technique": jsonable(technique) if technique is not None else None,
        "seeded": seeded,
        "warnings": list(warnings or []),
    }
    for k, v in extra.items():
        record[k] = jsonable(v)
    return record


def provenance_text(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=2, allow_nan=False) + "\n"


def private_text(record: dict[str, Any]) -> str:
    # one line per key: the pairing can be megabytes of base64, which indentation would not help
    return json.dumps(record, indent=1, allow_nan=False) + "\n"


def _read_json(p: Path, what: str) -> Any:
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PPDMError(f"{what} {str(p)!r} is not valid JSON: {e}") from None


def read_provenance(release: str | Path) -> dict[str, Any] | None:
    """The public provenance of ``release``, or ``None`` when there is none.

    A sidecar that is not a ppdm provenance record raises :class:`PPDMError` naming it.
    """
    p = provenance_path(release)
    if not p.is_file():
        return None
    record = _read_json(p, "provenance file")
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise PPDMError(f"{str(p)!r} is not a ppdm provenance record (its 'format' is not {FORMAT!r})")
    return record


def read_private(release: str | Path, path: str | Path | None = None) -> dict[str, Any] | None:
    """The owner's private log of ``release`` (at :func:`private_path`, or at ``path``), or
    ``None`` when there is none (a ``path`` given but absent is refused).

    A file that is not a ppdm private log, or one of a later layout, raises :class:`PPDMError`.
    """
    p = Path(path) if path is not None else private_path(release)
    if not p.is_file():
        if path is not None:
            raise PPDMError(f"private log {str(p)!r} does not exist")
        return None
    record = _read_json(p, "private log")
    if not isinstance(record, dict) or record.get("format") != PRIVATE_FORMAT:
        raise PPDMError(f"{str(p)!r} is not a ppdm private log (its 'format' is not {PRIVATE_FORMAT!r})")
    if not isinstance(record.get("version"), int) or record["version"] > PRIVATE_VERSION:
        raise PPDMError(f"private log {str(p)!r} has version {record.get('version')!r}; this ppdm reads up to "
                        f"{PRIVATE_VERSION}")
    return record


def owner_view(provenance: dict[str, Any] | None, private: dict[str, Any] | None) -> dict[str, Any] | None:
    """The public provenance as its owner reads it: the release's full output schema (what
    recoding learnt from x, e.g. which categories became "Other") from the private log in place
    of the public one, which leaves that out. Without a private log, the public record."""
    full = (private or {}).get("output_schema")
    if provenance is None or not full:
        return provenance
    return {**provenance, "output": {**(provenance.get("output") or {}), "schema": full}}


def private_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The private log without the pairing and the held-out positions: what an evaluation that
    was given the log may show (its input, release check, hold-out size and the technique's
    private report). Reports never carry positions: they are the key that links z to x."""
    out = {k: v for k, v in record.items() if k not in ("pairing", "notice")}
    hold = record.get("holdout")
    if isinstance(hold, dict):
        out["holdout"] = {k: v for k, v in hold.items() if k != "positions"}
    pairing = record.get("pairing")
    out["paired"] = pairing is not None
    return out


def describe(record: dict[str, Any]) -> str:
    """One line summing up a public provenance record, for terminals and logs (no data values)."""
    tech = record.get("technique") or {}
    parts = [f"made by ppdm {record.get('ppdm_version', '?')} on {record.get('created', '?')} "
             f"with {tech.get('name', '?')}"]
    if "seeded" in record:  # records written before it moved to the private log
        parts.append("seeded: " + ("yes (the seed is not stored)" if record.get("seeded") else "no (OS entropy)"))
    order = (record.get("output") or {}).get("row_order")
    if order:
        parts.append(f"rows {order}")
    removed = record.get("removed_identifiers") or []
    if removed:
        parts.append(f"identifiers removed: {', '.join(map(str, removed))}")
    privacy = record.get("privacy")
    if isinstance(privacy, dict) and isinstance(privacy.get("epsilon_spent"), (int, float)):
        parts.append(f"ε spent {privacy['epsilon_spent']:g}")
    inp = record.get("input") or {}
    if inp:  # a version-1 record, written before the private log existed
        sha = str(inp.get("sha256") or "")
        parts.append(f"input {inp.get('source', '?')} sha256 {sha[:12]}… ({inp.get('rows', '?')} rows × "
                     f"{inp.get('columns', '?')} columns)")
    return "; ".join(parts)


def describe_private(record: dict[str, Any]) -> str:
    """One line summing up a private log (names, counts and shares; never a position)."""
    inp = record.get("input") or {}
    check = record.get("release_check") or {}
    sha = str(inp.get("sha256") or "")
    parts = [f"made from {inp.get('source', '?')} sha256 {sha[:12]}… ({inp.get('rows', '?')} rows × "
             f"{inp.get('columns', '?')} columns, {inp.get('rows_used', '?')} used)"]
    parts.append("rows paired with x's" if record.get("pairing") is not None else "synthetic records, not paired")
    hold = record.get("holdout")
    if isinstance(hold, dict):
        parts.append(f"{hold.get('rows', '?')} records held out as the control set {hold.get('control') or '?'}")
    if isinstance(check.get("value"), (int, float)):
        parts.append(f"records with unchanged quasi-identifiers {100 * float(check['value']):.1f}%")
    return "; ".join(parts)
