"""``ppdm tree``: grow a C4.5 tree or a SysFor forest, print it in J48's layout, write its rules."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from ppdm.cli.app import ClassOpt, DecimalOpt, MissingOpt, ParamOpt, SchemaOpt, SepOpt, _missing, app
from ppdm.cli.common import console, load_input
from ppdm.errors import ParameterError, PPDMError

_FIXED = {"schema"}  # set by the command from the input's schema


def make_tree_learner(algorithm: str, params: dict[str, Any], schema: Any = None) -> Any:
    """A C45Classifier or SysForClassifier from ``--param`` values (``preset=paper004`` for SysFor)."""
    from ppdm.trees.c45 import C45Classifier
    from ppdm.trees.sysfor import SysForClassifier

    classes = {"c45": C45Classifier, "sysfor": SysForClassifier}
    if algorithm not in classes:
        raise ParameterError(f"unknown algorithm {algorithm!r}; use 'c45' or 'sysfor'")
    cls = classes[algorithm]
    params = dict(params)
    preset = params.pop("preset", None)
    known = set(inspect.signature(cls.__init__).parameters) - {"self"} - _FIXED  # type: ignore[misc]  # the class's own __init__, read, not called
    unknown = sorted(set(params) - known)
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {', '.join(unknown)} for {algorithm}; known: {', '.join(sorted(known))}"
        )
    if preset is not None:
        if algorithm != "sysfor" or str(preset).lower() not in ("paper004", "paper_004"):
            raise ParameterError(f"unknown preset {preset!r} for {algorithm}; SysFor offers preset=paper004")
        return SysForClassifier.paper_004(schema=schema, **params)
    try:
        return cls(schema=schema, **params)
    except TypeError as e:
        raise ParameterError(f"bad parameters for {algorithm}: {e}") from None


@app.command(short_help="Grow a C4.5 tree or a SysFor forest.")
def tree(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    class_column: ClassOpt = None,
    algorithm: Annotated[str, typer.Option("--algorithm", "-a", help="c45 (J48-compatible C4.5) or sysfor.")] = "c45",
    param: ParamOpt = None,
    rules_out: Annotated[
        Path | None, typer.Option("--rules-out", help="Write every leaf as a rule to this file (atomic).")
    ] = None,
    missing: MissingOpt = "error",
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    decimal: DecimalOpt = None,
) -> None:
    """Grow a C4.5 tree (as Weka J48 does) or a SysFor forest; print it and optionally write its rules."""
    from ppdm.trees.rules import from_forest
    from ppdm.utils import parse_params

    params = parse_params(param)
    if algorithm not in ("c45", "sysfor"):
        raise ParameterError(f"unknown algorithm {algorithm!r}; use 'c45' or 'sysfor'")
    if rules_out is not None:
        from ppdm.data.io import check_output_path

        check_output_path(rules_out, inputs=(None if data.startswith("builtin:") else Path(data), schema))
    x, sch, _ = load_input(data, class_column, schema_path=schema, missing=_missing(missing), sep=sep,
                           decimal=decimal)
    cls_col = sch.require_class()
    model = make_tree_learner(algorithm, params, schema=sch)
    X = x[[c for c in x.columns if c != cls_col and c in sch.attributes]]
    if X.shape[1] == 0:
        raise PPDMError("the table has no attribute columns besides the class")
    from ppdm.cli.progress import progress_bar

    with progress_bar(f"growing {algorithm} on {len(x)} records"):
        model.fit(X, x[cls_col])
    typer.echo(model.export_text())
    if rules_out is not None:
        rs = from_forest(model, cls_col)
        rs.save(rules_out)
        console.print(f"wrote {len(rs)} rules to {rules_out}")
