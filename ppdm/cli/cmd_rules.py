"""``ppdm rules``: find Ψx, the rules a CART tree grows on a table (paper 000 §7)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import (
    ClassOpt,
    DecimalOpt,
    MeasureSeedOpt,
    MissingOpt,
    ParamOpt,
    SchemaOpt,
    SepOpt,
    _missing,
    app,
)
from ppdm.cli.common import console, load_input, measurement_seed, report_drawn_seed
from ppdm.errors import ParameterError

RULE_PARAMS = ("min_leaf_frac", "max_depth")


@app.command(short_help="Find the rules of a table (CART leaves).")
def rules(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    class_column: ClassOpt = None,
    param: ParamOpt = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Rule file to write (default: print the rules).")] = None,
    seed: MeasureSeedOpt = None,
    missing: MissingOpt = "error",
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    decimal: DecimalOpt = None,
) -> None:
    """Find the rules Ψx of a table: the leaves of a CART tree (minimum leaf 0.02·|x|, depth 12).

    Parameters: --param min_leaf_frac=0.02 --param max_depth=12. The rules are written in
    the original attributes and values, one per line, with their class counts; the file
    can be edited and given back to 'ppdm evaluate --rules'.
    """
    from ppdm.data.io import check_output_path
    from ppdm.trees.cart import rules_from_cart
    from ppdm.utils import parse_params

    params = parse_params(param)
    unknown = sorted(set(params) - set(RULE_PARAMS))
    if unknown:
        raise ParameterError(f"ppdm rules has no parameter {unknown[0]!r}; its parameters: {', '.join(RULE_PARAMS)}")
    src = None if data.startswith("builtin:") else Path(data)
    if out is not None:
        check_output_path(out, inputs=(src, schema))
    x, sch, _ = load_input(data, class_column, schema_path=schema, missing=_missing(missing), sep=sep,
                           decimal=decimal)
    sch.require_class()
    seed_value, drawn = measurement_seed(seed)
    rs = rules_from_cart(x, sch, random_state=seed_value, **params)
    if out is None:
        sys.stdout.write(rs.to_text())
        report_drawn_seed(seed_value, drawn)
        return
    rs.save(out)
    report_drawn_seed(seed_value, drawn)
    console.print(f"wrote {len(rs)} rules predicting {rs.class_column!r} from {len(x)} records to {out}",
                  emoji=False, markup=False)
