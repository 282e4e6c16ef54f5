"""Shipped datasets: ``load(name)`` returns ``(DataFrame, Schema)``.

The files are compressed copies of UCI and sdcMicro benchmark tables; see
``builtin/ATTRIBUTION.md`` for sources and licences. Identifier and survey-weight
columns are not attributes and are left out.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from importlib import resources

import pandas as pd

from ppdm.data.schema import MissingPolicy, Schema
from ppdm.errors import PPDMError


@cache
def _catalog() -> dict[str, dict]:
    return json.loads(resources.files("ppdm.data").joinpath("builtin/datasets.json").read_text())


def names() -> list[str]:
    """Names of the shipped datasets."""
    return sorted(_catalog())


def info(name: str) -> dict:
    """Catalogue entry of a shipped dataset (columns, roles, source, licence)."""
    cat = _catalog()
    if name not in cat:
        raise PPDMError(f"unknown dataset {name!r}; shipped datasets: {', '.join(sorted(cat))}")
    return dict(cat[name])


def load(name: str, missing: MissingPolicy = "keep") -> tuple[pd.DataFrame, Schema]:
    """Load a shipped dataset.

    Parameters
    ----------
    name:
        One of :func:`names` (``adult``, ``credit``, ``wine``, ``wbc``, ``banknote``, ``cmc``,
        ``abalone``, ``boston``, ``tarragona``, ...).
    missing:
        ``"keep"`` (default) returns every row, missing cells as NaN; ``"drop"`` returns the
        complete cases only (adult: 30162 rows), as the papers use them.
    """
    meta = info(name)
    numeric = list(meta["numeric_columns"] or [])
    categorical = list(meta["categorical_columns"] or [])
    cls = meta.get("class")
    target = meta.get("target")
    # a regression target is an ordinary numeric attribute; only a class is "the class"
    drop = set(meta.get("identifier_columns") or []) | set(meta.get("weight_columns") or [])
    with resources.files("ppdm.data").joinpath(f"builtin/{name}.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip", na_values=["?"], skipinitialspace=True)
    df = df.drop(columns=[c for c in df.columns if c in drop])
    for c in numeric:
        if c in df.columns and not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = pd.to_numeric(df[c], errors="raise")
    keep_num = [c for c in numeric if c in df.columns and c != cls]
    keep_cat = [c for c in categorical if c in df.columns and c != cls]
    if target and target not in keep_num and target in df.columns:
        keep_num.append(target)
    # categorical codes stay as read: integer codes stay integers, strings stay strings
    order = [c for c in df.columns if c in set(keep_num) | set(keep_cat) | ({cls} if cls else set())]
    df = df[order]
    schema = Schema.infer(df, cls, numeric=keep_num, categorical=keep_cat)
    # a declared public domain (metadata, never read from the records) travels with the schema,
    # with the whole-number attributes it declares in place of those inferred from the values
    bounds = {c: tuple(b) for c, b in (meta.get("bounds") or {}).items() if c in schema.numeric}
    categories = {c: list(v) for c, v in (meta.get("categories") or {}).items()
                  if c in schema.categorical or c == schema.class_column}
    if bounds or categories:
        schema = replace(schema, bounds=bounds, categories=categories)
    if meta.get("integer_columns") is not None:
        schema = replace(schema, integer=[c for c in schema.numeric if c in set(meta["integer_columns"])])
    if missing != "keep":
        df, _ = schema.validate(df, missing=missing)
        df = df.reset_index(drop=True)
    return df, schema
