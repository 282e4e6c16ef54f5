"""``ppdm rules``: find Ψx, the rules a CART tree grows on a table (paper 000 §7)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import ClassOpt, MissingOpt, ParamOpt, SchemaOpt, SeedOpt, _missing, app
from ppdm.cli.common import console, load_input
from ppdm.errors import ParameterError

RULE_PARAMS = ("min_leaf_frac", "max_depth")


@app.command(short_help="Find the rules of a table (CART leaves).")
def rules(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    class_column: ClassOpt = None,
    param: ParamOpt = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Rule file to write (default: print the rules).")] = None,
    seed: SeedOpt = 0,
    missing: MissingOpt = "error",
    schema: SchemaOpt = None,
) -> None:
    """Find the rules Ψx of a table: the leaves of a CART tree (minimum leaf 0.02·|x|, depth 12).

    Parameters: --param min_leaf_frac=0.02 --param max_depth=12. The rules are written in
    the original attributes and values, one per line, with their class counts; the file
    can be edited and given back to 'ppdm evaluate --rules'.
    """
    from ppdm.trees.cart import rules_from_cart
    from ppdm.utils import parse_params

    params = parse_params(param)
    unknown = sorted(set(params) - set(RULE_PARAMS))
    if unknown:
        raise ParameterError(f"ppdm rules has no parameter {unknown[0]!r}; its parameters: {', '.join(RULE_PARAMS)}")
    x, sch, _ = load_input(data, class_column, schema_path=schema, missing=_missing(missing))
    sch.require_class()
    rs = rules_from_cart(x, sch, random_state=seed, **params)
    if out is None:
        sys.stdout.write(rs.to_text())
        return
    rs.save(out)
    console.print(f"wrote {len(rs)} rules predicting {rs.class_column!r} from {len(x)} records to {out}",
                  emoji=False, markup=False)
