"""The options every table-reading command shares, declared once.

``ppdm anonymize``, ``compare``, ``recommend`` and ``schema`` read a table with its types and
the user's roles through the same ten options (``--schema``, ``--sep``, ``--decimal``,
``--id``, ``--qi``, ``--sensitive``, ``--weight``, ``--other``, ``--categorical``,
``--date``). Typer needs one function parameter per option, so instead of repeating the ten
in every command's signature a command takes one parameter ``table: TableOptions`` and is
decorated with :func:`table_options`, which shows Typer the ten options in its place and
hands the command their values as one :class:`TableOptions`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppdm.cli.app import (
    CategoricalOpt,
    DateOpt,
    DecimalOpt,
    IdOpt,
    OtherOpt,
    QiOpt,
    SchemaOpt,
    SensitiveOpt,
    SepOpt,
    WeightOpt,
)

if TYPE_CHECKING:
    import pandas as pd

    from ppdm.data.roles import Roles
    from ppdm.data.schema import MissingPolicy, Schema


@dataclass(frozen=True)
class TableOptions:
    """How to read the input table: its schema file, CSV dialect, column types and roles."""

    schema: Path | None = None
    sep: str | None = None
    decimal: str | None = None
    identifiers: list[str] | None = None
    quasi_identifiers: list[str] | None = None
    sensitive: list[str] | None = None
    weight: str | None = None
    other: list[str] | None = None
    categorical: list[str] | None = None
    date: list[str] | None = None

    def roles(self) -> Roles:
        """The roles set by ``--id``, ``--qi``, ``--sensitive``, ``--weight`` and ``--other``."""
        from ppdm.cli.common import roles_from_options

        return roles_from_options(self.identifiers, self.quasi_identifiers, self.sensitive, self.weight, self.other)

    def read_options(self, *, missing: MissingPolicy, detect: bool = False) -> dict[str, Any]:
        """The keyword options of :func:`ppdm.cli.common.load_input` these options stand for."""
        return {"schema_path": self.schema, "missing": missing, "sep": self.sep, "roles": self.roles(),
                "detect": detect, "categorical": self.categorical, "dates": self.date, "decimal": self.decimal}

    def load(self, spec: str, class_column: str | None, *, missing: MissingPolicy,
             detect: bool = False) -> tuple[pd.DataFrame, Schema, int]:
        """``spec`` read as these options say (:func:`ppdm.cli.common.load_input`)."""
        from ppdm.cli.common import load_input

        return load_input(spec, class_column, **self.read_options(missing=missing, detect=detect))

    def load_original(self, spec: str, class_column: str | None, *, missing: MissingPolicy,
                      provenance: dict[str, Any] | None = None,
                      detect: bool = False) -> tuple[pd.DataFrame, Schema, list[str]]:
        """The original table x read as these options say, without its identifier columns
        (:func:`ppdm.cli.common.load_original`)."""
        from ppdm.cli.common import load_original

        return load_original(spec, class_column, provenance=provenance,
                             **self.read_options(missing=missing, detect=detect))


#: the Typer declaration of each field of :class:`TableOptions`, in the order ``--help`` lists them
_DECLARED: dict[str, Any] = {
    "schema": SchemaOpt, "sep": SepOpt, "decimal": DecimalOpt, "identifiers": IdOpt, "quasi_identifiers": QiOpt,
    "sensitive": SensitiveOpt, "weight": WeightOpt, "other": OtherOpt, "categorical": CategoricalOpt,
    "date": DateOpt,
}
assert list(_DECLARED) == [f.name for f in fields(TableOptions)]


def table_options(command: Callable[..., None]) -> Callable[..., None]:
    """Decorate a command whose parameter ``table: TableOptions`` stands for the table-reading
    options: Typer sees the ten options in its place (same names, help and defaults wherever
    they are used) and the command receives their values as one :class:`TableOptions`."""
    signature = inspect.signature(command, eval_str=True)
    params: list[inspect.Parameter] = []
    for p in signature.parameters.values():
        if p.name != "table":
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))  # in any order with the ten
            continue
        params.extend(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=declared, default=None)
                      for name, declared in _DECLARED.items())
    if len(params) == len(signature.parameters):
        raise TypeError(f"{command.__name__} has no parameter 'table' for the table-reading options")

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        table = TableOptions(**{name: kwargs.pop(name) for name in _DECLARED})
        command(**kwargs, table=table)

    # Typer reads the options from the signature and the annotations: both show the ten options
    run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    del run.__wrapped__  # the signature above, not the command's own
    return run
